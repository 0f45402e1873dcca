//! The PVC and PV protection controllers end to end on the simulated API server (which adds
//! the protection finalizers at creation, as admission does), on tokio's paused clock: a claim
//! in use and a bound volume keep their finalizers, objects not being deleted are never
//! touched, releases are confirmed by a live LIST and guarded by uid and resourceVersion — and
//! the pod garbage collector and the PVC controller share one list and one watch of Pods.

mod client_support;
mod podgc_support;

use std::time::Duration;

use kube_gc::client::Client;
use kube_gc::controllers::podgc::{PodGcController, PodGcOptions};
use kube_gc::controllers::protection::pvc::ProtectionOptions;
use kube_gc::controllers::protection::{PvProtection, PvcProtection};
use kube_gc::controllers::Wiring;
use kube_gc::runtime::reflector::ReflectorConfig;
use kube_gc::runtime::sources::Sources;
use kube_gc::sim::{DeleteOptions, SimServer};
use serde_json::{json, Value};
use tokio_util::sync::CancellationToken;

use podgc_support::*;

const CLAIMS: &str = "/api/v1/namespaces/default/persistentvolumeclaims";
const PODS: &str = "/api/v1/namespaces/default/pods";

/// Both protection controllers (and, with `podgc`, the pod garbage collector) on one set of
/// sources; cancel the token to stop them.
fn run(world: &World, podgc: bool) -> (CancellationToken, Vec<tokio::task::JoinHandle<()>>) {
    let client: Client = world.harness.client.clone();
    let sources = Sources::new(client.clone(), ReflectorConfig::default());
    let shutdown = CancellationToken::new();
    let mut tasks = Vec::new();
    let wiring = Wiring::default()
        .sources(sources)
        .clock(world.clock.clone());
    let pvc = PvcProtection::new(client.clone(), &wiring, &ProtectionOptions::default());
    let pv = PvProtection::new(client.clone(), &wiring, false);
    let token = shutdown.clone();
    tasks.push(tokio::spawn(async move {
        pvc.run(token).await.expect("pvc-protection ran")
    }));
    let token = shutdown.clone();
    tasks.push(tokio::spawn(async move {
        pv.run(token).await.expect("pv-protection ran")
    }));
    if podgc {
        let controller = PodGcController::builder(client, PodGcOptions::default())
            .wiring(wiring)
            .build();
        let token = shutdown.clone();
        tasks.push(tokio::spawn(async move {
            controller.run(token).await.expect("podgc ran")
        }));
    }
    (shutdown, tasks)
}

async fn stop(shutdown: CancellationToken, tasks: Vec<tokio::task::JoinHandle<()>>) {
    shutdown.cancel();
    for task in tasks {
        task.await.expect("a controller task");
    }
}

fn create_claim(sim: &SimServer, name: &str, volume: &str) -> Value {
    let mut claim = json!({"metadata": {"name": name, "namespace": NS},
        "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}}});
    if !volume.is_empty() {
        claim["spec"]["volumeName"] = json!(volume);
    }
    sim.create(&claims(), claim).expect("create the claim")
}

fn create_volume(sim: &SimServer, name: &str) -> Value {
    let volume = json!({"metadata": {"name": name},
        "spec": {"capacity": {"storage": "1Gi"}, "accessModes": ["ReadWriteOnce"],
            "hostPath": {"path": "/tmp/pv"}}});
    sim.create(&volumes(), volume).expect("create the volume")
}

fn delete(sim: &SimServer, gvr: &kube_gc::sim::Gvr, namespace: Option<&str>, name: &str) {
    sim.delete(gvr, namespace, name, &DeleteOptions::default())
        .expect("delete");
}

fn claim(sim: &SimServer, name: &str) -> Option<Value> {
    sim.get(&claims(), Some(NS), name).ok()
}

fn volume(sim: &SimServer, name: &str) -> Option<Value> {
    sim.get(&volumes(), None, name).ok()
}

/// The PATCHes sent to `path`.
fn patches(world: &World, path: &str) -> Vec<Value> {
    world
        .requests_to(path)
        .into_iter()
        .filter(|e| e.method == "PATCH")
        .map(|e| e.body.unwrap_or_default())
        .collect()
}

#[tokio::test(start_paused = true)]
async fn a_claim_used_by_a_running_pod_keeps_its_finalizer_until_the_pod_is_gone() {
    let world = world().await;
    let sim = world.sim();
    create_node(sim, "n", true, false);
    create_claim(sim, "data", "");
    create_pod(sim, pod("user", "n", &["data"]), "Running");
    let (shutdown, tasks) = run(&world, false);
    delete(sim, &claims(), Some(NS), "data");
    wait(Duration::from_secs(300)).await;
    let held = claim(sim, "data").expect("the claim stays");
    assert_eq!(
        held["metadata"]["finalizers"],
        json!(["kubernetes.io/pvc-protection"])
    );
    assert!(patches(&world, &format!("{CLAIMS}/data")).is_empty());

    // A terminated Pod still holds it (its kubelet may not have unmounted yet); its deletion
    // releases it.
    let mut done = get_pod(sim, "user").unwrap();
    done["status"] = json!({"phase": "Succeeded"});
    sim.update_status(&pods(), done).unwrap();
    wait(Duration::from_secs(60)).await;
    assert!(claim(sim, "data").is_some());
    force_delete_pod(sim, "user");
    eventually("the claim is released", || claim(sim, "data").is_none()).await;
    let sent = patches(&world, &format!("{CLAIMS}/data"));
    assert_eq!(sent.len(), 1);
    assert_eq!(sent[0][0]["op"], "test");
    assert_eq!(sent[0][0]["path"], "/metadata/uid");
    assert_eq!(sent[0][1]["path"], "/metadata/resourceVersion");
    assert_eq!(
        sent[0][3],
        json!({"op": "remove", "path": "/metadata/finalizers/0"})
    );
    stop(shutdown, tasks).await;
}

#[tokio::test(start_paused = true)]
async fn an_unused_claim_is_released_after_a_live_list_and_unscheduled_pods_do_not_hold_it() {
    let world = world().await;
    let sim = world.sim();
    create_claim(sim, "free", "");
    create_pod(sim, pod("pending", "", &["free"]), "Pending");
    let (shutdown, tasks) = run(&world, false);
    wait(Duration::from_secs(5)).await;
    let lists_before = live_pod_lists(&world);
    delete(sim, &claims(), Some(NS), "free");
    eventually("the claim is released", || claim(sim, "free").is_none()).await;
    assert_eq!(live_pod_lists(&world) - lists_before, 1, "one live LIST");
    stop(shutdown, tasks).await;
}

/// Consistent LISTs of the namespace's Pods (the informers list all namespaces).
fn live_pod_lists(world: &World) -> usize {
    world
        .requests_to(PODS)
        .iter()
        .filter(|e| e.method == "GET" && e.path == PODS && e.query_value("watch").is_none())
        .count()
}

#[tokio::test(start_paused = true)]
async fn a_burst_of_claims_in_a_namespace_costs_one_live_list() {
    let world = world().await;
    let sim = world.sim();
    for i in 0..10 {
        create_claim(sim, &format!("c{i}"), "");
    }
    let (shutdown, tasks) = run(&world, false);
    wait(Duration::from_secs(5)).await;
    let before = live_pod_lists(&world);
    for i in 0..10 {
        delete(sim, &claims(), Some(NS), &format!("c{i}"));
    }
    eventually("every claim is released", || {
        (0..10).all(|i| claim(sim, &format!("c{i}")).is_none())
    })
    .await;
    let lists = live_pod_lists(&world) - before;
    assert!((1..=3).contains(&lists), "{lists} live LISTs for 10 claims");
    stop(shutdown, tasks).await;
}

#[tokio::test(start_paused = true)]
async fn claims_and_volumes_not_being_deleted_are_never_touched() {
    let world = world().await;
    let sim = world.sim();
    create_claim(sim, "kept", "");
    create_volume(sim, "pv-kept");
    let (shutdown, tasks) = run(&world, false);
    wait(Duration::from_secs(600)).await;
    assert!(patches(&world, &format!("{CLAIMS}/kept")).is_empty());
    assert!(patches(&world, "/api/v1/persistentvolumes/pv-kept").is_empty());
    assert!(claim(sim, "kept").is_some() && volume(sim, "pv-kept").is_some());
    stop(shutdown, tasks).await;
}

#[tokio::test(start_paused = true)]
async fn a_volume_with_a_bound_claim_keeps_its_finalizer_until_the_claim_goes() {
    let world = world().await;
    let sim = world.sim();
    create_volume(sim, "pv-1");
    create_claim(sim, "bound", "pv-1");
    let (shutdown, tasks) = run(&world, false);
    delete(sim, &volumes(), None, "pv-1");
    wait(Duration::from_secs(300)).await;
    let held = volume(sim, "pv-1").expect("the volume stays");
    assert_eq!(
        held["metadata"]["finalizers"],
        json!(["kubernetes.io/pv-protection"])
    );

    delete(sim, &claims(), Some(NS), "bound");
    eventually("claim and volume are released", || {
        claim(sim, "bound").is_none() && volume(sim, "pv-1").is_none()
    })
    .await;
    stop(shutdown, tasks).await;
}

#[tokio::test(start_paused = true)]
async fn a_volume_whose_phase_is_bound_keeps_its_finalizer() {
    let world = world().await;
    let sim = world.sim();
    let mut bound = create_volume(sim, "pv-2");
    bound["status"] = json!({"phase": "Bound"});
    sim.update_status(&volumes(), bound).unwrap();
    let (shutdown, tasks) = run(&world, false);
    delete(sim, &volumes(), None, "pv-2");
    wait(Duration::from_secs(300)).await;
    assert!(volume(sim, "pv-2").is_some());
    assert!(patches(&world, "/api/v1/persistentvolumes/pv-2").is_empty());
    stop(shutdown, tasks).await;
}

#[tokio::test(start_paused = true)]
async fn pods_are_listed_and_watched_once_in_protobuf_for_both_controllers_that_read_them() {
    let world = world().await;
    let sim = world.sim();
    create_node(sim, "n", true, false);
    create_pod(sim, pod("p", "n", &[]), "Running");
    let (shutdown, tasks) = run(&world, true);
    wait(Duration::from_secs(30)).await;
    let informer_requests: Vec<_> = world
        .requests_to("/api/v1/pods")
        .into_iter()
        .filter(|e| e.path == "/api/v1/pods")
        .collect();
    let lists = informer_requests
        .iter()
        .filter(|e| e.query_value("watch").is_none())
        .count();
    let watches = informer_requests
        .iter()
        .filter(|e| e.query_value("watch").is_some())
        .count();
    assert_eq!((lists, watches), (1, 1), "{informer_requests:?}");
    for request in &informer_requests {
        let accept = request
            .headers
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case("accept"))
            .map(|(_, v)| v.as_str())
            .unwrap_or_default();
        assert!(
            accept.starts_with("application/vnd.kubernetes.protobuf"),
            "{accept}"
        );
    }
    stop(shutdown, tasks).await;
}

#[tokio::test(start_paused = true)]
async fn an_ephemeral_volumes_claim_is_held_until_its_pod_is_shut_down() {
    let world = world().await;
    let sim = world.sim();
    create_node(sim, "n", true, false);
    let mut with_scratch = pod("web-0", "n", &[]);
    with_scratch["spec"]["volumes"] = json!([{"name": "scratch", "ephemeral": {
        "volumeClaimTemplate": {"spec": {"accessModes": ["ReadWriteOnce"]}}}}]);
    create_pod(sim, with_scratch, "Running");
    create_claim(sim, "web-0-scratch", "");
    // Pods are read in protobuf: the ephemeral source must survive the transcoding.
    let (shutdown, tasks) = run(&world, false);
    delete(sim, &claims(), Some(NS), "web-0-scratch");
    wait(Duration::from_secs(300)).await;
    assert!(claim(sim, "web-0-scratch").is_some(), "held by its Pod");
    assert!(patches(&world, &format!("{CLAIMS}/web-0-scratch")).is_empty());
    // Shut down (a grace period of zero, a finalizer keeping the Pod): released.
    let mut held = get_pod(sim, "web-0").unwrap();
    held["metadata"]["finalizers"] = json!(["example.com/hold"]);
    sim.update(&pods(), held).unwrap();
    force_delete_pod(sim, "web-0");
    eventually("the claim is released", || {
        claim(sim, "web-0-scratch").is_none()
    })
    .await;
    assert!(
        get_pod(sim, "web-0").is_some(),
        "the Pod itself stays, held"
    );
    let pod_list = world
        .requests_to("/api/v1/pods")
        .into_iter()
        .find(|e| e.path == "/api/v1/pods" && e.query_value("watch").is_none())
        .expect("the Pods' LIST");
    assert_eq!(
        pod_list.content_type.as_deref(),
        Some("application/vnd.kubernetes.protobuf"),
        "answered in protobuf"
    );
    stop(shutdown, tasks).await;
}
