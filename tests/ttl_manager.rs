//! The controller manager against the simulated API server: discovery decides which TTL
//! controllers run, `--controllers` selection, `--namespace`, readiness, a drained stop, and
//! the retention controller starting when its CRDs are installed after kube-gc.

mod client_support;
mod ttl_support;

use std::sync::Arc;

use kube_gc::manager::{ControllerSelection, Manager, ManagerOptions};
use kube_gc::sim::resources::default_resources;
use kube_gc::sim::{Gvr, SimConfig};
use serde_json::json;
use tokio_util::sync::CancellationToken;

use ttl_support::*;

fn manager(world: &World, options: ManagerOptions) -> Manager {
    Manager::new(world.harness.client.clone(), options).clock(Arc::clone(&world.clock))
}

#[tokio::test(start_paused = true)]
async fn a_cluster_without_the_volcano_and_retention_crds_skips_volcano_and_retention_waits() {
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
    // Volcano's controller is skipped; retention waits for its CRDs, ready meanwhile.
    assert_eq!(
        set.names(),
        [
            "ttl-after-finished",
            "garbagecollector",
            "namespace",
            "retention",
            "podgc",
            "pvc-protection",
            "pv-protection"
        ]
    );
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
            "namespace",
            "retention",
            "podgc",
            "pvc-protection",
            "pv-protection"
        ]
    );
    let options = ManagerOptions {
        controllers: ControllerSelection::parse(&[
            "*",
            "-ttl-after-finished-controller",
            "-pod-garbage-collector-controller",
            "-pvc-protection",
        ])
        .unwrap(),
        ..ManagerOptions::default()
    };
    let some = manager(&world, options).start().await.unwrap();
    assert_eq!(
        some.names(),
        [
            "volcano-job-ttl",
            "garbagecollector",
            "namespace",
            "retention",
            "pv-protection"
        ]
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

/// One token bucket per controller, one for the informers and one for the garbage
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
    // The pod garbage collector's, the protection controllers' and the namespace controller's
    // informers read whole objects, so they share the informers' bucket with the TTL
    // controller's, as in kube-controller-manager; at 1 request/s their lists would come before
    // the Jobs'. What this test is about is the collector's monitors, which have a bucket of
    // their own.
    let options = ManagerOptions {
        controllers: ControllerSelection::parse(&[
            "*",
            "-podgc",
            "-pvc-protection",
            "-pv-protection",
            "-namespace",
        ])
        .unwrap(),
        ..ManagerOptions::default()
    };
    let set = Manager::new(client, options)
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

#[tokio::test(start_paused = true)]
async fn retention_starts_when_its_crds_are_installed_after_kube_gc() {
    let world = world().await;
    let sim = world.sim();
    let policies = [
        Gvr::new("kube-gc.io", "v1alpha1", "retentionpolicies"),
        Gvr::new("kube-gc.io", "v1alpha1", "clusterretentionpolicies"),
    ];
    for gvr in &policies {
        sim.unserve_resource(gvr).unwrap();
    }
    let options = ManagerOptions {
        controllers: ControllerSelection::parse(&["retention"]).unwrap(),
        ..ManagerOptions::default()
    };
    let set = manager(&world, options).start().await.unwrap();
    assert_eq!(set.names(), ["retention"]);
    let readiness = set.readiness();
    let shutdown = CancellationToken::new();
    let running = tokio::spawn(set.run(shutdown.clone()));
    // Waiting is ready: a cluster without the CRDs has no policies to apply.
    readiness.wait(&shutdown).await.unwrap();
    let pods = Gvr::new("", "v1", "pods");
    let finished = world.now() - chrono::Duration::minutes(10);
    let mut pod = sim
        .create(
            &pods,
            json!({"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": "done", "namespace": "default"},
            "spec": {"restartPolicy": "Never", "containers": [{"name": "c", "image": "busybox"}]}}),
        )
        .unwrap();
    pod["status"] = json!({"phase": "Succeeded", "containerStatuses": [{"name": "c", "state":
        {"terminated": {"exitCode": 0, "startedAt": wire_time(finished), "finishedAt": wire_time(finished)}}}]});
    sim.update_status(&pods, pod).unwrap();
    // A minute of looking: one GET of the group version every 30 s, each a plain 404.
    tokio::time::sleep(std::time::Duration::from_secs(61)).await;
    let probes: Vec<u16> = sim
        .journal()
        .entries()
        .iter()
        .filter(|e| e.path == "/apis/kube-gc.io/v1alpha1")
        .map(|e| e.status)
        .collect();
    assert_eq!(probes, [404, 404, 404]);
    assert!(untouched(sim, &pods, "done"));

    // The CRDs are installed and a policy created: the controller starts and applies it.
    for gvr in &policies {
        sim.serve_resource(gvr).unwrap();
    }
    let policy = json!({"apiVersion": "kube-gc.io/v1alpha1", "kind": "ClusterRetentionPolicy",
        "metadata": {"name": "finished-pods"},
        "spec": {"preset": "pods", "ttlSecondsAfterFinished": 60}});
    sim.create(&policies[1], policy).unwrap();
    let started = tokio::time::Instant::now();
    wait_deleted(sim, &pods, "done").await;
    assert!(started.elapsed() <= std::time::Duration::from_secs(31));
    shutdown.cancel();
    running.await.unwrap().unwrap();
}
