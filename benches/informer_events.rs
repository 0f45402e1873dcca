//! Event throughput of an informer: watch events per second through to a handler.
//!
//! Run: `cargo bench --bench informer_events`. `harness = false`: it prints its numbers.
//!
//! Two measurements, both with real-sized Jobs (~6 KB of JSON, `tests/job_support`):
//! 1. **The informer alone.** A watch body of `EVENTS` pre-encoded `MODIFIED` lines over
//!    `KEYS` Jobs is fed from memory in 64 KiB chunks (no socket, no server), through the whole
//!    client-side path: watch line decoding into the cached type, the reflector, the cache
//!    write, dispatch to the handler's buffer and the handler's task. Timed from the informer's
//!    start to the handler's last call. For the TTL projection, the typed `Job` and the dynamic
//!    `serde_json::Value`.
//! 2. **End to end.** `KEYS` Jobs in the simulated API server, an informer synced over HTTP,
//!    then `UPDATES` writes through the server's in-process API while the informer watches:
//!    timed from the first write to the handler's last call. The server (write, history, watch
//!    encoding) shares the same 2 cores, so this is a floor for the informer, not its ceiling.

#[path = "../tests/client_support/mod.rs"]
mod client_support;
#[path = "../tests/job_support/mod.rs"]
mod job_support;

use std::marker::PhantomData;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use futures_util::{stream, StreamExt};
use kube_gc::api::{Job, List, ListMeta};
use kube_gc::client::{Api, Error, ListParams, ResourceRef, WatchParams, WatchStream};
use kube_gc::runtime::cache::Cacheable;
use kube_gc::runtime::informer::{HandlerFns, SharedInformer};
use kube_gc::runtime::reflector::{EventStream, ListWatch, Listed, ReflectorConfig};
use kube_gc::sim::SimConfig;
use serde::de::DeserializeOwned;
use serde_json::{json, Value};
use tokio::sync::Notify;
use tokio_util::sync::CancellationToken;

use client_support::{start_with, unthrottled};
use job_support::{jobs, real_sized_job, seed_jobs, TtlJob};

/// Distinct Jobs the events are about.
const KEYS: usize = 1_000;
/// Events fed from memory per measurement (`INFORMER_EVENTS` overrides; a multiple of `KEYS`).
const EVENTS: usize = 200_000;
/// Writes made through the simulated server (`INFORMER_UPDATES` overrides).
const UPDATES: usize = 20_000;
const CHUNK: usize = 64 * 1024;

fn setting(name: &str, default: usize) -> usize {
    std::env::var(name)
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(default)
}

fn main() {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("a tokio runtime");
    let events = setting("INFORMER_EVENTS", EVENTS) / KEYS * KEYS;
    let updates = setting("INFORMER_UPDATES", UPDATES);
    runtime.block_on(async {
        let body = watch_body();
        println!(
            "informer alone: {events} MODIFIED events over {KEYS} Jobs, {:.0} MB of watch body",
            (body.len() * (events / KEYS)) as f64 / 1e6
        );
        from_memory::<TtlJob>("TTL projection (TtlJob)", &body, events).await;
        from_memory::<Job>("typed (kube_gc::api::Job)", &body, events).await;
        from_memory::<Value>("dynamic (serde_json::Value)", &body, events).await;
        end_to_end(updates).await;
    });
}

/// One `MODIFIED` line for each of the `KEYS` Jobs.
fn watch_body() -> Bytes {
    let mut body = Vec::new();
    for i in 0..KEYS {
        let mut job = real_sized_job(i);
        job["metadata"]["uid"] = json!(format!("{i:08x}-1b2c-4d5e-8f90-a1b2c3d4e5f6"));
        job["metadata"]["resourceVersion"] = json!((1000 + i).to_string());
        let line = json!({"type": "MODIFIED", "object": job});
        serde_json::to_writer(&mut body, &line).expect("an event encodes");
        body.push(b'\n');
    }
    Bytes::from(body)
}

/// A source whose list is empty and whose first watch replays `body` `repeats` times,
/// in chunks as a socket would deliver them; later watches never end.
struct Canned<T> {
    body: Bytes,
    repeats: usize,
    watched: AtomicUsize,
    _objects: PhantomData<fn() -> T>,
}

impl<T: DeserializeOwned + Send + 'static> ListWatch for Canned<T> {
    type Object = T;

    async fn list(&self, _params: &ListParams) -> Result<Listed<T>, Error> {
        Ok(Listed::from(List {
            metadata: ListMeta {
                resource_version: Some("1".into()),
                ..ListMeta::default()
            },
            ..List::default()
        }))
    }

    async fn watch(&self, _params: &WatchParams) -> Result<EventStream<T>, Error> {
        if self.watched.fetch_add(1, Ordering::Relaxed) > 0 {
            return Ok(stream::pending().boxed());
        }
        let body = self.body.clone();
        let chunks = (0..self.repeats).flat_map(move |_| {
            let body = body.clone();
            (0..body.len())
                .step_by(CHUNK)
                .map(move |at| Ok::<_, Error>(body.slice(at..(at + CHUNK).min(body.len()))))
        });
        Ok(WatchStream::new(stream::iter(chunks)).boxed())
    }
}

/// A handler that counts adds and updates and wakes the bench at `target`.
fn counting<T: Send + Sync + 'static>(target: usize, done: Arc<Notify>) -> HandlerFns<T> {
    let seen = Arc::new(AtomicUsize::new(0));
    let on_add = {
        let (seen, done) = (Arc::clone(&seen), Arc::clone(&done));
        move |_| count(&seen, target, &done)
    };
    HandlerFns::new()
        .on_add(on_add)
        .on_update(move |_, _| count(&seen, target, &done))
}

fn count(seen: &AtomicUsize, target: usize, done: &Notify) {
    if seen.fetch_add(1, Ordering::Relaxed) + 1 == target {
        done.notify_one();
    }
}

async fn from_memory<T>(what: &str, body: &Bytes, events: usize)
where
    T: DeserializeOwned + Cacheable + Send + Sync + 'static,
{
    let source = Canned::<T> {
        body: body.clone(),
        repeats: events / KEYS,
        watched: AtomicUsize::new(0),
        _objects: PhantomData,
    };
    let informer = SharedInformer::new("jobs.batch", source, ReflectorConfig::default());
    let done = Arc::new(Notify::new());
    let _registration = informer.add_handler(counting::<T>(events, Arc::clone(&done)));
    let stop = CancellationToken::new();
    let started = Instant::now();
    let running = tokio::spawn(informer.clone().run(stop.clone()));
    tokio::time::timeout(Duration::from_secs(600), done.notified())
        .await
        .expect("every event reaches the handler");
    report(what, events, started.elapsed());
    stop.cancel();
    running.await.expect("the informer stops");
}

fn report(what: &str, events: usize, elapsed: Duration) {
    println!(
        "{what:<40} {events} events in {:>6.2} s: {:>8.0} events/s",
        elapsed.as_secs_f64(),
        events as f64 / elapsed.as_secs_f64()
    );
}

/// Writes through the simulated server while an informer watches it over HTTP.
async fn end_to_end(updates: usize) {
    let harness = start_with(SimConfig::default(), unthrottled()).await;
    seed_jobs(&harness.sim, KEYS);
    let api: Api<TtlJob> = Api::dynamic(harness.client.clone(), ResourceRef::of::<Job>(), None);
    // Shared with the writer thread; the server stops when the last handle is dropped.
    let sim = Arc::new(harness.sim);
    let informer = SharedInformer::new("jobs.batch", api, ReflectorConfig::default());
    let done = Arc::new(Notify::new());
    // The initial list brings KEYS adds; then one update per write.
    let _registration = informer.add_handler(counting::<TtlJob>(KEYS + updates, Arc::clone(&done)));
    let stop = CancellationToken::new();
    let running = tokio::spawn(informer.clone().run(stop.clone()));
    informer
        .synced()
        .wait(&stop)
        .await
        .expect("the informer syncs");

    let current: Vec<Value> = sim.list(&jobs(), None).expect("the Jobs are listed");
    let started = Instant::now();
    let writer_sim = Arc::clone(&sim);
    let writer = tokio::task::spawn_blocking(move || {
        let gvr = jobs();
        for n in 0..updates {
            let mut job = current[n % current.len()].clone();
            job["metadata"]["labels"]["generation"] = json!(n.to_string());
            // Unconditional: no resourceVersion to check.
            if let Some(meta) = job["metadata"].as_object_mut() {
                meta.remove("resourceVersion");
            }
            writer_sim.update(&gvr, job).expect("the write is accepted");
        }
    });
    let written = writer.await.map(|()| started.elapsed());
    tokio::time::timeout(Duration::from_secs(600), done.notified())
        .await
        .expect("every update reaches the handler");
    let elapsed = started.elapsed();
    let written = written.expect("the writer finishes");
    println!(
        "end to end over HTTP: {updates} writes in {:.2} s ({:.0}/s, the server alone)",
        written.as_secs_f64(),
        updates as f64 / written.as_secs_f64()
    );
    report("end to end (TtlJob, sim over HTTP)", updates, elapsed);
    stop.cancel();
    running.await.expect("the informer stops");
    drop(sim);
}
