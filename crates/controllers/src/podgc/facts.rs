//! What the pod garbage collector keeps of a Pod and of a Node: compact projections decoded
//! straight from the wire, never the objects.
//!
//! Contract:
//! - [`PodFacts`] holds the Pod's identity (key, uid, resourceVersion), its creation time,
//!   whether its deletion has started — and whether the server is removing it by itself (no
//!   grace period left, no finalizer) —, the node it is bound to, its phase, whether the kubelet
//!   evicted it, and the status of a `DisruptionTarget` condition. [`PodFacts::decoder`] reads
//!   only those members — in protobuf, the rest of a Pod (its containers, `managedFields`) is
//!   skipped unread ([`PodFacts::reads`]).
//! - [`NodeFacts`] holds a Node's identity, whether its `Ready` condition is `True`, and
//!   whether it carries the `node.kubernetes.io/out-of-service` taint (any effect).
//! - Both are [`Cacheable`]; both tolerate `null` and missing members (a missing phase is
//!   [`PodPhase::Other`], never a terminal one).

use chrono::{DateTime, Utc};
use serde::Deserialize;

use kube_gc_api::Time;
use kube_gc_client::protobuf::Selection;
use kube_gc_client::ItemDecoder;
use kube_gc_runtime::cache::{Cacheable, ObjectKey};
use kube_gc_runtime::sources::serde_decoder;

/// The taint an operator puts on a shut-down node whose Pods may be force-deleted.
pub const OUT_OF_SERVICE_TAINT: &str = "node.kubernetes.io/out-of-service";
/// The condition the pod garbage collector adds to an orphaned Pod it fails.
pub const DISRUPTION_TARGET: &str = "DisruptionTarget";

/// A Pod's `status.phase`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum PodPhase {
    /// `Pending`.
    Pending,
    /// `Running`.
    Running,
    /// `Succeeded`: terminated.
    Succeeded,
    /// `Failed`: terminated.
    Failed,
    /// `Unknown`.
    Unknown,
    /// Missing, or a value the API does not define: never counted as terminated.
    Other,
}

impl PodPhase {
    fn parse(text: Option<&str>) -> PodPhase {
        match text {
            Some("Pending") => PodPhase::Pending,
            Some("Running") => PodPhase::Running,
            Some("Succeeded") => PodPhase::Succeeded,
            Some("Failed") => PodPhase::Failed,
            Some("Unknown") => PodPhase::Unknown,
            _ => PodPhase::Other,
        }
    }

    /// Whether the Pod's containers have all stopped for good (`Succeeded` or `Failed`).
    pub fn is_terminated(self) -> bool {
        matches!(self, PodPhase::Succeeded | PodPhase::Failed)
    }
}

/// What the pod garbage collector knows of one Pod (deserialized from a Pod's JSON).
#[derive(Clone, Debug, PartialEq, Eq, Deserialize)]
#[serde(from = "PodWire")]
pub struct PodFacts {
    /// `namespace/name`.
    pub key: ObjectKey,
    /// Its uid: a force deletion is guarded by it.
    pub uid: String,
    /// The resourceVersion these facts were read at: so is a force deletion.
    pub resource_version: String,
    /// `metadata.creationTimestamp`: terminated Pods above the threshold go oldest first.
    pub created: Option<DateTime<Utc>>,
    /// Whether `metadata.deletionTimestamp` is set (the Pod is terminating).
    pub deleting: bool,
    /// When the server removes the Pod by itself: its `deletionTimestamp`, when its deletion
    /// has no grace period left (`deletionGracePeriodSeconds: 0`) and no finalizer holds it. A
    /// real server writes that state (MODIFIED) one revision before it removes the Pod
    /// (DELETED) in the same request (exchanges 68, 176): a Pod seen so is leaving.
    pub removed_by_server: Option<DateTime<Utc>>,
    /// `spec.nodeName`; empty when the Pod was never scheduled.
    pub node_name: String,
    /// `status.phase`.
    pub phase: PodPhase,
    /// Whether the kubelet evicted it (`Failed` with reason `Evicted`): those go first.
    pub evicted: bool,
    /// The status of its `DisruptionTarget` condition, if it has one (`true` for `"True"`).
    pub disruption_target: Option<bool>,
}

impl PodFacts {
    /// Whether the Pod is bound to a node.
    pub fn is_scheduled(&self) -> bool {
        !self.node_name.is_empty()
    }

    /// The members [`PodFacts::decoder`] reads, for a protobuf reader to keep.
    pub fn reads() -> Selection {
        Selection::paths([
            "metadata.name",
            "metadata.namespace",
            "metadata.uid",
            "metadata.resourceVersion",
            "metadata.creationTimestamp",
            "metadata.deletionTimestamp",
            "metadata.deletionGracePeriodSeconds",
            "metadata.finalizers",
            "spec.nodeName",
            "status.phase",
            "status.reason",
            "status.conditions.type",
            "status.conditions.status",
        ])
    }

    /// The item decoder of an informer (or a list) of these facts.
    pub fn decoder() -> ItemDecoder<PodFacts> {
        serde_decoder(Some(PodFacts::reads()))
    }
}

impl From<PodWire> for PodFacts {
    fn from(pod: PodWire) -> PodFacts {
        let meta = pod.metadata;
        let status = pod.status;
        let phase = PodPhase::parse(status.phase.as_deref());
        let no_grace_left = meta.deletion_grace_period_seconds == Some(0);
        let removed_by_server = meta
            .deletion_timestamp
            .as_ref()
            .filter(|_| no_grace_left && meta.finalizers.is_empty())
            .map(|t| t.0);
        let disruption_target = status
            .conditions
            .iter()
            .find(|c| c.type_.as_deref() == Some(DISRUPTION_TARGET))
            .map(|c| c.status.as_deref() == Some("True"));
        PodFacts {
            key: ObjectKey::new(
                meta.namespace.as_deref().unwrap_or_default(),
                meta.name.as_deref().unwrap_or_default(),
            ),
            uid: meta.uid.unwrap_or_default(),
            resource_version: meta.resource_version.unwrap_or_default(),
            created: meta.creation_timestamp.map(|t| t.0),
            deleting: meta.deletion_timestamp.is_some(),
            removed_by_server,
            node_name: pod.spec.node_name.unwrap_or_default(),
            phase,
            evicted: phase == PodPhase::Failed && status.reason.as_deref() == Some("Evicted"),
            disruption_target,
        }
    }
}

impl Cacheable for PodFacts {
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

/// What a Pod's JSON holds of interest; `null` reads as absent everywhere.
#[derive(Deserialize, Default)]
struct PodWire {
    #[serde(default, deserialize_with = "kube_gc_api::null_as_default")]
    metadata: MetaWire,
    #[serde(default, deserialize_with = "kube_gc_api::null_as_default")]
    spec: PodSpecWire,
    #[serde(default, deserialize_with = "kube_gc_api::null_as_default")]
    status: PodStatusWire,
}

#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase")]
struct MetaWire {
    name: Option<String>,
    namespace: Option<String>,
    uid: Option<String>,
    resource_version: Option<String>,
    creation_timestamp: Option<Time>,
    deletion_timestamp: Option<Time>,
    deletion_grace_period_seconds: Option<i64>,
    #[serde(default, deserialize_with = "kube_gc_api::null_as_default")]
    finalizers: Vec<String>,
}

#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase")]
struct PodSpecWire {
    node_name: Option<String>,
}

#[derive(Deserialize, Default)]
struct PodStatusWire {
    phase: Option<String>,
    reason: Option<String>,
    #[serde(default, deserialize_with = "kube_gc_api::null_as_default")]
    conditions: Vec<ConditionWire>,
}

#[derive(Deserialize, Default)]
struct ConditionWire {
    #[serde(rename = "type")]
    type_: Option<String>,
    status: Option<String>,
}

/// What the pod garbage collector knows of one Node (deserialized from a Node's JSON).
#[derive(Clone, Debug, PartialEq, Eq, Deserialize)]
#[serde(from = "NodeWire")]
pub struct NodeFacts {
    /// The Node's name (its key).
    pub name: String,
    /// Its uid.
    pub uid: String,
    /// Its resourceVersion.
    pub resource_version: String,
    /// Whether its `Ready` condition is `True` (upstream's `IsNodeReady`): a Node without one
    /// is not ready.
    pub ready: bool,
    /// Whether it carries the `node.kubernetes.io/out-of-service` taint, whatever its effect.
    pub out_of_service: bool,
}

impl NodeFacts {
    /// The item decoder of an informer of Nodes (JSON: the client has no protobuf tables for
    /// Nodes).
    pub fn decoder() -> ItemDecoder<NodeFacts> {
        serde_decoder(None)
    }
}

impl From<NodeWire> for NodeFacts {
    fn from(node: NodeWire) -> NodeFacts {
        let ready =
            node.status.conditions.iter().any(|c| {
                c.type_.as_deref() == Some("Ready") && c.status.as_deref() == Some("True")
            });
        let out_of_service = node
            .spec
            .taints
            .iter()
            .any(|t| t.key.as_deref() == Some(OUT_OF_SERVICE_TAINT));
        NodeFacts {
            name: node.metadata.name.unwrap_or_default(),
            uid: node.metadata.uid.unwrap_or_default(),
            resource_version: node.metadata.resource_version.unwrap_or_default(),
            ready,
            out_of_service,
        }
    }
}

impl Cacheable for NodeFacts {
    fn cache_key(&self) -> ObjectKey {
        ObjectKey::cluster_scoped(&self.name)
    }
    fn resource_version(&self) -> &str {
        &self.resource_version
    }
    fn uid(&self) -> &str {
        &self.uid
    }
}

#[derive(Deserialize, Default)]
struct NodeWire {
    #[serde(default, deserialize_with = "kube_gc_api::null_as_default")]
    metadata: MetaWire,
    #[serde(default, deserialize_with = "kube_gc_api::null_as_default")]
    spec: NodeSpecWire,
    #[serde(default, deserialize_with = "kube_gc_api::null_as_default")]
    status: NodeStatusWire,
}

#[derive(Deserialize, Default)]
struct NodeSpecWire {
    #[serde(default, deserialize_with = "kube_gc_api::null_as_default")]
    taints: Vec<TaintWire>,
}

#[derive(Deserialize, Default)]
struct TaintWire {
    key: Option<String>,
}

#[derive(Deserialize, Default)]
struct NodeStatusWire {
    #[serde(default, deserialize_with = "kube_gc_api::null_as_default")]
    conditions: Vec<ConditionWire>,
}

#[cfg(test)]
mod tests {
    use super::*;

    use kube_gc_fixtures::exchange;

    fn fixture(prefix: &str) -> serde_json::Value {
        exchange(prefix)["response"]["body"].clone()
    }

    fn pod(prefix: &str) -> PodFacts {
        decoded(&fixture(prefix), prefix)
    }

    fn decoded(pod: &serde_json::Value, what: &str) -> PodFacts {
        let text = pod.to_string();
        PodFacts::decoder()
            .decode(text.as_bytes())
            .unwrap_or_else(|e| panic!("{what}: {e}"))
    }

    fn node(prefix: &str) -> NodeFacts {
        serde_json::from_value(fixture(prefix)).unwrap_or_else(|e| panic!("{prefix}: {e}"))
    }

    #[test]
    fn a_scheduled_pod_as_the_real_server_serves_it() {
        let created = pod("170-");
        assert_eq!(created.key.to_string(), "pgc-capture/pgc-graceful");
        assert_eq!(created.node_name, "pgc-node-a");
        assert_eq!(created.phase, PodPhase::Pending);
        assert!(!created.deleting && created.is_scheduled());
        assert!(created.created.is_some() && !created.uid.is_empty());
        let marked = pod("171-");
        assert!(marked.deleting);
        assert_eq!(pod("177-").phase, PodPhase::Succeeded);
    }

    #[test]
    fn a_pod_the_server_removes_by_itself_is_told_from_one_a_finalizer_or_a_grace_period_holds() {
        // Exchange 176's watch: marked with a grace period (kept for its kubelet), then deleted
        // with gracePeriodSeconds 0: MODIFIED with grace 0 and no finalizer, then DELETED.
        let exchange = exchange("176-");
        let events = exchange["response"]["events"].as_array().cloned();
        let events = events.unwrap_or_default();
        let facts: Vec<(String, PodFacts)> = events
            .iter()
            .map(|e| (e["type"].to_string(), decoded(&e["object"], "176")))
            .collect();
        let kinds: Vec<&str> = facts.iter().map(|(t, _)| t.trim_matches('"')).collect();
        assert_eq!(kinds, ["ADDED", "MODIFIED", "MODIFIED", "DELETED"]);
        assert!(facts[1].1.deleting && facts[1].1.removed_by_server.is_none());
        let leaving = &facts[2].1;
        assert!(leaving.deleting);
        assert_eq!(
            leaving.removed_by_server.map(|t| t.to_rfc3339()),
            Some("2026-11-29T03:54:44+00:00".to_owned())
        );
        // Exchange 180: deleted with gracePeriodSeconds 0, but a finalizer holds it.
        let held = pod("180-");
        assert!(held.deleting && held.removed_by_server.is_none());
    }

    #[test]
    fn what_says_the_server_removes_a_pod_is_read_from_protobuf_too() {
        use kube_gc_client::protobuf::{encode, transcode};
        let leaving = serde_json::json!({"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": "p", "namespace": "n", "uid": "u", "resourceVersion": "9",
                "deletionTimestamp": "2026-11-29T05:16:08Z", "deletionGracePeriodSeconds": 0},
            "spec": {"containers": [{"name": "c", "image": "busybox"}]}});
        let mut held = leaving.clone();
        held["metadata"]["finalizers"] = serde_json::json!(["example.com/hold"]);
        for (pod, removed) in [(leaving, true), (held, false)] {
            let body = encode::object(&pod).unwrap_or_default();
            let text = transcode::body_to_json(&body, &PodFacts::reads()).unwrap_or_default();
            let facts = PodFacts::decoder().decode(&text).ok();
            assert!(
                facts.is_some_and(|f| f.deleting && f.removed_by_server.is_some() == removed),
                "{pod}"
            );
        }
    }

    #[test]
    fn the_pod_gcs_own_condition_is_read_back() {
        let failed = pod("178-");
        assert_eq!(failed.phase, PodPhase::Failed);
        assert_eq!(failed.disruption_target, Some(true));
        assert!(!failed.evicted);
    }

    #[test]
    fn evicted_pods_and_unknown_phases() {
        let evicted = br#"{"metadata":{"name":"p","namespace":"n"},"status":{"phase":"Failed","reason":"Evicted"}}"#;
        let facts = PodFacts::decoder().decode(evicted).ok();
        assert!(facts.is_some_and(|f| f.evicted && f.phase.is_terminated()));
        let odd = br#"{"metadata":null,"spec":null,"status":{"phase":"Done","conditions":null}}"#;
        let facts = PodFacts::decoder().decode(odd).ok();
        assert!(facts.is_some_and(|f| f.phase == PodPhase::Other && !f.phase.is_terminated()));
    }

    #[test]
    fn nodes_ready_not_ready_and_out_of_service_as_captured() {
        let created = node("165-");
        assert!(
            !created.ready && !created.out_of_service,
            "no Ready condition yet"
        );
        assert!(node("166-").ready);
        let shut_down = node("168-");
        assert!(!shut_down.ready && shut_down.out_of_service);
        assert_eq!(shut_down.cache_key().to_string(), "pgc-node-a");
    }
}
