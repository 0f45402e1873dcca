//! History limits: keep the newest `successfulHistoryLimit` successful and `failedHistoryLimit`
//! failed objects of a group, and nothing more — pure.
//!
//! Contract:
//! - Only finished objects are ranked, successful and failed ones separately, newest first by
//!   finish time; equal times are ordered by id, so the ranking never depends on the order the
//!   objects arrived in.
//! - An object finished without a known time is never ranked and never deleted for the limit
//!   (nothing is deleted on a guess); it does not take a place from the others either.
//! - An object beyond its limit is [`Ranked::kept`]` == false`: the engine deletes it. No limit
//!   for an outcome keeps every object of that outcome.
//! - [`rank`] returns every ranked object with its place, so a report can say "3rd
//!   newest of 7 successful runs; limit 3: kept".

use chrono::{DateTime, Utc};

use super::finish::Outcome;

/// The limits of one policy.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Limits {
    /// Successful objects kept per group.
    pub successful: Option<u32>,
    /// Failed objects kept per group.
    pub failed: Option<u32>,
}

impl Limits {
    /// The limit for `outcome`.
    pub fn for_outcome(&self, outcome: Outcome) -> Option<u32> {
        match outcome {
            Outcome::Succeeded => self.successful,
            Outcome::Failed => self.failed,
        }
    }

    /// Whether either limit is set.
    pub fn any(&self) -> bool {
        self.successful.is_some() || self.failed.is_some()
    }
}

/// A finished member of a group.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Member<Id> {
    /// Which object (its key).
    pub id: Id,
    /// How it ended.
    pub outcome: Outcome,
    /// When it finished, if known.
    pub finished_at: Option<DateTime<Utc>>,
}

/// A member's place among the group's objects of the same outcome.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Ranked<Id> {
    /// Which object.
    pub id: Id,
    /// How it ended.
    pub outcome: Outcome,
    /// 1 for the newest.
    pub position: usize,
    /// How many of that outcome the group has (with a known time).
    pub of: usize,
    /// The limit it was ranked against.
    pub limit: Option<u32>,
    /// Within the limit (or no limit).
    pub kept: bool,
}

/// Ranks the members with a known finish time, per outcome, newest first.
pub fn rank<Id: Ord + Clone>(members: &[Member<Id>], limits: Limits) -> Vec<Ranked<Id>> {
    let mut ranked = Vec::new();
    for outcome in [Outcome::Succeeded, Outcome::Failed] {
        let mut same: Vec<(DateTime<Utc>, &Id)> = members
            .iter()
            .filter(|m| m.outcome == outcome)
            .filter_map(|m| m.finished_at.map(|at| (at, &m.id)))
            .collect();
        // Newest first; ties by id, so that arrival order never matters.
        same.sort_by(|a, b| b.0.cmp(&a.0).then_with(|| a.1.cmp(b.1)));
        let limit = limits.for_outcome(outcome);
        let of = same.len();
        ranked.extend(same.into_iter().enumerate().map(|(i, (_, id))| Ranked {
            id: id.clone(),
            outcome,
            position: i + 1,
            of,
            limit,
            kept: limit.is_none_or(|l| i < l as usize),
        }));
    }
    ranked
}

/// The members beyond their limit: what the engine deletes, oldest last.
pub fn over_limit<Id: Ord + Clone>(members: &[Member<Id>], limits: Limits) -> Vec<Ranked<Id>> {
    if !limits.any() {
        return Vec::new();
    }
    rank(members, limits)
        .into_iter()
        .filter(|r| !r.kept)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(secs: i64) -> Option<DateTime<Utc>> {
        DateTime::from_timestamp(1_800_000_000 + secs, 0)
    }

    fn member(id: &str, outcome: Outcome, secs: Option<i64>) -> Member<String> {
        Member {
            id: id.to_owned(),
            outcome,
            finished_at: secs.and_then(at),
        }
    }

    fn ids(ranked: &[Ranked<String>]) -> Vec<&str> {
        ranked.iter().map(|r| r.id.as_str()).collect()
    }

    #[test]
    fn keeps_the_newest_of_each_outcome() {
        use Outcome::*;
        let members = vec![
            member("s1", Succeeded, Some(10)),
            member("s2", Succeeded, Some(20)),
            member("s3", Succeeded, Some(30)),
            member("f1", Failed, Some(15)),
            member("f2", Failed, Some(25)),
        ];
        let limits = Limits {
            successful: Some(2),
            failed: Some(1),
        };
        assert_eq!(ids(&over_limit(&members, limits)), ["s1", "f1"]);
        let s1 = rank(&members, limits)
            .into_iter()
            .find(|r| r.id == "s1")
            .unwrap();
        assert_eq!(
            (s1.position, s1.of, s1.limit, s1.kept),
            (3, 3, Some(2), false)
        );
    }

    #[test]
    fn no_limit_keeps_all_and_a_zero_limit_keeps_none() {
        use Outcome::*;
        let members = vec![
            member("s1", Succeeded, Some(10)),
            member("f1", Failed, Some(15)),
        ];
        assert!(over_limit(&members, Limits::default()).is_empty());
        let only_failed = Limits {
            successful: None,
            failed: Some(0),
        };
        assert_eq!(ids(&over_limit(&members, only_failed)), ["f1"]);
    }

    #[test]
    fn unknown_finish_times_are_never_ranked_nor_deleted() {
        use Outcome::*;
        let members = vec![
            member("unknown", Succeeded, None),
            member("old", Succeeded, Some(1)),
            member("new", Succeeded, Some(2)),
        ];
        let limits = Limits {
            successful: Some(1),
            failed: None,
        };
        assert_eq!(ids(&over_limit(&members, limits)), ["old"]);
        assert!(rank(&members, limits).iter().all(|r| r.id != "unknown"));
    }

    #[test]
    fn equal_times_are_ordered_by_id_whatever_the_arrival_order() {
        use Outcome::*;
        let limits = Limits {
            successful: Some(1),
            failed: None,
        };
        let forward = vec![
            member("a", Succeeded, Some(5)),
            member("b", Succeeded, Some(5)),
        ];
        let backward: Vec<_> = forward.iter().rev().cloned().collect();
        assert_eq!(ids(&over_limit(&forward, limits)), ["b"]);
        assert_eq!(ids(&over_limit(&backward, limits)), ["b"]);
    }
}
