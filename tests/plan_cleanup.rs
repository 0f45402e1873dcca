//! `kube-gc plan` for the namespace controller, the pod garbage collector and the protection
//! controllers, against the simulated server: one row per object, each found by the
//! controller's own rules — a namespace finalized when its safety delay ends, the content of a
//! namespace being deleted, an orphaned Pod when its node's quarantine ends, a terminating Pod
//! never scheduled, the terminated Pods above the threshold, a claim and a volume released —
//! and nothing of theirs (not even a read) where `--controllers` leaves them to
//! kube-controller-manager. Then the controllers themselves do what the plan said.

mod client_support;
mod ttl_support;

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use chrono::Duration as Span;
use kube_gc::client::Discovery;
use kube_gc::explain::plan::{plan, PlanOptions, PlanReport, Row};
use kube_gc::explain::Settings;
use kube_gc::manager::{ControllerSelection, Manager, ManagerOptions};
use kube_gc::sim::{DeleteOptions, Gvr, SimConfig, SimServer};
use serde_json::{json, Value};
use tokio_util::sync::CancellationToken;

use ttl_support::{wire_time, world_with, World};

fn gvr(resource: &str) -> Gvr {
    Gvr::new("", "v1", resource)
}

fn pod(namespace: &str, name: &str, node: &str, extra: Value) -> Value {
    let mut pod = json!({"metadata": {"name": name, "namespace": namespace},
        "spec": {"containers": [{"name": "c", "image": "busybox:1.36"}]}});
    if !node.is_empty() {
        pod["spec"]["nodeName"] = json!(node);
    }
    if let Some(fields) = extra.as_object() {
        for (k, v) in fields {
            pod["metadata"][k] = v.clone();
        }
    }
    pod
}

fn with_phase(sim: &SimServer, pod: Value, phase: &str) -> Value {
    let mut created = sim.create(&gvr("pods"), pod).expect("a Pod");
    created["status"] = json!({"phase": phase});
    sim.update_status(&gvr("pods"), created).expect("its phase")
}

/// Something for each controller to do, and something each must leave alone.
async fn scene() -> World {
    let world =
        world_with(SimConfig::default().with_namespaces(&["default", "xn-empty", "xn-content"]))
            .await;
    let sim = world.sim();
    let node = sim
        .create(&gvr("nodes"), json!({"metadata": {"name": "n1"}}))
        .expect("a node");
    let mut node = node;
    node["status"] = json!({"conditions": [{"type": "Ready", "status": "True"}]});
    sim.update_status(&gvr("nodes"), node).expect("ready");
    // The namespace controller: one namespace empty, one holding a ConfigMap.
    sim.create(
        &gvr("configmaps"),
        json!({"metadata": {"name": "cm", "namespace": "xn-content"}}),
    )
    .expect("a ConfigMap");
    for ns in ["xn-empty", "xn-content"] {
        sim.delete(&gvr("namespaces"), None, ns, &DeleteOptions::default())
            .expect("delete the namespace");
    }
    // The pod garbage collector.
    with_phase(sim, pod("default", "orphan", "gone", json!({})), "Running");
    with_phase(sim, pod("default", "healthy", "n1", json!({})), "Running");
    sim.create(
        &gvr("pods"),
        pod(
            "default",
            "stuck",
            "",
            json!({"finalizers": ["example.com/hold"]}),
        ),
    )
    .expect("an unscheduled Pod");
    sim.delete(
        &gvr("pods"),
        Some("default"),
        "stuck",
        &DeleteOptions::default(),
    )
    .expect("delete it");
    for i in 0..3 {
        with_phase(
            sim,
            pod("default", &format!("done-{i}"), "n1", json!({})),
            "Succeeded",
        );
        tokio::time::sleep(Duration::from_secs(1)).await;
    }
    // The protection controllers: an unused claim and an unbound volume, both deleted; a claim
    // in use, deleted too.
    let claim = |name: &str| {
        json!({"metadata": {"name": name, "namespace": "default"},
            "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}}})
    };
    sim.create(&gvr("persistentvolumeclaims"), claim("free"))
        .expect("a claim");
    sim.create(&gvr("persistentvolumeclaims"), claim("used"))
        .expect("a claim");
    let user = pod("default", "user", "n1", json!({}));
    let mut user = user;
    user["spec"]["volumes"] =
        json!([{"name": "v", "persistentVolumeClaim": {"claimName": "used"}}]);
    with_phase(sim, user, "Running");
    sim.create(
        &gvr("persistentvolumes"),
        json!({"metadata": {"name": "old"},
            "spec": {"capacity": {"storage": "1Gi"}, "accessModes": ["ReadWriteOnce"],
                     "hostPath": {"path": "/tmp/old"}}}),
    )
    .expect("a volume");
    for name in ["free", "used"] {
        sim.delete(
            &gvr("persistentvolumeclaims"),
            Some("default"),
            name,
            &DeleteOptions::default(),
        )
        .expect("delete the claim");
    }
    sim.delete(
        &gvr("persistentvolumes"),
        None,
        "old",
        &DeleteOptions::default(),
    )
    .expect("delete the volume");
    world
}

async fn plan_with(world: &World, controllers: ControllerSelection) -> PlanReport {
    let client = &world.harness.client;
    let discovery = Discovery::run(client).await.expect("discovery");
    let options = PlanOptions {
        within: Duration::from_secs(3600),
        controllers,
        settings: Settings {
            terminated_pod_gc_threshold: 2,
            ..Settings::default()
        },
        ..PlanOptions::default()
    };
    plan(client, &discovery, &options, world.now())
        .await
        .expect("plan")
}

/// `Kind namespace/name` → the row.
fn rows(report: &PlanReport) -> BTreeMap<String, &Row> {
    report
        .deletions
        .iter()
        .map(|r| {
            let ns = r.namespace.as_deref().unwrap_or("-");
            (format!("{} {ns}/{}", r.kind, r.name), r)
        })
        .collect()
}

#[tokio::test(start_paused = true)]
async fn plan_lists_each_cleanup_to_come_once_by_the_controllers_own_rules() {
    let world = scene().await;
    let now = world.now();
    let report = plan_with(&world, ControllerSelection::default()).await;
    let rows = rows(&report);
    let seen: Vec<(&str, &str)> = rows
        .iter()
        .map(|(k, r)| (k.as_str(), r.controller.as_str()))
        .collect();
    assert_eq!(
        seen,
        [
            ("ConfigMap xn-content/cm", "namespace"),
            ("Namespace -/xn-empty", "namespace"),
            ("PersistentVolume -/old", "pv-protection"),
            ("PersistentVolumeClaim default/free", "pvc-protection"),
            ("Pod default/done-0", "podgc"),
            ("Pod default/orphan", "podgc"),
            ("Pod default/stuck", "podgc"),
        ],
        "{report:#?}"
    );
    let empty = rows["Namespace -/xn-empty"];
    assert!(!empty.due, "{empty:?}");
    assert!(
        empty
            .reason
            .starts_with("nothing remains: finalized at the end of the safety delay"),
        "{empty:?}"
    );
    let orphan = rows["Pod default/orphan"];
    assert_eq!(orphan.deletes_at, wire_time(now + Span::seconds(40)));
    assert_eq!(
        orphan.reason,
        "node gone does not exist (after its 40 s quarantine, at the latest)"
    );
    assert!(rows["Pod default/stuck"].due);
    assert_eq!(
        rows["Pod default/stuck"].reason,
        "terminating, never scheduled"
    );
    assert_eq!(
        rows["Pod default/done-0"].reason,
        "terminated: 3 terminated Pods, above --terminated-pod-gc-threshold=2; the 1st to go"
    );
    assert_eq!(
        rows["PersistentVolumeClaim default/free"].reason,
        "no Pod uses it: kubernetes.io/pvc-protection released"
    );
    assert_eq!(
        rows["ConfigMap xn-content/cm"].reason,
        "namespace xn-content is being deleted"
    );
}

#[tokio::test(start_paused = true)]
async fn where_kcm_does_their_job_the_plan_neither_lists_nor_reads_theirs() {
    let world = scene().await;
    let journal = world.sim().journal();
    journal.clear();
    let managed = ControllerSelection::parse(&["volcano-job-ttl", "retention"]).expect("known");
    let report = plan_with(&world, managed).await;
    assert!(report.deletions.is_empty(), "{report:#?}");
    let read: Vec<String> = journal
        .entries()
        .into_iter()
        .map(|e| e.path)
        .filter(|p| {
            ["/pods", "/nodes", "/persistentvolume", "/configmaps"]
                .iter()
                .any(|r| p.contains(r))
        })
        .collect();
    assert!(read.is_empty(), "{read:#?}");
}

#[tokio::test(start_paused = true)]
async fn the_controllers_then_do_what_the_plan_said() {
    let world = scene().await;
    let planned_at = world.now();
    let report = plan_with(&world, ControllerSelection::default()).await;
    let options = ManagerOptions {
        controllers: ControllerSelection::parse(&[
            "namespace",
            "podgc",
            "pvc-protection",
            "pv-protection",
        ])
        .expect("known"),
        terminated_pod_gc_threshold: 2,
        ..ManagerOptions::default()
    };
    let set = Manager::new(world.harness.client.clone(), options)
        .clock(Arc::clone(&world.clock))
        .start()
        .await
        .expect("the manager starts");
    let shutdown = CancellationToken::new();
    let task = tokio::spawn(set.run(shutdown.clone()));
    let sim = world.sim();
    let gone = |row: &Row| {
        let resource = match row.kind.as_str() {
            "Namespace" => "namespaces",
            "ConfigMap" => "configmaps",
            "Pod" => "pods",
            "PersistentVolumeClaim" => "persistentvolumeclaims",
            _ => "persistentvolumes",
        };
        sim.get(&gvr(resource), row.namespace.as_deref(), &row.name)
            .is_err()
    };
    // The Pod a finalizer of its own holds is force-deleted and stays; every other row goes.
    let rows: Vec<&Row> = report
        .deletions
        .iter()
        .filter(|r| r.name != "stuck")
        .collect();
    ttl_support::eventually("every planned object is gone", || {
        rows.iter().all(|r| gone(r))
    })
    .await;
    let late = world.now() - planned_at;
    assert!(
        late >= Span::seconds(40),
        "the orphan waited for its quarantine: {late}"
    );
    for kept in ["healthy", "done-1", "done-2", "user"] {
        assert!(
            sim.get(&gvr("pods"), Some("default"), kept).is_ok(),
            "{kept}"
        );
    }
    assert!(sim
        .get(&gvr("persistentvolumeclaims"), Some("default"), "used")
        .is_ok());
    let stuck = sim
        .get(&gvr("pods"), Some("default"), "stuck")
        .expect("held");
    assert_eq!(
        stuck["metadata"]["deletionGracePeriodSeconds"], 0,
        "{stuck:#}"
    );
    shutdown.cancel();
    task.await
        .expect("the manager task")
        .expect("the manager ran");
}
