//! The pod garbage collector end to end: simulated API server (Pods deleted gracefully, as on
//! the real one) → shared sources → informers → handlers → workqueue → guarded force
//! deletions, on tokio's paused clock. The safety rules first, then every rule of upstream's
//! controller, asserted on the server's state and its request journal.

mod client_support;
mod podgc_support;

use std::sync::Arc;
use std::time::Duration;

use kube_gc::controllers::podgc::{
    Detached, PodFacts, PodGcController, PodGcKey, PodGcMetrics, PodGcOptions, Reason,
};
use kube_gc::controllers::Wiring;
use kube_gc::runtime::cache::ObjectKey;
use kube_gc::runtime::controller::Reconciler;
use kube_gc::sim::faults::FaultPlan;
use serde_json::{json, Value};
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

use podgc_support::*;

/// A running pod garbage collector.
struct Running {
    shutdown: CancellationToken,
    task: JoinHandle<Result<(), kube_gc::runtime::controller::ControllerError>>,
    metrics: Arc<PodGcMetrics>,
}

impl Running {
    async fn stop(self) {
        self.shutdown.cancel();
        let ran = self.task.await.expect("the controller task");
        ran.expect("the controller ran");
    }
}

fn run(world: &World, options: PodGcOptions) -> Running {
    let metrics = Arc::new(PodGcMetrics::default());
    let controller = PodGcController::builder(world.harness.client.clone(), options)
        .wiring(Wiring::default().clock(Arc::clone(&world.clock)))
        .metrics(Arc::clone(&metrics))
        .build();
    let shutdown = CancellationToken::new();
    let task = tokio::spawn(controller.run(shutdown.clone()));
    Running {
        shutdown,
        task,
        metrics,
    }
}

fn options() -> PodGcOptions {
    PodGcOptions::default()
}

/// The force deletion requests sent for Pod `name`: its status patch and its DELETE.
fn force_requests(world: &World, name: &str) -> (Vec<Value>, Vec<Value>) {
    let writes = world.pod_writes(name);
    let patches = writes
        .iter()
        .filter(|e| e.method == "PATCH" && e.path.ends_with("/status"))
        .map(|e| e.body.clone().unwrap_or_default())
        .collect();
    let deletes = writes
        .iter()
        .filter(|e| e.method == "DELETE")
        .map(|e| e.body.clone().unwrap_or_default())
        .collect();
    (patches, deletes)
}

#[tokio::test(start_paused = true)]
async fn pods_on_a_ready_node_are_never_touched() {
    let world = world().await;
    let sim = world.sim();
    // Ready, even tainted out-of-service: nothing on it goes.
    create_node(sim, "ready", true, true);
    create_pod(sim, pod("running", "ready", &[]), "Running");
    create_pod(sim, pod("terminating", "ready", &[]), "Running");
    delete_pod(sim, "terminating");
    create_pod(sim, pod("unknown", "ready", &[]), "Unknown");
    let running = run(&world, options());
    wait(Duration::from_secs(600)).await;
    for name in ["running", "terminating", "unknown"] {
        assert!(get_pod(sim, name).is_some(), "{name} is still there");
        assert!(
            world.pod_writes(name).is_empty(),
            "nothing written to {name}"
        );
    }
    assert_eq!(
        get_pod(sim, "terminating").unwrap()["metadata"]["deletionGracePeriodSeconds"],
        30,
        "left to its kubelet"
    );
    running.stop().await;
}

#[tokio::test(start_paused = true)]
async fn orphans_go_forty_seconds_after_their_node_is_seen_missing_confirmed_by_a_read() {
    let world = world().await;
    let sim = world.sim();
    let created = create_pod(sim, pod("orphan", "gone", &[]), "Running");
    let started = world.now();
    let running = run(&world, options());
    eventually("the orphan is gone", || get_pod(sim, "orphan").is_none()).await;

    // The node was read once, after the quarantine, and found missing.
    let reads = world.requests_to("/api/v1/nodes/gone");
    assert_eq!(reads.len(), 1, "{reads:?}");
    assert_eq!(reads[0].status, 404);
    let waited = (reads[0].at - started).num_milliseconds();
    assert!((40_000..41_000).contains(&waited), "read after {waited} ms");

    // Status Failed with the DisruptionTarget condition, then a DELETE with a zero grace
    // period — both guarded by the uid and the resourceVersion.
    let (patches, deletes) = force_requests(&world, "orphan");
    assert_eq!(patches.len(), 1);
    let patch = &patches[0];
    assert_eq!(patch["metadata"]["uid"], created["metadata"]["uid"]);
    assert_eq!(
        patch["metadata"]["resourceVersion"],
        created["metadata"]["resourceVersion"]
    );
    assert_eq!(patch["status"]["phase"], "Failed");
    let condition = &patch["status"]["conditions"][0];
    assert_eq!(condition["type"], "DisruptionTarget");
    assert_eq!(condition["reason"], "DeletionByPodGC");
    assert_eq!(deletes.len(), 1);
    assert_eq!(deletes[0]["gracePeriodSeconds"], 0);
    assert_eq!(
        deletes[0]["preconditions"]["uid"],
        created["metadata"]["uid"]
    );
    assert!(deletes[0]["preconditions"]["resourceVersion"].is_string());
    // Its final state carries what was written.
    let last = sim
        .deletions()
        .into_iter()
        .find(|d| d.name == "orphan")
        .unwrap();
    let last = last.final_state.to_value();
    assert_eq!(last["status"]["phase"], "Failed");
    assert_eq!(running.metrics.attempts(NS, Reason::Orphaned), 1);
    assert_eq!(running.metrics.failures(NS, Reason::Orphaned), 0);
    running.stop().await;
}

#[tokio::test(start_paused = true)]
async fn a_pod_whose_node_comes_back_within_the_quarantine_is_kept() {
    let world = world().await;
    let sim = world.sim();
    create_pod(sim, pod("patient", "late", &[]), "Running");
    let running = run(&world, options());
    wait(Duration::from_secs(20)).await;
    create_node(sim, "late", true, false);
    wait(Duration::from_secs(600)).await;
    assert!(get_pod(sim, "patient").is_some());
    assert!(world.pod_writes("patient").is_empty());
    assert!(
        world.requests_to("/api/v1/nodes/late").is_empty(),
        "no read needed"
    );
    running.stop().await;
}

#[tokio::test(start_paused = true)]
async fn the_pods_of_a_deleted_node_go_forty_seconds_after_its_deletion() {
    let world = world().await;
    let sim = world.sim();
    create_node(sim, "doomed", true, false);
    create_pod(sim, pod("bound", "doomed", &[]), "Running");
    create_pod(sim, pod("done", "doomed", &[]), "Succeeded");
    let running = run(&world, options());
    wait(Duration::from_secs(120)).await;
    assert!(
        world.pod_writes("bound").is_empty(),
        "nothing while its node is there"
    );
    let deleted_at = world.now();
    sim.delete(&nodes(), None, "doomed", &Default::default())
        .expect("delete the node");
    eventually("both pods are gone", || {
        get_pod(sim, "bound").is_none() && get_pod(sim, "done").is_none()
    })
    .await;
    let gone = sim
        .deletions()
        .into_iter()
        .find(|d| d.name == "bound")
        .unwrap();
    let after = (gone.at - deleted_at).num_milliseconds();
    assert!(
        (40_000..41_000).contains(&after),
        "gone {after} ms after its node"
    );
    // A terminated orphan is deleted without a status write.
    let (patches, deletes) = force_requests(&world, "done");
    assert!(patches.is_empty());
    assert_eq!(deletes.len(), 1);
    assert_eq!(running.metrics.attempts(NS, Reason::Orphaned), 2);
    running.stop().await;
}

#[tokio::test(start_paused = true)]
async fn terminating_pods_on_a_shut_down_node_go_once_it_is_tainted_out_of_service() {
    let world = world().await;
    let sim = world.sim();
    let node = create_node(sim, "down", false, false);
    create_pod(sim, pod("stuck", "down", &[]), "Running");
    create_pod(sim, pod("alive", "down", &[]), "Running");
    delete_pod(sim, "stuck");
    let running = run(&world, options());
    wait(Duration::from_secs(120)).await;
    assert!(
        get_pod(sim, "stuck").is_some(),
        "not ready alone is not enough"
    );
    let before = world.requests_to("/api/v1/nodes/down").len();

    set_node(sim, node, false, true);
    eventually("the terminating pod is gone", || {
        get_pod(sim, "stuck").is_none()
    })
    .await;
    // The node was read before the deletion; the pod not terminating stays.
    let reads = world.requests_to("/api/v1/nodes/down").len() - before;
    assert_eq!(reads, 1);
    let (patches, deletes) = force_requests(&world, "stuck");
    assert_eq!(patches.len(), 1);
    assert_eq!(patches[0]["status"], json!({"phase": "Failed"}));
    assert_eq!(deletes.len(), 1);
    assert_eq!(deletes[0]["gracePeriodSeconds"], 0);
    wait(Duration::from_secs(120)).await;
    assert!(get_pod(sim, "alive").is_some());
    assert!(world.pod_writes("alive").is_empty());
    assert_eq!(running.metrics.attempts(NS, Reason::OutOfService), 1);
    running.stop().await;
}

#[tokio::test(start_paused = true)]
async fn unscheduled_terminating_pods_are_failed_and_force_deleted_once() {
    let world = world().await;
    let sim = world.sim();
    let mut held = pod("held", "", &[]);
    held["metadata"]["finalizers"] = json!(["example.com/hold"]);
    create_pod(sim, held, "Pending");
    create_pod(sim, pod("waiting", "", &[]), "Pending");
    delete_pod(sim, "held");
    let running = run(&world, options());
    eventually("the held pod failed", || {
        get_pod(sim, "held").is_some_and(|p| p["status"]["phase"] == "Failed")
    })
    .await;
    wait(Duration::from_secs(600)).await;
    let (patches, deletes) = force_requests(&world, "held");
    assert_eq!(patches.len(), 1, "one status write");
    // Once, though the Pod lingers (its finalizer) and its status write made an event.
    assert_eq!(deletes.len(), 1, "{deletes:?}");
    assert_eq!(deletes[0]["gracePeriodSeconds"], 0);
    assert!(get_pod(sim, "held").is_some(), "its finalizer holds it");
    assert!(
        world.pod_writes("waiting").is_empty(),
        "not terminating: the scheduler's"
    );
    running.stop().await;
}

/// A Pod deleted with no grace period left and no finalizer is removed by the server in the
/// request that marked it: a real server sends MODIFIED (deletionTimestamp, grace 0) and then,
/// one revision later, DELETED (exchange 68) — as when a namespace's Pending Pods are deleted.
/// The MODIFIED alone looks like "terminating, never scheduled": on a real v1.28.7 server the
/// collector, acting on it before the DELETED arrived, sent a status patch per Pod (answered
/// 404). Here the cache holds that state, made on purpose: the Pod is sent nothing while the
/// server removes it, and judged as any other if it is still there after.
#[tokio::test(start_paused = true)]
async fn a_pod_the_server_is_removing_is_left_to_it_and_judged_again_if_it_stays() {
    let world = world().await;
    let marked = world
        .now()
        .to_rfc3339_opts(chrono::SecondsFormat::Secs, true);
    let leaving = json!({"metadata": {"name": "leaving", "namespace": NS, "uid": "uid-leaving",
        "resourceVersion": "7", "deletionTimestamp": marked, "deletionGracePeriodSeconds": 0},
        "spec": {}, "status": {"phase": "Pending"}});
    let leaving: PodFacts = serde_json::from_value(leaving).unwrap();
    assert!(leaving.removed_by_server.is_some());
    let detached = Detached::new(
        world.harness.client.clone(),
        &PodGcOptions::default(),
        Arc::clone(&world.clock),
        Arc::new(PodGcMetrics::default()),
    );
    detached.pods.apply_added(leaving);
    let key = PodGcKey::Pod(ObjectKey::new(NS, "leaving"));
    detached.reconciler.reconcile(&key).await.unwrap();
    assert!(world.pod_writes("leaving").is_empty(), "left to the server");
    // Still there five seconds after its mark: the server did not remove it after all.
    wait(Duration::from_secs(5)).await;
    let _ = detached.reconciler.reconcile(&key).await;
    let writes = world.pod_writes("leaving");
    assert!(
        writes.first().is_some_and(|e| e.path.ends_with("/status")),
        "force-deleted as unscheduled: {writes:?}"
    );
}

/// The same end to end: Pending and Succeeded Pods deleted while the collector runs go by
/// themselves, and nothing is sent for them.
#[tokio::test(start_paused = true)]
async fn pods_the_server_removes_in_the_same_request_are_sent_nothing() {
    let world = world().await;
    let sim = world.sim();
    create_node(sim, "ready", true, false);
    let pending = (0..40).map(|i| (format!("pending-{i}"), "", "Pending"));
    let finished = (0..40).map(|i| (format!("finished-{i}"), "ready", "Succeeded"));
    let all: Vec<_> = pending.chain(finished).collect();
    for (name, node, phase) in &all {
        create_pod(sim, pod(name, node, &[]), phase);
    }
    let running = run(&world, options());
    wait(Duration::from_secs(1)).await;
    for (name, _, _) in &all {
        delete_pod(sim, name);
        tokio::task::yield_now().await;
    }
    wait(Duration::from_secs(60)).await;
    for (name, _, _) in &all {
        assert!(get_pod(sim, name).is_none(), "{name} went by itself");
        let writes = world.pod_writes(name);
        assert!(
            writes.iter().all(|e| !e.sent_by("pod-garbage-collector")),
            "nothing sent for {name}: {writes:?}"
        );
    }
    running.stop().await;
}

#[tokio::test(start_paused = true)]
async fn terminated_pods_above_the_threshold_go_evicted_first_then_oldest_first() {
    let world = world().await;
    let sim = world.sim();
    create_node(sim, "n", true, false);
    for name in ["old", "older-than-new", "new"] {
        create_pod(sim, pod(name, "n", &[]), "Succeeded");
        wait(Duration::from_secs(10)).await;
    }
    let evicted = sim.create(&pods(), pod("evicted", "n", &[])).unwrap();
    let mut evicted = evicted;
    evicted["status"] = json!({"phase": "Failed", "reason": "Evicted"});
    sim.update_status(&pods(), evicted).unwrap();
    create_pod(sim, pod("running", "n", &[]), "Running");
    let options = PodGcOptions {
        terminated_threshold: 2,
        ..PodGcOptions::default()
    };
    let running = run(&world, options);
    eventually("two are deleted", || {
        get_pod(sim, "evicted").is_none() && get_pod(sim, "old").is_none()
    })
    .await;
    wait(Duration::from_secs(60)).await;
    for kept in ["older-than-new", "new", "running"] {
        assert!(get_pod(sim, kept).is_some(), "{kept} is kept");
    }
    // A newly terminated Pod puts the count above the threshold again: the oldest goes.
    let mut last = get_pod(sim, "running").unwrap();
    last["status"] = json!({"phase": "Failed"});
    sim.update_status(&pods(), last).unwrap();
    eventually("the oldest left goes", || {
        get_pod(sim, "older-than-new").is_none()
    })
    .await;
    assert!(get_pod(sim, "new").is_some() && get_pod(sim, "running").is_some());
    assert_eq!(running.metrics.attempts(NS, Reason::Terminated), 3);
    running.stop().await;
}

#[tokio::test(start_paused = true)]
async fn a_threshold_of_zero_keeps_every_terminated_pod() {
    let world = world().await;
    let sim = world.sim();
    create_node(sim, "n", true, false);
    for name in ["a", "b", "c"] {
        create_pod(sim, pod(name, "n", &[]), "Succeeded");
    }
    let options = PodGcOptions {
        terminated_threshold: 0,
        ..PodGcOptions::default()
    };
    let running = run(&world, options);
    wait(Duration::from_secs(120)).await;
    for name in ["a", "b", "c"] {
        assert!(get_pod(sim, name).is_some());
    }
    running.stop().await;
}

#[tokio::test(start_paused = true)]
async fn a_pod_recreated_under_its_name_is_never_deleted_on_its_predecessors_judgement() {
    let world = world().await;
    let sim = world.sim();
    // The cache holds the old Pod, an orphan; the server holds a new one under its name, on a
    // Ready node — the state between a cache read and the server's answer.
    let old = create_pod(sim, pod("twin", "gone", &[]), "Running");
    let old: PodFacts = serde_json::from_value(old).unwrap();
    force_delete_pod(sim, "twin");
    create_node(sim, "ready", true, false);
    create_pod(sim, pod("twin", "ready", &[]), "Running");
    let metrics = Arc::new(PodGcMetrics::default());
    let detached = Detached::new(
        world.harness.client.clone(),
        &PodGcOptions::default(),
        Arc::clone(&world.clock),
        metrics,
    );
    detached.pods.apply_added(old);
    detached
        .quarantines
        .begin("gone", world.now() - chrono::Duration::seconds(60));
    let writes_before = world.pod_writes("twin").len();
    detached
        .reconciler
        .reconcile(&PodGcKey::Node("gone".into()))
        .await
        .expect("the key is handled");
    let new = get_pod(sim, "twin").expect("the new pod is there");
    assert_eq!(new["status"]["phase"], "Running");
    assert!(new["metadata"].get("deletionTimestamp").is_none());
    let writes: Vec<_> = world
        .pod_writes("twin")
        .into_iter()
        .skip(writes_before)
        .collect();
    assert_eq!(writes.len(), 1, "one refused status write: {writes:?}");
    assert_eq!(writes[0].status, 409);
    assert!(
        world
            .requests_to(&format!("/api/v1/namespaces/{NS}/pods/twin"))
            .iter()
            .any(|e| e.method == "GET"),
        "read again after the conflict"
    );
}

#[tokio::test(start_paused = true)]
async fn a_pod_changed_since_it_was_judged_is_judged_again_before_it_goes() {
    let world = world().await;
    let sim = world.sim();
    let stale = create_pod(sim, pod("moved", "gone", &[]), "Running");
    let stale: PodFacts = serde_json::from_value(stale).unwrap();
    // Changed since (same uid): still an orphan, so it goes at its new version.
    let mut changed = get_pod(sim, "moved").unwrap();
    changed["metadata"]["labels"] = json!({"touched": "yes"});
    sim.update(&pods(), changed).unwrap();
    let detached = Detached::new(
        world.harness.client.clone(),
        &PodGcOptions::default(),
        Arc::clone(&world.clock),
        Arc::new(PodGcMetrics::default()),
    );
    detached.pods.apply_added(stale);
    detached
        .quarantines
        .begin("gone", world.now() - chrono::Duration::seconds(60));
    detached
        .reconciler
        .reconcile(&PodGcKey::Node("gone".into()))
        .await
        .expect("handled");
    assert!(get_pod(sim, "moved").is_none());
    let key = ObjectKey::new(NS, "moved");
    assert!(
        detached.pods.get(&key).is_some(),
        "the detached cache is the test's"
    );
}

#[tokio::test(start_paused = true)]
async fn a_dry_run_writes_nothing() {
    let world = world().await;
    let sim = world.sim();
    create_pod(sim, pod("orphan", "gone", &[]), "Running");
    let options = PodGcOptions {
        dry_run: true,
        ..PodGcOptions::default()
    };
    let running = run(&world, options);
    wait(Duration::from_secs(300)).await;
    assert!(get_pod(sim, "orphan").is_some());
    assert!(world.pod_writes("orphan").is_empty());
    assert_eq!(running.metrics.attempts(NS, Reason::Orphaned), 0);
    running.stop().await;
}

#[tokio::test(start_paused = true)]
async fn an_api_server_outage_resumes_cleanly() {
    let world = world().await;
    let sim = world.sim();
    create_pod(sim, pod("orphan", "gone", &[]), "Running");
    let running = run(&world, options());
    wait(Duration::from_secs(10)).await;
    // Every request fails from before the quarantine ends until well after it.
    sim.faults()
        .set_plan(FaultPlan::new(7).fail_all(1.0, &[503]));
    wait(Duration::from_secs(120)).await;
    assert!(
        get_pod(sim, "orphan").is_some(),
        "nothing could be done meanwhile"
    );
    sim.faults().set_plan(FaultPlan::new(7));
    eventually("the orphan goes once the server answers", || {
        get_pod(sim, "orphan").is_none()
    })
    .await;
    let writes = world.pod_writes("orphan");
    let deletes: Vec<_> = writes
        .iter()
        .filter(|e| e.method == "DELETE" && e.status == 200)
        .collect();
    assert_eq!(deletes.len(), 1, "deleted once");
    running.stop().await;
}
