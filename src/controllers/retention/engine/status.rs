//! What the engine reports on each policy: `status` (`observedGeneration`, objects matched,
//! waiting, deleted, next deletion time, the `Ready` condition) — counted by a pure function
//! and written only when it changed.
//!
//! Contract:
//! - [`count`] walks the watches' judgements: an object is *matched* by the policy that
//!   governs it, *waiting* if its TTL runs out later (or now, not yet deleted), and the
//!   earliest such time is the *next deletion*.
//! - [`status_for`] builds the status from the plan's verdict on the policy, the counts and
//!   the deletions so far; `Ready` keeps its `lastTransitionTime` while its status stays.
//! - `Ready=False` reasons: `InvalidSpec` (the fields at fault in the message) and
//!   `ResourceNotServed` (which targets); `Ready=True`: `Watching`.

use std::collections::BTreeMap;
use std::sync::Arc;

use chrono::{DateTime, Utc};

use crate::api::Time;
use crate::controllers::retention::judge::{judge, Verdict};
use crate::controllers::retention::policy::{Condition, PolicyId, RetentionPolicyStatus};

use super::plan::PolicyState;
use super::watch::ResourceWatch;

/// One policy's counts.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Counts {
    /// Objects it governs.
    pub matched: u64,
    /// Of those, objects with a TTL that runs out later (or has, and they are not deleted yet).
    pub waiting: u64,
    /// The earliest expiry among them.
    pub next_deletion: Option<DateTime<Utc>>,
}

/// Counts every watch's judgements by governing policy.
pub fn count(watches: &[Arc<ResourceWatch>], now: DateTime<Utc>) -> BTreeMap<PolicyId, Counts> {
    let mut counts: BTreeMap<PolicyId, Counts> = BTreeMap::new();
    for watch in watches {
        for judgement in watch.store.list() {
            let Some(governed) = judgement.governed() else {
                continue;
            };
            let Some(policy) = watch.rules.policies.get(usize::from(governed.policy)) else {
                continue;
            };
            let entry = counts.entry(policy.id.clone()).or_default();
            entry.matched += 1;
            let expires_at = match judge(&governed.facts, governed.ttl, now) {
                Ok(Verdict::Wait { expires_at, .. }) => expires_at,
                Ok(Verdict::Expired { expired_at }) => expired_at,
                _ => continue,
            };
            entry.waiting += 1;
            entry.next_deletion = Some(
                entry
                    .next_deletion
                    .map_or(expires_at, |n| n.min(expires_at)),
            );
        }
    }
    counts
}

/// The status to write for one policy.
pub fn status_for(
    state: &PolicyState,
    counts: Counts,
    deleted: u64,
    previous: Option<&RetentionPolicyStatus>,
    now: DateTime<Utc>,
) -> RetentionPolicyStatus {
    let (generation, ready, reason, message) = match state {
        PolicyState::Ready { generation } => (
            *generation,
            "True",
            "Watching",
            "its resources are watched and its objects judged".to_owned(),
        ),
        PolicyState::Invalid { generation, errors } => (
            *generation,
            "False",
            "InvalidSpec",
            errors
                .iter()
                .map(ToString::to_string)
                .collect::<Vec<_>>()
                .join("; "),
        ),
        PolicyState::NotServed {
            generation,
            missing,
        } => (
            *generation,
            "False",
            "ResourceNotServed",
            format!(
                "the API server does not serve {}",
                missing
                    .iter()
                    .map(ToString::to_string)
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
        ),
    };
    let previous_ready = previous.and_then(|s| s.conditions.iter().find(|c| c.type_ == "Ready"));
    let last_transition_time = match previous_ready {
        Some(c) if c.status == ready => c.last_transition_time,
        _ => Time(now),
    };
    RetentionPolicyStatus {
        observed_generation: generation,
        matched: counts.matched,
        waiting: counts.waiting,
        deleted,
        next_deletion_time: counts.next_deletion.map(Time),
        conditions: vec![Condition {
            type_: "Ready".to_owned(),
            status: ready.to_owned(),
            observed_generation: generation,
            last_transition_time,
            reason: reason.to_owned(),
            message,
        }],
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::controllers::retention::FieldError;

    fn at(secs: i64) -> DateTime<Utc> {
        DateTime::from_timestamp(1_800_000_000 + secs, 0).unwrap_or_default()
    }

    #[test]
    fn ready_keeps_its_transition_time_while_its_status_stays() {
        let counts = Counts {
            matched: 4,
            waiting: 2,
            next_deletion: Some(at(50)),
        };
        let ready = PolicyState::Ready {
            generation: Some(2),
        };
        let first = status_for(&ready, counts, 1, None, at(0));
        assert_eq!(first.observed_generation, Some(2));
        assert_eq!((first.matched, first.waiting, first.deleted), (4, 2, 1));
        assert_eq!(first.next_deletion_time, Some(Time(at(50))));
        let again = status_for(&ready, counts, 1, Some(&first), at(100));
        assert_eq!(again.conditions[0].last_transition_time, Time(at(0)));
        let invalid = PolicyState::Invalid {
            generation: Some(3),
            errors: vec![FieldError::new("spec.match", "does not compile: x")],
        };
        let broken = status_for(&invalid, Counts::default(), 1, Some(&again), at(200));
        let condition = &broken.conditions[0];
        assert_eq!(
            (condition.status.as_str(), condition.reason.as_str()),
            ("False", "InvalidSpec")
        );
        assert_eq!(condition.message, "spec.match: does not compile: x");
        assert_eq!(condition.last_transition_time, Time(at(200)));
    }
}
