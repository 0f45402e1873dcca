//! The demo's verdict: compares the server's final state and request journal with the
//! workload's expected fates.
//!
//! Contract: the demo passes only if every object expected to be deleted was (deletion
//! accepted: gone, or marked by the Foreground DELETE), every other object is still there with
//! the UID it should have and untouched, every owner tree reached its end state ([`OwnerTrees`]:
//! dependents gone, or orphans kept with the reference removed), the retention [`Scene`]
//! reached its own (finished Pods deleted no sooner than their TTL allows, running, extended and
//! malformed-annotation Pods kept, exactly the newest runs per Pipeline kept, no run deleted
//! before a newer one pushed it over the limit, both policies `Ready=True` with the expected
//! counts), the namespace scene reached its own ([`namespaces::Report`]: the deleted namespaces
//! emptied Pods first and finalized, the held one only after its release, the lost node's Pods
//! force-deleted by the pod garbage collector, the claim released by PVC protection, the kept
//! namespace untouched), and the controllers sent at most one successful DELETE per object they
//! may delete and none for anything else.

use std::collections::{BTreeMap, HashMap};
use std::fmt;
use std::time::Duration;

use serde_json::Value;

use crate::sim::SimServer;

use super::driver::{gvr, DemoKey, Record};
use super::namespaces;
use super::owners::{OwnerTrees, TreeRow};
use super::retention::{self, Scene, SceneRecord};
pub use super::row::Row;
use super::workload::{DemoKind, Expect, Planned, NAMESPACE};

/// What the demo found.
#[derive(Debug, Default)]
pub struct Summary {
    /// Per (kind, category).
    pub rows: BTreeMap<(DemoKind, &'static str), Row>,
    /// Per owner tree.
    pub trees: Vec<(&'static str, TreeRow)>,
    /// Everything that went wrong, one line each.
    pub problems: Vec<String>,
    /// Successful DELETEs the controllers sent for the workload's Jobs.
    pub deletes: usize,
    /// Successful DELETEs the controllers sent in the owner trees.
    pub tree_deletes: usize,
    /// Deletion latency after expiry (or after the finish was written, when the whole-second
    /// finish time put the expiry before it), for objects that expired during the demo, sorted.
    pub latencies: Vec<Duration>,
    /// What the retention scene found.
    pub retention: retention::Report,
    /// What the namespace scene found.
    pub namespaces: namespaces::Report,
    /// How long the demo ran.
    pub elapsed: Duration,
    /// `kube-gc explain` of a kept and of a blocked object (`explained.rs`).
    pub explained: Vec<String>,
}

impl Summary {
    /// Whether the outcome is exactly the expected one.
    pub fn passed(&self) -> bool {
        self.problems.is_empty()
    }
}

/// The `p` percentile of sorted `latencies`.
fn percentile(latencies: &[Duration], p: f64) -> Option<Duration> {
    let last = latencies.len().checked_sub(1)?;
    let index = ((last as f64) * p).round() as usize;
    latencies.get(index.min(last)).copied()
}

/// `p50 …, p99 …, max …` of sorted `latencies`, if any.
fn latency_line(latencies: &[Duration]) -> Option<String> {
    let ms = |d: Duration| d.as_secs_f64() * 1e3;
    Some(format!(
        "p50 {:.0} ms, p99 {:.0} ms, max {:.0} ms",
        ms(percentile(latencies, 0.5)?),
        ms(percentile(latencies, 0.99)?),
        ms(*latencies.last()?)
    ))
}

fn being_deleted(object: &Value) -> bool {
    object["metadata"]["deletionTimestamp"].is_string()
}

/// The scenes besides the workload, and what their drivers recorded.
pub struct Scenes<'a> {
    /// The owner trees.
    pub trees: &'a OwnerTrees,
    /// The retention scene.
    pub retention: (&'a Scene, &'a SceneRecord),
    /// The namespace scene.
    pub namespaces: (&'a namespaces::Scene, &'a namespaces::SceneRecord),
}

/// Checks the server against the plan.
pub fn check(
    sim: &SimServer,
    planned: &[Planned],
    record: &Record,
    scenes: &Scenes<'_>,
) -> Summary {
    let Scenes {
        trees,
        retention: (scene, scene_record),
        namespaces: (namespace_scene, namespace_record),
    } = scenes;
    let journal = sim.journal().entries();
    let deletes: Vec<_> = journal
        .iter()
        .filter(|entry| entry.method == "DELETE" && (200..300).contains(&entry.status))
        .cloned()
        .collect();
    let mut summary = Summary {
        trees: trees.rows(sim),
        problems: trees.check(sim),
        ..Summary::default()
    };
    let collectable = trees.may_delete();
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

    summary.retention = scene.check(sim, scene_record, &deletes);
    summary
        .problems
        .extend(summary.retention.problems.iter().cloned());
    summary.namespaces = namespace_scene.check(sim, namespace_record, &journal);
    summary
        .problems
        .extend(summary.namespaces.problems.iter().cloned());
    let mut deletes_per_path: HashMap<String, usize> = HashMap::new();
    for entry in &deletes {
        if namespace_scene.owns(&entry.path) {
            // Its check judged it; a namespace's content may be asked to go more than once
            // (a collection deleted again while the first call's Pods are still stopping).
            continue;
        }
        *deletes_per_path.entry(entry.path.clone()).or_default() += 1;
        if scene.owns(&entry.path) {
            continue; // The scene's check judged it.
        }
        if collectable.contains(&entry.path) {
            summary.tree_deletes += 1;
            continue;
        }
        summary.deletes += 1;
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

/// A table of objects per kind and category: how many, how many should be deleted, how many
/// were — the TTL scene's and the retention scene's alike.
fn write_category_table<'a>(
    f: &mut fmt::Formatter<'_>,
    title: &str,
    rows: impl Iterator<Item = (&'a str, &'a str, &'a Row)>,
) -> fmt::Result {
    writeln!(
        f,
        "{:<12} {:<14} {:>7} {:>17} {:>8}",
        title, "CATEGORY", "OBJECTS", "SHOULD BE DELETED", "DELETED"
    )?;
    for (kind, category, row) in rows {
        writeln!(
            f,
            "{:<12} {:<14} {:>7} {:>17} {:>8}",
            kind, category, row.total, row.expected_deleted, row.deleted
        )?;
    }
    Ok(())
}

impl fmt::Display for Summary {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let rows = self.rows.iter().map(|((k, c), r)| (k.as_str(), *c, r));
        write_category_table(f, "KIND", rows)?;
        writeln!(f)?;
        writeln!(
            f,
            "{:<27} {:>7} {:>17} {:>8}",
            "OWNER TREE", "OBJECTS", "SHOULD BE GONE", "GONE"
        )?;
        for (label, row) in &self.trees {
            writeln!(
                f,
                "{:<27} {:>7} {:>17} {:>8}",
                label, row.total, row.expected_gone, row.gone
            )?;
        }
        writeln!(f)?;
        let rows = self.retention.rows.iter();
        write_category_table(f, "RETENTION", rows.map(|((k, c), r)| (k.as_str(), *c, r)))?;
        writeln!(f)?;
        writeln!(
            f,
            "{:<38} {:>5} {:>13} {:>13} {:>13}",
            "POLICY STATUS (EXPECTED)", "READY", "MATCHED", "WAITING", "DELETED"
        )?;
        for policy in &self.retention.policies {
            let (matched, waiting, deleted) = policy.expected;
            writeln!(
                f,
                "{:<38} {:>5} {:>13} {:>13} {:>13}",
                policy.label,
                policy.ready,
                format!("{} ({matched})", policy.matched),
                format!("{} ({waiting})", policy.waiting),
                format!("{} ({deleted})", policy.deleted),
            )?;
        }
        writeln!(f)?;
        write!(f, "{}", self.namespaces)?;
        let expected: usize = self.rows.values().map(|r| r.expected_deleted).sum();
        writeln!(
            f,
            "{} DELETE requests for {expected} expected TTL deletions, {} more in the owner trees, in {:.1} s.",
            self.deletes,
            self.tree_deletes,
            self.elapsed.as_secs_f64()
        )?;
        if let Some(line) = latency_line(&self.latencies) {
            writeln!(
                f,
                "Deletion after expiry (or after the finish was written, if later): {line}."
            )?;
        }
        let rows = self.retention.rows.values();
        let expected_retention: usize = rows.map(|r| r.expected_deleted).sum();
        let (ttl, history) = self.retention.deletes;
        writeln!(
            f,
            "Retention: {} DELETE requests for {expected_retention} expected deletions ({ttl} after a TTL, {history} over a history limit).",
            ttl + history
        )?;
        if let Some(line) = latency_line(&self.retention.latencies) {
            writeln!(
                f,
                "Pod deletion after expiry (or after the finish was written, if later): {line}."
            )?;
        }
        for screen in &self.explained {
            writeln!(f, "\n{screen}")?;
        }
        if self.passed() {
            writeln!(
                f,
                "PASS: every expected deletion happened, every cascade finished (orphans kept, their reference removed), the retention policies are Ready and kept exactly what they should, the deleted namespaces were emptied Pods first and finalized (the held one only after its release), and nothing else was deleted."
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
