//! What the explanation of a namespace reads: the namespace, and — while it is being deleted —
//! its content, as `kube-gc explain` lists it or a running kube-gc caches it.

use std::collections::BTreeMap;

use chrono::{DateTime, Utc};

use crate::explain::gather::Related;
use kube_gc_api::NamespaceCondition;
use kube_gc_client::ResourceRef;
use kube_gc_controllers::namespace::decide::{
    Content, ContentType, FailedGroup, Progress, Subject,
};
use kube_gc_controllers::podgc::{NodeFacts, PodFacts};
use kube_gc_controllers::protection::{ClaimFacts, PodClaims};

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
