//! The TTL-after-finished controller end to end: simulated API server → informer → handlers →
//! workqueue → reconcile → DELETE, on tokio's paused clock with a wall clock that follows it.
//! Every rule of the controller, asserted on the server's state and its request journal.

mod client_support;
mod ttl_support;

use std::sync::Arc;
use std::time::Duration;

use kube_gc::controllers::retention::assessment::Assessment;
use kube_gc::controllers::retention::engine::{RetentionError, RetentionReconciler};
use kube_gc::controllers::ttl::{
    detached, judge_object, work_key, BatchJob, ErrorReason, FreshRead, TtlMetrics, TtlOptions,
    VolcanoJobs,
};
use kube_gc::events::{CollectingRecorder, EventType};
use kube_gc::runtime::cache::{ObjectKey, Store};
use kube_gc::runtime::controller::{Action, Reconciler};
use kube_gc::sim::faults::{FaultPlan, Verb};
use kube_gc::sim::journal::JournalEntry;
use kube_gc::sim::{DeleteOptions, Propagation};
use serde_json::{json, Value};

use ttl_support::*;

const JOB_PATH: &str = "/apis/batch/v1/namespaces/default/jobs/";

fn requests_for(world: &World, name: &str) -> Vec<JournalEntry> {
    let path = format!("{JOB_PATH}{name}");
    world
        .sim()
        .journal()
        .entries()
        .into_iter()
        .filter(|e| e.path == path)
        .collect()
}

fn options() -> TtlOptions {
    TtlOptions::with_workers(2)
}

#[tokio::test(start_paused = true)]
async fn ttl_zero_is_deleted_at_once_with_one_guarded_foreground_delete() {
    let world = world().await;
    let job = create_job(world.sim(), "done", Some(0), Some(world.now()));
    let running = run_controller::<BatchJob>(&world, options());

    wait_deleted(world.sim(), &jobs(), "done").await;
    let requests = requests_for(&world, "done");
    assert_eq!(requests.len(), 1, "one request for the Job: {requests:?}");
    let delete = &requests[0];
    assert_eq!(delete.method, "DELETE");
    assert_eq!(delete.status, 200);
    let body = delete.body.clone().unwrap_or_default();
    assert_eq!(body["propagationPolicy"], "Foreground");
    assert_eq!(body["preconditions"]["uid"], job["metadata"]["uid"]);
    assert_eq!(
        body["preconditions"]["resourceVersion"],
        job["metadata"]["resourceVersion"]
    );
    // Foreground: the server keeps the Job, marked, until its dependents are gone.
    let marked = world.sim().get(&jobs(), Some("default"), "done").unwrap();
    assert_eq!(
        marked["metadata"]["finalizers"],
        json!(["foregroundDeletion"])
    );
    eventually("the deletion is counted", || {
        running.metrics.deletions("Job") == 1
    })
    .await;
    running.stop().await;
}

#[tokio::test(start_paused = true)]
async fn a_ttl_in_the_future_is_waited_for_then_expires() {
    let world = world().await;
    let finished = world.now();
    create_job(world.sim(), "later", Some(3600), Some(finished));
    let running = run_controller::<BatchJob>(&world, options());

    wait_deleted(world.sim(), &jobs(), "later").await;
    let delete = requests_for(&world, "later")
        .into_iter()
        .find(|e| e.method == "DELETE")
        .expect("a DELETE");
    let expiry = finished + chrono::Duration::seconds(3600);
    assert!(
        delete.at >= expiry,
        "deleted at {} before {expiry}",
        delete.at
    );
    assert!(
        delete.at - expiry < chrono::Duration::seconds(1),
        "deleted at {}, long after {expiry}",
        delete.at
    );
    assert_eq!(requests_for(&world, "later").len(), 1);
    running.stop().await;
}

#[tokio::test(start_paused = true)]
async fn a_finish_time_in_the_future_defers_cleanup() {
    let world = world().await;
    let skewed = world.now() + chrono::Duration::seconds(30);
    create_job(world.sim(), "skewed", Some(0), Some(skewed));
    let running = run_controller::<BatchJob>(&world, options());
    wait_deleted(world.sim(), &jobs(), "skewed").await;
    let delete = &requests_for(&world, "skewed")[0];
    assert!(
        delete.at >= skewed,
        "deleted at {} before {skewed}",
        delete.at
    );
    running.stop().await;
}

#[tokio::test(start_paused = true)]
async fn jobs_without_ttl_or_not_finished_are_never_deleted() {
    let world = world().await;
    let now = world.now();
    create_job(world.sim(), "no-ttl", None, Some(now));
    create_job(world.sim(), "running", Some(0), None);
    let criteria = create_job(world.sim(), "criteria-met", Some(0), None);
    finish_job(
        world.sim(),
        criteria,
        json!({"type": "SuccessCriteriaMet", "status": "True", "lastTransitionTime": wire_time(now)}),
    );
    let not_yet = create_job(world.sim(), "complete-false", Some(0), None);
    finish_job(
        world.sim(),
        not_yet,
        json!({"type": "Complete", "status": "False", "lastTransitionTime": wire_time(now)}),
    );
    create_job(world.sim(), "done", Some(10), Some(now));
    let running = run_controller::<BatchJob>(&world, options());

    wait_deleted(world.sim(), &jobs(), "done").await;
    tokio::time::sleep(Duration::from_secs(120)).await;
    for name in ["no-ttl", "running", "criteria-met", "complete-false"] {
        assert!(untouched(world.sim(), &jobs(), name), "{name} was deleted");
        assert!(
            requests_for(&world, name).is_empty(),
            "{name} was requested"
        );
    }
    // Finishing one later makes it eligible: the update handler queues it.
    let job = world
        .sim()
        .get(&jobs(), Some("default"), "running")
        .unwrap();
    finish_job(
        world.sim(),
        job,
        json!({"type": "Failed", "status": "True", "lastTransitionTime": wire_time(world.now())}),
    );
    wait_deleted(world.sim(), &jobs(), "running").await;
    running.stop().await;
}

#[tokio::test(start_paused = true)]
async fn a_ttl_extended_before_expiry_is_honoured() {
    let world = world().await;
    let job = create_job(world.sim(), "extended", Some(60), Some(world.now()));
    let running = run_controller::<BatchJob>(&world, options());
    // Seen and scheduled for its expiry: the handlers queue it for then, not now.
    eventually("the Job is cached", || running.store.len() == 1).await;
    tokio::time::sleep(Duration::from_secs(30)).await;
    let mut job = world
        .sim()
        .get(&jobs(), Some("default"), "extended")
        .unwrap_or(job);
    job["spec"]["ttlSecondsAfterFinished"] = json!(86_400);
    world.sim().update(&jobs(), job).unwrap();
    tokio::time::sleep(Duration::from_secs(3600)).await;
    assert!(untouched(world.sim(), &jobs(), "extended"));
    assert!(requests_for(&world, "extended").is_empty());
    running.stop().await;
}

#[tokio::test(start_paused = true)]
async fn a_job_recreated_under_the_same_name_is_left_alone() {
    let world = world().await;
    create_job(world.sim(), "reborn", Some(60), Some(world.now()));
    let running = run_controller::<BatchJob>(&world, options());
    // Seen and scheduled for its expiry: the handlers queue it for then, not now.
    eventually("the Job is cached", || running.store.len() == 1).await;
    tokio::time::sleep(Duration::from_secs(10)).await;
    world
        .sim()
        .delete(
            &jobs(),
            Some("default"),
            "reborn",
            &DeleteOptions::propagation(Propagation::Background),
        )
        .unwrap();
    let reborn = create_job(world.sim(), "reborn", Some(60), None);
    tokio::time::sleep(Duration::from_secs(3600)).await;
    let now = world.sim().get(&jobs(), Some("default"), "reborn").unwrap();
    assert_eq!(now["metadata"]["uid"], reborn["metadata"]["uid"]);
    assert!(!deletion_requested(Some(&now)));
    assert!(requests_for(&world, "reborn").is_empty());
    running.stop().await;
}

#[tokio::test(start_paused = true)]
async fn api_errors_are_retried_with_backoff_until_the_delete_succeeds() {
    let world = world().await;
    world
        .sim()
        .faults()
        .set_plan(FaultPlan::new(7).fail(Verb::Delete, 1.0, &[500]));
    create_job(world.sim(), "flaky", Some(0), Some(world.now()));
    let running = run_controller::<BatchJob>(&world, options());
    eventually("four failed deletes", || {
        running.metrics.errors("Job", ErrorReason::Api) >= 4
    })
    .await;
    world.sim().faults().set_plan(FaultPlan::new(7));
    wait_deleted(world.sim(), &jobs(), "flaky").await;

    let deletes: Vec<JournalEntry> = requests_for(&world, "flaky");
    assert!(deletes.iter().all(|e| e.method == "DELETE"), "{deletes:?}");
    assert_eq!(deletes.last().map(|e| e.status), Some(200));
    // Exponential back-off between attempts: each gap at least the one before.
    let gaps: Vec<chrono::Duration> = deletes.windows(2).map(|w| w[1].at - w[0].at).collect();
    assert!(gaps.windows(2).all(|g| g[1] >= g[0]), "gaps {gaps:?}");
    assert!(running.counters.errors() >= 4);
    running.stop().await;
}

#[tokio::test(start_paused = true)]
async fn a_finished_job_without_finish_time_is_an_error_reported_once() {
    let world = world().await;
    let job = create_job(world.sim(), "timeless", Some(0), None);
    finish_job(
        world.sim(),
        job,
        json!({"type": "Complete", "status": "True"}),
    );
    let running = run_controller::<BatchJob>(&world, options());
    eventually("three failed reconciles", || {
        running
            .metrics
            .errors("Job", ErrorReason::MissingFinishTime)
            >= 3
    })
    .await;
    assert!(untouched(world.sim(), &jobs(), "timeless"));
    assert!(requests_for(&world, "timeless").is_empty());
    let events = running.recorder.events();
    assert_eq!(events.len(), 1, "reported once: {events:?}");
    assert_eq!(events[0].event_type, EventType::Warning);
    assert_eq!(events[0].regarding.name.as_deref(), Some("timeless"));

    // Once the status says when, the TTL applies.
    let job = world
        .sim()
        .get(&jobs(), Some("default"), "timeless")
        .unwrap();
    finish_job(
        world.sim(),
        job,
        json!({"type": "Complete", "status": "True", "lastTransitionTime": wire_time(world.now())}),
    );
    wait_deleted(world.sim(), &jobs(), "timeless").await;
    running.stop().await;
}

#[tokio::test(start_paused = true)]
async fn dry_run_decides_but_deletes_nothing() {
    let world = world().await;
    create_job(world.sim(), "expired", Some(0), Some(world.now()));
    create_job(world.sim(), "soon", Some(5), Some(world.now()));
    let options = TtlOptions {
        dry_run: true,
        ..options()
    };
    let running = run_controller::<BatchJob>(&world, options);
    eventually("both reconciled, soon at its expiry", || {
        running.counters.reconciles() >= 2
    })
    .await;
    assert!(untouched(world.sim(), &jobs(), "expired"));
    assert!(untouched(world.sim(), &jobs(), "soon"));
    assert_eq!(world.sim().journal().count(Verb::Delete), 0);
    running.stop().await;
}

#[tokio::test(start_paused = true)]
async fn fresh_read_always_is_upstreams_get_then_uid_guarded_delete() {
    let world = world().await;
    let job = create_job(world.sim(), "upstream", Some(0), Some(world.now()));
    let options = TtlOptions {
        fresh_read: FreshRead::Always,
        ..options()
    };
    let running = run_controller::<BatchJob>(&world, options);
    wait_deleted(world.sim(), &jobs(), "upstream").await;
    let requests = requests_for(&world, "upstream");
    let methods: Vec<&str> = requests.iter().map(|e| e.method.as_str()).collect();
    assert_eq!(methods, ["GET", "DELETE"]);
    let body = requests[1].body.clone().unwrap_or_default();
    assert_eq!(
        body,
        json!({"propagationPolicy": "Foreground", "preconditions": {"uid": job["metadata"]["uid"]}})
    );
    running.stop().await;
}

#[tokio::test(start_paused = true)]
async fn volcano_jobs_in_a_finished_phase_are_deleted_and_aborted_ones_kept() {
    let world = world().await;
    let now = world.now();
    for (name, phase) in [
        ("completed", "Completed"),
        ("failed", "Failed"),
        ("terminated", "Terminated"),
    ] {
        create_vcjob(world.sim(), name, Some(0), phase, now);
    }
    create_vcjob(world.sim(), "aborted", Some(0), "Aborted", now);
    create_vcjob(world.sim(), "completing", Some(0), "Completing", now);
    create_vcjob(world.sim(), "no-ttl", None, "Completed", now);
    let running = run_controller::<VolcanoJobs>(&world, TtlOptions::with_workers(1));
    for name in ["completed", "failed", "terminated"] {
        wait_deleted(world.sim(), &vcjobs(), name).await;
    }
    tokio::time::sleep(Duration::from_secs(60)).await;
    for name in ["aborted", "completing", "no-ttl"] {
        assert!(
            untouched(world.sim(), &vcjobs(), name),
            "{name} was deleted"
        );
    }
    let deletes = world.sim().journal().deletes();
    assert_eq!(deletes.len(), 3);
    assert!(deletes.iter().all(|e| e
        .path
        .starts_with("/apis/batch.volcano.sh/v1alpha1/namespaces/default/jobs/")));
    assert_eq!(running.metrics.deletions("VolcanoJob"), 3);
    running.stop().await;
}

/// A reconciler over a cache the test fills itself, so the cached copy can be made stale on
/// purpose: the state between the cache check and the server's answer.
struct StaleCache {
    cache: Arc<Store<Assessment>>,
    reconciler: RetentionReconciler,
    metrics: Arc<TtlMetrics>,
}

impl StaleCache {
    async fn reconcile(&self, key: &ObjectKey) -> Result<Action, RetentionError> {
        self.reconciler
            .reconcile(&work_key::<BatchJob>(key.clone()))
            .await
    }
}

fn stale_cache(world: &World, fresh_read: FreshRead) -> StaleCache {
    let metrics = Arc::new(TtlMetrics::new());
    let options = TtlOptions {
        fresh_read,
        ..options()
    };
    let (watch, reconciler) = detached::<BatchJob>(
        world.harness.client.clone(),
        &options,
        Arc::clone(&world.clock),
        Arc::clone(&metrics),
        Arc::new(CollectingRecorder::new()),
    );
    StaleCache {
        cache: Arc::clone(&watch.store),
        reconciler,
        metrics,
    }
}

/// The assessment the controller makes of `object` when its event is decoded.
fn projection(world: &World, object: &Value) -> Assessment {
    judge_object::<BatchJob>(object, world.now())
}

#[tokio::test(start_paused = true)]
async fn a_ttl_extended_after_the_cache_saw_it_expire_is_not_deleted() {
    for fresh_read in [FreshRead::OnConflict, FreshRead::Always] {
        let world = world().await;
        let job = create_job(world.sim(), "extended", Some(0), Some(world.now()));
        let stale = stale_cache(&world, fresh_read);
        stale.cache.apply_added(projection(&world, &job));
        let mut extended = job.clone();
        extended["spec"]["ttlSecondsAfterFinished"] = json!(600);
        world.sim().update(&jobs(), extended).unwrap();

        let key = ObjectKey::new("default", "extended");
        let action = stale.reconcile(&key).await.unwrap();
        assert!(
            matches!(action, Action::RequeueAfter(d) if d > Duration::from_secs(599)),
            "{fresh_read}: {action:?}"
        );
        assert!(untouched(world.sim(), &jobs(), "extended"));
        let methods: Vec<(String, u16)> = requests_for(&world, "extended")
            .into_iter()
            .map(|e| (e.method, e.status))
            .collect();
        let expected: &[(&str, u16)] = match fresh_read {
            // The fast path's preconditions refuse the stale copy; the fresh copy is kept.
            FreshRead::OnConflict => &[("DELETE", 409), ("GET", 200)],
            FreshRead::Always => &[("GET", 200)],
        };
        let expected: Vec<(String, u16)> =
            expected.iter().map(|(m, s)| (m.to_string(), *s)).collect();
        assert_eq!(methods, expected, "{fresh_read}");
        assert_eq!(stale.metrics.deletions("Job"), 0);
        world.harness.sim.shutdown().await;
    }
}

#[tokio::test(start_paused = true)]
async fn a_stale_uid_is_refused_and_the_recreated_job_survives() {
    let world = world().await;
    let old = create_job(world.sim(), "reborn", Some(0), Some(world.now()));
    let stale = stale_cache(&world, FreshRead::OnConflict);
    stale.cache.apply_added(projection(&world, &old));
    world
        .sim()
        .delete(
            &jobs(),
            Some("default"),
            "reborn",
            &DeleteOptions::propagation(Propagation::Background),
        )
        .unwrap();
    let new = create_job(world.sim(), "reborn", Some(0), None);

    let key = ObjectKey::new("default", "reborn");
    let action = stale.reconcile(&key).await.unwrap();
    assert_eq!(action, Action::Done);
    let now = world.sim().get(&jobs(), Some("default"), "reborn").unwrap();
    assert_eq!(now["metadata"]["uid"], new["metadata"]["uid"]);
    assert!(!deletion_requested(Some(&now)));
    let first = &requests_for(&world, "reborn")[0];
    assert_eq!((first.method.as_str(), first.status), ("DELETE", 409));
    assert_eq!(
        first
            .body
            .as_ref()
            .map(|b| b["preconditions"]["uid"].clone()),
        Some(old["metadata"]["uid"].clone())
    );
    world.harness.sim.shutdown().await;
}

#[tokio::test(start_paused = true)]
async fn a_job_deleted_meanwhile_is_no_error() {
    for fresh_read in [FreshRead::OnConflict, FreshRead::Always] {
        let world = world().await;
        let job = create_job(world.sim(), "gone", Some(0), Some(world.now()));
        let stale = stale_cache(&world, fresh_read);
        stale.cache.apply_added(projection(&world, &job));
        world
            .sim()
            .delete(
                &jobs(),
                Some("default"),
                "gone",
                &DeleteOptions::propagation(Propagation::Background),
            )
            .unwrap();
        let key = ObjectKey::new("default", "gone");
        assert_eq!(stale.reconcile(&key).await.unwrap(), Action::Done);
        assert_eq!(stale.metrics.errors("Job", ErrorReason::Api), 0);
        let statuses: Vec<u16> = requests_for(&world, "gone")
            .iter()
            .map(|e| e.status)
            .collect();
        assert_eq!(statuses, [404], "{fresh_read}");
        world.harness.sim.shutdown().await;
    }
}

#[tokio::test(start_paused = true)]
async fn a_key_missing_from_the_cache_is_done_without_a_request() {
    let world = world().await;
    let stale = stale_cache(&world, FreshRead::OnConflict);
    let key = ObjectKey::new("default", "never-seen");
    assert_eq!(stale.reconcile(&key).await.unwrap(), Action::Done);
    assert!(requests_for(&world, "never-seen").is_empty());
    world.harness.sim.shutdown().await;
}
