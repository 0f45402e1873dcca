//! Real-sized Jobs for the informer measurements (`benches/informer_sync.rs`,
//! `tests/informer_sync_memory.rs`), and the compact projection the TTL controller caches.
//!
//! [`real_sized_job`] is a finished Job shaped like the ones captured from a real API server
//! (fixtures/real-apiserver/exchanges/11-job-status-complete.json): defaults filled in, a pod
//! template with a realistic container, and `managedFields` from the two writers a real Job has
//! (its creator and the job controller's status updates). It is ~6 KB of JSON, ~2.8 KB of it
//! `managedFields`, the size the performance targets' reference figures are for.
//!
//! [`TtlJob`] is decoded straight from that JSON: serde skips every field it does not name, so
//! the pod template and `managedFields` are scanned but never built.
#![allow(dead_code)] // Each binary uses a different subset.

use chrono::DateTime;
use kube_gc::runtime::cache::{Cacheable, ObjectKey};
use kube_gc::sim::{Gvr, SimServer};
use serde::Deserialize;
use serde_json::{json, Value};

/// The batch/v1 jobs resource.
pub fn jobs() -> Gvr {
    Gvr::new("batch", "v1", "jobs")
}

/// Namespaces the Jobs are spread over.
pub const NAMESPACES: usize = 20;

/// Environment variables of the Job's container: what brings the Job to a real one's size.
const ENV_VARS: usize = 16;

/// The uid of the CronJob that owns every Job.
const CRONJOB_UID: &str = "5d1f0c2e-7a8b-4c3d-9e0f-123456789abc";

/// What the TTL controller needs of a Job: identity, version, deletion flag, TTL and finish
/// time. Built in the test binaries; the controller's own projection lives in
/// `src/controllers/ttl`.
#[derive(Debug, PartialEq)]
pub struct TtlJob {
    pub key: ObjectKey,
    pub uid: Box<str>,
    pub resource_version: Box<str>,
    pub ttl_seconds: Option<i32>,
    /// When the Job's `Complete` or `Failed` condition turned true, in Unix seconds.
    pub finished_at_unix: Option<i64>,
    pub being_deleted: bool,
}

impl Cacheable for TtlJob {
    fn cache_key(&self) -> ObjectKey {
        self.key.clone()
    }
    fn resource_version(&self) -> &str {
        &self.resource_version
    }
    fn uid(&self) -> &str {
        &self.uid
    }
}

impl<'de> Deserialize<'de> for TtlJob {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let wire = wire::Job::deserialize(deserializer)?;
        let meta = wire.metadata;
        let finished_at_unix = wire
            .status
            .conditions
            .iter()
            .find(|c| (c.type_ == "Complete" || c.type_ == "Failed") && c.status == "True")
            .and_then(|c| c.last_transition_time.as_deref())
            .and_then(|t| DateTime::parse_from_rfc3339(t).ok())
            .map(|t| t.timestamp());
        Ok(TtlJob {
            key: ObjectKey::new(meta.namespace.as_deref().unwrap_or_default(), &meta.name),
            uid: meta.uid.into(),
            resource_version: meta.resource_version.into(),
            ttl_seconds: wire.spec.ttl_seconds_after_finished,
            finished_at_unix,
            being_deleted: meta.deletion_timestamp.is_some(),
        })
    }
}

/// The few fields of a Job's JSON the projection reads; everything else is skipped unbuilt.
mod wire {
    use serde::de::IgnoredAny;
    use serde::Deserialize;

    #[derive(Deserialize)]
    pub struct Job {
        pub metadata: Meta,
        #[serde(default)]
        pub spec: Spec,
        #[serde(default)]
        pub status: Status,
    }

    #[derive(Deserialize)]
    #[serde(rename_all = "camelCase")]
    pub struct Meta {
        pub name: String,
        #[serde(default)]
        pub namespace: Option<String>,
        #[serde(default)]
        pub uid: String,
        #[serde(default)]
        pub resource_version: String,
        #[serde(default)]
        pub deletion_timestamp: Option<IgnoredAny>,
    }

    #[derive(Default, Deserialize)]
    #[serde(rename_all = "camelCase")]
    pub struct Spec {
        #[serde(default)]
        pub ttl_seconds_after_finished: Option<i32>,
    }

    #[derive(Default, Deserialize)]
    pub struct Status {
        #[serde(default)]
        pub conditions: Vec<Condition>,
    }

    #[derive(Deserialize)]
    #[serde(rename_all = "camelCase")]
    pub struct Condition {
        #[serde(rename = "type")]
        pub type_: String,
        pub status: String,
        #[serde(default)]
        pub last_transition_time: Option<String>,
    }
}

/// The namespace and name of Job `i`.
pub fn job_name(i: usize) -> (String, String) {
    (
        format!("team-{:02}", i % NAMESPACES),
        format!("nightly-report-{i:08}"),
    )
}

/// Job `i` as its creator sends it: spec with a pod template, a TTL, `managedFields` of the
/// creator. The server adds uid, resourceVersion and creationTimestamp.
pub fn real_sized_job(i: usize) -> Value {
    let (namespace, name) = job_name(i);
    let env: Vec<Value> = (0..ENV_VARS)
        .map(|e| json!({"name": format!("REPORT_SETTING_{e:02}"), "value": format!("value-{e:02}-{i}")}))
        .collect();
    json!({
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {
            "name": name,
            "namespace": namespace,
            "labels": {"app": "nightly-report", "team": namespace, "tier": "batch"},
            "annotations": {"owner": "reports@example.com", "cost-center": "analytics-4711"},
            "ownerReferences": [{"apiVersion": "batch/v1", "kind": "CronJob",
                "name": "nightly-report", "uid": CRONJOB_UID,
                "controller": true, "blockOwnerDeletion": true}],
            "managedFields": [creator_fields(), status_fields()],
        },
        "spec": {
            "parallelism": 1, "completions": 1, "backoffLimit": 6,
            "completionMode": "NonIndexed", "suspend": false,
            "ttlSecondsAfterFinished": 3600,
            "template": {
                "metadata": {"creationTimestamp": null, "labels": {
                    "app": "nightly-report", "job-name": name,
                    "batch.kubernetes.io/job-name": name}},
                "spec": {
                    "containers": [{
                        "name": "report",
                        "image": "registry.example.com/analytics/nightly-report:2026.11.3",
                        "command": ["/bin/report", "--since=24h", "--format=parquet",
                                    "--output=s3://reports/nightly"],
                        "env": env,
                        "resources": {"limits": {"cpu": "2", "memory": "4Gi"},
                                      "requests": {"cpu": "500m", "memory": "1Gi"}},
                        "volumeMounts": [{"name": "scratch", "mountPath": "/scratch"},
                                         {"name": "config", "mountPath": "/etc/report", "readOnly": true}],
                        "terminationMessagePath": "/dev/termination-log",
                        "terminationMessagePolicy": "File",
                        "imagePullPolicy": "IfNotPresent"
                    }],
                    "volumes": [{"name": "scratch", "emptyDir": {}},
                                {"name": "config", "configMap": {"name": "nightly-report", "defaultMode": 420}}],
                    "nodeSelector": {"node.kubernetes.io/pool": "batch"},
                    "tolerations": [{"key": "dedicated", "operator": "Equal",
                                     "value": "batch", "effect": "NoSchedule"}],
                    "restartPolicy": "Never", "terminationGracePeriodSeconds": 30,
                    "dnsPolicy": "ClusterFirst", "securityContext": {},
                    "schedulerName": "default-scheduler"
                }
            }
        },
        "status": finished_status(),
    })
}

/// The status the job controller writes when the Job completes.
pub fn finished_status() -> Value {
    let at = "2026-11-22T03:45:32Z";
    json!({
        "conditions": [
            {"type": "SuccessCriteriaMet", "status": "True", "lastProbeTime": at, "lastTransitionTime": at},
            {"type": "Complete", "status": "True", "lastProbeTime": at, "lastTransitionTime": at}
        ],
        "startTime": "2026-11-22T03:40:01Z", "completionTime": at, "succeeded": 1,
        "ready": 0, "uncountedTerminatedPods": {}
    })
}

/// The creator's entry: every field it set, as a real server records it.
fn creator_fields() -> Value {
    let env: serde_json::Map<String, Value> = (0..ENV_VARS)
        .map(|e| {
            (
                format!("k:{{\"name\":\"REPORT_SETTING_{e:02}\"}}"),
                json!({".": {}, "f:name": {}, "f:value": {}}),
            )
        })
        .collect();
    json!({
        "manager": "report-scheduler", "operation": "Update", "apiVersion": "batch/v1",
        "time": "2026-11-22T03:40:00Z", "fieldsType": "FieldsV1",
        "fieldsV1": {
            "f:metadata": {"f:annotations": {".": {}, "f:cost-center": {}, "f:owner": {}},
                           "f:labels": {".": {}, "f:app": {}, "f:team": {}, "f:tier": {}},
                           "f:ownerReferences": {".": {}, format!("k:{{\"uid\":\"{CRONJOB_UID}\"}}"): {}}},
            "f:spec": {"f:backoffLimit": {}, "f:completionMode": {}, "f:completions": {},
                "f:parallelism": {}, "f:suspend": {}, "f:ttlSecondsAfterFinished": {},
                "f:template": {"f:metadata": {"f:labels": {".": {}, "f:app": {}}},
                    "f:spec": {"f:containers": {"k:{\"name\":\"report\"}": {
                        ".": {}, "f:command": {}, "f:env": env, "f:image": {},
                        "f:imagePullPolicy": {}, "f:name": {},
                        "f:resources": {".": {}, "f:limits": {".": {}, "f:cpu": {}, "f:memory": {}},
                                        "f:requests": {".": {}, "f:cpu": {}, "f:memory": {}}},
                        "f:terminationMessagePath": {}, "f:terminationMessagePolicy": {},
                        "f:volumeMounts": {".": {},
                            "k:{\"mountPath\":\"/etc/report\"}": {".": {}, "f:mountPath": {}, "f:name": {}, "f:readOnly": {}},
                            "k:{\"mountPath\":\"/scratch\"}": {".": {}, "f:mountPath": {}, "f:name": {}}}}},
                    "f:dnsPolicy": {}, "f:nodeSelector": {}, "f:restartPolicy": {},
                    "f:schedulerName": {}, "f:tolerations": {},
                    "f:securityContext": {}, "f:terminationGracePeriodSeconds": {},
                    "f:volumes": {".": {},
                        "k:{\"name\":\"config\"}": {".": {}, "f:configMap": {".": {}, "f:defaultMode": {}, "f:name": {}}, "f:name": {}},
                        "k:{\"name\":\"scratch\"}": {".": {}, "f:emptyDir": {}, "f:name": {}}}}}}
        }
    })
}

/// The job controller's entry for the status subresource.
fn status_fields() -> Value {
    json!({
        "manager": "kube-controller-manager", "operation": "Update", "apiVersion": "batch/v1",
        "time": "2026-11-22T03:45:32Z", "fieldsType": "FieldsV1", "subresource": "status",
        "fieldsV1": {"f:status": {"f:completionTime": {}, "f:conditions": {}, "f:ready": {},
            "f:startTime": {}, "f:succeeded": {}, "f:terminating": {},
            "f:uncountedTerminatedPods": {}}}
    })
}

/// Creates `count` finished real-sized Jobs in `sim` (created, then completed through the status
/// subresource, as the job controller would).
pub fn seed_jobs(sim: &SimServer, count: usize) {
    let namespaces = Gvr::new("", "v1", "namespaces");
    for i in 0..NAMESPACES.min(count) {
        let (namespace, _) = job_name(i);
        if let Err(e) = sim.create(&namespaces, json!({"metadata": {"name": namespace}})) {
            panic!("creating namespace {namespace}: {e}");
        }
    }
    let gvr = jobs();
    for i in 0..count {
        let job = real_sized_job(i);
        let status = job["status"].clone();
        let mut created = match sim.create(&gvr, job) {
            Ok(created) => created,
            Err(e) => panic!("creating job {i}: {e}"),
        };
        created["status"] = status;
        if let Err(e) = sim.update_status(&gvr, created) {
            panic!("completing job {i}: {e}");
        }
    }
}
