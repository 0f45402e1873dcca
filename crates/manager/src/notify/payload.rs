//! The JSON one batch is sent as: a Slack-compatible `text` (Slack's incoming webhooks, and
//! the Teams and Mattermost ones that read Slack's format, show it as it is) and the same facts
//! as fields for any other receiver.
//!
//! ```json
//! {"text": "…", "source": "kube-gc", "destination": "ClusterRetentionPolicy/nightly",
//!  "window": {"from": "…", "to": "…", "nextUntil": "…"},
//!  "deleted":     {"total": 12, "omitted": 2, "items": [{…}], "counts": [{…}]},
//!  "wouldDelete": {"total": 3,  "omitted": 0, "items": [{…}], "counts": [{…}]},
//!  "upcoming":    {"total": 5,  "omitted": 0, "items": [{…}], "counts": [{…}]}}
//! ```
//!
//! Contract: pure. An item names the object (`kind`, `namespace`, `name`, `uid`), who
//! (`controller`, `policyKind`, `policy`) and why (`reason`), and when (`at` for what was done,
//! `deletesAt` for what comes — absent when it is due now); `counts` total every record, kept
//! whole or not. The `text` shows at most [`TEXT_LINES`] objects per list; the rest is counted.

use std::time::Duration;

use chrono::{DateTime, SecondsFormat, Utc};
use serde_json::{json, Value};

use kube_gc_controllers::deleted::DeletionRecord;
use kube_gc_controllers::pending::{Pending, PendingDeletion};
use kube_gc_controllers::retention::policy::PolicyId;
use kube_gc_core::duration::format_duration;

use super::batch::{Batch, Records};

/// Objects the `text` lists per section.
pub const TEXT_LINES: usize = 10;

/// What comes in the next window, as the batch tells it.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Upcoming {
    /// How many.
    pub total: u64,
    /// The earliest, with the controller and policy of each.
    pub items: Vec<(&'static str, Option<PolicyId>, PendingDeletion)>,
    /// How many per controller and policy.
    pub counts: Vec<(&'static str, Option<PolicyId>, u64)>,
}

impl Upcoming {
    /// The deletions to come of `pending` (an `Audit` policy's left out: they will not be
    /// made), due by the window's end (its first horizon), the earliest `items` listed.
    pub fn of(pending: &[Pending], items: usize, now: DateTime<Utc>) -> Upcoming {
        let mut upcoming = Upcoming::default();
        for p in pending.iter().filter(|p| !p.audit) {
            let due = p.within.first().copied().unwrap_or_default();
            if due == 0 {
                continue;
            }
            upcoming.total += due;
            upcoming.counts.push((p.controller, p.policy.clone(), due));
            upcoming.items.extend(
                p.earliest
                    .iter()
                    .map(|d| (p.controller, p.policy.clone(), d.clone())),
            );
        }
        upcoming
            .items
            .sort_by(|a, b| a.2.order_key(now).cmp(&b.2.order_key(now)));
        upcoming.items.truncate(items);
        upcoming
    }

    fn omitted(&self) -> u64 {
        self.total.saturating_sub(self.items.len() as u64)
    }
}

/// Where a batch goes and for when it speaks.
pub struct Window<'a> {
    /// The destination: `--notify-webhook-url`, or the policy's `Kind/name`.
    pub destination: &'a str,
    /// The end of the batch (its start is the batch's).
    pub to: DateTime<Utc>,
    /// How far ahead `upcoming` looks.
    pub next: Duration,
}

/// Whether a batch and what comes say anything worth a request.
pub fn worth_sending(batch: &Batch, upcoming: &Upcoming) -> bool {
    !batch.is_empty() || upcoming.total > 0
}

/// The body of one request.
pub fn payload(batch: &Batch, upcoming: &Upcoming, window: &Window<'_>) -> Value {
    let next_until = window.to + chrono::Duration::from_std(window.next).unwrap_or_default();
    json!({
        "text": text(batch, upcoming, window),
        "source": "kube-gc",
        "destination": window.destination,
        "window": {
            "from": rfc3339(batch.since),
            "to": rfc3339(window.to),
            "nextUntil": rfc3339(next_until),
        },
        "deleted": records(&batch.deleted),
        "wouldDelete": records(&batch.would_delete),
        "upcoming": {
            "total": upcoming.total,
            "omitted": upcoming.omitted(),
            "items": upcoming.items.iter().map(|(controller, policy, d)| {
                let mut item = json!({
                    "controller": controller, "kind": d.kind, "namespace": d.namespace,
                    "name": d.name, "uid": d.uid, "reason": d.reason,
                });
                add_policy(&mut item, policy.as_ref());
                if let Some(at) = d.at.filter(|at| *at > window.to) {
                    item["deletesAt"] = json!(rfc3339(at));
                }
                item
            }).collect::<Vec<_>>(),
            "counts": upcoming.counts.iter().map(|(controller, policy, n)| {
                let mut count = json!({"controller": controller, "count": n});
                add_policy(&mut count, policy.as_ref());
                count
            }).collect::<Vec<_>>(),
        },
    })
}

fn records(records: &Records) -> Value {
    json!({
        "total": records.total,
        "omitted": records.omitted(),
        "items": records.items.iter().map(record).collect::<Vec<_>>(),
        "counts": records.counts.iter().map(|((controller, policy, reason), n)| {
            let mut count = json!({"controller": controller, "reason": reason, "count": n});
            add_policy(&mut count, policy.as_ref());
            count
        }).collect::<Vec<_>>(),
    })
}

fn record(record: &DeletionRecord) -> Value {
    let mut item = json!({
        "controller": record.controller, "kind": record.kind, "namespace": record.namespace,
        "name": record.name, "uid": record.uid, "reason": record.reason,
        "at": rfc3339(record.at),
    });
    add_policy(&mut item, record.policy.as_ref());
    item
}

fn add_policy(item: &mut Value, policy: Option<&PolicyId>) {
    if let Some(policy) = policy {
        item["policyKind"] = json!(policy.kind());
        item["policy"] = json!(policy.path());
    }
}

fn rfc3339(at: DateTime<Utc>) -> String {
    at.to_rfc3339_opts(SecondsFormat::Secs, true)
}

/// The Slack `text`: a headline, then each list's first objects.
fn text(batch: &Batch, upcoming: &Upcoming, window: &Window<'_>) -> String {
    let span = (window.to - batch.since).to_std().unwrap_or_default();
    let mut parts = vec![format!(
        "{} deleted in the last {}",
        batch.deleted.total,
        format_duration(round_seconds(span))
    )];
    if batch.would_delete.total > 0 {
        parts.push(format!(
            "{} would have been deleted by policies in Audit mode (kept)",
            batch.would_delete.total
        ));
    }
    parts.push(format!(
        "{} due in the next {}",
        upcoming.total,
        format_duration(window.next)
    ));
    let mut lines = vec![format!(
        "*kube-gc* ({}): {}",
        window.destination,
        parts.join("; ")
    )];
    section(&mut lines, "Deleted", &batch.deleted);
    section(
        &mut lines,
        "Would delete (Audit, kept)",
        &batch.would_delete,
    );
    if upcoming.total > 0 {
        lines.push("*Due next*".to_owned());
        for (controller, policy, d) in upcoming.items.iter().take(TEXT_LINES) {
            let when =
                d.at.filter(|at| *at > window.to)
                    .map_or_else(|| "now".to_owned(), rfc3339);
            let who = who(controller, policy.as_ref(), d.reason);
            lines.push(format!(
                "• {} {} — {who}, {when}",
                d.kind,
                place(&d.namespace, &d.name)
            ));
        }
        let more = upcoming
            .total
            .saturating_sub(TEXT_LINES.min(upcoming.items.len()) as u64);
        if more > 0 {
            lines.push(format!("…and {more} more"));
        }
    }
    lines.join("\n")
}

fn section(lines: &mut Vec<String>, title: &str, records: &Records) {
    if records.total == 0 {
        return;
    }
    lines.push(format!("*{title}*"));
    lines.extend(records.items.iter().take(TEXT_LINES).map(line));
    let more = records
        .total
        .saturating_sub(TEXT_LINES.min(records.items.len()) as u64);
    if more > 0 {
        lines.push(format!("…and {more} more"));
    }
}

fn line(record: &DeletionRecord) -> String {
    let who = who(record.controller, record.policy.as_ref(), record.reason);
    format!(
        "• {} {} — {who}",
        record.kind,
        place(&record.namespace, &record.name)
    )
}

fn who(controller: &str, policy: Option<&PolicyId>, reason: &str) -> String {
    match policy {
        Some(policy) => format!("{controller} ({policy}), {reason}"),
        None => format!("{controller}, {reason}"),
    }
}

fn place(namespace: &Option<String>, name: &str) -> String {
    match namespace {
        Some(ns) => format!("{ns}/{name}"),
        None => name.to_owned(),
    }
}

fn round_seconds(span: Duration) -> Duration {
    Duration::from_secs(span.as_secs().max(1))
}

#[cfg(test)]
mod tests;
