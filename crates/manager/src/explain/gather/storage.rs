//! What the pod garbage collector and the storage protection controllers read about one object,
//! for `kube-gc explain`: a Pod's node (and, for a terminated Pod, every Pod, which the
//! threshold counts), a claim's Pods, a volume's claims. Also the readers `plan` shares.
//!
//! Contract: GET and LIST only; each read is made only for the kind that needs it; Pods are
//! read as the controllers' own projections (`PodFacts`, `PodClaims`), never whole.

use serde_json::Value;

use kube_gc_client::{Api, Client, ListParams, ResourceRef};
use kube_gc_controllers::podgc::{node_resource, pod_resource, NodeFacts, PodFacts};
use kube_gc_controllers::protection::{
    claim_resource, volume_resource, ClaimFacts, PodClaims, VolumeFacts,
};

use super::{api_error, GatherError};

/// What is known of the node a Pod is bound to.
#[derive(Clone, Debug)]
pub enum NodeLookup {
    /// Not bound to a node.
    NotScheduled,
    /// Read from the server.
    Found(NodeFacts),
    /// The server has no node of that name.
    Missing,
}

/// What the pod garbage collector's decision on one Pod reads.
#[derive(Clone, Debug)]
pub struct PodContext {
    /// The Pod, as the collector caches it.
    pub facts: PodFacts,
    /// Its node.
    pub node: NodeLookup,
    /// Every Pod of the cluster, read when this one is terminated (the threshold counts them).
    pub all: Option<Vec<PodFacts>>,
}

/// What the protection controllers' decision on a claim or volume reads.
#[derive(Clone, Debug)]
pub enum StorageContext {
    /// A claim, and the Pods of its namespace.
    Claim {
        /// The claim.
        claim: ClaimFacts,
        /// Its namespace's Pods, as the claims they use.
        pods: Vec<PodClaims>,
    },
    /// A volume, and every claim.
    Volume {
        /// The volume.
        volume: VolumeFacts,
        /// Every claim.
        claims: Vec<ClaimFacts>,
    },
}

/// Whether `resource` is `of` (same group and plural, any version).
pub(crate) fn is(resource: &ResourceRef, of: &ResourceRef) -> bool {
    resource.group == of.group && resource.plural == of.plural
}

/// The Pod's facts, node and (when it is terminated) every Pod; `None` if `object` is not a
/// Pod's JSON.
pub(super) async fn pod_context(
    client: &Client,
    object: &Value,
) -> Result<Option<PodContext>, GatherError> {
    let Ok(facts) = serde_json::from_value::<PodFacts>(object.clone()) else {
        return Ok(None);
    };
    let node = if facts.is_scheduled() {
        node(client, &facts.node_name).await?
    } else {
        NodeLookup::NotScheduled
    };
    let all = if facts.phase.is_terminated() {
        Some(every_pod(client, None).await?)
    } else {
        None
    };
    Ok(Some(PodContext { facts, node, all }))
}

/// A node by name.
pub(crate) async fn node(client: &Client, name: &str) -> Result<NodeLookup, GatherError> {
    let api: Api<NodeFacts> = Api::dynamic(client.clone(), node_resource(), None);
    match api.get_opt(name).await {
        Ok(Some(found)) => Ok(NodeLookup::Found(found)),
        Ok(None) => Ok(NodeLookup::Missing),
        Err(source) => Err(api_error(format!("get node {name}"), source)),
    }
}

/// Every Pod (of `namespace`, or of the cluster), as the pod garbage collector caches them.
pub(crate) async fn every_pod(
    client: &Client,
    namespace: Option<&str>,
) -> Result<Vec<PodFacts>, GatherError> {
    let api: Api<Value> = Api::dynamic(client.clone(), pod_resource(), namespace);
    api.pager_with(ListParams::default(), PodFacts::decoder())
        .collect()
        .await
        .map(|list| list.items)
        .map_err(|source| api_error("list v1/pods".to_owned(), source))
}

/// Every Pod (of `namespace`, or of the cluster), as the claims they use.
pub(crate) async fn pods_as_claims(
    client: &Client,
    namespace: Option<&str>,
) -> Result<Vec<PodClaims>, GatherError> {
    let api: Api<Value> = Api::dynamic(client.clone(), pod_resource(), namespace);
    api.pager_with(ListParams::default(), PodClaims::decoder())
        .collect()
        .await
        .map(|list| list.items)
        .map_err(|source| api_error("list v1/pods".to_owned(), source))
}

/// Every node.
pub(crate) async fn every_node(client: &Client) -> Result<Vec<NodeFacts>, GatherError> {
    let api: Api<Value> = Api::dynamic(client.clone(), node_resource(), None);
    api.pager_with(ListParams::default(), NodeFacts::decoder())
        .collect()
        .await
        .map(|list| list.items)
        .map_err(|source| api_error("list v1/nodes".to_owned(), source))
}

/// Every claim (of `namespace`, or of the cluster), matching `params`.
pub(crate) async fn claims(
    client: &Client,
    namespace: Option<&str>,
    params: ListParams,
) -> Result<Vec<ClaimFacts>, GatherError> {
    let api: Api<Value> = Api::dynamic(client.clone(), claim_resource(), namespace);
    api.pager_with(params, ClaimFacts::decoder())
        .collect()
        .await
        .map(|list| list.items)
        .map_err(|source| api_error("list v1/persistentvolumeclaims".to_owned(), source))
}

/// Every volume matching `params`.
pub(crate) async fn volumes(
    client: &Client,
    params: ListParams,
) -> Result<Vec<VolumeFacts>, GatherError> {
    let api: Api<Value> = Api::dynamic(client.clone(), volume_resource(), None);
    api.pager_with(params, VolumeFacts::decoder())
        .collect()
        .await
        .map(|list| list.items)
        .map_err(|source| api_error("list v1/persistentvolumes".to_owned(), source))
}

/// A claim's or a volume's context; `None` for anything else.
pub(super) async fn storage_context(
    client: &Client,
    resource: &ResourceRef,
    object: &Value,
) -> Result<Option<StorageContext>, GatherError> {
    if is(resource, &claim_resource()) {
        let Ok(claim) = serde_json::from_value::<ClaimFacts>(object.clone()) else {
            return Ok(None);
        };
        let namespace = claim.key.namespace().map(str::to_owned);
        let pods = pods_as_claims(client, namespace.as_deref()).await?;
        return Ok(Some(StorageContext::Claim { claim, pods }));
    }
    if is(resource, &volume_resource()) {
        let Ok(volume) = serde_json::from_value::<VolumeFacts>(object.clone()) else {
            return Ok(None);
        };
        let claims = claims(client, None, ListParams::default()).await?;
        return Ok(Some(StorageContext::Volume { volume, claims }));
    }
    Ok(None)
}
