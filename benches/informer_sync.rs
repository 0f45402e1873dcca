//! Initial sync of an informer over real-sized Jobs from the simulated API server, over HTTP:
//! how long until the cache is synced, and what it then holds per Job.
//!
//! Run: `cargo bench --bench informer_sync` (100,000 Jobs; `INFORMER_SYNC_JOBS=10000` for a
//! quicker look). `harness = false`: it prints its numbers. Memory is counted by a counting
//! global allocator that exists only in this bench binary (requested bytes; the system
//! allocator rounds each request up to its size class on top).
//!
//! What it measures, in order:
//! 1. The server alone: one `resourceVersion=0` LIST read to the end without decoding (the
//!    simulated server answers it in one streamed body, as a real one does from its watch
//!    cache). This also opens and warms the connection the informers then reuse.
//! 2. An informer per representation, each from scratch (new informer, empty cache), timed from
//!    `run` to synced, its memory measured once synced: what the `ttl-after-finished` controller
//!    caches — the retention engine's `Judgement` of each Job under the controller's fixed policy,
//!    computed by the item decoder (`engine::assessing`) —, a typed TTL projection decoded straight
//!    from the wire (`TtlJob`, see `tests/job_support`), metadata-only (`PartialObjectMetadata`), the
//!    crate's typed `Job` (metadata + the spec/status fields a GC reads), and the whole object
//!    as `serde_json::Value` (only up to [`MAX_DYNAMIC`] Jobs: it is ~50 KB per Job).
//!
//! The Jobs are those of `tests/job_support`: ~6 KB of JSON each, ~2.8 KB of it `managedFields`.

#[path = "../tests/client_support/mod.rs"]
mod client_support;
#[path = "../tests/job_support/mod.rs"]
mod job_support;
#[path = "../tests/memory_support/mod.rs"]
mod memory_support;

use std::time::{Duration, Instant};

use futures_util::StreamExt;
use kube_gc::api::{Job, PartialObjectMetadata};
use kube_gc::client::{Api, ApiRequest, Client, ResourceRef};
use kube_gc::controllers::retention::engine::assessing;
use kube_gc::controllers::ttl::{rules, BatchJob};
use kube_gc::runtime::cache::Cacheable;
use kube_gc::runtime::informer::SharedInformer;
use kube_gc::runtime::reflector::{Decoded, ListWatch, MetadataOnly, ReflectorConfig};
use kube_gc::sim::SimConfig;
use serde_json::Value;
use tokio_util::sync::CancellationToken;

use client_support::{start_with, unthrottled};
use job_support::{jobs, seed_jobs, TtlJob};
use memory_support::live_bytes;

/// The most Jobs synced as `serde_json::Value`: a whole object tree is ~50 KB per Job, and the
/// machine is shared. `INFORMER_SYNC_JOBS=20000` measures it.
const MAX_DYNAMIC: usize = 20_000;

fn main() {
    let count: usize = std::env::var("INFORMER_SYNC_JOBS")
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(100_000);
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("a tokio runtime");
    runtime.block_on(run(count));
}

async fn run(count: usize) {
    // A short history: the 2 writes per Job made while seeding are of no use here, and the
    // server should hold only the current objects.
    let config = SimConfig::default().with_history_limit(1_000);
    let harness = start_with(config, unthrottled()).await;
    let started = Instant::now();
    seed_jobs(&harness.sim, count);
    let sample = harness
        .sim
        .list(&jobs(), Some("team-00"))
        .expect("a namespace lists");
    let job_bytes = serde_json::to_vec(&sample[0]).map_or(0, |b| b.len());
    let managed_bytes =
        serde_json::to_vec(&sample[0]["metadata"]["managedFields"]).map_or(0, |b| b.len());
    println!(
        "seeded {count} Jobs in {:.1} s; one Job is {job_bytes} bytes of JSON, \
         {managed_bytes} of them managedFields",
        started.elapsed().as_secs_f64()
    );
    let client = harness.client.clone();

    let (bytes, elapsed) = raw_list(&client).await;
    println!(
        "server alone: LIST resourceVersion=0, {:.0} MB in {:.2} s ({:.0} MB/s), {:.0} bytes per Job",
        bytes as f64 / 1e6,
        elapsed.as_secs_f64(),
        bytes as f64 / 1e6 / elapsed.as_secs_f64(),
        bytes as f64 / count as f64,
    );

    let jobs_api = |client: &Client| Api::<Job>::all(client.clone());
    let judged = Decoded::new(
        Api::dynamic(client.clone(), ResourceRef::of::<Job>(), None),
        assessing(std::sync::Arc::new(rules::<BatchJob>()), chrono::Utc::now),
    );
    sync("ttl-after-finished's judgements", judged, count).await;
    let ttl: Api<TtlJob> = Api::dynamic(client.clone(), ResourceRef::of::<Job>(), None);
    sync("TTL projection (TtlJob)", ttl, count).await;
    sync::<_, PartialObjectMetadata>(
        "metadata-only (PartialObjectMetadata)",
        MetadataOnly(jobs_api(&client)),
        count,
    )
    .await;
    sync("typed (kube_gc::api::Job)", jobs_api(&client), count).await;
    if count <= MAX_DYNAMIC {
        let dynamic: Api<Value> = Api::dynamic(client.clone(), ResourceRef::of::<Job>(), None);
        sync("dynamic (serde_json::Value)", dynamic, count).await;
    } else {
        println!("dynamic (serde_json::Value): skipped above {MAX_DYNAMIC} Jobs (~50 KB each)");
    }
    harness.sim.shutdown().await;
}

/// Reads a whole `resourceVersion=0` list body without decoding it: bytes and time.
async fn raw_list(client: &Client) -> (usize, Duration) {
    let mut url = ResourceRef::of::<Job>().collection_url(client.server(), None);
    url.set_query(Some("resourceVersion=0"));
    let started = Instant::now();
    let response = client
        .send(&ApiRequest::get(url))
        .await
        .expect("the list is answered");
    let mut body = response.bytes_stream();
    let mut bytes = 0;
    while let Some(chunk) = body.next().await {
        bytes += chunk.expect("the body arrives").len();
    }
    (bytes, started.elapsed())
}

/// Runs a fresh informer on `source` until synced; prints the time and the bytes held per Job.
async fn sync<L, T>(what: &str, source: L, count: usize)
where
    L: ListWatch<Object = T>,
    T: Cacheable + Send + Sync + 'static,
{
    let before = live_bytes();
    let informer = SharedInformer::new("jobs.batch", source, ReflectorConfig::default());
    let stop = CancellationToken::new();
    let started = Instant::now();
    let running = tokio::spawn(informer.clone().run(stop.clone()));
    informer
        .synced()
        .wait(&stop)
        .await
        .expect("the informer syncs");
    let elapsed = started.elapsed();
    let held = live_bytes().saturating_sub(before);
    assert_eq!(informer.store().len(), count);
    println!(
        "{what:<40} synced in {:>6.2} s, {:>8.0} bytes per cached Job ({:.0} MB held)",
        elapsed.as_secs_f64(),
        held as f64 / count as f64,
        held as f64 / 1e6,
    );
    stop.cancel();
    running.await.expect("the informer stops");
    drop(informer);
}
