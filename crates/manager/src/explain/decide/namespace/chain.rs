//! What holds each object left in a namespace being deleted, down to the root cause: not deleted
//! yet (the namespace controller deletes it), a finalizer and who removes it, a foreground
//! deletion's dependents (the garbage collector's chain), a claim's Pod (the PVC protection
//! controller's `claim_release`), a Pod's grace period and what ends it (the pod garbage
//! collector's `judge` on its node).
//!
//! Contract: pure; at most [`NAMED_PER_RESOURCE`] objects of a resource are followed, the rest
//! counted; what the source does not keep is said to be unknown, never guessed.

use chrono::{DateTime, Utc};

use crate::explain::decide::{fate, foreground_blockers, relative, rfc3339, DependentIndex};
use crate::explain::finalizers::owner_of;
use crate::explain::Blocker;
use crate::selection::ControllerSelection;
use kube_gc_controllers::garbagecollector::graph::{FOREGROUND_FINALIZER, ORPHAN_FINALIZER};
use kube_gc_controllers::namespace::decide::{ContentType, Object};
use kube_gc_controllers::podgc::decide::NodeView;
use kube_gc_controllers::protection::decide::{claim_release, pod_uses_claim, Release};
use kube_gc_controllers::protection::PVC_FINALIZER;

use super::NAMED_PER_RESOURCE;
use crate::explain::gather::{NamespaceContent, PodState};

/// What the chains read besides the content.
pub(super) struct Chains<'a> {
    pub content: &'a NamespaceContent,
    pub namespace: &'a str,
    pub running: &'a ControllerSelection,
    pub now: DateTime<Utc>,
}

impl Chains<'_> {
    /// The objects of `kind` that remain, each with what holds it; those beyond the first few
    /// counted in one line.
    pub(super) fn of_resource(&self, kind: &ContentType, objects: &[Object]) -> Vec<Blocker> {
        let mut shown: Vec<Blocker> = objects
            .iter()
            .take(NAMED_PER_RESOURCE)
            .map(|o| self.object(kind, o))
            .collect();
        if objects.len() > NAMED_PER_RESOURCE {
            shown.push(Blocker {
                object: format!(
                    "{} more {}",
                    objects.len() - NAMED_PER_RESOURCE,
                    kind.resource.plural
                ),
                why: "not followed here: `kube-gc explain` each of them for its own chain"
                    .to_owned(),
                blockers: Vec::new(),
            });
        }
        shown
    }

    fn object(&self, kind: &ContentType, object: &Object) -> Blocker {
        let name = format!("{} {}/{}", kind.resource.kind, self.namespace, object.name);
        let pod = if kind.is_pods() {
            self.content.pod(&object.name)
        } else {
            None
        };
        let finalizers = object.finalizers.join(", ");
        let (why, mut below) = match (object.deleting, object.finalizers.is_empty()) {
            (false, _) => {
                let mut why = if kind.is_pods() {
                    "not deleted yet: the namespace controller deletes Pods first".to_owned()
                } else {
                    "not deleted yet: the namespace controller deletes it".to_owned()
                };
                if !object.finalizers.is_empty() {
                    why.push_str(&format!(
                        "; once deleted, its finalizers {finalizers} hold it"
                    ));
                }
                (why, self.finalizers(kind, object))
            }
            (true, false) => (
                format!("being deleted, held by its finalizers {finalizers}"),
                self.finalizers(kind, object),
            ),
            (true, true) if pod.is_some() => (String::new(), Vec::new()),
            (true, true) if kind.is_pods() => ("terminating".to_owned(), Vec::new()),
            (true, true) => (
                "being deleted: nothing holds it, it goes at once".to_owned(),
                Vec::new(),
            ),
        };
        let why = match pod {
            Some(pod) if why.is_empty() => self.terminating(pod),
            Some(pod) if !object.deleting => format!("{why}; then {}", self.fate(pod)),
            // Deleted with no grace period: only its finalizers hold it.
            Some(pod) if pod.grace_seconds == Some(0) => why,
            Some(pod) => {
                below.push(Blocker {
                    object: "its grace period".to_owned(),
                    why: self.terminating(pod),
                    blockers: Vec::new(),
                });
                why
            }
            None if kind.is_pods() && self.content.pods.is_none() => {
                format!("{why} (its grace period and node are not known here)")
            }
            None => why,
        };
        Blocker {
            object: name,
            why,
            blockers: below,
        }
    }

    /// Each finalizer of `object`, who removes it, and what it waits for.
    fn finalizers(&self, kind: &ContentType, object: &Object) -> Vec<Blocker> {
        object
            .finalizers
            .iter()
            .map(|finalizer| {
                let owner = owner_of(finalizer).line(self.running);
                let (why, blockers) = match finalizer.as_str() {
                    FOREGROUND_FINALIZER => self.foreground(object, owner),
                    ORPHAN_FINALIZER => (
                        format!("removed by {owner} once its dependents no longer refer to it"),
                        Vec::new(),
                    ),
                    PVC_FINALIZER if kind.resource.plural == "persistentvolumeclaims" => {
                        self.claim(object, owner)
                    }
                    _ => (format!("removed by {owner}"), Vec::new()),
                };
                Blocker {
                    object: format!("finalizer {finalizer}"),
                    why,
                    blockers,
                }
            })
            .collect()
    }

    fn foreground(&self, object: &Object, owner: String) -> (String, Vec<Blocker>) {
        let why = format!("removed by {owner} once its blocking dependents are deleted");
        match &self.content.related {
            Some(related) => {
                let index: &dyn DependentIndex = related;
                (why, foreground_blockers(index, &object.uid, 0))
            }
            None => (
                format!("{why} (which they are is not known here: `kube-gc explain` it)"),
                Vec::new(),
            ),
        }
    }

    /// The PVC protection finalizer of a claim: the Pod that uses it, if any.
    fn claim(&self, object: &Object, owner: String) -> (String, Vec<Blocker>) {
        let (Some(claim), Some(pods)) = (self.content.claim(&object.name), &self.content.pods)
        else {
            return (
                format!("removed by {owner} once no Pod uses it (the Pods are not known here)"),
                Vec::new(),
            );
        };
        let mut deleting = claim.clone();
        deleting.deleting = true;
        let users = pods.iter().map(|p| &p.claims);
        match claim_release(&deleting, PVC_FINALIZER, users) {
            Release::InUse(_) => {
                let using: Vec<Blocker> = pods
                    .iter()
                    .filter(|p| pod_uses_claim(&p.claims, &object.name))
                    .map(|p| Blocker {
                        object: format!("Pod {}", p.facts.key),
                        why: format!("uses it; {}", self.pod_state(p)),
                        blockers: Vec::new(),
                    })
                    .collect();
                (
                    format!("removed by {owner} once no scheduled Pod uses it"),
                    using,
                )
            }
            Release::Release { .. } | Release::NotCandidate => (
                format!("no Pod uses it: removed by {owner} as soon as it is being deleted"),
                Vec::new(),
            ),
        }
    }

    /// A Pod, in a few words: deleted or not, and what ends it.
    fn pod_state(&self, pod: &PodState) -> String {
        if pod.facts.deleting {
            self.terminating(pod)
        } else {
            format!(
                "not deleted yet (the namespace controller deletes Pods first); then {}",
                self.fate(pod)
            )
        }
    }

    /// A terminating Pod: when its grace period ends, and what removes it.
    fn terminating(&self, pod: &PodState) -> String {
        let grace = match (pod.grace_ends, pod.grace_seconds) {
            (Some(ends), Some(seconds)) => format!(
                "terminating, its {seconds}s grace period ends {} ({})",
                rfc3339(ends),
                relative(ends, self.now)
            ),
            (Some(ends), None) => format!(
                "terminating since before {} ({})",
                rfc3339(ends),
                relative(ends, self.now)
            ),
            _ => "terminating".to_owned(),
        };
        format!("{grace}; {}", self.fate(pod))
    }

    /// What removes a Pod once it is terminating: the pod garbage collector's rules on its node.
    fn fate(&self, pod: &PodState) -> String {
        let view = match self.content.nodes.get(&pod.facts.node_name) {
            Some(Some(found)) => Some(NodeView::Present(found)),
            Some(None) => Some(NodeView::Missing),
            None if !pod.facts.is_scheduled() => Some(NodeView::Missing),
            None => None,
        };
        fate(&pod.facts, view, self.running)
    }
}
