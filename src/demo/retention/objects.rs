//! The scene's policies and objects as written to the server: created without a status, then
//! running, then finished with an outcome at a time.

use chrono::{DateTime, Utc};
use serde_json::{json, Value};

use crate::sim::{Gvr, SimError, SimServer};

use super::plan::{Item, Outcome, SceneKind};
use super::{
    FAILED_LIMIT, NAMESPACE, PODS_NAMESPACE, POD_POLICY, POD_TTL, RUN_POLICY, SUCCESSFUL_LIMIT,
};

/// The label Tekton puts on every run of a Pipeline, which the preset groups by.
const PIPELINE_LABEL: &str = "tekton.dev/pipeline";

pub(super) fn pods_policy() -> Value {
    json!({"apiVersion": "kube-gc.io/v1alpha1", "kind": "ClusterRetentionPolicy",
        "metadata": {"name": POD_POLICY},
        "spec": {"preset": "pods", "ttlSecondsAfterFinished": POD_TTL,
            "namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": PODS_NAMESPACE}}}})
}

pub(super) fn runs_policy() -> Value {
    json!({"apiVersion": "kube-gc.io/v1alpha1", "kind": "RetentionPolicy",
        "metadata": {"name": RUN_POLICY, "namespace": NAMESPACE},
        "spec": {"preset": "tekton-pipelineruns",
            "successfulHistoryLimit": SUCCESSFUL_LIMIT, "failedHistoryLimit": FAILED_LIMIT}})
}

pub(super) fn cluster_policies() -> Gvr {
    Gvr::new("kube-gc.io", "v1alpha1", "clusterretentionpolicies")
}

pub(super) fn namespaced_policies() -> Gvr {
    Gvr::new("kube-gc.io", "v1alpha1", "retentionpolicies")
}

pub(super) fn current(sim: &SimServer, item: &Item) -> Option<Value> {
    sim.get(&item.kind.gvr(), Some(item.kind.namespace()), &item.name)
        .ok()
}

pub(super) fn being_deleted(object: &Value) -> bool {
    object["metadata"]["deletionTimestamp"].is_string()
}

pub(super) fn uid(object: &Value) -> String {
    object["metadata"]["uid"]
        .as_str()
        .unwrap_or_default()
        .to_owned()
}

/// Creates the object, with no status yet.
pub(super) fn create(sim: &SimServer, item: &Item) -> Result<Value, SimError> {
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
pub(super) fn start(sim: &SimServer, item: &Item, mut object: Value) -> Result<Value, SimError> {
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
pub(super) fn finish(
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

pub(super) fn whole_seconds(at: DateTime<Utc>) -> DateTime<Utc> {
    DateTime::from_timestamp(at.timestamp(), 0).unwrap_or(at)
}

pub(super) fn wire(at: DateTime<Utc>) -> String {
    at.to_rfc3339_opts(chrono::SecondsFormat::Secs, true)
}
