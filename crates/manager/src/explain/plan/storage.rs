//! The plan's rows of the pod garbage collector (the Pods it force-deletes: orphans when their
//! node's quarantine ends, terminating Pods never scheduled or on an out-of-service node, the
//! terminated Pods above the threshold) and of the protection controllers (the claims and
//! volumes whose finalizer they remove), each found with the controller's own rules.
//!
//! Contract: only LISTs, of what the controller's rules read and only when they can find
//! something (no Pods are listed for claims when no claim waits); every Pod is read for the
//! pod garbage collector whatever `--namespace` and `-l` say, since its threshold counts them all
//! (the selector then picks among the rows, as the server matches it); volumes are not planned
//! for one namespace.

use std::collections::{HashMap, HashSet};

use chrono::DateTime;
use serde_json::Value;

use crate::explain::decide::{podgc_decision, PodGcFacts, Standing};
use crate::explain::gather::{
    claims, every_node, every_pod, pods_as_claims, serves, volumes, GatherError,
};
use crate::explain::VerdictKind;
use crate::selection::PODGC;
use kube_gc_client::{Api, ListParams};
use kube_gc_controllers::podgc::decide::{excess_terminated, judge, NodeView};
use kube_gc_controllers::podgc::{
    node_resource, pod_resource, NodeFacts, PodFacts, Reason, Verdict,
};
use kube_gc_controllers::protection::decide::{claim_release, volume_release, Release};
use kube_gc_controllers::protection::{
    claim_resource, volume_resource, PVC_CONTROLLER, PVC_FINALIZER, PV_CONTROLLER, PV_FINALIZER,
};
use kube_gc_runtime::cache::Cacheable;

use super::rows::{Findings, Found, PlanContext};

/// The pod garbage collector's force deletions to come.
pub(crate) async fn pod_rows(
    cx: &PlanContext<'_>,
    found: &mut Findings,
) -> Result<(), GatherError> {
    if !serves(cx.served, &pod_resource()) || !serves(cx.served, &node_resource()) {
        return Ok(());
    }
    let pods = every_pod(cx.client, None).await?;
    let nodes = every_node(cx.client).await?;
    let nodes: HashMap<&str, &NodeFacts> = nodes.iter().map(|n| (n.name.as_str(), n)).collect();
    let selected = selected_pods(cx).await?;
    let threshold = cx.options.settings.terminated_pod_gc_threshold;
    let going = excess_terminated(&pods, threshold);
    let total = pods.iter().filter(|p| p.phase.is_terminated()).count();
    let place: HashMap<&str, usize> = going
        .iter()
        .enumerate()
        .map(|(i, p)| (p.uid.as_str(), i + 1))
        .collect();
    for pod in &pods {
        let in_scope = cx
            .options
            .namespace
            .as_deref()
            .is_none_or(|ns| pod.key.namespace() == Some(ns));
        if !in_scope || selected.as_ref().is_some_and(|s| !s.contains(&pod.uid)) {
            continue;
        }
        let view = match nodes.get(pod.node_name.as_str()) {
            Some(node) => NodeView::Present(node),
            None => NodeView::Missing,
        };
        let standing = match place.get(pod.uid.as_str()) {
            Some(&position) => Standing::Excess {
                position,
                excess: going.len(),
                total,
            },
            None => Standing::NotCounted,
        };
        let facts = PodGcFacts {
            pod,
            node: view,
            missing_since: None,
            standing,
            threshold,
        };
        let decided = podgc_decision(&facts, cx.now);
        let at = match decided.verdict {
            VerdictKind::DeleteNow => None,
            VerdictKind::DeleteAt => decided
                .delete_at
                .as_deref()
                .and_then(|t| DateTime::parse_from_rfc3339(t).ok())
                .map(|t| t.to_utc()),
            _ => continue,
        };
        let reason = pod_reason(pod, view, standing, threshold);
        found.deletions.push((at, pod_found(pod, reason)));
    }
    Ok(())
}

/// The UIDs of the Pods `-l` selects, as the server matches it; `None` without a selector.
async fn selected_pods(cx: &PlanContext<'_>) -> Result<Option<HashSet<String>>, GatherError> {
    let Some(selector) = &cx.options.selector else {
        return Ok(None);
    };
    let namespace = cx.options.namespace.as_deref();
    let api: Api<Value> = Api::dynamic(cx.client.clone(), pod_resource(), namespace);
    let params = ListParams::default().with_labels(selector.clone());
    let list = api
        .list_metadata(&params)
        .await
        .map_err(|source| GatherError::Api {
            what: format!("list v1/pods -l {selector}"),
            source,
        })?;
    Ok(Some(
        list.items
            .into_iter()
            .filter_map(|p| p.metadata.uid)
            .collect(),
    ))
}

/// Why the pod garbage collector deletes `pod`, in a few words.
fn pod_reason(pod: &PodFacts, view: NodeView<'_>, standing: Standing, threshold: usize) -> String {
    let node = &pod.node_name;
    match (judge(pod, view), standing) {
        (Verdict::ForceDelete(Reason::Unscheduled), _) => "terminating, never scheduled".into(),
        (Verdict::ForceDelete(Reason::OutOfService), _) => {
            format!("terminating on node {node}, not ready and out-of-service")
        }
        (
            _,
            Standing::Excess {
                position, total, ..
            },
        ) => format!(
            "terminated: {total} terminated Pods, above --terminated-pod-gc-threshold={threshold}; \
             the {} to go",
            crate::explain::decide::ordinal(position)
        ),
        _ => format!("node {node} does not exist (after its 40 s quarantine, at the latest)"),
    }
}

fn pod_found(pod: &PodFacts, reason: String) -> Found {
    Found {
        uid: pod.uid.clone(),
        kind: "Pod".to_owned(),
        namespace: pod.key.namespace().map(str::to_owned),
        name: pod.key.name().to_owned(),
        controller: PODGC.to_owned(),
        reason,
    }
}

/// The claims the PVC protection controller releases.
pub(crate) async fn claim_rows(
    cx: &PlanContext<'_>,
    found: &mut Findings,
) -> Result<(), GatherError> {
    if !serves(cx.served, &claim_resource()) || !serves(cx.served, &pod_resource()) {
        return Ok(());
    }
    let namespace = cx.options.namespace.as_deref();
    let params = ListParams {
        label_selector: cx.options.selector.clone(),
        ..ListParams::default()
    };
    let all = claims(cx.client, namespace, params).await?;
    let waiting: Vec<_> = all
        .iter()
        .filter(|c| c.deleting && c.finalizers.iter().any(|f| f == PVC_FINALIZER))
        .collect();
    if waiting.is_empty() {
        return Ok(());
    }
    let pods = pods_as_claims(cx.client, namespace).await?;
    for claim in waiting {
        if let Release::Release { .. } = claim_release(claim, PVC_FINALIZER, &pods) {
            let reason = released("no Pod uses it", PVC_FINALIZER, &claim.finalizers);
            found.deletions.push((
                None,
                Found {
                    uid: claim.uid().to_owned(),
                    kind: "PersistentVolumeClaim".to_owned(),
                    namespace: claim.key.namespace().map(str::to_owned),
                    name: claim.key.name().to_owned(),
                    controller: PVC_CONTROLLER.to_owned(),
                    reason,
                },
            ));
        }
    }
    Ok(())
}

/// The volumes the PV protection controller releases (none planned for one namespace: every
/// claim may bind a volume).
pub(crate) async fn volume_rows(
    cx: &PlanContext<'_>,
    found: &mut Findings,
) -> Result<(), GatherError> {
    let served = serves(cx.served, &volume_resource()) && serves(cx.served, &claim_resource());
    if !served || cx.options.namespace.is_some() {
        return Ok(());
    }
    let params = ListParams {
        label_selector: cx.options.selector.clone(),
        ..ListParams::default()
    };
    let all = volumes(cx.client, params).await?;
    let waiting: Vec<_> = all
        .iter()
        .filter(|v| v.deleting && v.finalizers.iter().any(|f| f == PV_FINALIZER))
        .collect();
    if waiting.is_empty() {
        return Ok(());
    }
    let every_claim = claims(cx.client, None, ListParams::default()).await?;
    for volume in waiting {
        if let Release::Release { .. } = volume_release(volume, PV_FINALIZER, &every_claim) {
            let reason = released("no claim is bound to it", PV_FINALIZER, &volume.finalizers);
            found.deletions.push((
                None,
                Found {
                    uid: volume.uid().to_owned(),
                    kind: "PersistentVolume".to_owned(),
                    namespace: None,
                    name: volume.name.clone(),
                    controller: PV_CONTROLLER.to_owned(),
                    reason,
                },
            ));
        }
    }
    Ok(())
}

/// "no Pod uses it: kubernetes.io/pvc-protection released", and what holds it after.
fn released(why: &str, finalizer: &str, finalizers: &[String]) -> String {
    let others: Vec<&str> = finalizers
        .iter()
        .map(String::as_str)
        .filter(|f| *f != finalizer)
        .collect();
    if others.is_empty() {
        format!("{why}: {finalizer} released")
    } else {
        format!(
            "{why}: {finalizer} released; then {} still hold it",
            others.join(", ")
        )
    }
}
