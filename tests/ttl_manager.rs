//! The controller manager against the simulated API server: discovery decides which TTL
//! controllers run, `--controllers` selection, `--namespace`, readiness, and a drained stop.

mod client_support;
mod ttl_support;

use std::sync::Arc;

use kube_gc::manager::{ControllerSelection, Manager, ManagerOptions};
use kube_gc::sim::resources::default_resources;
use kube_gc::sim::SimConfig;
use serde_json::json;
use tokio_util::sync::CancellationToken;

use ttl_support::*;

fn manager(world: &World, options: ManagerOptions) -> Manager {
    Manager::new(world.harness.client.clone(), options).clock(Arc::clone(&world.clock))
}

#[tokio::test(start_paused = true)]
async fn a_cluster_without_the_volcano_and_retention_crds_runs_only_the_job_controller() {
    let resources = default_resources()
        .into_iter()
        .filter(|r| r.group != "batch.volcano.sh" && r.group != "kube-gc.io")
        .collect();
    let world = world_with(SimConfig::default().with_resources(resources)).await;
    create_job(world.sim(), "done", Some(0), Some(world.now()));

    let set = manager(&world, ManagerOptions::default())
        .start()
        .await
        .unwrap();
    assert_eq!(set.names(), ["ttl-after-finished", "garbagecollector"]);
    let readiness = set.readiness();
    assert!(!readiness.is_ready());
    let shutdown = CancellationToken::new();
    let running = tokio::spawn(set.run(shutdown.clone()));
    readiness.wait(&shutdown).await.unwrap();
    assert!(readiness.is_ready());
    wait_deleted(world.sim(), &jobs(), "done").await;
    shutdown.cancel();
    running.await.unwrap().unwrap();
}

#[tokio::test(start_paused = true)]
async fn controllers_selection_and_the_default_set() {
    let world = world().await;
    let all = manager(&world, ManagerOptions::default())
        .start()
        .await
        .unwrap();
    assert_eq!(
        all.names(),
        [
            "ttl-after-finished",
            "volcano-job-ttl",
            "garbagecollector",
            "retention"
        ]
    );
    let options = ManagerOptions {
        controllers: ControllerSelection::parse(&["*", "-ttl-after-finished-controller"]).unwrap(),
        ..ManagerOptions::default()
    };
    let some = manager(&world, options).start().await.unwrap();
    assert_eq!(
        some.names(),
        ["volcano-job-ttl", "garbagecollector", "retention"]
    );
}

#[tokio::test(start_paused = true)]
async fn a_namespace_restricts_what_is_watched_and_deleted() {
    let world = world_with(SimConfig::default().with_namespaces(&["default", "other"])).await;
    create_job(world.sim(), "mine", Some(0), Some(world.now()));
    let other = json!({"apiVersion": "batch/v1", "kind": "Job",
        "metadata": {"name": "theirs", "namespace": "other"},
        "spec": {"ttlSecondsAfterFinished": 0}});
    let mut other = world.sim().create(&jobs(), other).unwrap();
    other["status"] = json!({"conditions": [{"type": "Complete", "status": "True",
        "lastTransitionTime": wire_time(world.now())}]});
    world.sim().update_status(&jobs(), other).unwrap();

    let options = ManagerOptions {
        namespace: Some("default".into()),
        ..ManagerOptions::default()
    };
    let set = manager(&world, options).start().await.unwrap();
    let shutdown = CancellationToken::new();
    let running = tokio::spawn(set.run(shutdown.clone()));
    wait_deleted(world.sim(), &jobs(), "mine").await;
    tokio::time::sleep(std::time::Duration::from_secs(60)).await;
    let theirs = world.sim().get(&jobs(), Some("other"), "theirs").unwrap();
    assert!(!deletion_requested(Some(&theirs)));
    assert!(world
        .sim()
        .journal()
        .entries()
        .iter()
        .all(|e| !e.path.contains("/namespaces/other/")));
    shutdown.cancel();
    running.await.unwrap().unwrap();
}

/// Issue 16: one token bucket per controller, one for the informers and one for the garbage
/// collector's monitors. At 1 request/s and burst 1 for every client, the collector's dozens
/// of monitors need over a minute of their own bucket to start; an expired Job is deleted in
/// the first seconds all the same, through the TTL controller's informer and client.
#[tokio::test(start_paused = true)]
async fn a_ttl_deletion_never_waits_behind_the_collectors_monitors() {
    let world = world().await;
    create_job(world.sim(), "expired", Some(0), Some(world.now()));
    let dir = tempfile::tempdir().unwrap();
    let slow = client_support::unthrottled()
        .without_timeouts()
        .with_rate(1.0, 1);
    let client = client_support::client_for(world.sim(), &dir, &slow);
    let set = Manager::new(client, ManagerOptions::default())
        .clock(Arc::clone(&world.clock))
        .start()
        .await
        .unwrap();
    let served = world.sim().store().resources().len();
    let shutdown = CancellationToken::new();
    let started = tokio::time::Instant::now();
    let running = tokio::spawn(set.run(shutdown.clone()));
    wait_deleted(world.sim(), &jobs(), "expired").await;
    let took = started.elapsed();
    assert!(took <= std::time::Duration::from_secs(3), "{took:?}");
    let monitor_requests = world.sim().journal().count_sent_by("metadata-informers");
    assert!(
        monitor_requests < served,
        "the monitors were still starting ({monitor_requests} requests for {served} resources)"
    );
    let deletions: Vec<_> = world.sim().journal().deletes();
    assert!(deletions.iter().all(|e| e.sent_by("ttl-after-finished")));
    shutdown.cancel();
    running.await.unwrap().unwrap();
}
