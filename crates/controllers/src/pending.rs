//! What each controller will delete, and when: [`Pending`] per controller and retention policy
//! — how many deletions are due within each horizon asked for, and the earliest few — read from
//! a [`PendingSource`] each controller registers (its caches, judged at the moment asked).
//! `/metrics` publishes it as `kube_gc_pending_deletions` (`kube_gc_manager::metrics::pending`), a
//! policy's status holds its own, and the notifier sends what falls in its next window.
//!
//! Contract:
//! - A deletion is *due* at `at`, or now (`at: None`: a history limit's excess, or an object
//!   whose owners are gone); one due earlier than now counts as due now. Each object is counted
//!   once per controller and policy, at its earliest deletion.
//! - `within[i]` counts the deletions due by `now + horizons[i]`, those due now included;
//!   `earliest` lists at most the `limit` first of those due by the longest horizon: due now
//!   first (by namespace and name, as `kube-gc plan` lists them), then by time, namespace and
//!   name.
//! - A source only reads caches: no request, no lock held beyond its own cache's, quick enough
//!   for a scrape (it walks what the controller holds).
//! - `audit` marks a policy in `Audit` mode: what it would delete, which kube-gc will not.

use std::sync::Arc;
use std::time::Duration;

use chrono::{DateTime, Utc};

use crate::retention::policy::PolicyId;

/// One deletion to come.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PendingDeletion {
    /// The object's kind.
    pub kind: String,
    /// Its namespace (`None`: cluster-scoped).
    pub namespace: Option<String>,
    /// Its name.
    pub name: String,
    /// Its UID.
    pub uid: String,
    /// When it is due (`None`: now, with no time of its own).
    pub at: Option<DateTime<Utc>>,
    /// Why (`ttl`, `history_limit`, `owners_gone`).
    pub reason: &'static str,
}

impl PendingDeletion {
    /// The order deletions are listed in at `now`: due now first, then by time, then by place.
    pub fn order_key(
        &self,
        now: DateTime<Utc>,
    ) -> (bool, Option<DateTime<Utc>>, Option<&str>, &str) {
        let due = self.due_at(now);
        (
            !due,
            self.at.filter(|_| !due),
            self.namespace.as_deref(),
            &self.name,
        )
    }

    /// Whether it is due at `now`.
    pub fn due_at(&self, now: DateTime<Utc>) -> bool {
        self.at.is_none_or(|at| at <= now)
    }
}

/// One controller's (and policy's) deletions to come.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Pending {
    /// The controller.
    pub controller: &'static str,
    /// The retention policy (`None`: a controller without policies).
    pub policy: Option<PolicyId>,
    /// The policy is in `Audit` mode: none of these will be deleted.
    pub audit: bool,
    /// Due now.
    pub due_now: u64,
    /// Due by each horizon asked for, in the order asked.
    pub within: Vec<u64>,
    /// The earliest, at most as many as asked.
    pub earliest: Vec<PendingDeletion>,
}

/// What a [`PendingSource`] is asked.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PendingQuery {
    /// The moment.
    pub now: DateTime<Utc>,
    /// How far ahead each count looks.
    pub horizons: Vec<Duration>,
    /// How many deletions to list.
    pub limit: usize,
}

impl PendingQuery {
    /// The moment each horizon ends.
    pub fn ends(&self) -> Vec<DateTime<Utc>> {
        self.horizons
            .iter()
            .map(|h| self.now + chrono::Duration::from_std(*h).unwrap_or(chrono::TimeDelta::MAX))
            .collect()
    }
}

/// Tallies one controller's (and policy's) deletions into a [`Pending`] for a query.
#[derive(Debug)]
pub struct PendingTally {
    ends: Vec<DateTime<Utc>>,
    now: DateTime<Utc>,
    limit: usize,
    pending: Pending,
}

impl PendingTally {
    /// An empty tally for `controller` and `policy`.
    pub fn new(
        query: &PendingQuery,
        controller: &'static str,
        policy: Option<PolicyId>,
        audit: bool,
    ) -> PendingTally {
        PendingTally {
            ends: query.ends(),
            now: query.now,
            limit: query.limit,
            pending: Pending {
                controller,
                policy,
                audit,
                due_now: 0,
                within: vec![0; query.horizons.len()],
                earliest: Vec::new(),
            },
        }
    }

    /// Counts one deletion.
    pub fn add(&mut self, deletion: PendingDeletion) {
        let at = deletion.at.unwrap_or(self.now);
        if deletion.due_at(self.now) {
            self.pending.due_now += 1;
        }
        for (count, end) in self.pending.within.iter_mut().zip(&self.ends) {
            if at <= *end {
                *count += 1;
            }
        }
        let last = self.ends.iter().max().copied().unwrap_or(self.now);
        if at <= last && self.limit > 0 {
            self.keep_earliest(deletion);
        }
    }

    /// Keeps `deletion` if it is among the `limit` earliest so far (a short sorted list: the
    /// limit is a handful).
    fn keep_earliest(&mut self, deletion: PendingDeletion) {
        let (earliest, now) = (&mut self.pending.earliest, self.now);
        let place = earliest.partition_point(|d| d.order_key(now) <= deletion.order_key(now));
        if place < self.limit {
            earliest.insert(place, deletion);
            earliest.truncate(self.limit);
        }
    }

    /// The tally.
    pub fn finish(self) -> Pending {
        self.pending
    }
}

/// Where a controller's deletions to come are read.
pub trait PendingSource: Send + Sync {
    /// Its deletions to come, per policy (one [`Pending`] for a controller without policies).
    fn pending(&self, query: &PendingQuery) -> Vec<Pending>;
}

/// A shared source.
pub type SharedPendingSource = Arc<dyn PendingSource>;

impl<F> PendingSource for F
where
    F: Fn(&PendingQuery) -> Vec<Pending> + Send + Sync,
{
    fn pending(&self, query: &PendingQuery) -> Vec<Pending> {
        self(query)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(minutes: i64) -> DateTime<Utc> {
        DateTime::from_timestamp(1_800_000_000 + minutes * 60, 0).unwrap_or_default()
    }

    fn deletion(name: &str, minutes: Option<i64>) -> PendingDeletion {
        PendingDeletion {
            kind: "Pod".into(),
            namespace: Some("ci".into()),
            name: name.into(),
            uid: format!("uid-{name}"),
            at: minutes.map(at),
            reason: "ttl",
        }
    }

    #[test]
    fn deletions_are_counted_per_horizon_due_now_included_and_the_earliest_listed() {
        let query = PendingQuery {
            now: at(0),
            horizons: vec![Duration::from_secs(3600), Duration::from_secs(86_400)],
            limit: 3,
        };
        let mut tally = PendingTally::new(&query, "retention", None, false);
        for (name, minutes) in [
            ("tomorrow", Some(60 * 30)),
            ("later-today", Some(300)),
            ("soon", Some(10)),
            ("overdue", Some(-5)),
            ("limit", None),
            ("in-an-hour", Some(60)),
        ] {
            tally.add(deletion(name, minutes));
        }
        let pending = tally.finish();
        assert_eq!(pending.due_now, 2);
        assert_eq!(pending.within, [4, 5], "an hour (inclusive), a day");
        let names: Vec<&str> = pending.earliest.iter().map(|d| d.name.as_str()).collect();
        assert_eq!(
            names,
            ["limit", "overdue", "soon"],
            "due now by name, then by time"
        );
    }

    #[test]
    fn nothing_is_listed_beyond_the_longest_horizon_or_with_no_limit() {
        let query = PendingQuery {
            now: at(0),
            horizons: vec![Duration::from_secs(60)],
            limit: 0,
        };
        let mut tally = PendingTally::new(&query, "ttl-after-finished", None, false);
        tally.add(deletion("a", Some(0)));
        tally.add(deletion("b", Some(2)));
        let pending = tally.finish();
        assert_eq!((pending.due_now, pending.within.clone()), (1, vec![1]));
        assert!(pending.earliest.is_empty());
    }
}
