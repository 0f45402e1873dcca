//! Helpers shared by the `tests/ttl_*.rs` suites: a simulated API server whose clock follows
//! tokio's (paused) clock, Jobs and Volcano Jobs in every state, and a running TTL controller.
#![allow(dead_code)] // Each test crate uses a different subset.

use std::sync::Arc;
use std::time::Duration;

use chrono::{DateTime, Utc};
use kube_gc::clock::{SharedClock, TokioClock};
use kube_gc::controllers::retention::assessment::Assessment;
use kube_gc::controllers::ttl::{TtlController, TtlKind, TtlMetrics, TtlOptions};
use kube_gc::controllers::Wiring;
use kube_gc::events::CollectingRecorder;
use kube_gc::runtime::cache::Store;
use kube_gc::runtime::controller::{ControllerError, ReconcileCounters};
use kube_gc::sim::{Gvr, SimConfig, SimServer};
use serde_json::{json, Value};
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

use crate::client_support::{start_with, unthrottled, Harness};

/// Virtual time: a bound on waits that would otherwise hang a broken test forever.
pub const PATIENCE: Duration = Duration::from_secs(86_400);

/// The wall time every test starts at.
pub fn epoch() -> DateTime<Utc> {
    DateTime::parse_from_rfc3339("2026-11-22T08:00:00Z")
        .map(|t| t.with_timezone(&Utc))
        .unwrap_or_default()
}

/// A server and a client sharing one clock that follows tokio's.
pub struct World {
    pub harness: Harness,
    pub clock: SharedClock,
}

impl World {
    pub fn sim(&self) -> &SimServer {
        &self.harness.sim
    }

    pub fn now(&self) -> DateTime<Utc> {
        self.clock.now()
    }
}

/// Starts a server (journal large enough for `journal` entries) on a clock following tokio's.
pub async fn world_with(config: SimConfig) -> World {
    let clock: SharedClock = Arc::new(TokioClock::starting_at(epoch()));
    let config = config.with_clock(Arc::clone(&clock) as _);
    let harness = start_with(config, unthrottled().without_timeouts()).await;
    World { harness, clock }
}

/// A default server.
pub async fn world() -> World {
    world_with(SimConfig::default()).await
}

pub fn jobs() -> Gvr {
    Gvr::new("batch", "v1", "jobs")
}

pub fn vcjobs() -> Gvr {
    Gvr::new("batch.volcano.sh", "v1alpha1", "jobs")
}

pub fn wire_time(at: DateTime<Utc>) -> String {
    at.to_rfc3339_opts(chrono::SecondsFormat::Secs, true)
}

/// Creates a batch/v1 Job with `ttl`; `finished_at` makes it Complete at that time.
pub fn create_job(
    sim: &SimServer,
    name: &str,
    ttl: Option<i32>,
    finished_at: Option<DateTime<Utc>>,
) -> Value {
    let mut spec = json!({"template": {"spec": {"restartPolicy": "Never",
        "containers": [{"name": "main", "image": "busybox:1.36"}]}}});
    if let Some(ttl) = ttl {
        spec["ttlSecondsAfterFinished"] = json!(ttl);
    }
    let job = json!({"apiVersion": "batch/v1", "kind": "Job",
        "metadata": {"name": name, "namespace": "default"}, "spec": spec});
    let created = sim.create(&jobs(), job).expect("create the Job");
    match finished_at {
        Some(at) => finish_job(
            sim,
            created,
            json!({"type": "Complete", "status": "True",
            "lastTransitionTime": wire_time(at)}),
        ),
        None => created,
    }
}

/// Sets a Job's status to hold one condition.
pub fn finish_job(sim: &SimServer, mut job: Value, condition: Value) -> Value {
    job["status"] = json!({"conditions": [condition]});
    sim.update_status(&jobs(), job).expect("finish the Job")
}

/// Creates a Volcano Job with `ttl` in `phase` since `at`.
pub fn create_vcjob(
    sim: &SimServer,
    name: &str,
    ttl: Option<i32>,
    phase: &str,
    at: DateTime<Utc>,
) -> Value {
    let mut spec = json!({"tasks": [{"name": "worker", "replicas": 1}]});
    if let Some(ttl) = ttl {
        spec["ttlSecondsAfterFinished"] = json!(ttl);
    }
    let job = json!({"apiVersion": "batch.volcano.sh/v1alpha1", "kind": "Job",
        "metadata": {"name": name, "namespace": "default"}, "spec": spec});
    let mut created = sim.create(&vcjobs(), job).expect("create the Volcano Job");
    created["status"] = json!({"state": {"phase": phase, "lastTransitionTime": wire_time(at)}});
    sim.update_status(&vcjobs(), created)
        .expect("set the Volcano Job's phase")
}

/// Whether deletion of the object has been accepted (gone, or marked by a Foreground delete).
pub fn deletion_requested(object: Option<&Value>) -> bool {
    match object {
        None => true,
        Some(o) => o["metadata"]["deletionTimestamp"].is_string(),
    }
}

/// Waits (in virtual time) until the deletion of `name` has been accepted.
pub async fn wait_deleted(sim: &SimServer, gvr: &Gvr, name: &str) {
    tokio::time::timeout(
        PATIENCE,
        sim.wait_for(gvr, Some("default"), name, deletion_requested),
    )
    .await
    .unwrap_or_else(|_| panic!("{name} was not deleted in time"))
    .expect("wait on the sim");
}

/// Whether `name` still exists, not being deleted.
pub fn untouched(sim: &SimServer, gvr: &Gvr, name: &str) -> bool {
    sim.get(gvr, Some("default"), name)
        .map(|o| !deletion_requested(Some(&o)))
        .unwrap_or(false)
}

/// A running TTL controller and what tests read from it.
pub struct Running {
    pub shutdown: CancellationToken,
    pub task: JoinHandle<Result<(), ControllerError>>,
    pub metrics: Arc<TtlMetrics>,
    pub recorder: Arc<CollectingRecorder>,
    pub counters: Arc<ReconcileCounters>,
    /// The controller's cache of assessments.
    pub store: Arc<Store<Assessment>>,
}

impl Running {
    /// Cancels and waits for a drained stop.
    pub async fn stop(self) {
        self.shutdown.cancel();
        self.task
            .await
            .expect("the controller task")
            .expect("the controller ran");
    }
}

/// Builds and starts the TTL controller of kind `K` against the world's server.
pub fn run_controller<K: TtlKind>(world: &World, options: TtlOptions) -> Running {
    let metrics = Arc::new(TtlMetrics::new());
    let recorder = Arc::new(CollectingRecorder::new());
    let controller = TtlController::<K>::builder(world.harness.client.clone(), options)
        .wiring(
            Wiring::default()
                .clock(Arc::clone(&world.clock))
                .recorder(Arc::clone(&recorder) as _),
        )
        .metrics(Arc::clone(&metrics))
        .build();
    let counters = controller.counters();
    let store = Arc::clone(controller.store());
    let shutdown = CancellationToken::new();
    let task = tokio::spawn(controller.run(shutdown.clone()));
    Running {
        shutdown,
        task,
        metrics,
        recorder,
        counters,
        store,
    }
}

/// Waits in virtual time until `condition` holds, checking every 10 ms.
pub async fn eventually(what: &str, condition: impl Fn() -> bool) {
    let deadline = tokio::time::Instant::now() + PATIENCE;
    while !condition() {
        assert!(tokio::time::Instant::now() < deadline, "never: {what}");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}
