//! The namespace controller's decision on a namespace and the [`NamespaceReport`]: both from one
//! `assess` of what is known, at one instant.
//!
//! Contract: [`explain_namespace`] is the one place a namespace's deletion is worded; its
//! verdict follows the controller's next step — `delete-now` when it finalizes (or proves, then
//! finalizes) on its next pass, `delete-at` the end of the safety delay when that is all it
//! waits for, `blocked` while content, a failure or a finalizer holds it.

use std::collections::BTreeMap;

use chrono::{DateTime, Utc};

use crate::explain::decide::{decision as worded, relative, rfc3339};
use crate::explain::finalizers::owner_of;
use crate::explain::{Blocker, Decision, FinalizerWait, Settings, VerdictKind};
use crate::selection::ControllerSelection;
use kube_gc_controllers::namespace::conditions::group_resource;
use kube_gc_controllers::namespace::decide::{
    assess, Assessment, Blocker as Holds, DeleteHow, Discovered, Inputs, Next, Progress,
    KUBERNETES_FINALIZER,
};
use kube_gc_controllers::namespace::CONTROLLER;

use super::chain::Chains;
use super::{
    ConditionLine, FinalizerCount, FinishedBy, NamespaceReport, RemainingContent, Unreadable,
    NAMED_PER_RESOURCE,
};
use crate::explain::gather::NamespaceFacts;

/// Everything the explanation says of a namespace.
pub(crate) struct Explained {
    /// The namespace controller's decision.
    pub decision: Decision,
    /// What each of `spec.finalizers` waits for.
    pub spec: Vec<FinalizerWait>,
    /// The rest.
    pub report: NamespaceReport,
}

/// The controller's assessment of `facts` at `now` (nothing, for a namespace it does not own).
fn assessment(facts: &NamespaceFacts, settings: &Settings, now: DateTime<Utc>) -> Assessment {
    let empty = Progress::default();
    let content = facts.content.as_ref();
    let discovered = Discovered {
        types: content.map(|c| c.types.clone()).unwrap_or_default(),
        failed: content.map(|c| c.failed.clone()).unwrap_or_default(),
        started: facts.discovered_at.unwrap_or(now),
    };
    assess(&Inputs {
        subject: &facts.subject,
        discovered: &discovered,
        content: content.map_or(&[][..], |c| &c.content),
        progress: content.map_or(&empty, |c| &c.progress),
        now,
        finalize_delay: settings.namespace_deletion_grace_period,
    })
}

/// The namespace controller's decision on `facts` at `now`.
pub(crate) fn decision(
    facts: &NamespaceFacts,
    settings: &Settings,
    now: DateTime<Utc>,
) -> Decision {
    decide(facts, &assessment(facts, settings, now), settings)
}

fn decide(facts: &NamespaceFacts, assessed: &Assessment, settings: &Settings) -> Decision {
    let subject = &facts.subject;
    let said = |governs, verdict, why: String| worded(CONTROLLER, governs, verdict, why);
    if subject.deletion_timestamp.is_none() {
        return said(false, VerdictKind::Keep, "does not apply: not being deleted (kube-gc never deletes a namespace; it finishes the deletion of one that was deleted)".into());
    }
    if assessed.next == Next::Nothing {
        return said(false, VerdictKind::Keep, format!("does not apply: {KUBERNETES_FINALIZER} is no longer in spec.finalizers (its content was deleted and it was finalized)"));
    }
    let objects: usize = assessed.remaining.iter().map(|r| r.count).sum();
    let resources = assessed.remaining.len();
    let remain = format!("{objects} object(s) remain in {resources} resource(s)");
    let mut d = match &assessed.next {
        Next::Finalize => said(true, VerdictKind::DeleteNow, "nothing remains: finalized now (kubernetes removed from spec.finalizers)".into()),
        Next::Prove { .. } if objects > 0 => said(true, VerdictKind::Blocked, format!("{remain}: a LIST must prove the Pods gone first, then it deletes the rest and finalizes once nothing remains")),
        Next::Prove { .. } => said(true, VerdictKind::DeleteNow, "nothing remains by what is known: each resource is listed once more to prove it, then it is finalized".into()),
        Next::WaitUntil(at) => {
            let delay = kube_gc_core::duration::format_duration(settings.namespace_deletion_grace_period);
            let mut d = said(true, VerdictKind::DeleteAt, format!("nothing remains: finalized when the safety delay (--namespace-deletion-grace-period={delay}) has passed"));
            d.delete_at = Some(rfc3339(*at));
            d
        }
        Next::Delete => said(true, VerdictKind::Blocked, format!("{remain}: it deletes them, then finalizes once nothing remains")),
        Next::Wait { .. } => said(true, VerdictKind::Blocked, format!("{remain}, being deleted: it finalizes once they are gone")),
        Next::Retry => said(true, VerdictKind::Blocked, "it cannot finalize until what failed succeeds; retried with back-off".into()),
        Next::Nothing => said(false, VerdictKind::Keep, String::new()),
    };
    d.details = holds_lines(&assessed.blockers);
    d
}

/// What one of the controller's blockers is about, and why it holds the finalize; none for the
/// content (listed apart), nor for a discovery too old while the safety delay has not passed
/// (the controller discovers again once it has: the delay says it all).
fn holds(holds: &Holds, all: &[Holds]) -> Option<(String, String)> {
    let too_early = all.iter().any(|h| matches!(h, Holds::TooEarly { .. }));
    Some(match holds {
        Holds::ContentRemains { .. } => return None,
        Holds::DiscoveryTooOld if too_early => return None,
        Holds::PodsFirst => (
            "Pods".to_owned(),
            "go first: nothing else is deleted while a Pod remains".to_owned(),
        ),
        Holds::DiscoveryFailed(group) => (
            format!("discovery of {}", group.group_version),
            format!(
                "failed ({}): whatever it serves may hold content, so the finalize waits until it answers",
                group.message
            ),
        ),
        Holds::RequestFailed { resource, failure } => (
            resource.path_name(),
            format!(
                "{} failed{}: {}",
                failure.verb,
                if failure.forbidden { " (forbidden: kube-gc's RBAC)" } else { "" },
                failure.message
            ),
        ),
        Holds::TooEarly { until } => (
            "the safety delay".to_owned(),
            format!("never finalized before {}", rfc3339(*until)),
        ),
        Holds::NotProven(resources) => (
            "proof of emptiness".to_owned(),
            format!(
                "no LIST has shown these empty yet: {}",
                resources.iter().map(|r| r.plural.clone()).collect::<Vec<_>>().join(", ")
            ),
        ),
        Holds::DiscoveryTooOld => (
            "discovery".to_owned(),
            "one made after the safety delay must list every resource first".to_owned(),
        ),
    })
}

/// Every blocker of the finalize but the content, each in a line.
fn holds_lines(all: &[Holds]) -> Vec<String> {
    all.iter()
        .filter_map(|h| holds(h, all))
        .map(|(subject, why)| format!("{subject}: {why}"))
        .collect()
}

/// Everything the explanation says of `facts` at `now`, with the controllers `running` here.
pub(crate) fn explain_namespace(
    facts: &NamespaceFacts,
    settings: &Settings,
    running: &ControllerSelection,
    now: DateTime<Utc>,
) -> Explained {
    let assessed = assessment(facts, settings, now);
    let decision = decide(facts, &assessed, settings);
    let chains = facts.content.as_ref().map(|content| Chains {
        content,
        namespace: &facts.subject.name,
        running,
        now,
    });
    let spec = facts
        .subject
        .spec_finalizers
        .iter()
        .filter(|_| facts.subject.deletion_timestamp.is_some())
        .map(|finalizer| spec_wait(finalizer, facts, &assessed, chains.as_ref(), running))
        .collect();
    let report = NamespaceReport {
        phase: facts.phase.clone().unwrap_or_else(|| "Active".to_owned()),
        content_source: facts.content.as_ref().map(|c| c.source.clone()),
        remaining: remaining(facts, running),
        unreadable: facts
            .content
            .iter()
            .flat_map(|c| &c.unreadable)
            .map(|(resource, message)| Unreadable {
                what: group_resource(resource).trim_end_matches('.').to_owned(),
                message: message.clone(),
            })
            .collect(),
        discovery_failures: facts
            .content
            .iter()
            .flat_map(|c| &c.failed)
            .map(|g| Unreadable {
                what: g.group_version.clone(),
                message: g.message.clone(),
            })
            .collect(),
        conditions: facts
            .conditions
            .iter()
            .map(|c| ConditionLine {
                type_: c.type_.clone(),
                status: c.status.clone(),
                reason: c.reason.clone().unwrap_or_default(),
                message: c.message.clone().unwrap_or_default(),
            })
            .collect(),
        finished_by: (assessed.next != Next::Nothing)
            .then(|| finished_by(&assessed, &decision, running, now)),
    };
    Explained {
        decision,
        spec,
        report,
    }
}

/// What one of `spec.finalizers` waits for: for `kubernetes`, everything the finalize waits for,
/// each object followed to its root cause.
fn spec_wait(
    finalizer: &str,
    facts: &NamespaceFacts,
    assessed: &Assessment,
    chains: Option<&Chains<'_>>,
    running: &ControllerSelection,
) -> FinalizerWait {
    let owner = owner_of(finalizer);
    let who = owner.line(running);
    if finalizer != KUBERNETES_FINALIZER {
        return FinalizerWait {
            finalizer: finalizer.to_owned(),
            field: Some("spec.finalizers"),
            waits_for: format!("{who} to remove it through /finalize"),
            owner,
            blockers: Vec::new(),
        };
    }
    let mut blockers = Vec::new();
    if let (Some(chains), Some(content)) = (chains, &facts.content) {
        // Pods first, as the controller deletes them.
        let mut ordered: Vec<_> = content.content.iter().collect();
        ordered.sort_by_key(|c| !c.kind.is_pods());
        for c in ordered {
            let objects = c.known.objects();
            if !objects.is_empty() {
                blockers.extend(chains.of_resource(&c.kind, objects));
            }
        }
    }
    let all = &assessed.blockers;
    blockers.extend(all.iter().filter_map(|h| {
        holds(h, all).map(|(object, why)| Blocker {
            object,
            why,
            blockers: Vec::new(),
        })
    }));
    let waits_for = match assessed.next {
        Next::Finalize => format!("{who} to remove it: nothing remains"),
        Next::Prove { .. } if assessed.remaining.is_empty() => {
            format!("{who} to remove it: nothing remains")
        }
        Next::WaitUntil(at) => format!(
            "{who} to remove it at {}, when the safety delay has passed",
            rfc3339(at)
        ),
        _ => format!("its content to be deleted, then {who} to remove it (through /finalize)"),
    };
    FinalizerWait {
        finalizer: finalizer.to_owned(),
        field: Some("spec.finalizers"),
        waits_for,
        owner,
        blockers,
    }
}

/// What remains, by resource, with every finalizer's count and owner.
fn remaining(facts: &NamespaceFacts, running: &ControllerSelection) -> Vec<RemainingContent> {
    let Some(content) = &facts.content else {
        return Vec::new();
    };
    content
        .content
        .iter()
        .filter(|c| !c.known.objects().is_empty())
        .map(|c| {
            let objects = c.known.objects();
            let mut counts: BTreeMap<&str, usize> = BTreeMap::new();
            for f in objects.iter().flat_map(|o| &o.finalizers) {
                *counts.entry(f.as_str()).or_insert(0) += 1;
            }
            RemainingContent {
                resource: group_resource(&c.kind.resource)
                    .trim_end_matches('.')
                    .to_owned(),
                kind: c.kind.resource.kind.clone(),
                count: objects.len(),
                more: matches!(
                    c.known,
                    kube_gc_controllers::namespace::decide::Known::Listed { more: true, .. }
                ),
                being_deleted: objects.iter().filter(|o| o.deleting).count(),
                names: objects
                    .iter()
                    .take(NAMED_PER_RESOURCE)
                    .map(|o| o.name.clone())
                    .collect(),
                finalizers: counts
                    .into_iter()
                    .map(|(finalizer, count)| {
                        let owner = owner_of(finalizer);
                        FinalizerCount {
                            finalizer: finalizer.to_owned(),
                            count,
                            removed_by: owner.line(running),
                            owner,
                        }
                    })
                    .collect(),
            }
        })
        .collect()
}

/// Who finishes the deletion, its next step, the safety delay left, and what it waits for.
fn finished_by(
    assessed: &Assessment,
    decided: &Decision,
    running: &ControllerSelection,
    now: DateTime<Utc>,
) -> FinishedBy {
    let run_here = running.is_enabled(CONTROLLER);
    let who = if run_here {
        "kube-gc's namespace controller (run here, per --controllers)".to_owned()
    } else {
        "kube-controller-manager's namespace-controller (kube-gc's namespace is not run here); \
         where no kube-controller-manager runs (envtest, kwok, a bare API server) nothing \
         finishes it: it stays Terminating"
            .to_owned()
    };
    let mut waits_for: Vec<String> = assessed
        .remaining
        .iter()
        .map(|r| {
            let held: usize = r.finalizers.values().sum();
            let by = if r.finalizers.is_empty() {
                String::new()
            } else {
                let names: Vec<&str> = r.finalizers.keys().map(String::as_str).collect();
                format!(", {held} held by {}", names.join(", "))
            };
            format!("{}: {} to go{by}", r.resource.plural, r.count)
        })
        .collect();
    waits_for.extend(holds_lines(&assessed.blockers));
    let left = assessed
        .finalize_not_before
        .map(|at| (at - now).num_seconds().max(0));
    FinishedBy {
        controller: CONTROLLER.to_owned(),
        run_here,
        who,
        next: next_step(assessed, decided, now),
        finalize_not_before: assessed.finalize_not_before.map(rfc3339),
        safety_delay_left_seconds: left,
        waits_for,
    }
}

fn next_step(assessed: &Assessment, decided: &Decision, now: DateTime<Utc>) -> String {
    match &assessed.next {
        Next::Delete => {
            let what: Vec<String> = assessed
                .delete
                .iter()
                .map(|d| match d.how {
                    DeleteHow::Collection => {
                        format!("{} (one deletecollection)", d.resource.plural)
                    }
                    DeleteHow::EachListed => {
                        format!("{} (each object, by name)", d.resource.plural)
                    }
                })
                .collect();
            format!("delete {}", what.join(", "))
        }
        Next::Wait { .. } => {
            "wait for what remains to go: acted on as soon as a watch shows it".to_owned()
        }
        Next::Retry => "retry what failed, with back-off".to_owned(),
        Next::WaitUntil(at) => format!("finalize at {} ({})", rfc3339(*at), relative(*at, now)),
        Next::Prove { .. } if !assessed.remaining.is_empty() => {
            "list the Pods to prove them gone, then delete the rest".to_owned()
        }
        Next::Prove { .. } => {
            "list each resource once more to prove it empty, then finalize".to_owned()
        }
        Next::Finalize => "finalize now".to_owned(),
        Next::Nothing => decided.summary.clone(),
    }
}
