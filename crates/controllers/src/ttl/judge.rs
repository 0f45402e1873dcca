//! The TTL decision, as a pure function of an object's [`TtlState`] and the time: upstream's
//! `processTTL` / `timeLeft`, with no I/O so every rule is unit-tested on its own. It is the
//! retention engine's decision (`retention/verdict.rs`) applied to the object's own TTL, so the
//! two controllers and the retention presets `batch-jobs` / `volcano-jobs` cannot disagree.
//! The controller itself calls `decide` on the cached assessment (`retention/engine/watch.rs`,
//! `retention/engine/reconcile/`); `kube-gc explain` asks this one, in a [`TtlState`]'s terms.
//!
//! Contract:
//! - Not finished, no TTL, or already being deleted → [`Verdict::Keep`].
//! - Finished at `f` with TTL `t`: it expires at `f + t`. Before then → [`Verdict::Wait`] with
//!   the time left; at or after → [`Verdict::Expired`].
//! - A finish time later than now (clock skew between the cluster and this process) is not an
//!   error: the time left simply includes the skew, and `Wait::finished_in_future` lets the
//!   caller warn about it.
//! - Finished without a finish time → [`MissingFinishTime`]: nothing can be scheduled, and
//!   nothing is deleted on a guess.

use std::time::Duration;

use chrono::{DateTime, Utc};

use super::kind::Finished;
use super::state::TtlState;

/// What to do with an object now.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Verdict {
    /// Nothing, until it changes.
    Keep,
    /// Look again when the TTL runs out.
    Wait {
        /// When it expires.
        expires_at: DateTime<Utc>,
        /// How long until then.
        remaining: Duration,
        /// Its finish time is later than now: the clocks disagree.
        finished_in_future: bool,
    },
    /// Its TTL has run out: delete it.
    Expired {
        /// When it expired (the deletion-latency metric counts from here).
        expired_at: DateTime<Utc>,
    },
}

/// A finished object without a finish time.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
#[error("finished, but its finish time is not set")]
pub struct MissingFinishTime;

/// Decides what to do with `state` at `now`: the retention engine's [`decide`] (one decision
/// function for every TTL kube-gc applies), with the object's own TTL counted from its finish.
///
/// [`decide`]: crate::retention::verdict::decide
pub fn judge(state: &TtlState, now: DateTime<Utc>) -> Result<Verdict, MissingFinishTime> {
    use crate::retention::finish::{Finished as Done, Outcome};
    use crate::retention::ttl::{Since, Ttl};
    use crate::retention::verdict::{self as shared, Facts};

    let Some(ttl) = state.ttl_seconds else {
        return Ok(Verdict::Keep);
    };
    // The outcome does not matter to a TTL; only history limits tell the two apart.
    let finished = |at| {
        Some(Done {
            outcome: Outcome::Succeeded,
            at,
        })
    };
    let facts = Facts {
        being_deleted: state.being_deleted,
        created_at: None,
        finished: match state.finished {
            Finished::No => None,
            Finished::At(at) => finished(Some(at)),
            Finished::WithoutTime => finished(None),
        },
    };
    let ttl = Ttl::After {
        since: Since::Finished,
        length: chrono::Duration::seconds(ttl),
    };
    match shared::decide(&facts, ttl, now) {
        Ok(shared::Verdict::Keep(_)) => Ok(Verdict::Keep),
        Ok(shared::Verdict::Wait {
            expires_at,
            remaining,
            finished_in_future,
        }) => Ok(Verdict::Wait {
            expires_at,
            remaining,
            finished_in_future,
        }),
        Ok(shared::Verdict::Expired { expired_at }) => Ok(Verdict::Expired { expired_at }),
        // Counted from the finish, the only time that can be missing is the finish time.
        Err(_) => Err(MissingFinishTime),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(secs: i64) -> DateTime<Utc> {
        DateTime::from_timestamp(1_800_000_000 + secs, 0).unwrap_or_default()
    }

    fn finished(at_: DateTime<Utc>, ttl: Option<i64>) -> TtlState {
        TtlState {
            being_deleted: false,
            ttl_seconds: ttl,
            finished: Finished::At(at_),
        }
    }

    #[test]
    fn nothing_to_do_without_ttl_finish_or_while_deleting() {
        let no_ttl = finished(at(0), None);
        assert_eq!(judge(&no_ttl, at(100)), Ok(Verdict::Keep));
        let running = TtlState {
            finished: Finished::No,
            ..finished(at(0), Some(0))
        };
        assert_eq!(judge(&running, at(100)), Ok(Verdict::Keep));
        let deleting = TtlState {
            being_deleted: true,
            ..finished(at(0), Some(0))
        };
        assert_eq!(judge(&deleting, at(100)), Ok(Verdict::Keep));
    }

    #[test]
    fn ttl_zero_expires_at_the_finish_time() {
        let state = finished(at(10), Some(0));
        assert_eq!(
            judge(&state, at(10)),
            Ok(Verdict::Expired { expired_at: at(10) })
        );
    }

    #[test]
    fn waits_exactly_the_time_left_then_expires() {
        let state = finished(at(0), Some(60));
        assert_eq!(
            judge(&state, at(45)),
            Ok(Verdict::Wait {
                expires_at: at(60),
                remaining: Duration::from_secs(15),
                finished_in_future: false
            })
        );
        assert_eq!(
            judge(&state, at(61)),
            Ok(Verdict::Expired { expired_at: at(60) })
        );
    }

    #[test]
    fn a_finish_time_in_the_future_defers_cleanup() {
        let state = finished(at(30), Some(10));
        assert_eq!(
            judge(&state, at(0)),
            Ok(Verdict::Wait {
                expires_at: at(40),
                remaining: Duration::from_secs(40),
                finished_in_future: true
            })
        );
    }

    #[test]
    fn finished_without_a_time_is_an_error() {
        let state = TtlState {
            finished: Finished::WithoutTime,
            ..finished(at(0), Some(5))
        };
        assert_eq!(judge(&state, at(0)), Err(MissingFinishTime));
    }
}
