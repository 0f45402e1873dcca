//! [`Batch`]: what one destination is told in one request — the deletions since its last
//! batch, and those an `Audit` policy would have made — held in bounded memory.
//!
//! Contract: pure. Every record is counted (per controller, policy and reason); only the first
//! `items` of each list are kept whole. So a batch weighs the same whether one object or a
//! million were deleted while the receiver was away: its size is bounded by the configuration
//! (the controllers, policies and reasons there are), never by the traffic.

use std::collections::BTreeMap;

use chrono::{DateTime, Utc};

use kube_gc_controllers::deleted::DeletionRecord;
use kube_gc_controllers::retention::policy::PolicyId;

/// What a count is kept by: controller, policy, reason.
pub type CountKey = (&'static str, Option<PolicyId>, &'static str);

/// One list of a batch: every record counted, the first few kept.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Records {
    /// How many.
    pub total: u64,
    /// The first ones, whole.
    pub items: Vec<DeletionRecord>,
    /// How many per controller, policy and reason.
    pub counts: BTreeMap<CountKey, u64>,
}

impl Records {
    fn push(&mut self, record: DeletionRecord, items: usize) {
        self.total += 1;
        let key = (record.controller, record.policy.clone(), record.reason);
        *self.counts.entry(key).or_default() += 1;
        if self.items.len() < items {
            self.items.push(record);
        }
    }

    /// How many were counted but not kept whole.
    pub fn omitted(&self) -> u64 {
        self.total.saturating_sub(self.items.len() as u64)
    }
}

/// The records of one destination since `since`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Batch {
    /// When it started gathering.
    pub since: DateTime<Utc>,
    /// Objects deleted.
    pub deleted: Records,
    /// Objects a policy in `Audit` mode would have deleted.
    pub would_delete: Records,
    items: usize,
}

impl Batch {
    /// An empty batch keeping `items` records of each list whole.
    pub fn new(since: DateTime<Utc>, items: usize) -> Batch {
        Batch {
            since,
            deleted: Records::default(),
            would_delete: Records::default(),
            items,
        }
    }

    /// Adds one record.
    pub fn push(&mut self, record: DeletionRecord) {
        if record.audit {
            self.would_delete.push(record, self.items);
        } else {
            self.deleted.push(record, self.items);
        }
    }

    /// Whether nothing was recorded.
    pub fn is_empty(&self) -> bool {
        self.deleted.total == 0 && self.would_delete.total == 0
    }

    /// The batch so far, leaving an empty one that starts at `now`.
    pub fn take(&mut self, now: DateTime<Utc>) -> Batch {
        std::mem::replace(self, Batch::new(now, self.items))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record(name: &str, audit: bool) -> DeletionRecord {
        DeletionRecord {
            controller: "retention",
            policy: Some(PolicyId::cluster("nightly")),
            audit,
            kind: "Pod".into(),
            namespace: Some("ci".into()),
            name: name.into(),
            uid: format!("uid-{name}"),
            reason: "ttl",
            at: DateTime::<Utc>::from_timestamp(1_800_000_000, 0).unwrap_or_default(),
        }
    }

    #[test]
    fn every_record_is_counted_and_only_the_first_few_kept_whole() {
        let start = DateTime::<Utc>::from_timestamp(1_800_000_000, 0).unwrap_or_default();
        let mut batch = Batch::new(start, 3);
        assert!(batch.is_empty());
        for i in 0..10_000 {
            batch.push(record(&format!("p{i}"), false));
        }
        batch.push(record("audited", true));
        assert_eq!(batch.deleted.total, 10_000);
        assert_eq!(batch.deleted.items.len(), 3);
        assert_eq!(batch.deleted.omitted(), 9_997);
        let key = ("retention", Some(PolicyId::cluster("nightly")), "ttl");
        assert_eq!(batch.deleted.counts[&key], 10_000);
        assert_eq!(batch.would_delete.total, 1);
        let later = start + chrono::Duration::minutes(1);
        let taken = batch.take(later);
        assert_eq!(taken.deleted.total, 10_000);
        assert!(batch.is_empty());
        assert_eq!(batch.since, later);
    }
}
