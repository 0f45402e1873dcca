//! The status writer task: every [`RetentionOptions::status_interval`](super::RetentionOptions)
//! it recounts what each policy governs and writes the statuses that changed, as a merge patch
//! of `/status`.

use std::collections::HashMap;
use std::sync::Arc;

use tokio_util::sync::CancellationToken;

use crate::client::{Api, Patch, PostParams};
use crate::runtime::informer::InformerSynced;

use super::planner::{policy_object, wait_synced};
use super::status::{count, status_for};
use super::{cluster_policies, namespaced_policies, Shared};
use crate::controllers::retention::policy::{
    PolicyId, RetentionPolicyObject, RetentionPolicyStatus,
};

/// Recounts every status interval and writes the statuses that changed.
pub(super) async fn status_writer(
    shared: Arc<Shared>,
    caches: Vec<InformerSynced>,
    stop: CancellationToken,
) {
    if !wait_synced(&caches, &stop).await {
        return;
    }
    let mut written = Written::default();
    loop {
        tokio::select! {
            _ = stop.cancelled() => return,
            _ = tokio::time::sleep(shared.options.status_interval) => {}
        }
        write_statuses(&shared, &mut written).await;
    }
}

/// What the status writer remembers between rounds.
#[derive(Default)]
struct Written {
    /// The last status written per policy.
    statuses: HashMap<PolicyId, RetentionPolicyStatus>,
    /// `status.deleted` as found when this process first saw the policy: the count carries
    /// over restarts of kube-gc, and this process's deletions are added to it.
    deleted_before: HashMap<PolicyId, u64>,
}

async fn write_statuses(shared: &Shared, written: &mut Written) {
    let watches: Vec<_> = shared.watches.read().values().cloned().collect();
    let now = shared.clock.now();
    let counts = count(&watches, now);
    let states = shared.states.lock().clone();
    for (id, state) in states {
        let Some(object) = policy_object(shared, &id) else {
            continue;
        };
        let before = *written
            .deleted_before
            .entry(id.clone())
            .or_insert_with(|| object.status.as_ref().map_or(0, |s| s.deleted));
        let deleted = before + shared.metrics.deletions(&id.to_string());
        let previous = written.statuses.get(&id).or(object.status.as_ref());
        let status = status_for(
            &state,
            &counts.get(&id).cloned().unwrap_or_default(),
            deleted,
            previous,
            now,
        );
        if object.status.as_ref() == Some(&status) || written.statuses.get(&id) == Some(&status) {
            continue;
        }
        let resource = if id.namespace.is_some() {
            namespaced_policies()
        } else {
            cluster_policies()
        };
        let api: Api<RetentionPolicyObject> =
            Api::dynamic(shared.client.clone(), resource, id.namespace.as_deref());
        let patch = Patch::Merge(serde_json::json!({ "status": status }));
        match api
            .patch_status(&id.name, &PostParams::default(), &patch)
            .await
        {
            Ok(_) => {
                written.statuses.insert(id, status);
            }
            Err(e) => {
                shared.metrics.observe_api_error("patch");
                tracing::warn!(policy = %id, error = %e, "could not write the policy's status");
            }
        }
    }
}
