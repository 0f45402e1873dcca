//! The conditions a namespace being deleted carries, as kube-controller-manager v1.28 writes them
//! (`pkg/controller/namespace/deletion/status_condition_utils.go`): the same five types, reasons
//! and messages, computed from an [`Assessment`].
//!
//! Contract:
//! - [`desired`] gives all five types, each `True` with its failure reason and a message naming
//!   what fails or remains, else `False` with its success reason and message.
//! - [`merge`] applies them to the namespace's current conditions as upstream does: a type
//!   missing is appended; one whose status, reason or message differs is rewritten, its
//!   `lastTransitionTime` moved only when its status changes; conditions of other types are
//!   kept. It answers `None` when nothing changed, so a status write is made only then.
//! - [`deferred_until`] spaces out writes that only move a message (the counts change as a
//!   finalizer's owner releases objects one by one): at most one per [`MESSAGE_REFRESH`]; a
//!   condition added or changing status or reason is written at once.

use std::time::Duration;

use chrono::{DateTime, Utc};

use super::decide::{Assessment, Blocker, Remaining};
use kube_gc_api::{NamespaceCondition, Time};
use kube_gc_client::ResourceRef;

/// Discovery of some group failed.
pub const DISCOVERY_FAILURE: &str = "NamespaceDeletionDiscoveryFailure";
/// A group version could not be parsed (never, with structured discovery; kept for the set).
pub const GROUP_VERSION_PARSING_FAILURE: &str = "NamespaceDeletionGroupVersionParsingFailure";
/// A request deleting or listing content failed.
pub const CONTENT_FAILURE: &str = "NamespaceDeletionContentFailure";
/// Content remains.
pub const CONTENT_REMAINING: &str = "NamespaceContentRemaining";
/// Content with finalizers remains.
pub const FINALIZERS_REMAINING: &str = "NamespaceFinalizersRemaining";

/// The least time between two status writes that change only messages. Objects a finalizer
/// held leave one by one as its owner releases them (PVC protection, at its client's rate), and
/// each changes the counts the messages name: written at every change, 500 claims cost a
/// namespace ~460 status writes. kube-controller-manager writes once per pass over the
/// namespace (its estimate / 2 + 1 s apart: 8.5 s for content a finalizer holds).
pub const MESSAGE_REFRESH: Duration = Duration::from_secs(5);

/// The five types, in upstream's order.
pub const TYPES: [&str; 5] = [
    DISCOVERY_FAILURE,
    GROUP_VERSION_PARSING_FAILURE,
    CONTENT_FAILURE,
    CONTENT_REMAINING,
    FINALIZERS_REMAINING,
];

/// One condition as computed: type, whether it is true, reason, message.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Desired {
    /// One of [`TYPES`].
    pub type_: &'static str,
    /// `True` when failing or remaining.
    pub is_true: bool,
    /// Upstream's reason.
    pub reason: &'static str,
    /// Upstream's message.
    pub message: String,
}

/// Every one of the five conditions for `assessment`.
pub fn desired(assessment: &Assessment) -> Vec<Desired> {
    vec![
        discovery(assessment),
        ok(GROUP_VERSION_PARSING_FAILURE),
        content_failure(assessment),
        content_remaining(&assessment.remaining),
        finalizers_remaining(&assessment.remaining),
    ]
}

/// Whether writing `desired` says anything: not when the namespace carries none of the five
/// types yet and all is well (it is about to go; nothing went wrong to report).
pub fn worth_writing(conditions: &[NamespaceCondition], desired: &[Desired]) -> bool {
    let written = conditions.iter().any(|c| TYPES.contains(&c.type_.as_str()));
    written || desired.iter().any(|d| d.is_true)
}

/// `conditions` with `desired` applied at `now`; `None` when nothing changed.
pub fn merge(
    conditions: &[NamespaceCondition],
    desired: &[Desired],
    now: DateTime<Utc>,
) -> Option<Vec<NamespaceCondition>> {
    let mut merged = conditions.to_vec();
    let mut changed = false;
    for want in desired {
        let status = if want.is_true { "True" } else { "False" };
        match merged.iter_mut().find(|c| c.type_ == want.type_) {
            None => {
                merged.push(NamespaceCondition {
                    type_: want.type_.to_owned(),
                    status: status.to_owned(),
                    last_transition_time: Some(Time(now)),
                    reason: Some(want.reason.to_owned()),
                    message: Some(want.message.clone()),
                });
                changed = true;
            }
            Some(old) => {
                let differs = old.status != status
                    || old.reason.as_deref() != Some(want.reason)
                    || old.message.as_deref() != Some(want.message.as_str());
                if !differs {
                    continue;
                }
                if old.status != status {
                    old.last_transition_time = Some(Time(now));
                }
                old.status = status.to_owned();
                old.reason = Some(want.reason.to_owned());
                old.message = Some(want.message.clone());
                changed = true;
            }
        }
    }
    changed.then_some(merged)
}

/// When the write of `desired` over `conditions` may be made, if not now: a write that only
/// changes messages waits until [`MESSAGE_REFRESH`] after the last write (`last_write`); one
/// that adds a condition or changes a status or a reason is news and goes at once.
pub fn deferred_until(
    conditions: &[NamespaceCondition],
    desired: &[Desired],
    last_write: Option<DateTime<Utc>>,
    now: DateTime<Utc>,
) -> Option<DateTime<Utc>> {
    let news = desired.iter().any(|want| {
        let status = if want.is_true { "True" } else { "False" };
        conditions
            .iter()
            .find(|c| c.type_ == want.type_)
            .is_none_or(|c| c.status != status || c.reason.as_deref() != Some(want.reason))
    });
    if news {
        return None;
    }
    let due = last_write? + chrono::Duration::from_std(MESSAGE_REFRESH).unwrap_or_default();
    (now < due).then_some(due)
}

fn ok(type_: &'static str) -> Desired {
    let (reason, message) = match type_ {
        DISCOVERY_FAILURE => (
            "ResourcesDiscovered",
            "All resources successfully discovered",
        ),
        GROUP_VERSION_PARSING_FAILURE => (
            "ParsedGroupVersions",
            "All legacy kube types successfully parsed",
        ),
        CONTENT_FAILURE => (
            "ContentDeleted",
            "All content successfully deleted, may be waiting on finalization",
        ),
        CONTENT_REMAINING => ("ContentRemoved", "All content successfully removed"),
        _ => (
            "ContentHasNoFinalizers",
            "All content-preserving finalizers finished",
        ),
    };
    Desired {
        type_,
        is_true: false,
        reason,
        message: message.to_owned(),
    }
}

/// `Discovery failed for some groups, N failing: unable to retrieve the complete list of server
/// APIs: gv: error, …` (client-go's `ErrGroupDiscoveryFailed`, sorted).
fn discovery(assessment: &Assessment) -> Desired {
    let mut failed: Vec<String> = assessment
        .blockers
        .iter()
        .filter_map(|b| match b {
            Blocker::DiscoveryFailed(group) => {
                Some(format!("{}: {}", group.group_version, group.message))
            }
            _ => None,
        })
        .collect();
    if failed.is_empty() {
        return ok(DISCOVERY_FAILURE);
    }
    failed.sort();
    Desired {
        type_: DISCOVERY_FAILURE,
        is_true: true,
        reason: "DiscoveryFailed",
        message: format!(
            "Discovery failed for some groups, {} failing: unable to retrieve the complete list of server APIs: {}",
            failed.len(),
            failed.join(", ")
        ),
    }
}

/// `Failed to delete all resource types, N remaining: msg, …` (sorted).
fn content_failure(assessment: &Assessment) -> Desired {
    let mut messages: Vec<String> = assessment
        .blockers
        .iter()
        .filter_map(|b| match b {
            Blocker::RequestFailed { failure, .. } => Some(failure.message.clone()),
            _ => None,
        })
        .collect();
    if messages.is_empty() {
        return ok(CONTENT_FAILURE);
    }
    messages.sort();
    Desired {
        type_: CONTENT_FAILURE,
        is_true: true,
        reason: "ContentDeletionFailed",
        message: format!(
            "Failed to delete all resource types, {} remaining: {}",
            messages.len(),
            messages.join(", ")
        ),
    }
}

/// `Some resources are remaining: configmaps. has 2 resource instances, …` — upstream names
/// a resource `plural.group`, the core group leaving a bare dot.
fn content_remaining(remaining: &[Remaining]) -> Desired {
    let mut parts: Vec<String> = remaining
        .iter()
        .map(|r| {
            format!(
                "{} has {} resource instances",
                group_resource(&r.resource),
                r.count
            )
        })
        .collect();
    if parts.is_empty() {
        return ok(CONTENT_REMAINING);
    }
    parts.sort();
    Desired {
        type_: CONTENT_REMAINING,
        is_true: true,
        reason: "SomeResourcesRemain",
        message: format!("Some resources are remaining: {}", parts.join(", ")),
    }
}

/// `Some content in the namespace has finalizers remaining: f in N resource instances, …`.
fn finalizers_remaining(remaining: &[Remaining]) -> Desired {
    let mut totals = std::collections::BTreeMap::<&str, usize>::new();
    for resource in remaining {
        for (finalizer, count) in &resource.finalizers {
            *totals.entry(finalizer.as_str()).or_insert(0) += count;
        }
    }
    if totals.is_empty() {
        return ok(FINALIZERS_REMAINING);
    }
    let mut parts: Vec<String> = totals
        .iter()
        .map(|(finalizer, count)| format!("{finalizer} in {count} resource instances"))
        .collect();
    parts.sort();
    Desired {
        type_: FINALIZERS_REMAINING,
        is_true: true,
        reason: "SomeFinalizersRemain",
        message: format!(
            "Some content in the namespace has finalizers remaining: {}",
            parts.join(", ")
        ),
    }
}

/// `plural.group`, as upstream prints a GroupResource in these messages (`configmaps.` for
/// the core group).
pub fn group_resource(resource: &ResourceRef) -> String {
    format!("{}.{}", resource.plural, resource.group)
}

#[cfg(test)]
mod tests {
    use super::super::decide::{FailedGroup, Failure, Next};
    use super::*;

    fn configmaps() -> ResourceRef {
        ResourceRef::new("", "v1", "configmaps", "ConfigMap", true)
    }

    fn jobs() -> ResourceRef {
        ResourceRef::new("batch", "v1", "jobs", "Job", true)
    }

    fn assessment(remaining: Vec<Remaining>, blockers: Vec<Blocker>) -> Assessment {
        Assessment {
            remaining,
            delete: Vec::new(),
            blockers,
            finalize_not_before: None,
            settled: true,
            next: Next::Retry,
        }
    }

    fn remaining(resource: ResourceRef, count: usize, finalizers: &[(&str, usize)]) -> Remaining {
        Remaining {
            resource,
            count,
            more: false,
            finalizers: finalizers
                .iter()
                .map(|(f, n)| (f.to_string(), *n))
                .collect(),
            in_flight: false,
        }
    }

    fn now() -> DateTime<Utc> {
        DateTime::parse_from_rfc3339("2026-11-29T02:55:31Z")
            .map(|t| t.to_utc())
            .unwrap_or_default()
    }

    #[test]
    fn nothing_left_is_five_false_conditions_with_upstreams_texts() {
        let all = desired(&assessment(Vec::new(), Vec::new()));
        let types: Vec<&str> = all.iter().map(|d| d.type_).collect();
        assert_eq!(types, TYPES);
        assert!(all.iter().all(|d| !d.is_true));
        assert_eq!(all[0].reason, "ResourcesDiscovered");
        assert_eq!(all[0].message, "All resources successfully discovered");
        assert_eq!(all[1].message, "All legacy kube types successfully parsed");
        assert_eq!(
            all[2].message,
            "All content successfully deleted, may be waiting on finalization"
        );
        assert_eq!(all[3].reason, "ContentRemoved");
        assert_eq!(all[4].reason, "ContentHasNoFinalizers");
        assert_eq!(all[4].message, "All content-preserving finalizers finished");
    }

    #[test]
    fn remaining_content_is_named_as_upstream_names_it() {
        let all = desired(&assessment(
            vec![
                remaining(jobs(), 1, &[("example.com/b", 1)]),
                remaining(
                    configmaps(),
                    3,
                    &[("example.com/a", 2), ("example.com/b", 1)],
                ),
            ],
            Vec::new(),
        ));
        // The message exchange 146 shows, as kcm writes it (a bare dot for the core group).
        assert_eq!(
            all[3].message,
            "Some resources are remaining: configmaps. has 3 resource instances, jobs.batch has 1 resource instances"
        );
        assert_eq!(all[3].reason, "SomeResourcesRemain");
        assert_eq!(
            all[4].message,
            "Some content in the namespace has finalizers remaining: example.com/a in 2 resource instances, example.com/b in 2 resource instances"
        );
        assert_eq!(all[4].reason, "SomeFinalizersRemain");
    }

    #[test]
    fn failures_name_the_group_and_the_refusal() {
        let all = desired(&assessment(
            Vec::new(),
            vec![
                Blocker::DiscoveryFailed(FailedGroup {
                    group_version: "metrics.k8s.io/v1beta1".into(),
                    message: "the server is currently unable to handle the request".into(),
                }),
                Blocker::RequestFailed {
                    resource: configmaps(),
                    failure: Failure {
                        verb: "deletecollection",
                        forbidden: true,
                        message: "configmaps is forbidden: User \"kube-gc\" cannot deletecollection resource \"configmaps\"".into(),
                    },
                },
            ],
        ));
        assert_eq!(all[0].reason, "DiscoveryFailed");
        assert_eq!(
            all[0].message,
            "Discovery failed for some groups, 1 failing: unable to retrieve the complete list of server APIs: metrics.k8s.io/v1beta1: the server is currently unable to handle the request"
        );
        assert_eq!(all[2].reason, "ContentDeletionFailed");
        assert!(all[2].message.starts_with(
            "Failed to delete all resource types, 1 remaining: configmaps is forbidden"
        ));
    }

    #[test]
    fn all_well_is_not_written_on_a_namespace_that_has_none_of_the_conditions() {
        let well = desired(&assessment(Vec::new(), Vec::new()));
        assert!(!worth_writing(&[], &well));
        let remaining = desired(&assessment(
            vec![remaining(configmaps(), 1, &[])],
            Vec::new(),
        ));
        assert!(worth_writing(&[], &remaining));
        let written = merge(&[], &remaining, now()).unwrap();
        assert!(
            worth_writing(&written, &well),
            "what was reported is corrected"
        );
    }

    #[test]
    fn a_write_that_only_moves_a_count_waits_for_the_refresh_and_news_goes_at_once() {
        let three = desired(&assessment(
            vec![remaining(configmaps(), 3, &[])],
            Vec::new(),
        ));
        let written = merge(&[], &three, now()).unwrap();
        assert_eq!(
            deferred_until(&[], &three, None, now()),
            None,
            "the first write"
        );
        let two = desired(&assessment(
            vec![remaining(configmaps(), 2, &[])],
            Vec::new(),
        ));
        let soon = now() + chrono::Duration::seconds(1);
        let due = now() + chrono::Duration::from_std(MESSAGE_REFRESH).unwrap();
        assert_eq!(
            deferred_until(&written, &two, Some(now()), soon),
            Some(due),
            "a count moved: not before the refresh"
        );
        assert_eq!(deferred_until(&written, &two, Some(now()), due), None);
        assert_eq!(
            deferred_until(&written, &two, None, soon),
            None,
            "never written by this controller: at once"
        );
        let none = desired(&assessment(Vec::new(), Vec::new()));
        assert_eq!(
            deferred_until(&written, &none, Some(now()), soon),
            None,
            "a status changes: at once"
        );
        let failing = desired(&assessment(
            vec![remaining(configmaps(), 2, &[])],
            vec![Blocker::DiscoveryFailed(FailedGroup {
                group_version: "metrics.k8s.io/v1beta1".into(),
                message: "unavailable".into(),
            })],
        ));
        assert_eq!(
            deferred_until(&written, &failing, Some(now()), soon),
            None,
            "a failure: at once"
        );
    }

    #[test]
    fn merging_changes_only_what_differs_and_moves_the_time_only_on_a_status_change() {
        let first = desired(&assessment(
            vec![remaining(configmaps(), 3, &[])],
            Vec::new(),
        ));
        let written = merge(&[], &first, now()).unwrap();
        assert_eq!(written.len(), 5);
        assert_eq!(merge(&written, &first, now()), None, "unchanged: no write");
        let later = now() + chrono::Duration::seconds(10);
        let fewer = desired(&assessment(
            vec![remaining(configmaps(), 1, &[])],
            Vec::new(),
        ));
        let merged = merge(&written, &fewer, later).unwrap();
        let remaining = merged
            .iter()
            .find(|c| c.type_ == CONTENT_REMAINING)
            .unwrap();
        assert_eq!(
            remaining.last_transition_time,
            Some(Time(now())),
            "still True"
        );
        let none = desired(&assessment(Vec::new(), Vec::new()));
        let merged = merge(&merged, &none, later).unwrap();
        let remaining = merged
            .iter()
            .find(|c| c.type_ == CONTENT_REMAINING)
            .unwrap();
        assert_eq!(remaining.status, "False");
        assert_eq!(remaining.last_transition_time, Some(Time(later)));
        // Conditions of other types are kept.
        let other = NamespaceCondition {
            type_: "Example".into(),
            status: "True".into(),
            ..NamespaceCondition::default()
        };
        let mut with_other = vec![other.clone()];
        with_other.extend(merged);
        let kept = merge(&with_other, &first, later).unwrap();
        assert_eq!(kept[0], other);
    }
}
