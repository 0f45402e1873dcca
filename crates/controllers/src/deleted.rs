//! [`DeletionFeed`]: where a controller tells what it deleted — or, under a policy in `Audit`
//! mode, would have deleted — one [`DeletionRecord`] per object, for whoever reports it
//! further (the notifier, `crate::notify`).
//!
//! A retention policy can have its own destination (`spec.notification`): the retention
//! controller tells the feed where each policy's reports go ([`DeletionFeed::route`], after
//! each plan) and asks how their delivery goes ([`DeletionFeed::delivery`], for the policy's
//! `Notifying` condition).
//!
//! Contract: as [`EventRecorder::record`](kube_gc_runtime::events::EventRecorder::record),
//! [`DeletionFeed::record`] never blocks, never fails and never awaits: it is called on the
//! deletion path, after the DELETE was answered, and must not slow the next one. What becomes of
//! a record (batched, sent, dropped) is the feed's business. `route` and `delivery` are as
//! quick: no I/O.

use std::collections::BTreeMap;
use std::sync::Arc;

use chrono::{DateTime, Utc};

use crate::retention::policy::{PolicyId, WebhookSecret};

/// One object deleted, or that an `Audit` policy would have deleted.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DeletionRecord {
    /// The controller (`retention`, `ttl-after-finished`, `garbagecollector`).
    pub controller: &'static str,
    /// The retention policy it was deleted under, if any.
    pub policy: Option<PolicyId>,
    /// Not deleted: an `Audit` policy would have deleted it.
    pub audit: bool,
    /// The object's kind.
    pub kind: String,
    /// Its namespace (`None`: cluster-scoped).
    pub namespace: Option<String>,
    /// Its name.
    pub name: String,
    /// Its UID.
    pub uid: String,
    /// Why, as the controller's metrics say it (`ttl`, `history_limit`, `owners_gone`).
    pub reason: &'static str,
    /// When the DELETE was answered (or, `audit`, when it would have been sent).
    pub at: DateTime<Utc>,
}

/// How a policy's notifications are delivered, as its `Notifying` condition says it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Delivery {
    /// `True`: they get through; `False`: something is in the way.
    pub delivered: bool,
    /// A CamelCase reason.
    pub reason: &'static str,
    /// What an operator needs to know (never the URL whole).
    pub message: String,
}

/// Where deletions are told.
pub trait DeletionFeed: Send + Sync {
    /// Takes one record; returns at once whatever becomes of it.
    fn record(&self, record: DeletionRecord);

    /// The retention policies that have a destination of their own, and where: every policy,
    /// each time (a policy not named has none any more).
    fn route(&self, _policies: BTreeMap<PolicyId, WebhookSecret>) {}

    /// How `policy`'s notifications are delivered (`None`: it has no destination of its own,
    /// or nothing was tried yet).
    fn delivery(&self, _policy: &PolicyId) -> Option<Delivery> {
        None
    }
}

/// A shared feed, as controllers hold it.
pub type SharedFeed = Arc<dyn DeletionFeed>;

/// A feed that drops every record (no notifier configured).
#[derive(Clone, Copy, Debug, Default)]
pub struct NoFeed;

impl DeletionFeed for NoFeed {
    fn record(&self, _record: DeletionRecord) {}
}
