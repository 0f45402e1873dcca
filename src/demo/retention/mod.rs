//! The demo's retention scene: what the retention controller must do under two policies.
//!
//! Contract: [`plan`] is deterministic for a size and seed, and gives every object its expected
//! fate by the policies' rules — not by watching the controller:
//!
//! | where | policy | objects | expected |
//! |---|---|---|---|
//! | namespace `demo-pods` | `ClusterRetentionPolicy finished-pods`: preset `pods`, `ttlSecondsAfterFinished: 2`, a `namespaceSelector` naming the namespace | standalone Pods finished before the demo | deleted at once |
//! | | | Pods that succeed or fail during the demo (their container terminated then) | deleted [`POD_TTL`] s after it stopped |
//! | | | running Pods | kept |
//! | | | a Pod finished long ago with `kube-gc.io/ttl: 1h` | kept (the annotation extends its TTL) |
//! | | | a Pod finished long ago with `kube-gc.io/ttl: soon` | kept (a malformed annotation keeps the object) |
//! | namespace `demo` | `RetentionPolicy pipeline-history`: preset `tekton-pipelineruns`, `successfulHistoryLimit: 2`, `failedHistoryLimit: 1` | Tekton PipelineRuns of Pipelines `build` and `deploy`, finished before and during the demo, some running, one without the `tekton.dev/pipeline` label | per Pipeline, the newest 2 succeeded and the newest failed run kept, the rest deleted — an older run only once a newer one has finished |
//!
//! [`Scene::create`] creates the policies and objects, [`Scene::drive`] makes the running ones
//! finish on time, [`Scene::settled`] says when the end state is reached (objects and the
//! policies' `status`: `Ready=True`, `matched`, `waiting`, `deleted`), and [`Scene::check`]
//! lists what differs from it, the DELETEs the controller sent for the scene's objects, and the
//! Pods' deletion latencies after expiry.
//!
//! | file | what it holds |
//! |---|---|
//! | `plan.rs` | [`plan`]: the scene's objects and each one's expected fate |
//! | `objects.rs` | the policies and the objects as the scene writes them to the server |
//! | `mod.rs` | [`Scene`]: create, drive, settle, check |

mod objects;
mod plan;

use std::collections::{BTreeMap, HashMap};
use std::time::Duration;

use chrono::{DateTime, Utc};
use tokio::time::Instant;

use crate::sim::journal::JournalEntry;
use crate::sim::{SimError, SimServer};

use super::row::Row;
use super::workload::NAMESPACE;
use objects::{
    being_deleted, cluster_policies, create, current, finish, namespaced_policies, pods_policy,
    runs_policy, start, uid, whole_seconds,
};
pub use plan::{last_expiry, plan, Fate, Item, Outcome, SceneKind};

/// The namespace of the standalone Pods.
pub const PODS_NAMESPACE: &str = "demo-pods";
/// The Pod policy's `ttlSecondsAfterFinished`.
pub const POD_TTL: i64 = 2;
/// The `ClusterRetentionPolicy` of the Pods.
pub const POD_POLICY: &str = "finished-pods";
/// The `RetentionPolicy` of the PipelineRuns (in [`NAMESPACE`]).
pub const RUN_POLICY: &str = "pipeline-history";
/// `successfulHistoryLimit`.
pub const SUCCESSFUL_LIMIT: usize = 2;
/// `failedHistoryLimit`.
pub const FAILED_LIMIT: usize = 1;
/// The `kube-gc.io/ttl` that extends one finished Pod's TTL.
pub const EXTENDED_TTL: &str = "1h";
/// The malformed `kube-gc.io/ttl` of another, which must keep it.
pub const MALFORMED_TTL: &str = "soon";

/// What the scene wrote that its check needs, per item index.
#[derive(Debug, Default)]
pub struct SceneRecord {
    uids: HashMap<usize, String>,
    finished_at: HashMap<usize, DateTime<Utc>>,
    /// Just before the finish was written: nothing can have reacted to it earlier.
    writing_at: HashMap<usize, DateTime<Utc>>,
    /// Once the write returned: Pod latencies count from no earlier than this, as the TTL
    /// scene's do.
    written_at: HashMap<usize, DateTime<Utc>>,
}

/// One policy's status, as the summary shows it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PolicyRow {
    /// `ClusterRetentionPolicy finished-pods`, `RetentionPolicy demo/pipeline-history`.
    pub label: String,
    /// `Ready`'s status (`-` if none yet).
    pub ready: String,
    /// `status.matched`, `waiting`, `deleted`.
    pub matched: u64,
    /// `status.waiting`.
    pub waiting: u64,
    /// `status.deleted`.
    pub deleted: u64,
    /// What they should be: (matched, waiting, deleted).
    pub expected: (u64, u64, u64),
}

/// What the scene's check found.
#[derive(Debug, Default)]
pub struct Report {
    /// Per (kind, category).
    pub rows: BTreeMap<(SceneKind, &'static str), Row>,
    /// Per policy.
    pub policies: Vec<PolicyRow>,
    /// Successful DELETEs of the scene's objects: after a TTL, over a history limit.
    pub deletes: (usize, usize),
    /// Deletion latency of the Pods that finished during the demo, after their expiry (or
    /// after the finish was written, if later), sorted.
    pub latencies: Vec<Duration>,
    /// Everything that went wrong, one line each.
    pub problems: Vec<String>,
}

/// The retention scene.
#[derive(Debug)]
pub struct Scene {
    items: Vec<Item>,
    paths: HashMap<String, usize>,
}

impl Scene {
    /// Creates both policies and every object, finished ones with their finish time.
    pub fn create(
        sim: &SimServer,
        items: Vec<Item>,
        record: &mut SceneRecord,
    ) -> Result<Scene, SimError> {
        sim.create(&cluster_policies(), pods_policy())?;
        sim.create(&namespaced_policies(), runs_policy())?;
        let now = Utc::now();
        for (index, item) in items.iter().enumerate() {
            let created = create(sim, item)?;
            let created = match item.finished_before {
                Some((before, outcome)) => {
                    let at = now - chrono::Duration::from_std(before).unwrap_or_default();
                    finish(sim, item, created, outcome, at)?
                }
                None => start(sim, item, created)?,
            };
            record.uids.insert(index, uid(&created));
        }
        let paths = items
            .iter()
            .enumerate()
            .map(|(i, item)| (item.path(), i))
            .collect();
        Ok(Scene { items, paths })
    }

    /// Makes each running object that should finish during the demo finish at its time after
    /// `start` — what the kubelet and Tekton would do.
    pub async fn drive(
        &self,
        sim: &SimServer,
        start: Instant,
        record: &mut SceneRecord,
    ) -> Result<(), SimError> {
        let mut finishing: Vec<(Duration, usize, Outcome)> = self
            .items
            .iter()
            .enumerate()
            .filter_map(|(i, item)| item.finishes.map(|(at, outcome)| (at, i, outcome)))
            .collect();
        finishing.sort_by_key(|(at, i, _)| (*at, *i));
        for (at, index, outcome) in finishing {
            tokio::time::sleep_until(start + at).await;
            let item = &self.items[index];
            let current = sim.get(&item.kind.gvr(), Some(item.kind.namespace()), &item.name)?;
            let writing_at = Utc::now();
            let finished_at = whole_seconds(writing_at);
            finish(sim, item, current, outcome, finished_at)?;
            record.writing_at.insert(index, writing_at);
            record.finished_at.insert(index, finished_at);
            record.written_at.insert(index, Utc::now());
        }
        Ok(())
    }

    /// Whether the paths is one of the scene's objects.
    pub fn owns(&self, path: &str) -> bool {
        self.paths.contains_key(path)
    }

    /// Whether every object and both policies' statuses reached their end state.
    pub fn settled(&self, sim: &SimServer, record: &SceneRecord) -> bool {
        self.object_problems(sim, record).is_empty()
            && self.policy_rows(sim).iter().all(PolicyRow::as_expected)
    }

    /// Checks the server and the request journal against the plan.
    pub fn check(&self, sim: &SimServer, record: &SceneRecord, deletes: &[JournalEntry]) -> Report {
        let mut report = Report {
            problems: self.object_problems(sim, record),
            policies: self.policy_rows(sim),
            ..Report::default()
        };
        for item in &self.items {
            let row = report.rows.entry((item.kind, item.category)).or_default();
            row.total += 1;
            row.expected_deleted += usize::from(item.fate != Fate::Kept);
            row.deleted += usize::from(current(sim, item).is_none_or(|o| being_deleted(&o)));
        }
        for policy in &report.policies {
            if !policy.as_expected() {
                report.problems.push(format!(
                    "{}: Ready={}, matched {}, waiting {}, deleted {} (expected Ready=True, matched {}, waiting {}, deleted {})",
                    policy.label,
                    policy.ready,
                    policy.matched,
                    policy.waiting,
                    policy.deleted,
                    policy.expected.0,
                    policy.expected.1,
                    policy.expected.2
                ));
            }
        }
        for entry in deletes {
            let Some(&index) = self.paths.get(&entry.path) else {
                continue;
            };
            let item = &self.items[index];
            match item.fate {
                Fate::Kept => report
                    .problems
                    .push(format!("unexpected DELETE {}", entry.path)),
                Fate::History { displaced_by } => {
                    report.deletes.1 += 1;
                    let newer = displaced_by.and_then(|by| record.writing_at.get(&by));
                    if let Some(newer) = newer.filter(|newer| entry.at < **newer) {
                        report.problems.push(format!(
                            "{} {} was deleted at {}, before the newer run that pushed it over the history limit finished ({newer})",
                            item.kind.as_str(), item.name, entry.at
                        ));
                    }
                }
                Fate::Ttl => {
                    report.deletes.0 += 1;
                    let Some(finished) = record.finished_at.get(&index) else {
                        continue; // Finished before the demo: expired long ago.
                    };
                    let expiry = *finished + chrono::Duration::seconds(POD_TTL);
                    if entry.at < expiry {
                        report.problems.push(format!(
                            "{} {} was deleted at {}, before its TTL expired ({expiry})",
                            item.kind.as_str(),
                            item.name,
                            entry.at
                        ));
                        continue;
                    }
                    let expiry = record
                        .written_at
                        .get(&index)
                        .map_or(expiry, |w| expiry.max(*w));
                    if let Ok(latency) = (entry.at - expiry).to_std() {
                        report.latencies.push(latency);
                    }
                }
            }
        }
        report.latencies.sort();
        report
    }

    /// How each object differs from its expected end state.
    fn object_problems(&self, sim: &SimServer, record: &SceneRecord) -> Vec<String> {
        let mut problems = Vec::new();
        for (index, item) in self.items.iter().enumerate() {
            let object = current(sim, item);
            let gone = object.as_ref().is_none_or(being_deleted);
            let what = format!(
                "{} {}/{}",
                item.kind.as_str(),
                item.kind.namespace(),
                item.name
            );
            match item.fate {
                Fate::Ttl | Fate::History { .. } if !gone => {
                    problems.push(format!("{what} should have been deleted"));
                }
                Fate::Kept if gone => problems.push(format!("{what} was deleted")),
                Fate::Kept if object.as_ref().map(uid) != record.uids.get(&index).cloned() => {
                    problems.push(format!("{what} is not the object the demo left there"));
                }
                _ => {}
            }
        }
        problems
    }

    /// Each policy's status next to what it should say at the end.
    fn policy_rows(&self, sim: &SimServer) -> Vec<PolicyRow> {
        let expected = |kind: SceneKind| {
            let of_kind = || self.items.iter().filter(move |i| i.kind == kind);
            // Every kept object is governed, the one a malformed annotation keeps too (its
            // policy applies; only its TTL cannot be read).
            let matched = of_kind().filter(|i| i.fate == Fate::Kept).count();
            // Kept finished objects with a TTL still to run: the TTL-extended Pod.
            let waiting = of_kind()
                .filter(|i| i.fate == Fate::Kept && i.ttl_annotation == Some(EXTENDED_TTL))
                .count();
            let deleted = of_kind().filter(|i| i.fate != Fate::Kept).count();
            (matched as u64, waiting as u64, deleted as u64)
        };
        [
            (
                format!("ClusterRetentionPolicy {POD_POLICY}"),
                sim.get(&cluster_policies(), None, POD_POLICY).ok(),
                expected(SceneKind::Pod),
            ),
            (
                format!("RetentionPolicy {NAMESPACE}/{RUN_POLICY}"),
                sim.get(&namespaced_policies(), Some(NAMESPACE), RUN_POLICY)
                    .ok(),
                expected(SceneKind::PipelineRun),
            ),
        ]
        .into_iter()
        .map(|(label, object, expected)| {
            let status = object.map(|o| o["status"].clone()).unwrap_or_default();
            let ready = status["conditions"]
                .as_array()
                .and_then(|cs| cs.iter().find(|c| c["type"] == "Ready"))
                .and_then(|c| c["status"].as_str())
                .unwrap_or("-")
                .to_owned();
            let count = |field: &str| status[field].as_u64().unwrap_or(0);
            PolicyRow {
                label,
                ready,
                matched: count("matched"),
                waiting: count("waiting"),
                deleted: count("deleted"),
                expected,
            }
        })
        .collect()
    }
}

impl PolicyRow {
    /// `Ready=True` with the expected counts.
    pub fn as_expected(&self) -> bool {
        self.ready == "True" && (self.matched, self.waiting, self.deleted) == self.expected
    }
}
