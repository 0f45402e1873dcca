//! The TTL controllers' decision (`ttl-after-finished`, `volcano-job-ttl`): the engine's
//! assessment under the controller's fixed policy, read as a [`TtlState`] and judged by `judge`.
//!
//! Contract: [`judgement_decision`] is the one place the decision is worded; `kube-gc explain`
//! reaches it by assessing the object it read ([`from_gathered`]), `/debug/explain` with the
//! assessment the controller cached. A resource that is not the controller's kind is "does not
//! apply" ([`not_its_resource`]), whichever path asks.

use chrono::{DateTime, Utc};

use kube_gc_client::ResourceRef;
use kube_gc_controllers::retention::assessment::Assessment;
use kube_gc_controllers::ttl::{judge, judge_object, TtlKind, TtlState, Verdict};

use super::{decision, relative, rfc3339};
use crate::explain::gather::Gathered;
use crate::explain::{Decision, VerdictKind};

/// The decision of the TTL controller of `K` on `gathered`, projected as the controller
/// projects what it watches.
pub(crate) fn from_gathered<K: TtlKind>(gathered: &Gathered, now: DateTime<Utc>) -> Decision {
    if let Some(not_its) = not_its_resource::<K>(&gathered.resource) {
        return not_its;
    }
    judgement_decision::<K>(&judge_object::<K>(&gathered.object, now), now)
}

/// The controller's decision on the assessment it made (or would make) of an object.
pub(crate) fn judgement_decision<K: TtlKind>(
    assessment: &Assessment,
    now: DateTime<Utc>,
) -> Decision {
    match TtlState::of(assessment) {
        Ok(state) => state_decision::<K>(&state, now),
        Err(problem) => decision(
            K::CONTROLLER,
            true,
            VerdictKind::Unknown,
            format!("kept: {}", problem.message),
        ),
    }
}

/// "Does not apply" when `resource` is not the kind the controller of `K` cleans up.
pub(crate) fn not_its_resource<K: TtlKind>(resource: &ResourceRef) -> Option<Decision> {
    let its = K::resource();
    (!resource.is_same_resource(&its)).then(|| {
        let why = format!(
            "does not apply: it cleans up {} ({}) only",
            K::KIND,
            its.path_name()
        );
        decision(K::CONTROLLER, false, VerdictKind::Keep, why)
    })
}

/// The controller's decision on an object of its kind in `state`, at `now`.
pub(crate) fn state_decision<K: TtlKind>(state: &TtlState, now: DateTime<Utc>) -> Decision {
    let Some(ttl) = state.ttl_seconds else {
        return decision(
            K::CONTROLLER,
            false,
            VerdictKind::Keep,
            "does not apply: no spec.ttlSecondsAfterFinished".into(),
        );
    };
    let mut d = judged::<K>(state, ttl, now);
    d.details.push(format!(
        "controller: {} (the rules of {} for {})",
        K::CONTROLLER,
        K::RULES,
        K::KIND
    ));
    d
}

fn judged<K: TtlKind>(state: &TtlState, ttl: i64, now: DateTime<Utc>) -> Decision {
    let said = |verdict, summary: String| decision(K::CONTROLLER, true, verdict, summary);
    match judge(state, now) {
        Ok(Verdict::Keep) if state.being_deleted => {
            said(VerdictKind::Keep, "already being deleted".into())
        }
        Ok(Verdict::Keep) => said(
            VerdictKind::Keep,
            format!("not finished: its ttlSecondsAfterFinished ({ttl}s) starts when it finishes"),
        ),
        Ok(Verdict::Wait {
            expires_at,
            finished_in_future,
            ..
        }) => {
            let mut d = said(
                VerdictKind::DeleteAt,
                format!(
                    "ttlSecondsAfterFinished {ttl}s expires at {} ({})",
                    rfc3339(expires_at),
                    relative(expires_at, now)
                ),
            );
            d.delete_at = Some(rfc3339(expires_at));
            if finished_in_future {
                d.details.push("its finish time is later than now: the cluster's and this machine's clocks disagree".into());
            }
            d
        }
        Ok(Verdict::Expired { expired_at }) => said(
            VerdictKind::DeleteNow,
            format!(
                "ttlSecondsAfterFinished {ttl}s expired at {} ({})",
                rfc3339(expired_at),
                relative(expired_at, now)
            ),
        ),
        Err(_) => said(
            VerdictKind::Unknown,
            "finished, but its finish time is not set: its TTL cannot be applied, and it is not deleted on a guess".into(),
        ),
    }
}
