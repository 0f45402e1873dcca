//! `kube-gc plan`: what kube-gc would delete, and when, from one read of the cluster — every
//! TTL (the two TTL controllers, every retention policy), every history limit, and every object
//! whose owners are all gone (the garbage collector) — as a table sorted by time, with totals
//! per namespace and kind and an hourly chart of the deletions to come.
//!
//! Contract: only LISTs; the same decision functions as the controllers (`decide/` uses them
//! for one object, `rows.rs` for all); only the controllers `--controllers` runs are planned
//! (each one's rows are its entry's in `explain::controllers`), and the report says which were
//! assumed; deletions due now come first, then those within the
//! window. What would stop a deletion is listed too: objects kept because something about them
//! cannot be read (the controllers keep them and say so in an Event), and retention policies
//! that are invalid or wait for a resource. Objects simply kept, and deletions beyond the
//! window, are not listed. `text.rs` prints the report for a terminal.

mod rows;
mod text;

use std::collections::BTreeMap;
use std::time::Duration;

use chrono::{DateTime, Utc};
use serde::Serialize;

use crate::client::{Client, Discovery};
use crate::manager::ControllerSelection;
use crate::sim::selectors::LabelSelector;

use super::controllers::{Assumed, COVERED};
use super::decide::rfc3339;
use super::gather::{every_version, GatherError};

pub(crate) use self::rows::{orphan_rows, retention_rows, ttl_rows, Findings, PlanContext};

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
}

/// One deletion to come.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Row {
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
    /// Every deletion, due ones first, then by time.
    pub deletions: Vec<Row>,
    /// Objects kept because something about them cannot be read.
    pub kept: Vec<KeptRow>,
    /// Retention policies that are invalid or wait for a resource.
    pub policy_problems: Vec<PolicyProblem>,
    /// Deletions per namespace.
    pub by_namespace: BTreeMap<String, usize>,
    /// Deletions per kind.
    pub by_kind: BTreeMap<String, usize>,
    /// Deletions per hour from now (`now` first).
    pub hourly: Vec<(String, usize)>,
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
    let selector = match options.selector.as_deref().map(LabelSelector::parse) {
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
        .iter()
        .filter(|c| options.controllers.is_enabled(c.name))
    {
        (covered.plan)(&cx, &mut found).await?;
    }
    found
        .deletions
        .retain(|(at, _)| at.is_none_or(|at| at <= horizon));
    found
        .deletions
        .sort_by(|a, b| a.0.cmp(&b.0).then_with(|| a.1.name.cmp(&b.1.name)));
    found
        .kept
        .sort_by(|a, b| (&a.namespace, &a.name).cmp(&(&b.namespace, &b.name)));
    Ok(report(found, options, now))
}

fn report(found: Findings, options: &PlanOptions, now: DateTime<Utc>) -> PlanReport {
    let mut by_namespace = BTreeMap::new();
    let mut by_kind = BTreeMap::new();
    let hours = (options.within.as_secs() / 3600).clamp(1, 168) as usize;
    let mut hourly = vec![0usize; hours + 1];
    for (at, row) in &found.deletions {
        *by_namespace
            .entry(row.namespace.clone().unwrap_or_else(|| "(cluster)".into()))
            .or_insert(0) += 1;
        *by_kind.entry(row.kind.clone()).or_insert(0) += 1;
        let bucket = match at {
            None => 0,
            Some(at) => 1 + ((*at - now).num_seconds().max(0) as usize / 3600).min(hours - 1),
        };
        hourly[bucket] += 1;
    }
    let hourly = hourly
        .into_iter()
        .enumerate()
        .map(|(i, n)| {
            let label = match i {
                0 => "now".to_owned(),
                _ => format!("+{}h", i - 1),
            };
            (label, n)
        })
        .collect();
    let generated_at = rfc3339(now);
    let deletions = found
        .deletions
        .into_iter()
        .map(|(at, found)| Row {
            kind: found.kind,
            namespace: found.namespace,
            name: found.name,
            controller: found.controller,
            reason: found.reason,
            due: at.is_none(),
            deletes_at: at.map_or_else(|| generated_at.clone(), rfc3339),
        })
        .collect();
    PlanReport {
        generated_at,
        within_seconds: options.within.as_secs(),
        controllers: Assumed::of(&options.controllers),
        deletions,
        kept: found.kept,
        policy_problems: found.policy_problems,
        by_namespace,
        by_kind,
        hourly,
    }
}
