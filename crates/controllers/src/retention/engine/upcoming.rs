//! What the engine will delete, and when, read from its watches' assessments at a given moment:
//! [`upcoming`] for one watch, [`pending`] for them all, per policy — what a policy's status
//! (`nextDeletions`, `deletionsWithinHour`, `wouldDelete`) and `kube_gc_pending_deletions` say.
//!
//! Contract:
//! - Pure over the cached assessments, with the reconciler's own decisions: a governed object
//!   whose TTL [`decide`] says waits or has expired is due at its expiry; the finished members
//!   of a history group beyond its limit ([`over_limit`], ranked as the reconciler ranks them:
//!   governed, finished, not being deleted) are due now. Each object once, at its earliest.
//! - Objects kept, whose fate is unknown, or with a problem are not deletions to come.
//! - [`pending`] gives every policy of every watch a [`Pending`], zeros included, so a gauge
//!   reads 0 rather than vanishing; a TTL controller's fixed policy is reported without a policy.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use chrono::{DateTime, Utc};

use crate::pending::{Pending, PendingDeletion, PendingQuery, PendingTally};
use crate::retention::assessment::{Assessment, ResourcePolicies};
use crate::retention::history::{over_limit, Member};
use crate::retention::policy::{Origin, PolicyId};
use crate::retention::verdict::{decide, Verdict};
use kube_gc_runtime::cache::Cacheable;

use super::watch::ResourceWatch;

/// The reason of a TTL deletion, as the metrics and the status name it.
pub const TTL: &str = "ttl";
/// The reason of a history limit's deletion.
pub const HISTORY_LIMIT: &str = "history_limit";

/// One object's deletion to come.
#[derive(Clone, Debug)]
pub struct Upcoming {
    /// The governing policy's index in the watch's rules.
    pub policy: u16,
    /// The object.
    pub assessment: Arc<Assessment>,
    /// When it is due (`None`: now, beyond a history limit).
    pub at: Option<DateTime<Utc>>,
    /// [`TTL`] or [`HISTORY_LIMIT`].
    pub reason: &'static str,
}

/// The deletions to come of the objects `assessments` under `rules`, at `now`: each object
/// once, at its earliest.
pub fn upcoming(
    rules: &ResourcePolicies,
    assessments: &[Arc<Assessment>],
    now: DateTime<Utc>,
) -> Vec<Upcoming> {
    let mut found: Vec<Upcoming> = Vec::new();
    let mut groups: BTreeMap<(u16, &str, &str), Vec<Member<usize>>> = BTreeMap::new();
    for (i, assessment) in assessments.iter().enumerate() {
        let Some(governed) = assessment.governed() else {
            continue;
        };
        let expiry = match decide(&governed.facts, governed.ttl, now) {
            Ok(Verdict::Wait { expires_at, .. }) => Some(expires_at),
            Ok(Verdict::Expired { expired_at }) => Some(expired_at),
            Ok(Verdict::Keep(_)) | Err(_) => None,
        };
        if let Some(at) = expiry {
            found.push(Upcoming {
                policy: governed.policy,
                assessment: Arc::clone(assessment),
                at: Some(at),
                reason: TTL,
            });
        }
        if let (Some(group), Some(finished), false) = (
            governed.group.as_deref(),
            governed.facts.finished,
            governed.facts.being_deleted,
        ) {
            let namespace = assessment.key().namespace().unwrap_or_default();
            groups
                .entry((governed.policy, namespace, group))
                .or_default()
                .push(Member {
                    id: i,
                    outcome: finished.outcome,
                    finished_at: finished.at,
                });
        }
    }
    let mut beyond_limit: HashMap<usize, u16> = HashMap::new();
    for ((policy, _, _), members) in &groups {
        let Some(compiled) = rules.policies.get(usize::from(*policy)) else {
            continue;
        };
        for excess in over_limit(members, compiled.limits) {
            beyond_limit.insert(excess.id, *policy);
        }
    }
    // A history limit's deletion is due now: it replaces the object's TTL deletion, if any.
    if !beyond_limit.is_empty() {
        let by_uid: HashMap<&str, usize> = beyond_limit
            .keys()
            .map(|&i| (assessments[i].uid(), i))
            .collect();
        found.retain(|u| !by_uid.contains_key(u.assessment.uid()));
        let mut excess: Vec<_> = beyond_limit.into_iter().collect();
        excess.sort_unstable();
        for (i, policy) in excess {
            found.push(Upcoming {
                policy,
                assessment: Arc::clone(&assessments[i]),
                at: None,
                reason: HISTORY_LIMIT,
            });
        }
    }
    found
}

/// Every watch's deletions to come, per policy, for `query`; `controller` names whose they are.
pub fn pending(
    watches: &[Arc<ResourceWatch>],
    query: &PendingQuery,
    controller: &'static str,
) -> Vec<Pending> {
    let watched = watches.iter().map(|watch| Watched {
        rules: &watch.rules,
        kind: &watch.resource.kind,
        assessments: watch.store.list(),
    });
    pending_of(watched, query, controller)
}

/// What [`pending`] reads of one watch.
struct Watched<'a> {
    rules: &'a ResourcePolicies,
    kind: &'a str,
    assessments: Vec<Arc<Assessment>>,
}

fn pending_of<'a>(
    watched: impl IntoIterator<Item = Watched<'a>>,
    query: &PendingQuery,
    controller: &'static str,
) -> Vec<Pending> {
    let mut tallies: BTreeMap<Option<PolicyId>, PendingTally> = BTreeMap::new();
    for watch in watched {
        for policy in &watch.rules.policies {
            let id = reported_id(policy.origin, &policy.id);
            tallies.entry(id.clone()).or_insert_with(|| {
                PendingTally::new(query, controller, id, policy.mode.is_audit())
            });
        }
        for upcoming in upcoming(watch.rules, &watch.assessments, query.now) {
            let Some(policy) = watch.rules.policies.get(usize::from(upcoming.policy)) else {
                continue;
            };
            let id = reported_id(policy.origin, &policy.id);
            if let Some(tally) = tallies.get_mut(&id) {
                tally.add(pending_deletion(watch.kind, &upcoming));
            }
        }
    }
    tallies.into_values().map(PendingTally::finish).collect()
}

/// A policy object's id; none for a TTL controller's fixed policy.
fn reported_id(origin: Origin, id: &PolicyId) -> Option<PolicyId> {
    match origin {
        Origin::Object => Some(id.clone()),
        Origin::Controller(_) => None,
    }
}

fn pending_deletion(kind: &str, upcoming: &Upcoming) -> PendingDeletion {
    let key = upcoming.assessment.key();
    PendingDeletion {
        kind: kind.to_owned(),
        namespace: key.namespace().map(str::to_owned),
        name: key.name().to_owned(),
        uid: upcoming.assessment.uid().to_owned(),
        at: upcoming.at,
        reason: upcoming.reason,
    }
}

#[cfg(test)]
mod tests;
