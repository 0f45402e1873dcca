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

use std::collections::{BTreeMap, HashMap};
use std::time::Duration;

use chrono::{DateTime, Utc};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use serde_json::{json, Value};
use tokio::time::Instant;

use crate::sim::journal::JournalEntry;
use crate::sim::{Gvr, SimError, SimServer};

use super::summary::Row;
use super::workload::NAMESPACE;

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
/// The label Tekton puts on every run of a Pipeline, which the preset groups by.
const PIPELINE_LABEL: &str = "tekton.dev/pipeline";

/// Which kind an object of the scene is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum SceneKind {
    /// v1 Pod.
    Pod,
    /// tekton.dev/v1 PipelineRun.
    PipelineRun,
}

impl SceneKind {
    /// The kind's name in the summary.
    pub fn as_str(self) -> &'static str {
        match self {
            SceneKind::Pod => "Pod",
            SceneKind::PipelineRun => "PipelineRun",
        }
    }

    fn gvr(self) -> Gvr {
        match self {
            SceneKind::Pod => Gvr::new("", "v1", "pods"),
            SceneKind::PipelineRun => Gvr::new("tekton.dev", "v1", "pipelineruns"),
        }
    }

    fn namespace(self) -> &'static str {
        match self {
            SceneKind::Pod => PODS_NAMESPACE,
            SceneKind::PipelineRun => NAMESPACE,
        }
    }
}

/// How an object finished.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Outcome {
    /// Pod phase `Succeeded`; PipelineRun `Succeeded=True`.
    Succeeded,
    /// Pod phase `Failed`; PipelineRun `Succeeded=False`.
    Failed,
}

/// What the retention controller should have done to an object by the end.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Fate {
    /// Deleted once its TTL ran out.
    Ttl,
    /// Deleted as over its group's history limit — not before the run at this index (in the
    /// plan) finished, if a run finishing during the demo is what pushed it over.
    History {
        /// The run that pushed it over the limit, if not over it from the start.
        displaced_by: Option<usize>,
    },
    /// Left alone.
    Kept,
}

/// One object of the scene.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Item {
    /// Its kind (and so its namespace).
    pub kind: SceneKind,
    /// Its name.
    pub name: String,
    /// Its category, for the summary (a PipelineRun's: its Pipeline).
    pub category: &'static str,
    /// Finished this long before the demo starts.
    pub finished_before: Option<(Duration, Outcome)>,
    /// Finishes this long after the start.
    pub finishes: Option<(Duration, Outcome)>,
    /// Its `kube-gc.io/ttl` annotation.
    pub ttl_annotation: Option<&'static str>,
    /// Its expected fate.
    pub fate: Fate,
}

impl Item {
    fn path(&self) -> String {
        let gvr = self.kind.gvr();
        let prefix = if gvr.group.is_empty() {
            format!("/api/{}", gvr.version)
        } else {
            format!("/apis/{}/{}", gvr.group, gvr.version)
        };
        format!(
            "{prefix}/namespaces/{}/{}/{}",
            self.kind.namespace(),
            gvr.resource,
            self.name
        )
    }

    fn outcome(&self) -> Option<Outcome> {
        self.finished_before
            .or(self.finishes)
            .map(|(_, outcome)| outcome)
    }
}

fn item(kind: SceneKind, name: String, category: &'static str) -> Item {
    Item {
        kind,
        name,
        category,
        finished_before: None,
        finishes: None,
        ttl_annotation: None,
        fate: Fate::Kept,
    }
}

/// The scene for `pods` standalone Pods finishing within `spread`, from `seed`.
pub fn plan(pods: usize, spread: Duration, seed: u64) -> Vec<Item> {
    let mut rng = StdRng::seed_from_u64(seed ^ 0x5e7e_0017);
    let millis = u64::try_from(spread.as_millis()).unwrap_or(u64::MAX).max(1);
    let mut items = Vec::new();
    let part = |percent: usize| (pods * percent / 100).max(1);
    let ago = Duration::from_secs(600);
    let mut add_pods = |category: &'static str, count: usize, shape: &mut dyn FnMut(&mut Item)| {
        for i in 0..count {
            let mut pod = item(SceneKind::Pod, format!("pod-{category}-{i:03}"), category);
            shape(&mut pod);
            items.push(pod);
        }
    };
    add_pods("backlog", part(10), &mut |p| {
        p.finished_before = Some((ago, Outcome::Succeeded));
        p.fate = Fate::Ttl;
    });
    for (category, outcome, percent) in [
        ("succeeds", Outcome::Succeeded, 35),
        ("fails", Outcome::Failed, 15),
    ] {
        add_pods(category, part(percent), &mut |p| {
            p.finishes = Some((Duration::from_millis(rng.random_range(0..millis)), outcome));
            p.fate = Fate::Ttl;
        });
    }
    add_pods("running", part(40), &mut |_| {});
    add_pods("ttl-extended", 1, &mut |p| {
        p.finished_before = Some((ago, Outcome::Succeeded));
        p.ttl_annotation = Some(EXTENDED_TTL);
    });
    add_pods("bad-annotation", 1, &mut |p| {
        p.finished_before = Some((ago, Outcome::Failed));
        p.ttl_annotation = Some(MALFORMED_TTL);
    });

    let minutes = |m: u64| Some(Duration::from_secs(m * 60));
    let (s, f) = (Outcome::Succeeded, Outcome::Failed);
    let during = |fraction: f64| Some(spread.mul_f64(fraction));
    let runs: [(&'static str, &[RunShape]); 3] = [
        (
            "build",
            &[
                (minutes(60), None, s),
                (minutes(50), None, f),
                (minutes(40), None, s),
                (minutes(30), None, s),
                (minutes(25), None, f),
                (minutes(20), None, s),
                (minutes(10), None, s),
                (None, during(0.5), s),
                (None, None, s), // running throughout
            ],
        ),
        (
            "deploy",
            &[
                (minutes(55), None, s),
                (minutes(45), None, s),
                (minutes(35), None, f),
                (minutes(15), None, f),
                (minutes(5), None, s),
                (None, during(0.75), f),
            ],
        ),
        ("no-pipeline", &[(minutes(60), None, s)]),
    ];
    for (pipeline, shapes) in runs {
        for (i, &(before, at, outcome)) in shapes.iter().enumerate() {
            let mut run = item(
                SceneKind::PipelineRun,
                format!("{pipeline}-run-{:02}", i + 1),
                pipeline,
            );
            run.finished_before = before.map(|b| (b, outcome));
            run.finishes = at.map(|a| (a, outcome));
            items.push(run);
        }
    }
    apply_history_limits(&mut items);
    items
}

/// A PipelineRun: finished this long before the start, or finishing this long after it (or
/// neither: running throughout), and how.
type RunShape = (Option<Duration>, Option<Duration>, Outcome);

/// Sets the fate of every PipelineRun of a Pipeline beyond its history limit.
fn apply_history_limits(items: &mut [Item]) {
    // Per (Pipeline, outcome): the finished runs, newest first, with when they finish (zero:
    // before the start).
    let mut groups: HashMap<(&'static str, Outcome), Vec<(i128, usize)>> = HashMap::new();
    for (index, item) in items.iter().enumerate() {
        if item.kind != SceneKind::PipelineRun || item.category == "no-pipeline" {
            continue;
        }
        let Some(outcome) = item.outcome() else {
            continue;
        };
        // A signed finish time relative to the start, in milliseconds.
        let at = match (item.finished_before, item.finishes) {
            (Some((before, _)), _) => -(before.as_millis() as i128),
            (_, Some((after, _))) => after.as_millis() as i128,
            _ => continue,
        };
        groups
            .entry((item.category, outcome))
            .or_default()
            .push((at, index));
    }
    for ((_, outcome), mut members) in groups {
        let limit = match outcome {
            Outcome::Succeeded => SUCCESSFUL_LIMIT,
            Outcome::Failed => FAILED_LIMIT,
        };
        members.sort_by(|a, b| b.cmp(a));
        for (rank, &(_, index)) in members.iter().enumerate().skip(limit) {
            // The newer runs, by when they have finished: the `limit`-th to finish pushes
            // this one over.
            let mut newer: Vec<(i128, usize)> = members[..rank]
                .iter()
                .map(|&(at, i)| (at.max(0), i))
                .collect();
            newer.sort();
            let (at, by) = newer[limit - 1];
            items[index].fate = Fate::History {
                displaced_by: (at > 0).then_some(by),
            };
        }
    }
}

/// When the last thing that could go wrong in the scene has had its chance (a finish plus the
/// Pods' TTL, plus a second for the whole-second finish times).
pub fn last_expiry(items: &[Item]) -> Duration {
    items
        .iter()
        .filter_map(|i| i.finishes.map(|(at, _)| at))
        .max()
        .unwrap_or_default()
        + Duration::from_secs(POD_TTL.unsigned_abs() + 1)
}

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

fn pods_policy() -> Value {
    json!({"apiVersion": "kube-gc.io/v1alpha1", "kind": "ClusterRetentionPolicy",
        "metadata": {"name": POD_POLICY},
        "spec": {"preset": "pods", "ttlSecondsAfterFinished": POD_TTL,
            "namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": PODS_NAMESPACE}}}})
}

fn runs_policy() -> Value {
    json!({"apiVersion": "kube-gc.io/v1alpha1", "kind": "RetentionPolicy",
        "metadata": {"name": RUN_POLICY, "namespace": NAMESPACE},
        "spec": {"preset": "tekton-pipelineruns",
            "successfulHistoryLimit": SUCCESSFUL_LIMIT, "failedHistoryLimit": FAILED_LIMIT}})
}

fn cluster_policies() -> Gvr {
    Gvr::new("kube-gc.io", "v1alpha1", "clusterretentionpolicies")
}

fn namespaced_policies() -> Gvr {
    Gvr::new("kube-gc.io", "v1alpha1", "retentionpolicies")
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
            let kept = of_kind().filter(|i| i.fate == Fate::Kept);
            // A malformed annotation keeps the object out of the counts: no policy could be
            // applied to it.
            let matched = kept
                .filter(|i| i.ttl_annotation != Some(MALFORMED_TTL))
                .count();
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

fn current(sim: &SimServer, item: &Item) -> Option<Value> {
    sim.get(&item.kind.gvr(), Some(item.kind.namespace()), &item.name)
        .ok()
}

fn being_deleted(object: &Value) -> bool {
    object["metadata"]["deletionTimestamp"].is_string()
}

fn uid(object: &Value) -> String {
    object["metadata"]["uid"]
        .as_str()
        .unwrap_or_default()
        .to_owned()
}

/// Creates the object, with no status yet.
fn create(sim: &SimServer, item: &Item) -> Result<Value, SimError> {
    let mut metadata = json!({"name": item.name, "namespace": item.kind.namespace(),
        "labels": {"demo": "retention"}});
    if let Some(ttl) = item.ttl_annotation {
        metadata["annotations"] = json!({"kube-gc.io/ttl": ttl});
    }
    let object = match item.kind {
        SceneKind::Pod => json!({"apiVersion": "v1", "kind": "Pod", "metadata": metadata,
            "spec": {"restartPolicy": "Never", "containers": [{"name": "main",
                "image": "busybox:1.36", "command": ["sh", "-c", "sleep 3"]}]}}),
        SceneKind::PipelineRun => {
            if item.category != "no-pipeline" {
                metadata["labels"][PIPELINE_LABEL] = json!(item.category);
            }
            json!({"apiVersion": "tekton.dev/v1", "kind": "PipelineRun", "metadata": metadata,
                "spec": {"pipelineRef": {"name": item.category}}})
        }
    };
    sim.create(&item.kind.gvr(), object)
}

/// Writes the status of a running object.
fn start(sim: &SimServer, item: &Item, mut object: Value) -> Result<Value, SimError> {
    let now = wire(Utc::now());
    object["status"] = match item.kind {
        SceneKind::Pod => json!({"phase": "Running", "startTime": now, "containerStatuses":
            [{"name": "main", "ready": true, "state": {"running": {"startedAt": now}}}]}),
        SceneKind::PipelineRun => json!({"startTime": now, "conditions": [{"type": "Succeeded",
            "status": "Unknown", "reason": "Running", "lastTransitionTime": now}]}),
    };
    sim.update_status(&item.kind.gvr(), object)
}

/// Writes the status that says the object finished with `outcome` at `at`.
fn finish(
    sim: &SimServer,
    item: &Item,
    mut object: Value,
    outcome: Outcome,
    at: DateTime<Utc>,
) -> Result<Value, SimError> {
    let started = wire(at - chrono::Duration::seconds(3));
    let at = wire(at);
    object["status"] = match (item.kind, outcome) {
        (SceneKind::Pod, _) => {
            let (phase, code, reason) = match outcome {
                Outcome::Succeeded => ("Succeeded", 0, "Completed"),
                Outcome::Failed => ("Failed", 1, "Error"),
            };
            json!({"phase": phase, "startTime": started, "containerStatuses": [{"name": "main",
                "ready": false, "state": {"terminated": {"exitCode": code, "reason": reason,
                    "startedAt": started, "finishedAt": at}}}]})
        }
        (SceneKind::PipelineRun, _) => {
            let (status, reason) = match outcome {
                Outcome::Succeeded => ("True", "Succeeded"),
                Outcome::Failed => ("False", "Failed"),
            };
            json!({"startTime": started, "completionTime": at, "conditions": [{"type":
                "Succeeded", "status": status, "reason": reason, "lastTransitionTime": at}]})
        }
    };
    sim.update_status(&item.kind.gvr(), object)
}

fn whole_seconds(at: DateTime<Utc>) -> DateTime<Utc> {
    DateTime::from_timestamp(at.timestamp(), 0).unwrap_or(at)
}

fn wire(at: DateTime<Utc>) -> String {
    at.to_rfc3339_opts(chrono::SecondsFormat::Secs, true)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fate(items: &[Item], name: &str) -> Fate {
        items.iter().find(|i| i.name == name).expect(name).fate
    }

    #[test]
    fn the_plan_is_deterministic_and_keeps_the_newest_runs_of_each_pipeline() {
        let items = plan(50, Duration::from_secs(5), 1);
        assert_eq!(items, plan(50, Duration::from_secs(5), 1));
        let index = |name: &str| items.iter().position(|i| i.name == name).unwrap();
        // build: succeeded 01 03 04 06 07 and 08 during the demo; failed 02 05; 09 running.
        for name in [
            "build-run-01",
            "build-run-03",
            "build-run-04",
            "build-run-02",
        ] {
            assert_eq!(
                fate(&items, name),
                Fate::History { displaced_by: None },
                "{name}"
            );
        }
        assert_eq!(
            fate(&items, "build-run-06"),
            Fate::History {
                displaced_by: Some(index("build-run-08"))
            }
        );
        for name in [
            "build-run-07",
            "build-run-08",
            "build-run-05",
            "build-run-09",
        ] {
            assert_eq!(fate(&items, name), Fate::Kept, "{name}");
        }
        // deploy: succeeded 01 02 05; failed 03 04 and 06 during the demo.
        assert_eq!(
            fate(&items, "deploy-run-04"),
            Fate::History {
                displaced_by: Some(index("deploy-run-06"))
            }
        );
        assert_eq!(
            fate(&items, "deploy-run-01"),
            Fate::History { displaced_by: None }
        );
        for name in ["deploy-run-02", "deploy-run-05", "deploy-run-06"] {
            assert_eq!(fate(&items, name), Fate::Kept, "{name}");
        }
        assert_eq!(fate(&items, "no-pipeline-run-01"), Fate::Kept);
        assert_eq!(fate(&items, "pod-bad-annotation-000"), Fate::Kept);
        assert_eq!(fate(&items, "pod-ttl-extended-000"), Fate::Kept);
        assert!(last_expiry(&items) <= Duration::from_secs(8));
    }

    #[test]
    fn every_pod_category_exists_at_a_tiny_size() {
        let items = plan(1, Duration::from_secs(1), 7);
        for category in [
            "backlog",
            "succeeds",
            "fails",
            "running",
            "ttl-extended",
            "bad-annotation",
        ] {
            assert!(items.iter().any(|i| i.category == category), "{category}");
        }
    }
}
