//! What the engine reports on each policy: `status` (`observedGeneration`, objects matched,
//! waiting, deleted, next deletion time, the `Ready` condition) — counted by a pure function
//! and written only when it changed.
//!
//! Contract:
//! - [`count`] walks the watches' assessments: an object is *matched* by the policy that
//!   governs it, *waiting* if its TTL runs out later (or now, not yet deleted), and the
//!   earliest such time is the *next deletion*; *unknown* if it is kept because its fate cannot
//!   be decided (finished without a finish time, or something in it unreadable).
//! - [`status_for`] builds the status from the plan's verdict on the policy, the counts, the
//!   deletions so far and its [`Outlook`] — its mode, what it will delete within the hour and
//!   the day and the next few (`upcoming.rs`), and under `Audit` how many it would delete now;
//!   `Ready` keeps its `lastTransitionTime` while its status stays.
//! - A policy with a notification destination of its own has a third condition, `Notifying`:
//!   `True` while its Secret is read and batches get through, `False` with what is in the way,
//!   `Unknown` until the notifier has tried.
//! - `Ready=False` reasons: `InvalidSpec` (the fields at fault in the message),
//!   `ResourceNotServed` (which targets) and `Forbidden` (which targets kube-gc may not read or
//!   delete, the server's words, the RBAC rule to grant); `Ready=True`: `Watching`.

use std::collections::BTreeMap;
use std::sync::Arc;

use chrono::{DateTime, Utc};

use crate::deleted::Delivery;
use crate::pending::Pending;
use crate::retention::assessment::Standing;
use crate::retention::policy::{Condition, Mode, NextDeletion, PolicyId, RetentionPolicyStatus};
use crate::retention::verdict::{decide, Verdict};
use kube_gc_api::Time;

use super::plan::PolicyState;
use super::refused::Refused;
use super::watch::ResourceWatch;

/// One policy's counts.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Counts {
    /// Objects it governs.
    pub matched: u64,
    /// Of those, objects with a TTL that runs out later (or has, and they are not deleted yet).
    pub waiting: u64,
    /// Of those, objects kept because their fate cannot be decided: finished without a finish
    /// time (or no creation time) under a TTL counted from it, or something in them that cannot
    /// be read (a malformed annotation, a CEL error).
    pub unknown: u64,
    /// The earliest expiry among them.
    pub next_deletion: Option<DateTime<Utc>>,
    /// Objects it governs that other policies also match, by the other policy.
    pub overlapping: BTreeMap<PolicyId, u64>,
    /// Objects it matches that a more specific policy governs, by that policy.
    pub governed_elsewhere: BTreeMap<PolicyId, u64>,
    /// Some of those overlaps were ties between equally specific policies (the name decided).
    pub ties: u64,
}

/// How many deletions to come a status lists.
pub const NEXT_DELETIONS: usize = 5;

/// The horizons of a status's counts: an hour and a day.
pub const STATUS_HORIZONS: [std::time::Duration; 2] = [
    std::time::Duration::from_secs(3600),
    std::time::Duration::from_secs(86_400),
];

/// What a policy's `Notifying` condition says.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub enum Notifying {
    /// It has no destination of its own: no condition.
    #[default]
    Unconfigured,
    /// It has one, and nothing was tried yet.
    Pending,
    /// How delivery goes.
    Known(Delivery),
}

/// What a policy will do, as its status says it.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Outlook {
    /// How its notifications go.
    pub notifying: Notifying,
    /// Its mode (`None`: unknown, the spec is invalid).
    pub mode: Option<Mode>,
    /// Due now, under `Audit`: what `Enforce` would have deleted.
    pub would_delete: u64,
    /// Due within the hour (due now included).
    pub within_hour: u64,
    /// Due within the day.
    pub within_day: u64,
    /// The next few.
    pub next: Vec<NextDeletion>,
}

impl Outlook {
    /// The outlook of a policy in `mode` whose deletions to come are `pending`, counted for
    /// [`STATUS_HORIZONS`] (none: it watches nothing).
    pub fn new(mode: Option<Mode>, pending: Option<&Pending>) -> Outlook {
        let Some(pending) = pending else {
            return Outlook {
                mode,
                ..Outlook::default()
            };
        };
        let within = |i: usize| pending.within.get(i).copied().unwrap_or_default();
        Outlook {
            notifying: Notifying::Unconfigured,
            mode,
            would_delete: if mode == Some(Mode::Audit) {
                pending.due_now
            } else {
                0
            },
            within_hour: within(0),
            within_day: within(1),
            next: pending
                .earliest
                .iter()
                .take(NEXT_DELETIONS)
                .map(|d| NextDeletion {
                    kind: d.kind.clone(),
                    namespace: d.namespace.clone(),
                    name: d.name.clone(),
                    deletes_at: d.at.map(Time),
                    reason: d.reason.to_owned(),
                })
                .collect(),
        }
    }
}

/// Counts every watch's assessments by governing policy.
pub fn count(watches: &[Arc<ResourceWatch>], now: DateTime<Utc>) -> BTreeMap<PolicyId, Counts> {
    let mut counts: BTreeMap<PolicyId, Counts> = BTreeMap::new();
    for watch in watches {
        for assessment in watch.store.list() {
            // An object its policy could not assess (a malformed annotation, a CEL error) is
            // still governed by it, and kept: matched, never waiting.
            let (index, governed) = match &assessment.standing {
                Standing::Governed(governed) => (governed.policy, Some(governed)),
                Standing::Problem(problem) => match problem.policy {
                    Some(index) => (index, None),
                    None => continue,
                },
                Standing::Ungoverned | Standing::Gone => continue,
            };
            let Some(policy) = watch.rules.policies.get(usize::from(index)) else {
                continue;
            };
            let Some(governed) = governed else {
                let entry = counts.entry(policy.id.clone()).or_default();
                entry.matched += 1;
                entry.unknown += 1;
                continue;
            };
            for &loser in governed.shadowed() {
                if let Some(loser) = watch.rules.policies.get(usize::from(loser)) {
                    let lost = counts.entry(loser.id.clone()).or_default();
                    *lost
                        .governed_elsewhere
                        .entry(policy.id.clone())
                        .or_default() += 1;
                    let won = counts.entry(policy.id.clone()).or_default();
                    *won.overlapping.entry(loser.id.clone()).or_default() += 1;
                }
            }
            let entry = counts.entry(policy.id.clone()).or_default();
            entry.matched += 1;
            entry.ties += u64::from(governed.tie());
            let expires_at = match decide(&governed.facts, governed.ttl, now) {
                Ok(Verdict::Wait { expires_at, .. }) => expires_at,
                Ok(Verdict::Expired { expired_at }) => expired_at,
                Ok(Verdict::Keep(_)) => continue,
                // Finished without saying when (a Pod with no container's `finishedAt`): kept,
                // and counted, so `kubectl get` shows what only an Event would say otherwise.
                Err(_) => {
                    entry.unknown += 1;
                    continue;
                }
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
    counts: &Counts,
    deleted: u64,
    outlook: &Outlook,
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
        PolicyState::Forbidden {
            generation,
            refused,
        } => (
            *generation,
            "False",
            "Forbidden",
            refused
                .iter()
                .map(Refused::describe)
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
    let ready = Condition {
        type_: "Ready".to_owned(),
        status: ready.to_owned(),
        observed_generation: generation,
        last_transition_time,
        reason: reason.to_owned(),
        message,
    };
    let overlap = overlap_condition(counts, generation, previous, now);
    let mut conditions = vec![ready, overlap];
    conditions.extend(notifying_condition(
        &outlook.notifying,
        generation,
        previous,
        now,
    ));
    RetentionPolicyStatus {
        observed_generation: generation,
        matched: counts.matched,
        waiting: counts.waiting,
        unknown: counts.unknown,
        deleted,
        mode: outlook.mode.map(|m| m.as_str().to_owned()),
        would_delete: outlook.would_delete,
        deletions_within_hour: outlook.within_hour,
        deletions_within_day: outlook.within_day,
        next_deletions: outlook.next.clone(),
        next_deletion_time: counts.next_deletion.map(Time),
        conditions,
    }
}

/// `Notifying`, for a policy with a destination of its own.
fn notifying_condition(
    notifying: &Notifying,
    generation: Option<i64>,
    previous: Option<&RetentionPolicyStatus>,
    now: DateTime<Utc>,
) -> Option<Condition> {
    let (status, reason, message) = match notifying {
        Notifying::Unconfigured => return None,
        Notifying::Pending => (
            "Unknown",
            "Pending",
            "no notification batch was sent yet".to_owned(),
        ),
        Notifying::Known(delivery) => (
            if delivery.delivered { "True" } else { "False" },
            delivery.reason,
            delivery.message.clone(),
        ),
    };
    let previous = previous.and_then(|s| s.conditions.iter().find(|c| c.type_ == "Notifying"));
    let last_transition_time = match previous {
        Some(c) if c.status == status => c.last_transition_time,
        _ => Time(now),
    };
    Some(Condition {
        type_: "Notifying".to_owned(),
        status: status.to_owned(),
        observed_generation: generation,
        last_transition_time,
        reason: reason.to_owned(),
        message,
    })
}

/// `Overlapping`: whether other policies match the same objects, and which one governs them —
/// reported, never guessed (`precedence.rs` decides; this says what it decided).
fn overlap_condition(
    counts: &Counts,
    generation: Option<i64>,
    previous: Option<&RetentionPolicyStatus>,
    now: DateTime<Utc>,
) -> Condition {
    let list = |by: &BTreeMap<PolicyId, u64>| {
        by.iter()
            .map(|(id, n)| format!("{n} with {id}"))
            .collect::<Vec<_>>()
            .join(", ")
    };
    let mut parts = Vec::new();
    if !counts.overlapping.is_empty() {
        parts.push(format!(
            "governs objects also matched by other policies: {}",
            list(&counts.overlapping)
        ));
    }
    if !counts.governed_elsewhere.is_empty() {
        parts.push(format!(
            "objects it matches are governed by more specific policies: {}",
            list(&counts.governed_elsewhere)
        ));
    }
    if counts.ties > 0 {
        parts.push(format!(
            "{} of them between equally specific policies, where the name decided",
            counts.ties
        ));
    }
    let (status, reason) = if parts.is_empty() {
        ("False", "NoOverlap")
    } else {
        ("True", "OtherPoliciesMatch")
    };
    let previous = previous.and_then(|s| s.conditions.iter().find(|c| c.type_ == "Overlapping"));
    let last_transition_time = match previous {
        Some(c) if c.status == status => c.last_transition_time,
        _ => Time(now),
    };
    Condition {
        type_: "Overlapping".to_owned(),
        status: status.to_owned(),
        observed_generation: generation,
        last_transition_time,
        reason: reason.to_owned(),
        message: parts.join("; "),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::retention::policy::FieldError;

    fn at(secs: i64) -> DateTime<Utc> {
        DateTime::from_timestamp(1_800_000_000 + secs, 0).unwrap_or_default()
    }

    #[test]
    fn ready_keeps_its_transition_time_while_its_status_stays() {
        let counts = Counts {
            matched: 4,
            waiting: 2,
            unknown: 1,
            next_deletion: Some(at(50)),
            ..Counts::default()
        };
        let ready = PolicyState::Ready {
            generation: Some(2),
        };
        let first = status_for(&ready, &counts, 1, &Outlook::default(), None, at(0));
        assert_eq!(first.observed_generation, Some(2));
        assert_eq!(
            (first.matched, first.waiting, first.unknown, first.deleted),
            (4, 2, 1, 1)
        );
        assert_eq!(first.next_deletion_time, Some(Time(at(50))));
        let again = status_for(
            &ready,
            &counts,
            1,
            &Outlook::default(),
            Some(&first),
            at(100),
        );
        assert_eq!(again.conditions[0].last_transition_time, Time(at(0)));
        let invalid = PolicyState::Invalid {
            generation: Some(3),
            errors: vec![FieldError::new("spec.match", "does not compile: x")],
        };
        let broken = status_for(
            &invalid,
            &Counts::default(),
            1,
            &Outlook::default(),
            Some(&again),
            at(200),
        );
        let condition = &broken.conditions[0];
        assert_eq!(
            (condition.status.as_str(), condition.reason.as_str()),
            ("False", "InvalidSpec")
        );
        assert_eq!(condition.message, "spec.match: does not compile: x");
        assert_eq!(condition.last_transition_time, Time(at(200)));
    }
}

#[cfg(test)]
mod overlap_tests {
    use super::*;

    fn id(name: &str) -> PolicyId {
        PolicyId {
            namespace: None,
            name: name.to_owned(),
        }
    }

    #[test]
    fn overlaps_are_reported_on_both_sides() {
        let now = DateTime::from_timestamp(1_800_000_000, 0).unwrap_or_default();
        let ready = PolicyState::Ready { generation: None };
        let winner = Counts {
            matched: 3,
            overlapping: BTreeMap::from([(id("all"), 3)]),
            ties: 1,
            ..Counts::default()
        };
        let status = status_for(&ready, &winner, 0, &Outlook::default(), None, now);
        let overlap = &status.conditions[1];
        assert_eq!(
            (overlap.type_.as_str(), overlap.status.as_str()),
            ("Overlapping", "True")
        );
        assert_eq!(
            overlap.message,
            "governs objects also matched by other policies: 3 with ClusterRetentionPolicy all; \
             1 of them between equally specific policies, where the name decided"
        );
        let loser = Counts {
            governed_elsewhere: BTreeMap::from([(id("specific"), 3)]),
            ..Counts::default()
        };
        let message = status_for(&ready, &loser, 0, &Outlook::default(), None, now).conditions[1]
            .message
            .clone();
        assert_eq!(
            message,
            "objects it matches are governed by more specific policies: 3 with ClusterRetentionPolicy specific"
        );
        let alone = status_for(
            &ready,
            &Counts::default(),
            0,
            &Outlook::default(),
            None,
            now,
        );
        assert_eq!(alone.conditions[1].reason, "NoOverlap");
    }
}

#[cfg(test)]
mod outlook_tests {
    use super::*;
    use crate::pending::PendingDeletion;

    fn pending(due_now: u64, names: &[&str]) -> Pending {
        Pending {
            controller: "retention",
            policy: Some(PolicyId::cluster("p")),
            audit: false,
            due_now,
            within: vec![4, 9],
            earliest: names
                .iter()
                .map(|name| PendingDeletion {
                    kind: "Pod".into(),
                    namespace: Some("ci".into()),
                    name: (*name).into(),
                    uid: String::new(),
                    at: None,
                    reason: "history_limit",
                })
                .collect(),
        }
    }

    #[test]
    fn only_an_audit_policy_would_delete_and_the_status_lists_a_handful() {
        let many = ["a", "b", "c", "d", "e", "f", "g"];
        let enforce = Outlook::new(Some(Mode::Enforce), Some(&pending(2, &many)));
        assert_eq!(
            enforce.would_delete, 0,
            "Enforce deletes them: nothing would"
        );
        assert_eq!((enforce.within_hour, enforce.within_day), (4, 9));
        assert_eq!(enforce.next.len(), NEXT_DELETIONS);
        assert_eq!(enforce.next[0].reason, "history_limit");
        let audit = Outlook::new(Some(Mode::Audit), Some(&pending(2, &["a"])));
        assert_eq!(audit.would_delete, 2);
        let ready = PolicyState::Ready { generation: None };
        let now = DateTime::from_timestamp(1_800_000_000, 0).unwrap_or_default();
        let status = status_for(&ready, &Counts::default(), 0, &audit, None, now);
        assert_eq!(status.mode.as_deref(), Some("Audit"));
        assert_eq!((status.would_delete, status.deletions_within_hour), (2, 4));
        assert_eq!(status.next_deletions[0].name, "a");
        let idle = Outlook::new(Some(Mode::Enforce), None);
        assert_eq!(idle.within_day, 0);
        assert!(idle.next.is_empty());
    }
}
