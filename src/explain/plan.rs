//! `kube-gc plan`: what kube-gc would delete, and when, from one read of the cluster — every
//! TTL (the two TTL controllers, every retention policy), every history limit, and every object
//! whose owners are all gone (the garbage collector) — as a table sorted by time, with totals
//! per namespace and kind and an hourly chart of the deletions to come.
//!
//! Contract: only LISTs; the same decision functions as the controllers (`decide.rs` uses them
//! for one object, this for all); deletions due now come first, then those within the window.
//! Objects kept, and deletions beyond the window, are not listed.

use std::collections::{BTreeMap, HashSet};
use std::fmt::Write;
use std::time::Duration;

use chrono::{DateTime, Utc};
use serde::Serialize;
use serde_json::Value;

use crate::client::{Api, Client, Discovery, ListParams, ResourceRef};
use crate::controllers::retention::engine::{judging, plan_served};
use crate::controllers::retention::history::{over_limit, Member};
use crate::controllers::retention::judge::{judge, Verdict};
use crate::controllers::retention::judgement::project;
use crate::controllers::ttl::{
    judge as judge_ttl, rules as ttl_rules, BatchJob, TtlKind, TtlState, Verdict as TtlVerdict,
    VolcanoJobs,
};
use crate::sim::selectors::LabelSelector;

use super::decide::rfc3339;
use super::gather::{every_version, read_namespaces, read_policies, serves, GatherError};

/// What to plan for.
#[derive(Clone, Debug, Default)]
pub struct PlanOptions {
    /// How far ahead.
    pub within: Duration,
    /// One namespace (cluster-scoped objects are still read, as owners).
    pub namespace: Option<String>,
    /// Only objects whose labels match (a label selector, as kubectl takes it).
    pub selector: Option<String>,
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
    /// When (RFC 3339); `None`: now.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub deletes_at: Option<String>,
}

/// The plan.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct PlanReport {
    /// When it was made.
    pub generated_at: String,
    /// The window, in seconds.
    pub within_seconds: u64,
    /// Every deletion, due ones first, then by time.
    pub deletions: Vec<Row>,
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
    let mut rows: Vec<(Option<DateTime<Utc>>, Row)> = Vec::new();
    let served = every_version(discovery);
    if serves(&served, &BatchJob::resource()) {
        rows.extend(ttl_rows::<BatchJob>(client, options, now).await?);
    }
    if serves(&served, &VolcanoJobs::resource()) {
        rows.extend(ttl_rows::<VolcanoJobs>(client, options, now).await?);
    }
    rows.extend(retention_rows(client, &served, options, now).await?);
    rows.extend(orphan_rows(client, discovery, options, selector.as_ref()).await?);
    rows.retain(|(at, _)| at.is_none_or(|at| at <= horizon));
    rows.sort_by(|a, b| a.0.cmp(&b.0).then_with(|| a.1.name.cmp(&b.1.name)));
    Ok(report(rows, options, now))
}

async fn list(
    client: &Client,
    resource: &ResourceRef,
    options: &PlanOptions,
) -> Result<Vec<Value>, GatherError> {
    let namespace = options.namespace.as_deref().filter(|_| resource.namespaced);
    let api: Api<Value> = Api::dynamic(client.clone(), resource.clone(), namespace);
    let params = ListParams {
        label_selector: options.selector.clone(),
        ..ListParams::default()
    };
    api.list(&params)
        .await
        .map(|l| l.items)
        .map_err(|source| GatherError::Api {
            what: format!("list {}", resource.path_name()),
            source,
        })
}

fn row(
    object: &Value,
    kind: &str,
    controller: &str,
    reason: String,
    at: Option<DateTime<Utc>>,
) -> (Option<DateTime<Utc>>, Row) {
    let meta = &object["metadata"];
    let text = |v: &Value| v.as_str().map(str::to_owned);
    (
        at,
        Row {
            kind: kind.to_owned(),
            namespace: text(&meta["namespace"]),
            name: text(&meta["name"]).unwrap_or_default(),
            controller: controller.to_owned(),
            reason,
            deletes_at: at.map(rfc3339),
        },
    )
}

/// The TTL controller of kind `K`: its objects listed as the controller caches them (each
/// decoded straight to the engine's judgement under the controller's fixed policy), judged by
/// its `judge`.
async fn ttl_rows<K: TtlKind>(
    client: &Client,
    options: &PlanOptions,
    now: DateTime<Utc>,
) -> Result<Vec<(Option<DateTime<Utc>>, Row)>, GatherError> {
    let resource = K::resource();
    let api: Api<Value> = Api::dynamic(
        client.clone(),
        resource.clone(),
        options.namespace.as_deref(),
    );
    let params = ListParams {
        label_selector: options.selector.clone(),
        ..ListParams::default()
    };
    let decoder = judging(std::sync::Arc::new(ttl_rules::<K>()), move || now);
    let judgements = api
        .pager_with(params, decoder)
        .collect_pages()
        .await
        .map_err(|source| GatherError::Api {
            what: format!("list {}", resource.path_name()),
            source,
        })?;
    Ok(judgements
        .0
        .items
        .iter()
        .filter_map(|judgement| {
            let state = TtlState::of(judgement).ok()?;
            let ttl = state.ttl_seconds?;
            let at = match judge_ttl(&state, now).ok()? {
                TtlVerdict::Expired { .. } => None,
                TtlVerdict::Wait { expires_at, .. } => Some(expires_at),
                TtlVerdict::Keep => return None,
            };
            let key = judgement.key();
            Some((
                at,
                Row {
                    kind: K::KIND.to_owned(),
                    namespace: key.namespace().map(str::to_owned),
                    name: key.name().to_owned(),
                    controller: K::CONTROLLER.to_owned(),
                    reason: format!("ttlSecondsAfterFinished {ttl}s"),
                    deletes_at: at.map(rfc3339),
                },
            ))
        })
        .collect())
}

async fn retention_rows(
    client: &Client,
    served: &[ResourceRef],
    options: &PlanOptions,
    now: DateTime<Utc>,
) -> Result<Vec<(Option<DateTime<Utc>>, Row)>, GatherError> {
    let Some(policies) = read_policies(client, served).await? else {
        return Ok(Vec::new());
    };
    let namespaces = read_namespaces(client).await?;
    let policies = policies.iter().map(|(object, cluster)| (object, *cluster));
    let planned = plan_served(policies, &namespaces, served);
    let mut rows = Vec::new();
    for watch in planned.watches.values() {
        let objects = list(client, &watch.resource, options).await?;
        let judged: Vec<_> = objects
            .iter()
            .map(|o| project(o, &watch.rules, now))
            .collect();
        let mut groups: BTreeMap<(u16, String, String), Vec<Member<usize>>> = BTreeMap::new();
        let mut due_by_ttl = HashSet::new();
        for (i, (object, judgement)) in objects.iter().zip(&judged).enumerate() {
            let Some(governed) = judgement.governed() else {
                continue;
            };
            let policy = &watch.rules.policies[usize::from(governed.policy)];
            let kind = &watch.resource.kind;
            let reason = format!("TTL ({})", policy.id);
            match judge(&governed.facts, governed.ttl, now) {
                Ok(Verdict::Expired { .. }) => {
                    due_by_ttl.insert(i);
                    rows.push(row(object, kind, "retention", reason, None));
                }
                Ok(Verdict::Wait { expires_at, .. }) => {
                    rows.push(row(object, kind, "retention", reason, Some(expires_at)))
                }
                _ => {}
            }
            if let (Some(group), Some(finished)) = (&governed.group, governed.facts.finished) {
                if !governed.facts.being_deleted {
                    let namespace = judgement.key().namespace().unwrap_or_default().to_owned();
                    groups
                        .entry((governed.policy, namespace, group.to_string()))
                        .or_default()
                        .push(Member {
                            id: i,
                            outcome: finished.outcome,
                            finished_at: finished.at,
                        });
                }
            }
        }
        for ((policy, _, group), members) in groups {
            let policy = &watch.rules.policies[usize::from(policy)];
            for excess in over_limit(&members, policy.limits) {
                if due_by_ttl.contains(&excess.id) {
                    continue;
                }
                let reason = format!(
                    "history limit {} of group {group} ({})",
                    excess.limit.unwrap_or(0),
                    policy.id
                );
                rows.push(row(
                    &objects[excess.id],
                    &watch.resource.kind,
                    "retention",
                    reason,
                    None,
                ));
            }
        }
    }
    Ok(rows)
}

/// Objects whose owners are all gone: the garbage collector deletes them now.
///
/// Every object is listed unfiltered, since an owner need not match the selector; the
/// selector then picks among the dependents, by the server's own rules (the simulated
/// server's implementation of apimachinery's `labels.Parse`, so `-l` means what it means for
/// the kinds the server filters).
async fn orphan_rows(
    client: &Client,
    discovery: &Discovery,
    options: &PlanOptions,
    selector: Option<&LabelSelector>,
) -> Result<Vec<(Option<DateTime<Utc>>, Row)>, GatherError> {
    let mut all = Vec::new();
    let mut uids = HashSet::new();
    for resource in discovery.deletable() {
        let namespace = options.namespace.as_deref().filter(|_| resource.namespaced);
        let api: Api<Value> = Api::dynamic(client.clone(), resource.clone(), namespace);
        let list = api
            .list_metadata(&ListParams::default())
            .await
            .map_err(|source| GatherError::Api {
                what: format!("list {}", resource.path_name()),
                source,
            })?;
        for item in list.items {
            uids.extend(item.metadata.uid.clone());
            all.push((resource.clone(), item.metadata));
        }
    }
    Ok(all
        .into_iter()
        .filter(|(_, meta)| !meta.owner_references.is_empty() && meta.deletion_timestamp.is_none())
        .filter(|(_, meta)| {
            meta.owner_references.iter().all(|o| {
                !uids.contains(&o.uid)
                    && discovery
                        .resource_for_kind(&o.api_version, &o.kind)
                        .is_some()
            })
        })
        .filter(|(_, meta)| {
            selector.is_none_or(|s| s.matches_lookup(|k| meta.labels.get(k).map(String::as_str)))
        })
        .map(|(resource, meta)| {
            let owners: Vec<String> = meta
                .owner_references
                .iter()
                .map(|o| format!("{} {}", o.kind, o.name))
                .collect();
            (
                None,
                Row {
                    kind: resource.kind.clone(),
                    namespace: meta.namespace.clone(),
                    name: meta.name.clone().unwrap_or_default(),
                    controller: "garbagecollector".to_owned(),
                    reason: format!("every owner is gone ({})", owners.join(", ")),
                    deletes_at: None,
                },
            )
        })
        .collect())
}

fn report(
    rows: Vec<(Option<DateTime<Utc>>, Row)>,
    options: &PlanOptions,
    now: DateTime<Utc>,
) -> PlanReport {
    let mut by_namespace = BTreeMap::new();
    let mut by_kind = BTreeMap::new();
    let hours = (options.within.as_secs() / 3600).clamp(1, 168) as usize;
    let mut hourly = vec![0usize; hours + 1];
    for (at, row) in &rows {
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
            (
                if i == 0 {
                    "now".to_owned()
                } else {
                    format!("+{}h", i - 1)
                },
                n,
            )
        })
        .collect();
    PlanReport {
        generated_at: rfc3339(now),
        within_seconds: options.within.as_secs(),
        deletions: rows.into_iter().map(|(_, r)| r).collect(),
        by_namespace,
        by_kind,
        hourly,
    }
}

/// The table, the totals and the chart, for a terminal.
pub fn text(report: &PlanReport) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "{:<14} {:<16} {:<36} {:<18} {:<21} REASON",
        "KIND", "NAMESPACE", "NAME", "CONTROLLER", "DELETES AT"
    );
    for r in &report.deletions {
        let at = r.deletes_at.as_deref().unwrap_or("now");
        let _ = writeln!(
            out,
            "{:<14} {:<16} {:<36} {:<18} {:<21} {}",
            r.kind,
            r.namespace.as_deref().unwrap_or("-"),
            r.name,
            r.controller,
            at,
            r.reason
        );
    }
    let _ = writeln!(
        out,
        "\n{} deletions within {}",
        report.deletions.len(),
        crate::duration::format_duration(std::time::Duration::from_secs(report.within_seconds))
    );
    let totals = |title: &str, map: &BTreeMap<String, usize>, out: &mut String| {
        let parts: Vec<String> = map.iter().map(|(k, n)| format!("{k} {n}")).collect();
        let _ = writeln!(
            out,
            "{title}: {}",
            if parts.is_empty() {
                "none".to_owned()
            } else {
                parts.join(", ")
            }
        );
    };
    totals("by namespace", &report.by_namespace, &mut out);
    totals("by kind", &report.by_kind, &mut out);
    let max = report
        .hourly
        .iter()
        .map(|(_, n)| *n)
        .max()
        .unwrap_or(0)
        .max(1);
    let _ = writeln!(out, "\nper hour");
    for (label, n) in &report.hourly {
        let bar = "█".repeat((n * 40).div_ceil(max));
        let _ = writeln!(out, "  {label:>5} {bar} {n}");
    }
    out
}
