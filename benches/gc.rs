//! Benchmark of the ownerReference garbage collector (`harness = false`, prints its numbers):
//!
//! 1. **Graph build**: 100,000 objects (1,000 owners × 99 dependents, plus a chain of 1,000
//!    objects each owning the next) applied to the graph as a monitor's events would be; the
//!    time, and the heap bytes per node measured with a counting global allocator (this binary
//!    only; the events themselves are built beforehand and not counted).
//! 2. **Cascades** through the simulated API server over real sockets: `OWNERS` ReplicaSets with
//!    `DEPENDENTS` Pods in all, the owners deleted at once with Background or Foreground
//!    propagation; the time until every dependent (and, for Foreground, every owner) is gone,
//!    and the requests the collector sent per collected object (GET / DELETE / PATCH from the
//!    server's journal).
//!
//! Environment (defaults in brackets): `GC_BENCH_DEPENDENTS` [10000], `GC_BENCH_OWNERS` [100],
//! `GC_BENCH_QPS` [`0,40`]: client QPS values to run the cascades at, `0` meaning unthrottled
//! (kube-controller-manager runs its collector's client at twice `--kube-api-qps`, so 40 is the
//! upstream default, and kube-gc's manager does the same: the client is built here as the
//! manager builds it, `--kube-api-qps` at half and `Client::for_component(…, 2.0)`), burst
//! 1.5 × QPS; `GC_BENCH_GRAPH` [100000]: objects in the graph phase.
//!
//! Run with `cargo bench --bench gc`; results are in `docs/performance.md`.

use std::sync::Arc;
use std::time::{Duration, Instant};

use kube_gc::api::{ObjectMeta, OwnerReference, PartialObjectMetadata, PropagationPolicy};
use kube_gc::client::{Client, ClientOptions};
use kube_gc::controllers::garbagecollector::builder::{apply, Effects, GraphEvent};
use kube_gc::controllers::garbagecollector::graph::Graph;
use kube_gc::controllers::garbagecollector::identity::Gvk;
use kube_gc::controllers::garbagecollector::{GarbageCollector, GcOptions};
use kube_gc::sim::faults::Verb;
use kube_gc::sim::Connect as _;
use kube_gc::sim::{DeleteOptions, Gvr, Propagation, SimConfig, SimServer};
use serde_json::json;
use tokio_util::sync::CancellationToken;

#[path = "../tests/memory_support/mod.rs"]
mod memory_support;

fn env_usize(name: &str, default: usize) -> usize {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

fn uid(kind: &str, i: usize) -> String {
    format!(
        "{:08x}-{kind:0>4.4}-4000-8000-{i:012x}",
        i * 2_654_435_761 % 0xffff_ffff
    )
}

fn metadata(
    name: String,
    uid: String,
    owner: Option<(&str, &str, String, String)>,
) -> PartialObjectMetadata {
    let owner_references = owner
        .map(|(api_version, kind, name, uid)| OwnerReference {
            api_version: api_version.into(),
            kind: kind.into(),
            name,
            uid,
            controller: Some(true),
            block_owner_deletion: Some(true),
        })
        .into_iter()
        .collect();
    PartialObjectMetadata {
        metadata: ObjectMeta {
            name: Some(name),
            namespace: Some(format!("namespace-{:02}", uid.len() % 7)),
            uid: Some(uid),
            resource_version: Some("123456789".into()),
            owner_references,
            ..Default::default()
        },
        ..Default::default()
    }
}

/// The graph phase's events: owners, their dependents, and a chain.
fn graph_events(objects: usize) -> Vec<GraphEvent> {
    let rs = Arc::new(Gvk {
        api_version: "apps/v1".into(),
        kind: "ReplicaSet".into(),
    });
    let pod = Arc::new(Gvk {
        api_version: "v1".into(),
        kind: "Pod".into(),
    });
    let chain = (objects / 100).max(1);
    let owners = (objects - chain) / 100;
    let mut events = Vec::with_capacity(objects);
    for o in 0..owners {
        let owner_name = format!("web-{o:05}-7d9c8b6f5");
        let owner_uid = uid("rs", o);
        events.push(GraphEvent::Upserted {
            gvk: Arc::clone(&rs),
            object: metadata(owner_name.clone(), owner_uid.clone(), None),
        });
        for d in 0..99 {
            let object = metadata(
                format!("{owner_name}-{d:05}"),
                uid("pod", o * 100 + d),
                Some((
                    "apps/v1",
                    "ReplicaSet",
                    owner_name.clone(),
                    owner_uid.clone(),
                )),
            );
            events.push(GraphEvent::Upserted {
                gvk: Arc::clone(&pod),
                object,
            });
        }
    }
    for c in 0..objects.saturating_sub(events.len()) {
        let owner = (c > 0).then(|| {
            (
                "v1",
                "ConfigMap",
                format!("chain-{:05}", c - 1),
                uid("cm", c - 1),
            )
        });
        events.push(GraphEvent::Upserted {
            gvk: Arc::new(Gvk {
                api_version: "v1".into(),
                kind: "ConfigMap".into(),
            }),
            object: metadata(format!("chain-{c:05}"), uid("cm", c), owner),
        });
    }
    events
}

fn graph_phase(objects: usize) {
    // Measured from before the events exist: they are consumed (and freed) as they are applied,
    // so what is left allocated at the end is the graph alone.
    let before = memory_support::live_bytes();
    let events = graph_events(objects);
    let started = Instant::now();
    let mut graph = Graph::new();
    let mut effects = Effects::default();
    for event in events {
        apply(&mut graph, event, &mut effects);
    }
    let elapsed = started.elapsed();
    let queued = effects.attempt_to_delete.len() + effects.attempt_to_orphan.len();
    drop(effects);
    let bytes = memory_support::live_bytes().saturating_sub(before);
    let nodes = graph.len().max(1) as f64;
    println!(
        "graph build: {} nodes in {:.1} ms ({:.2} µs/object, {queued} keys queued); \
         {:.0} bytes per node ({:.1} MiB)",
        graph.len(),
        elapsed.as_secs_f64() * 1e3,
        elapsed.as_secs_f64() * 1e6 / nodes,
        bytes as f64 / nodes,
        bytes as f64 / (1024.0 * 1024.0),
    );
}

fn pods() -> Gvr {
    Gvr::new("", "v1", "pods")
}

fn replicasets() -> Gvr {
    Gvr::new("apps", "v1", "replicasets")
}

async fn cascade(policy: Propagation, owners: usize, dependents: usize, qps: f64) {
    let config = SimConfig {
        journal_capacity: 4 * dependents + 10_000,
        history_limit: 4 * (owners + dependents) + 10_000,
        ..SimConfig::default()
    };
    let sim = match SimServer::start(config).await {
        Ok(sim) => sim,
        Err(e) => panic!("starting the simulated server: {e}"),
    };
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("temp dir: {e}"));
    let config = sim
        .client_config(&dir.path().join("kubeconfig"))
        .unwrap_or_else(|e| panic!("kubeconfig: {e}"));
    let burst = ((qps * 1.5) as u32).max(1);
    // Built as the manager builds the collector's client: `--kube-api-qps` / `--kube-api-burst`
    // at half the collector's rate, doubled by `for_component` (QPS 40 is `--kube-api-qps 20`).
    let flags = ClientOptions::default().with_rate(qps / 2.0, burst / 2);
    let client = Client::new(&config, &flags)
        .unwrap_or_else(|e| panic!("client: {e}"))
        .for_component("garbagecollector", 2.0);

    for o in 0..owners {
        let rs = sim
            .create(
                &replicasets(),
                json!({"metadata": {"name": format!("rs-{o}"), "namespace": "default"}}),
            )
            .unwrap_or_else(|e| panic!("{e}"));
        let reference = json!({"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": rs["metadata"]["name"],
            "uid": rs["metadata"]["uid"], "controller": true, "blockOwnerDeletion": true});
        for d in (o..dependents).step_by(owners) {
            let pod = json!({"metadata": {"name": format!("pod-{d}"), "namespace": "default",
                "ownerReferences": [reference]}});
            sim.create(&pods(), pod).unwrap_or_else(|e| panic!("{e}"));
        }
    }

    let gc = GarbageCollector::new(client, GcOptions::default());
    let mut handle = gc.handle();
    let stop = CancellationToken::new();
    let task = tokio::spawn(gc.run(stop.clone()));
    let sync_started = Instant::now();
    assert!(handle.wait_ready().await);
    let sync = sync_started.elapsed();

    sim.journal().clear();
    let started = Instant::now();
    for o in 0..owners {
        let options = DeleteOptions::propagation(policy);
        if let Err(e) = sim.delete(
            &replicasets(),
            Some("default"),
            &format!("rs-{o}"),
            &options,
        ) {
            panic!("deleting an owner: {e}");
        }
    }
    loop {
        let pods_left = handle.metrics().deletions(PropagationPolicy::Background)
            < dependents as u64
            || !sim
                .list(&pods(), None)
                .map(|l| l.is_empty())
                .unwrap_or(false);
        let owners_left = !sim
            .list(&replicasets(), None)
            .map(|l| l.is_empty())
            .unwrap_or(false);
        if !pods_left && !owners_left {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let elapsed = started.elapsed();
    let journal = sim.journal();
    let (gets, deletes, patches) = (
        journal.count(Verb::Get),
        journal.count(Verb::Delete),
        journal.count(Verb::Patch),
    );
    let collected = dependents.max(1) as f64;
    println!(
        "{policy:?} cascade, {dependents} dependents of {owners} owners, {}: {:.2} s (graph synced in {:.2} s); \
         requests: {gets} GET, {deletes} DELETE, {patches} PATCH = {:.3} per collected dependent",
        if qps > 0.0 { format!("QPS {qps}/{burst}") } else { "unthrottled".to_string() },
        elapsed.as_secs_f64(),
        sync.as_secs_f64(),
        (gets + deletes + patches) as f64 / collected,
    );
    stop.cancel();
    match task.await {
        Ok(Ok(())) => {}
        other => panic!("the collector did not stop cleanly: {other:?}"),
    }
    sim.shutdown().await;
}

fn main() {
    let objects = env_usize("GC_BENCH_GRAPH", 100_000);
    let dependents = env_usize("GC_BENCH_DEPENDENTS", 10_000);
    let owners = env_usize("GC_BENCH_OWNERS", 100).max(1);
    let qps_list: Vec<f64> = std::env::var("GC_BENCH_QPS")
        .unwrap_or_else(|_| "0,40".into())
        .split(',')
        .filter_map(|q| q.trim().parse().ok())
        .collect();
    graph_phase(objects);
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap_or_else(|e| panic!("runtime: {e}"));
    for qps in qps_list {
        for policy in [Propagation::Background, Propagation::Foreground] {
            runtime.block_on(cascade(policy, owners, dependents, qps));
        }
    }
}
