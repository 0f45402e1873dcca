//! `kube-gc plan`: what kube-gc would delete, and when, from one read of the cluster — every
//! TTL (the two TTL controllers, every retention policy), every history limit, every object
//! whose owners are all gone (the garbage collector), the namespaces finalized and the content
//! of those being deleted (the namespace controller), the Pods force-deleted (the pod garbage
//! collector) and the claims and volumes released (the protection controllers) — as a table
//! sorted by time, with totals
//! per namespace and kind and a chart of the deletions to come (a screenful of buckets, the
//! bucket scaled to the window). Each object is listed once, at its earliest deletion.
//!
//! Contract: only LISTs; the same decision functions as the controllers (`decide/` uses them
//! for one object, `rows.rs` for all); only the controllers `--controllers` runs are planned
//! (each one's rows are `rows_of`'s arm for its `explain::controllers::Covered` variant), and
//! the report says which were assumed; deletions due now come first, then those within the
//! window. What would stop a deletion is listed too: objects kept because something about them
//! cannot be read (the controllers keep them and say so in an Event), and retention policies
//! that are invalid or wait for a resource. Objects simply kept, and deletions beyond the
//! window, are not listed. A retention deletion names its policy (as the metrics'
//! `policy_kind` and `policy` labels); one a policy in `Audit` mode would make is listed and
//! marked `audit` — kube-gc will not make it — and left out of the totals and the chart.
//! `text.rs` prints the report for a terminal.

mod chart;
mod earliest;
mod namespaces;
mod rows;
mod storage;
mod text;

use std::collections::BTreeMap;
use std::time::Duration;

use chrono::{DateTime, Utc};
use serde::Serialize;

use crate::selection::ControllerSelection;
use kube_gc_client::{Client, Discovery};
use kube_gc_controllers::ttl::{BatchJob, VolcanoJobs};
use kube_gc_core::labels::Selector;

use super::controllers::{Assumed, Covered, COVERED};
use super::decide::rfc3339;
use super::gather::{every_version, GatherError};
use super::Settings;

pub use self::chart::Chart;
pub use self::earliest::Also;
use self::earliest::{earliest_per_object, Earliest};
use self::namespaces::namespace_rows;
use self::rows::{orphan_rows, retention_rows, ttl_rows, Findings, PlanContext};
use self::storage::{claim_rows, pod_rows, volume_rows};

pub use self::text::text;

/// What to plan for.
#[derive(Clone, Debug, Default)]
pub struct PlanOptions {
    /// How far ahead.
    pub within: Duration,
    /// One namespace (cluster-scoped objects are still read, as owners).
    pub namespace: Option<String>,
    /// Only objects whose labels match (a label selector, as kubectl takes it).
    pub selector: Option<String>,
    /// The controllers kube-gc runs (`run`'s `--controllers`): only theirs are planned.
    pub controllers: ControllerSelection,
    /// What `run`'s flags set that the decisions read.
    pub settings: Settings,
}

/// One object's deletion to come: the earliest any controller would make.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Row {
    /// UID (empty if unknown).
    pub uid: String,
    /// Kind.
    pub kind: String,
    /// Namespace.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub namespace: Option<String>,
    /// Name.
    pub name: String,
    /// Which controller.
    pub controller: String,
    /// Why.
    pub reason: String,
    /// Due already: the next reconcile deletes it.
    pub due: bool,
    /// When (RFC 3339): for a due deletion, the moment of the plan.
    pub deletes_at: String,
    /// The other controllers that would delete it too, at the same time or later.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub also: Vec<Also>,
    /// The retention policy's kind, if a retention policy's (as the metrics' `policy_kind`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub policy_kind: Option<String>,
    /// The retention policy, `name` or `namespace/name` (as the metrics' `policy`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub policy: Option<String>,
    /// That policy is in `Audit` mode: it would delete the object, kube-gc will not.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub audit: bool,
}

/// An object kept because something about it cannot be read.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct KeptRow {
    /// Kind.
    pub kind: String,
    /// Namespace.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub namespace: Option<String>,
    /// Name.
    pub name: String,
    /// Which controller keeps it.
    pub controller: String,
    /// What is wrong.
    pub problem: String,
}

/// A retention policy that deletes nothing, or not everything it names.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct PolicyProblem {
    /// `ClusterRetentionPolicy NAME` or `RetentionPolicy NAMESPACE/NAME`.
    pub policy: String,
    /// `Invalid` or `NotServed`, as its status condition says.
    pub state: String,
    /// What is wrong.
    pub problem: String,
}

/// The plan.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct PlanReport {
    /// When it was made.
    pub generated_at: String,
    /// The window, in seconds.
    pub within_seconds: u64,
    /// The controllers assumed to run here: only their deletions are listed.
    pub controllers: Assumed,
    /// Every object to be deleted, once, at its earliest deletion: due ones first, then by
    /// time.
    pub deletions: Vec<Row>,
    /// Objects kept because something about them cannot be read.
    pub kept: Vec<KeptRow>,
    /// Retention policies that are invalid or wait for a resource.
    pub policy_problems: Vec<PolicyProblem>,
    /// Objects retention policies in `Audit` mode would delete (their rows are marked `audit`),
    /// which the totals and the chart leave out.
    pub audit_deletions: usize,
    /// Objects to be deleted, per namespace.
    pub by_namespace: BTreeMap<String, usize>,
    /// Objects to be deleted, per kind.
    pub by_kind: BTreeMap<String, usize>,
    /// Objects to be deleted per stretch of time from now (`now` first), in a screenful of
    /// buckets.
    pub chart: Chart,
}

/// Reads the cluster and plans.
///
/// # Errors
///
/// [`GatherError`] naming a list that failed.
pub async fn plan(
    client: &Client,
    discovery: &Discovery,
    options: &PlanOptions,
    now: DateTime<Utc>,
) -> Result<PlanReport, GatherError> {
    let horizon =
        now + chrono::Duration::from_std(options.within).unwrap_or(chrono::Duration::days(3650));
    let selector = match options.selector.as_deref().map(Selector::parse) {
        None => None,
        Some(Ok(selector)) => Some(selector),
        Some(Err(e)) => {
            return Err(GatherError::Selector {
                selector: options.selector.clone().unwrap_or_default(),
                message: e.to_string(),
            })
        }
    };
    let mut found = Findings::default();
    let served = every_version(discovery);
    let cx = PlanContext {
        client,
        discovery,
        served: &served,
        options,
        selector: selector.as_ref(),
        now,
    };
    // A controller not run here costs no request: its resources are not even listed.
    for covered in COVERED
        .into_iter()
        .filter(|c| options.controllers.is_enabled(c.name()))
    {
        rows_of(covered, &cx, &mut found)
            .await
            .map_err(|e| e.needed_by(covered.name()))?;
    }
    // Each object once, at its earliest deletion — whether or not it falls in the window.
    let deletions = std::mem::take(&mut found.deletions);
    let mut deletions = earliest_per_object(deletions, rfc3339, |f| found.policy_of(f).cloned());
    deletions.retain(|d| d.at.is_none_or(|at| at <= horizon));
    deletions.sort_by(|a, b| {
        a.at.cmp(&b.at)
            .then_with(|| a.found.name.cmp(&b.found.name))
    });
    found
        .kept
        .sort_by(|a, b| (&a.namespace, &a.name).cmp(&(&b.namespace, &b.name)));
    Ok(report(deletions, found, options, now))
}

/// Adds `covered`'s deletions to come (and what it keeps for a problem) to `found`: each
/// controller's own reading of the cluster.
async fn rows_of(
    covered: Covered,
    cx: &PlanContext<'_>,
    found: &mut Findings,
) -> Result<(), GatherError> {
    match covered {
        Covered::TtlAfterFinished => ttl_rows::<BatchJob>(cx, found).await,
        Covered::VolcanoJobTtl => ttl_rows::<VolcanoJobs>(cx, found).await,
        Covered::Retention => retention_rows(cx, found).await,
        Covered::GarbageCollector => orphan_rows(cx, found).await,
        Covered::Namespace => namespace_rows(cx, found).await,
        Covered::Podgc => pod_rows(cx, found).await,
        Covered::PvcProtection => claim_rows(cx, found).await,
        Covered::PvProtection => volume_rows(cx, found).await,
    }
}

fn report(
    earliest: Vec<Earliest>,
    found: Findings,
    options: &PlanOptions,
    now: DateTime<Utc>,
) -> PlanReport {
    let mut by_namespace = BTreeMap::new();
    let mut by_kind = BTreeMap::new();
    let mut chart = Chart::new(options.within.as_secs());
    let mut audit_deletions = 0;
    for deletion in &earliest {
        let row = &deletion.found;
        if found.policy_of(row).is_some_and(|n| n.audit) {
            audit_deletions += 1;
            continue;
        }
        *by_namespace
            .entry(row.namespace.clone().unwrap_or_else(|| "(cluster)".into()))
            .or_insert(0) += 1;
        *by_kind.entry(row.kind.clone()).or_insert(0) += 1;
        chart.count(deletion.at, now);
    }
    let generated_at = rfc3339(now);
    let deletions = earliest
        .into_iter()
        .map(
            |Earliest {
                 at,
                 found: row,
                 also,
             }| {
                let note = found.policy_of(&row).cloned();
                Row {
                    uid: row.uid,
                    kind: row.kind,
                    namespace: row.namespace,
                    name: row.name,
                    controller: row.controller,
                    reason: row.reason,
                    due: at.is_none(),
                    deletes_at: at.map_or_else(|| generated_at.clone(), rfc3339),
                    also,
                    policy_kind: note.as_ref().map(|n| n.policy.kind().to_owned()),
                    policy: note.as_ref().map(|n| n.policy.path()),
                    audit: note.is_some_and(|n| n.audit),
                }
            },
        )
        .collect();
    PlanReport {
        generated_at,
        within_seconds: options.within.as_secs(),
        controllers: Assumed::of(&options.controllers),
        deletions,
        kept: found.kept,
        policy_problems: found.policy_problems,
        audit_deletions,
        by_namespace,
        by_kind,
        chart,
    }
}
