//! What the namespace scene holds: its namespaces, each one's content and fate, and the objects
//! as the scene writes them to the server — as a team, its CI and its operators would have left
//! them.
//!
//! Contract: [`plan`] is fixed (no randomness) and lists objects in creation order — a Job
//! before the Pods it owns, a claim before the Pod that mounts it. [`body`] is the object as
//! created (no status), [`status`] the status the scene then writes, if any.

use serde_json::{json, Value};

use crate::sim::Gvr;

/// The Ready node the running Pods are bound to; the scene plays its kubelet.
pub const NODE_LIVE: &str = "demo-node-a";
/// The node that goes away: deleted when the namespaces are; nothing finishes its Pods.
pub const NODE_LOST: &str = "demo-node-b";
/// The finalizer of the object that holds its namespace (an archiver's, released by the scene).
pub const HOLD: &str = "demo.kube-gc.io/archive";

/// What becomes of a namespace.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum NamespaceFate {
    /// Deleted during the demo: emptied, Pods first, then finalized.
    Deleted,
    /// Deleted during the demo, and held by a finalizer the scene releases later: finalized
    /// only after that.
    Held,
    /// Never deleted: everything in it stays, untouched.
    Kept,
}

impl NamespaceFate {
    /// Whether the scene deletes the namespace.
    pub fn deleted(self) -> bool {
        self != NamespaceFate::Kept
    }

    /// As the summary shows it.
    pub fn as_str(self) -> &'static str {
        match self {
            NamespaceFate::Deleted => "deleted",
            NamespaceFate::Held => "held, released",
            NamespaceFate::Kept => "kept",
        }
    }
}

/// The kinds of content.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Kind {
    /// core/v1 Pods.
    Pod,
    /// core/v1 ConfigMaps.
    ConfigMap,
    /// core/v1 Secrets.
    Secret,
    /// core/v1 PersistentVolumeClaims.
    Claim,
    /// core/v1 Events.
    Event,
    /// batch/v1 Jobs.
    Job,
    /// Volcano Jobs (a custom resource).
    VolcanoJob,
    /// Tekton PipelineRuns (a custom resource).
    PipelineRun,
}

impl Kind {
    /// Its resource.
    pub fn gvr(self) -> Gvr {
        match self {
            Kind::Pod => Gvr::new("", "v1", "pods"),
            Kind::ConfigMap => Gvr::new("", "v1", "configmaps"),
            Kind::Secret => Gvr::new("", "v1", "secrets"),
            Kind::Claim => Gvr::new("", "v1", "persistentvolumeclaims"),
            Kind::Event => Gvr::new("", "v1", "events"),
            Kind::Job => Gvr::new("batch", "v1", "jobs"),
            Kind::VolcanoJob => Gvr::new("batch.volcano.sh", "v1alpha1", "jobs"),
            Kind::PipelineRun => Gvr::new("tekton.dev", "v1", "pipelineruns"),
        }
    }

    fn type_meta(self) -> (&'static str, &'static str) {
        match self {
            Kind::Pod => ("v1", "Pod"),
            Kind::ConfigMap => ("v1", "ConfigMap"),
            Kind::Secret => ("v1", "Secret"),
            Kind::Claim => ("v1", "PersistentVolumeClaim"),
            Kind::Event => ("v1", "Event"),
            Kind::Job => ("batch/v1", "Job"),
            Kind::VolcanoJob => ("batch.volcano.sh/v1alpha1", "Job"),
            Kind::PipelineRun => ("tekton.dev/v1", "PipelineRun"),
        }
    }
}

/// Where a Pod runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Node {
    /// [`NODE_LIVE`]: its kubelet stops it when it is deleted.
    Live,
    /// [`NODE_LOST`]: gone; only the pod garbage collector can remove it.
    Lost,
}

impl Node {
    /// The node's name.
    pub fn name(self) -> &'static str {
        match self {
            Node::Live => NODE_LIVE,
            Node::Lost => NODE_LOST,
        }
    }
}

/// One object of the scene.
#[derive(Clone, Debug, PartialEq)]
pub struct Object {
    /// Its kind.
    pub kind: Kind,
    /// Its namespace.
    pub namespace: &'static str,
    /// Its name.
    pub name: &'static str,
    /// A Pod's node.
    pub node: Option<Node>,
    /// A Pod's owning Job (by name, in its namespace).
    pub job: Option<&'static str>,
    /// A Pod's claim.
    pub claim: Option<&'static str>,
    /// Held by [`HOLD`] until the scene releases it.
    pub held: bool,
}

impl Object {
    fn new(kind: Kind, namespace: &'static str, name: &'static str) -> Object {
        Object {
            kind,
            namespace,
            name,
            node: None,
            job: None,
            claim: None,
            held: false,
        }
    }

    fn pod(namespace: &'static str, name: &'static str, node: Node) -> Object {
        Object {
            node: Some(node),
            ..Object::new(Kind::Pod, namespace, name)
        }
    }

    /// Its API path (what a DELETE of it names).
    pub fn path(&self) -> String {
        let gvr = self.kind.gvr();
        let prefix = if gvr.group.is_empty() {
            format!("/api/{}", gvr.version)
        } else {
            format!("/apis/{}/{}", gvr.group, gvr.version)
        };
        format!(
            "{prefix}/namespaces/{}/{}/{}",
            self.namespace, gvr.resource, self.name
        )
    }
}

/// One namespace of the scene.
#[derive(Clone, Debug, PartialEq)]
pub struct Namespace {
    /// Its name.
    pub name: &'static str,
    /// What becomes of it.
    pub fate: NamespaceFate,
    /// What it holds, in creation order.
    pub objects: Vec<Object>,
}

/// The scene: a shop torn down (web Pods, a migration Job with Pods, a database Pod and its
/// claim, configuration, a Volcano Job, an Event), an edge site whose node went away, an
/// archive held by a PipelineRun its archiver has not released, and a team that stays.
pub fn plan() -> Vec<Namespace> {
    let shop = "demo-shop";
    let edge = "demo-edge";
    let archive = "demo-archive";
    let stays = "demo-stays";
    let job_pod = |name, job| Object {
        job: Some(job),
        ..Object::pod(shop, name, Node::Live)
    };
    vec![
        Namespace {
            name: shop,
            fate: NamespaceFate::Deleted,
            objects: vec![
                Object::pod(shop, "web-0", Node::Live),
                Object::pod(shop, "web-1", Node::Live),
                Object::new(Kind::Job, shop, "migrate"),
                job_pod("migrate-0", "migrate"),
                job_pod("migrate-1", "migrate"),
                Object::new(Kind::Claim, shop, "data-db-0"),
                Object {
                    claim: Some("data-db-0"),
                    ..Object::pod(shop, "db-0", Node::Live)
                },
                Object::new(Kind::ConfigMap, shop, "web-config"),
                Object::new(Kind::ConfigMap, shop, "feature-flags"),
                Object::new(Kind::Secret, shop, "web-tls"),
                Object::new(Kind::Secret, shop, "db-password"),
                Object::new(Kind::VolcanoJob, shop, "recommendations-train"),
                Object::new(Kind::Event, shop, "web-0.started"),
            ],
        },
        Namespace {
            name: edge,
            fate: NamespaceFate::Deleted,
            objects: vec![
                Object::pod(edge, "cache-0", Node::Lost),
                Object::pod(edge, "cache-1", Node::Lost),
                Object::pod(edge, "cache-2", Node::Lost),
                Object::new(Kind::ConfigMap, edge, "edge-routes"),
                Object::new(Kind::Secret, edge, "edge-token"),
            ],
        },
        Namespace {
            name: archive,
            fate: NamespaceFate::Held,
            objects: vec![
                Object::pod(archive, "archiver-0", Node::Live),
                Object {
                    held: true,
                    ..Object::new(Kind::PipelineRun, archive, "nightly-backup")
                },
                Object::new(Kind::ConfigMap, archive, "archive-config"),
                Object::new(Kind::Secret, archive, "archive-credentials"),
            ],
        },
        Namespace {
            name: stays,
            fate: NamespaceFate::Kept,
            objects: vec![
                Object::new(Kind::Claim, stays, "data-app-0"),
                Object {
                    claim: Some("data-app-0"),
                    ..Object::pod(stays, "app-0", Node::Live)
                },
                Object::new(Kind::Job, stays, "report"),
                Object::new(Kind::ConfigMap, stays, "app-config"),
                Object::new(Kind::Secret, stays, "app-token"),
                Object::new(Kind::PipelineRun, stays, "release-42"),
            ],
        },
    ]
}

/// The object as created; `job_uid` is the owning Job's, for a Pod a Job owns.
pub fn body(object: &Object, job_uid: Option<&str>) -> Value {
    let (api_version, kind) = object.kind.type_meta();
    let mut metadata = json!({"name": object.name, "namespace": object.namespace,
        "labels": {"demo": "namespaces"}});
    if object.held {
        metadata["finalizers"] = json!([HOLD]);
    }
    if let (Some(job), Some(uid)) = (object.job, job_uid) {
        metadata["ownerReferences"] = json!([{"apiVersion": "batch/v1", "kind": "Job",
            "name": job, "uid": uid, "controller": true, "blockOwnerDeletion": true}]);
    }
    let mut body = json!({"apiVersion": api_version, "kind": kind, "metadata": metadata});
    let container = json!({"name": "main", "image": "busybox:1.36", "command": ["sleep", "3600"]});
    match object.kind {
        Kind::Pod => {
            let mut spec = json!({"restartPolicy": "Always", "containers": [container],
                "nodeName": object.node.map(Node::name)});
            if let Some(claim) = object.claim {
                spec["volumes"] =
                    json!([{"name": "data", "persistentVolumeClaim": {"claimName": claim}}]);
            }
            body["spec"] = spec;
        }
        Kind::ConfigMap => body["data"] = json!({"setting": "on"}),
        Kind::Secret => body["stringData"] = json!({"token": "not-a-real-one"}),
        Kind::Claim => {
            body["spec"] = json!({"accessModes": ["ReadWriteOnce"],
                "resources": {"requests": {"storage": "1Gi"}}});
        }
        Kind::Event => {
            body["involvedObject"] = json!({"kind": "Pod", "namespace": object.namespace,
                "name": "web-0"});
            body["reason"] = json!("Started");
            body["message"] = json!("Started container main");
            body["type"] = json!("Normal");
        }
        Kind::Job => {
            body["spec"] = json!({"template": {"spec": {"restartPolicy": "Never",
                "containers": [container]}}});
        }
        Kind::VolcanoJob => {
            body["spec"] = json!({"schedulerName": "volcano", "minAvailable": 1,
                "tasks": [{"name": "worker", "replicas": 1,
                    "template": {"spec": {"containers": [container]}}}]});
        }
        Kind::PipelineRun => body["spec"] = json!({"pipelineRef": {"name": object.name}}),
    }
    body
}

/// The status the scene writes once the object exists (running, bound), if any.
pub fn status(object: &Object, now: &str) -> Option<Value> {
    match object.kind {
        Kind::Pod => Some(json!({"phase": "Running", "startTime": now,
            "conditions": [{"type": "Ready", "status": "True", "lastTransitionTime": now}]})),
        Kind::Claim => Some(json!({"phase": "Bound", "accessModes": ["ReadWriteOnce"],
            "capacity": {"storage": "1Gi"}})),
        Kind::Job => Some(json!({"active": 2, "startTime": now})),
        Kind::VolcanoJob => Some(json!({"state": {"phase": "Running", "lastTransitionTime": now}})),
        Kind::PipelineRun => Some(
            json!({"startTime": now, "conditions": [{"type": "Succeeded",
            "status": "Unknown", "reason": "Running", "lastTransitionTime": now}]}),
        ),
        Kind::ConfigMap | Kind::Secret | Kind::Event => None,
    }
}

/// A node, Ready, as its kubelet would report it.
pub fn node(name: &str, now: &str) -> (Value, Value) {
    let node = json!({"apiVersion": "v1", "kind": "Node",
        "metadata": {"name": name, "labels": {"demo": "namespaces"}}});
    let status = json!({"conditions": [{"type": "Ready", "status": "True", "reason": "KubeletReady",
        "lastHeartbeatTime": now, "lastTransitionTime": now}]});
    (node, status)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn owners_and_claims_are_created_before_the_pods_that_name_them() {
        for namespace in plan() {
            for (i, object) in namespace.objects.iter().enumerate() {
                let earlier = &namespace.objects[..i];
                for (named, kind) in [(object.job, Kind::Job), (object.claim, Kind::Claim)] {
                    if let Some(name) = named {
                        assert!(
                            earlier.iter().any(|o| o.kind == kind && o.name == name),
                            "{} names {name} before it exists",
                            object.name
                        );
                    }
                }
                assert_eq!(object.namespace, namespace.name);
            }
        }
    }

    #[test]
    fn one_namespace_is_held_one_kept_and_pods_run_on_both_nodes() {
        let scene = plan();
        let fates: Vec<_> = scene.iter().map(|n| n.fate).collect();
        assert_eq!(
            fates.iter().filter(|f| **f == NamespaceFate::Held).count(),
            1
        );
        assert_eq!(
            fates.iter().filter(|f| **f == NamespaceFate::Kept).count(),
            1
        );
        let objects = || scene.iter().flat_map(|n| n.objects.iter());
        assert_eq!(objects().filter(|o| o.held).count(), 1);
        for node in [Node::Live, Node::Lost] {
            assert!(objects().any(|o| o.node == Some(node)), "{node:?}");
        }
        // The lost node's Pods are all in deleted namespaces: the pod garbage collector is to
        // remove them, and nothing kept may depend on a node that goes.
        for namespace in &scene {
            let lost = namespace.objects.iter().any(|o| o.node == Some(Node::Lost));
            assert!(!lost || namespace.fate.deleted(), "{}", namespace.name);
        }
    }

    #[test]
    fn a_pod_body_binds_it_to_its_node_and_mounts_its_claim() {
        let scene = plan();
        let db = scene[0].objects.iter().find(|o| o.name == "db-0").unwrap();
        let body = body(db, None);
        assert_eq!(body["spec"]["nodeName"], NODE_LIVE);
        assert_eq!(
            body["spec"]["volumes"][0]["persistentVolumeClaim"]["claimName"],
            "data-db-0"
        );
        let migrate = scene[0]
            .objects
            .iter()
            .find(|o| o.name == "migrate-0")
            .unwrap();
        let owned = super::body(migrate, Some("uid-1"));
        assert_eq!(owned["metadata"]["ownerReferences"][0]["uid"], "uid-1");
        assert_eq!(
            db.path(),
            "/api/v1/namespaces/demo-shop/pods/db-0".to_owned()
        );
    }
}
