//! Graceful deletion, as the pod registry grants it (upstream's `CheckGracefulDelete` and the
//! generic `BeforeDelete`): how long a deleted Pod is left for its kubelet to stop it.
//!
//! Contract: [`plan`] is a pure function of the stored object, the request's
//! `gracePeriodSeconds` and the time; it says whether the deletion writes a mark and which.
//! - A Pod not marked yet is marked with `deletionTimestamp` = now + its grace period and
//!   `deletionGracePeriodSeconds` = that period. The period is the request's, else the Pod's
//!   `spec.terminationGracePeriodSeconds`; **0** when the Pod is not bound to a node or its
//!   phase is `Succeeded` or `Failed` (exchanges 67, 177); a negative period counts as 1.
//!   With a period above 0 the Pod stays (exchange 171); with 0 it goes, unless finalizers
//!   hold it (exchange 180).
//! - A Pod already marked with a period above 0: a request with a shorter period moves the mark
//!   earlier by the difference (exchange 173; with 0 the Pod then goes: 174, 176); any other
//!   request writes nothing and is answered with the Pod as stored (exchange 172).
//! - A Pod marked with no period left (0, or none) is past grace: the deletion is not graceful.
//!
//! The caller (`delete.rs`) combines this with finalizers and propagation policies.

use chrono::{DateTime, Duration, Utc};
use serde_json::Value;

use crate::object;

/// What a deletion of a gracefully deleted object writes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Grace {
    /// A graceful deletion is pending and the request does not shorten it: nothing is written.
    Pending,
    /// The object is marked with no grace period left: the deletion is not graceful.
    Over,
    /// Write this mark.
    Mark {
        /// The `deletionTimestamp`: when the grace period ends.
        timestamp: DateTime<Utc>,
        /// The `deletionGracePeriodSeconds`.
        period: i64,
    },
}

/// What deleting `existing` with `requested` as `gracePeriodSeconds` at `now` writes (see the
/// module documentation).
pub(super) fn plan(existing: &Value, requested: Option<i64>, now: DateTime<Utc>) -> Grace {
    let requested = requested.map(at_least_one_if_negative);
    let Some(marked_at) = object::deletion_timestamp(existing) else {
        let period = first_period(existing, requested);
        return Grace::Mark {
            timestamp: now + Duration::seconds(period),
            period,
        };
    };
    let current = object::meta(existing)
        .and_then(|m| m.get("deletionGracePeriodSeconds"))
        .and_then(Value::as_i64)
        .map(at_least_one_if_negative);
    match (current, requested) {
        (None | Some(0), _) => Grace::Over,
        (Some(current), Some(shorter)) if shorter < current => {
            let marked_at =
                DateTime::parse_from_rfc3339(marked_at).map_or(now, |at| at.with_timezone(&Utc));
            Grace::Mark {
                timestamp: marked_at - Duration::seconds(current) + Duration::seconds(shorter),
                period: shorter,
            }
        }
        _ => Grace::Pending,
    }
}

/// The grace period of a first deletion (`CheckGracefulDelete`).
fn first_period(pod: &Value, requested: Option<i64>) -> i64 {
    let spec = pod.get("spec");
    let own = spec
        .and_then(|s| s.get("terminationGracePeriodSeconds"))
        .and_then(Value::as_i64);
    let bound = spec
        .and_then(|s| s.get("nodeName"))
        .and_then(Value::as_str)
        .is_some_and(|node| !node.is_empty());
    let phase = pod
        .get("status")
        .and_then(|s| s.get("phase"))
        .and_then(Value::as_str);
    let terminated = matches!(phase, Some("Succeeded" | "Failed"));
    if !bound || terminated {
        return 0;
    }
    at_least_one_if_negative(requested.or(own).unwrap_or(0))
}

/// A negative grace period is treated as one second.
fn at_least_one_if_negative(period: i64) -> i64 {
    if period < 0 {
        1
    } else {
        period
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn now() -> DateTime<Utc> {
        DateTime::parse_from_rfc3339("2026-11-29T02:54:26Z")
            .map(|t| t.with_timezone(&Utc))
            .unwrap_or_default()
    }

    fn at(seconds: i64) -> DateTime<Utc> {
        now() + Duration::seconds(seconds)
    }

    fn pod(node: &str, phase: &str) -> Value {
        json!({"spec": {"nodeName": node, "terminationGracePeriodSeconds": 30},
            "status": {"phase": phase}})
    }

    fn marked(seconds_from_now: i64, period: i64) -> Value {
        let mut pod = pod("n", "Running");
        let stamp = crate::clock::format_time(at(seconds_from_now));
        pod["metadata"] = json!({"deletionTimestamp": stamp, "deletionGracePeriodSeconds": period});
        pod
    }

    #[test]
    fn a_bound_running_pod_gets_its_own_grace_period_or_the_requested_one() {
        // Exchange 171: no body, 30 s from the spec.
        let mark = |timestamp, period| Grace::Mark { timestamp, period };
        assert_eq!(plan(&pod("n", "Running"), None, now()), mark(at(30), 30));
        assert_eq!(plan(&pod("n", "Pending"), Some(5), now()), mark(at(5), 5));
        assert_eq!(plan(&pod("n", "Running"), Some(0), now()), mark(now(), 0));
        assert_eq!(plan(&pod("n", "Running"), Some(-3), now()), mark(at(1), 1));
    }

    #[test]
    fn an_unbound_or_terminated_pod_gets_none() {
        for pod in [
            pod("", "Running"),
            pod("n", "Succeeded"),
            pod("n", "Failed"),
        ] {
            let plan = plan(&pod, Some(60), now());
            assert_eq!(
                plan,
                Grace::Mark {
                    timestamp: now(),
                    period: 0
                }
            );
        }
        let no_spec = json!({"metadata": {"name": "p"}});
        assert_eq!(
            plan(&no_spec, None, now()),
            Grace::Mark {
                timestamp: now(),
                period: 0
            }
        );
    }

    #[test]
    fn a_pending_deletion_is_only_ever_shortened() {
        // Marked 10 s ago with 30 s: the mark is 20 s ahead.
        let pending = marked(20, 30);
        assert_eq!(plan(&pending, None, now()), Grace::Pending);
        assert_eq!(plan(&pending, Some(30), now()), Grace::Pending);
        assert_eq!(plan(&pending, Some(60), now()), Grace::Pending);
        // Exchange 173: 5 instead of 30 moves the mark 25 s earlier.
        assert_eq!(
            plan(&pending, Some(5), now()),
            Grace::Mark {
                timestamp: at(-5),
                period: 5
            }
        );
        assert_eq!(
            plan(&pending, Some(0), now()),
            Grace::Mark {
                timestamp: at(-10),
                period: 0
            }
        );
    }

    #[test]
    fn a_mark_with_no_period_left_is_past_grace() {
        assert_eq!(plan(&marked(0, 0), Some(0), now()), Grace::Over);
        let mut no_period = marked(0, 0);
        no_period["metadata"]
            .as_object_mut()
            .map(|m| m.remove("deletionGracePeriodSeconds"));
        assert_eq!(plan(&no_period, None, now()), Grace::Over);
    }
}
