//! Helpers for the `tests/gc_*.rs` suites: a simulated API server with a running garbage
//! collector, object builders, and the invariant every test checks.
#![allow(dead_code)]

use std::sync::Arc;
use std::time::Duration;

use kube_gc::client::{Client, ClientOptions};
use kube_gc::controllers::garbagecollector::{GarbageCollector, GcError, GcHandle, GcOptions};
use kube_gc::controllers::Wiring;
use kube_gc::events::CollectingRecorder;
use kube_gc::runtime::reflector::ReflectorConfig;
use kube_gc::sim::faults::Verb;
use kube_gc::sim::history::{ChangeKind, ObjectTimelines};
use kube_gc::sim::Connect as _;
use kube_gc::sim::{DeleteOptions, Gvr, Propagation, SimConfig, SimServer};
use serde_json::{json, Value};
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

/// Virtual time: a bound on waits that would otherwise hang a broken test forever.
pub const PATIENCE: Duration = Duration::from_secs(600);

/// A simulated server, a client, and a garbage collector running against it.
pub struct GcRun {
    /// The server.
    pub sim: SimServer,
    /// The collector's client.
    pub client: Client,
    /// The collector's handle.
    pub handle: GcHandle,
    /// Events the collector recorded.
    pub recorder: Arc<CollectingRecorder>,
    stop: CancellationToken,
    task: JoinHandle<Result<(), GcError>>,
    _dir: tempfile::TempDir,
}

/// Starts a server (with the `other` namespace too) for the test to seed before the collector
/// starts.
pub async fn start_sim() -> (SimServer, tempfile::TempDir, Client) {
    let mut config = SimConfig::default();
    config.namespaces.push("other".to_string());
    config.journal_capacity = 100_000;
    let sim = SimServer::start(config).await.unwrap();
    let dir = tempfile::tempdir().unwrap();
    let config = sim.client_config(&dir.path().join("kubeconfig")).unwrap();
    let client_options = ClientOptions::default()
        .with_rate(0.0, 1)
        .without_timeouts();
    let client = Client::new(&config, &client_options).unwrap();
    (sim, dir, client)
}

/// Starts the collector on a server already seeded, and waits until its workers run.
pub async fn start_gc(
    sim: SimServer,
    dir: tempfile::TempDir,
    client: Client,
    discovery_period: Duration,
) -> GcRun {
    let recorder = Arc::new(CollectingRecorder::new());
    let options = GcOptions {
        workers: 4,
        discovery_period,
        wiring: Wiring::default().recorder(Arc::clone(&recorder) as _),
        reflector: ReflectorConfig {
            seed: Some(7),
            ..ReflectorConfig::default()
        },
        ..GcOptions::default()
    };
    let gc = GarbageCollector::new(client.clone(), options);
    let mut handle = gc.handle();
    let stop = CancellationToken::new();
    let task = tokio::spawn(gc.run(stop.clone()));
    assert!(
        handle.wait_ready().await,
        "the collector stopped before it was ready"
    );
    GcRun {
        sim,
        client,
        handle,
        recorder,
        stop,
        task,
        _dir: dir,
    }
}

/// A seeded server and a running collector, discovery every 30 s.
pub async fn running(seed: impl FnOnce(&SimServer)) -> GcRun {
    let (sim, dir, client) = start_sim().await;
    seed(&sim);
    start_gc(sim, dir, client, Duration::from_secs(30)).await
}

impl GcRun {
    /// Stops the collector; it must stop cleanly.
    pub async fn stop(self) -> SimServer {
        self.stop.cancel();
        let result = tokio::time::timeout(PATIENCE, self.task).await;
        assert!(
            matches!(result, Ok(Ok(Ok(())))),
            "the collector did not stop cleanly: {result:?}"
        );
        self.sim
    }

    /// Waits until the object is gone.
    pub async fn gone(&self, gvr: &Gvr, namespace: Option<&str>, name: &str) {
        let waited = tokio::time::timeout(
            PATIENCE,
            self.sim.wait_for(gvr, namespace, name, |o| o.is_none()),
        )
        .await;
        assert!(waited.is_ok(), "{name} was never deleted");
    }

    /// Waits until `condition` holds for the object, and returns it.
    pub async fn until(
        &self,
        gvr: &Gvr,
        namespace: Option<&str>,
        name: &str,
        condition: impl Fn(Option<&Value>) -> bool,
    ) -> Option<Value> {
        let waited =
            tokio::time::timeout(PATIENCE, self.sim.wait_for(gvr, namespace, name, condition))
                .await;
        match waited {
            Ok(Ok(state)) => state,
            other => panic!("waiting on {name}: {other:?}"),
        }
    }

    /// Whether the object exists now.
    pub fn exists(&self, gvr: &Gvr, namespace: Option<&str>, name: &str) -> bool {
        self.sim.get(gvr, namespace, name).is_ok()
    }

    /// Requests of `verb` the collector sent to paths containing `fragment`.
    pub fn requests(&self, verb: Verb, fragment: &str) -> usize {
        self.sim
            .journal()
            .by_verb(verb)
            .iter()
            .filter(|e| e.path.contains(fragment))
            .count()
    }

    /// Checks the invariant every test must keep: see [`assert_no_live_owner_deleted`].
    pub fn assert_invariant(&self) {
        assert_no_live_owner_deleted(&self.sim);
    }
}

/// Resources the tests use.
pub fn pods() -> Gvr {
    Gvr::new("", "v1", "pods")
}
/// ConfigMaps.
pub fn configmaps() -> Gvr {
    Gvr::new("", "v1", "configmaps")
}
/// Deployments.
pub fn deployments() -> Gvr {
    Gvr::new("apps", "v1", "deployments")
}
/// ReplicaSets.
pub fn replicasets() -> Gvr {
    Gvr::new("apps", "v1", "replicasets")
}
/// batch/v1 Jobs.
pub fn jobs() -> Gvr {
    Gvr::new("batch", "v1", "jobs")
}
/// Volcano Jobs (a custom resource).
pub fn vcjobs() -> Gvr {
    Gvr::new("batch.volcano.sh", "v1alpha1", "jobs")
}
/// ClusterRoles (cluster-scoped).
pub fn clusterroles() -> Gvr {
    Gvr::new("rbac.authorization.k8s.io", "v1", "clusterroles")
}

/// An object of `api_version`/`kind` named `name` in `namespace` (`None`: cluster-scoped).
pub fn object(api_version: &str, kind: &str, namespace: Option<&str>, name: &str) -> Value {
    let mut metadata = json!({"name": name});
    if let Some(ns) = namespace {
        metadata["namespace"] = json!(ns);
    }
    json!({"apiVersion": api_version, "kind": kind, "metadata": metadata})
}

/// The owner reference to a created `owner`.
pub fn reference_to(owner: &Value, block: bool) -> Value {
    json!({
        "apiVersion": owner["apiVersion"],
        "kind": owner["kind"],
        "name": owner["metadata"]["name"],
        "uid": owner["metadata"]["uid"],
        "controller": true,
        "blockOwnerDeletion": block,
    })
}

/// `object` with these owner references.
pub fn owned_by(mut object: Value, references: Vec<Value>) -> Value {
    object["metadata"]["ownerReferences"] = Value::Array(references);
    object
}

/// Creates an object in the server.
pub fn create(sim: &SimServer, gvr: &Gvr, object: Value) -> Value {
    match sim.create(gvr, object) {
        Ok(created) => created,
        Err(e) => panic!("creating: {e}"),
    }
}

/// Deletes an object in the server as a user would (not through the collector).
pub fn delete(
    sim: &SimServer,
    gvr: &Gvr,
    namespace: Option<&str>,
    name: &str,
    policy: Propagation,
) {
    if let Err(e) = sim.delete(gvr, namespace, name, &DeleteOptions::propagation(policy)) {
        panic!("deleting {name}: {e}");
    }
}

/// A Pod in `namespace` owned by `owners` (blocking).
pub fn pod(sim: &SimServer, namespace: &str, name: &str, owners: &[&Value], block: bool) -> Value {
    let references = owners
        .iter()
        .enumerate()
        .map(|(i, o)| {
            let mut reference = reference_to(o, block);
            // At most one reference may be the controller.
            reference["controller"] = serde_json::json!(i == 0);
            reference
        })
        .collect();
    create(
        sim,
        &pods(),
        owned_by(object("v1", "Pod", Some(namespace), name), references),
    )
}

/// The moment each object's deletion was requested, from the server's history: the first change
/// giving it a `deletionTimestamp`, or its removal if it had none.
struct DeletionRequest {
    rv: u64,
    object: Value,
}

/// The invariant of the garbage collector: no object was deleted while one of its owners was
/// live and valid — existing, in a namespace it may own the object from, and not itself being
/// deleted in the foreground (which is what asks for its dependents' deletion).
///
/// Checked from the server's history for every object the collector sent a DELETE for (the
/// tests' own deletions go through the in-process API and are not in the request journal).
pub fn assert_no_live_owner_deleted(sim: &SimServer) {
    let collected: std::collections::HashSet<(Option<String>, String)> = sim
        .journal()
        .by_verb(Verb::Delete)
        .iter()
        .filter(|e| e.status < 300)
        .map(|e| path_object(&e.path))
        .collect();
    let history = sim.history();
    let mut requests: Vec<DeletionRequest> = Vec::new();
    for change in &history {
        let object = change.object.value();
        let had_timestamp = change
            .previous
            .as_ref()
            .is_some_and(|p| !p.value()["metadata"]["deletionTimestamp"].is_null());
        let removed = change.kind == ChangeKind::Deleted;
        let has_timestamp = !object["metadata"]["deletionTimestamp"].is_null();
        if !had_timestamp && (removed || has_timestamp) {
            requests.push(DeletionRequest {
                rv: change.rv,
                object: object.into_owned(),
            });
        }
    }
    let timelines = ObjectTimelines::new(history.iter().map(|change| &**change));
    for request in &requests {
        let meta = &request.object["metadata"];
        let namespace = meta["namespace"].as_str();
        let name = meta["name"].as_str().unwrap_or("").to_string();
        if !collected.contains(&(namespace.map(str::to_owned), name)) {
            continue;
        }
        for reference in meta["ownerReferences"].as_array().into_iter().flatten() {
            let uid = reference["uid"].as_str().unwrap_or("");
            let Some(owner) = timelines.state_before(uid, request.rv) else {
                continue; // Absent: a valid reason to delete.
            };
            let owner_namespace = owner["metadata"]["namespace"].as_str();
            if owner_namespace.is_some() && owner_namespace != namespace {
                continue; // An owner in another namespace is not a valid owner.
            }
            let foreground = owner["metadata"]["deletionTimestamp"].is_string()
                && owner["metadata"]["finalizers"]
                    .as_array()
                    .is_some_and(|f| f.iter().any(|f| f == "foregroundDeletion"));
            assert!(
                foreground,
                "{} was deleted at rv {} while its owner {} was live",
                meta["name"], request.rv, owner["metadata"]["name"]
            );
        }
    }
}

/// The resourceVersion at which an object left storage.
pub fn removed_at(sim: &SimServer, name: &str) -> Option<u64> {
    sim.deletions()
        .iter()
        .find(|d| d.name == name)
        .map(|d| d.rv)
}

/// The (namespace, name) a request path names.
fn path_object(path: &str) -> (Option<String>, String) {
    let segments: Vec<&str> = path.split('/').collect();
    let name = segments.last().copied().unwrap_or("").to_string();
    let namespace = segments
        .iter()
        .position(|s| *s == "namespaces")
        .filter(|i| i + 3 < segments.len())
        .and_then(|i| segments.get(i + 1))
        .map(|s| s.to_string());
    (namespace, name)
}
