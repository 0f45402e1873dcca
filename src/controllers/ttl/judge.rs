//! The TTL decision, as a pure function of an object's [`TtlState`] and the time: upstream's
//! `processTTL` / `timeLeft`, with no I/O so every rule is unit-tested on its own.
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
use super::object::TtlState;

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

/// Decides what to do with `state` at `now`.
pub fn judge(state: &TtlState, now: DateTime<Utc>) -> Result<Verdict, MissingFinishTime> {
    let Some(ttl) = state.ttl_seconds else {
        return Ok(Verdict::Keep);
    };
    if state.being_deleted {
        return Ok(Verdict::Keep);
    }
    let finished_at = match state.finished {
        Finished::No => return Ok(Verdict::Keep),
        Finished::WithoutTime => return Err(MissingFinishTime),
        Finished::At(at) => at,
    };
    let expires_at = finished_at + chrono::Duration::seconds(i64::from(ttl));
    if expires_at <= now {
        return Ok(Verdict::Expired {
            expired_at: expires_at,
        });
    }
    let remaining = (expires_at - now).to_std().unwrap_or(Duration::ZERO);
    Ok(Verdict::Wait {
        expires_at,
        remaining,
        finished_in_future: finished_at > now,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(secs: i64) -> DateTime<Utc> {
        DateTime::from_timestamp(1_800_000_000 + secs, 0).unwrap_or_default()
    }

    fn finished(at_: DateTime<Utc>, ttl: Option<i32>) -> TtlState {
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
