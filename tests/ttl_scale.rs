//! 10,000 Jobs expiring at once, asserted from the simulated server's request journal: each
//! deleted exactly once, every DELETE Foreground with a UID (and resourceVersion) precondition,
//! one request per Job when nothing changed — and no Job without a TTL, or not finished, ever
//! touched.

mod client_support;
mod ttl_support;

use std::collections::{HashMap, HashSet};

use kube_gc::controllers::ttl::{BatchJob, TtlOptions, DEFAULT_JOB_WORKERS};
use kube_gc::sim::SimConfig;
use serde_json::Value;

use ttl_support::*;

const EXPIRING: usize = 10_000;
const RUNNING: usize = 500;
const NO_TTL: usize = 500;

#[tokio::test(start_paused = true)]
async fn ten_thousand_jobs_expiring_at_once_are_each_deleted_once_with_one_request() {
    let world = world_with(SimConfig::default().with_journal_capacity(100_000)).await;
    let finished = world.now();
    let mut expiring: HashMap<String, Value> = HashMap::new();
    for i in 0..EXPIRING {
        let name = format!("expiring-{i:05}");
        let job = create_job(world.sim(), &name, Some(0), Some(finished));
        expiring.insert(name, job);
    }
    for i in 0..RUNNING {
        create_job(world.sim(), &format!("running-{i:04}"), Some(0), None);
    }
    for i in 0..NO_TTL {
        create_job(world.sim(), &format!("no-ttl-{i:04}"), None, Some(finished));
    }
    world.sim().journal().clear();

    let running = run_controller::<BatchJob>(&world, TtlOptions::with_workers(DEFAULT_JOB_WORKERS));
    eventually("every expired Job deleted", || {
        running.metrics.deletions("Job") as usize >= EXPIRING
    })
    .await;
    running.stop().await;

    let object_prefix = "/apis/batch/v1/namespaces/default/jobs/";
    let per_object: Vec<_> = world
        .sim()
        .journal()
        .entries()
        .into_iter()
        .filter(|e| e.path.starts_with(object_prefix))
        .collect();
    assert_eq!(world.sim().journal().dropped(), 0);
    // One request per Job: the DELETE, nothing else.
    assert_eq!(per_object.len(), EXPIRING, "requests naming one Job");
    let mut deleted = HashSet::new();
    for entry in &per_object {
        let name = entry.path.trim_start_matches(object_prefix).to_owned();
        assert_eq!(entry.method, "DELETE", "{name}");
        assert_eq!(entry.status, 200, "{name}");
        let job = expiring
            .get(&name)
            .unwrap_or_else(|| panic!("{name} must not be deleted"));
        let body = entry.body.clone().unwrap_or_default();
        assert_eq!(body["propagationPolicy"], "Foreground", "{name}");
        assert_eq!(
            body["preconditions"]["uid"], job["metadata"]["uid"],
            "{name}"
        );
        assert_eq!(
            body["preconditions"]["resourceVersion"], job["metadata"]["resourceVersion"],
            "{name}"
        );
        assert!(deleted.insert(name.clone()), "{name} deleted twice");
    }
    assert_eq!(deleted.len(), EXPIRING);
    for job in world.sim().list(&jobs(), Some("default")).unwrap() {
        let name = job["metadata"]["name"]
            .as_str()
            .unwrap_or_default()
            .to_owned();
        let marked = deletion_requested(Some(&job));
        assert_eq!(marked, name.starts_with("expiring-"), "{name}");
    }
    world.harness.sim.shutdown().await;
}
