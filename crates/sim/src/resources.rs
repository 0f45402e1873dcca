//! The catalogue of resources the simulated server serves.
//!
//! Contract: a [`ResourceDef`] says everything the server needs to know about one resource type —
//! where it lives in the URL space (group, version, plural name), how discovery describes it,
//! whether it is namespaced, whether it has a `status` subresource, which deletion policy applies
//! when a client sends none, and whether it is a custom resource (custom resources refuse strategic
//! merge patch, and their list items keep `kind`/`apiVersion`). [`Resources`] is the immutable set a
//! server is started with; resources are referred to by [`ResourceId`] (an index) inside the store.
//!
//! [`default_resources`] is what a default server serves, kube-gc's own retention policies
//! included; [`workload_custom_resources`] adds the custom resources of the workloads the
//! retention presets clean up (Argo, Tekton, Kubeflow, Spark, Ray), described as their projects'
//! CRDs publish them.

use crate::status::GroupResource;

/// What happens to dependents when a client deletes an owner without naming a propagation policy.
///
/// Mirrors the API server's `DefaultGarbageCollectionPolicy`: most types default to background
/// deletion; batch/v1 Jobs (for backwards compatibility) default to orphaning their Pods.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DefaultDeletion {
    /// Delete at once; a garbage collector removes dependents afterwards.
    Background,
    /// Add the `orphan` finalizer so a garbage collector strips owner references first.
    Orphan,
}

/// One resource type as served by the simulated server.
#[derive(Debug, Clone)]
pub struct ResourceDef {
    /// API group; empty for the core group (`/api/v1`).
    pub group: String,
    /// API version inside the group, e.g. `v1`.
    pub version: String,
    /// Plural lower-case name used in URLs, e.g. `jobs`.
    pub resource: String,
    /// Kind of a single object, e.g. `Job`.
    pub kind: String,
    /// Singular name shown by discovery, e.g. `job`.
    pub singular: String,
    /// Short names shown by discovery (`cm`, `vcjob`, ...).
    pub short_names: Vec<String>,
    /// Whether objects live in a namespace.
    pub namespaced: bool,
    /// Verbs discovery advertises for the main resource.
    pub verbs: Vec<String>,
    /// Whether the resource has a `status` subresource (PUT to the main resource then ignores
    /// `.status`, and `/status` changes only `.status`).
    pub has_status: bool,
    /// The deletion policy used when a DELETE names none.
    pub default_deletion: DefaultDeletion,
    /// Whether this is a custom resource (defined by a CRD) rather than a built-in type.
    pub is_custom: bool,
    /// Whether the server maintains `metadata.generation` (bumped when anything but metadata
    /// and status changes).
    pub tracks_generation: bool,
    /// Discovery categories (`all`).
    pub categories: Vec<String>,
    /// Whether a DELETE that removes an object answers with the object as deleted rather than
    /// a `Status` (the registry's `ReturnDeletedObject`: Pods, Namespaces, Services and a few
    /// more on a real server; exchange 67).
    pub returns_deleted_object: bool,
    /// Whether objects are deleted gracefully (Pods): a deletion marks them with
    /// `deletionTimestamp` and `deletionGracePeriodSeconds`, and keeps them while that grace
    /// period runs (`store::graceful`; exchanges 67, 68, 170–183).
    pub graceful_deletion: bool,
}

/// Every verb the simulated server implements.
const ALL_VERBS: [&str; 8] = [
    "create",
    "delete",
    "deletecollection",
    "get",
    "list",
    "patch",
    "update",
    "watch",
];

impl ResourceDef {
    /// A namespaced built-in resource with every verb, no status subresource and background
    /// deletion by default; adjust with the `with_*` methods.
    pub fn new(group: &str, version: &str, resource: &str, kind: &str) -> ResourceDef {
        ResourceDef {
            group: group.to_string(),
            version: version.to_string(),
            resource: resource.to_string(),
            kind: kind.to_string(),
            singular: kind.to_lowercase(),
            short_names: Vec::new(),
            namespaced: true,
            verbs: ALL_VERBS.iter().map(|v| v.to_string()).collect(),
            has_status: false,
            default_deletion: DefaultDeletion::Background,
            is_custom: false,
            tracks_generation: false,
            categories: Vec::new(),
            returns_deleted_object: false,
            graceful_deletion: false,
        }
    }

    /// A DELETE that removes an object answers with the object, not a `Status`.
    pub fn returning_deleted_object(mut self) -> Self {
        self.returns_deleted_object = true;
        self
    }

    /// Objects are deleted gracefully, as Pods are.
    pub fn deleted_gracefully(mut self) -> Self {
        self.graceful_deletion = true;
        self
    }

    /// Discovery advertises these verbs instead of all of them; the server refuses a
    /// `deletecollection` of a resource that does not list it.
    pub fn with_verbs(mut self, verbs: &[&str]) -> Self {
        self.verbs = verbs.iter().map(|v| v.to_string()).collect();
        self
    }

    /// Whether discovery advertises `verb`.
    pub fn supports(&self, verb: &str) -> bool {
        self.verbs.iter().any(|v| v == verb)
    }

    /// Marks the resource cluster-scoped.
    pub fn cluster_scoped(mut self) -> Self {
        self.namespaced = false;
        self
    }

    /// Adds a `status` subresource.
    pub fn with_status(mut self) -> Self {
        self.has_status = true;
        self
    }

    /// Sets the discovery short names.
    pub fn with_short_names(mut self, names: &[&str]) -> Self {
        self.short_names = names.iter().map(|n| n.to_string()).collect();
        self
    }

    /// Sets the discovery categories.
    pub fn with_categories(mut self, categories: &[&str]) -> Self {
        self.categories = categories.iter().map(|c| c.to_string()).collect();
        self
    }

    /// Sets the deletion policy used when a DELETE names none.
    pub fn with_default_deletion(mut self, policy: DefaultDeletion) -> Self {
        self.default_deletion = policy;
        self
    }

    /// Makes the server maintain `metadata.generation`.
    pub fn tracking_generation(mut self) -> Self {
        self.tracks_generation = true;
        self
    }

    /// Marks the resource as a custom resource (implies generation tracking, as for CRDs).
    pub fn custom(mut self) -> Self {
        self.is_custom = true;
        self.tracks_generation = true;
        self
    }

    /// `group/version`, or just `version` for the core group: the `apiVersion` of objects.
    pub fn api_version(&self) -> String {
        if self.group.is_empty() {
            self.version.clone()
        } else {
            format!("{}/{}", self.group, self.version)
        }
    }

    /// The kind of the list type (`JobList`).
    pub fn list_kind(&self) -> String {
        format!("{}List", self.kind)
    }

    /// The group-qualified resource used in error messages (`jobs.batch`, `configmaps`).
    pub fn group_resource(&self) -> GroupResource {
        GroupResource {
            group: self.group.clone(),
            resource: self.resource.clone(),
        }
    }

    /// The group-qualified kind used in validation messages (`Job.batch`, `ConfigMap`).
    pub fn qualified_kind(&self) -> String {
        if self.group.is_empty() {
            self.kind.clone()
        } else {
            format!("{}.{}", self.kind, self.group)
        }
    }
}

/// Index of a resource inside a [`Resources`] set.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ResourceId(pub usize);

/// Names a resource from outside the server: group, version and plural resource name.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Gvr {
    /// API group; empty for core.
    pub group: String,
    /// API version.
    pub version: String,
    /// Plural resource name.
    pub resource: String,
}

impl Gvr {
    /// Builds a reference from its parts (`Gvr::new("batch", "v1", "jobs")`).
    pub fn new(group: &str, version: &str, resource: &str) -> Gvr {
        Gvr {
            group: group.to_string(),
            version: version.to_string(),
            resource: resource.to_string(),
        }
    }
}

/// The immutable set of resources one server serves.
#[derive(Debug, Clone)]
pub struct Resources {
    defs: Vec<ResourceDef>,
}

impl Resources {
    /// Wraps a list of definitions.
    pub fn new(defs: Vec<ResourceDef>) -> Resources {
        Resources { defs }
    }

    /// The definition behind an id handed out by this set.
    pub fn def(&self, id: ResourceId) -> &ResourceDef {
        &self.defs[id.0]
    }

    /// Every resource with its id, in declaration order.
    pub fn iter(&self) -> impl Iterator<Item = (ResourceId, &ResourceDef)> {
        self.defs
            .iter()
            .enumerate()
            .map(|(i, d)| (ResourceId(i), d))
    }

    /// Number of resources.
    pub fn len(&self) -> usize {
        self.defs.len()
    }

    /// Whether the set is empty.
    pub fn is_empty(&self) -> bool {
        self.defs.is_empty()
    }

    /// Finds a resource by group, version and plural name.
    pub fn find(&self, group: &str, version: &str, resource: &str) -> Option<ResourceId> {
        self.iter()
            .find(|(_, d)| d.group == group && d.version == version && d.resource == resource)
            .map(|(id, _)| id)
    }

    /// Finds a resource named by a [`Gvr`].
    pub fn lookup(&self, gvr: &Gvr) -> Option<ResourceId> {
        self.find(&gvr.group, &gvr.version, &gvr.resource)
    }

    /// The core `namespaces` resource, if served.
    pub fn namespaces(&self) -> Option<ResourceId> {
        self.find("", "v1", "namespaces")
    }

    /// Distinct groups (excluding core) in first-declared order, each with its versions.
    pub fn groups(&self) -> Vec<(String, Vec<String>)> {
        let mut groups: Vec<(String, Vec<String>)> = Vec::new();
        for (_, d) in self.iter().filter(|(_, d)| !d.group.is_empty()) {
            match groups.iter_mut().find(|(g, _)| *g == d.group) {
                Some((_, versions)) if !versions.contains(&d.version) => {
                    versions.push(d.version.clone())
                }
                Some(_) => {}
                None => groups.push((d.group.clone(), vec![d.version.clone()])),
            }
        }
        groups
    }
}

impl Default for Resources {
    fn default() -> Self {
        Resources::new(default_resources())
    }
}

/// The resources a default server serves: what kube-gc and its tests touch (Nodes,
/// PersistentVolumeClaims and PersistentVolumes for the pod garbage collector and the protection
/// controllers), plus one more cluster-scoped type, kube-gc's own CRDs (`deploy/crds/`): `RetentionPolicy` and
/// `ClusterRetentionPolicy`, with a status subresource, so generation moves on spec changes
/// only, and the CustomResourceDefinitions of the custom resources ([`crate::crds`]).
pub fn default_resources() -> Vec<ResourceDef> {
    vec![
        // No `deletecollection` of namespaces on a real server (exchange 94).
        ResourceDef::new("", "v1", "namespaces", "Namespace")
            .returning_deleted_object()
            .cluster_scoped()
            .with_status()
            .with_verbs(&[
                "create", "delete", "get", "list", "patch", "update", "watch",
            ])
            .with_short_names(&["ns"]),
        ResourceDef::new("", "v1", "pods", "Pod")
            .with_status()
            .returning_deleted_object()
            .deleted_gracefully()
            .with_short_names(&["po"])
            .with_categories(&["all"]),
        ResourceDef::new("", "v1", "nodes", "Node")
            .cluster_scoped()
            .with_status()
            .with_short_names(&["no"]),
        ResourceDef::new("", "v1", "persistentvolumeclaims", "PersistentVolumeClaim")
            .returning_deleted_object()
            .with_status()
            .with_short_names(&["pvc"]),
        ResourceDef::new("", "v1", "persistentvolumes", "PersistentVolume")
            .cluster_scoped()
            .returning_deleted_object()
            .with_status()
            .with_short_names(&["pv"]),
        ResourceDef::new("", "v1", "configmaps", "ConfigMap").with_short_names(&["cm"]),
        ResourceDef::new("", "v1", "secrets", "Secret"),
        ResourceDef::new("", "v1", "events", "Event").with_short_names(&["ev"]),
        ResourceDef::new("apps", "v1", "deployments", "Deployment")
            .with_status()
            .tracking_generation()
            .with_short_names(&["deploy"])
            .with_categories(&["all"]),
        ResourceDef::new("apps", "v1", "replicasets", "ReplicaSet")
            .with_status()
            .tracking_generation()
            .with_short_names(&["rs"])
            .with_categories(&["all"]),
        ResourceDef::new("batch", "v1", "jobs", "Job")
            .with_status()
            .tracking_generation()
            .with_default_deletion(DefaultDeletion::Orphan)
            .with_categories(&["all"]),
        ResourceDef::new("coordination.k8s.io", "v1", "leases", "Lease"),
        ResourceDef::new("events.k8s.io", "v1", "events", "Event").with_short_names(&["ev"]),
        ResourceDef::new(
            "rbac.authorization.k8s.io",
            "v1",
            "clusterroles",
            "ClusterRole",
        )
        .cluster_scoped(),
        ResourceDef::new("batch.volcano.sh", "v1alpha1", "jobs", "Job")
            .with_status()
            .custom()
            .with_short_names(&["vcjob", "vj"]),
        ResourceDef::new(
            "kube-gc.io",
            "v1alpha1",
            "retentionpolicies",
            "RetentionPolicy",
        )
        .with_status()
        .custom()
        .with_short_names(&["rp"])
        .with_categories(&["kube-gc"]),
        ResourceDef::new(
            "kube-gc.io",
            "v1alpha1",
            "clusterretentionpolicies",
            "ClusterRetentionPolicy",
        )
        .cluster_scoped()
        .with_status()
        .custom()
        .with_short_names(&["crp"])
        .with_categories(&["kube-gc"]),
        definitions_resource(),
    ]
}

/// The custom resources of the workloads the retention presets clean up, as their projects'
/// CRDs define them (every one namespaced): Argo Workflows (`workflows`, no status
/// subresource: Argo writes the status through the main resource), Tekton (`v1`), the Kubeflow
/// training operator (`v1`), the Kubeflow Spark operator (`v1beta2`) and KubeRay (`v1`).
/// Volcano Jobs are among [`default_resources`] already.
pub fn workload_custom_resources() -> Vec<ResourceDef> {
    let tekton = |resource: &str, kind: &str, short: &[&str]| {
        ResourceDef::new("tekton.dev", "v1", resource, kind)
            .with_status()
            .custom()
            .with_short_names(short)
            .with_categories(&["tekton", "tekton-pipelines"])
    };
    let kubeflow = |resource: &str, kind: &str| {
        ResourceDef::new("kubeflow.org", "v1", resource, kind)
            .with_status()
            .custom()
    };
    vec![
        ResourceDef::new("argoproj.io", "v1alpha1", "workflows", "Workflow")
            .custom()
            .with_short_names(&["wf"]),
        tekton("pipelineruns", "PipelineRun", &["pr", "prs"]),
        tekton("taskruns", "TaskRun", &["tr", "trs"]),
        kubeflow("pytorchjobs", "PyTorchJob"),
        kubeflow("tfjobs", "TFJob"),
        kubeflow("mpijobs", "MPIJob"),
        kubeflow("xgboostjobs", "XGBoostJob"),
        kubeflow("paddlejobs", "PaddleJob"),
        ResourceDef::new(
            "sparkoperator.k8s.io",
            "v1beta2",
            "sparkapplications",
            "SparkApplication",
        )
        .with_status()
        .custom()
        .with_short_names(&["sparkapp"]),
        ResourceDef::new("ray.io", "v1", "rayjobs", "RayJob")
            .with_status()
            .custom()
            .with_categories(&["all"]),
    ]
}

/// The group of CustomResourceDefinitions.
const DEFINITIONS_GROUP: &str = "apiextensions.k8s.io";
/// Their plural.
const DEFINITIONS_RESOURCE: &str = "customresourcedefinitions";

/// The CustomResourceDefinition resource as a v1.28 server's discovery describes it (what its
/// objects do is [`crate::crds`]'s).
pub fn definitions_resource() -> ResourceDef {
    ResourceDef::new(
        DEFINITIONS_GROUP,
        "v1",
        DEFINITIONS_RESOURCE,
        "CustomResourceDefinition",
    )
    .cluster_scoped()
    .with_status()
    .tracking_generation()
    .with_short_names(&["crd", "crds"])
    .with_categories(&["api-extensions"])
}

/// Whether `def` is the CustomResourceDefinition resource.
pub fn is_definitions(def: &ResourceDef) -> bool {
    def.group == DEFINITIONS_GROUP && def.resource == DEFINITIONS_RESOURCE
}

/// The resources no longer served because their definition was deleted (a real server's
/// apiextensions controllers stop serving them), shared by the router and the definitions'
/// handlers.
pub type Unserved = parking_lot::RwLock<std::collections::HashSet<ResourceId>>;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_resources_by_group_version_and_name() {
        let resources = Resources::default();
        let jobs = resources
            .find("batch", "v1", "jobs")
            .map(|id| resources.def(id));
        assert_eq!(jobs.map(|d| d.kind.as_str()), Some("Job"));
        let vcjobs = resources.lookup(&Gvr::new("batch.volcano.sh", "v1alpha1", "jobs"));
        assert!(vcjobs.is_some_and(|id| resources.def(id).is_custom));
        assert!(resources.find("batch", "v2", "jobs").is_none());
    }

    #[test]
    fn names_render_like_the_api_server() {
        let resources = Resources::default();
        let job = resources.def(
            resources
                .find("batch", "v1", "jobs")
                .unwrap_or(ResourceId(0)),
        );
        assert_eq!(job.api_version(), "batch/v1");
        assert_eq!(job.qualified_kind(), "Job.batch");
        assert_eq!(job.list_kind(), "JobList");
        assert_eq!(job.default_deletion, DefaultDeletion::Orphan);
        let ns = resources.def(resources.namespaces().unwrap_or(ResourceId(0)));
        assert_eq!(ns.api_version(), "v1");
        assert!(!ns.namespaced);
    }

    /// kube-gc's own resources are served as `deploy/crds/` defines them: the CRD files are
    /// the schema's one source (`tests/deploy_manifests.rs` holds the controllers' names to
    /// the same files).
    #[test]
    fn the_retention_policies_are_served_as_their_crds_define_them() {
        let resources = Resources::default();
        for (file, namespaced, short) in [
            (
                include_str!("../../../deploy/crds/kube-gc.io_retentionpolicies.yaml"),
                true,
                "rp",
            ),
            (
                include_str!("../../../deploy/crds/kube-gc.io_clusterretentionpolicies.yaml"),
                false,
                "crp",
            ),
        ] {
            let crd: serde_json::Value = serde_saphyr::from_str(file).expect("the CRD parses");
            let spec = &crd["spec"];
            let text = |value: &serde_json::Value| value.as_str().unwrap_or_default().to_owned();
            let (group, plural) = (text(&spec["group"]), text(&spec["names"]["plural"]));
            let version = text(&spec["versions"][0]["name"]);
            let def = resources
                .find(&group, &version, &plural)
                .map(|id| resources.def(id));
            let def = def.unwrap_or_else(|| panic!("{plural} is not served"));
            assert_eq!(def.namespaced, namespaced, "{plural}");
            assert_eq!(spec["scope"] == "Namespaced", namespaced, "{plural}");
            assert!(def.has_status && def.is_custom && def.tracks_generation);
            assert!(spec["versions"][0]["subresources"]["status"].is_object());
            assert_eq!(def.short_names, [short]);
            assert_eq!(spec["names"]["shortNames"], serde_json::json!([short]));
            assert_eq!(def.categories, ["kube-gc"]);
            assert_eq!(spec["names"]["categories"], serde_json::json!(["kube-gc"]));
            assert_eq!(
                def.singular,
                plural.trim_end_matches("ies").to_owned() + "y"
            );
            assert_eq!(text(&spec["names"]["singular"]), def.singular);
        }
    }

    #[test]
    fn the_workload_resources_are_custom_namespaced_and_not_served_by_default() {
        let defaults = Resources::default();
        let workloads = workload_custom_resources();
        assert_eq!(workloads.len(), 10);
        for def in &workloads {
            assert!(def.is_custom && def.namespaced, "{}", def.resource);
            assert_eq!(def.singular, def.kind.to_lowercase());
            assert!(defaults
                .find(&def.group, &def.version, &def.resource)
                .is_none());
        }
        let argo = workloads.iter().find(|d| d.group == "argoproj.io");
        assert!(argo.is_some_and(|d| !d.has_status));
        assert_eq!(workloads.iter().filter(|d| d.has_status).count(), 9);
    }

    #[test]
    fn groups_are_listed_once_in_declaration_order() {
        let groups = Resources::default().groups();
        let names: Vec<&str> = groups.iter().map(|(g, _)| g.as_str()).collect();
        assert_eq!(names[0], "apps");
        assert_eq!(names.iter().filter(|g| **g == "batch").count(), 1);
        assert!(names.contains(&"batch.volcano.sh"));
    }
}
