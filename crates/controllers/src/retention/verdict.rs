//! The retention decision for one object, as a pure function of what is known about it, its
//! [`Ttl`] and the time — the TTL controller's `judge`, generalised.
//!
//! Contract:
//! - Being deleted, or no TTL → [`Verdict::Keep`] (a history limit may still delete it; that
//!   is `history.rs`).
//! - Counted from the finish: not finished → keep; finished at `f` → expires at `f + length`;
//!   finished without a time → [`Unschedulable::FinishTimeUnknown`], never a deletion.
//! - Counted from creation: expires at `created + length`, finished or not; no creation time →
//!   [`Unschedulable::CreationTimeUnknown`].
//! - A fixed time (`kube-gc.io/expires-at`) under a finish-based policy waits for the object to
//!   finish too: it expires at the later of the two (an unknown finish time counts as now's
//!   finish, because the annotation said when and the object has finished).
//! - Before the expiry → [`Verdict::Wait`] with the time left; at or after → [`Verdict::Expired`].
//!   A finish time later than now (clock skew) only lengthens the wait, and is flagged.

use std::time::Duration as StdDuration;

use chrono::{DateTime, Utc};

use super::finish::Finished;
use super::ttl::{Since, Ttl};

/// What the decision reads about an object.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Facts {
    /// `metadata.deletionTimestamp` is set.
    pub being_deleted: bool,
    /// `metadata.creationTimestamp`.
    pub created_at: Option<DateTime<Utc>>,
    /// Whether, how and when it finished (`None`: still running).
    pub finished: Option<Finished>,
}

/// Why an object is kept for now.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum KeepReason {
    /// Someone is deleting it already.
    BeingDeleted,
    /// It has no TTL.
    NoTtl,
    /// Its TTL counts from the finish, and it has not finished.
    NotFinished,
}

/// What to do with the object now.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Verdict {
    /// Nothing, until it changes.
    Keep(KeepReason),
    /// Look again when it expires.
    Wait {
        /// When it expires.
        expires_at: DateTime<Utc>,
        /// How long until then.
        remaining: StdDuration,
        /// Its finish time is later than now: the clocks disagree.
        finished_in_future: bool,
    },
    /// Its time is up: delete it.
    Expired {
        /// When it expired (deletion latency counts from here).
        expired_at: DateTime<Utc>,
    },
}

/// A TTL that cannot be scheduled because a time it counts from is missing.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
pub enum Unschedulable {
    /// Finished, but it does not say when.
    #[error("finished, but its finish time is not known")]
    FinishTimeUnknown,
    /// No `creationTimestamp`.
    #[error("its creation time is not known")]
    CreationTimeUnknown,
}

/// Decides what to do with an object at `now`.
pub fn decide(facts: &Facts, ttl: Ttl, now: DateTime<Utc>) -> Result<Verdict, Unschedulable> {
    if facts.being_deleted {
        return Ok(Verdict::Keep(KeepReason::BeingDeleted));
    }
    let expires_at = match ttl {
        Ttl::None => return Ok(Verdict::Keep(KeepReason::NoTtl)),
        Ttl::After { since, length } => match start(facts, since)? {
            Some(start) => start + length,
            None => return Ok(Verdict::Keep(KeepReason::NotFinished)),
        },
        Ttl::At {
            since: Since::Created,
            at,
        } => at,
        Ttl::At {
            since: Since::Finished,
            at,
        } => match facts.finished {
            None => return Ok(Verdict::Keep(KeepReason::NotFinished)),
            Some(finished) => finished.at.map_or(at, |f| f.max(at)),
        },
    };
    Ok(verdict_at(expires_at, finished_in_future(facts, now), now))
}

/// The time the TTL counts from; `None` if it counts from a finish that has not happened.
fn start(facts: &Facts, since: Since) -> Result<Option<DateTime<Utc>>, Unschedulable> {
    match since {
        Since::Created => facts
            .created_at
            .map(Some)
            .ok_or(Unschedulable::CreationTimeUnknown),
        Since::Finished => match facts.finished {
            None => Ok(None),
            Some(Finished { at: None, .. }) => Err(Unschedulable::FinishTimeUnknown),
            Some(Finished { at: Some(at), .. }) => Ok(Some(at)),
        },
    }
}

fn finished_in_future(facts: &Facts, now: DateTime<Utc>) -> bool {
    facts.finished.and_then(|f| f.at).is_some_and(|at| at > now)
}

fn verdict_at(expires_at: DateTime<Utc>, finished_in_future: bool, now: DateTime<Utc>) -> Verdict {
    if expires_at <= now {
        return Verdict::Expired {
            expired_at: expires_at,
        };
    }
    Verdict::Wait {
        expires_at,
        remaining: (expires_at - now).to_std().unwrap_or(StdDuration::ZERO),
        finished_in_future,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::retention::finish::Outcome;
    use chrono::Duration;

    fn at(secs: i64) -> DateTime<Utc> {
        DateTime::from_timestamp(1_800_000_000 + secs, 0).unwrap_or_default()
    }

    fn finished(secs: Option<i64>) -> Facts {
        Facts {
            being_deleted: false,
            created_at: Some(at(0)),
            finished: Some(Finished {
                outcome: Outcome::Succeeded,
                at: secs.map(at),
            }),
        }
    }

    fn running() -> Facts {
        Facts {
            finished: None,
            ..finished(Some(0))
        }
    }

    fn after(since: Since, secs: i64) -> Ttl {
        Ttl::After {
            since,
            length: Duration::seconds(secs),
        }
    }

    #[test]
    fn counts_from_the_finish_and_never_deletes_a_running_object() {
        let ttl = after(Since::Finished, 60);
        assert_eq!(
            decide(&running(), ttl, at(10_000)),
            Ok(Verdict::Keep(KeepReason::NotFinished))
        );
        assert_eq!(
            decide(&finished(Some(100)), ttl, at(130)),
            Ok(Verdict::Wait {
                expires_at: at(160),
                remaining: StdDuration::from_secs(30),
                finished_in_future: false
            })
        );
        assert_eq!(
            decide(&finished(Some(100)), ttl, at(160)),
            Ok(Verdict::Expired {
                expired_at: at(160)
            })
        );
        assert_eq!(
            decide(&finished(None), ttl, at(160)),
            Err(Unschedulable::FinishTimeUnknown)
        );
    }

    #[test]
    fn counts_from_creation_finished_or_not() {
        let ttl = after(Since::Created, 8 * 3600);
        assert_eq!(
            decide(&running(), ttl, at(8 * 3600)),
            Ok(Verdict::Expired {
                expired_at: at(8 * 3600)
            })
        );
        let no_creation = Facts {
            created_at: None,
            ..running()
        };
        assert_eq!(
            decide(&no_creation, ttl, at(0)),
            Err(Unschedulable::CreationTimeUnknown)
        );
    }

    #[test]
    fn an_expiry_time_under_a_finish_based_policy_waits_for_the_finish() {
        let ttl = Ttl::At {
            since: Since::Finished,
            at: at(50),
        };
        assert_eq!(
            decide(&running(), ttl, at(1000)),
            Ok(Verdict::Keep(KeepReason::NotFinished))
        );
        assert_eq!(
            decide(&finished(Some(80)), ttl, at(1000)),
            Ok(Verdict::Expired { expired_at: at(80) })
        );
        assert_eq!(
            decide(&finished(None), ttl, at(1000)),
            Ok(Verdict::Expired { expired_at: at(50) })
        );
        let created_based = Ttl::At {
            since: Since::Created,
            at: at(50),
        };
        assert!(matches!(
            decide(&running(), created_based, at(50)),
            Ok(Verdict::Expired { .. })
        ));
    }

    #[test]
    fn being_deleted_or_no_ttl_keeps_and_skew_is_flagged() {
        let deleting = Facts {
            being_deleted: true,
            ..finished(Some(0))
        };
        assert_eq!(
            decide(&deleting, after(Since::Finished, 0), at(100)),
            Ok(Verdict::Keep(KeepReason::BeingDeleted))
        );
        assert_eq!(
            decide(&finished(Some(0)), Ttl::None, at(100)),
            Ok(Verdict::Keep(KeepReason::NoTtl))
        );
        assert!(matches!(
            decide(&finished(Some(100)), after(Since::Finished, 10), at(0)),
            Ok(Verdict::Wait {
                finished_in_future: true,
                ..
            })
        ));
    }
}
