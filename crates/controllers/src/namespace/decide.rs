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

mod inputs;
mod outcome;

use std::collections::BTreeMap;
use std::time::Duration;

use kube_gc_client::ResourceRef;

pub use inputs::{
    is_pods, Content, ContentType, Discovered, FailedGroup, Failure, Inputs, Known, Object,
    Progress, Subject,
};
pub use outcome::{Assessment, Blocker, DeleteHow, Deletion, Next, Remaining};

/// The finalizer the namespace controller owns.
pub const KUBERNETES_FINALIZER: &str = "kubernetes";

/// How soon content a LIST found in a resource nothing watches (Events) is looked at again:
/// kube-controller-manager's wait for content held by finalizers (15 s / 2 + 1 s).
pub const UNWATCHED_RECHECK: Duration = Duration::from_millis(8_500);

/// How long after the deletion content on its way out (asked, or terminating with no finalizer
/// holding it: a Pod's grace period) is not reported in the conditions: a Pod's default grace
/// period. Past it, what remains is reported whatever it is doing.
pub const SETTLE_AFTER: Duration = Duration::from_secs(30);

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
    // A page that stopped at its limit counts "at least one": the cache, behind the server,
    // will say how many — until the deadline, nothing is reported from such a count.
    let settled = delete.is_empty()
        && (remaining.iter().all(|r| !r.in_flight && !r.more) || inputs.now >= settle_deadline);
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
