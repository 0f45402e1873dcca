//! [`PendingCollector`]: what each controller will delete within the next hour and day, read
//! at scrape time from the sources the controllers register
//! ([`PendingSource`](kube_gc_controllers::pending::PendingSource)).
//!
//! | metric | kind | meaning |
//! |---|---|---|
//! | `kube_gc_pending_deletions{controller,policy_kind,policy,within}` | gauge | deletions due within `within` (`1h`, `24h`), those due now included; `policy_kind` and `policy` empty for a controller without policies |
//! | `kube_gc_retention_would_delete_pending{policy_kind,policy,within}` | gauge | the same for each retention policy in `Audit` mode: what it would delete, which kube-gc will not |
//!
//! Contract: a deletion is pending only if kube-gc will make it — a policy in `Audit` mode is
//! published apart, so that a sum of `kube_gc_pending_deletions` is what kube-gc will do (under
//! `kube-gc run --dry-run`, what it would do). Each scrape asks every source once, at its own
//! clock's now; nothing is kept between scrapes. What "pending" means for each controller is
//! the source's: a TTL's expiry for the TTL controllers and retention, an object the graph
//! proves ownerless for the garbage collector (`docs/operations.md`).

use std::sync::Arc;
use std::time::Duration;

use parking_lot::RwLock;
use prometheus_client::collector::Collector;
use prometheus_client::encoding::{DescriptorEncoder, EncodeMetric};
use prometheus_client::metrics::gauge::ConstGauge;
use prometheus_client::metrics::MetricType;

use kube_gc_controllers::pending::{Pending, PendingQuery, SharedPendingSource};
use kube_gc_core::clock::SharedClock;

/// The horizons published, with their `within` label.
pub const HORIZONS: [(&str, Duration); 2] = [
    ("1h", Duration::from_secs(3600)),
    ("24h", Duration::from_secs(86_400)),
];

/// The sources to read; cheap to clone (clones share them).
#[derive(Clone, Default)]
pub struct PendingCollector {
    sources: Arc<RwLock<Vec<(SharedPendingSource, SharedClock)>>>,
}

impl std::fmt::Debug for PendingCollector {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PendingCollector")
            .field("sources", &self.sources.read().len())
            .finish()
    }
}

impl PendingCollector {
    /// Publishes `source`'s deletions to come, judged at `clock`'s now.
    pub fn add(&self, source: SharedPendingSource, clock: SharedClock) {
        self.sources.write().push((source, clock));
    }

    /// Every source's deletions to come now, for [`HORIZONS`].
    pub fn read(&self) -> Vec<Pending> {
        self.read_with(&HORIZONS.map(|(_, h)| h), 0)
    }

    /// Every source's deletions to come now, counted for `horizons`, the first `limit` listed.
    pub fn read_with(&self, horizons: &[Duration], limit: usize) -> Vec<Pending> {
        let sources = self.sources.read().clone();
        sources
            .iter()
            .flat_map(|(source, clock)| {
                let query = PendingQuery {
                    now: clock.now(),
                    horizons: horizons.to_vec(),
                    limit,
                };
                source.pending(&query)
            })
            .collect()
    }
}

impl Collector for PendingCollector {
    fn encode(&self, mut encoder: DescriptorEncoder) -> Result<(), std::fmt::Error> {
        if self.sources.read().is_empty() {
            return Ok(());
        }
        let all = self.read();
        let (audit, enforced): (Vec<&Pending>, Vec<&Pending>) = all.iter().partition(|p| p.audit);
        let mut family = encoder.encode_descriptor(
            "kube_gc_pending_deletions",
            "Deletions kube-gc will make within the window (due now included), by controller and retention policy",
            None,
            MetricType::Gauge,
        )?;
        for pending in enforced {
            for (i, (within, _)) in HORIZONS.iter().enumerate() {
                let (kind, policy) = policy_labels(pending);
                let labels = [
                    ("controller", pending.controller.to_owned()),
                    ("policy_kind", kind),
                    ("policy", policy),
                    ("within", (*within).to_owned()),
                ];
                gauge(pending, i).encode(family.encode_family(&labels)?)?;
            }
        }
        if audit.is_empty() {
            return Ok(());
        }
        let mut family = encoder.encode_descriptor(
            "kube_gc_retention_would_delete_pending",
            "Deletions a retention policy in Audit mode would make within the window (due now included); kube-gc makes none",
            None,
            MetricType::Gauge,
        )?;
        for pending in audit {
            for (i, (within, _)) in HORIZONS.iter().enumerate() {
                let (kind, policy) = policy_labels(pending);
                let labels = [
                    ("policy_kind", kind),
                    ("policy", policy),
                    ("within", (*within).to_owned()),
                ];
                gauge(pending, i).encode(family.encode_family(&labels)?)?;
            }
        }
        Ok(())
    }
}

fn policy_labels(pending: &Pending) -> (String, String) {
    match &pending.policy {
        Some(id) => (id.kind().to_owned(), id.path()),
        None => (String::new(), String::new()),
    }
}

fn gauge(pending: &Pending, horizon: usize) -> ConstGauge<i64> {
    let count = pending.within.get(horizon).copied().unwrap_or_default();
    ConstGauge::new(i64::try_from(count).unwrap_or(i64::MAX))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::metrics::Metrics;
    use kube_gc_controllers::pending::PendingTally;
    use kube_gc_controllers::retention::policy::PolicyId;
    use kube_gc_core::clock::ManualClock;

    #[test]
    fn each_controller_and_policy_is_published_per_window_and_audit_apart() {
        let metrics = Metrics::new();
        let clock: SharedClock = Arc::new(ManualClock::new(chrono::Utc::now()));
        let source: SharedPendingSource = Arc::new(|query: &PendingQuery| {
            let policy = |name: &str, audit: bool, due: u64| {
                let mut tally =
                    PendingTally::new(query, "retention", Some(PolicyId::cluster(name)), audit);
                for _ in 0..due {
                    tally.add(kube_gc_controllers::pending::PendingDeletion {
                        kind: "Pod".into(),
                        namespace: None,
                        name: String::new(),
                        uid: String::new(),
                        at: None,
                        reason: "ttl",
                    });
                }
                tally.finish()
            };
            vec![policy("enforced", false, 2), policy("trial", true, 3)]
        });
        metrics.pending().add(source, Arc::clone(&clock));
        let gc: SharedPendingSource = Arc::new(|query: &PendingQuery| {
            vec![PendingTally::new(query, "garbagecollector", None, false).finish()]
        });
        metrics.pending().add(gc, clock);
        let text = metrics.encode().unwrap();
        for line in [
            r#"kube_gc_pending_deletions{controller="retention",policy_kind="ClusterRetentionPolicy",policy="enforced",within="1h"} 2"#,
            r#"kube_gc_pending_deletions{controller="retention",policy_kind="ClusterRetentionPolicy",policy="enforced",within="24h"} 2"#,
            r#"kube_gc_pending_deletions{controller="garbagecollector",policy_kind="",policy="",within="1h"} 0"#,
            r#"kube_gc_retention_would_delete_pending{policy_kind="ClusterRetentionPolicy",policy="trial",within="24h"} 3"#,
        ] {
            assert!(text.lines().any(|l| l == line), "missing {line} in\n{text}");
        }
        assert!(!text.contains(r#"kube_gc_pending_deletions{controller="retention",policy_kind="ClusterRetentionPolicy",policy="trial""#));
    }
}
