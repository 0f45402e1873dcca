//! The plan's rows of the namespace controller: each namespace it will finalize — now, or when
//! the safety delay ends — and the content it deletes from the namespaces it is deleting; a
//! namespace whose discovery failed is kept, and said so.
//!
//! Contract: the namespaces are listed once; only those the namespace controller is deleting
//! (a `deletionTimestamp`, `kubernetes` in `spec.finalizers`) have their content listed, as
//! `kube-gc explain` lists it, and are judged by the controller's own `assess`. A namespace
//! whose content must go first is not given a time: how long its content takes is not known.
//! With `-l`, a namespace is selected by its own labels, and its content is not listed as rows.

use serde_json::Value;

use crate::explain::decide::namespace::namespace_decision;
use crate::explain::decide::rfc3339;
use crate::explain::gather::NamespaceFacts;
use crate::explain::gather::{namespace_facts, serves, GatherError};
use crate::explain::VerdictKind;
use kube_gc_client::{Api, ListParams, ResourceRef};
use kube_gc_controllers::namespace::decide::{is_ours, Known};
use kube_gc_controllers::namespace::CONTROLLER;

use super::rows::{Findings, Found, PlanContext};
use super::KeptRow;

fn namespaces() -> ResourceRef {
    ResourceRef::new("", "v1", "namespaces", "Namespace", false)
}

/// The namespaces the namespace controller finalizes, and the content it deletes.
pub(crate) async fn namespace_rows(
    cx: &PlanContext<'_>,
    found: &mut Findings,
) -> Result<(), GatherError> {
    if !serves(cx.served, &namespaces()) {
        return Ok(());
    }
    let api: Api<Value> = Api::dynamic(cx.client.clone(), namespaces(), None);
    let list = api
        .list(&ListParams::default())
        .await
        .map_err(|source| GatherError::Api {
            what: "list v1/namespaces".to_owned(),
            source,
        })?;
    for object in &list.items {
        let name = object["metadata"]["name"].as_str().unwrap_or_default();
        if cx.options.namespace.as_deref().is_some_and(|ns| ns != name) {
            continue;
        }
        let deleting = kube_gc_controllers::namespace::CachedNamespace::from_raw(object.clone())
            .is_ok_and(|ns| is_ours(&ns.subject()));
        if !deleting {
            continue;
        }
        let Some(facts) = namespace_facts(cx.client, cx.discovery, object).await else {
            continue;
        };
        let selected = cx
            .selector
            .is_none_or(|s| s.matches_lookup(|k| object["metadata"]["labels"][k].as_str()));
        if selected {
            judge(cx, &facts, object, found);
        }
        // What the content is labelled is not read (metadata lists keep no labels here).
        if cx.selector.is_none() {
            content_rows(&facts, found);
        }
    }
    Ok(())
}

/// The namespace's own row: finalized now or at a time, kept for a failed discovery, or none.
fn judge(cx: &PlanContext<'_>, facts: &NamespaceFacts, object: &Value, found: &mut Findings) {
    let decided = namespace_decision(facts, &cx.options.settings, cx.now);
    let held = match facts.finalizers.as_slice() {
        [] => String::new(),
        some => format!("; then its finalizers {} hold it", some.join(", ")),
    };
    let at = match decided.verdict {
        VerdictKind::DeleteNow => None,
        VerdictKind::DeleteAt => decided
            .delete_at
            .as_deref()
            .and_then(|t| chrono::DateTime::parse_from_rfc3339(t).ok())
            .map(|t| t.to_utc()),
        _ => {
            let failed = facts.content.iter().flat_map(|c| &c.failed);
            let groups: Vec<&str> = failed.map(|g| g.group_version.as_str()).collect();
            if !groups.is_empty() {
                found.kept.push(KeptRow {
                    kind: "Namespace".to_owned(),
                    namespace: None,
                    name: facts.subject.name.clone(),
                    controller: CONTROLLER.to_owned(),
                    problem: format!(
                        "discovery of {} failed: never finalized until it answers",
                        groups.join(", ")
                    ),
                });
            }
            return;
        }
    };
    let when = match at {
        Some(at) => format!("at the end of the safety delay ({})", rfc3339(at)),
        None => "now".to_owned(),
    };
    found.deletions.push((
        at,
        Found {
            uid: object["metadata"]["uid"]
                .as_str()
                .unwrap_or_default()
                .to_owned(),
            kind: "Namespace".to_owned(),
            namespace: None,
            name: facts.subject.name.clone(),
            controller: CONTROLLER.to_owned(),
            reason: format!("nothing remains: finalized {when}{held}"),
        },
    ));
}

/// The objects of a namespace being deleted that the controller has yet to ask to go (those
/// marked already are going, or held: not a deletion to come).
fn content_rows(facts: &NamespaceFacts, found: &mut Findings) {
    let Some(content) = &facts.content else {
        return;
    };
    let pods_remain = content
        .content
        .iter()
        .any(|c| c.kind.is_pods() && !c.known.objects().is_empty());
    for c in &content.content {
        let Known::Listed { objects, .. } = &c.known else {
            continue;
        };
        let reason = if pods_remain && !c.kind.is_pods() {
            format!(
                "namespace {} is being deleted (after its Pods)",
                facts.subject.name
            )
        } else {
            format!("namespace {} is being deleted", facts.subject.name)
        };
        for object in objects.iter().filter(|o| !o.deleting) {
            found.deletions.push((
                None,
                Found {
                    uid: object.uid.clone(),
                    kind: c.kind.resource.kind.clone(),
                    namespace: Some(facts.subject.name.clone()),
                    name: object.name.clone(),
                    controller: CONTROLLER.to_owned(),
                    reason: reason.clone(),
                },
            ));
        }
    }
}
