//! Helpers shared by `tests/podgc.rs` and `tests/storage_protection.rs`: a simulated API server
//! whose clock follows tokio's paused clock, Nodes, Pods, claims and volumes in every state,
//! and the controllers running against it.
#![allow(dead_code)] // Each test crate uses a different subset.

use std::sync::Arc;
use std::time::Duration;

use chrono::{DateTime, Utc};
use kube_gc::clock::{SharedClock, TokioClock};
use kube_gc::sim::journal::JournalEntry;
use kube_gc::sim::{DeleteOptions, Gvr, SimConfig, SimServer};
use serde_json::{json, Value};

use crate::client_support::{start_with, unthrottled, Harness};

/// Virtual time: a bound on waits that would otherwise hang a broken test forever.
pub const PATIENCE: Duration = Duration::from_secs(86_400);
/// The namespace of every test object.
pub const NS: &str = "default";

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

    /// The requests to `path` (exactly) or below it.
    pub fn requests_to(&self, path: &str) -> Vec<JournalEntry> {
        self.sim()
            .journal()
            .entries()
            .into_iter()
            .filter(|e| e.path == path || e.path.starts_with(&format!("{path}/")))
            .collect()
    }

    /// The writes (anything but GET) to the Pod `name`.
    pub fn pod_writes(&self, name: &str) -> Vec<JournalEntry> {
        self.requests_to(&format!("/api/v1/namespaces/{NS}/pods/{name}"))
            .into_iter()
            .filter(|e| e.method != "GET")
            .collect()
    }
}

/// A default server at 2026-11-29T08:00:00Z on tokio's clock.
pub async fn world() -> World {
    let epoch = DateTime::parse_from_rfc3339("2026-11-29T08:00:00Z")
        .map(|t| t.with_timezone(&Utc))
        .unwrap_or_default();
    let clock: SharedClock = Arc::new(TokioClock::starting_at(epoch));
    let config = SimConfig::default().with_clock(Arc::clone(&clock) as _);
    let harness = start_with(config, unthrottled().without_timeouts()).await;
    World { harness, clock }
}

pub fn pods() -> Gvr {
    Gvr::new("", "v1", "pods")
}

pub fn nodes() -> Gvr {
    Gvr::new("", "v1", "nodes")
}

pub fn claims() -> Gvr {
    Gvr::new("", "v1", "persistentvolumeclaims")
}

pub fn volumes() -> Gvr {
    Gvr::new("", "v1", "persistentvolumes")
}

/// Creates Node `name`: `Ready` or not, with the out-of-service taint or not.
pub fn create_node(sim: &SimServer, name: &str, ready: bool, out_of_service: bool) -> Value {
    let node = sim
        .create(&nodes(), json!({"metadata": {"name": name}}))
        .expect("create the node");
    set_node(sim, node, ready, out_of_service)
}

/// Sets an existing Node's readiness and out-of-service taint.
pub fn set_node(sim: &SimServer, mut node: Value, ready: bool, out_of_service: bool) -> Value {
    let status = if ready { "True" } else { "False" };
    node["status"] = json!({"conditions": [{"type": "Ready", "status": status}]});
    let node = sim.update_status(&nodes(), node).expect("node status");
    let mut node = node;
    node["spec"]["taints"] = if out_of_service {
        json!([{"key": "node.kubernetes.io/out-of-service", "value": "nodeshutdown",
            "effect": "NoExecute"}])
    } else {
        json!([])
    };
    sim.update(&nodes(), node).expect("node taints")
}

/// A Pod spec bound to `node` (empty: not scheduled) using `claims`.
pub fn pod(name: &str, node: &str, claims: &[&str]) -> Value {
    let volumes: Vec<Value> = claims
        .iter()
        .map(|c| json!({"name": c, "persistentVolumeClaim": {"claimName": c}}))
        .collect();
    let mut pod = json!({"apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": name, "namespace": NS},
        "spec": {"containers": [{"name": "c", "image": "busybox:1.36"}], "volumes": volumes}});
    if !node.is_empty() {
        pod["spec"]["nodeName"] = json!(node);
    }
    pod
}

/// Creates `pod` and sets its phase.
pub fn create_pod(sim: &SimServer, pod: Value, phase: &str) -> Value {
    let mut created = sim.create(&pods(), pod).expect("create the pod");
    created["status"] = json!({"phase": phase});
    sim.update_status(&pods(), created).expect("pod phase")
}

/// Deletes Pod `name` with no options (a bound, running Pod is kept for its grace period).
pub fn delete_pod(sim: &SimServer, name: &str) {
    sim.delete(&pods(), Some(NS), name, &DeleteOptions::default())
        .expect("delete the pod");
}

/// Deletes Pod `name` at once.
pub fn force_delete_pod(sim: &SimServer, name: &str) {
    let options = DeleteOptions {
        grace_period_seconds: Some(0),
        ..DeleteOptions::default()
    };
    sim.delete(&pods(), Some(NS), name, &options)
        .expect("force-delete the pod");
}

/// Pod `name` as stored, if it is.
pub fn get_pod(sim: &SimServer, name: &str) -> Option<Value> {
    sim.get(&pods(), Some(NS), name).ok()
}

/// Waits in virtual time until `condition` holds, checking every 100 ms.
pub async fn eventually(what: &str, condition: impl Fn() -> bool) {
    let deadline = tokio::time::Instant::now() + PATIENCE;
    while !condition() {
        assert!(tokio::time::Instant::now() < deadline, "never: {what}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// Lets `duration` of virtual time pass.
pub async fn wait(duration: Duration) {
    tokio::time::sleep(duration).await;
}
