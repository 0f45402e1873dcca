//! A namespace as the explanation reads it ([`NamespaceFacts`]: the namespace, and — while it is
//! being deleted — its content, as `kube-gc explain` lists it or a running kube-gc caches it),
//! and the read-only requests behind `kube-gc explain namespaces/NAME`: for a namespace the
//! namespace controller is deleting, one LIST of each resource it must empty (metadata only; Pods whole,
//! as the pod garbage collector and the PVC protection controller read them) and, when a Pod is
//! bound to a node, one LIST of the nodes.
//!
//! Contract: the resources are the namespace controller's own (`content_types`, from the same
//! discovery), so what is listed is what it would have to delete; a LIST that fails is not an
//! error — that resource is unknown, and the answer says why — since one resource the caller
//! may not read must not hide what holds the rest.

use std::collections::{BTreeMap, BTreeSet};

use serde_json::Value;

use chrono::{DateTime, Utc};

use kube_gc_api::{Namespace, NamespaceCondition};
use kube_gc_api::{ObjectMeta, PartialObjectMetadata};
use kube_gc_client::{Api, Client, Discovery, ListParams, ResourceRef};
use kube_gc_controllers::namespace::decide::is_ours;
use kube_gc_controllers::namespace::decide::{
    is_pods, Content, ContentType, FailedGroup, Known, Object, Progress, Subject,
};
use kube_gc_controllers::namespace::shared::{content_types, failed_groups};
use kube_gc_controllers::namespace::CachedNamespace;
use kube_gc_controllers::podgc::{node_resource, NodeFacts, PodFacts};
use kube_gc_controllers::protection::{claim_resource, ClaimFacts, PodClaims};

use super::storage::{every_node, is};
use super::Related;

/// One Pod of the namespace, as the chains of blockers read it.
#[derive(Clone, Debug)]
pub struct PodState {
    /// As the pod garbage collector sees it.
    pub facts: PodFacts,
    /// As the PVC protection controller sees it.
    pub claims: PodClaims,
    /// `metadata.deletionTimestamp`: for a Pod, when its grace period ends.
    pub grace_ends: Option<DateTime<Utc>>,
    /// `metadata.deletionGracePeriodSeconds`.
    pub grace_seconds: Option<i64>,
}

/// A namespace's content, and what the chains of blockers read beside it.
#[derive(Clone, Debug, Default)]
pub struct NamespaceContent {
    /// What namespace deletion must empty, by the discovery at hand.
    pub types: Vec<ContentType>,
    /// The group versions that discovery could not read.
    pub failed: Vec<FailedGroup>,
    /// One entry per type: what is known of its objects in the namespace.
    pub content: Vec<Content>,
    /// What earlier passes asked and proved (a running kube-gc's; nothing for a fresh read,
    /// whose LISTs are the proof).
    pub progress: Progress,
    /// Resources whose content could not be read here, and why.
    pub unreadable: Vec<(ResourceRef, String)>,
    /// Objects of the namespace with owner references (the dependents a foreground deletion
    /// waits for); `None` when the source does not keep them.
    pub related: Option<Vec<Related>>,
    /// The namespace's Pods; `None` when the source does not keep them.
    pub pods: Option<Vec<PodState>>,
    /// The namespace's claims; `None` when the source does not keep them.
    pub claims: Option<Vec<ClaimFacts>>,
    /// The nodes its terminating Pods are bound to (`None`: no such node).
    pub nodes: BTreeMap<String, Option<NodeFacts>>,
    /// Where it comes from, in a sentence ("listed now", "kube-gc's caches").
    pub source: String,
}

/// A namespace as the explanation reads it.
#[derive(Clone, Debug)]
pub struct NamespaceFacts {
    /// As the namespace controller judges it.
    pub subject: Subject,
    /// `metadata.finalizers`.
    pub finalizers: Vec<String>,
    /// `status.phase`.
    pub phase: Option<String>,
    /// `status.conditions`.
    pub conditions: Vec<NamespaceCondition>,
    /// Its content, while it is being deleted by the namespace controller.
    pub content: Option<NamespaceContent>,
    /// When the discovery behind `content` started (`None`: at the moment of the answer).
    pub discovered_at: Option<DateTime<Utc>>,
}

impl NamespaceContent {
    /// The Pod called `name`, if the source keeps Pods.
    pub(crate) fn pod(&self, name: &str) -> Option<&PodState> {
        self.pods
            .as_ref()?
            .iter()
            .find(|p| p.facts.key.name() == name)
    }

    /// The claim called `name`, if the source keeps claims.
    pub(crate) fn claim(&self, name: &str) -> Option<&ClaimFacts> {
        self.claims.as_ref()?.iter().find(|c| c.key.name() == name)
    }
}

pub(super) fn namespaces() -> ResourceRef {
    ResourceRef::new("", "v1", "namespaces", "Namespace", false)
}

/// The namespace in `object` and, while the namespace controller deletes it, its content.
pub(crate) async fn namespace_facts(
    client: &Client,
    discovery: &Discovery,
    object: &Value,
) -> Option<NamespaceFacts> {
    let cached = CachedNamespace::from_raw(object.clone()).ok()?;
    let subject = cached.subject();
    let content: Option<NamespaceContent> = if is_ours(&subject) {
        Some(namespace_content(client, discovery, &subject.name).await)
    } else {
        None
    };
    let Namespace {
        metadata, status, ..
    } = cached.namespace;
    Some(NamespaceFacts {
        subject,
        finalizers: metadata.finalizers,
        phase: status.phase,
        conditions: status.conditions,
        content,
        discovered_at: None,
    })
}

/// Lists what namespace `name` holds.
async fn namespace_content(client: &Client, discovery: &Discovery, name: &str) -> NamespaceContent {
    let types = content_types(discovery);
    let mut found = NamespaceContent {
        failed: failed_groups(discovery),
        related: Some(Vec::new()),
        pods: Some(Vec::new()),
        claims: Some(Vec::new()),
        source: "listed by this command".to_owned(),
        ..NamespaceContent::default()
    };
    for kind in &types {
        let resource = &kind.resource;
        let known = match list(client, resource, name).await {
            Ok(items) => {
                let objects = items.iter().map(|(meta, _)| object(meta)).collect();
                keep_details(&mut found, resource, items);
                Known::Listed {
                    objects,
                    more: false,
                }
            }
            Err(message) => {
                found.unreadable.push((resource.clone(), message));
                Known::Unknown
            }
        };
        found.content.push(Content {
            kind: kind.clone(),
            known,
            failure: None,
        });
    }
    found.types = types;
    found.progress = Progress {
        // This read's LIST of the Pods is the proof the controller would make.
        pods_gone: found.content.iter().any(|c| {
            c.kind.is_pods()
                && matches!(&c.known, Known::Listed { objects, .. } if objects.is_empty())
        }),
        ..Progress::default()
    };
    nodes_of_pods(client, &mut found).await;
    found
}

/// Every object of `resource` in `namespace`: its metadata, and the whole object for Pods.
async fn list(
    client: &Client,
    resource: &ResourceRef,
    namespace: &str,
) -> Result<Vec<(ObjectMeta, Option<Value>)>, String> {
    let api: Api<Value> = Api::dynamic(client.clone(), resource.clone(), Some(namespace));
    let what = |e: kube_gc_client::Error| format!("list {}: {e}", resource.path_name());
    if is_pods(resource) {
        let list = api.list(&ListParams::default()).await.map_err(what)?;
        return Ok(list
            .items
            .into_iter()
            .map(|pod| {
                let meta = serde_json::from_value(pod["metadata"].clone()).unwrap_or_default();
                (meta, Some(pod))
            })
            .collect());
    }
    let list = api
        .list_metadata(&ListParams::default())
        .await
        .map_err(what)?;
    Ok(list
        .items
        .into_iter()
        .map(|o: PartialObjectMetadata| (o.metadata, None))
        .collect())
}

/// The namespace controller's view of one object.
fn object(meta: &ObjectMeta) -> Object {
    Object {
        name: meta.name.clone().unwrap_or_default(),
        uid: meta.uid.clone().unwrap_or_default(),
        finalizers: meta.finalizers.clone(),
        deleting: meta.deletion_timestamp.is_some(),
    }
}

/// Keeps what the chains read: owner references, Pods, claims.
fn keep_details(
    found: &mut NamespaceContent,
    resource: &ResourceRef,
    items: Vec<(ObjectMeta, Option<Value>)>,
) {
    for (meta, whole) in items {
        if is(resource, &claim_resource()) {
            let as_json = serde_json::json!({ "metadata": &meta });
            if let (Ok(claim), Some(claims)) = (
                serde_json::from_value::<ClaimFacts>(as_json),
                found.claims.as_mut(),
            ) {
                claims.push(claim);
            }
        }
        if let (Some(pod), Some(pods)) = (&whole, found.pods.as_mut()) {
            if let Some(state) = pod_state(pod, &meta) {
                pods.push(state);
            }
        }
        if !meta.owner_references.is_empty() {
            if let Some(related) = found.related.as_mut() {
                related.push(Related {
                    resource: resource.clone(),
                    meta,
                });
            }
        }
    }
}

fn pod_state(pod: &Value, meta: &ObjectMeta) -> Option<PodState> {
    let facts: PodFacts = serde_json::from_value(pod.clone()).ok()?;
    let claims: PodClaims = serde_json::from_value(pod.clone()).ok()?;
    Some(PodState {
        facts,
        claims,
        grace_ends: meta.deletion_timestamp.map(|t| t.0),
        grace_seconds: meta.deletion_grace_period_seconds,
    })
}

/// The nodes the namespace's Pods are bound to (`None`: no such node), from one LIST of the
/// nodes made only when some Pod is bound to one; a LIST refused leaves them unknown, and says
/// so.
async fn nodes_of_pods(client: &Client, found: &mut NamespaceContent) {
    let names: BTreeSet<String> = found
        .pods
        .iter()
        .flatten()
        .filter(|p| p.facts.is_scheduled())
        .map(|p| p.facts.node_name.clone())
        .collect();
    if names.is_empty() {
        return;
    }
    match every_node(client).await {
        Ok(nodes) => {
            let mut by_name: BTreeMap<String, NodeFacts> =
                nodes.into_iter().map(|n| (n.name.clone(), n)).collect();
            found.nodes = names
                .into_iter()
                .map(|name| {
                    let node = by_name.remove(&name);
                    (name, node)
                })
                .collect();
        }
        Err(error) => found.unreadable.push((node_resource(), error.to_string())),
    }
}
