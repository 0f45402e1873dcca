//! The garbage collector's guards, one worker step at a time against the simulated server
//! (which enforces preconditions and JSON-patch `test`s as kube-apiserver does): a DELETE
//! judged on a stale copy goes through only if the owners judged are still the owners; an
//! owners patch on changed references is refused; a finalizer goes alone; an owner's type not
//! synced yet defers the verdict without a request, and an owner the graph never saw is read
//! once, by UID.

mod gc_support;

use std::collections::HashSet;
use std::sync::Arc;

use gc_support::start_sim;
use kube_gc::api::{OwnerReference, PartialObjectMetadata, PropagationPolicy};
use kube_gc::controllers::garbagecollector::graph::{NodeView, Observed};
use kube_gc::controllers::garbagecollector::identity::{Gvk, OwnerLink};
use kube_gc::controllers::garbagecollector::steps::{Classification, Steps};
use kube_gc::controllers::garbagecollector::WorkError;
use kube_gc::sim::faults::Verb;
use kube_gc::sim::{Gvr, SimServer};
use serde_json::json;

fn pods() -> Gvr {
    Gvr::new("", "v1", "pods")
}

/// A server, and a collector's state over it with nothing running.
async fn sim_and_steps() -> (SimServer, Steps, tempfile::TempDir) {
    let (sim, dir, client) = start_sim().await;
    (sim, Steps::new(client).await, dir)
}

/// A pod owned by a ConfigMap, as the graph observed it.
fn seed_pod(sim: &SimServer, steps: &Steps) -> Observed {
    let pod = sim
        .create(
            &pods(),
            json!({"metadata": {"name": "p", "namespace": "default", "ownerReferences": [
                {"apiVersion": "v1", "kind": "ConfigMap", "name": "cm", "uid": "cm-uid"}]}}),
        )
        .unwrap();
    let object: PartialObjectMetadata = serde_json::from_value(pod).unwrap();
    steps.observe("v1", "Pod", &object).unwrap()
}

/// The worker's DELETE of `pod` in the background, on the copy and owners the graph observed.
async fn delete_as_judged(steps: &Steps, pod: &Observed) -> Result<(), WorkError> {
    let judged: Vec<OwnerReference> = pod.owners.iter().map(OwnerLink::to_reference).collect();
    steps
        .delete(
            &pod.identity,
            PropagationPolicy::Background,
            &pod.resource_version,
            &judged,
        )
        .await
}

fn statuses(sim: &SimServer) -> Vec<(Verb, u16)> {
    sim.journal()
        .entries()
        .iter()
        .filter(|e| matches!(e.verb, Verb::Get | Verb::Delete | Verb::Patch))
        .map(|e| (e.verb, e.status))
        .collect()
}

#[tokio::test]
async fn a_stale_copy_with_the_same_owners_is_deleted_after_one_read() {
    let (sim, steps, _dir) = sim_and_steps().await;
    let pod = seed_pod(&sim, &steps);
    // Someone labels the pod: its resourceVersion moves on, its owners stay.
    let mut live = sim.get(&pods(), Some("default"), "p").unwrap();
    live["metadata"]["labels"] = json!({"touched": "yes"});
    sim.update(&pods(), live).unwrap();
    sim.journal().clear();
    let result = delete_as_judged(&steps, &pod).await;
    assert!(result.is_ok(), "{result:?}");
    assert!(sim.get(&pods(), Some("default"), "p").is_err());
    assert_eq!(
        statuses(&sim),
        [(Verb::Delete, 409), (Verb::Get, 200), (Verb::Delete, 200)]
    );
    sim.shutdown().await;
}

#[tokio::test]
async fn a_stale_copy_whose_owners_changed_is_not_deleted() {
    let (sim, steps, _dir) = sim_and_steps().await;
    let pod = seed_pod(&sim, &steps);
    // A new owner is added after the decision was made.
    let mut live = sim.get(&pods(), Some("default"), "p").unwrap();
    live["metadata"]["ownerReferences"]
        .as_array_mut()
        .unwrap()
        .push(json!({"apiVersion": "v1", "kind": "ConfigMap", "name": "new", "uid": "new-uid"}));
    sim.update(&pods(), live).unwrap();
    sim.journal().clear();
    let result = delete_as_judged(&steps, &pod).await;
    assert!(matches!(result, Err(WorkError::Changed(_))), "{result:?}");
    assert!(sim.get(&pods(), Some("default"), "p").is_ok());
    assert_eq!(statuses(&sim), [(Verb::Delete, 409), (Verb::Get, 200)]);
    sim.shutdown().await;
}

#[tokio::test]
async fn an_owner_patch_on_changed_references_is_refused() {
    let (sim, steps, _dir) = sim_and_steps().await;
    let pod = seed_pod(&sim, &steps);
    let mut live = sim.get(&pods(), Some("default"), "p").unwrap();
    live["metadata"]["ownerReferences"][0]["blockOwnerDeletion"] = json!(true);
    sim.update(&pods(), live).unwrap();
    let gone = HashSet::from([Arc::clone(&pod.owners[0].uid)]);
    let result = steps.remove_owners(&pod.identity, &pod.owners, &gone).await;
    assert!(result.is_err(), "a patch on changed references must fail");
    let live = sim.get(&pods(), Some("default"), "p").unwrap();
    assert_eq!(
        live["metadata"]["ownerReferences"].as_array().map(Vec::len),
        Some(1)
    );
    // On the references judged, the same patch goes through.
    let object: PartialObjectMetadata = serde_json::from_value(live).unwrap();
    let fresh = steps.observe("v1", "Pod", &object).unwrap();
    let result = steps
        .remove_owners(&pod.identity, &fresh.owners, &gone)
        .await;
    assert!(matches!(result, Ok(Some(_))), "{result:?}");
    let live = sim.get(&pods(), Some("default"), "p").unwrap();
    assert!(live["metadata"]["ownerReferences"].is_null());
    sim.shutdown().await;
}

#[tokio::test]
async fn removing_a_finalizer_keeps_the_others() {
    let (sim, steps, _dir) = sim_and_steps().await;
    let pod = seed_pod(&sim, &steps);
    let mut live = sim.get(&pods(), Some("default"), "p").unwrap();
    live["metadata"]["finalizers"] = json!(["orphan", "example.com/keep"]);
    sim.update(&pods(), live).unwrap();
    let result = steps.remove_finalizer(&pod.identity, "orphan").await;
    assert!(result.is_ok(), "{result:?}");
    let live = sim.get(&pods(), Some("default"), "p").unwrap();
    assert_eq!(live["metadata"]["finalizers"], json!(["example.com/keep"]));
    sim.shutdown().await;
}

/// A pod naming a ConfigMap the graph has not observed, put in the graph.
fn pod_view(steps: &Steps, owner_uid: &str) -> NodeView {
    let pod: PartialObjectMetadata = serde_json::from_value(json!({"metadata": {
        "name": "p", "namespace": "default", "uid": "pod-uid",
        "ownerReferences": [
            {"apiVersion": "v1", "kind": "ConfigMap", "name": "cm", "uid": owner_uid}]}}))
    .unwrap();
    steps.put("v1", "Pod", &pod).unwrap()
}

#[tokio::test]
async fn an_owner_of_an_unsynced_type_defers_the_decision_without_a_request() {
    let (sim, steps, _dir) = sim_and_steps().await;
    let item = pod_view(&steps, "cm-uid");
    let configmaps = Gvk {
        api_version: "v1".into(),
        kind: "ConfigMap".into(),
    }
    .group_kind();
    steps.monitor_started(configmaps.clone());
    sim.journal().clear();
    let deferred = steps.classify(&item).await;
    assert!(
        matches!(deferred, Ok(Classification::Defer)),
        "{deferred:?}"
    );
    assert_eq!(sim.journal().count(Verb::Get), 0);
    // Synced, and still not in the graph: a live read decides, and remembers the absence.
    steps.monitor_synced(&configmaps);
    let judged = steps.classify(&item).await;
    assert!(
        matches!(&judged, Ok(Classification::Ready(v)) if v.dangling.len() == 1),
        "{judged:?}"
    );
    let again = steps.classify(&item).await;
    assert!(matches!(again, Ok(Classification::Ready(_))));
    assert_eq!(
        sim.journal().count(Verb::Get),
        1,
        "the absence was not cached"
    );
    sim.shutdown().await;
}

#[tokio::test]
async fn a_live_owner_found_by_a_read_is_solid_and_one_with_another_uid_is_not() {
    let (sim, steps, _dir) = sim_and_steps().await;
    let cm = sim
        .create(
            &Gvr::new("", "v1", "configmaps"),
            json!({"metadata": {"name": "cm", "namespace": "default"}}),
        )
        .unwrap();
    let live_uid = cm["metadata"]["uid"]
        .as_str()
        .unwrap_or_default()
        .to_owned();
    let judged = steps.classify(&pod_view(&steps, &live_uid)).await;
    assert!(matches!(&judged, Ok(Classification::Ready(v)) if v.solid.len() == 1));
    let judged = steps.classify(&pod_view(&steps, "an-older-uid")).await;
    assert!(matches!(&judged, Ok(Classification::Ready(v)) if v.dangling.len() == 1));
    sim.shutdown().await;
}
