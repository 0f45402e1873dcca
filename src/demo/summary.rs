//! The demo's verdict: compares the server's final state and request journal with the
//! workload's expected fates.
//!
//! Contract: the demo passes only if every object expected to be deleted was (deletion
//! accepted: gone, or marked by the Foreground DELETE), every other object is still there with
//! the UID it should have and untouched, and the controllers sent exactly one successful DELETE
//! per deleted object and none for anything else.

use std::collections::{BTreeMap, HashMap};
use std::fmt;
use std::time::Duration;

use serde_json::Value;

use crate::sim::SimServer;

use super::driver::{gvr, DemoKey, Record};
use super::workload::{DemoKind, Expect, Planned, NAMESPACE};

/// Counts for one category of objects.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Row {
    /// Objects in the category.
    pub total: usize,
    /// Expected to be deleted.
    pub expected_deleted: usize,
    /// Actually deleted.
    pub deleted: usize,
}

/// What the demo found.
#[derive(Debug, Default)]
pub struct Summary {
    /// Per (kind, category).
    pub rows: BTreeMap<(DemoKind, &'static str), Row>,
    /// Everything that went wrong, one line each.
    pub problems: Vec<String>,
    /// Successful DELETEs the controllers sent.
    pub deletes: usize,
    /// Deletion latency after expiry (or after the finish was written, when the whole-second
    /// finish time put the expiry before it), for objects that expired during the demo, sorted.
    pub latencies: Vec<Duration>,
    /// How long the demo ran.
    pub elapsed: Duration,
}

impl Summary {
    /// Whether the outcome is exactly the expected one.
    pub fn passed(&self) -> bool {
        self.problems.is_empty()
    }

    fn percentile(&self, p: f64) -> Option<Duration> {
        let last = self.latencies.len().checked_sub(1)?;
        let index = ((last as f64) * p).round() as usize;
        self.latencies.get(index.min(last)).copied()
    }
}

fn being_deleted(object: &Value) -> bool {
    object["metadata"]["deletionTimestamp"].is_string()
}

/// Checks the server against the plan.
pub fn check(sim: &SimServer, planned: &[Planned], record: &Record) -> Summary {
    let mut summary = Summary::default();
    let mut expected_paths: HashMap<String, &Planned> = HashMap::new();
    for p in planned {
        let object = sim.get(&gvr(p.kind), Some(NAMESPACE), &p.name).ok();
        let deleted = object.as_ref().is_none_or(being_deleted);
        let row = summary.rows.entry((p.kind, p.category)).or_default();
        row.total += 1;
        row.deleted += usize::from(deleted);
        let key: DemoKey = (p.kind, p.name.clone());
        match p.expect {
            Expect::Deleted => {
                row.expected_deleted += 1;
                expected_paths.insert(path(p), p);
                if !deleted {
                    summary.problems.push(format!(
                        "{} {} should have been deleted",
                        p.kind.as_str(),
                        p.name
                    ));
                }
            }
            Expect::Kept => {
                let uid = object.as_ref().and_then(|o| o["metadata"]["uid"].as_str());
                if deleted {
                    summary
                        .problems
                        .push(format!("{} {} was deleted", p.kind.as_str(), p.name));
                } else if uid != record.uids.get(&key).map(String::as_str) {
                    summary.problems.push(format!(
                        "{} {} is not the object the demo left there",
                        p.kind.as_str(),
                        p.name
                    ));
                }
            }
        }
    }

    let mut deletes_per_path: HashMap<String, usize> = HashMap::new();
    for entry in sim.journal().deletes() {
        if !(200..300).contains(&entry.status) {
            continue;
        }
        summary.deletes += 1;
        *deletes_per_path.entry(entry.path.clone()).or_default() += 1;
        let Some(p) = expected_paths.get(&entry.path) else {
            summary
                .problems
                .push(format!("unexpected DELETE {}", entry.path));
            continue;
        };
        let key: DemoKey = (p.kind, p.name.clone());
        let (Some(finished), Some(ttl), true) =
            (record.finished_at.get(&key), p.ttl, p.finishes.is_some())
        else {
            continue; // The backlog expired before the demo started; no latency to speak of.
        };
        let expiry = *finished + chrono::Duration::seconds(i64::from(ttl));
        let expiry = record
            .written_at
            .get(&key)
            .map_or(expiry, |w| expiry.max(*w));
        if let Ok(latency) = (entry.at - expiry).to_std() {
            summary.latencies.push(latency);
        }
    }
    for (path, count) in deletes_per_path {
        if count > 1 {
            summary
                .problems
                .push(format!("{path} deleted {count} times"));
        }
    }
    if sim.journal().dropped() > 0 {
        summary
            .problems
            .push("the request journal overflowed; DELETEs cannot be checked".into());
    }
    summary.latencies.sort();
    summary
}

fn path(p: &Planned) -> String {
    let resource = gvr(p.kind);
    format!(
        "/apis/{}/{}/namespaces/{NAMESPACE}/{}/{}",
        resource.group, resource.version, resource.resource, p.name
    )
}

impl fmt::Display for Summary {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(
            f,
            "{:<12} {:<14} {:>7} {:>17} {:>8}",
            "KIND", "CATEGORY", "OBJECTS", "SHOULD BE DELETED", "DELETED"
        )?;
        for ((kind, category), row) in &self.rows {
            writeln!(
                f,
                "{:<12} {:<14} {:>7} {:>17} {:>8}",
                kind.as_str(),
                category,
                row.total,
                row.expected_deleted,
                row.deleted
            )?;
        }
        let expected: usize = self.rows.values().map(|r| r.expected_deleted).sum();
        writeln!(f)?;
        writeln!(
            f,
            "{} DELETE requests for {expected} expected deletions, in {:.1} s.",
            self.deletes,
            self.elapsed.as_secs_f64()
        )?;
        if let (Some(p50), Some(p99), Some(max)) = (
            self.percentile(0.5),
            self.percentile(0.99),
            self.latencies.last(),
        ) {
            writeln!(
                f,
                "Deletion after expiry (or after the finish was written, if later): p50 {:.0} ms, p99 {:.0} ms, max {:.0} ms.",
                p50.as_secs_f64() * 1e3,
                p99.as_secs_f64() * 1e3,
                max.as_secs_f64() * 1e3
            )?;
        }
        if self.passed() {
            writeln!(
                f,
                "PASS: every expected deletion happened, and nothing else was deleted."
            )
        } else {
            writeln!(f, "FAIL: {} problem(s):", self.problems.len())?;
            for problem in &self.problems {
                writeln!(f, "  - {problem}")?;
            }
            Ok(())
        }
    }
}
