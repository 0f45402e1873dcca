//! Retention policies benchmark (`harness = false`, prints its numbers).
//!
//! 1. **Memory** (`memory`): heap held by a `Store<Assessment>` — what the engine caches per
//!    object — after N Pods (~3.0 KB of JSON each: labels, annotations, a controlling
//!    ownerReference, a container with env and mounts, conditions, a terminated container
//!    status) are decoded as the engine decodes them (`retention::wire::decode`), judged (`assessment::assess`) and
//!    inserted, as the watch's item decoder and informer do, under three compiled policies:
//!    a `ClusterRetentionPolicy` `pods` with a label selector, one with a CEL `match`, and a
//!    `RetentionPolicy` in one namespace with a history limit (so its assessments keep a group).
//!    Each Pod is governed by exactly one of them. In-process, no HTTP: the JSON of each Pod is
//!    written on the fly and dropped once judged. Counted with the counting allocator of
//!    `tests/memory_support` (requested bytes) as the growth of live bytes.
//! 2. **Decode rate** (`decode`): objects per second from the same real-sized batch/v1 Job
//!    bytes (`tests/job_support::real_sized_job`, ~6 KB with `managedFields`) through (a) a typed
//!    serde projection of a Job (`TypedJob`: the five metadata fields, `spec` and `status` as
//!    `kube_gc::api`'s types — what the TTL controller decoded before it ran on the engine, and
//!    the baseline the target was set against), (b) the retention path
//!    (`Value`, then `assess`) under the `batch-jobs` preset, (c) the same with a CEL `match`.
//!    Then where the time of (c) goes: `Value` building alone, CEL's conversion of the object
//!    alone (`cel::Context::add_variable`), and the whole `eval_bool` on a decoded object.
//! 3. **Deletion latency** (`staggered`, `single`): a `RetentionController` over HTTP against
//!    the simulated server (as `benches/ttl.rs` runs the TTL controller), one
//!    `ClusterRetentionPolicy` `pods` with `ttlSecondsAfterFinished`, finished Pods whose
//!    expiries fall on twenty different seconds from 3 s after start; the journal time of each
//!    accepted DELETE − expiry, p50 / p99 / max. `single`: one Pod per expiry second. With
//!    several Pods per second, also per expiry second: how late the first DELETE arrived and
//!    how long the burst took to drain (the last − the first).
//! 4. **Policy change** (`change`): N finished Pods cached under a policy with a one-day TTL;
//!    the policy's TTL is then shortened so that every Pod is already expired; time from the
//!    update to the first and to the last accepted DELETE (journal times).
//!
//! Sizes (environment): `RETENTION_BENCH_OBJECTS` (memory, comma-separated; `100000,1000000`),
//! `RETENTION_BENCH_DECODES` (decodes per path and round; 50000), `RETENTION_BENCH_STAGGERED_PODS`
//! (2000), `RETENTION_BENCH_CHANGE_PODS` (comma-separated; `1000,10000`),
//! `RETENTION_BENCH_WORKERS` (the controller's workers; `RetentionOptions`' default, 5),
//! `RETENTION_BENCH_PROPAGATION` (the policy's `propagationPolicy`; unset: the preset's,
//! Background; `Foreground` makes the server answer each DELETE with the object),
//! `RETENTION_BENCH_SIM_THREADS` (the default: as many as the machine has cores — the simulated
//! server runs on a runtime of its own, as a real API server runs in a process of its own with
//! a thread per core; 0: it shares the controller's runtime, as it did here until 2026-11-26);
//! `RETENTION_BENCH_TLS=1` (the simulated server serves HTTPS and the client negotiates HTTP/2,
//! as with a real API server; unset: plain HTTP/1.1, on which the targets were set);
//! `RETENTION_BENCH_ONLY=memory,decode,staggered,single,change` picks parts.
//!
//! Run with `cargo bench --bench retention`; results are in `docs/performance.md`.

#[path = "../tests/job_support/mod.rs"]
mod job_support;
#[path = "../tests/memory_support/mod.rs"]
mod memory_support;
#[path = "support/pods.rs"]
mod pods;

use std::collections::BTreeMap;
use std::hint::black_box;
use std::sync::Arc;
use std::time::{Duration, Instant};

use chrono::{DateTime, Utc};
use kube_gc::client::{Client, ClientOptions, ResourceRef};
use kube_gc::controllers::retention::assessment::{
    assess, needed, Assessment, ResourcePolicies, Standing,
};
use kube_gc::controllers::retention::engine::{
    plan_served, RetentionController, RetentionMetrics, RetentionOptions, WatchMap,
};
use kube_gc::controllers::retention::policy::{PolicyId, RetentionPolicyObject};
use kube_gc::controllers::retention::wire::{decode as decode_object, decode_needed};
use kube_gc::controllers::retention::CelExpr;
use kube_gc::controllers::Wiring;
use kube_gc::runtime::cache::Store;
use kube_gc::sim::Connect as _;
use kube_gc::sim::{Gvr, SimConfig, SimServer};
use serde_json::{json, Value};
use tokio_util::sync::CancellationToken;

use pods::{write_pod, PodSpec};

const POD_PATH: &str = "/api/v1/namespaces/default/pods/";

fn env_usize(name: &str, default: usize) -> usize {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

fn env_sizes(name: &str, default: &[usize]) -> Vec<usize> {
    match std::env::var(name) {
        Ok(list) => list
            .split(',')
            .filter_map(|n| n.trim().parse().ok())
            .collect(),
        Err(_) => default.to_vec(),
    }
}

fn wanted(part: &str) -> bool {
    match std::env::var("RETENTION_BENCH_ONLY") {
        Ok(parts) => parts.split(',').any(|p| p.trim() == part),
        Err(_) => true,
    }
}

fn wire_time(at: DateTime<Utc>) -> String {
    at.to_rfc3339_opts(chrono::SecondsFormat::Secs, true)
}

fn whole_seconds(at: DateTime<Utc>) -> DateTime<Utc> {
    DateTime::from_timestamp(at.timestamp(), 0).unwrap_or(at)
}

fn policy(yaml: &str) -> RetentionPolicyObject {
    match serde_saphyr::from_str(yaml) {
        Ok(policy) => policy,
        Err(e) => panic!("policy YAML: {e}\n{yaml}"),
    }
}

/// The rules the engine would judge `resource` with under `policies` (`true`: cluster kind).
fn rules_for(
    policies: &[(RetentionPolicyObject, bool)],
    namespaces: &[String],
    resource: ResourceRef,
) -> Arc<ResourcePolicies> {
    let namespaces: BTreeMap<String, BTreeMap<String, String>> = namespaces
        .iter()
        .map(|n| (n.clone(), BTreeMap::from([("team".to_owned(), n.clone())])))
        .collect();
    let policies = policies.iter().map(|(object, cluster)| (object, *cluster));
    let planned = plan_served(policies, &namespaces, &[resource]);
    for (id, state) in &planned.policies {
        assert!(
            matches!(
                state,
                kube_gc::controllers::retention::engine::PolicyState::Ready { .. }
            ),
            "{id}: {state:?}"
        );
    }
    match planned.watches.into_values().next() {
        Some(watch) => watch.rules,
        None => panic!("nothing to watch"),
    }
}

fn pods_resource() -> ResourceRef {
    ResourceRef::new("", "v1", "pods", "Pod", true)
}

// ---------------------------------------------------------------------------------------------
// 1. Memory

/// Namespaces of the Pods the two cluster policies govern.
const TEAMS: usize = 20;
/// The namespace of the `RetentionPolicy`.
const LOCAL: &str = "ingest";

/// The three policies of the memory measurement.
fn three_policies() -> Vec<(RetentionPolicyObject, bool)> {
    vec![
        (
            policy("metadata: {name: tier-a, generation: 1}\nspec: {preset: pods, includeControlled: true, ttlSecondsAfterFinished: 86400, selector: {matchLabels: {tier: a}}}"),
            true,
        ),
        (
            policy("metadata: {name: tier-b-cel, generation: 1}\nspec: {preset: pods, includeControlled: true, ttlSecondsAfterFinished: 86400, match: \"object.metadata.labels['tier'] == 'b' && object.spec.restartPolicy == 'Never'\"}"),
            true,
        ),
        (
            policy(&format!("metadata: {{name: ingest-history, namespace: {LOCAL}, generation: 1}}\nspec: {{preset: pods, includeControlled: true, ttlSecondsAfterFinished: 86400, successfulHistoryLimit: 50, failedHistoryLimit: 10}}")),
            false,
        ),
    ]
}

/// Pod `i` of the memory measurement: a third under each policy.
fn memory_pod(out: &mut String, i: usize, names: &[String], finished_at: &str) {
    let name = format!(
        "etl-{:07}-{:05x}",
        i / 4,
        i.wrapping_mul(2_654_435_761) & 0xfffff
    );
    let (namespace, tier) = match i % 3 {
        0 => (names[(i / 3) % TEAMS].as_str(), "a"),
        1 => (names[(i / 3) % TEAMS].as_str(), "b"),
        _ => (LOCAL, "c"),
    };
    let phase = if i % 10 == 9 { "Failed" } else { "Succeeded" };
    write_pod(
        out,
        &PodSpec {
            namespace,
            name: &name,
            serial: i,
            tier,
            phase,
            finished_at,
            pods_per_owner: 4,
        },
        true,
    );
}

fn peak_rss_mib() -> Option<f64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    let kib: f64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib / 1024.0)
}

fn memory(n: usize) {
    let mut names: Vec<String> = (0..TEAMS).map(|t| format!("team-{t:02}")).collect();
    names.push(LOCAL.to_owned());
    let rules = rules_for(&three_policies(), &names, pods_resource());
    let now = Utc::now();
    let finished_at = wire_time(now - chrono::Duration::hours(1));
    let mut sample = String::new();
    memory_pod(&mut sample, 0, &names, &finished_at);
    let mut json_bytes = 0usize;

    let baseline = memory_support::live_bytes();
    let store: Store<Assessment> = Store::new();
    let mut buffer = String::with_capacity(4096);
    let mut governed = [0usize; 3];
    let mut other = 0usize;
    let started = Instant::now();
    for i in 0..n {
        memory_pod(&mut buffer, i, &names, &finished_at);
        json_bytes += buffer.len();
        let object: Value = match decode_object(buffer.as_bytes()) {
            Ok(object) => object,
            Err(e) => panic!("pod {i}: {e}"),
        };
        let assessment = assess(&object, &rules, now);
        drop(object);
        match &assessment.standing {
            Standing::Governed(g) => governed[usize::from(g.policy).min(2)] += 1,
            _ => other += 1,
        }
        store.apply_added(assessment);
    }
    let elapsed = started.elapsed();
    drop(buffer);
    let held = memory_support::live_bytes().saturating_sub(baseline);
    assert_eq!(store.len(), n);
    println!(
        "memory {n:>8} Pods ({} bytes of JSON each on average, {} for Pod 0), governed {}/{}/{} by tier-a / tier-b-cel / ingest-history, {other} not governed: Store<Assessment> heap {:.1} MiB = {:.0} bytes per object; decoded and judged in {:.1} s ({:.0} Pods/s, one thread); process peak RSS {:.0} MiB",
        json_bytes / n.max(1),
        sample.len(),
        governed[0],
        governed[1],
        governed[2],
        held as f64 / (1024.0 * 1024.0),
        held as f64 / n as f64,
        elapsed.as_secs_f64(),
        n as f64 / elapsed.as_secs_f64(),
        peak_rss_mib().unwrap_or(f64::NAN),
    );
    drop(store);
}

// ---------------------------------------------------------------------------------------------
// 2. Decode rate

/// `count` distinct real-sized Jobs as the server sends them (uid, resourceVersion and
/// creationTimestamp added).
fn job_bytes(count: usize) -> Vec<Vec<u8>> {
    (0..count)
        .map(|i| {
            let mut job = job_support::real_sized_job(i);
            job["metadata"]["uid"] = json!(pods::uid(0x70b, i));
            job["metadata"]["resourceVersion"] = json!((200_000 + i).to_string());
            job["metadata"]["creationTimestamp"] = json!("2026-11-22T03:40:00Z");
            serde_json::to_vec(&job).unwrap_or_default()
        })
        .collect()
}

/// Objects per second of `decode` over `n` decodes cycling through `jobs`.
/// A typed serde projection of a Job: the baseline of the decode target. Unknown fields are
/// skipped unbuilt, as any `Deserialize` struct skips them.
#[derive(serde::Deserialize)]
#[allow(dead_code)] // decoded to be measured, never read
struct TypedJob {
    #[serde(default)]
    metadata: TypedMeta,
    #[serde(default)]
    spec: Option<kube_gc::api::JobSpec>,
    #[serde(default)]
    status: Option<kube_gc::api::JobStatus>,
}

#[derive(serde::Deserialize, Default)]
#[serde(rename_all = "camelCase")]
#[allow(dead_code)] // decoded to be measured, never read
struct TypedMeta {
    name: Option<String>,
    namespace: Option<String>,
    uid: Option<String>,
    resource_version: Option<String>,
    deletion_timestamp: Option<String>,
}

fn rate(jobs: &[Vec<u8>], n: usize, mut decode: impl FnMut(&[u8])) -> f64 {
    let started = Instant::now();
    for i in 0..n {
        decode(&jobs[i % jobs.len()]);
    }
    n as f64 / started.elapsed().as_secs_f64()
}

/// The watch's item decoder: what the rules read as a `Value`, judged, dropped.
fn retention_path(rules: Arc<ResourcePolicies>, now: DateTime<Utc>) -> impl FnMut(&[u8]) {
    let need = needed(&rules.policies);
    move |bytes: &[u8]| {
        let object: Value = decode_needed(bytes, &need).unwrap_or_default();
        black_box(assess(&object, &rules, now));
    }
}

fn median(mut values: Vec<f64>) -> f64 {
    values.sort_by(f64::total_cmp);
    values[values.len() / 2]
}

fn decode(n: usize) {
    const DISTINCT: usize = 1_000;
    const ROUNDS: usize = 3;
    let jobs = job_bytes(DISTINCT);
    let size = jobs.iter().map(Vec::len).sum::<usize>() / DISTINCT;
    let job_ns: Vec<String> = (0..job_support::NAMESPACES)
        .map(|i| format!("team-{i:02}"))
        .collect();
    const MATCH: &str = "object.metadata.labels['app'] == 'nightly-report'";
    let plain = rules_for(
        &[(
            policy("metadata: {name: jobs, generation: 1}\nspec: {preset: batch-jobs, ttlSecondsAfterFinished: 86400}"),
            true,
        )],
        &job_ns,
        ResourceRef::new("batch", "v1", "jobs", "Job", true),
    );
    let with_cel = rules_for(
        &[(
            policy(&format!("metadata: {{name: jobs-cel, generation: 1}}\nspec: {{preset: batch-jobs, ttlSecondsAfterFinished: 86400, match: \"{MATCH}\"}}")),
            true,
        )],
        &job_ns,
        ResourceRef::new("batch", "v1", "jobs", "Job", true),
    );
    let now = Utc::now();
    // The assessments must say what the engine would: every Job governed.
    for rules in [&plain, &with_cel] {
        let object: Value = decode_object(&jobs[0]).unwrap_or_default();
        assert!(
            assess(&object, rules, now).governed().is_some(),
            "{:?}",
            assess(&object, rules, now)
        );
    }
    let ttl_path = |bytes: &[u8]| {
        let job: Result<TypedJob, _> = serde_json::from_slice(bytes);
        black_box(job.ok());
    };
    let retention = |rules: &Arc<ResourcePolicies>| retention_path(Arc::clone(rules), now);
    let (mut a, mut b, mut c) = (Vec::new(), Vec::new(), Vec::new());
    // Warm-up, then rounds alternating the three paths.
    rate(&jobs, DISTINCT, ttl_path);
    rate(&jobs, DISTINCT, retention(&with_cel));
    for _ in 0..ROUNDS {
        a.push(rate(&jobs, n, ttl_path));
        b.push(rate(&jobs, n, retention(&plain)));
        c.push(rate(&jobs, n, retention(&with_cel)));
    }
    let show = |v: &[f64]| {
        v.iter()
            .map(|r| format!("{r:.0}"))
            .collect::<Vec<_>>()
            .join(" / ")
    };
    let (ma, mb, mc) = (median(a.clone()), median(b.clone()), median(c.clone()));
    println!(
        "decode {n} real-sized Jobs per path and round ({size} bytes of JSON each, {DISTINCT} distinct, {ROUNDS} rounds), objects/s median (rounds):"
    );
    println!(
        "  (a) typed Job projection (TypedJob)        {ma:>9.0}  ({})",
        show(&a)
    );
    println!(
        "  (b) retention, batch-jobs preset, no CEL   {mb:>9.0}  ({})  = {:.2} of (a)",
        show(&b),
        mb / ma
    );
    println!(
        "  (c) retention, batch-jobs + CEL match      {mc:>9.0}  ({})  = {:.2} of (a); target >= 0.50",
        show(&c),
        mc / ma
    );

    // Where (c)'s time goes, per object.
    let decoded: Vec<Value> = jobs
        .iter()
        .map(|b| decode_object(b).unwrap_or_default())
        .collect();
    let per = |total: Duration, count: usize| total.as_secs_f64() * 1e6 / count as f64;
    let time = |f: &mut dyn FnMut(usize)| {
        let started = Instant::now();
        for i in 0..n {
            f(i);
        }
        started.elapsed()
    };
    let value_only = time(&mut |i| {
        let object: Value = serde_json::from_slice(&jobs[i % DISTINCT]).unwrap_or_default();
        black_box(object);
    });
    let drop_only = {
        let mut copies: Vec<Value> = (0..n.min(20_000))
            .map(|i| decoded[i % DISTINCT].clone())
            .collect();
        let started = Instant::now();
        copies.clear();
        started.elapsed().mul_f64(n as f64 / n.min(20_000) as f64)
    };
    let project_plain = time(&mut |i| {
        black_box(assess(&decoded[i % DISTINCT], &plain, now));
    });
    let project_cel = time(&mut |i| {
        black_box(assess(&decoded[i % DISTINCT], &with_cel, now));
    });
    let conversion = time(&mut |i| {
        let mut context = cel::Context::default();
        black_box(
            context
                .add_variable("object", &decoded[i % DISTINCT])
                .is_ok(),
        );
        black_box(context);
    });
    let context_only = time(&mut |_| {
        black_box(cel::Context::default());
    });
    let expr = match CelExpr::compile(MATCH) {
        Ok(expr) => expr,
        Err(e) => panic!("{e}"),
    };
    let eval = time(&mut |i| {
        black_box(expr.eval_bool(&decoded[i % DISTINCT], now).ok());
    });
    let tiny = json!({"metadata": {"labels": {"app": "nightly-report"}}});
    let eval_tiny = time(&mut |_| {
        black_box(expr.eval_bool(&tiny, now).ok());
    });
    println!("  where the time goes, µs per Job:");
    println!(
        "    (a) whole                                        {:>7.2}",
        1e6 / ma
    );
    println!(
        "    serde_json::from_slice::<Value> (build + drop)   {:>7.2}  (of which dropping the tree ≈ {:.2})",
        per(value_only, n),
        per(drop_only, n)
    );
    println!(
        "    assess, no CEL, on a decoded Value              {:>7.2}",
        per(project_plain, n)
    );
    println!(
        "    assess, with CEL, on a decoded Value            {:>7.2}",
        per(project_cel, n)
    );
    println!(
        "    CelExpr::eval_bool on the whole Job              {:>7.2}",
        per(eval, n)
    );
    println!(
        "      of which CEL's conversion of `object` (Context::add_variable) {:>7.2}",
        per(conversion, n)
    );
    println!(
        "      of which a fresh cel::Context::default()                      {:>7.2}",
        per(context_only, n)
    );
    println!(
        "    CelExpr::eval_bool on {{metadata.labels}} only     {:>7.2}",
        per(eval_tiny, n)
    );
}

// ---------------------------------------------------------------------------------------------
// 3 and 4. The controller against the simulated server

fn pods_gvr() -> Gvr {
    Gvr::new("", "v1", "pods")
}

fn cluster_policies() -> Gvr {
    Gvr::new("kube-gc.io", "v1alpha1", "clusterretentionpolicies")
}

/// Creates finished Pod `i` in `default`, its container terminated at `finished`.
fn create_finished_pod(sim: &SimServer, buffer: &mut String, i: usize, finished: DateTime<Utc>) {
    let name = format!("pod-{i:06}");
    let at = wire_time(finished);
    let spec = PodSpec {
        namespace: "default",
        name: &name,
        serial: i,
        tier: "a",
        phase: "Succeeded",
        finished_at: &at,
        pods_per_owner: 4,
    };
    write_pod(buffer, &spec, true);
    let mut pod: Value = match serde_json::from_str(buffer) {
        Ok(pod) => pod,
        Err(e) => panic!("pod JSON: {e}"),
    };
    let status = pod["status"].take();
    if let Some(meta) = pod["metadata"].as_object_mut() {
        meta.remove("uid");
        meta.remove("resourceVersion");
        meta.remove("creationTimestamp");
    }
    let mut created = match sim.create(&pods_gvr(), pod) {
        Ok(created) => created,
        Err(e) => panic!("create {name}: {e}"),
    };
    created["status"] = status;
    if let Err(e) = sim.update_status(&pods_gvr(), created) {
        panic!("finish {name}: {e}");
    }
}

fn create_cluster_policy(sim: &SimServer, name: &str, ttl: i64) {
    let mut object = json!({"apiVersion": "kube-gc.io/v1alpha1", "kind": "ClusterRetentionPolicy",
        "metadata": {"name": name},
        "spec": {"preset": "pods", "includeControlled": true, "ttlSecondsAfterFinished": ttl}});
    if let Ok(propagation) = std::env::var("RETENTION_BENCH_PROPAGATION") {
        object["spec"]["propagationPolicy"] = json!(propagation);
    }
    if let Err(e) = sim.create(&cluster_policies(), object) {
        panic!("create the policy: {e}");
    }
}

/// The simulated server's runtime threads: `RETENTION_BENCH_SIM_THREADS`, else one per core.
///
/// Why apart by default: a real API server is another process, scheduled by its own runtime
/// (Go's, a thread per core). On the controller's runtime the server's tasks sit in the
/// controller's run queues and its two threads left the cores idle for milliseconds at a time
/// during a burst; the same runtime with four threads drained a burst of 100 in 7.8 ms, not
/// 12.3, on the same two cores — a cost of the arrangement, not of the controller or the server.
fn sim_threads() -> usize {
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    env_usize("RETENTION_BENCH_SIM_THREADS", cores)
}

/// Unless `RETENTION_BENCH_SIM_THREADS=0`, the runtime the simulated server runs on, apart
/// from the controller's (made once, kept to the end of the process).
fn sim_runtime() -> Option<&'static tokio::runtime::Runtime> {
    static RUNTIME: std::sync::OnceLock<Option<tokio::runtime::Runtime>> =
        std::sync::OnceLock::new();
    let threads = sim_threads();
    let runtime = RUNTIME.get_or_init(|| {
        (threads > 0).then(|| {
            match tokio::runtime::Builder::new_multi_thread()
                .worker_threads(threads)
                .thread_name("sim-worker")
                .enable_all()
                .build()
            {
                Ok(runtime) => runtime,
                Err(e) => panic!("the simulated server's runtime: {e}"),
            }
        })
    });
    runtime.as_ref()
}

/// `RETENTION_BENCH_TLS=1`: the simulated server serves HTTPS, so the client negotiates
/// HTTP/2 (ALPN) and sends its watches and DELETEs over one connection, as it does to a real
/// API server. Unset: plain HTTP/1.1, a connection per request in flight.
fn sim_tls() -> bool {
    std::env::var("RETENTION_BENCH_TLS").is_ok_and(|v| v == "1")
}

/// Where the simulated server runs and how it is reached, as the deletion lines say it.
fn sim_placement() -> String {
    let wire = if sim_tls() {
        "HTTPS and HTTP/2"
    } else {
        "plain HTTP/1.1"
    };
    match sim_runtime() {
        Some(_) => format!(
            "simulated server on {} threads of its own, {wire}",
            sim_threads()
        ),
        None => format!("simulated server on the controller's runtime, {wire}"),
    }
}

async fn start_sim(journal: usize) -> (SimServer, Client, tempfile::TempDir) {
    let mut config = SimConfig::default().with_journal_capacity(journal);
    if sim_tls() {
        config = config.with_tls();
    }
    let started = match sim_runtime() {
        Some(runtime) => match runtime.spawn(SimServer::start(config)).await {
            Ok(started) => started,
            Err(e) => panic!("start the sim: {e}"),
        },
        None => SimServer::start(config).await,
    };
    let sim = match started {
        Ok(sim) => sim,
        Err(e) => panic!("start the sim: {e}"),
    };
    let dir = match tempfile::tempdir() {
        Ok(dir) => dir,
        Err(e) => panic!("temp dir: {e}"),
    };
    let options = ClientOptions::default().with_rate(0.0, 1);
    let client = sim
        .client_config(&dir.path().join("kubeconfig"))
        .map_err(|e| e.to_string())
        .and_then(|c| Client::new(&c, &options).map_err(|e| e.to_string()));
    match client {
        Ok(client) => (sim, client, dir),
        Err(e) => panic!("client: {e}"),
    }
}

/// The controller's options: the defaults, but for `RETENTION_BENCH_WORKERS`.
fn bench_options() -> RetentionOptions {
    let defaults = RetentionOptions::default();
    RetentionOptions {
        workers: env_usize("RETENTION_BENCH_WORKERS", defaults.workers),
        ..defaults
    }
}

struct Running {
    metrics: Arc<RetentionMetrics>,
    watches: WatchMap,
    shutdown: CancellationToken,
    task: tokio::task::JoinHandle<Result<(), kube_gc::runtime::controller::ControllerError>>,
}

fn start_controller(client: Client) -> Running {
    let metrics = Arc::new(RetentionMetrics::default());
    let controller = RetentionController::builder(client, bench_options())
        .wiring(Wiring::default().clock(Arc::new(kube_gc::clock::SystemClock)))
        .metrics(Arc::clone(&metrics))
        .build();
    let watches = controller.watches();
    let shutdown = CancellationToken::new();
    let task = tokio::spawn(controller.run(shutdown.clone()));
    Running {
        metrics,
        watches,
        shutdown,
        task,
    }
}

impl Running {
    async fn stop(self) {
        self.shutdown.cancel();
        if let Ok(Err(e)) = self.task.await {
            eprintln!("controller: {e}");
        }
    }
}

/// Waits until `condition` holds, checking every 2 ms: for what the bench times by it.
async fn until(condition: impl Fn() -> bool) {
    until_every(Duration::from_millis(2), condition).await
}

/// Waits until `condition` holds, checking every `interval`. The deletion runs wait for the
/// last deletion this way, every 50 ms: each check wakes a runtime thread (its timer) and this
/// one, and at every 2 ms that was ~12 ms of CPU a second on the threads under test.
async fn until_every(interval: Duration, condition: impl Fn() -> bool) {
    while !condition() {
        tokio::time::sleep(interval).await;
    }
}

/// Accepted Pod DELETEs: (Pod number, journal time), in journal order.
fn pod_deletes(sim: &SimServer) -> Vec<(usize, DateTime<Utc>)> {
    sim.journal()
        .deletes()
        .iter()
        .filter(|e| e.status == 200)
        .filter_map(|e| {
            let name = e.path.strip_prefix(POD_PATH)?;
            let i: usize = name.strip_prefix("pod-")?.parse().ok()?;
            Some((i, e.at))
        })
        .collect()
}

fn millis(d: chrono::Duration) -> f64 {
    d.num_microseconds().unwrap_or(i64::MAX) as f64 / 1000.0
}

/// `n` Pods whose expiries fall on `SECONDS` different whole seconds, from 3 s after start.
async fn staggered(n: usize) {
    const SECONDS: usize = 20;
    const TTL: i64 = 30;
    let (sim, client, _dir) = start_sim(n * 3 + 10_000).await;
    let start = whole_seconds(Utc::now());
    // Finished TTL − 3 − k seconds ago (k = i % SECONDS): expires at start + 3 + k.
    let finished_of = |i: usize| start - chrono::Duration::seconds(TTL - 3 - (i % SECONDS) as i64);
    let expiry_of = |i: usize| finished_of(i) + chrono::Duration::seconds(TTL);
    let mut buffer = String::new();
    for i in 0..n {
        create_finished_pod(&sim, &mut buffer, i, finished_of(i));
    }
    create_cluster_policy(&sim, "finished-pods", TTL);
    sim.journal().clear();
    let running = start_controller(client);
    let metrics = Arc::clone(&running.metrics);
    until_every(Duration::from_millis(50), || {
        metrics.deletions(&PolicyId::cluster("finished-pods")) as usize >= n
    })
    .await;
    let done = Utc::now();
    running.stop().await;
    let deletes = pod_deletes(&sim);
    let mut latencies: Vec<f64> = deletes
        .iter()
        .map(|(i, at)| millis(*at - expiry_of(*i)))
        .collect();
    latencies.sort_by(f64::total_cmp);
    let at = |p: f64| latencies[((latencies.len() - 1) as f64 * p).round() as usize];
    let early = latencies.iter().filter(|l| **l < 0.0).count();
    let done_after = (done - start).num_seconds();
    println!(
        "staggered {n} Pods over {SECONDS} expiry seconds ({} per second) from 3 s after start, unthrottled, {} workers, {}: deletion after expiry p50 {:.1} ms, p99 {:.1} ms, max {:.1} ms ({early} before expiry; {} deletions, all done {done_after} s after start)",
        n.div_ceil(SECONDS),
        bench_options().workers,
        sim_placement(),
        at(0.5),
        at(0.99),
        at(1.0),
        latencies.len(),
    );
    if n > SECONDS {
        print_bursts(&deletes, expiry_of);
    }
    sim.shutdown().await;
}

/// Where a burst's latency goes: per expiry second, how late its first DELETE arrived (the
/// timer, a worker taking the key, the request reaching the server) and how long the rest took
/// to follow (the drain, at the controller's deletion rate).
fn print_bursts(deletes: &[(usize, DateTime<Utc>)], expiry_of: impl Fn(usize) -> DateTime<Utc>) {
    let mut bursts: BTreeMap<DateTime<Utc>, Vec<f64>> = BTreeMap::new();
    for (i, at) in deletes {
        let expiry = expiry_of(*i);
        bursts.entry(expiry).or_default().push(millis(*at - expiry));
    }
    let mut first = Vec::new();
    let mut drain = Vec::new();
    let mut rate = Vec::new();
    for latencies in bursts.values() {
        let lo = latencies.iter().copied().fold(f64::INFINITY, f64::min);
        let hi = latencies.iter().copied().fold(f64::NEG_INFINITY, f64::max);
        first.push(lo);
        drain.push(hi - lo);
        if hi > lo {
            rate.push((latencies.len() - 1) as f64 / ((hi - lo) / 1000.0));
        }
    }
    let max = |v: &[f64]| v.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    println!(
        "  per expiry second ({} bursts): first DELETE after expiry median {:.2} ms (max {:.2}); burst drained in median {:.1} ms (max {:.1}) = {:.0} deletions/s (median)",
        bursts.len(),
        median(first.clone()),
        max(&first),
        median(drain.clone()),
        max(&drain),
        if rate.is_empty() { 0.0 } else { median(rate) },
    );
}

fn pods_watch_ready(watches: &WatchMap, n: usize) -> bool {
    watches
        .read()
        .values()
        .any(|w| w.target.resource == "pods" && w.has_synced() && w.store.len() >= n)
}

/// N Pods cached under a one-day TTL; the TTL is shortened so all are expired.
async fn change(n: usize) {
    let (sim, client, _dir) = start_sim(n * 3 + 10_000).await;
    let finished = whole_seconds(Utc::now()) - chrono::Duration::hours(1);
    let mut buffer = String::new();
    for i in 0..n {
        create_finished_pod(&sim, &mut buffer, i, finished);
    }
    create_cluster_policy(&sim, "ttl", 86_400);
    let running = start_controller(client);
    let cached_from = Instant::now();
    let watches = Arc::clone(&running.watches);
    until(|| pods_watch_ready(&watches, n)).await;
    let cached = cached_from.elapsed();
    // Let the handlers queue every Pod's one-day timer, then check nothing was deleted.
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert!(pod_deletes(&sim).is_empty(), "deleted under a one-day TTL");
    sim.journal().clear();

    let mut shorter = match sim.get(&cluster_policies(), None, "ttl") {
        Ok(policy) => policy,
        Err(e) => panic!("get the policy: {e}"),
    };
    shorter["spec"]["ttlSecondsAfterFinished"] = json!(60);
    let changed = Utc::now();
    if let Err(e) = sim.update(&cluster_policies(), shorter) {
        panic!("shorten the TTL: {e}");
    }
    let metrics = Arc::clone(&running.metrics);
    until(|| metrics.deletions(&PolicyId::cluster("ttl")) as usize >= n).await;
    running.stop().await;
    let deletes = pod_deletes(&sim);
    let first = deletes.iter().map(|(_, at)| *at).min().unwrap_or(changed);
    let last = deletes.iter().map(|(_, at)| *at).max().unwrap_or(changed);
    let lists = sim
        .journal()
        .entries()
        .iter()
        .filter(|e| e.method == "GET" && e.path == "/api/v1/pods")
        .count();
    println!(
        "policy change, {n:>6} Pods cached (synced {:.2} s after start) under a one-day TTL, shortened to 60 s (all expired): first deletion {:.0} ms after the update, last {:.0} ms ({} deletions, {:.0} Pods/s after the first; {lists} LIST/WATCH of pods meanwhile; {})",
        cached.as_secs_f64(),
        millis(first - changed),
        millis(last - changed),
        deletes.len(),
        (deletes.len().saturating_sub(1)) as f64 / ((last - first).num_microseconds().unwrap_or(1).max(1) as f64 / 1e6),
        sim_placement(),
    );
    sim.shutdown().await;
}

fn main() {
    if wanted("memory") {
        for n in env_sizes("RETENTION_BENCH_OBJECTS", &[100_000, 1_000_000]) {
            memory(n);
        }
    }
    if wanted("decode") {
        decode(env_usize("RETENTION_BENCH_DECODES", 50_000));
    }
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(e) => panic!("runtime: {e}"),
    };
    runtime.block_on(async {
        if wanted("single") {
            staggered(20).await;
        }
        if wanted("staggered") {
            staggered(env_usize("RETENTION_BENCH_STAGGERED_PODS", 2_000)).await;
        }
        if wanted("change") {
            for n in env_sizes("RETENTION_BENCH_CHANGE_PODS", &[1_000, 10_000]) {
                change(n).await;
            }
        }
    });
}
