//! What an informer's cache holds per Job after its initial sync, when it decodes the list
//! straight into the TTL controller's projection: 5,000 real-sized Jobs (~6 KB of JSON each, see
//! `tests/job_support`) listed over HTTP from the simulated API server, counted by a counting
//! allocator that exists only in this test binary.
//!
//! The target is under 300 bytes per cached Job. The whole list body is ~30 MB; since
//! the decoder never holds it, and drops each item's text as soon as the item is decoded, what
//! stays after the sync is the cache alone.
//!
//! The cache's bytes are what dropping it frees, on a runtime of one thread, so that nothing
//! else allocates or frees meanwhile. The process's growth over the sync is printed too but not
//! judged: it also counts the client's connections, and whether the watch found the list's
//! connection back in the pool or opened one of its own (a few hundred KB, whatever the number
//! of Jobs) depends on timing.
//!
//! Run `cargo test --test informer_sync_memory -- --nocapture` to see the numbers; the benchmark
//! `benches/informer_sync.rs` measures the same at 100,000 Jobs. This binary holds one test so no
//! other test's allocations are counted.

mod client_support;
mod job_support;
mod memory_support;

use std::sync::Arc;
use std::time::Duration;

use kube_gc::client::{Api, ListParams, ResourceRef};
use kube_gc::runtime::informer::SharedInformer;
use kube_gc::runtime::reflector::ReflectorConfig;
use kube_gc::sim::SimConfig;
use tokio_util::sync::CancellationToken;

use client_support::{start_with, unthrottled};
use job_support::{seed_jobs, TtlJob};
use memory_support::live_bytes;

const JOBS: usize = 5_000;

#[tokio::test]
async fn a_synced_cache_of_ttl_projections_holds_under_300_bytes_per_job() {
    let harness = start_with(SimConfig::default(), unthrottled()).await;
    seed_jobs(&harness.sim, JOBS);
    let api: Api<TtlJob> = Api::dynamic(
        harness.client.clone(),
        ResourceRef::of::<kube_gc::api::Job>(),
        None,
    );

    // A first list opens the client's connection and grows its buffers to what a large body
    // needs; those (a few hundred KB, whatever the number of Jobs) are not the cache's cost.
    let warm_up = api
        .list(&ListParams::default())
        .await
        .expect("a first list");
    assert_eq!(warm_up.items.len(), JOBS);
    drop(warm_up);

    let before = live_bytes();
    let informer = SharedInformer::new("jobs.batch", api.clone(), ReflectorConfig::default());
    let stop = CancellationToken::new();
    let running = tokio::spawn(informer.clone().run(stop.clone()));
    let synced = informer.synced();
    let waited = tokio::time::timeout(Duration::from_secs(120), synced.wait(&stop)).await;
    assert!(matches!(waited, Ok(Ok(()))), "the informer did not sync");

    let cached = informer.store().list();
    assert_eq!(cached.len(), JOBS);
    let job = cached
        .iter()
        .find(|j| j.key.as_str() == "team-07/nightly-report-00000007");
    let job = job.expect("job 7 is cached");
    assert_eq!(job.ttl_seconds, Some(3600));
    assert_eq!(job.finished_at_unix, Some(1_795_319_132)); // 2026-11-22T03:45:32Z
    assert!(!job.being_deleted);
    assert_eq!(job.uid.len(), 36);
    drop(cached);

    let grew = live_bytes().saturating_sub(before);
    stop.cancel();
    running.await.expect("the informer stops cleanly");
    let store = Arc::clone(informer.store());
    drop(informer);
    assert_eq!(
        Arc::strong_count(&store),
        1,
        "the informer let go of its cache"
    );
    // The cache, its keys and the projections; nothing else runs during a synchronous drop on
    // this one-thread runtime.
    let with_cache = live_bytes();
    drop(store);
    let held = with_cache.saturating_sub(live_bytes());
    let per_job = held as f64 / JOBS as f64;
    println!(
        "{JOBS} real-sized Jobs synced as TTL projections: the cache holds {held} bytes, \
         {per_job:.1} per Job (the process grew {grew} bytes over the sync)"
    );
    assert!(per_job < 300.0, "{per_job:.1} bytes per cached Job");
}
