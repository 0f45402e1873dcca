//! TTL-after-finished benchmark (`harness = false`, prints its numbers): the real controller,
//! over HTTP, against the simulated API server in the same process.
//!
//! 1. **Backlog**: N Jobs that all expired before the controller starts; time until every one is
//!    deleted, and requests per Job (from the server's journal). Unthrottled, with both
//!    `--ttl-fresh-read` modes (the controller's own ceiling), and at kube-controller-manager's
//!    default 20 QPS / burst 30 (efficiency against the N / QPS limit).
//! 2. **Staggered**: Jobs expiring at twenty different seconds; deletion latency after expiry,
//!    p50 / p99 / max, unthrottled; and twenty Jobs, one per second (`single`).
//! 3. **Managed**: the whole manager at kube-controller-manager's default 20 QPS /
//!    burst 30, against a server serving 45 resource types, twenty Jobs expiring one per
//!    second from the first second after start; deletion latency after expiry p50 / p99 / max,
//!    with every controller (`all`: the garbage collector starts a monitor per resource
//!    meanwhile) beside the TTL controller alone (`ttl-only`). Each client has its own token
//!    bucket, so the monitors' lists and watches must not delay a deletion.
//! 4. **Memory**: heap held by the controller (informer cache of the engine's judgements, queue
//!    with one timer per Job) with N finished Jobs cached, all waiting for a one-day TTL; counted with a
//!    counting allocator as the growth of live bytes when the controller starts (the simulated
//!    server's own objects are already allocated before, and are not counted).
//!
//! Sizes (environment): `TTL_BENCH_JOBS` (backlog, unthrottled; 10000),
//! `TTL_BENCH_THROTTLED_JOBS` (backlog at 20 QPS; 2000 — 10000 takes ≈ 500 s),
//! `TTL_BENCH_STAGGERED_JOBS` (2000), `TTL_BENCH_MEMORY_JOBS` (100000);
//! `TTL_BENCH_ONLY=backlog,throttled,staggered,single,managed,memory` picks parts (`single`: twenty
//! Jobs, one per expiry second, so each deletion's latency is its own).
//!
//! Run with `cargo bench --bench ttl`; results are discussed in `docs/performance.md`.

use std::sync::Arc;
use std::time::Duration;

use chrono::{DateTime, Utc};
use kube_gc::client::{Client, ClientOptions};
use kube_gc::clock::SystemClock;
use kube_gc::controllers::ttl::{BatchJob, FreshRead, TtlController, TtlMetrics, TtlOptions};
use kube_gc::controllers::Wiring;
use kube_gc::manager::{ControllerSelection, Manager, ManagerOptions};
use kube_gc::sim::Connect as _;
use kube_gc::sim::{Gvr, SimConfig, SimServer};
use serde_json::json;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

#[path = "../tests/memory_support/mod.rs"]
mod memory_support;

const JOB_PATH: &str = "/apis/batch/v1/namespaces/default/jobs/";

fn env_usize(name: &str, default: usize) -> usize {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

fn wanted(part: &str) -> bool {
    match std::env::var("TTL_BENCH_ONLY") {
        Ok(parts) => parts.split(',').any(|p| p.trim() == part),
        Err(_) => true,
    }
}

fn jobs() -> Gvr {
    Gvr::new("batch", "v1", "jobs")
}

fn whole_seconds(at: DateTime<Utc>) -> DateTime<Utc> {
    DateTime::from_timestamp(at.timestamp(), 0).unwrap_or(at)
}

/// A Job shaped like a real one (pod template, labels), finished at `finished` with `ttl`.
fn create_finished_job(sim: &SimServer, name: &str, ttl: i32, finished: DateTime<Utc>) {
    let job = json!({"apiVersion": "batch/v1", "kind": "Job",
        "metadata": {"name": name, "namespace": "default",
            "labels": {"app": "batch-bench", "batch.kubernetes.io/job-name": name}},
        "spec": {"ttlSecondsAfterFinished": ttl, "backoffLimit": 6, "completions": 1,
            "template": {"metadata": {"labels": {"app": "batch-bench"}},
                "spec": {"restartPolicy": "Never", "containers": [{"name": "main",
                    "image": "registry.example.com/batch/worker:1.2.3",
                    "command": ["/bin/worker", "--input", "s3://bucket/input", "--output", "s3://bucket/output"],
                    "resources": {"requests": {"cpu": "500m", "memory": "256Mi"}}}]}}}});
    let mut created = match sim.create(&jobs(), job) {
        Ok(created) => created,
        Err(e) => panic!("create {name}: {e}"),
    };
    created["status"] = json!({"succeeded": 1, "conditions": [{"type": "Complete", "status": "True",
        "lastTransitionTime": finished.to_rfc3339_opts(chrono::SecondsFormat::Secs, true)}]});
    if let Err(e) = sim.update_status(&jobs(), created) {
        panic!("finish {name}: {e}");
    }
}

/// A server holding `n` finished Jobs made by `ttl_of`, and a client for it.
async fn server_with(
    n: usize,
    finished: DateTime<Utc>,
    ttl_of: impl Fn(usize) -> i32,
    options: &ClientOptions,
) -> (SimServer, Client, tempfile::TempDir) {
    let config = SimConfig::default().with_journal_capacity(n * 3 + 10_000);
    let sim = match SimServer::start(config).await {
        Ok(sim) => sim,
        Err(e) => panic!("start the sim: {e}"),
    };
    for i in 0..n {
        create_finished_job(&sim, &format!("job-{i:06}"), ttl_of(i), finished);
    }
    sim.journal().clear();
    let dir = match tempfile::tempdir() {
        Ok(dir) => dir,
        Err(e) => panic!("temp dir: {e}"),
    };
    let client = sim
        .client_config(&dir.path().join("kubeconfig"))
        .map_err(|e| e.to_string())
        .and_then(|c| Client::new(&c, options).map_err(|e| e.to_string()));
    match client {
        Ok(client) => (sim, client, dir),
        Err(e) => panic!("client: {e}"),
    }
}

struct Started {
    metrics: Arc<TtlMetrics>,
    queue: kube_gc::runtime::workqueue::WorkQueue<kube_gc::controllers::retention::engine::WorkKey>,
    synced: kube_gc::runtime::informer::InformerSynced,
    shutdown: CancellationToken,
    task: tokio::task::JoinHandle<Result<(), kube_gc::runtime::controller::ControllerError>>,
}

fn start_controller(client: Client, fresh_read: FreshRead) -> Started {
    let metrics = Arc::new(TtlMetrics::new());
    let options = TtlOptions {
        fresh_read,
        ..TtlOptions::with_workers(5)
    };
    let controller = TtlController::<BatchJob>::builder(client, options)
        .wiring(Wiring::default().clock(Arc::new(SystemClock)))
        .metrics(Arc::clone(&metrics))
        .build();
    let synced = controller.synced();
    let queue = controller.queue().clone();
    let shutdown = CancellationToken::new();
    let task = tokio::spawn(controller.run(shutdown.clone()));
    Started {
        metrics,
        queue,
        synced,
        shutdown,
        task,
    }
}

impl Started {
    async fn stop(self) {
        self.shutdown.cancel();
        if let Ok(Err(e)) = self.task.await {
            eprintln!("controller: {e}");
        }
    }
}

async fn until(condition: impl Fn() -> bool) {
    while !condition() {
        tokio::time::sleep(Duration::from_millis(2)).await;
    }
}

/// Requests naming one Job, per Job.
fn requests_per_job(sim: &SimServer, n: usize) -> f64 {
    let per_object = sim
        .journal()
        .entries()
        .iter()
        .filter(|e| e.path.starts_with(JOB_PATH))
        .count();
    per_object as f64 / n as f64
}

async fn backlog(n: usize, qps: f64, burst: u32, fresh_read: FreshRead) {
    let options = ClientOptions::default().with_rate(qps, burst);
    let (sim, client, _dir) =
        server_with(n, Utc::now() - chrono::Duration::hours(1), |_| 0, &options).await;
    let start = Instant::now();
    let started = start_controller(client, fresh_read);
    let synced = started.synced.clone();
    until(|| synced.has_synced()).await;
    let sync = start.elapsed();
    let metrics = Arc::clone(&started.metrics);
    until(|| metrics.deletions("Job") as usize >= n).await;
    let total = start.elapsed();
    started.stop().await;
    let per_job = requests_per_job(&sim, n);
    let throttle = if qps > 0.0 {
        format!("{qps} QPS / burst {burst}")
    } else {
        "unthrottled".into()
    };
    println!(
        "backlog {n:>6} Jobs, {throttle:<20} fresh-read {fresh_read:<11}: all deleted in {:>7.2} s (list+sync {:.2} s), {:>7.0} Jobs/s, {per_job:.2} requests per Job",
        total.as_secs_f64(),
        sync.as_secs_f64(),
        n as f64 / total.as_secs_f64(),
    );
    if qps > 0.0 {
        // The client lets `burst` through at once, then one request per 1/qps.
        let limit = (n as f64 * per_job - f64::from(burst)).max(0.0) / qps;
        println!(
            "    the {qps} QPS limit allows this in {limit:.1} s: efficiency {:.0} %",
            100.0 * limit / total.as_secs_f64()
        );
    }
    sim.shutdown().await;
}

/// Milliseconds from each `job-<i>`'s expiry (`finished + ttl_of(i)`) to its accepted DELETE,
/// sorted.
fn deletion_latencies(
    sim: &SimServer,
    finished: DateTime<Utc>,
    ttl_of: impl Fn(usize) -> i32,
) -> Vec<f64> {
    let mut latencies: Vec<f64> = sim
        .journal()
        .deletes()
        .iter()
        .filter(|e| e.status == 200)
        .filter_map(|e| {
            let name = e.path.strip_prefix(JOB_PATH)?;
            let i: usize = name.strip_prefix("job-")?.parse().ok()?;
            let expiry = finished + chrono::Duration::seconds(i64::from(ttl_of(i)));
            Some((e.at - expiry).num_microseconds()? as f64 / 1000.0)
        })
        .collect();
    latencies.sort_by(f64::total_cmp);
    latencies
}

/// `n` Jobs whose expiries fall on `SECONDS` different whole seconds (finish times have
/// one-second resolution, so Jobs expiring in the same second expire at the same instant, in
/// upstream as here). With `n == SECONDS` each deletion is alone: its latency. With more, the
/// tail also holds the time to drain each second's burst.
async fn staggered(n: usize) {
    const SECONDS: usize = 20;
    let finished = whole_seconds(Utc::now());
    let ttl_of = |i: usize| 3 + i32::try_from(i % SECONDS).unwrap_or(0);
    let options = ClientOptions::default().with_rate(0.0, 1);
    let (sim, client, _dir) = server_with(n, finished, ttl_of, &options).await;
    let started = start_controller(client, FreshRead::OnConflict);
    let metrics = Arc::clone(&started.metrics);
    until(|| metrics.deletions("Job") as usize >= n).await;
    started.stop().await;
    let latencies = deletion_latencies(&sim, finished, ttl_of);
    let at = |p: f64| latencies[((latencies.len() - 1) as f64 * p).round() as usize];
    let early = latencies.iter().filter(|l| **l < 0.0).count();
    println!(
        "staggered {n} Jobs over {SECONDS} expiry seconds ({} per second), unthrottled: deletion after expiry p50 {:.1} ms, p99 {:.1} ms, max {:.1} ms ({early} before expiry)",
        n.div_ceil(SECONDS), at(0.5), at(0.99), at(1.0)
    );
    sim.shutdown().await;
}

/// The default resources plus custom ones, to `total` resource types.
fn many_resources(total: usize) -> Vec<kube_gc::sim::resources::ResourceDef> {
    let mut resources = kube_gc::sim::resources::default_resources();
    let mut i = 0;
    while resources.len() < total {
        i += 1;
        resources.push(kube_gc::sim::resources::ResourceDef::new(
            "bench.example.com",
            "v1",
            &format!("widgets{i}"),
            &format!("Widget{i}"),
        ));
    }
    resources
}

/// Part 3: the manager with `controllers`, Jobs expiring one per second from the first second.
async fn managed(controllers: &str) {
    const JOBS: usize = 20;
    let resources = many_resources(45);
    let served = resources.len();
    let config = SimConfig::default()
        .with_resources(resources)
        .with_journal_capacity(100_000);
    let sim = match SimServer::start(config).await {
        Ok(sim) => sim,
        Err(e) => panic!("start the sim: {e}"),
    };
    // Finished in the current whole second with TTL 2..=21: each expires in its own second,
    // the first one 1–2 s after start.
    let finished = whole_seconds(Utc::now());
    let ttl_of = |i: usize| 2 + i32::try_from(i).unwrap_or(0);
    for i in 0..JOBS {
        create_finished_job(&sim, &format!("job-{i:06}"), ttl_of(i), finished);
    }
    let dir = match tempfile::tempdir() {
        Ok(dir) => dir,
        Err(e) => panic!("temp dir: {e}"),
    };
    let options = ClientOptions::default().with_rate(20.0, 30);
    let client = sim
        .client_config(&dir.path().join("kubeconfig"))
        .map_err(|e| e.to_string())
        .and_then(|c| Client::new(&c, &options).map_err(|e| e.to_string()));
    let client = match client {
        Ok(client) => client,
        Err(e) => panic!("client: {e}"),
    };
    let selection = match ControllerSelection::parse(&[controllers]) {
        Ok(selection) => selection,
        Err(e) => panic!("controllers: {e}"),
    };
    let manager_options = ManagerOptions {
        controllers: selection,
        ..ManagerOptions::default()
    };
    let shutdown = CancellationToken::new();
    let run = tokio::spawn(Manager::new(client, manager_options).run(shutdown.clone()));
    // Accepted DELETEs (Foreground: without the garbage collector the Jobs stay, marked).
    until(|| {
        sim.journal()
            .deletes()
            .iter()
            .filter(|e| e.status == 200 && e.path.starts_with(JOB_PATH))
            .count()
            >= JOBS
    })
    .await;
    shutdown.cancel();
    if let Ok(Err(e)) = run.await {
        eprintln!("manager: {e}");
    }
    let latencies = deletion_latencies(&sim, finished, ttl_of);
    let at = |p: f64| latencies[((latencies.len() - 1) as f64 * p).round() as usize];
    let monitors = sim.journal().count_sent_by("metadata-informers");
    println!(
        "managed --controllers={controllers}, 20 QPS / burst 30 per client, {served} resource types, {JOBS} Jobs expiring one per second from 1-2 s after start: deletion after expiry p50 {:.1} ms, p99 {:.1} ms, max {:.1} ms; {monitors} monitor requests meanwhile",
        at(0.5), at(0.99), at(1.0)
    );
    sim.shutdown().await;
}

async fn settle() {
    loop {
        let before = memory_support::live_bytes();
        tokio::time::sleep(Duration::from_millis(200)).await;
        if memory_support::live_bytes().abs_diff(before) < 64 * 1024 {
            return;
        }
    }
}

fn peak_rss_mib() -> Option<f64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    let kib: f64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib / 1024.0)
}

async fn memory(n: usize) {
    let options = ClientOptions::default().with_rate(0.0, 1);
    let (sim, client, _dir) = server_with(n, whole_seconds(Utc::now()), |_| 86_400, &options).await;
    settle().await;
    let baseline = memory_support::live_bytes();
    let started = start_controller(client, FreshRead::OnConflict);
    // Every Job judged and its key waiting on a timer for its expiry (the handlers queue a
    // waiting Job for then; nothing is reconciled before).
    until(|| started.queue.debug_snapshot(0).waiting >= n).await;
    settle().await;
    let held = memory_support::live_bytes().saturating_sub(baseline);
    println!(
        "memory: {n} finished Jobs cached and waiting for their TTL: controller heap {:.1} MiB ({:.0} bytes per Job); whole process peak RSS {:.0} MiB (includes the simulated server and its {n} Jobs as JSON)",
        held as f64 / (1024.0 * 1024.0),
        held as f64 / n as f64,
        peak_rss_mib().unwrap_or(f64::NAN),
    );
    started.stop().await;
    sim.shutdown().await;
}

fn main() {
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(e) => panic!("runtime: {e}"),
    };
    runtime.block_on(async {
        if wanted("backlog") {
            let n = env_usize("TTL_BENCH_JOBS", 10_000);
            backlog(n, 0.0, 1, FreshRead::OnConflict).await;
            backlog(n, 0.0, 1, FreshRead::Always).await;
        }
        if wanted("throttled") {
            let n = env_usize("TTL_BENCH_THROTTLED_JOBS", 2_000);
            backlog(n, 20.0, 30, FreshRead::OnConflict).await;
        }
        if wanted("staggered") {
            staggered(env_usize("TTL_BENCH_STAGGERED_JOBS", 2_000)).await;
        }
        if wanted("single") {
            // One Job per expiry second: the latency of a deletion that waits for no other.
            staggered(20).await;
        }
        if wanted("managed") {
            managed("ttl-after-finished").await;
            managed("*").await;
        }
        if wanted("memory") {
            memory(env_usize("TTL_BENCH_MEMORY_JOBS", 100_000)).await;
        }
    });
}
