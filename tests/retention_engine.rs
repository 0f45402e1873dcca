//! The retention engine end to end, against the simulated API server on tokio's paused clock:
//! policies come and go at run time, finished objects are deleted when their time is up with
//! UID and resourceVersion preconditions, unfinished, unexpired, TTL-extended and re-created
//! ones never are, history limits keep the newest, and bad policies and objects are reported.

mod client_support;
mod retention_support;
mod ttl_support;

use std::sync::Arc;
use std::time::Duration;

use chrono::{DateTime, Utc};
use kube_gc::clock::SharedClock;
use kube_gc::controllers::retention::assessment::assess;
use kube_gc::controllers::retention::engine::{
    ResourceWatch, RetentionMetrics, RetentionReconciler, WorkKey,
};
use kube_gc::controllers::retention::policy::PolicyId;
use kube_gc::events::CollectingRecorder;
use kube_gc::runtime::cache::ObjectKey;
use kube_gc::runtime::controller::{Action, Reconciler};
use kube_gc::sim::journal::JournalEntry;
use kube_gc::sim::{Gvr, SimConfig, SimServer};
use retention_support::run;
use serde_json::{json, Value};
use ttl_support::{eventually, wire_time, world_with, World};

fn pods() -> Gvr {
    Gvr::new("", "v1", "pods")
}

fn cluster_policies() -> Gvr {
    Gvr::new("kube-gc.io", "v1alpha1", "clusterretentionpolicies")
}

fn namespaced_policies() -> Gvr {
    Gvr::new("kube-gc.io", "v1alpha1", "retentionpolicies")
}

async fn world() -> World {
    world_with(SimConfig::default().with_namespaces(&["default", "data", "web"])).await
}

/// A Pod in `namespace`; with `finished_at` it Succeeded then (its one container terminated).
fn create_pod(
    sim: &SimServer,
    namespace: &str,
    name: &str,
    finished_at: Option<DateTime<Utc>>,
) -> Value {
    create_pod_with(
        sim,
        json!({"metadata": {"name": name, "namespace": namespace}}),
        finished_at,
        "Succeeded",
    )
}

fn create_pod_with(
    sim: &SimServer,
    mut pod: Value,
    finished_at: Option<DateTime<Utc>>,
    phase: &str,
) -> Value {
    pod["apiVersion"] = json!("v1");
    pod["kind"] = json!("Pod");
    pod["spec"] = json!({"restartPolicy": "Never", "containers": [{"name": "main", "image": "busybox:1.36"}]});
    let mut created = sim.create(&pods(), pod).expect("create the Pod");
    created["status"] = match finished_at {
        Some(at) => json!({"phase": phase, "containerStatuses": [{"name": "main", "state":
            {"terminated": {"exitCode": 0, "startedAt": wire_time(at), "finishedAt": wire_time(at)}}}]}),
        None => json!({"phase": "Running"}),
    };
    sim.update_status(&pods(), created)
        .expect("set the Pod's status")
}

fn exists(sim: &SimServer, namespace: &str, name: &str) -> bool {
    sim.get(&pods(), Some(namespace), name).is_ok()
}

fn create_policy(sim: &SimServer, yaml: &str) -> Value {
    let object: Value = serde_saphyr::from_str(yaml).expect("policy YAML");
    let gvr = if object["metadata"]["namespace"].is_string() {
        namespaced_policies()
    } else {
        cluster_policies()
    };
    sim.create(&gvr, object).expect("create the policy")
}

fn requests_for(world: &World, namespace: &str, name: &str) -> Vec<JournalEntry> {
    let path = format!("/api/v1/namespaces/{namespace}/pods/{name}");
    world
        .sim()
        .journal()
        .entries()
        .into_iter()
        .filter(|e| e.path == path)
        .collect()
}

#[tokio::test(start_paused = true)]
async fn finished_pods_go_when_their_ttl_expires_and_the_rest_stay() {
    let world = world().await;
    let sim = world.sim();
    let now = world.now();
    create_pod(
        sim,
        "data",
        "long-done",
        Some(now - chrono::Duration::seconds(600)),
    );
    create_pod(sim, "data", "just-done", Some(now));
    create_pod(sim, "data", "running", None);
    create_policy(
        sim,
        "metadata: {name: finished-pods}\nspec: {preset: pods, ttlSecondsAfterFinished: 60}",
    );
    let running = run(&world);

    eventually("the long-finished Pod is deleted", || {
        !exists(sim, "data", "long-done")
    })
    .await;
    let started = tokio::time::Instant::now();
    eventually("the just-finished Pod is deleted", || {
        !exists(sim, "data", "just-done")
    })
    .await;
    assert!(
        started.elapsed() >= Duration::from_secs(58),
        "{:?}",
        started.elapsed()
    );
    tokio::time::sleep(Duration::from_secs(3600)).await;
    assert!(
        exists(sim, "data", "running"),
        "a running Pod must never be deleted"
    );

    // Each DELETE named the UID and resourceVersion of the copy judged, and was not repeated.
    let deletes: Vec<JournalEntry> = requests_for(&world, "data", "long-done")
        .into_iter()
        .filter(|e| e.method == "DELETE")
        .collect();
    assert_eq!(deletes.len(), 1);
    let preconditions = &deletes[0].body.as_ref().expect("DeleteOptions")["preconditions"];
    assert!(
        preconditions["uid"].is_string() && preconditions["resourceVersion"].is_string(),
        "{preconditions}"
    );
    assert_eq!(
        deletes[0].body.as_ref().unwrap()["propagationPolicy"],
        "Background"
    );
    // The answer, the deleted Pod (exchange 67), is asked for as metadata only (exchange 69).
    assert_eq!(
        deletes[0].header("accept"),
        Some(kube_gc::api::ACCEPT_PARTIAL_OBJECT_METADATA_OR_JSON)
    );
    assert_eq!(
        running
            .metrics
            .deletions(&PolicyId::cluster("finished-pods")),
        2
    );
    running.stop().await;
}

#[tokio::test(start_paused = true)]
async fn a_new_or_changed_policy_acts_within_a_second() {
    let world = world().await;
    let sim = world.sim();
    let now = world.now();
    create_pod(sim, "web", "old", Some(now - chrono::Duration::hours(2)));
    let running = run(&world);
    tokio::time::sleep(Duration::from_secs(30)).await;
    assert!(exists(sim, "web", "old"), "no policy, no deletion");

    let policy = create_policy(sim, "metadata: {name: web, namespace: web}\nspec: {preset: pods, ttlSecondsAfterFinished: 86400}");
    tokio::time::sleep(Duration::from_secs(5)).await;
    assert!(exists(sim, "web", "old"), "a day's TTL has not run out");

    let mut shorter = sim
        .get(&namespaced_policies(), Some("web"), "web")
        .unwrap_or(policy);
    shorter["spec"]["ttlSecondsAfterFinished"] = json!(3600);
    sim.update(&namespaced_policies(), shorter)
        .expect("shorten the TTL");
    let changed = tokio::time::Instant::now();
    eventually("the Pod is deleted under the changed policy", || {
        !exists(sim, "web", "old")
    })
    .await;
    assert!(
        changed.elapsed() <= Duration::from_secs(1),
        "{:?}",
        changed.elapsed()
    );
    running.stop().await;
}

#[tokio::test(start_paused = true)]
async fn an_invalid_policy_deletes_nothing_and_says_why() {
    let world = world().await;
    let sim = world.sim();
    create_pod(
        sim,
        "data",
        "old",
        Some(world.now() - chrono::Duration::hours(2)),
    );
    // The CRD's schema accepts any non-empty `match` (the sim refuses what it refuses, as the
    // real server does); the controller must refuse one that reads no variable it defines.
    create_policy(
        sim,
        "metadata: {name: bad-match}\nspec: {preset: pods, ttlSecondsAfterFinished: 0, match: 'self.x'}",
    );
    let running = run(&world);
    eventually("Ready=False is written", || {
        sim.get(&cluster_policies(), None, "bad-match")
            .map(|p| p["status"]["conditions"][0]["reason"] == "InvalidSpec")
            .unwrap_or(false)
    })
    .await;
    let status = sim.get(&cluster_policies(), None, "bad-match").unwrap()["status"].clone();
    assert_eq!(status["conditions"][0]["status"], "False");
    assert_eq!(
        status["conditions"][0]["message"],
        "spec.match: reads an unknown variable \"self\" (only `object` and `now` are defined)"
    );
    let events = running.recorder.events();
    assert!(
        events
            .iter()
            .any(|e| e.reason == "InvalidSpec" && e.regarding.name.as_deref() == Some("bad-match")),
        "{events:?}"
    );
    tokio::time::sleep(Duration::from_secs(600)).await;
    assert!(exists(sim, "data", "old"));
    running.stop().await;
}

#[tokio::test(start_paused = true)]
async fn history_limits_keep_the_newest_of_each_owner() {
    let world = world().await;
    let sim = world.sim();
    let now = world.now();
    let owner = json!([{"apiVersion": "batch/v1", "kind": "CronJob", "name": "nightly", "uid": "cron-1", "controller": true}]);
    for i in 0..5 {
        let pod = json!({"metadata": {"name": format!("ok-{i}"), "namespace": "data", "ownerReferences": owner}});
        create_pod_with(
            sim,
            pod,
            Some(now - chrono::Duration::minutes(60 - i)),
            "Succeeded",
        );
    }
    for i in 0..2 {
        let pod = json!({"metadata": {"name": format!("failed-{i}"), "namespace": "data", "ownerReferences": owner}});
        create_pod_with(
            sim,
            pod,
            Some(now - chrono::Duration::minutes(30 - i)),
            "Failed",
        );
    }
    create_policy(sim, "metadata: {name: history}\nspec: {preset: pods, includeControlled: true, successfulHistoryLimit: 2, failedHistoryLimit: 1}");
    let running = run(&world);
    eventually("three successful and one failed Pod are deleted", || {
        (0..3).all(|i| !exists(sim, "data", &format!("ok-{i}"))) && !exists(sim, "data", "failed-0")
    })
    .await;
    tokio::time::sleep(Duration::from_secs(60)).await;
    for kept in ["ok-3", "ok-4", "failed-1"] {
        assert!(
            exists(sim, "data", kept),
            "{kept} is among the newest and must be kept"
        );
    }
    assert_eq!(running.metrics.deletions(&PolicyId::cluster("history")), 4);
    running.stop().await;
}

#[tokio::test(start_paused = true)]
async fn a_malformed_annotation_keeps_the_object_and_is_reported_on_it() {
    let world = world().await;
    let sim = world.sim();
    let pod = json!({"metadata": {"name": "odd", "namespace": "data", "annotations": {"kube-gc.io/ttl": "soon"}}});
    create_pod_with(
        sim,
        pod,
        Some(world.now() - chrono::Duration::hours(1)),
        "Succeeded",
    );
    create_policy(
        sim,
        "metadata: {name: p}\nspec: {preset: pods, ttlSecondsAfterFinished: 0}",
    );
    let running = run(&world);
    eventually("the annotation is reported", || {
        running.metrics.object_errors("annotation") >= 1
    })
    .await;
    tokio::time::sleep(Duration::from_secs(600)).await;
    assert!(exists(sim, "data", "odd"));
    let events = running.recorder.events();
    let event = events
        .iter()
        .find(|e| e.reason == "InvalidRetentionAnnotation")
        .expect("a Warning on the Pod");
    assert_eq!(event.regarding.name.as_deref(), Some("odd"));
    assert!(
        event.message.contains("kube-gc.io/ttl=\"soon\""),
        "{}",
        event.message
    );
    assert_eq!(
        running.metrics.object_errors("annotation"),
        1,
        "reported once"
    );
    // The policy governs the Pod it keeps (as `kube-gc explain` says): it is matched, and
    // nothing is scheduled for it.
    let status = sim.get(&cluster_policies(), None, "p").unwrap()["status"].clone();
    assert_eq!(status["matched"], 1, "{status}");
    assert_eq!(status["waiting"], 0, "{status}");
    assert!(status.get("nextDeletionTime").is_none(), "{status}");
    running.stop().await;
}

#[tokio::test(start_paused = true)]
async fn status_counts_what_the_policy_governs() {
    let world = world().await;
    let sim = world.sim();
    let now = world.now();
    create_pod(sim, "data", "waiting", Some(now));
    create_pod(sim, "data", "running", None);
    // Succeeded, and no container says when it finished: kept for ever, and counted as such.
    let mut unknown = sim
        .create(
            &pods(),
            json!({"apiVersion": "v1", "kind": "Pod",
                "metadata": {"name": "when", "namespace": "data"},
                "spec": {"restartPolicy": "Never", "containers": [{"name": "main", "image": "busybox:1.36"}]}}),
        )
        .expect("create the Pod");
    unknown["status"] = json!({"phase": "Succeeded"});
    sim.update_status(&pods(), unknown).expect("finish the Pod");
    create_policy(sim, "metadata: {name: counted, generation: 1}\nspec: {preset: pods, ttlSecondsAfterFinished: 3600}");
    let running = run(&world);
    eventually("status is written", || {
        sim.get(&cluster_policies(), None, "counted")
            .map(|p| p["status"]["matched"] == 3)
            .unwrap_or(false)
    })
    .await;
    let status = sim.get(&cluster_policies(), None, "counted").unwrap()["status"].clone();
    assert_eq!(status["waiting"], 1);
    assert_eq!(status["unknown"], 1, "{status}");
    assert_eq!(status["deleted"], 0);
    assert_eq!(
        status["nextDeletionTime"],
        wire_time(now + chrono::Duration::hours(1))
    );
    assert_eq!(status["conditions"][0]["type"], "Ready");
    assert_eq!(status["conditions"][0]["status"], "True");
    assert!(status["observedGeneration"].is_i64());

    // Once nothing waits, the status has no next deletion: the writer's merge patch must
    // remove the field (null), not leave the old time behind (found on a real kube-apiserver).
    tokio::time::sleep(Duration::from_secs(3600)).await;
    eventually("the deletion is counted", || {
        sim.get(&cluster_policies(), None, "counted")
            .map(|p| p["status"]["deleted"] == 1)
            .unwrap_or(false)
    })
    .await;
    let status = sim.get(&cluster_policies(), None, "counted").unwrap()["status"].clone();
    assert_eq!(status["matched"], 2, "{status}");
    assert_eq!(status["waiting"], 0, "{status}");
    assert_eq!(status["unknown"], 1, "{status}");
    assert!(
        exists(sim, "data", "when"),
        "a finish time unknown is never a deletion"
    );
    assert!(
        status.get("nextDeletionTime").is_none(),
        "a next deletion is reported when none is scheduled: {status}"
    );
    running.stop().await;
}

/// The reconciler over a cache that still holds a copy the server has since changed.
fn stale(world: &World, policy_yaml: &str, object: &Value) -> (RetentionReconciler, WorkKey) {
    use kube_gc::controllers::retention::engine::{plan, PolicyInput};
    use kube_gc::controllers::retention::policy::Target;
    let policy = serde_saphyr::from_str(policy_yaml).expect("policy YAML");
    let inputs = [PolicyInput {
        object: &policy,
        cluster: true,
    }];
    let served = |t: &Target| {
        (t.resource == "pods")
            .then(|| kube_gc::client::ResourceRef::new("", "v1", "pods", "Pod", true))
    };
    let planned = plan(&inputs, &Default::default(), &served);
    let (target, wanted) = planned
        .watches
        .into_iter()
        .next()
        .expect("pods are watched");
    let watch = ResourceWatch::detached(target.clone(), &wanted, world.harness.client.clone());
    watch
        .store
        .apply_added(assess(object, &watch.rules, world.now()));
    let watches = Arc::new(parking_lot::RwLock::new(std::collections::BTreeMap::from(
        [(target.clone(), Arc::clone(&watch))],
    )));
    let clock: SharedClock = Arc::clone(&world.clock);
    let reconciler = RetentionReconciler::new(
        watches,
        clock,
        Arc::new(RetentionMetrics::default()),
        Arc::new(CollectingRecorder::new()),
    );
    let key = WorkKey::Object {
        target: Arc::new(target),
        key: ObjectKey::new(
            object["metadata"]["namespace"].as_str().unwrap_or_default(),
            object["metadata"]["name"].as_str().unwrap_or_default(),
        ),
    };
    (reconciler, key)
}

#[tokio::test(start_paused = true)]
async fn a_ttl_extended_after_the_cache_saw_it_expire_is_not_deleted() {
    let world = world().await;
    let sim = world.sim();
    let pod = create_pod(
        sim,
        "data",
        "extended",
        Some(world.now() - chrono::Duration::hours(1)),
    );
    let (reconciler, key) = stale(
        &world,
        "metadata: {name: p}\nspec: {preset: pods, ttlSecondsAfterFinished: 0}",
        &pod,
    );
    let mut extended = sim.get(&pods(), Some("data"), "extended").unwrap();
    extended["metadata"]["annotations"] = json!({"kube-gc.io/ttl": "10h"});
    sim.update(&pods(), extended).unwrap();

    let action = reconciler.reconcile(&key).await.unwrap();
    assert!(
        matches!(action, Action::RequeueAfter(d) if d > Duration::from_secs(8 * 3600)),
        "{action:?}"
    );
    assert!(exists(sim, "data", "extended"));
    let methods: Vec<(String, u16)> = requests_for(&world, "data", "extended")
        .into_iter()
        .map(|e| (e.method, e.status))
        .collect();
    assert_eq!(
        methods,
        [("DELETE".to_owned(), 409), ("GET".to_owned(), 200)]
    );
}

#[tokio::test(start_paused = true)]
async fn a_pod_recreated_under_the_same_name_is_left_alone() {
    let world = world().await;
    let sim = world.sim();
    let old = create_pod(
        sim,
        "data",
        "reborn",
        Some(world.now() - chrono::Duration::hours(1)),
    );
    let (reconciler, key) = stale(
        &world,
        "metadata: {name: p}\nspec: {preset: pods, ttlSecondsAfterFinished: 0}",
        &old,
    );
    sim.delete(
        &pods(),
        Some("data"),
        "reborn",
        &kube_gc::sim::DeleteOptions::default(),
    )
    .unwrap();
    let reborn = create_pod(sim, "data", "reborn", None);

    let action = reconciler.reconcile(&key).await.unwrap();
    assert_eq!(action, Action::Done);
    let now = sim.get(&pods(), Some("data"), "reborn").unwrap();
    assert_eq!(now["metadata"]["uid"], reborn["metadata"]["uid"]);
    assert!(now["metadata"]["deletionTimestamp"].is_null());
}

fn volcano_jobs() -> Gvr {
    Gvr::new("batch.volcano.sh", "v1alpha1", "jobs")
}

fn ready_reason(sim: &SimServer, name: &str) -> String {
    sim.get(&cluster_policies(), None, name)
        .ok()
        .and_then(|p| {
            p["status"]["conditions"][0]["reason"]
                .as_str()
                .map(str::to_owned)
        })
        .unwrap_or_default()
}

/// A resource whose definition is deleted while watched (exchanges 74–76): the policy says
/// so (`ResourceNotServed`), its watch stops instead of listing a 404 forever (and being
/// reported stuck after a minute), and it picks up again when the definition returns.
#[tokio::test(start_paused = true)]
async fn a_watched_resource_that_stops_being_served_marks_the_policy_and_stops_its_watch() {
    let world = world().await;
    let sim = world.sim();
    create_policy(
        sim,
        "metadata: {name: vc}\nspec: {preset: volcano-jobs, ttlSecondsAfterFinished: 3600}",
    );
    let running = run(&world);
    eventually("the policy is watching", || {
        ready_reason(sim, "vc") == "Watching"
    })
    .await;

    sim.delete_custom_resource_definition(&volcano_jobs())
        .unwrap();
    let deleted = tokio::time::Instant::now();
    eventually("the policy says its resource is not served", || {
        ready_reason(sim, "vc") == "ResourceNotServed"
    })
    .await;
    // Noticed from the watch's first 404, not at the next periodic discovery.
    assert!(
        deleted.elapsed() < Duration::from_secs(5),
        "noticed after {:?}",
        deleted.elapsed()
    );
    let requests = || {
        world
            .sim()
            .journal()
            .entries()
            .iter()
            .filter(|e| e.path.starts_with("/apis/batch.volcano.sh/v1alpha1/jobs"))
            .count()
    };
    let before = requests();
    tokio::time::sleep(Duration::from_secs(600)).await;
    assert_eq!(
        requests(),
        before,
        "the watch went on listing a resource not served"
    );
    assert!(
        running
            .recorder
            .events()
            .iter()
            .any(|e| e.reason == "ResourceNotServed"),
        "a Warning on the policy"
    );

    sim.serve_resource(&volcano_jobs()).unwrap();
    eventually("the policy is watching again", || {
        ready_reason(sim, "vc") == "Watching"
    })
    .await;
    running.stop().await;
}

/// The headline use of `ttlSecondsAfterCreation`: preview namespaces, a cluster-scoped core
/// resource with no finish rule (fixtures/retention/crd-validation 23), deleted that long after
/// creation; others are left alone.
#[tokio::test(start_paused = true)]
async fn preview_namespaces_go_a_time_after_creation_without_a_finish_rule() {
    let world = world().await;
    let sim = world.sim();
    let namespaces = Gvr::new("", "v1", "namespaces");
    for (name, labels) in [("pr-1", json!({"preview": "true"})), ("stays", json!({}))] {
        sim.create(
            &namespaces,
            json!({"apiVersion": "v1", "kind": "Namespace",
                "metadata": {"name": name, "labels": labels}}),
        )
        .expect("create the namespace");
    }
    create_policy(
        sim,
        "metadata: {name: previews}\nspec:\n  resource: {group: \"\", version: v1, resource: namespaces}\n  selector: {matchLabels: {preview: \"true\"}}\n  ttlSecondsAfterCreation: 60",
    );
    let running = run(&world);
    eventually("the policy is watching", || {
        ready_reason(sim, "previews") == "Watching"
    })
    .await;
    let deletes = |name: &str| {
        world
            .sim()
            .journal()
            .entries()
            .iter()
            .filter(|e| e.method == "DELETE" && e.path == format!("/api/v1/namespaces/{name}"))
            .count()
    };
    assert_eq!(deletes("pr-1"), 0, "deleted before its time");
    eventually("the preview namespace is deleted", || deletes("pr-1") == 1).await;
    tokio::time::sleep(Duration::from_secs(3600)).await;
    assert_eq!(deletes("stays"), 0);
    assert_eq!(deletes("pr-1"), 1, "one DELETE");
    running.stop().await;
}
