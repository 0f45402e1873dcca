//! The verdict on one object, pure: every controller's decision, with the controllers' own
//! functions — the TTL controllers' judgement under their fixed policy and `judge` (`ttl.rs`),
//! the retention engine's `plan`, `assess`, `decide` and `rank` (`retention.rs`), the garbage
//! collector's `action` and the chain of blockers of a foreground deletion (`gc.rs`), the pod
//! garbage collector's `judge` (`podgc.rs`), the protection controllers' releases
//! (`protection.rs`), and the namespace controller's `assess` with every blocker of a namespace
//! followed to its root cause (`namespace/`).
//!
//! Contract: the object's verdict is the earliest deletion any governing controller would make
//! (`delete-now` before `delete-at`); an object with a `deletionTimestamp` is `blocked` while
//! finalizers remain (or may remain: a source that does not know every finalizer never says
//! none holds it); `unknown` when something it depends on could not be read (a missing finish
//! time, a CEL error, an owner kind not served); else `keep`. Each controller says whether it
//! governs the object and, when it does not, why; a controller not run here
//! ([`decide_assuming`], `--controllers`) governs nothing, says who does its job instead, and
//! what it would decide were it run. [`decide`] (`kube-gc explain`, from the
//! facts gathered from the API) and `explain::live` (`/debug/explain`, from a running
//! kube-gc's caches) both build [`Decision`]s with the functions of this module and reach the
//! verdict through the same [`explanation`].

mod gc;
pub mod namespace;
mod podgc;
mod protection;
mod retention;
mod ttl;

use chrono::{DateTime, Utc};
use serde_json::Value;

use crate::selection::ControllerSelection;

use super::controllers::{Covered, COVERED};
use super::gather::Gathered;
use super::{Decision, DeletionInProgress, EventLine, Explanation, ObjectId, VerdictKind};
use kube_gc_api::ObjectMeta;
use kube_gc_controllers::ttl::{BatchJob, VolcanoJobs};
use namespace::{explain_namespace, namespace_decision, Explained, NamespaceReport};

pub(crate) use super::wording::decision;
pub use super::wording::{relative, rfc3339};

pub(crate) use gc::{
    decision_on as gc_decision, deletion, foreground_blockers, Deleting, Dependent, DependentIndex,
    GcFacts, CONTROLLER as GARBAGE_COLLECTOR,
};
pub(crate) use podgc::{
    decision_on as podgc_decision, fate, not_a_pod, standing, PodGcFacts, Standing,
};
pub(crate) use protection::{
    claim_decision, claim_wait, not_its_kind, volume_decision, volume_wait,
};
pub(crate) use retention::{
    decision_on as retention_decision, group_members, group_phrase, no_policy, ordinal,
    outcome_word, Assessing,
};
pub(crate) use ttl::{judgement_decision, not_its_resource};

/// Explains `gathered` at `now`, every controller running.
pub fn decide(gathered: &Gathered, now: DateTime<Utc>) -> Explanation {
    decide_assuming(gathered, &ControllerSelection::default(), now)
}

/// Explains `gathered` at `now`, assuming kube-gc runs the controllers `running` enables: the
/// others are "not run here" and decide nothing; what one of them would do is said in its
/// details and, when it would delete the object, among the reasons.
pub fn decide_assuming(
    gathered: &Gathered,
    running: &ControllerSelection,
    now: DateTime<Utc>,
) -> Explanation {
    let meta = gathered.meta();
    let mut elsewhere = Vec::new();
    let decisions = COVERED
        .into_iter()
        .map(|covered| {
            let decided = decision_of(covered, gathered, &meta, now);
            if running.is_enabled(covered.name()) {
                return decided;
            }
            let (not_run, would) = not_run_here(covered, decided);
            elsewhere.extend(would);
            not_run
        })
        .collect();
    let mut deletion = gc::deletion_from_gathered(gathered, &meta, running);
    if let Some(deletion) = deletion.as_mut() {
        protection::specialise(deletion, gathered, running);
        if let Some(grace) = podgc::grace_period(gathered, running) {
            // Graceful: the server set the deletionTimestamp to the end of the grace period.
            let asked = meta
                .deletion_timestamp
                .map(|ends| ends.0 - chrono::Duration::seconds(grace.seconds));
            deletion.since = asked.map(rfc3339);
            deletion.grace = Some(grace);
        }
    }
    let namespace = gathered
        .namespace
        .as_ref()
        .map(|facts| explain_namespace(facts, &gathered.settings, running, now));
    if let (Some(namespace), Some(deletion)) = (&namespace, deletion.as_mut()) {
        let mut spec = namespace.spec.clone();
        spec.append(&mut deletion.finalizers);
        deletion.finalizers = spec;
    }
    let object = ObjectId {
        api_version: gathered.resource.api_version(),
        kind: gathered.resource.kind.clone(),
        namespace: meta.namespace.clone(),
        name: meta.name.clone().unwrap_or_default(),
        uid: meta.uid.clone().unwrap_or_default(),
    };
    let mut explained = explanation(object, decisions, deletion);
    if !elsewhere.is_empty() && explained.reasons == [NO_GOVERNOR] {
        // Some controller would act: it is just not run here.
        explained.reasons = vec!["no controller kube-gc runs here governs it".to_owned()];
    }
    explained.reasons.extend(elsewhere);
    explained.events = gathered.events.iter().map(event_line).collect();
    if let Some(invalid) = invalid_policy(gathered) {
        explained.reasons.insert(0, invalid);
    }
    if let Some(Explained {
        decision, report, ..
    }) = namespace
    {
        namespace_verdict(&mut explained, &decision, report, running);
    }
    explained
}

/// What `covered` decides of the object gathered, at `now`: each controller's own decision
/// function.
fn decision_of(
    covered: Covered,
    gathered: &Gathered,
    meta: &ObjectMeta,
    now: DateTime<Utc>,
) -> Decision {
    match covered {
        Covered::TtlAfterFinished => ttl::from_gathered::<BatchJob>(gathered, now),
        Covered::VolcanoJobTtl => ttl::from_gathered::<VolcanoJobs>(gathered, now),
        Covered::Retention => retention::from_gathered(gathered, meta, now),
        Covered::GarbageCollector => gc::from_gathered(gathered, meta),
        Covered::Namespace => match &gathered.namespace {
            Some(facts) => namespace_decision(facts, &gathered.settings, now),
            None => not_its_kind(covered.name(), "Namespace"),
        },
        Covered::Podgc => podgc::from_gathered(gathered, now),
        Covered::PvcProtection => protection::claim_from_gathered(gathered),
        Covered::PvProtection => protection::volume_from_gathered(gathered),
    }
}

/// A namespace's verdict: a namespace not being deleted says why nothing deletes it; one the
/// namespace controller run here finalizes with nothing else holding it goes when it does.
pub(crate) fn namespace_verdict(
    explained: &mut Explanation,
    decision: &Decision,
    report: NamespaceReport,
    running: &ControllerSelection,
) {
    let Some(deletion) = &explained.deletion else {
        explained.reasons = vec![format!(
            "{}: not being deleted; kube-gc never deletes a namespace, it finishes the \
             deletion of one that was deleted",
            report.phase
        )];
        explained.namespace = Some(report);
        return;
    };
    let only_kubernetes = deletion.finalizers.len() == 1
        && deletion.finalizers[0].field.is_some()
        && deletion.finalizers[0].finalizer
            == kube_gc_controllers::namespace::decide::KUBERNETES_FINALIZER;
    if decision.governs && running.is_enabled(&decision.controller) {
        let line = format!("{}: {}", decision.controller, decision.summary);
        let finalizes = matches!(
            decision.verdict,
            VerdictKind::DeleteNow | VerdictKind::DeleteAt
        );
        if only_kubernetes && finalizes {
            explained.verdict = decision.verdict;
            explained.delete_at = decision.delete_at.clone();
        }
        explained.reasons.push(line);
    }
    explained.namespace = Some(report);
}

/// The reason of a `keep` no controller decided.
const NO_GOVERNOR: &str = "no kube-gc controller governs it";

/// The decision of a controller not run here, which `would` be its decision were it run; and,
/// when it would delete the object (or keep it for a problem), a reason saying so.
fn not_run_here(covered: Covered, would: Decision) -> (Decision, Option<String>) {
    let why = covered.not_run_here();
    let mut not_run = decision(covered.name(), false, VerdictKind::Keep, why.clone());
    if !would.governs {
        return (not_run, None);
    }
    let said = format!("{} — {}", would.verdict.as_str(), would.summary);
    not_run.details.push(format!("were it run here: {said}"));
    let acts = would.verdict != VerdictKind::Keep;
    let reason = acts.then(|| format!("{}, {why}, would: {said}", covered.name()));
    (not_run, reason)
}

/// For a retention policy that does not compile, what is wrong with it: the engine ignores
/// it, so it deletes nothing (its `Ready` condition says the same).
fn invalid_policy(gathered: &Gathered) -> Option<String> {
    use kube_gc_controllers::retention::engine::{cluster_policies, namespaced_policies};
    use kube_gc_controllers::retention::policy::{compile, RetentionPolicyObject};

    let cluster = if gathered.resource.is_same_resource(&cluster_policies()) {
        true
    } else if gathered.resource.is_same_resource(&namespaced_policies()) {
        false
    } else {
        return None;
    };
    let why = match serde_json::from_value::<RetentionPolicyObject>(gathered.object.clone()) {
        Err(e) => e.to_string(),
        Ok(policy) => match compile(&policy, cluster) {
            Ok(_) => return None,
            Err(errors) => errors
                .iter()
                .map(|e| format!("{}: {}", e.field, e.message))
                .collect::<Vec<_>>()
                .join("; "),
        },
    };
    Some(format!(
        "this retention policy is invalid and deletes nothing: {why}"
    ))
}

/// The explanation of `object` from every controller's decision and, for an object being
/// deleted, its finalizers: the verdict, its time and its reasons are [`overall`]'s.
pub fn explanation(
    object: ObjectId,
    decisions: Vec<Decision>,
    deletion: Option<DeletionInProgress>,
) -> Explanation {
    let (verdict, delete_at, reasons) = overall(&decisions, deletion.as_ref());
    Explanation {
        object,
        verdict,
        delete_at,
        reasons,
        decisions,
        deletion,
        events: Vec::new(),
        namespace: None,
        notes: Vec::new(),
    }
}

/// The verdict on an object from its controllers' decisions and its deletion, if it is being
/// deleted: the verdict, `deleteAt` with `delete-at`, and the reasons.
pub fn overall(
    decisions: &[Decision],
    deletion: Option<&DeletionInProgress>,
) -> (VerdictKind, Option<String>, Vec<String>) {
    let governing: Vec<&Decision> = decisions.iter().filter(|d| d.governs).collect();
    if let Some(deletion) = deletion {
        return being_deleted(deletion, &governing);
    }
    if governing.is_empty() {
        return (VerdictKind::Keep, None, vec![NO_GOVERNOR.to_owned()]);
    }
    let first = |kind: VerdictKind| {
        governing
            .iter()
            .filter(|d| d.verdict == kind)
            .collect::<Vec<_>>()
    };
    let reason = |d: &&&Decision| format!("{}: {}", d.controller, d.summary);
    let now = first(VerdictKind::DeleteNow);
    if !now.is_empty() {
        return (
            VerdictKind::DeleteNow,
            None,
            now.iter().map(reason).collect(),
        );
    }
    let mut later = first(VerdictKind::DeleteAt);
    later.sort_by(|a, b| a.delete_at.cmp(&b.delete_at));
    if let Some(earliest) = later.first() {
        return (
            VerdictKind::DeleteAt,
            earliest.delete_at.clone(),
            vec![reason(earliest)],
        );
    }
    let unknown = first(VerdictKind::Unknown);
    if !unknown.is_empty() {
        return (
            VerdictKind::Unknown,
            None,
            unknown.iter().map(reason).collect(),
        );
    }
    (
        VerdictKind::Keep,
        None,
        governing
            .iter()
            .map(|d| format!("{}: {}", d.controller, d.summary))
            .collect(),
    )
}

/// The verdict on an object being deleted: blocked while a finalizer holds it (or may: one
/// its source does not know of); a Pod in its grace period goes when a governing controller
/// force-deletes it, else is blocked until what removes it does; else gone at once.
fn being_deleted(
    deletion: &DeletionInProgress,
    governing: &[&Decision],
) -> (VerdictKind, Option<String>, Vec<String>) {
    let since = match &deletion.since {
        Some(at) => format!("being deleted since {at}"),
        None => "being deleted".to_owned(),
    };
    let names: Vec<&str> = deletion
        .finalizers
        .iter()
        .map(|f| f.finalizer.as_str())
        .collect();
    let waiting = match (names.is_empty(), deletion.unknown.is_some()) {
        (true, false) if deletion.grace.is_some() => {
            return in_grace_period(&since, deletion.grace.as_ref(), governing);
        }
        (true, false) => {
            let reason = format!("{since}; no finalizer holds it");
            return (VerdictKind::DeleteNow, None, vec![reason]);
        }
        (true, true) => "finalizers kube-gc does not cache".to_owned(),
        (false, false) => format!("finalizers {}", names.join(", ")),
        (false, true) => format!(
            "finalizers {} (and any others, which kube-gc does not cache)",
            names.join(", ")
        ),
    };
    let reason = format!("{since}, waiting for {waiting}");
    (VerdictKind::Blocked, None, vec![reason])
}

/// A Pod in its grace period, no finalizer holding it: gone when a governing controller
/// force-deletes it (the pod garbage collector), else when what its grace period says removes it.
fn in_grace_period(
    since: &str,
    grace: Option<&crate::explain::GracePeriod>,
    governing: &[&Decision],
) -> (VerdictKind, Option<String>, Vec<String>) {
    let grace = grace.map_or_else(String::new, |g| {
        format!(
            "; its {}s grace period ends {}: {}",
            g.seconds, g.ends_at, g.removed_by
        )
    });
    let mut reasons = vec![format!("{since}{grace}")];
    let deleting = governing
        .iter()
        .filter(|d| matches!(d.verdict, VerdictKind::DeleteNow | VerdictKind::DeleteAt))
        .min_by_key(|d| (d.verdict != VerdictKind::DeleteNow, d.delete_at.clone()));
    match deleting {
        Some(d) => {
            reasons.push(format!("{}: {}", d.controller, d.summary));
            (d.verdict, d.delete_at.clone(), reasons)
        }
        None => (VerdictKind::Blocked, None, reasons),
    }
}

fn event_line(event: &Value) -> EventLine {
    let text = |v: &Value| v.as_str().unwrap_or_default().to_owned();
    let time = [
        &event["lastTimestamp"],
        &event["eventTime"],
        &event["firstTimestamp"],
    ]
    .into_iter()
    .find(|v| v.is_string())
    .map(text)
    .unwrap_or_default();
    EventLine {
        time,
        type_: text(&event["type"]),
        reason: text(&event["reason"]),
        message: text(&event["message"]),
        source: [&event["reportingComponent"], &event["source"]["component"]]
            .into_iter()
            .find(|v| v.as_str().is_some_and(|s| !s.is_empty()))
            .map(text)
            .unwrap_or_default(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn deleting(finalizers: &[&str], unknown: bool) -> DeletionInProgress {
        let wait = |name: &&str| crate::explain::FinalizerWait {
            finalizer: (*name).to_owned(),
            field: None,
            owner: crate::explain::finalizers::owner_of(name),
            waits_for: String::new(),
            blockers: Vec::new(),
        };
        DeletionInProgress {
            since: None,
            finalizers: finalizers.iter().map(wait).collect(),
            unknown: unknown.then(|| "not cached".to_owned()),
            grace: None,
        }
    }

    #[test]
    fn a_deletion_is_blocked_while_a_finalizer_holds_it_or_may() {
        let verdict = |d: DeletionInProgress| overall(&[], Some(&d));
        assert_eq!(verdict(deleting(&[], false)).0, VerdictKind::DeleteNow);
        assert_eq!(
            verdict(deleting(&["orphan"], false)).0,
            VerdictKind::Blocked
        );
        let (kind, _, reasons) = verdict(deleting(&[], true));
        assert_eq!(kind, VerdictKind::Blocked);
        assert_eq!(
            reasons,
            ["being deleted, waiting for finalizers kube-gc does not cache"]
        );
    }

    #[test]
    fn the_earliest_governing_deletion_wins() {
        let at = |controller: &str, when: &str| Decision {
            delete_at: Some(when.to_owned()),
            ..decision(controller, true, VerdictKind::DeleteAt, "later".into())
        };
        let ignored = decision("retention", false, VerdictKind::DeleteNow, "no".into());
        let decisions = [
            at("a", "2026-01-02T00:00:00Z"),
            at("b", "2026-01-01T00:00:00Z"),
            ignored,
        ];
        let (kind, when, reasons) = overall(&decisions, None);
        assert_eq!(kind, VerdictKind::DeleteAt);
        assert_eq!(when.as_deref(), Some("2026-01-01T00:00:00Z"));
        assert_eq!(reasons, ["b: later"]);
    }
}
