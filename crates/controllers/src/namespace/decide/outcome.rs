//! What [`assess`](super::assess) answers: what remains, what to delete, what blocks the
//! finalize, and the next step — the result `kube-gc explain` can show as it is.

use std::collections::BTreeMap;
use std::time::Duration;

use chrono::{DateTime, Utc};

use super::inputs::{FailedGroup, Failure};
use kube_gc_client::ResourceRef;

/// What remains of one resource.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Remaining {
    /// The resource.
    pub resource: ResourceRef,
    /// Objects left (at least this many when `more`).
    pub count: usize,
    /// The page a LIST read stopped at its limit: there are more.
    pub more: bool,
    /// Objects left by each finalizer that holds them (sorted).
    pub finalizers: BTreeMap<String, usize>,
    /// Some of them are on their way out — asked to go and not marked yet, or marked with no
    /// finalizer holding them (a Pod's grace period): the count is about to change.
    pub in_flight: bool,
}

/// How to delete what a resource holds.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum DeleteHow {
    /// One `deletecollection` (Background).
    Collection,
    /// A LIST of every object, then a DELETE of each (Background, UID precondition).
    EachListed,
}

/// One resource to delete now.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Deletion {
    /// The resource.
    pub resource: ResourceRef,
    /// How.
    pub how: DeleteHow,
}

/// Why the namespace cannot be finalized now.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Blocker {
    /// Content remains (what, by finalizer, is in [`Assessment::remaining`]).
    ContentRemains {
        /// The resource.
        resource: ResourceRef,
    },
    /// Pods remain: nothing else is deleted until they are gone.
    PodsFirst,
    /// A group version could not be discovered: whatever it serves may hold content.
    DiscoveryFailed(FailedGroup),
    /// A request on a resource was refused or failed.
    RequestFailed {
        /// The resource.
        resource: ResourceRef,
        /// How.
        failure: Failure,
    },
    /// The safety delay after the deletion has not passed.
    TooEarly {
        /// When it passes.
        until: DateTime<Utc>,
    },
    /// The cache says these are empty, or nothing watches them: a LIST must prove it.
    NotProven(Vec<ResourceRef>),
    /// The discovery in hand started before the safety delay passed: a newer one must show
    /// every resource.
    DiscoveryTooOld,
}

impl Blocker {
    /// A short label, for metrics and logs.
    pub fn reason(&self) -> &'static str {
        match self {
            Blocker::ContentRemains { .. } => "ContentRemaining",
            Blocker::PodsFirst => "PodsRemaining",
            Blocker::DiscoveryFailed(_) => "DiscoveryFailed",
            Blocker::RequestFailed { failure, .. } if failure.forbidden => "Forbidden",
            Blocker::RequestFailed { .. } => "RequestFailed",
            Blocker::TooEarly { .. } => "TooEarly",
            Blocker::NotProven(_) => "NotProven",
            Blocker::DiscoveryTooOld => "DiscoveryTooOld",
        }
    }
}

/// The one thing to do next.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Next {
    /// Not ours: not being deleted, or `kubernetes` is gone from its finalizers.
    Nothing,
    /// Send [`Assessment::delete`].
    Delete,
    /// Content is going (asked, or held by finalizers): wait for the watch to say so; objects
    /// nothing watches are looked at again after `recheck`.
    Wait {
        /// When a LIST must look again at content nothing watches.
        recheck: Option<Duration>,
    },
    /// A request failed or discovery is incomplete: retry with back-off.
    Retry,
    /// Wait for the safety delay to pass.
    WaitUntil(DateTime<Utc>),
    /// Discover again (when `rediscover`), then LIST these resources (one page each), and
    /// empty those nothing watches with one `deletecollection` each: after the safety delay its
    /// answer is as much a proof as a LIST (nothing can be created any more, and what it lists
    /// without a finalizer that holds it is gone), and one request instead of three when
    /// there was something (a LIST, the delete, a LIST again).
    Prove {
        /// A discovery started after the safety delay is needed first.
        rediscover: bool,
        /// The resources to LIST.
        resources: Vec<ResourceRef>,
        /// The resources to empty (`deletecollection`) as their proof.
        emptied: Vec<ResourceRef>,
    },
    /// Remove `kubernetes` from `spec.finalizers`.
    Finalize,
}

/// What [`assess`] found.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Assessment {
    /// What remains, by resource (resources holding nothing are left out).
    pub remaining: Vec<Remaining>,
    /// What to delete now.
    pub delete: Vec<Deletion>,
    /// Why it cannot be finalized now; empty when [`Next::Finalize`] or [`Next::Nothing`].
    pub blockers: Vec<Blocker>,
    /// `deletionTimestamp` + the safety delay.
    pub finalize_not_before: Option<DateTime<Utc>>,
    /// Nothing is about to be deleted, nothing is on its way out and every count is exact (not
    /// a page that stopped at its limit, whose count is only "at least"), or [`SETTLE_AFTER`]
    /// has passed since the deletion: what remains is what stays until a finalizer, a grace
    /// period or an error lets it go. Conditions are written only then, so that objects leaving one by
    /// one do not each cost a status write.
    pub settled: bool,
    /// The next step.
    pub next: Next,
}

impl Assessment {
    /// See [`Assessment::settled`].
    pub fn is_settled(&self) -> bool {
        self.settled
    }

    /// The blockers that are failures (discovery, refused or failed requests), as conditions and
    /// events report them.
    pub fn failures(&self) -> impl Iterator<Item = &Blocker> {
        self.blockers.iter().filter(|b| {
            matches!(
                b,
                Blocker::DiscoveryFailed(_) | Blocker::RequestFailed { .. }
            )
        })
    }

    pub(super) fn nothing() -> Assessment {
        Assessment {
            remaining: Vec::new(),
            delete: Vec::new(),
            blockers: Vec::new(),
            finalize_not_before: None,
            settled: true,
            next: Next::Nothing,
        }
    }
}
