//! Classifying a dependent's owner references: which owners are solid, dangling, or waiting
//! for their dependents to be deleted.
//!
//! Contract — where each verdict comes from, cheapest first:
//! 1. The graph, when it has *observed* the owner: observed and present → solid (or waiting, if
//!    it is being deleted in the foreground); observed deleted → dangling. No request: a watch
//!    or list that reported the UID gone is proof, because UIDs are never reused.
//! 2. When the owner's type is monitored but its first list has not reached the graph → the
//!    decision is deferred, never guessed (start-up, or a new CRD).
//! 3. Otherwise (a virtual owner, or a type that is not monitored): the absent-owner cache, then
//!    a live GET in the namespace the owner must live in.
//!
//! Namespaces: a namespaced dependent's owner must be in its namespace; an owner observed
//! elsewhere is absent from the dependent's point of view (dangling) and reported with a
//! Warning `OwnerRefInvalidNamespace`. A cluster-scoped dependent naming a namespaced owner is
//! never collected (reported the same way), as upstream does.

use super::absent_owners::AbsentKey;
use super::errors::WorkError;
use super::graph::{NodeView, Presence, FOREGROUND_FINALIZER};
use super::identity::OwnerLink;
use super::Shared;
use kube_gc_api::PartialObjectMetadata;
use kube_gc_client::Api;
use kube_gc_runtime::events::{EventRecord, EventType};

/// The reason of the Warning about an owner reference across namespaces.
pub const INVALID_NAMESPACE_REASON: &str = "OwnerRefInvalidNamespace";

/// What one owner reference is worth.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Verdict {
    /// The owner exists and is not being deleted in the foreground.
    Solid,
    /// The owner does not exist (or not where it must be).
    Dangling,
    /// The owner exists and waits for its dependents to be deleted (Foreground).
    Waiting,
}

/// The verdicts on all of a dependent's owners.
#[derive(Debug, Default)]
pub struct Verdicts {
    /// Owners that exist.
    pub solid: Vec<OwnerLink>,
    /// Owners that do not.
    pub dangling: Vec<OwnerLink>,
    /// Owners waiting for their dependents.
    pub waiting: Vec<OwnerLink>,
}

/// The outcome of classifying all owners.
#[derive(Debug)]
pub enum Classification {
    /// Every owner has a verdict.
    Ready(Verdicts),
    /// An owner's type has not synced yet: decide later.
    Defer,
    /// A cluster-scoped dependent names a namespaced owner: never collected.
    InvalidClusterScoped,
}

/// What the collector does with an object not being deleted, once every owner has a verdict —
/// the decision of upstream's `attemptToDeleteItem`, pure, so that `kube-gc explain` says
/// exactly what the collector would do.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Action {
    /// An owner exists, and no reference is dangling or waiting: nothing to do.
    Keep,
    /// An owner exists: the references to absent or waiting owners are removed; it stays.
    RemoveReferences,
    /// No owner exists, one waits for its dependents, and it has dependents of its own: it is
    /// deleted in the foreground, so that its own dependents go first.
    DeleteInForeground,
    /// No owner exists: it is deleted, with the policy its finalizers ask for.
    Delete(kube_gc_api::PropagationPolicy),
}

/// The collector's action for an object with these owner verdicts (counts), dependents and
/// finalizers.
pub fn action(
    solid: usize,
    dangling: usize,
    waiting: usize,
    dependents: usize,
    orphan_finalizer: bool,
    foreground_finalizer: bool,
) -> Action {
    use kube_gc_api::PropagationPolicy;
    if solid > 0 {
        return if dangling == 0 && waiting == 0 {
            Action::Keep
        } else {
            Action::RemoveReferences
        };
    }
    if waiting > 0 && dependents > 0 {
        return Action::DeleteInForeground;
    }
    Action::Delete(if orphan_finalizer {
        PropagationPolicy::Orphan
    } else if foreground_finalizer {
        PropagationPolicy::Foreground
    } else {
        PropagationPolicy::Background
    })
}

/// Classifies every owner of `item`.
pub(super) async fn classify(
    shared: &Shared,
    item: &NodeView,
) -> Result<Classification, WorkError> {
    let mut verdicts = Verdicts::default();
    for link in item.owners.iter() {
        let verdict = match verdict(shared, item, link).await? {
            Step::Verdict(v) => v,
            Step::Defer => return Ok(Classification::Defer),
            Step::InvalidClusterScoped => return Ok(Classification::InvalidClusterScoped),
        };
        let list = match verdict {
            Verdict::Solid => &mut verdicts.solid,
            Verdict::Dangling => &mut verdicts.dangling,
            Verdict::Waiting => &mut verdicts.waiting,
        };
        list.push(link.clone());
    }
    Ok(Classification::Ready(verdicts))
}

enum Step {
    Verdict(Verdict),
    Defer,
    InvalidClusterScoped,
}

async fn verdict(shared: &Shared, item: &NodeView, link: &OwnerLink) -> Result<Step, WorkError> {
    let resource = shared.resource_for(&link.gvk.api_version, link.kind())?;
    let dependent_namespace = item.identity.namespace.as_deref();
    if dependent_namespace.is_none() && resource.namespaced {
        let message = format!(
            "ownerRef [{}/{}, name: {}, uid: {}] is namespaced and cannot own a cluster-scoped object",
            link.gvk.api_version,
            link.kind(),
            link.name,
            link.uid
        );
        report_invalid(shared, item, link, message);
        return Ok(Step::InvalidClusterScoped);
    }
    let expected_namespace = dependent_namespace.filter(|_| resource.namespaced);
    if let Some(verdict) = observed_verdict(shared, item, link, expected_namespace) {
        return Ok(Step::Verdict(verdict));
    }
    let group_kind = link.gvk.group_kind();
    if shared.sync.is_monitored(&group_kind) && !shared.sync.is_synced(&group_kind) {
        return Ok(Step::Defer);
    }
    let api = Api::dynamic(shared.client.clone(), resource, expected_namespace);
    live_verdict(shared, &api, link, expected_namespace)
        .await
        .map(Step::Verdict)
}

/// The verdict from the graph, if it observed the owner (present or deleted).
fn observed_verdict(
    shared: &Shared,
    item: &NodeView,
    link: &OwnerLink,
    expected_namespace: Option<&str>,
) -> Option<Verdict> {
    let (presence, namespace, deleting_dependents) = {
        let graph = shared.graph.read();
        let owner = graph.node(&link.uid)?;
        if owner.presence == Presence::Virtual {
            return None;
        }
        let namespace = owner.identity.namespace.clone();
        (owner.presence, namespace, owner.deleting_dependents)
    };
    if namespace.as_deref() != expected_namespace {
        report_invalid(shared, item, link, absent_message(link, expected_namespace));
        return Some(Verdict::Dangling);
    }
    Some(match (presence, deleting_dependents) {
        (Presence::Gone, _) => Verdict::Dangling,
        (_, true) => Verdict::Waiting,
        _ => Verdict::Solid,
    })
}

/// The verdict from the absent-owner cache, else from a live read of the owner.
async fn live_verdict(
    shared: &Shared,
    api: &Api<PartialObjectMetadata>,
    link: &OwnerLink,
    expected_namespace: Option<&str>,
) -> Result<Verdict, WorkError> {
    let key = AbsentKey {
        api_version: link.gvk.api_version.to_string(),
        kind: link.kind().to_owned(),
        name: link.name.to_string(),
        uid: link.uid.to_string(),
        namespace: expected_namespace.map(str::to_owned),
    };
    if shared.absent.lock().contains(&key) {
        return Ok(Verdict::Dangling);
    }
    let live = match api.get_metadata(&link.name).await {
        Ok(live) if live.metadata.uid.as_deref() == Some(&*link.uid) => live,
        // Another UID under the owner's name is a different object: the owner is gone.
        Ok(_) => return Ok(absent(shared, key)),
        Err(e) if e.is_not_found() => return Ok(absent(shared, key)),
        Err(e) => {
            return Err(WorkError::Api {
                verb: "get",
                object: format!("{} {} {}", link.gvk.api_version, link.kind(), link.name),
                source: e,
            })
        }
    };
    let meta = &live.metadata;
    let waiting = meta.is_being_deleted() && meta.has_finalizer(FOREGROUND_FINALIZER);
    Ok(if waiting {
        Verdict::Waiting
    } else {
        Verdict::Solid
    })
}

fn absent(shared: &Shared, key: AbsentKey) -> Verdict {
    shared.absent.lock().insert(key);
    Verdict::Dangling
}

fn absent_message(link: &OwnerLink, namespace: Option<&str>) -> String {
    format!(
        "ownerRef [{}/{}, namespace: {}, name: {}, uid: {}] does not exist in namespace {:?}",
        link.gvk.api_version,
        link.kind(),
        namespace.unwrap_or(""),
        link.name,
        link.uid,
        namespace.unwrap_or("")
    )
}

fn report_invalid(shared: &Shared, item: &NodeView, link: &OwnerLink, message: String) {
    tracing::warn!(object = %item.identity, owner = %link.uid, problem = %message, "invalid owner reference");
    shared.recorder.record(EventRecord {
        regarding: item.identity.object_reference(),
        event_type: EventType::Warning,
        reason: INVALID_NAMESPACE_REASON.to_owned(),
        message,
    });
}

#[cfg(test)]
mod action_tests {
    use super::*;
    use kube_gc_api::PropagationPolicy;

    #[test]
    fn a_solid_owner_keeps_it_and_no_owner_deletes_it_as_its_finalizers_ask() {
        assert_eq!(action(1, 0, 0, 0, false, false), Action::Keep);
        assert_eq!(action(1, 1, 0, 0, false, false), Action::RemoveReferences);
        assert_eq!(action(1, 0, 1, 3, false, false), Action::RemoveReferences);
        assert_eq!(action(0, 0, 1, 2, false, false), Action::DeleteInForeground);
        assert_eq!(
            action(0, 0, 1, 0, false, false),
            Action::Delete(PropagationPolicy::Background)
        );
        assert_eq!(
            action(0, 2, 0, 5, true, true),
            Action::Delete(PropagationPolicy::Orphan)
        );
        assert_eq!(
            action(0, 1, 0, 0, false, true),
            Action::Delete(PropagationPolicy::Foreground)
        );
    }
}
