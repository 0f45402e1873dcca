//! The demo's namespace scene: what the namespace controller, the pod garbage collector and PVC
//! protection must do when namespaces are deleted on a server where no kube-controller-manager
//! runs.
//!
//! Contract: [`Scene::create`] makes two nodes and the namespaces of [`plan`] with their
//! content (Pods running on a Ready node and on a node about to go, a Job with Pods, a claim a
//! Pod mounts, ConfigMaps, Secrets, custom resources, an Event, a PipelineRun held by a
//! finalizer). Once the controllers are ready, [`Scene::delete`] deletes the lost node and
//! three of the namespaces, as an operator would; [`Scene::drive`] plays what the rest of a
//! cluster would — the live node's kubelet stops each of its Pods once it is marked for
//! deletion, and the archiver releases the held PipelineRun once the namespace's safety delay
//! is over (so that the release is its last blocker) — until the deleted namespaces are gone.
//! [`Scene::check`] then says what happened, from the server's deletions and its request
//! journal:
//!
//! | namespace | expected |
//! |---|---|
//! | `demo-shop` | finalized; its Pods gone before anything else of it is deleted; the claim released by PVC protection once its Pod is gone |
//! | `demo-edge` | finalized; its Pods, on the lost node, force-deleted by the pod garbage collector |
//! | `demo-archive` | finalized only after the PipelineRun is released |
//! | `demo-stays` | untouched: every object there, with its UID, none being deleted |
//!
//! and nothing left in a finalized namespace, and no DELETE in the scene's namespaces but the
//! namespace controller's, the pod garbage collector's (the lost node's Pods) and the garbage
//! collector's.

mod check;
pub mod plan;

use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use chrono::{DateTime, SecondsFormat, Utc};
use serde_json::Value;
use tokio::time::Instant;

use crate::sim::{DeleteOptions, Gvr, SimError, SimServer};

pub use check::{NamespaceRow, Report};
pub use plan::{plan, Kind, Namespace, NamespaceFate, Node, Object, HOLD, NODE_LIVE, NODE_LOST};

/// How long the live node's kubelet takes to stop a Pod marked for deletion.
pub const KUBELET_STOP: Duration = Duration::from_millis(300);
/// How long after the namespace's safety delay the archiver releases its PipelineRun.
pub const RELEASE_AFTER_DELAY: Duration = Duration::from_secs(1);
/// How often the scene looks at the server while it drives.
const TICK: Duration = Duration::from_millis(100);

pub(crate) fn namespaces() -> Gvr {
    Gvr::new("", "v1", "namespaces")
}

fn nodes() -> Gvr {
    Gvr::new("", "v1", "nodes")
}

/// The server's clock: the scene's times and the server's own (deletions, the journal) are read
/// from one clock.
fn now(sim: &SimServer) -> DateTime<Utc> {
    sim.store().clock().now()
}

fn wire(at: DateTime<Utc>) -> String {
    at.to_rfc3339_opts(SecondsFormat::Secs, true)
}

fn uid(object: &Value) -> String {
    object["metadata"]["uid"]
        .as_str()
        .unwrap_or_default()
        .to_owned()
}

/// What the scene did and when, for its check.
#[derive(Debug, Default)]
pub struct SceneRecord {
    /// When the namespaces and the lost node were deleted.
    pub deleted_at: Option<DateTime<Utc>>,
    /// Just before the held object's release was written: nothing can have reacted earlier.
    pub releasing_at: Option<DateTime<Utc>>,
    /// Once that write returned.
    pub released_at: Option<DateTime<Utc>>,
    /// The Pods the kubelet stopped (by path), and when.
    pub stopped: HashMap<String, DateTime<Utc>>,
}

/// The namespace scene (see the module documentation).
#[derive(Debug)]
pub struct Scene {
    namespaces: Vec<Namespace>,
    /// Each object's UID, by path.
    uids: HashMap<String, String>,
    /// The namespace controller's safety delay: the release waits it out.
    delay: Duration,
    /// Deleted namespaces already gone, for the progress line.
    finalized: Arc<AtomicUsize>,
}

impl Scene {
    /// Creates the nodes, the namespaces and their content; `delay` is the namespace
    /// controller's `--namespace-deletion-grace-period`.
    pub fn create(sim: &SimServer, delay: Duration) -> Result<Scene, SimError> {
        let created_at = wire(now(sim));
        for name in [NODE_LIVE, NODE_LOST] {
            let (node, status) = plan::node(name, &created_at);
            let mut created = sim.create(&nodes(), node)?;
            created["status"] = status;
            sim.update_status(&nodes(), created)?;
        }
        let namespaces = plan();
        let mut uids = HashMap::new();
        for namespace in &namespaces {
            let object = serde_json::json!({"apiVersion": "v1", "kind": "Namespace",
                "metadata": {"name": namespace.name, "labels": {"demo": "namespaces"}}});
            sim.create(&self::namespaces(), object)?;
            for object in &namespace.objects {
                let job_uid = object
                    .job
                    .and_then(|job| uids.get(&job_path(namespace.name, job)).cloned());
                let mut created =
                    sim.create(&object.kind.gvr(), plan::body(object, job_uid.as_deref()))?;
                if let Some(status) = plan::status(object, &created_at) {
                    created["status"] = status;
                    created = sim.update_status(&object.kind.gvr(), created)?;
                }
                uids.insert(object.path(), uid(&created));
            }
        }
        Ok(Scene {
            namespaces,
            uids,
            delay,
            finalized: Arc::new(AtomicUsize::new(0)),
        })
    }

    /// Deletes the lost node and the namespaces to delete, as an operator would.
    pub fn delete(&self, sim: &SimServer, record: &mut SceneRecord) -> Result<(), SimError> {
        record.deleted_at = Some(now(sim));
        sim.delete(&nodes(), None, NODE_LOST, &DeleteOptions::default())?;
        for namespace in self.deleted() {
            sim.delete(
                &namespaces(),
                None,
                namespace.name,
                &DeleteOptions::default(),
            )?;
        }
        Ok(())
    }

    /// Plays the live node's kubelet and the archiver until every deleted namespace is gone, or
    /// until `deadline` (after `start`).
    pub async fn drive(
        &self,
        sim: &SimServer,
        start: Instant,
        deadline: Duration,
        record: &mut SceneRecord,
    ) -> Result<(), SimError> {
        let mut marked: HashMap<String, Instant> = HashMap::new();
        while start.elapsed() < deadline {
            self.kubelet(sim, &mut marked, record);
            self.release_when_due(sim, record)?;
            let gone = self.deleted().filter(|n| gone(sim, n.name)).count();
            self.finalized.store(gone, Ordering::Relaxed);
            if gone == self.deleted().count() {
                break;
            }
            tokio::time::sleep(TICK).await;
        }
        Ok(())
    }

    /// The live node's kubelet: a Pod marked for deletion is stopped [`KUBELET_STOP`] after the
    /// kubelet first saw the mark, and its deletion finished (`gracePeriodSeconds: 0`, guarded
    /// by its UID), as a kubelet does once the containers have exited.
    fn kubelet(
        &self,
        sim: &SimServer,
        marked: &mut HashMap<String, Instant>,
        record: &mut SceneRecord,
    ) {
        let pods = Kind::Pod.gvr();
        for namespace in &self.namespaces {
            for pod in sim.list(&pods, Some(namespace.name)).unwrap_or_default() {
                let on_live_node = pod["spec"]["nodeName"] == NODE_LIVE;
                if !on_live_node || !pod["metadata"]["deletionTimestamp"].is_string() {
                    continue;
                }
                let name = pod["metadata"]["name"].as_str().unwrap_or_default();
                let path = format!("/api/v1/namespaces/{}/pods/{name}", namespace.name);
                let seen = *marked.entry(path.clone()).or_insert_with(Instant::now);
                if seen.elapsed() < KUBELET_STOP || record.stopped.contains_key(&path) {
                    continue;
                }
                let finish = DeleteOptions {
                    grace_period_seconds: Some(0),
                    precondition_uid: Some(uid(&pod)),
                    ..DeleteOptions::default()
                };
                // Gone meanwhile (the namespace controller is not the only writer): nothing to
                // finish.
                if sim
                    .delete(&pods, Some(namespace.name), name, &finish)
                    .is_ok()
                {
                    record.stopped.insert(path, now(sim));
                }
            }
        }
    }

    /// The archiver: releases the held object once the namespace's safety delay (and a second
    /// more) has passed since the deletion, so that the release is the last thing holding it.
    fn release_when_due(&self, sim: &SimServer, record: &mut SceneRecord) -> Result<(), SimError> {
        let Some(deleted_at) = record.deleted_at else {
            return Ok(());
        };
        let due = deleted_at
            + chrono::Duration::from_std(self.delay + RELEASE_AFTER_DELAY).unwrap_or_default();
        if record.releasing_at.is_some() || now(sim) < due {
            return Ok(());
        }
        record.releasing_at = Some(now(sim));
        for held in self.objects().filter(|o| o.held) {
            // Gone already (it cannot be, while its finalizer holds it): the check says so.
            let Ok(mut object) = sim.get(&held.kind.gvr(), Some(held.namespace), held.name) else {
                continue;
            };
            if let Some(finalizers) = object["metadata"]["finalizers"].as_array_mut() {
                finalizers.retain(|f| f != HOLD);
            }
            sim.update(&held.kind.gvr(), object)?;
            record.released_at = Some(now(sim));
        }
        Ok(())
    }

    /// What happened, checked against the scene's expectations (`check.rs`), from the server's
    /// deletions and its request `journal`.
    pub fn check(
        &self,
        sim: &SimServer,
        record: &SceneRecord,
        journal: &[crate::sim::journal::JournalEntry],
    ) -> Report {
        check::check(self, sim, record, journal)
    }

    /// Whether every deleted namespace is gone.
    pub fn settled(&self, sim: &SimServer) -> bool {
        self.deleted().all(|n| gone(sim, n.name))
    }

    /// Deleted namespaces gone so far (as the scene last looked), for the progress line.
    pub fn finalized(&self) -> Arc<AtomicUsize> {
        Arc::clone(&self.finalized)
    }

    /// How many namespaces the scene deletes.
    pub fn to_finalize(&self) -> usize {
        self.deleted().count()
    }

    /// Whether a DELETE of `path` is the scene's to judge: one in a namespace it deletes.
    pub fn owns(&self, path: &str) -> bool {
        self.deleted().any(|n| in_namespace(path, n.name))
    }

    fn deleted(&self) -> impl Iterator<Item = &Namespace> {
        self.namespaces.iter().filter(|n| n.fate.deleted())
    }

    fn objects(&self) -> impl Iterator<Item = &Object> {
        self.namespaces.iter().flat_map(|n| n.objects.iter())
    }
}

fn job_path(namespace: &str, job: &str) -> String {
    format!("/apis/batch/v1/namespaces/{namespace}/jobs/{job}")
}

fn gone(sim: &SimServer, namespace: &str) -> bool {
    sim.get(&namespaces(), None, namespace).is_err()
}

/// Whether an API path names `namespace` or something in it.
fn in_namespace(path: &str, namespace: &str) -> bool {
    let needle = format!("/namespaces/{namespace}");
    path.find(&needle).is_some_and(|at| {
        let rest = &path[at + needle.len()..];
        rest.is_empty() || rest.starts_with('/')
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::clock::{SharedClock, TokioClock};
    use crate::sim::SimConfig;

    /// A server on tokio's clock (the test's is paused) holding the scene.
    async fn scene(delay: Duration) -> (SimServer, Scene) {
        let clock: SharedClock = Arc::new(TokioClock::starting_at(
            DateTime::parse_from_rfc3339("2026-11-29T08:00:00Z")
                .map(|t| t.to_utc())
                .unwrap_or_default(),
        ));
        let config = SimConfig::default()
            .with_workload_custom_resources()
            .with_clock(clock as _);
        let sim = SimServer::start(config).await.unwrap();
        let scene = Scene::create(&sim, delay).unwrap();
        (sim, scene)
    }

    fn exists(sim: &SimServer, kind: Kind, namespace: &str, name: &str) -> Option<Value> {
        sim.get(&kind.gvr(), Some(namespace), name).ok()
    }

    #[tokio::test(start_paused = true)]
    async fn the_kubelet_stops_only_its_own_nodes_pods_and_the_archiver_waits_out_the_delay() {
        let (sim, scene) = scene(Duration::from_secs(5)).await;
        let mut record = SceneRecord::default();
        scene.delete(&sim, &mut record).unwrap();
        assert!(sim.get(&nodes(), None, NODE_LOST).is_err());
        assert!(
            sim.get(&namespaces(), None, "demo-shop").unwrap()["metadata"]["deletionTimestamp"]
                .is_string()
        );
        // Nobody empties the namespaces here: two Pods are deleted by hand, one on each node.
        let pods = Kind::Pod.gvr();
        for (namespace, pod) in [("demo-shop", "web-0"), ("demo-edge", "cache-0")] {
            sim.delete(&pods, Some(namespace), pod, &DeleteOptions::default())
                .unwrap();
            assert!(
                exists(&sim, Kind::Pod, namespace, pod).is_some(),
                "graceful"
            );
        }
        let start = Instant::now();
        scene
            .drive(&sim, start, Duration::from_secs(10), &mut record)
            .await
            .unwrap();
        // The live node's kubelet finished its Pod; the lost node's stays marked.
        assert!(exists(&sim, Kind::Pod, "demo-shop", "web-0").is_none());
        assert_eq!(record.stopped.len(), 1);
        let cache = exists(&sim, Kind::Pod, "demo-edge", "cache-0").unwrap();
        assert!(cache["metadata"]["deletionTimestamp"].is_string());
        // Released once the delay and a second more had passed, not before.
        let held = exists(&sim, Kind::PipelineRun, "demo-archive", "nightly-backup").unwrap();
        let finalizers = held["metadata"]["finalizers"].as_array();
        assert!(finalizers.is_none_or(Vec::is_empty), "{held}");
        let (deleted, releasing) = (record.deleted_at.unwrap(), record.releasing_at.unwrap());
        assert!(releasing - deleted >= chrono::Duration::seconds(6));
        assert!(releasing - deleted < chrono::Duration::seconds(7));
        assert!(!scene.settled(&sim));
        assert_eq!(scene.finalized().load(Ordering::Relaxed), 0);
        sim.shutdown().await;
    }

    #[tokio::test(start_paused = true)]
    async fn the_check_reports_an_early_finalize_a_deleted_kept_object_and_what_did_not_happen() {
        let (sim, scene) = scene(Duration::from_secs(5)).await;
        let mut record = SceneRecord::default();
        scene.delete(&sim, &mut record).unwrap();
        // What a broken controller would do: finalize the held namespace at once, with its
        // content still there, and delete a ConfigMap of the namespace that stays.
        let mut archive = sim.get(&namespaces(), None, "demo-archive").unwrap();
        archive["spec"]["finalizers"] = serde_json::json!([]);
        sim.finalize_namespace(archive).unwrap();
        let configmaps = Kind::ConfigMap.gvr();
        let options = DeleteOptions::default();
        sim.delete(&configmaps, Some("demo-stays"), "app-config", &options)
            .unwrap();
        let report = scene.check(&sim, &record, &sim.journal().entries());
        for expected in [
            "namespace demo-archive finalized while it remains: pipelineruns nightly-backup",
            "the held PipelineRun was never released",
            "configmaps demo-stays/app-config was deleted",
            "namespace demo-shop not finalized: it remains: pods web-0",
            "Pod demo-edge/cache-0 on the lost node was not force-deleted by the pod garbage collector",
            "claim demo-shop/data-db-0 was not released by PVC protection",
        ] {
            assert!(
                report.problems.iter().any(|p| p == expected),
                "{expected}: {:#?}",
                report.problems
            );
        }
        assert_eq!(report.finalized(), (1, 3));
        let archive_row = report
            .rows
            .iter()
            .find(|r| r.name == "demo-archive")
            .unwrap();
        assert!(archive_row.finalized.is_some() && archive_row.content_gone.is_none());
        sim.shutdown().await;
    }

    #[test]
    fn a_path_is_in_a_namespace_only_under_its_exact_name() {
        assert!(in_namespace(
            "/api/v1/namespaces/demo-shop/pods/web-0",
            "demo-shop"
        ));
        assert!(in_namespace(
            "/apis/batch/v1/namespaces/demo-shop/jobs",
            "demo-shop"
        ));
        assert!(in_namespace("/api/v1/namespaces/demo-shop", "demo-shop"));
        assert!(!in_namespace(
            "/api/v1/namespaces/demo-shop-2/pods/x",
            "demo-shop"
        ));
        assert!(!in_namespace("/api/v1/namespaces/demo/pods/x", "demo-shop"));
    }
}
