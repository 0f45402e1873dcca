//! The read-only requests behind `kube-gc explain`: the object, its owners, the retention
//! policies and namespaces, the object's history group, the objects that depend on it, and
//! its Events; for a Pod, a claim or a volume what the pod garbage collector and the protection
//! controllers read (`storage.rs`); for a namespace being deleted, its content (`namespace.rs`).
//!
//! Contract: only GET and LIST, through the client it is given; each request is made only when
//! the answer needs it (the dependents only for an object being deleted or whose owner waits on
//! it; the siblings only when a policy with history limits governs the resource; every Pod only
//! for a terminated Pod; a namespace's content only while the namespace controller deletes it).
//! A request that fails is an error naming what was asked — except the Events, which are a
//! courtesy, and a namespace's content, whose every unreadable resource the answer names.

mod namespace;
mod storage;

pub(crate) use namespace::namespace_facts;
pub use namespace::{NamespaceContent, NamespaceFacts, PodState};
pub(crate) use storage::{claims, every_node, every_pod, is, pods_as_claims, volumes};
pub use storage::{NodeLookup, PodContext, StorageContext};

use std::collections::BTreeMap;

use serde_json::Value;

use kube_gc_api::{ObjectMeta, OwnerReference, PartialObjectMetadata};
use kube_gc_client::{Api, Client, Discovery, ListParams, ResourceRef};
use kube_gc_controllers::garbagecollector::graph::FOREGROUND_FINALIZER;
use kube_gc_controllers::retention::engine::{cluster_policies, namespaced_policies};
use kube_gc_controllers::retention::policy::RetentionPolicyObject;

use super::resolve::{resolve, UnknownType};
pub use super::Related;
use super::Settings;

/// What was asked: `TYPE/NAME` in a namespace.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Target {
    /// The type as typed (`jobs`, `po`, `pipelineruns.tekton.dev`).
    pub type_: String,
    /// The name.
    pub name: String,
    /// The namespace (ignored for cluster-scoped types).
    pub namespace: String,
}

/// Why the facts could not be gathered.
#[derive(Debug, thiserror::Error)]
pub enum GatherError {
    /// The type names nothing served.
    #[error(transparent)]
    Type(#[from] UnknownType),
    /// No such object.
    #[error("{resource} {name:?} not found{}", namespace.as_deref().map(|n| format!(" in namespace {n:?}")).unwrap_or_default())]
    NotFound {
        /// The resource, as `kind.group`.
        resource: String,
        /// The namespace searched.
        namespace: Option<String>,
        /// The name.
        name: String,
    },
    /// A label selector (`-l`) that does not parse.
    #[error("invalid label selector {selector:?}: {message}")]
    Selector {
        /// The selector as given.
        selector: String,
        /// What is wrong with it, as the API server says it.
        message: String,
    },
    /// A request failed.
    #[error("{what}: {source}")]
    Api {
        /// What was being read.
        what: String,
        /// What the client said.
        #[source]
        source: kube_gc_client::Error,
    },
    /// A read only one controller needs was refused (403): an identity with the RBAC of an
    /// install that does not run that controller (the managed overlay's, without the garbage
    /// collector's rights) meets this when the command assumes every controller.
    #[error(
        "{source} ({controller} reads it; if kube-gc does not run {controller} here, \
         leave it out with --controllers, as `kube-gc run` takes it)"
    )]
    RefusedFor {
        /// The controller whose read it was.
        controller: &'static str,
        /// The refusal.
        #[source]
        source: Box<GatherError>,
    },
}

impl GatherError {
    /// This error, saying which controller needed the read when the server refused it.
    pub fn needed_by(self, controller: &'static str) -> GatherError {
        match &self {
            GatherError::Api { source, .. } if source.is_forbidden() => GatherError::RefusedFor {
                controller,
                source: Box::new(self),
            },
            _ => self,
        }
    }
}

/// An owner reference, and what is found where it points.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum OwnerState {
    /// The owner exists (`deleting_dependents`: being deleted in the foreground).
    Exists {
        /// The reference.
        reference: OwnerReference,
        /// It waits for its dependents to be deleted.
        deleting_dependents: bool,
    },
    /// Nothing by that name.
    Absent {
        /// The reference.
        reference: OwnerReference,
    },
    /// An object by that name, with another UID: the owner was deleted and re-created.
    Recreated {
        /// The reference.
        reference: OwnerReference,
        /// The UID found.
        uid: String,
    },
    /// Its kind is not served: the collector cannot tell, and does nothing.
    NotServed {
        /// The reference.
        reference: OwnerReference,
    },
    /// Where the facts were read, the owner could not be told apart from absent (a running
    /// kube-gc's graph that has not listed, or does not watch, the owner's kind).
    NotCached {
        /// The reference.
        reference: OwnerReference,
        /// Why, in a sentence.
        why: String,
    },
    /// A cluster-scoped object naming a namespaced owner: never collected.
    InvalidClusterScoped {
        /// The reference.
        reference: OwnerReference,
    },
}

/// Everything the decisions read.
#[derive(Clone, Debug)]
pub struct Gathered {
    /// The object's resource.
    pub resource: ResourceRef,
    /// The object.
    pub object: Value,
    /// Both policy kinds, if the CRDs are served (`true`: a `ClusterRetentionPolicy`).
    pub policies: Option<Vec<(RetentionPolicyObject, bool)>>,
    /// Namespaces and their labels.
    pub namespaces: BTreeMap<String, BTreeMap<String, String>>,
    /// Every served resource, in every version: the engine resolves a policy's target among
    /// them all, and so does explain.
    pub served: Vec<ResourceRef>,
    /// The other objects of its resource in its namespace (for history ranks), if needed.
    pub siblings: Vec<Value>,
    /// Its owners.
    pub owners: Vec<OwnerState>,
    /// Objects with owner references in its namespace, if needed (dependents, recursively).
    pub related: Vec<Related>,
    /// Its Events.
    pub events: Vec<Value>,
    /// What `run`'s flags set that the decisions read.
    pub settings: Settings,
    /// For a Pod: what the pod garbage collector reads.
    pub pod: Option<PodContext>,
    /// For a claim or a volume: what its protection controller reads.
    pub storage: Option<StorageContext>,
    /// For a namespace: what the namespace controller reads (its content while it deletes it).
    pub namespace: Option<NamespaceFacts>,
}

impl Gathered {
    /// The object's metadata.
    pub fn meta(&self) -> ObjectMeta {
        serde_json::from_value(self.object["metadata"].clone()).unwrap_or_default()
    }
}

/// Reads everything `decide` needs about `target`, with `run`'s defaults.
///
/// # Errors
///
/// [`GatherError`] naming what could not be read.
pub async fn gather(
    client: &Client,
    discovery: &Discovery,
    target: &Target,
) -> Result<Gathered, GatherError> {
    gather_with(client, discovery, target, Settings::default()).await
}

/// Reads everything `decide` needs about `target`, assuming `settings`.
///
/// # Errors
///
/// [`GatherError`] naming what could not be read.
pub async fn gather_with(
    client: &Client,
    discovery: &Discovery,
    target: &Target,
    settings: Settings,
) -> Result<Gathered, GatherError> {
    let resource = resolve(discovery, &target.type_)?;
    let namespace = resource.namespaced.then_some(target.namespace.as_str());
    let api: Api<Value> = Api::dynamic(client.clone(), resource.clone(), namespace);
    let object = match api.get_opt(&target.name).await {
        Ok(Some(object)) => object,
        Ok(None) => {
            return Err(GatherError::NotFound {
                resource: format!("{}.{}", resource.plural, resource.group)
                    .trim_end_matches('.')
                    .to_owned(),
                namespace: namespace.map(str::to_owned),
                name: target.name.clone(),
            })
        }
        Err(source) => {
            return Err(api_error(
                format!("get {} {}", resource.path_name(), target.name),
                source,
            ))
        }
    };
    let served = every_version(discovery);
    let mut gathered = Gathered {
        resource,
        object,
        policies: None,
        namespaces: BTreeMap::new(),
        served,
        siblings: Vec::new(),
        owners: Vec::new(),
        related: Vec::new(),
        events: Vec::new(),
        settings,
        pod: None,
        storage: None,
        namespace: None,
    };
    gathered.policies = read_policies(client, &gathered.served).await?;
    if gathered.policies.is_some() {
        gathered.namespaces = read_namespaces(client).await?;
        if has_history_limits(gathered.policies.as_deref().unwrap_or_default()) {
            let list = Api::<Value>::dynamic(client.clone(), gathered.resource.clone(), namespace);
            gathered.siblings = list_all(&list, "list the object's siblings").await?;
        }
    }
    let meta = gathered.meta();
    gathered.owners = owners(client, discovery, &meta, namespace).await?;
    let owner_waits = gathered.owners.iter().any(|o| {
        matches!(
            o,
            OwnerState::Exists {
                deleting_dependents: true,
                ..
            }
        )
    });
    let is_namespace = is(&gathered.resource, &namespace::namespaces());
    if (meta.deletion_timestamp.is_some() || owner_waits) && !is_namespace {
        gathered.related = related(client, discovery, namespace).await?;
    }
    if is(
        &gathered.resource,
        &kube_gc_controllers::podgc::pod_resource(),
    ) {
        gathered.pod = storage::pod_context(client, &gathered.object).await?;
    }
    gathered.storage =
        storage::storage_context(client, &gathered.resource, &gathered.object).await?;
    if is_namespace {
        gathered.namespace = namespace::namespace_facts(client, discovery, &gathered.object).await;
    }
    gathered.events = events(
        client,
        meta.namespace.as_deref().unwrap_or("default"),
        meta.uid.as_deref().unwrap_or(""),
    )
    .await;
    Ok(gathered)
}

fn api_error(what: String, source: kube_gc_client::Error) -> GatherError {
    GatherError::Api { what, source }
}

async fn list_all(api: &Api<Value>, what: &str) -> Result<Vec<Value>, GatherError> {
    api.list(&ListParams::default())
        .await
        .map(|list| list.items)
        .map_err(|source| api_error(what.to_owned(), source))
}

fn has_history_limits(policies: &[(RetentionPolicyObject, bool)]) -> bool {
    policies.iter().any(|(p, _)| {
        p.spec.successful_history_limit.is_some() || p.spec.failed_history_limit.is_some()
    })
}

/// Whether `resource` is among `served`.
pub(super) fn serves(served: &[ResourceRef], resource: &ResourceRef) -> bool {
    served.iter().any(|s| s.is_same_resource(resource))
}

/// Every resource discovery found, in every version.
pub(super) fn every_version(discovery: &Discovery) -> Vec<ResourceRef> {
    discovery
        .resources()
        .iter()
        .map(|r| r.resource.clone())
        .collect()
}

/// Both policy kinds, or `None` when the CRDs are not served.
pub(super) async fn read_policies(
    client: &Client,
    served: &[ResourceRef],
) -> Result<Option<Vec<(RetentionPolicyObject, bool)>>, GatherError> {
    let (namespaced, cluster) = (namespaced_policies(), cluster_policies());
    if !serves(served, &namespaced) || !serves(served, &cluster) {
        return Ok(None);
    }
    let mut found = Vec::new();
    for (resource, is_cluster) in [(namespaced, false), (cluster, true)] {
        let api: Api<RetentionPolicyObject> = Api::dynamic(client.clone(), resource.clone(), None);
        let list = api
            .list(&ListParams::default())
            .await
            .map_err(|source| api_error(format!("list {}", resource.path_name()), source))?;
        found.extend(list.items.into_iter().map(|p| (p, is_cluster)));
    }
    Ok(Some(found))
}

/// Every namespace's labels.
pub(super) async fn read_namespaces(
    client: &Client,
) -> Result<BTreeMap<String, BTreeMap<String, String>>, GatherError> {
    let resource = ResourceRef::new("", "v1", "namespaces", "Namespace", false);
    let api: Api<Value> = Api::dynamic(client.clone(), resource, None);
    let list = api
        .list_metadata(&ListParams::default())
        .await
        .map_err(|source| api_error("list v1/namespaces".to_owned(), source))?;
    Ok(list
        .items
        .into_iter()
        .filter_map(|ns| Some((ns.metadata.name?, ns.metadata.labels)))
        .collect())
}

/// Looks each owner up where it must live.
async fn owners(
    client: &Client,
    discovery: &Discovery,
    meta: &ObjectMeta,
    namespace: Option<&str>,
) -> Result<Vec<OwnerState>, GatherError> {
    let mut states = Vec::new();
    for reference in &meta.owner_references {
        let reference = reference.clone();
        let Some(found) = discovery.resource_for_kind(&reference.api_version, &reference.kind)
        else {
            states.push(OwnerState::NotServed { reference });
            continue;
        };
        let resource = found.resource.clone();
        if namespace.is_none() && resource.namespaced {
            states.push(OwnerState::InvalidClusterScoped { reference });
            continue;
        }
        let api: Api<Value> = Api::dynamic(
            client.clone(),
            resource.clone(),
            namespace.filter(|_| resource.namespaced),
        );
        let owner: Option<PartialObjectMetadata> = match api.get_metadata(&reference.name).await {
            Ok(owner) => Some(owner),
            Err(e) if e.is_not_found() => None,
            Err(source) => {
                return Err(api_error(
                    format!("get owner {} {}", reference.kind, reference.name),
                    source,
                ))
            }
        };
        states.push(match owner {
            None => OwnerState::Absent { reference },
            Some(owner) if owner.metadata.uid.as_deref() != Some(reference.uid.as_str()) => {
                OwnerState::Recreated {
                    uid: owner.metadata.uid.unwrap_or_default(),
                    reference,
                }
            }
            Some(owner) => OwnerState::Exists {
                deleting_dependents: owner.metadata.deletion_timestamp.is_some()
                    && owner
                        .metadata
                        .finalizers
                        .iter()
                        .any(|f| f == FOREGROUND_FINALIZER),
                reference,
            },
        });
    }
    Ok(states)
}

/// Every object with owner references in `namespace` (all namespaces for a cluster-scoped
/// object), across the resources the garbage collector watches.
async fn related(
    client: &Client,
    discovery: &Discovery,
    namespace: Option<&str>,
) -> Result<Vec<Related>, GatherError> {
    let mut related = Vec::new();
    for resource in discovery.deletable() {
        let scope = namespace.filter(|_| resource.namespaced);
        let api: Api<Value> = Api::dynamic(client.clone(), resource.clone(), scope);
        let list = api
            .list_metadata(&ListParams::default())
            .await
            .map_err(|source| api_error(format!("list {}", resource.path_name()), source))?;
        related.extend(
            list.items
                .into_iter()
                .filter(|o| !o.metadata.owner_references.is_empty())
                .map(|o| Related {
                    resource: resource.clone(),
                    meta: o.metadata,
                }),
        );
    }
    Ok(related)
}

/// The Events about `uid` in `namespace`; none if they cannot be read.
async fn events(client: &Client, namespace: &str, uid: &str) -> Vec<Value> {
    let resource = ResourceRef::new("", "v1", "events", "Event", true);
    let api: Api<Value> = Api::dynamic(client.clone(), resource, Some(namespace));
    let Ok(list) = api.list(&ListParams::default()).await else {
        return Vec::new();
    };
    list.items
        .into_iter()
        .filter(|e| e["involvedObject"]["uid"] == uid || e["regarding"]["uid"] == uid)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use kube_gc_client::ApiError;

    fn refused(code: u16) -> GatherError {
        let answer =
            ApiError::from_response(code, &http::HeaderMap::new(), b"configmaps is forbidden");
        GatherError::Api {
            what: "list v1/configmaps".to_owned(),
            source: answer.into(),
        }
    }

    #[test]
    fn a_refused_read_names_the_controller_that_needs_it_and_how_to_leave_it_out() {
        let said = refused(403).needed_by("garbagecollector").to_string();
        assert!(
            said.starts_with("list v1/configmaps: API server answered 403 Forbidden")
                && said.ends_with(
                    "(garbagecollector reads it; if kube-gc does not run garbagecollector \
                     here, leave it out with --controllers, as `kube-gc run` takes it)"
                ),
            "{said}"
        );
        // Any other failure is the failure alone.
        let failed = refused(500).needed_by("garbagecollector");
        assert!(matches!(failed, GatherError::Api { .. }), "{failed}");
    }
}
