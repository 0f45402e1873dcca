//! The summary's last part: `kube-gc explain` of one kept and one blocked object,
//! made after the controllers stopped, on objects created for it — so the demo's own checks are
//! untouched — and checked like everything else.
//!
//! - **Kept:** a running standalone Pod in the retention scene's namespace: the
//!   `ClusterRetentionPolicy` governs it, and it has not finished, so nothing will delete it yet.
//! - **Blocked:** a ConfigMap deleted in the foreground whose dependent Pod is itself being
//!   deleted but held by a finalizer of another controller (`demo.kube-gc.io/hold`): the
//!   explanation names the chain to that root cause.

use serde_json::json;

use crate::client::{Client, Discovery};
use crate::explain::{decide, gather, render, ExplainTarget, Explanation, VerdictKind};
use crate::sim::{DeleteOptions, Gvr, Propagation, SimServer};

use super::retention::PODS_NAMESPACE;
use super::NAMESPACE;

/// The finalizer no controller removes.
const HOLD: &str = "demo.kube-gc.io/hold";

/// The two screens, and what was not as expected.
pub async fn examples(sim: &SimServer, client: &Client) -> (Vec<String>, Vec<String>) {
    let mut problems = Vec::new();
    if let Err(e) = create(sim) {
        return (Vec::new(), vec![format!("explain examples: {e}")]);
    }
    let discovery = match Discovery::run(client).await {
        Ok(d) => d,
        Err(e) => {
            return (
                Vec::new(),
                vec![format!("explain examples: discovery: {e}")],
            )
        }
    };
    let mut screens = Vec::new();
    for (type_, namespace, name, want) in [
        ("pods", PODS_NAMESPACE, "explain-running", VerdictKind::Keep),
        (
            "configmaps",
            NAMESPACE,
            "explain-owner",
            VerdictKind::Blocked,
        ),
    ] {
        let target = ExplainTarget {
            type_: type_.into(),
            name: name.into(),
            namespace: namespace.into(),
        };
        match gather(client, &discovery, &target).await {
            Ok(gathered) => {
                let explanation = decide(&gathered, chrono::Utc::now());
                problems.extend(check(&explanation, want));
                screens.push(format!(
                    "$ kube-gc explain {type_}/{name} -n {namespace}\n{}",
                    render::text(&explanation)
                ));
            }
            Err(e) => problems.push(format!("explain {type_}/{name}: {e}")),
        }
    }
    (screens, problems)
}

fn check(explanation: &Explanation, want: VerdictKind) -> Option<String> {
    let name = &explanation.object.name;
    if explanation.verdict != want {
        return Some(format!(
            "explain {name}: verdict {}, expected {}",
            explanation.verdict.as_str(),
            want.as_str()
        ));
    }
    if want == VerdictKind::Blocked {
        let names_root = explanation.deletion.as_ref().is_some_and(|d| {
            d.finalizers
                .iter()
                .any(|f| f.blockers.iter().any(|b| b.why.contains(HOLD)))
        });
        if !names_root {
            return Some(format!(
                "explain {name}: the blocker held by {HOLD} is not named"
            ));
        }
    }
    None
}

/// A running Pod, and the blocked owner with its held dependent.
fn create(sim: &SimServer) -> Result<(), crate::sim::SimError> {
    let pods = Gvr::new("", "v1", "pods");
    let configmaps = Gvr::new("", "v1", "configmaps");
    let pod = |namespace: &str, name: &str, extra: serde_json::Value| {
        let mut pod = json!({"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "namespace": namespace},
            "spec": {"containers": [{"name": "main", "image": "busybox:1.36"}]}});
        if let Some(fields) = extra.as_object() {
            for (k, v) in fields {
                pod["metadata"][k] = v.clone();
            }
        }
        pod
    };
    let mut running = sim.create(&pods, pod(PODS_NAMESPACE, "explain-running", json!({})))?;
    running["status"] = json!({"phase": "Running"});
    sim.update_status(&pods, running)?;
    let owner = sim.create(
        &configmaps,
        json!({"apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": "explain-owner", "namespace": NAMESPACE}}),
    )?;
    let reference = json!([{"apiVersion": "v1", "kind": "ConfigMap", "name": "explain-owner",
        "uid": owner["metadata"]["uid"], "blockOwnerDeletion": true}]);
    sim.create(
        &pods,
        pod(
            NAMESPACE,
            "explain-held",
            json!({"ownerReferences": reference, "finalizers": [HOLD]}),
        ),
    )?;
    sim.delete(
        &pods,
        Some(NAMESPACE),
        "explain-held",
        &DeleteOptions::default(),
    )?;
    sim.delete(
        &configmaps,
        Some(NAMESPACE),
        "explain-owner",
        &DeleteOptions::propagation(Propagation::Foreground),
    )?;
    Ok(())
}
