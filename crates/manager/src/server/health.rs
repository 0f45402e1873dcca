//! [`Readiness`]: the named checks `/readyz` runs.
//!
//! Contract: `/healthz` and `/livez` answer `ok` while the process serves at all (a wedged
//! process stops answering and is restarted by its liveness probe). `/readyz` answers `ok` only
//! when every registered check passes, and fails (`startup`) while none is registered yet — kube-gc registers "informers synced" and, when electing,
//! "leadership state known" — and otherwise 500 with one `[-]name failed` line per failing check,
//! the layout of the Kubernetes health endpoints (`?verbose` lists passing checks too). A check
//! may give the reason it fails (the informers that cannot see changes, by name), printed in
//! place of `reason withheld`: nothing secret, and what an operator needs first.

use std::sync::Arc;

use parking_lot::RwLock;

use kube_gc_runtime::leaderelection::LeadershipWatch;

/// A check: `None` when it passes, else why it fails (empty: no reason given).
type Check = Arc<dyn Fn() -> Option<String> + Send + Sync>;

/// The readiness checks; cheap to clone (clones share the list).
#[derive(Clone, Default)]
pub struct Readiness {
    checks: Arc<RwLock<Vec<(String, Check)>>>,
}

impl std::fmt::Debug for Readiness {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let names: Vec<String> = self.checks.read().iter().map(|(n, _)| n.clone()).collect();
        f.debug_struct("Readiness").field("checks", &names).finish()
    }
}

/// The outcome of running every check.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Report {
    /// `(name, passed)` in registration order.
    pub checks: Vec<(String, bool)>,
    /// Why each failing check that says so fails, by name.
    pub reasons: std::collections::BTreeMap<String, String>,
}

impl Report {
    /// Whether every check passed.
    pub fn ready(&self) -> bool {
        self.checks.iter().all(|(_, passed)| *passed)
    }

    /// The response body, as the Kubernetes health endpoints write it.
    pub fn body(&self, endpoint: &str, verbose: bool) -> String {
        if self.ready() && !verbose {
            return "ok".to_owned();
        }
        let mut body = String::new();
        for (name, passed) in &self.checks {
            if *passed && verbose {
                body.push_str(&format!("[+]{name} ok\n"));
            } else if !passed {
                let reason = self.reasons.get(name).map_or("reason withheld", |r| r);
                body.push_str(&format!("[-]{name} failed: {reason}\n"));
            }
        }
        if self.ready() {
            body.push_str(&format!("{endpoint} check passed\n"));
        } else {
            body.push_str(&format!("{endpoint} check failed\n"));
        }
        body
    }
}

impl Readiness {
    /// No checks: ready.
    pub fn new() -> Readiness {
        Readiness::default()
    }

    /// Adds a check called `name` (e.g. `informer-sync`).
    pub fn add(&self, name: &str, check: impl Fn() -> bool + Send + Sync + 'static) {
        self.add_with_reason(name, move || (!check()).then(String::new));
    }

    /// Adds a check called `name` that says why it fails: `None` passes, `Some(reason)` fails.
    pub fn add_with_reason(
        &self,
        name: &str,
        check: impl Fn() -> Option<String> + Send + Sync + 'static,
    ) {
        self.checks.write().push((name.to_owned(), Arc::new(check)));
    }

    /// Adds `leader-election`: passes once the elector knows whether it leads.
    pub fn add_leadership(&self, leadership: LeadershipWatch) {
        self.add("leader-election", move || leadership.current().is_known());
    }

    /// Runs every check. With none registered yet the process is still starting (reading
    /// discovery, building its controllers): that is a failing `startup` check, never `ok`.
    pub fn report(&self) -> Report {
        let checks = self.checks.read().clone();
        let mut report = Report {
            checks: Vec::with_capacity(checks.len().max(1)),
            reasons: Default::default(),
        };
        if checks.is_empty() {
            report.checks.push(("startup".to_owned(), false));
            report.reasons.insert(
                "startup".to_owned(),
                "starting: the controllers and their checks are not set up yet".to_owned(),
            );
        }
        for (name, check) in checks {
            let failure = check();
            if let Some(reason) = failure.as_ref().filter(|r| !r.is_empty()) {
                report.reasons.insert(name.clone(), reason.clone());
            }
            report.checks.push((name, failure.is_none()));
        }
        report
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicBool, Ordering};

    #[test]
    fn ready_only_when_every_check_passes() {
        let readiness = Readiness::new();
        let starting = readiness.report();
        assert!(!starting.ready(), "no checks yet is not ready");
        assert_eq!(
            starting.body("readyz", false),
            "[-]startup failed: starting: the controllers and their checks are not set up yet\nreadyz check failed\n"
        );
        let synced = Arc::new(AtomicBool::new(false));
        let flag = synced.clone();
        readiness.add("informer-sync", move || flag.load(Ordering::Relaxed));
        readiness.add("ping", || true);
        let report = readiness.report();
        assert!(!report.ready());
        assert_eq!(
            report.body("readyz", false),
            "[-]informer-sync failed: reason withheld\nreadyz check failed\n"
        );
        synced.store(true, Ordering::Relaxed);
        let report = readiness.report();
        assert_eq!(report.body("readyz", false), "ok");
        assert_eq!(
            report.body("readyz", true),
            "[+]informer-sync ok\n[+]ping ok\nreadyz check passed\n"
        );
    }

    #[test]
    fn a_failing_check_may_say_why() {
        let readiness = Readiness::new();
        readiness.add_with_reason("informers", || {
            Some("garbagecollector v1/pods cannot see changes".to_owned())
        });
        readiness.add("quiet", || false);
        let report = readiness.report();
        assert!(!report.ready());
        assert_eq!(
            report.body("readyz", false),
            "[-]informers failed: garbagecollector v1/pods cannot see changes\n\
             [-]quiet failed: reason withheld\nreadyz check failed\n"
        );
    }
}
