//! The attempt-to-orphan worker: an owner deleted with `propagationPolicy: Orphan` keeps its
//! dependents.
//!
//! Contract: every dependent the graph knows loses its reference to the owner (a JSON patch
//! guarded by the dependent's UID and judged references); once all succeeded, the `orphan`
//! finalizer is removed from the owner, which lets the server delete it. Any failure retries
//! the whole step (done patches are not redone: the graph no longer lists those dependents).
//! While some monitored type has not synced, the graph may not know every dependent, so the
//! step is deferred: letting the owner go with a dependent still naming it would get that
//! dependent collected, the opposite of what Orphan asks.

use std::collections::HashSet;
use std::sync::Arc;

use super::attempt_delete::Done;
use super::errors::WorkError;
use super::graph::{Presence, ORPHAN_FINALIZER};
use super::identity::Uid;
use super::requests;
use super::Shared;

/// One attempt on `uid`.
pub(super) async fn attempt_to_orphan(shared: &Shared, uid: &Uid) -> Result<Done, WorkError> {
    let Some(owner) = shared.graph.read().view(uid) else {
        return Ok(Done::Finished);
    };
    if owner.presence != Presence::Observed {
        return Ok(Done::Finished);
    }
    if !shared.sync.all_synced() {
        return Ok(Done::Deferred);
    }
    let dependents = shared.graph.read().dependents_of(uid);
    let this_owner: HashSet<Uid> = HashSet::from([Arc::clone(uid)]);
    let mut first_error = None;
    for (dependent, owners) in dependents {
        if !owners.iter().any(|o| o.uid == *uid) {
            continue;
        }
        let result =
            requests::patch_owners(shared, &dependent, &owners, requests::without(&this_owner))
                .await;
        if let Err(error) = result {
            tracing::debug!(%error, "orphaning a dependent failed");
            first_error.get_or_insert(error);
        }
    }
    if let Some(error) = first_error {
        return Err(error);
    }
    requests::remove_finalizer(shared, &owner.identity, ORPHAN_FINALIZER).await?;
    Ok(Done::Finished)
}
