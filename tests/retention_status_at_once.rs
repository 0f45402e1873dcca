//! A retention policy's status is written as soon as the policy is judged — `kubectl get rp`
//! right after `kubectl apply` shows its counts and `Ready`, not blank columns until the
//! status writer's next round — while counts that merely move wait for the round, so the
//! write rate stays bounded. On tokio's paused clock against the simulated API server.

mod client_support;
mod ttl_support;

use std::sync::Arc;
use std::time::Duration;

use kube_gc::controllers::retention::engine::{RetentionController, RetentionOptions};
use kube_gc::controllers::Wiring;
use kube_gc::sim::{Gvr, SimConfig, SimServer};
use serde_json::{json, Value};
use tokio_util::sync::CancellationToken;
use ttl_support::{wire_time, world_with};

/// Far longer than any wait here: a status seen was written because the policy was judged.
const ROUND: Duration = Duration::from_secs(3600);

fn pods() -> Gvr {
    Gvr::new("", "v1", "pods")
}

fn policies() -> Gvr {
    Gvr::new("kube-gc.io", "v1alpha1", "clusterretentionpolicies")
}

fn finished_pod(sim: &SimServer, name: &str, at: chrono::DateTime<chrono::Utc>) {
    let mut pod = sim
        .create(
            &pods(),
            json!({"apiVersion": "v1", "kind": "Pod",
                "metadata": {"name": name, "namespace": "default"},
                "spec": {"restartPolicy": "Never",
                    "containers": [{"name": "main", "image": "busybox:1.36"}]}}),
        )
        .expect("create the Pod");
    pod["status"] = json!({"phase": "Succeeded", "containerStatuses": [{"name": "main",
        "state": {"terminated": {"exitCode": 0, "startedAt": wire_time(at),
            "finishedAt": wire_time(at)}}}]});
    sim.update_status(&pods(), pod).expect("finish the Pod");
}

fn status(sim: &SimServer) -> Value {
    sim.get(&policies(), None, "at-once")
        .map(|p| p["status"].clone())
        .unwrap_or(Value::Null)
}

/// The status writes (PATCH of `/status`) the server has had so far.
fn status_writes(sim: &SimServer) -> usize {
    sim.journal()
        .entries()
        .into_iter()
        .filter(|e| e.method == "PATCH" && e.path.ends_with("/at-once/status"))
        .count()
}

/// Waits, in paused time, at most `within` for `condition`.
async fn within(within: Duration, what: &str, condition: impl Fn() -> bool) {
    let deadline = tokio::time::Instant::now() + within;
    while !condition() {
        assert!(
            tokio::time::Instant::now() < deadline,
            "not within {within:?}: {what}"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

#[tokio::test(start_paused = true)]
async fn the_first_status_is_written_once_judged_and_counts_wait_for_the_round() {
    let world = world_with(SimConfig::default()).await;
    let sim = world.sim();
    let now = world.now();
    finished_pod(sim, "one", now);
    finished_pod(sim, "two", now);
    let options = RetentionOptions {
        status_interval: ROUND,
        ..RetentionOptions::default()
    };
    let controller = RetentionController::builder(world.harness.client.clone(), options)
        .wiring(Wiring::default().clock(Arc::clone(&world.clock)))
        .build();
    let shutdown = CancellationToken::new();
    let task = tokio::spawn(controller.run(shutdown.clone()));

    sim.create(
        &policies(),
        json!({"apiVersion": "kube-gc.io/v1alpha1", "kind": "ClusterRetentionPolicy",
            "metadata": {"name": "at-once"},
            "spec": {"preset": "pods", "ttlSecondsAfterFinished": 86400}}),
    )
    .expect("create the policy");
    // Judged, its Pods listed and counted: written within seconds, not at the round.
    within(Duration::from_secs(5), "the first status", || {
        status(sim)["matched"] == 2
    })
    .await;
    let first = status(sim);
    assert_eq!(first["waiting"], 2, "{first}");
    assert_eq!(first["conditions"][0]["reason"], "Watching", "{first}");
    assert_eq!(status_writes(sim), 1);

    // A third Pod moves the counts only: no write before the round.
    finished_pod(sim, "three", world.now());
    tokio::time::sleep(ROUND / 2).await;
    assert_eq!(status(sim)["matched"], 2);
    assert_eq!(status_writes(sim), 1);
    within(ROUND, "the round's recount", || status(sim)["matched"] == 3).await;
    assert_eq!(status_writes(sim), 2);

    // A change of the policy is a new judgement: written at once again.
    let mut policy = sim.get(&policies(), None, "at-once").unwrap();
    let generation = policy["metadata"]["generation"].as_i64().unwrap();
    policy["spec"]["ttlSecondsAfterFinished"] = json!(172_800);
    sim.update(&policies(), policy).expect("change the policy");
    within(
        Duration::from_secs(5),
        "the new generation's status",
        || status(sim)["observedGeneration"] == generation + 1,
    )
    .await;
    assert_eq!(status_writes(sim), 3);

    shutdown.cancel();
    task.await
        .expect("the controller task")
        .expect("the controller ran");
}
