//! The attempt-to-delete worker: decides whether one node is garbage, and acts.
//!
//! Contract (upstream's `attemptToDeleteItem`, reading the graph instead of the server where
//! the graph has observed the facts):
//! - A virtual node is verified by a live GET of the owner it stands for; absent, or another UID
//!   under its name → a virtual delete event to the graph builder (its dependents are then
//!   judged). Present → retried until a monitor observes it.
//! - A node being deleted, not in the foreground → nothing to do. Deleting its dependents
//!   (Foreground) → once no dependent with `blockOwnerDeletion: true` remains, the
//!   `foregroundDeletion` finalizer is removed.
//! - Otherwise its owner references are classified (`owners`): any solid owner → the dangling
//!   and waiting references are patched away and the object kept; else a waiting owner and
//!   dependents of its own → it is deleted in the foreground (after unblocking references to
//!   owners that are also its dependents, which breaks cycles); else it is deleted with the
//!   policy its finalizers ask for (`orphan` → Orphan, `foregroundDeletion` → Foreground,
//!   none → Background).
//! - Every deletion carries the UID and resourceVersion the decision was made on
//!   (`requests::delete`).

use std::collections::HashSet;
use std::sync::Arc;

use super::absent_owners::AbsentKey;
use super::builder::GraphEvent;
use super::errors::WorkError;
use super::graph::{NodeView, Presence, FOREGROUND_FINALIZER};
use super::identity::{OwnerLink, Uid};
use super::owners::{action, classify, Action, Classification, Verdicts};
use super::requests::{self, api_for};
use super::Shared;
use kube_gc_api::{OwnerReference, PropagationPolicy};

/// What became of one attempt.
#[derive(Debug, PartialEq, Eq)]
pub enum Done {
    /// Nothing more to do until the graph changes.
    Finished,
    /// An owner's type has not synced: look again a little later.
    Deferred,
}

/// One attempt on `uid`.
pub(super) async fn attempt_to_delete(shared: &Shared, uid: &Uid) -> Result<Done, WorkError> {
    let Some(item) = shared.graph.read().view(uid) else {
        return Ok(Done::Finished);
    };
    match item.presence {
        Presence::Gone => Ok(Done::Finished),
        Presence::Virtual => verify_virtual(shared, &item).await,
        Presence::Observed if item.deleting_dependents => {
            delete_dependents_first(shared, &item).await
        }
        Presence::Observed if item.being_deleted || item.owners.is_empty() => Ok(Done::Finished),
        Presence::Observed => judge(shared, &item).await,
    }
}

async fn verify_virtual(shared: &Shared, item: &NodeView) -> Result<Done, WorkError> {
    let group_kind = item.identity.gvk.group_kind();
    if shared.sync.is_monitored(&group_kind) && !shared.sync.is_synced(&group_kind) {
        return Ok(Done::Deferred);
    }
    let (api, resource) = api_for(shared, &item.identity)?;
    let absent = match api.get_metadata(&item.identity.name).await {
        Ok(live) => live.metadata.uid.as_deref() != Some(&*item.identity.uid),
        Err(e) if e.is_not_found() => true,
        Err(e) => return Err(WorkError::api("get", &item.identity, e)),
    };
    if !absent {
        return Err(WorkError::NotYetObserved);
    }
    shared.absent.lock().insert(AbsentKey {
        api_version: item.identity.gvk.api_version.to_string(),
        kind: item.identity.gvk.kind.to_string(),
        name: item.identity.name.to_string(),
        uid: item.identity.uid.to_string(),
        namespace: item
            .identity
            .namespace
            .as_deref()
            .filter(|_| resource.namespaced)
            .map(str::to_owned),
    });
    let uid = Arc::clone(&item.identity.uid);
    // A closed channel means the collector is stopping; the node no longer matters.
    let _ = shared
        .graph_changes
        .send(GraphEvent::VirtualDeleted { uid });
    Ok(Done::Finished)
}

/// A node deleting its dependents (Foreground) only has to let go once the last blocking
/// dependent left. Its dependents were queued when its foreground deletion began, and the graph
/// builder queues any that appear later; each is retried on its own until it is deleted, so
/// the owner does not queue them again (upstream does, and each repeat while a dependent's
/// deletion is on its way costs a redundant DELETE).
///
/// A blocking dependent of a type that has not synced yet is unknown here, so the owner may go
/// first; that dependent is then collected as soon as it is seen (its owner is gone), so this
/// costs the order, never a wrong deletion — and one broken CRD does not hold every Foreground
/// deletion (the Orphan worker, where going first *would* be wrong, waits instead).
async fn delete_dependents_first(shared: &Shared, item: &NodeView) -> Result<Done, WorkError> {
    if shared
        .graph
        .read()
        .has_blocking_dependents(&item.identity.uid)
    {
        return Ok(Done::Finished);
    }
    requests::remove_finalizer(shared, &item.identity, FOREGROUND_FINALIZER).await?;
    Ok(Done::Finished)
}

async fn judge(shared: &Shared, item: &NodeView) -> Result<Done, WorkError> {
    let verdicts = match classify(shared, item).await? {
        Classification::Ready(verdicts) => verdicts,
        Classification::Defer => return Ok(Done::Deferred),
        Classification::InvalidClusterScoped => return Ok(Done::Finished),
    };
    let Verdicts {
        solid,
        dangling,
        waiting,
    } = verdicts;
    let judged: Vec<OwnerReference> = item.owners.iter().map(OwnerLink::to_reference).collect();
    let decided = action(
        solid.len(),
        dangling.len(),
        waiting.len(),
        item.dependent_count,
        item.orphan_finalizer,
        item.foreground_finalizer,
    );
    match decided {
        Action::Keep => Ok(Done::Finished),
        Action::RemoveReferences => {
            let gone: HashSet<Uid> = dangling
                .iter()
                .chain(&waiting)
                .map(|o| Arc::clone(&o.uid))
                .collect();
            tracing::debug!(object = %item.identity, removed = gone.len(), "removing references to absent or waiting owners");
            requests::patch_owners(
                shared,
                &item.identity,
                &item.owners,
                requests::without(&gone),
            )
            .await?;
            Ok(Done::Finished)
        }
        Action::DeleteInForeground => delete_in_foreground(shared, item, &waiting, judged).await,
        Action::Delete(policy) => {
            tracing::debug!(object = %item.identity, propagation_policy = ?policy, "deleting an object whose owners are all gone");
            requests::delete(
                shared,
                &item.identity,
                policy,
                &item.resource_version,
                &judged,
                "every owner is gone",
            )
            .await?;
            Ok(Done::Finished)
        }
    }
}

/// Deletes `item` in the foreground because an owner waits on it. An owner that is also one of
/// its dependents would wait for itself: the references to such owners stop blocking first.
async fn delete_in_foreground(
    shared: &Shared,
    item: &NodeView,
    waiting: &[OwnerLink],
    judged: Vec<OwnerReference>,
) -> Result<Done, WorkError> {
    let dependents: HashSet<Uid> = shared
        .graph
        .read()
        .dependent_uids(&item.identity.uid)
        .into_iter()
        .collect();
    let cyclic: HashSet<Uid> = waiting
        .iter()
        .filter(|o| o.blocks_owner_deletion() && dependents.contains(&o.uid))
        .map(|o| Arc::clone(&o.uid))
        .collect();
    let (resource_version, judged) = if cyclic.is_empty() {
        (item.resource_version.to_string(), judged)
    } else {
        let updated = requests::patch_owners(
            shared,
            &item.identity,
            &item.owners,
            requests::unblocking(&cyclic),
        )
        .await?;
        let Some(updated) = updated else {
            return Ok(Done::Finished);
        };
        let meta = updated.metadata;
        (
            meta.resource_version.unwrap_or_default(),
            meta.owner_references,
        )
    };
    requests::delete(
        shared,
        &item.identity,
        PropagationPolicy::Foreground,
        &resource_version,
        &judged,
        "an owner being deleted in the foreground waits for it",
    )
    .await?;
    Ok(Done::Finished)
}
