//! What deleting one namespace needs next: a pure function of what is known — the namespace,
//! what discovery offers, what remains of each resource (from the cache or from a LIST), what
//! was already asked and proven, and the time. [`assess`] answers an [`Assessment`]: what
//! remains (by resource, with its finalizers), what to delete now, why the namespace cannot be
//! finalized yet ([`Blocker`]s) and the one [`Next`] step. The reconciler carries it out;
//! `kube-gc explain` can show it as it is.
//!
//! The rules, as kube-controller-manager's namespace controller with ordered deletion
//! (KEP-5080, GA in v1.34), and where kube-gc is stricter:
//! - Only a namespace with a `deletionTimestamp` whose `spec.finalizers` holds `kubernetes`
//!   is ours.
//! - Pods first: while a Pod remains — any Pod, one a finalizer holds or a terminated one
//!   included, as upstream's conformance test requires — nothing else is deleted. Pods are
//!   gone only once a LIST of the server says so, not the cache alone.
//! - Then everything else that holds content, each resource once: `deletecollection` where
//!   discovery offers it, else each object by name with its UID as precondition. An object
//!   already asked to go, or already marked for deletion, is not asked again; an empty
//!   resource is not asked at all.
//! - Finalize only when nothing remains, proven by a LIST of every resource made after the
//!   safety delay (`deletionTimestamp` + delay: an HA API server that has not seen the deletion
//!   could still admit a create before it), with a discovery made after it too, complete (no
//!   group failed), and no request refused or failed.

use std::collections::{BTreeMap, HashSet};
use std::time::Duration;

use chrono::{DateTime, Utc};

use crate::client::ResourceRef;

/// The finalizer the namespace controller owns.
pub const KUBERNETES_FINALIZER: &str = "kubernetes";

/// How soon content a LIST found in a resource nothing watches (Events) is looked at again:
/// kube-controller-manager's wait for content held by finalizers (15 s / 2 + 1 s).
pub const UNWATCHED_RECHECK: Duration = Duration::from_millis(8_500);

/// How long after the deletion content on its way out (asked, or terminating with no finalizer
/// holding it: a Pod's grace period) is not reported in the conditions: a Pod's default grace
/// period. Past it, what remains is reported whatever it is doing.
pub const SETTLE_AFTER: Duration = Duration::from_secs(30);

/// Finalizers a Background deletion removes itself: they never hold content it deleted.
const GC_FINALIZERS: [&str; 2] = ["orphan", "foregroundDeletion"];

/// A namespaced resource namespace deletion must empty: served with `list` and `delete`.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ContentType {
    /// The resource (its preferred version).
    pub resource: ResourceRef,
    /// Whether discovery offers `deletecollection`: one request empties it. Else each object
    /// is deleted by name.
    pub delete_collection: bool,
}

impl ContentType {
    /// Whether this is core `pods`, deleted before everything else.
    pub fn is_pods(&self) -> bool {
        is_pods(&self.resource)
    }
}

/// Whether `resource` is core `pods`.
pub fn is_pods(resource: &ResourceRef) -> bool {
    resource.group.is_empty() && resource.plural == "pods"
}

/// A group version discovery could not read: whatever it serves may hold content.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FailedGroup {
    /// e.g. `metrics.k8s.io/v1beta1`.
    pub group_version: String,
    /// Why.
    pub message: String,
}

/// What one discovery says namespace deletion must empty.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Discovered {
    /// The namespaced resources with `list` and `delete`, sorted.
    pub types: Vec<ContentType>,
    /// Group versions that could not be read.
    pub failed: Vec<FailedGroup>,
    /// When the discovery started: a finalize needs one started after the safety delay.
    pub started: DateTime<Utc>,
}

/// One object in the namespace.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Object {
    /// Its name.
    pub name: String,
    /// Its UID.
    pub uid: String,
    /// Its finalizers.
    pub finalizers: Vec<String>,
    /// Whether it is marked for deletion.
    pub deleting: bool,
}

impl Object {
    /// Finalizers that keep it once a Background deletion is asked for.
    pub fn holding_finalizers(&self) -> impl Iterator<Item = &str> {
        self.finalizers
            .iter()
            .map(String::as_str)
            .filter(|f| !GC_FINALIZERS.contains(f))
    }
}

/// What is known of one resource's content in the namespace, and where it comes from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Known {
    /// The watch cache's objects (possibly none).
    Cached(Vec<Object>),
    /// A LIST of the server limited to a page: `more` when it stopped at its limit.
    Listed {
        /// The objects of the page.
        objects: Vec<Object>,
        /// Whether more matched than the page holds.
        more: bool,
    },
    /// Nothing watches the resource (Events), or its cache has not synced.
    Unknown,
}

impl Known {
    fn objects(&self) -> &[Object] {
        match self {
            Known::Cached(objects) | Known::Listed { objects, .. } => objects,
            Known::Unknown => &[],
        }
    }
}

/// How a request on a resource failed the last time it was made for this namespace.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Failure {
    /// `deletecollection`, `list` or `delete`.
    pub verb: &'static str,
    /// Whether the server refused kube-gc the right (403).
    pub forbidden: bool,
    /// The server's message.
    pub message: String,
}

/// One resource of the namespace: what is known of it, and how its last request failed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Content {
    /// The resource.
    pub kind: ContentType,
    /// What remains of it.
    pub known: Known,
    /// The last request's failure, if it failed.
    pub failure: Option<Failure>,
}

/// The namespace being judged.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Subject {
    /// Its name.
    pub name: String,
    /// Its UID.
    pub uid: String,
    /// When its deletion was asked for.
    pub deletion_timestamp: Option<DateTime<Utc>>,
    /// `spec.finalizers`.
    pub spec_finalizers: Vec<String>,
}

/// What earlier passes on this namespace asked and proved (kept by the controller while the
/// namespace is deleted).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Progress {
    /// UIDs of objects kube-gc asked the server to delete.
    pub asked: HashSet<String>,
    /// A LIST of the server found no Pod left.
    pub pods_gone: bool,
    /// Resources a LIST made after the safety delay found empty: nothing can be created in
    /// the namespace any more, so they stay so.
    pub proven_empty: HashSet<ResourceRef>,
}

/// Everything [`assess`] reads.
#[derive(Clone, Copy, Debug)]
pub struct Inputs<'a> {
    /// The namespace.
    pub subject: &'a Subject,
    /// The discovery the content was gathered for.
    pub discovered: &'a Discovered,
    /// One entry per resource of `discovered.types`.
    pub content: &'a [Content],
    /// What earlier passes asked and proved.
    pub progress: &'a Progress,
    /// Now.
    pub now: DateTime<Utc>,
    /// The least time between the deletion and the finalize.
    pub finalize_delay: Duration,
}

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
    /// Nothing is about to be deleted and nothing is on its way out, or [`SETTLE_AFTER`] has
    /// passed since the deletion: what remains is what stays until a finalizer, a grace period
    /// or an error lets it go. Conditions are written only then, so that objects leaving one by
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

    fn nothing() -> Assessment {
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

/// Whether the namespace is ours to delete: marked, with `kubernetes` in `spec.finalizers`.
pub fn is_ours(subject: &Subject) -> bool {
    subject.deletion_timestamp.is_some()
        && subject
            .spec_finalizers
            .iter()
            .any(|f| f == KUBERNETES_FINALIZER)
}

/// What deleting the namespace needs next (see the module documentation).
pub fn assess(inputs: &Inputs<'_>) -> Assessment {
    let Some(deleted_at) = inputs
        .subject
        .deletion_timestamp
        .filter(|_| is_ours(inputs.subject))
    else {
        return Assessment::nothing();
    };
    let deadline = deleted_at
        + chrono::Duration::from_std(inputs.finalize_delay).unwrap_or(chrono::Duration::zero());
    let progress = inputs.progress;
    let remaining: Vec<Remaining> = inputs
        .content
        .iter()
        .filter_map(|c| remaining_of(c, progress))
        .collect();
    let pods = inputs.content.iter().find(|c| c.kind.is_pods());
    let pods_stage = pods.is_some() && !progress.pods_gone;
    let mut delete = Vec::new();
    let mut blockers: Vec<Blocker> = Vec::new();
    for content in inputs.content {
        if pods_stage && !content.kind.is_pods() {
            continue;
        }
        if content.failure.is_none() && needs_asking(&content.known, progress) {
            delete.push(Deletion {
                resource: content.kind.resource.clone(),
                how: if content.kind.delete_collection {
                    DeleteHow::Collection
                } else {
                    DeleteHow::EachListed
                },
            });
        }
    }
    blockers.extend(remaining.iter().map(|r| Blocker::ContentRemains {
        resource: r.resource.clone(),
    }));
    if pods_stage {
        blockers.push(Blocker::PodsFirst);
    }
    blockers.extend(
        inputs
            .discovered
            .failed
            .iter()
            .cloned()
            .map(Blocker::DiscoveryFailed),
    );
    blockers.extend(inputs.content.iter().filter_map(|c| {
        c.failure.clone().map(|failure| Blocker::RequestFailed {
            resource: c.kind.resource.clone(),
            failure,
        })
    }));
    let unproven = unproven(inputs, pods_stage);
    let too_early = inputs.now < deadline;
    if too_early {
        blockers.push(Blocker::TooEarly { until: deadline });
    }
    if !unproven.is_empty() {
        blockers.push(Blocker::NotProven(unproven.clone()));
    }
    let rediscover = inputs.discovered.started < deadline;
    if rediscover {
        blockers.push(Blocker::DiscoveryTooOld);
    }
    let has_failures = blockers.iter().any(|b| {
        matches!(
            b,
            Blocker::DiscoveryFailed(_) | Blocker::RequestFailed { .. }
        )
    });
    let next = if !delete.is_empty() {
        Next::Delete
    } else if pods_stage
        && !remaining.iter().any(|r| is_pods(&r.resource))
        && pods.is_some_and(|p| p.failure.is_none())
    {
        // The cache has no Pod left: a LIST must say so before anything else goes.
        Next::Prove {
            rediscover: false,
            resources: pods
                .map(|p| vec![p.kind.resource.clone()])
                .unwrap_or_default(),
            emptied: Vec::new(),
        }
    } else if !remaining.is_empty() {
        Next::Wait {
            recheck: remaining
                .iter()
                .any(|r| listed(inputs, &r.resource))
                .then_some(UNWATCHED_RECHECK),
        }
    } else if has_failures {
        Next::Retry
    } else if too_early {
        Next::WaitUntil(deadline)
    } else if rediscover || !unproven.is_empty() {
        let (emptied, resources) = unproven.into_iter().partition(|r| {
            inputs.content.iter().any(|c| {
                c.kind.resource == *r
                    && c.kind.delete_collection
                    && !c.kind.is_pods()
                    && c.known == Known::Unknown
            })
        });
        Next::Prove {
            rediscover,
            resources,
            emptied,
        }
    } else {
        blockers.clear();
        Next::Finalize
    };
    let settle_deadline =
        deleted_at + chrono::Duration::from_std(SETTLE_AFTER).unwrap_or(chrono::Duration::zero());
    let settled = delete.is_empty()
        && (remaining.iter().all(|r| !r.in_flight) || inputs.now >= settle_deadline);
    Assessment {
        remaining,
        delete,
        blockers,
        finalize_not_before: Some(deadline),
        settled,
        next,
    }
}

/// What remains of `content`, if anything.
fn remaining_of(content: &Content, progress: &Progress) -> Option<Remaining> {
    let objects = content.known.objects();
    if objects.is_empty() {
        return None;
    }
    let mut finalizers = BTreeMap::new();
    for object in objects {
        for finalizer in object.holding_finalizers() {
            *finalizers.entry(finalizer.to_owned()).or_insert(0) += 1;
        }
    }
    Some(Remaining {
        resource: content.kind.resource.clone(),
        count: objects.len(),
        more: matches!(content.known, Known::Listed { more: true, .. }),
        finalizers,
        in_flight: objects.iter().any(|o| {
            let leaving = !o.deleting || o.holding_finalizers().next().is_none();
            progress.asked.contains(&o.uid) && leaving
        }),
    })
}

/// Whether some object of `known` has neither been asked to go nor been marked.
fn needs_asking(known: &Known, progress: &Progress) -> bool {
    known
        .objects()
        .iter()
        .any(|o| !o.deleting && !progress.asked.contains(&o.uid))
}

/// Resources nothing proves empty yet: empty by the cache, or unknown. In the Pods stage only
/// Pods can be proven.
fn unproven(inputs: &Inputs<'_>, pods_stage: bool) -> Vec<ResourceRef> {
    inputs
        .content
        .iter()
        .filter(|c| !pods_stage || c.kind.is_pods())
        .filter(|c| !inputs.progress.proven_empty.contains(&c.kind.resource))
        .filter(|c| match &c.known {
            Known::Cached(objects) => objects.is_empty(),
            Known::Listed { .. } => false,
            Known::Unknown => true,
        })
        .map(|c| c.kind.resource.clone())
        .collect()
}

/// Whether what is known of `resource` comes from a LIST (nothing watches it).
fn listed(inputs: &Inputs<'_>, resource: &ResourceRef) -> bool {
    inputs
        .content
        .iter()
        .any(|c| c.kind.resource == *resource && matches!(c.known, Known::Listed { .. }))
}

#[cfg(test)]
mod tests;
