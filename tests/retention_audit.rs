//! A retention policy in `Audit` mode, end to end against the simulated API server on tokio's
//! paused clock: everything is judged and reported as `Enforce` would — the status's
//! `wouldDelete` and the deletions to come, a `WouldDelete` Event and one count per object —
//! and nothing is deleted; switched to `Enforce`, what is due goes at once, counted once.

mod client_support;
mod explain_support;
mod retention_support;
mod ttl_support;

use std::time::Duration;

use chrono::{DateTime, Utc};
use kube_gc::controllers::retention::policy::PolicyId;
use kube_gc::events::EventType;
use kube_gc::explain::VerdictKind;
use kube_gc::sim::{Gvr, SimConfig, SimServer};
use retention_support::{run, Running};
use serde_json::{json, Value};
use ttl_support::{epoch, eventually, wire_time, world_with, World};

fn pods() -> Gvr {
    Gvr::new("", "v1", "pods")
}

fn cluster_policies() -> Gvr {
    Gvr::new("kube-gc.io", "v1alpha1", "clusterretentionpolicies")
}

/// A Pod of the CronJob `nightly` in `ci`, Succeeded at `finished_at`.
fn create_pod(sim: &SimServer, name: &str, finished_at: DateTime<Utc>) {
    let pod = json!({"apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": name, "namespace": "ci", "ownerReferences": [{"apiVersion": "batch/v1",
            "kind": "CronJob", "name": "nightly", "uid": "cron-1", "controller": true}]},
        "spec": {"restartPolicy": "Never", "containers": [{"name": "main", "image": "busybox:1.36"}]}});
    let mut created = sim.create(&pods(), pod).expect("create the Pod");
    created["status"] = json!({"phase": "Succeeded", "containerStatuses": [{"name": "main",
        "state": {"terminated": {"exitCode": 0, "startedAt": wire_time(finished_at),
            "finishedAt": wire_time(finished_at)}}}]});
    sim.update_status(&pods(), created)
        .expect("set the Pod's status");
}

fn exists(sim: &SimServer, name: &str) -> bool {
    sim.get(&pods(), Some("ci"), name).is_ok()
}

fn policy(sim: &SimServer) -> Value {
    sim.get(&cluster_policies(), None, "nightly")
        .expect("the policy")
}

/// Five Pods of one CronJob under `mode`: a TTL of an hour and the two newest kept.
/// Finished 3 h, 2 h and 90 min ago (beyond the limit: due now), 40 min ago (TTL in 20 min)
/// and 10 min ago (TTL in 50 min).
async fn five_pods_under(mode: &str) -> (World, Running) {
    let world = world_with(SimConfig::default().with_namespaces(&["ci"])).await;
    let sim = world.sim();
    let now = epoch();
    for (name, minutes) in [("p1", 180), ("p2", 120), ("p3", 90), ("p4", 40), ("p5", 10)] {
        create_pod(sim, name, now - chrono::Duration::minutes(minutes));
    }
    let yaml = format!(
        "metadata: {{name: nightly}}\nspec: {{preset: pods, includeControlled: true, mode: {mode}, \
         ttlSecondsAfterFinished: 3600, successfulHistoryLimit: 2}}"
    );
    let object: Value = serde_saphyr::from_str(&yaml).expect("policy YAML");
    sim.create(&cluster_policies(), object)
        .expect("create the policy");
    let running = run(&world);
    (world, running)
}

#[tokio::test(start_paused = true)]
async fn an_audit_policy_reports_what_it_would_delete_and_deletes_nothing() {
    let (world, running) = five_pods_under("Audit").await;
    let sim = world.sim();
    eventually("the status says what it would delete", || {
        policy(sim)["status"]["wouldDelete"] == 3
    })
    .await;
    let status = policy(sim)["status"].clone();
    assert_eq!(status["mode"], "Audit");
    assert_eq!(status["matched"], 5);
    // p1..p3 now (the limit), p4 in 20 min, p5 in 50 min: all within the hour.
    assert_eq!(status["deletionsWithinHour"], 5);
    assert_eq!(status["deletionsWithinDay"], 5);
    let next: Vec<&str> = status["nextDeletions"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|d| d["name"].as_str())
        .collect();
    assert_eq!(next, ["p1", "p2", "p3", "p4", "p5"]);
    assert!(status["nextDeletions"][0]["deletesAt"].is_null());
    assert_eq!(status["nextDeletions"][0]["reason"], "history_limit");
    assert_eq!(
        status["nextDeletions"][3]["deletesAt"],
        wire_time(epoch() + chrono::Duration::minutes(20)),
        "p4 finished 40 minutes before the start, its TTL is an hour"
    );

    // Two hours on, every TTL has run out: five would-be deletions, each reported once,
    // however often the group is re-ranked; nothing deleted.
    tokio::time::sleep(Duration::from_secs(2 * 3600)).await;
    for name in ["p1", "p2", "p3", "p4", "p5"] {
        assert!(exists(sim, name), "{name}: an Audit policy deletes nothing");
    }
    let id = PolicyId::cluster("nightly");
    assert_eq!(running.metrics.would_deletes(&id), 5);
    assert_eq!(running.metrics.deletions(&id), 0);
    let would: Vec<_> = running
        .recorder
        .events()
        .into_iter()
        .filter(|e| e.reason == "WouldDelete")
        .collect();
    assert_eq!(would.len(), 5, "{would:#?}");
    assert!(would.iter().all(|e| e.event_type == EventType::Normal));
    let p4 = would
        .iter()
        .find(|e| e.regarding.name.as_deref() == Some("p4"))
        .expect("p4's Event");
    assert!(
        p4.message.starts_with(
            "ClusterRetentionPolicy nightly (mode: Audit) would delete it: its TTL ran out at"
        ),
        "{}",
        p4.message
    );
    eventually("the status counts all five", || {
        policy(sim)["status"]["wouldDelete"] == 5
    })
    .await;
    let journal = sim.journal().entries();
    assert!(
        !journal.iter().any(|e| e.method == "DELETE"),
        "no DELETE was sent"
    );

    // Enforce: what is due goes at once, counted as deleted, not again as would-be.
    let mut enforced = policy(sim);
    enforced["spec"]["mode"] = json!("Enforce");
    sim.update(&cluster_policies(), enforced)
        .expect("switch to Enforce");
    let switched = tokio::time::Instant::now();
    eventually("every Pod is deleted", || {
        ["p1", "p2", "p3", "p4", "p5"]
            .iter()
            .all(|name| !exists(sim, name))
    })
    .await;
    assert!(
        switched.elapsed() <= Duration::from_secs(1),
        "{:?}",
        switched.elapsed()
    );
    assert_eq!(running.metrics.deletions(&id), 5);
    assert_eq!(running.metrics.would_deletes(&id), 5);
    // Held by choice, not late: no deletion delay observed for what Audit kept.
    let mut registry = prometheus_client::registry::Registry::default();
    running.metrics.register(&mut registry);
    let mut text = String::new();
    prometheus_client::encoding::text::encode(&mut text, &registry).expect("encode");
    assert!(
        text.lines()
            .any(|l| l == "kube_gc_retention_deletion_delay_seconds_count 0"),
        "{text}"
    );
    eventually("the status says Enforce, nothing would be deleted", || {
        let status = policy(sim)["status"].clone();
        status["mode"] == "Enforce" && status["wouldDelete"] == 0 && status["deleted"] == 5
    })
    .await;
    running.shutdown.cancel();
    running.task.await.expect("task").expect("ran");
}

#[tokio::test(start_paused = true)]
async fn an_enforcing_policy_reports_what_comes_and_never_would_delete() {
    let (world, running) = five_pods_under("Enforce").await;
    let sim = world.sim();
    eventually("the three beyond the limit are deleted", || {
        ["p1", "p2", "p3"].iter().all(|name| !exists(sim, name))
    })
    .await;
    eventually("the status lists the two to come", || {
        policy(sim)["status"]["nextDeletions"]
            .as_array()
            .is_some_and(|n| n.len() == 2)
    })
    .await;
    let status = policy(sim)["status"].clone();
    assert_eq!(status["mode"], "Enforce");
    assert_eq!(status["wouldDelete"], 0);
    assert_eq!(status["deletionsWithinHour"], 2);
    assert_eq!(status["nextDeletions"][0]["name"], "p4");
    assert_eq!(status["nextDeletions"][0]["reason"], "ttl");
    assert_eq!(
        running.metrics.would_deletes(&PolicyId::cluster("nightly")),
        0
    );
    running.shutdown.cancel();
    running.task.await.expect("task").expect("ran");
}

#[tokio::test(start_paused = true)]
async fn explain_says_an_audit_policy_keeps_what_enforce_would_delete() {
    let (world, running) = five_pods_under("Audit").await;
    running.shutdown.cancel();
    running.task.await.expect("task").expect("ran");
    let said = explain_support::explain_at(&world, "pod", "ci", "p1", world.now())
        .await
        .expect("explain");
    let retention = said
        .decisions
        .iter()
        .find(|d| d.controller == "retention")
        .expect("the retention controller's view");
    assert_eq!(retention.verdict, VerdictKind::Keep, "{said:#?}");
    assert!(
        retention.summary.starts_with(
            "kept: ClusterRetentionPolicy nightly is in mode Audit; Enforce would delete it: its TTL expired"
        ),
        "{}",
        retention.summary
    );
    assert!(retention
        .details
        .iter()
        .any(|d| d.ends_with("deletes nothing")));
}
