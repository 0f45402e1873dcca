//! `kube-gc explain` and `kube-gc plan` against the simulated API server: their
//! verdicts are the controllers' (the same objects driven through both), they only read, they
//! name what blocks a deletion down to the root cause, and bad input is one clear error.

mod client_support;
mod explain_support;
mod ttl_support;

use std::sync::Arc;
use std::time::Duration;

use chrono::Duration as Span;
use kube_gc::client::Discovery;
use kube_gc::controllers::retention::engine::{RetentionController, RetentionOptions};
use kube_gc::controllers::ttl::{BatchJob, TtlOptions};
use kube_gc::controllers::Wiring;
use kube_gc::explain::plan::{plan, PlanOptions};
use kube_gc::explain::{Explanation, GatherError, VerdictKind};

use explain_support::explain_at;
use kube_gc::sim::{DeleteOptions, Gvr, Propagation, SimConfig, SimServer};
use serde_json::{json, Value};
use tokio_util::sync::CancellationToken;
use ttl_support::{create_job, eventually, jobs, run_controller, wire_time, world_with, World};

fn pods() -> Gvr {
    Gvr::new("", "v1", "pods")
}

async fn world() -> World {
    world_with(SimConfig::default().with_namespaces(&["default", "data"])).await
}

async fn explain(
    world: &World,
    type_: &str,
    namespace: &str,
    name: &str,
) -> Result<Explanation, GatherError> {
    explain_at(world, type_, namespace, name, world.now()).await
}

/// The decision of `controller` in `said`.
fn decision<'e>(said: &'e Explanation, controller: &str) -> &'e kube_gc::explain::Decision {
    said.decisions
        .iter()
        .find(|d| d.controller == controller)
        .unwrap_or_else(|| panic!("no decision of {controller}: {said:#?}"))
}

fn finished_pod(
    sim: &SimServer,
    namespace: &str,
    name: &str,
    at: chrono::DateTime<chrono::Utc>,
    extra: Value,
) -> Value {
    let mut pod = json!({"apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {"restartPolicy": "Never", "containers": [{"name": "main", "image": "busybox:1.36"}]}});
    if let Some(meta) = extra.as_object() {
        for (k, v) in meta {
            pod["metadata"][k] = v.clone();
        }
    }
    let mut created = sim.create(&pods(), pod).expect("create the Pod");
    created["status"] = json!({"phase": "Succeeded", "containerStatuses": [{"name": "main", "state":
        {"terminated": {"exitCode": 0, "startedAt": wire_time(at), "finishedAt": wire_time(at)}}}]});
    sim.update_status(&pods(), created).expect("finish the Pod")
}

#[tokio::test(start_paused = true)]
async fn the_verdict_is_what_the_ttl_controller_then_does() {
    let world = world().await;
    create_job(world.sim(), "nightly", Some(600), Some(world.now()));
    let said = explain(&world, "jobs", "default", "nightly").await.unwrap();
    assert_eq!(said.verdict, VerdictKind::DeleteAt, "{said:#?}");
    let delete_at = said.delete_at.clone().expect("a time");
    assert_eq!(delete_at, wire_time(world.now() + Span::seconds(600)));
    let ttl = decision(&said, "ttl-after-finished");
    assert!(ttl.governs && ttl.summary.contains("600s"), "{ttl:?}");

    let started = world.now();
    let running = run_controller::<BatchJob>(&world, TtlOptions::with_workers(1));
    ttl_support::wait_deleted(world.sim(), &jobs(), "nightly").await;
    let deleted_after = world.now() - started;
    assert!(
        (599..=601).contains(&deleted_after.num_seconds()),
        "{deleted_after}"
    );
    running.stop().await;
}

#[tokio::test(start_paused = true)]
async fn the_verdict_is_what_the_retention_controller_then_does() {
    let world = world().await;
    let sim = world.sim();
    let now = world.now();
    for i in 0..4 {
        finished_pod(
            sim,
            "data",
            &format!("run-{i}"),
            now - Span::minutes(10 - i),
            json!({"labels": {"app": "etl"}}),
        );
    }
    let policies = Gvr::new("kube-gc.io", "v1alpha1", "clusterretentionpolicies");
    sim.create(
        &policies,
        json!({"apiVersion": "kube-gc.io/v1alpha1", "kind": "ClusterRetentionPolicy",
        "metadata": {"name": "etl"},
        "spec": {"preset": "pods", "ttlSecondsAfterFinished": 3600, "successfulHistoryLimit": 2,
                 "groupBy": {"label": "app"}}}),
    )
    .unwrap();

    let oldest = explain(&world, "po", "data", "run-0").await.unwrap();
    assert_eq!(oldest.verdict, VerdictKind::DeleteNow, "{oldest:#?}");
    let retention = decision(&oldest, "retention");
    assert!(
        retention.details.iter().any(|l| l
            == "4th newest of 4 successful in its group, those labelled app=etl in \
                    namespace data; limit 2: beyond it: deleted"),
        "{retention:#?}"
    );
    let newest = explain(&world, "pods", "data", "run-3").await.unwrap();
    assert_eq!(newest.verdict, VerdictKind::DeleteAt);
    let newest_at = newest.delete_at.clone().unwrap();
    assert_eq!(
        newest_at,
        wire_time(now - Span::minutes(7) + Span::hours(1))
    );

    let controller =
        RetentionController::builder(world.harness.client.clone(), RetentionOptions::default())
            .wiring(Wiring::default().clock(Arc::clone(&world.clock)))
            .build();
    let stop = CancellationToken::new();
    let task = tokio::spawn(controller.run(stop.clone()));
    eventually("the two oldest are deleted", || {
        sim.get(&pods(), Some("data"), "run-0").is_err()
            && sim.get(&pods(), Some("data"), "run-1").is_err()
    })
    .await;
    assert!(sim.get(&pods(), Some("data"), "run-3").is_ok());
    eventually("the newest goes when explain said", || {
        sim.get(&pods(), Some("data"), "run-3").is_err()
    })
    .await;
    let gone_at = wire_time(world.now());
    assert!(gone_at >= newest_at, "{gone_at} < {newest_at}");
    assert!(
        world.now()
            - chrono::DateTime::parse_from_rfc3339(&newest_at)
                .unwrap()
                .with_timezone(&chrono::Utc)
            <= Span::seconds(1)
    );
    stop.cancel();
    task.await.unwrap().unwrap();
}

#[tokio::test(start_paused = true)]
async fn explain_and_plan_only_read() {
    let world = world().await;
    create_job(world.sim(), "done", Some(0), Some(world.now()));
    let before = world.sim().journal().entries().len();
    explain(&world, "jobs", "default", "done").await.unwrap();
    let discovery = Discovery::run(&world.harness.client).await.unwrap();
    let options = PlanOptions {
        within: Duration::from_secs(86_400),
        ..PlanOptions::default()
    };
    plan(&world.harness.client, &discovery, &options, world.now())
        .await
        .unwrap();
    let entries = world.sim().journal().entries();
    let methods: std::collections::BTreeSet<&str> = entries[before..]
        .iter()
        .map(|e| e.method.as_str())
        .collect();
    assert_eq!(
        methods,
        std::collections::BTreeSet::from(["GET"]),
        "only GET (get, list)"
    );
}

#[tokio::test(start_paused = true)]
async fn a_blocked_foreground_deletion_names_the_chain_to_its_root_cause() {
    let world = world().await;
    let sim = world.sim();
    let job = create_job(sim, "owner", None, None);
    let owner_ref = |o: &Value, kind: &str| {
        json!([{"apiVersion": o["apiVersion"], "kind": kind,
        "name": o["metadata"]["name"], "uid": o["metadata"]["uid"], "controller": true, "blockOwnerDeletion": true}])
    };
    // A Pod of the Job, held by a finalizer of some other controller.
    let pod = finished_pod(
        sim,
        "default",
        "worker",
        world.now(),
        json!({
        "ownerReferences": owner_ref(&job, "Job"), "finalizers": ["example.com/protect"]}),
    );
    sim.delete(
        &pods(),
        Some("default"),
        "worker",
        &DeleteOptions::default(),
    )
    .unwrap();
    sim.delete(
        &jobs(),
        Some("default"),
        "owner",
        &DeleteOptions::propagation(Propagation::Foreground),
    )
    .unwrap();

    let said = explain(&world, "jobs", "default", "owner").await.unwrap();
    assert_eq!(said.verdict, VerdictKind::Blocked, "{said:#?}");
    let deletion = said.deletion.as_ref().expect("being deleted");
    let foreground = deletion
        .finalizers
        .iter()
        .find(|f| f.finalizer == "foregroundDeletion")
        .expect("foregroundDeletion");
    assert_eq!(foreground.blockers.len(), 1);
    assert_eq!(foreground.blockers[0].object, "Pod default/worker");
    assert!(
        foreground.blockers[0].why.contains("example.com/protect"),
        "{:?}",
        foreground.blockers[0]
    );
    let held = explain(&world, "pods", "default", "worker").await.unwrap();
    assert_eq!(held.verdict, VerdictKind::Blocked);
    let other = &held.deletion.as_ref().unwrap().finalizers[0];
    assert!(other.waits_for.contains("example.com"), "{other:?}");
    assert_eq!(pod["metadata"]["name"], "worker");
}

#[tokio::test(start_paused = true)]
async fn an_owner_deleted_and_recreated_no_longer_owns() {
    let world = world().await;
    let sim = world.sim();
    let job = create_job(sim, "parent", None, None);
    let reference = json!([{"apiVersion": "batch/v1", "kind": "Job", "name": "parent", "uid": job["metadata"]["uid"]}]);
    finished_pod(
        sim,
        "default",
        "child",
        world.now(),
        json!({"ownerReferences": reference}),
    );
    let kept = explain(&world, "pods", "default", "child").await.unwrap();
    let gc = decision(&kept, "garbagecollector");
    assert_eq!(gc.verdict, VerdictKind::Keep, "{gc:?}");
    sim.delete(
        &jobs(),
        Some("default"),
        "parent",
        &DeleteOptions::propagation(Propagation::Background),
    )
    .unwrap();
    eventually("the Job is gone", || {
        sim.get(&jobs(), Some("default"), "parent").is_err()
    })
    .await;
    create_job(sim, "parent", None, None);
    let orphan = explain(&world, "pods", "default", "child").await.unwrap();
    assert_eq!(orphan.verdict, VerdictKind::DeleteNow, "{orphan:#?}");
    let gc = decision(&orphan, "garbagecollector");
    assert!(gc.details[0].contains("deleted and re-created"), "{gc:?}");
}

#[tokio::test(start_paused = true)]
async fn bad_input_is_one_line_naming_what_was_asked() {
    let world = world().await;
    let unknown = explain(&world, "widgets", "default", "x")
        .await
        .unwrap_err();
    assert_eq!(
        unknown.to_string(),
        "the server doesn't have a resource type \"widgets\""
    );
    let missing = explain(&world, "jobs", "default", "nope")
        .await
        .unwrap_err();
    assert_eq!(
        missing.to_string(),
        "jobs.batch \"nope\" not found in namespace \"default\""
    );
}

#[tokio::test(start_paused = true)]
async fn plan_lists_what_goes_and_when_sorted_and_totalled() {
    let world = world().await;
    let sim = world.sim();
    create_job(sim, "soon", Some(3600), Some(world.now()));
    create_job(sim, "now", Some(0), Some(world.now()));
    create_job(sim, "later", Some(3 * 86_400), Some(world.now()));
    create_job(sim, "running", Some(0), None);
    let discovery = Discovery::run(&world.harness.client).await.unwrap();
    let options = PlanOptions {
        within: Duration::from_secs(86_400),
        ..PlanOptions::default()
    };
    let report = plan(&world.harness.client, &discovery, &options, world.now())
        .await
        .unwrap();
    let names: Vec<&str> = report.deletions.iter().map(|r| r.name.as_str()).collect();
    assert_eq!(names, ["now", "soon"], "{report:#?}");
    assert_eq!(report.by_kind.get("Job"), Some(&2));
    assert_eq!(report.chart.buckets[0], ("now".to_owned(), 1));
    assert_eq!(report.chart.buckets[1], ("+0h".to_owned(), 0));
    assert_eq!(report.chart.buckets[2], ("+1h".to_owned(), 1));
    let text = kube_gc::explain::plan::text(&report);
    assert!(text.contains("2 deletions within 24h"), "{text}");
}

#[tokio::test(start_paused = true)]
async fn plan_selects_orphans_by_any_label_selector_and_still_sees_unselected_owners() {
    let world = world().await;
    let sim = world.sim();
    let alive = create_job(sim, "alive", None, None);
    let gone = json!([{"apiVersion": "batch/v1", "kind": "Job", "name": "gone",
        "uid": "00000000-0000-0000-0000-00000000dead"}]);
    let owned = json!([{"apiVersion": "batch/v1", "kind": "Job", "name": "alive",
        "uid": alive["metadata"]["uid"]}]);
    for (name, labels, owners) in [
        ("web-orphan", json!({"tier": "web"}), &gone),
        ("batch-orphan", json!({"tier": "batch"}), &gone),
        ("bare-orphan", json!({}), &gone),
        // Its owner exists, though the selector does not select the owner.
        ("web-owned", json!({"tier": "web"}), &owned),
    ] {
        let metadata = json!({"labels": labels, "ownerReferences": owners});
        finished_pod(sim, "default", name, world.now(), metadata);
    }
    let discovery = Discovery::run(&world.harness.client).await.unwrap();
    let orphans = |selector: &str| {
        let options = PlanOptions {
            selector: Some(selector.to_owned()),
            ..PlanOptions::default()
        };
        let (client, discovery, now) = (world.harness.client.clone(), &discovery, world.now());
        async move {
            let report = plan(&client, discovery, &options, now).await?;
            let mut names: Vec<String> = report
                .deletions
                .iter()
                .filter(|r| r.controller == "garbagecollector")
                .map(|r| r.name.clone())
                .collect();
            names.sort();
            Ok::<_, GatherError>(names)
        }
    };
    assert_eq!(orphans("tier in (web)").await.unwrap(), ["web-orphan"]);
    assert_eq!(
        orphans("tier notin (web)").await.unwrap(),
        ["bare-orphan", "batch-orphan"]
    );
    assert_eq!(orphans("!tier").await.unwrap(), ["bare-orphan"]);
    assert_eq!(orphans("tier=batch").await.unwrap(), ["batch-orphan"]);
    let bad = orphans("tier in (web").await.unwrap_err();
    assert!(
        bad.to_string()
            .starts_with("invalid label selector \"tier in (web\": "),
        "{bad}"
    );
}

/// The garbage collector's row, on rough edges an operator met: an owner
/// deleting in the foreground is the collector's work, not "does not apply"; a blocking
/// dependent not deleted yet names its own finalizers, the next link of the chain; an owner
/// reference to something that is not there says it may never have existed.
#[tokio::test(start_paused = true)]
async fn the_collectors_row_says_what_it_does_for_an_owner_and_what_comes_next() {
    let world = world().await;
    let sim = world.sim();
    let job = create_job(sim, "owner", None, None);
    let reference = json!([{"apiVersion": "batch/v1", "kind": "Job", "name": "owner",
        "uid": job["metadata"]["uid"], "controller": true, "blockOwnerDeletion": true}]);
    finished_pod(
        sim,
        "default",
        "worker",
        world.now(),
        json!({"ownerReferences": reference, "finalizers": ["example.com/protect"]}),
    );
    sim.delete(
        &jobs(),
        Some("default"),
        "owner",
        &DeleteOptions::propagation(Propagation::Foreground),
    )
    .unwrap();
    let said = explain(&world, "jobs", "default", "owner").await.unwrap();
    let gc = decision(&said, "garbagecollector");
    assert_eq!(gc.verdict, VerdictKind::Blocked, "{gc:?}");
    assert!(gc.governs, "{gc:?}");
    assert_eq!(
        gc.summary,
        "deleting it in the foreground: the collector deletes its 1 dependent, then removes foregroundDeletion"
    );
    let foreground = &said.deletion.as_ref().expect("being deleted").finalizers[0];
    assert_eq!(
        foreground.blockers[0].why,
        "not deleted yet (blockOwnerDeletion: true); once deleted its finalizers example.com/protect hold it"
    );

    let never = json!([{"apiVersion": "batch/v1", "kind": "Job", "name": "never-created",
        "uid": "00000000-0000-0000-0000-000000000000"}]);
    finished_pod(
        sim,
        "default",
        "stray",
        world.now(),
        json!({"ownerReferences": never}),
    );
    let stray = explain(&world, "pods", "default", "stray").await.unwrap();
    let gc = decision(&stray, "garbagecollector");
    assert!(
        gc.details[0].ends_with("absent: no object has this UID (deleted, or never created)"),
        "{gc:?}"
    );
}

#[tokio::test(start_paused = true)]
async fn a_volcano_job_is_said_to_follow_volcanos_rules() {
    let world = world().await;
    ttl_support::create_vcjob(world.sim(), "vc", Some(60), "Completed", world.now());
    let said = explain(&world, "vcjob", "default", "vc").await.unwrap();
    let ttl = decision(&said, "volcano-job-ttl");
    let rules = ttl
        .details
        .iter()
        .find(|d| d.starts_with("controller:"))
        .unwrap();
    assert_eq!(
        rules,
        "controller: volcano-job-ttl (the rules of Volcano's garbagecollector controller (vc-controller-manager) for VolcanoJob)"
    );
}

/// `plan`'s rough edges: what kube-gc keeps for a problem and the policies that delete nothing
/// are listed; a due deletion has a time in JSON; an empty plan is one line under the
/// controllers it assumed.
#[tokio::test(start_paused = true)]
async fn plan_lists_what_is_kept_for_a_problem_and_broken_policies() {
    let world = world().await;
    let sim = world.sim();
    let discovery = Discovery::run(&world.harness.client).await.unwrap();
    let options = PlanOptions {
        within: Duration::from_secs(86_400),
        ..PlanOptions::default()
    };
    let empty = plan(&world.harness.client, &discovery, &options, world.now())
        .await
        .unwrap();
    assert_eq!(
        kube_gc::explain::plan::text(&empty),
        "Assuming kube-gc runs: ttl-after-finished, volcano-job-ttl, retention, \
         garbagecollector, namespace, podgc, pvc-protection, pv-protection (--controllers)\n\n\
         No deletions within 24h.\n"
    );

    create_job(sim, "due", Some(0), Some(world.now()));
    let created = create_job(sim, "no-finish-time", Some(60), None);
    ttl_support::finish_job(sim, created, json!({"type": "Complete", "status": "True"}));
    sim.create(
        &Gvr::new("kube-gc.io", "v1alpha1", "clusterretentionpolicies"),
        json!({"apiVersion": "kube-gc.io/v1alpha1", "kind": "ClusterRetentionPolicy",
        "metadata": {"name": "broken"},
        "spec": {"preset": "pods", "ttlSecondsAfterFinished": 60, "match": "object.("}}),
    )
    .unwrap();
    let report = plan(&world.harness.client, &discovery, &options, world.now())
        .await
        .unwrap();
    let due = &report.deletions[0];
    assert_eq!((due.name.as_str(), due.due), ("due", true));
    assert_eq!(due.deletes_at, report.generated_at);
    assert_eq!(report.kept.len(), 1, "{report:#?}");
    assert_eq!(report.kept[0].name, "no-finish-time");
    assert!(
        report.kept[0].problem.contains("finish time"),
        "{:?}",
        report.kept[0]
    );
    assert_eq!(report.policy_problems.len(), 1, "{report:#?}");
    let broken = &report.policy_problems[0];
    assert_eq!(
        (broken.policy.as_str(), broken.state.as_str()),
        ("ClusterRetentionPolicy broken", "Invalid")
    );
    assert!(broken.problem.starts_with("spec.match: "), "{broken:?}");
    let text = kube_gc::explain::plan::text(&report);
    assert!(
        text.contains("Kept because something about them cannot be read:"),
        "{text}"
    );
    assert!(
        text.contains("ClusterRetentionPolicy broken   Invalid   spec.match: "),
        "{text}"
    );
    let json = serde_json::to_value(&report).unwrap();
    assert_eq!(json["deletions"][0]["deletesAt"], json["generatedAt"]);
    assert_eq!(json["deletions"][0]["due"], true);
}

#[tokio::test(start_paused = true)]
async fn explaining_an_invalid_policy_says_what_is_wrong_with_it() {
    let world = world().await;
    world
        .sim()
        .create(
            &Gvr::new("kube-gc.io", "v1alpha1", "clusterretentionpolicies"),
            json!({"apiVersion": "kube-gc.io/v1alpha1", "kind": "ClusterRetentionPolicy",
            "metadata": {"name": "broken"},
            "spec": {"preset": "pods", "ttlSecondsAfterFinished": 60, "match": "object.("}}),
        )
        .unwrap();
    let said = explain(&world, "crp", "", "broken").await.unwrap();
    assert!(
        said.reasons[0]
            .starts_with("this retention policy is invalid and deletes nothing: spec.match: "),
        "{said:#?}"
    );
}
