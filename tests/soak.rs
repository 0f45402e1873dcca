//! The seeded fault-injection soak: the real controllers, through the manager,
//! against a simulated API server injecting 5xx, 429s, latency, watch cuts, API server restarts
//! with etcd compactions (watch caches rebuilt: every reflector relists), with one controller crash — and the invariants that prove nothing wrong was deleted
//! and nothing due was left behind. See `soak_support` for the workload and the checks.
//!
//! Two checks live here rather than in `soak_support`, because they need the whole process:
//! - **no task leak:** tasks alive on the runtime (connections closed) after the last manager
//!   stopped equal those before the first started, although one manager crashed in between;
//! - **bounded memory:** the heap's peak during each seed is printed (a counting allocator in
//!   this binary; server, journal and controllers together), and the heap left once a seed's
//!   world is dropped must not grow from one seed to the next.
//!
//! - `cargo test --test soak`: the CI-sized run over [`CI_SEEDS`] and [`REGRESSION_SEEDS`].
//! - `KUBE_GC_SOAK_SEED=n`: replay one seed.
//! - `KUBE_GC_SOAK_SECONDS=s KUBE_GC_SOAK_SEEDS=k`: the long run, `s` simulated seconds of
//!   workload on each of `k` seeds, printing each run's numbers
//!   (`cargo test --test soak -- --nocapture long_soak`).

mod client_support;
mod memory_support;
mod soak_support;
mod ttl_support;

use std::time::Duration;

use soak_support::{run, sim_config, SoakConfig};

/// Seeds every CI run soaks.
const CI_SEEDS: &[u64] = &[1, 2, 4];

/// Seeds that once broke an invariant, kept so they stay fixed.
/// - 3: after the controller restart, discovery of `batch.volcano.sh` failed (an injected 503)
///   and the manager took the Volcano Job resource for "not served", skipping volcano-job-ttl
///   for the life of the process; expired Volcano Jobs were never deleted. Fixed in
///   `manager::init_ttl`: a resource missing because its group's discovery failed is an error.
const REGRESSION_SEEDS: &[u64] = &[3];

fn env_number(name: &str) -> Option<u64> {
    std::env::var(name).ok()?.parse().ok()
}

/// How much the heap may grow from one seed's end to the next's before it counts as a leak.
/// Each seed builds and drops a whole world (server, journal, history, manager); what stays is
/// lazily built process state; measured at 0 B once the server's aborted tasks are reaped.
const HEAP_GROWTH_PER_SEED_LIMIT: usize = 1 << 20;

/// Runs seeds one after another, checking that the heap left behind by each (its world dropped)
/// does not grow from seed to seed.
async fn soak_seeds(seeds: impl IntoIterator<Item = u64>, config: impl Fn(u64) -> SoakConfig) {
    let mut left_by_previous: Option<usize> = None;
    for seed in seeds {
        let left = soak(config(seed)).await;
        if let Some(previous) = left_by_previous {
            assert!(
                left <= previous + HEAP_GROWTH_PER_SEED_LIMIT,
                "the heap grew by {} B over seed {seed} (from {previous} B to {left} B): a leak",
                left.saturating_sub(previous),
            );
        }
        left_by_previous = Some(left);
    }
}

/// Runs one seed on a fresh world; panics, naming the seed, on any violation. Returns the heap
/// still allocated once the world is gone.
async fn soak(config: SoakConfig) -> usize {
    memory_support::reset_peak();
    let heap_before = memory_support::live_bytes();
    let world = ttl_support::world_with(sim_config(config.seed)).await;
    let report = run(&world, &config).await;
    let heap_peak = memory_support::peak_bytes();
    drop(world);
    // The server's tasks were aborted with it; their memory goes once the runtime reaps them.
    tokio::time::sleep(Duration::from_secs(1)).await;
    let heap_after = memory_support::live_bytes();
    println!(
        "{report}\nseed {}: heap before {} KiB, peak {} KiB, after (world dropped) {} KiB",
        config.seed,
        heap_before >> 10,
        heap_peak >> 10,
        heap_after >> 10
    );
    assert!(
        report.violations.is_empty(),
        "soak seed {} broke invariants (replay with KUBE_GC_SOAK_SEED={}):\n{}",
        config.seed,
        config.seed,
        report.violations.join("\n")
    );
    assert!(report.controller_deletions > 0, "the soak deleted nothing");
    heap_after
}

#[tokio::test(start_paused = true)]
async fn ci_soak_over_several_seeds() {
    let seeds: Vec<u64> = match env_number("KUBE_GC_SOAK_SEED") {
        Some(seed) => vec![seed],
        None => CI_SEEDS.iter().chain(REGRESSION_SEEDS).copied().collect(),
    };
    soak_seeds(seeds, SoakConfig::ci).await;
}

#[tokio::test(start_paused = true)]
async fn long_soak() {
    let Some(seconds) = env_number("KUBE_GC_SOAK_SECONDS") else {
        return; // Only on demand: see the module documentation.
    };
    let seeds = env_number("KUBE_GC_SOAK_SEEDS").unwrap_or(1);
    let first = env_number("KUBE_GC_SOAK_SEED").unwrap_or(1000);
    soak_seeds(first..first + seeds, |seed| SoakConfig {
        duration: Duration::from_secs(seconds),
        ..SoakConfig::ci(seed)
    })
    .await;
}

/// The checks are not vacuous: a client deleting an unfinished Job, an unexpired one, a Pod whose
/// owner is live, and a Job without a UID precondition is caught on every count; an expired Job
/// left in place is reported as due.
#[tokio::test(start_paused = true)]
async fn the_invariants_catch_wrong_deletions() {
    use kube_gc::api::{DeleteOptions, Preconditions};
    use kube_gc::client::{Api, ResourceRef};
    use ttl_support::{create_job, jobs};

    let world = ttl_support::world_with(sim_config(0)).await;
    let sim = world.sim();
    let now = world.now();
    let running = create_job(sim, "running", Some(0), None);
    let unexpired = create_job(sim, "unexpired", Some(3600), Some(now));
    create_job(sim, "no-precondition", Some(3600), Some(now));
    create_job(sim, "expired-left", Some(0), Some(now));
    let rs = sim
        .create(
            &soak_support::replicasets(),
            serde_json::json!({"apiVersion": "apps/v1", "kind": "ReplicaSet",
                "metadata": {"name": "rs", "namespace": "default"}, "spec": {}}),
        )
        .unwrap();
    let pod = sim
        .create(
            &soak_support::pods(),
            serde_json::json!({"apiVersion": "v1", "kind": "Pod",
                "metadata": {"name": "pod", "namespace": "default", "ownerReferences": [
                    {"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "rs",
                     "uid": rs["metadata"]["uid"], "controller": true}]},
                "spec": {"containers": [{"name": "main", "image": "busybox:1.36"}]}}),
        )
        .unwrap();

    let client = world.harness.client.clone();
    let with_uid = |object: &serde_json::Value| DeleteOptions {
        preconditions: Some(Preconditions {
            uid: object["metadata"]["uid"].as_str().map(String::from),
            resource_version: None,
        }),
        ..DeleteOptions::default()
    };
    let job_api: Api<serde_json::Value> = Api::dynamic(
        client.clone(),
        ResourceRef::new("batch", "v1", "jobs", "Job", true),
        Some("default"),
    );
    let pod_api: Api<serde_json::Value> = Api::dynamic(
        client,
        ResourceRef::new("", "v1", "pods", "Pod", true),
        Some("default"),
    );
    job_api
        .delete("running", &with_uid(&running))
        .await
        .unwrap();
    job_api
        .delete("unexpired", &with_uid(&unexpired))
        .await
        .unwrap();
    job_api
        .delete("no-precondition", &DeleteOptions::default())
        .await
        .unwrap();
    pod_api.delete("pod", &with_uid(&pod)).await.unwrap();

    let report = soak_support::check_invariants(sim, world.now(), Duration::ZERO);
    let all = report.violations.join("\n");
    for expected in [
        "Job running",
        "Job unexpired",
        "DELETE /apis/batch/v1/namespaces/default/jobs/no-precondition without a UID",
        "Pod pod deleted",
        "expired-left expired but still present",
    ] {
        assert!(all.contains(expected), "missing {expected:?} in:\n{all}");
    }
    assert!(sim.get(&jobs(), Some("default"), "expired-left").is_ok());
}

/// A manager whose task dies mid-run (aborted, as in the soak's crash) leaves no task behind:
/// every task it started is owned by something that stops it on drop. (The garbage collector's
/// graph builder once outlived it, keeping both of its queues' timer tasks alive.)
#[tokio::test(start_paused = true)]
async fn a_crashed_manager_leaves_no_task_behind() {
    let world = ttl_support::world_with(sim_config(0)).await;
    let sim = world.sim();
    let runtime = tokio::runtime::Handle::current();
    let before = soak_support::quiet_task_count(sim).await;
    let mut running = soak_support::start_manager(&world).await;
    tokio::time::sleep(Duration::from_secs(20)).await;
    assert!(
        runtime.metrics().num_alive_tasks() > before + 10,
        "the manager's controllers are running"
    );
    assert!(running.crash().await, "the task was aborted");
    let after = soak_support::quiet_task_count(sim).await;
    assert_eq!(
        after, before,
        "tasks alive after the crash, against before the start"
    );
}
