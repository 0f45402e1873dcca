//! The status writer task: every [`RetentionOptions::status_interval`](super::RetentionOptions)
//! it recounts what each policy governs and writes the statuses that changed, as a merge patch
//! of `/status` that makes the new status the whole status (see [`status_patch`]). A dry run of
//! the whole process (`kube-gc run --dry-run`) writes nothing, statuses included.
//!
//! A policy judged anew — created, given a new generation, or its `Ready` changed — has its
//! status written at once ([`Round::Judged`]), as soon as the resources its watches read are
//! listed (no later than the next round), so `kubectl get rp` never shows blank columns for
//! a policy kube-gc has seen. Only that judgement is written early ([`newly_judged`]): counts
//! that merely moved wait for the round, so the write rate stays one per policy per interval
//! plus one per change of the policy itself.

use std::collections::HashMap;
use std::sync::Arc;

use serde_json::{json, Value};

use tokio_util::sync::CancellationToken;

use kube_gc_client::availability::warn_unless_unavailable;
use kube_gc_client::{Api, Patch, PostParams};
use kube_gc_runtime::informer::InformerSynced;

use super::plan::PolicyState;
use super::planner::{policy_object, wait_synced};
use super::status::{count, status_for, Notifying, Outlook, NEXT_DELETIONS, STATUS_HORIZONS};
use super::upcoming::pending;
use super::CONTROLLER;
use super::{cluster_policies, namespaced_policies, Shared};
use crate::pending::PendingQuery;
use crate::retention::policy::Mode;
use crate::retention::policy::{PolicyId, RetentionPolicyObject, RetentionPolicyStatus};

/// Recounts every status interval and writes the statuses that changed.
pub(super) async fn status_writer(
    shared: Arc<Shared>,
    caches: Vec<InformerSynced>,
    stop: CancellationToken,
) {
    if shared.options.dry_run {
        tracing::info!("dry run: retention policies' statuses are not written");
        return;
    }
    if !wait_synced(&caches, &stop).await {
        return;
    }
    let mut written = Written::default();
    let interval = shared.options.status_interval;
    let mut next_round = tokio::time::Instant::now() + interval;
    loop {
        let round = tokio::select! {
            _ = stop.cancelled() => return,
            _ = tokio::time::sleep_until(next_round) => Round::Every,
            _ = shared.judged.notified() => Round::Judged,
        };
        match round {
            Round::Every => next_round = tokio::time::Instant::now() + interval,
            // Counted once the watches have listed what they read; never later than a round.
            Round::Judged => {
                let listing: Vec<InformerSynced> = shared
                    .watches
                    .read()
                    .values()
                    .filter_map(|watch| watch.synced())
                    .collect();
                tokio::select! {
                    _ = stop.cancelled() => return,
                    _ = wait_synced(&listing, &stop) => {}
                    _ = tokio::time::sleep_until(next_round) => {}
                }
            }
        }
        write_statuses(&shared, &mut written, round).await;
    }
}

/// Why the writer writes now.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Round {
    /// The status interval is up: every status that changed.
    Every,
    /// A policy was judged anew: the statuses whose judgement changed.
    Judged,
}

/// Whether `status` tells a judgement that `held` (the status last written, else the one on
/// the server) does not: a policy never reported, another generation, another `Ready` status
/// or reason. Counts alone do not make a judgement.
fn newly_judged(status: &RetentionPolicyStatus, held: Option<&RetentionPolicyStatus>) -> bool {
    let Some(held) = held else {
        return true;
    };
    let ready = |s: &RetentionPolicyStatus| {
        s.conditions
            .iter()
            .find(|c| c.type_ == "Ready")
            .map(|c| (c.status.clone(), c.reason.clone()))
    };
    held.observed_generation != status.observed_generation || ready(held) != ready(status)
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

async fn write_statuses(shared: &Shared, written: &mut Written, round: Round) {
    let watches: Vec<_> = shared.watches.read().values().cloned().collect();
    let now = shared.clock.now();
    let counts = count(&watches, now);
    let query = PendingQuery {
        now,
        horizons: STATUS_HORIZONS.to_vec(),
        limit: NEXT_DELETIONS,
    };
    let pending: HashMap<PolicyId, _> = pending(&watches, &query, CONTROLLER)
        .into_iter()
        .filter_map(|p| Some((p.policy.clone()?, p)))
        .collect();
    let states = shared.states.lock().clone();
    for (id, state) in states {
        let Some(object) = policy_object(shared, &id) else {
            continue;
        };
        let before = *written
            .deleted_before
            .entry(id.clone())
            .or_insert_with(|| object.status.as_ref().map_or(0, |s| s.deleted));
        let deleted = before + shared.metrics.deletions(&id);
        let previous = written.statuses.get(&id).or(object.status.as_ref());
        let mut outlook = Outlook::new(Mode::of_spec(&object.spec), pending.get(&id));
        let routed =
            object.spec.notification.is_some() && !matches!(state, PolicyState::Invalid { .. });
        if routed {
            outlook.notifying = shared
                .feed
                .delivery(&id)
                .map_or(Notifying::Pending, Notifying::Known);
        }
        let status = status_for(
            &state,
            &counts.get(&id).cloned().unwrap_or_default(),
            deleted,
            &outlook,
            previous,
            now,
        );
        if object.status.as_ref() == Some(&status) || written.statuses.get(&id) == Some(&status) {
            continue;
        }
        if round == Round::Judged && !newly_judged(&status, previous) {
            continue;
        }
        let resource = if id.namespace.is_some() {
            namespaced_policies()
        } else {
            cluster_policies()
        };
        let api: Api<RetentionPolicyObject> =
            Api::dynamic(shared.client.clone(), resource, id.namespace.as_deref());
        let held = [written.statuses.get(&id), object.status.as_ref()];
        let patch = status_patch(&status, held.into_iter().flatten());
        match api
            .patch_status(&id.name, &PostParams::default(), &patch)
            .await
        {
            Ok(_) => {
                written.statuses.insert(id, status);
            }
            Err(e) => {
                shared.metrics.observe_api_error("patch");
                warn_unless_unavailable!(e, retention_policy = %id, err = %e, "could not write the policy's status");
            }
        }
    }
}

/// The merge patch that makes `status` the policy's whole status. A merge patch keeps every
/// member it does not name (RFC 7386), and a status leaves out what it does not have — no
/// `nextDeletionTime` once nothing waits. So each member a status the server may still hold
/// has (`held`: the one this process last wrote, the one its cache shows) and `status` lacks
/// is named as `null`, which removes it (exchanges 72 and 73); else a deletion time long past
/// would stay on the policy.
fn status_patch<'a>(
    status: &RetentionPolicyStatus,
    held: impl IntoIterator<Item = &'a RetentionPolicyStatus>,
) -> Patch {
    let mut body = json!(status);
    if let Value::Object(members) = &mut body {
        for old in held {
            if let Value::Object(old) = json!(old) {
                for key in old.into_iter().map(|(key, _)| key) {
                    members.entry(key).or_insert(Value::Null);
                }
            }
        }
    }
    Patch::Merge(json!({ "status": body }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use kube_gc_api::Time;

    fn waiting(next: Option<Time>) -> RetentionPolicyStatus {
        RetentionPolicyStatus {
            observed_generation: Some(1),
            matched: 1,
            waiting: u64::from(next.is_some()),
            next_deletion_time: next,
            ..RetentionPolicyStatus::default()
        }
    }

    fn judged(generation: i64, ready: &str, reason: &str, matched: u64) -> RetentionPolicyStatus {
        RetentionPolicyStatus {
            observed_generation: Some(generation),
            matched,
            conditions: vec![crate::retention::policy::Condition {
                type_: "Ready".to_owned(),
                status: ready.to_owned(),
                observed_generation: Some(generation),
                last_transition_time: Time::now(),
                reason: reason.to_owned(),
                message: String::new(),
            }],
            ..RetentionPolicyStatus::default()
        }
    }

    #[test]
    fn a_new_judgement_is_written_at_once_and_moved_counts_wait_for_the_round() {
        let ready = judged(1, "True", "Watching", 3);
        // Never reported: blank columns until written.
        assert!(newly_judged(&ready, None));
        // The same judgement with other counts: the round writes it.
        assert!(!newly_judged(
            &ready,
            Some(&judged(1, "True", "Watching", 7))
        ));
        // A new generation, or another Ready.
        assert!(newly_judged(
            &judged(2, "True", "Watching", 3),
            Some(&ready)
        ));
        assert!(newly_judged(
            &judged(1, "False", "InvalidSpec", 0),
            Some(&ready)
        ));
        assert!(newly_judged(
            &judged(1, "False", "Forbidden", 0),
            Some(&judged(1, "False", "InvalidSpec", 0))
        ));
    }

    #[test]
    fn a_member_the_new_status_lacks_is_removed_with_null() {
        let held = waiting(Some(Time::now()));
        let patch = status_patch(&waiting(None), [&held]);
        let status = &patch.body()["status"];
        assert_eq!(status["nextDeletionTime"], Value::Null);
        assert!(
            status
                .as_object()
                .is_some_and(|s| s.contains_key("nextDeletionTime")),
            "named, as null: {status}"
        );
        assert_eq!(status["waiting"], 0);
        assert_eq!(status["observedGeneration"], 1);
    }

    #[test]
    fn nothing_is_named_null_that_no_held_status_has_or_the_new_one_has() {
        let next = Time::now();
        let patch = status_patch(&waiting(Some(next)), [&waiting(None)]);
        let status = &patch.body()["status"];
        assert_eq!(status["nextDeletionTime"], json!(next));
        let first = status_patch(&waiting(None), []);
        let nulls: Vec<_> = first.body()["status"]
            .as_object()
            .into_iter()
            .flatten()
            .filter(|(_, v)| v.is_null())
            .map(|(k, _)| k.clone())
            .collect();
        assert!(nulls.is_empty(), "{nulls:?}");
    }
}
