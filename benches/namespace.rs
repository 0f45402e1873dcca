//! Namespace deletion benchmark (`harness = false`, prints its numbers): what it costs kube-gc
//! to delete a namespace holding N objects of 20 kinds, on the simulated API server over HTTP.
//!
//! The namespace holds N/20 objects of each of 20 namespaced kinds: Pods (`Succeeded`, bound
//! to one of 997 nodes, ~3 KB each as `support/pods.rs` writes them), ConfigMaps, Secrets,
//! PersistentVolumeClaims (admission gives them `kubernetes.io/pvc-protection`, which PVC
//! protection removes), core Events (which nothing watches: emptied by the `deletecollection`
//! that proves them gone), Deployments, ReplicaSets, Jobs, Leases, Volcano Jobs, and ten
//! workload custom resources (Argo Workflows, Tekton PipelineRuns and TaskRuns, five Kubeflow
//! jobs, SparkApplications, RayJobs); no owner references. The controllers a cluster without
//! kube-controller-manager needs for it run as `kube-gc run` runs them — the manager, its
//! default client rate (20 QPS, burst 30; the namespace controller's at 20 times that), every
//! default but `--controllers` — on a Tokio runtime of their own (2 threads named `kube-gc`),
//! the simulated server on another (2 threads). Once every cache synced, the namespace is
//! deleted (in process, as a user's `kubectl delete namespace`), and measured until it is gone:
//!
//! - wall time from the DELETE to the namespace gone, and to its last content gone (the
//!   namespace cannot be finalized before `--namespace-deletion-grace-period`, 5 s);
//! - the requests kube-gc sent meanwhile (the server's journal), by verb, by component, and by
//!   component, verb and resource;
//! - kube-gc's CPU time meanwhile: its runtime's threads' (`/proc/self/task/*/schedstat`), the
//!   server's apart;
//! - kube-gc's heap: what its threads hold when the DELETE is sent, and the most they held
//!   until the namespace was gone (requested bytes, `tests/memory_support`'s counting allocator,
//!   counting the `kube-gc` threads apart from the server's).
//!
//! Environment (defaults in brackets): `NS_BENCH_OBJECTS` [`100,10000`]: namespace sizes, one
//! run each, a fresh server and kube-gc per run; `NS_BENCH_CONTROLLERS`
//! [`namespace,garbagecollector,podgc,pvc-protection`]: `--controllers`.
//!
//! Run with `cargo bench --bench namespace`; results are in `docs/performance.md`.

#[path = "../tests/memory_support/mod.rs"]
mod memory_support;
#[path = "support/pods.rs"]
mod pods;

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use chrono::Utc;
use kube_gc::client::{Client, ClientOptions};
use kube_gc::manager::{ControllerSelection, Manager, ManagerOptions};
use kube_gc::sim::journal::JournalEntry;
use kube_gc::sim::Connect as _;
use kube_gc::sim::{DeleteOptions, Gvr, SimConfig, SimServer};
use serde_json::{json, Value};
use tokio::runtime::Runtime;
use tokio_util::sync::CancellationToken;

use pods::{write_pod, PodSpec};

/// The namespace deleted.
const NAMESPACE: &str = "bench";
/// Nodes the Pods are bound to (as `support/pods.rs` spreads them).
const NODES: usize = 997;
/// The `User-Agent` prefix of every kube-gc request.
const AGENT: &str = "kube-gc/";

/// The 20 kinds: (group, version, resource, kind).
const KINDS: [(&str, &str, &str, &str); 20] = [
    ("", "v1", "pods", "Pod"),
    ("", "v1", "configmaps", "ConfigMap"),
    ("", "v1", "secrets", "Secret"),
    ("", "v1", "persistentvolumeclaims", "PersistentVolumeClaim"),
    ("", "v1", "events", "Event"),
    ("apps", "v1", "deployments", "Deployment"),
    ("apps", "v1", "replicasets", "ReplicaSet"),
    ("batch", "v1", "jobs", "Job"),
    ("coordination.k8s.io", "v1", "leases", "Lease"),
    ("batch.volcano.sh", "v1alpha1", "jobs", "Job"),
    ("argoproj.io", "v1alpha1", "workflows", "Workflow"),
    ("tekton.dev", "v1", "pipelineruns", "PipelineRun"),
    ("tekton.dev", "v1", "taskruns", "TaskRun"),
    ("kubeflow.org", "v1", "pytorchjobs", "PyTorchJob"),
    ("kubeflow.org", "v1", "tfjobs", "TFJob"),
    ("kubeflow.org", "v1", "mpijobs", "MPIJob"),
    ("kubeflow.org", "v1", "xgboostjobs", "XGBoostJob"),
    ("kubeflow.org", "v1", "paddlejobs", "PaddleJob"),
    (
        "sparkoperator.k8s.io",
        "v1beta2",
        "sparkapplications",
        "SparkApplication",
    ),
    ("ray.io", "v1", "rayjobs", "RayJob"),
];

fn env_sizes(name: &str, default: &[usize]) -> Vec<usize> {
    match std::env::var(name) {
        Ok(list) => list
            .split(',')
            .filter_map(|n| n.trim().parse().ok())
            .collect(),
        Err(_) => default.to_vec(),
    }
}

fn api_version(group: &str, version: &str) -> String {
    if group.is_empty() {
        version.to_owned()
    } else {
        format!("{group}/{version}")
    }
}

/// Object `i` of a kind other than Pods: labels and annotations as a team's tooling leaves
/// them, and a spec of the kind's shape, a few hundred bytes.
fn object(kind: (&str, &str, &str, &str), i: usize) -> Value {
    let (group, version, resource, kind_name) = kind;
    let name = format!("{}-{i:05}", resource.trim_end_matches('s'));
    let mut object = json!({"apiVersion": api_version(group, version), "kind": kind_name,
        "metadata": {"name": name, "namespace": NAMESPACE,
            "labels": {"app.kubernetes.io/name": "etl", "app.kubernetes.io/part-of": "warehouse",
                "team": "data", "tier": format!("t{}", i % 4)},
            "annotations": {"owner": "data-platform@example.com",
                "deployed-by": "ci-pipeline-2026.11.3"}}});
    let container = json!({"name": "etl", "image": "registry.example.com/data/etl:2026.11.3",
        "command": ["/bin/etl", "--since=24h"], "resources": {"requests": {"cpu": "500m", "memory": "512Mi"}}});
    let template = json!({"metadata": {"labels": {"app.kubernetes.io/name": "etl"}},
        "spec": {"restartPolicy": "Never", "containers": [container]}});
    match resource {
        "configmaps" => {
            object["data"] = json!({"etl.yaml": "since: 24h\noutput: s3://warehouse/etl\nshards: 64\n", "mode": "batch"})
        }
        "secrets" => {
            object["data"] = json!({"token": "bm90LWEtcmVhbC10b2tlbi0wMTIzNDU2Nzg5", "ca.crt": "LS0tLS1CRUdJTi0tLS0t"})
        }
        "persistentvolumeclaims" => {
            object["spec"] = json!({"accessModes": ["ReadWriteOnce"],
            "storageClassName": "standard", "resources": {"requests": {"storage": "10Gi"}}})
        }
        "events" => {
            object["involvedObject"] = json!({"kind": "Pod", "namespace": NAMESPACE,
                "name": format!("etl-{i:07}"), "apiVersion": "v1"});
            object["reason"] = json!("Completed");
            object["message"] = json!("Container etl completed (exit code 0)");
            object["type"] = json!("Normal");
            object["count"] = json!(1);
        }
        "deployments" | "replicasets" => {
            object["spec"] = json!({"replicas": 2,
                "selector": {"matchLabels": {"app.kubernetes.io/name": "etl"}}, "template": template});
        }
        "jobs" if group == "batch" => {
            object["spec"] = json!({"backoffLimit": 2, "template": template})
        }
        "leases" => {
            object["spec"] =
                json!({"holderIdentity": format!("etl-{i}"), "leaseDurationSeconds": 15})
        }
        _ => {
            object["spec"] =
                json!({"entrypoint": "main", "tasks": [{"name": "etl", "template": template}]})
        }
    }
    object
}

/// Nodes, the namespace, and `n` objects in it (`n / 20` of each kind).
fn seed(sim: &SimServer, n: usize) {
    let nodes = Gvr::new("", "v1", "nodes");
    for i in 0..NODES {
        let node = json!({"metadata": {"name": format!("node-{i:03}")}});
        if let Err(e) = sim.create(&nodes, node) {
            panic!("node: {e}");
        }
    }
    let namespace = json!({"metadata": {"name": NAMESPACE}});
    if let Err(e) = sim.create(&Gvr::new("", "v1", "namespaces"), namespace) {
        panic!("namespace: {e}");
    }
    let per_kind = (n / KINDS.len()).max(1);
    let mut text = String::new();
    for kind in KINDS {
        let (group, version, resource, _) = kind;
        let gvr = Gvr::new(group, version, resource);
        for i in 0..per_kind {
            let created = if resource == "pods" {
                let name = format!("etl-{i:07}");
                let spec = PodSpec {
                    namespace: NAMESPACE,
                    name: &name,
                    serial: i,
                    tier: "a",
                    phase: "Succeeded",
                    finished_at: "2026-11-29T06:00:00Z",
                    pods_per_owner: 4,
                };
                write_pod(&mut text, &spec, true);
                let mut pod: Value = serde_json::from_str(&text).unwrap_or_default();
                // Not owned here: the namespace controller alone deletes everything.
                pod["metadata"]
                    .as_object_mut()
                    .map(|m| m.remove("ownerReferences"));
                let status = pod["status"].take();
                sim.create(&gvr, pod).and_then(|mut created| {
                    created["status"] = status;
                    sim.update_status(&gvr, created)
                })
            } else {
                sim.create(&gvr, object(kind, i))
            };
            if let Err(e) = created {
                panic!("{resource} {i}: {e}");
            }
        }
    }
}

/// CPU time of this process's threads whose name starts with `prefix`
/// (`/proc/self/task/*/schedstat`: nanoseconds on a CPU).
fn cpu_of_threads(prefix: &str) -> Duration {
    let Ok(tasks) = std::fs::read_dir("/proc/self/task") else {
        return Duration::ZERO;
    };
    let mut nanos = 0_u64;
    for task in tasks.flatten() {
        let path = task.path();
        let name = std::fs::read_to_string(path.join("comm")).unwrap_or_default();
        if !name.starts_with(prefix) {
            continue;
        }
        let stat = std::fs::read_to_string(path.join("schedstat")).unwrap_or_default();
        nanos += stat
            .split_whitespace()
            .next()
            .and_then(|n| n.parse::<u64>().ok())
            .unwrap_or(0);
    }
    Duration::from_nanos(nanos)
}

fn runtime(name: &str, counted: bool) -> Runtime {
    let mut builder = tokio::runtime::Builder::new_multi_thread();
    builder.worker_threads(2).thread_name(name).enable_all();
    if counted {
        builder.on_thread_start(memory_support::count_this_thread);
    }
    match builder.build() {
        Ok(runtime) => runtime,
        Err(e) => panic!("runtime {name}: {e}"),
    }
}

/// The component a request came from: what follows the last `/` of its User-Agent.
fn component(entry: &JournalEntry) -> String {
    let agent = entry.header("user-agent").unwrap_or_default();
    agent.rsplit('/').next().unwrap_or(agent).to_owned()
}

fn mib(bytes: isize) -> f64 {
    bytes as f64 / (1024.0 * 1024.0)
}

/// The resource a request's path names, with its subresource (`pods`, `namespaces/finalize`);
/// empty for discovery.
fn resource_of(path: &str) -> String {
    let segments: Vec<&str> = path.trim_start_matches('/').split('/').collect();
    let skip = if segments.first() == Some(&"api") {
        2
    } else {
        3
    };
    let mut rest = segments.get(skip..).unwrap_or_default();
    // A namespace's own subresources (`namespaces/x/status`, `/finalize`) against what lives
    // in a namespace (`namespaces/x/pods/…`).
    if let ["namespaces", _, subresource @ ("status" | "finalize")] = rest {
        return format!("namespaces/{subresource}");
    }
    if rest.len() >= 3 && rest[0] == "namespaces" {
        rest = &rest[2..];
    }
    match rest {
        [resource] | [resource, _] => (*resource).to_owned(),
        [resource, _, subresource, ..] => format!("{resource}/{subresource}"),
        [] => String::new(),
    }
}

/// A request's verb, `deletecollection` told apart from a DELETE of one object.
fn verb_of(entry: &JournalEntry) -> String {
    let is_collection = entry.method == "DELETE"
        && KINDS
            .iter()
            .any(|(_, _, resource, _)| entry.path.ends_with(&format!("/{resource}")));
    if is_collection {
        "deletecollection".to_owned()
    } else {
        format!("{:?}", entry.verb).to_lowercase()
    }
}

/// Requests by verb; by component; and by component, verb and resource: one line each.
fn tally(requests: &[JournalEntry]) -> [String; 3] {
    let mut verbs: BTreeMap<String, usize> = BTreeMap::new();
    let mut components: BTreeMap<String, usize> = BTreeMap::new();
    let mut detail: BTreeMap<String, usize> = BTreeMap::new();
    for entry in requests {
        let verb = verb_of(entry);
        let component = component(entry);
        let resource = resource_of(&entry.path);
        *detail
            .entry(
                format!("{component} {verb} {resource}")
                    .trim_end()
                    .to_owned(),
            )
            .or_default() += 1;
        *verbs.entry(verb).or_default() += 1;
        *components.entry(component).or_default() += 1;
    }
    let join = |m: BTreeMap<String, usize>| {
        m.into_iter()
            .map(|(k, v)| format!("{v} {k}"))
            .collect::<Vec<_>>()
            .join(", ")
    };
    [join(verbs), join(components), join(detail)]
}

async fn run(kube_gc: &Runtime, n: usize, controllers: &str) {
    let config = SimConfig {
        journal_capacity: 200_000,
        history_limit: 8 * n + 20_000,
        ..SimConfig::default()
    }
    .with_workload_custom_resources();
    let sim = match SimServer::start(config).await {
        Ok(sim) => sim,
        Err(e) => panic!("start the sim: {e}"),
    };
    let seeding = Instant::now();
    seed(&sim, n);
    let seeded = seeding.elapsed();
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("temp dir: {e}"));
    let client_config = sim
        .client_config(&dir.path().join("kubeconfig"))
        .unwrap_or_else(|e| panic!("kubeconfig: {e}"));
    // One entry per name, as the command line's repeated or comma-separated `--controllers`.
    let names: Vec<&str> = controllers.split(',').map(str::trim).collect();
    let selection =
        ControllerSelection::parse(&names).unwrap_or_else(|e| panic!("NS_BENCH_CONTROLLERS: {e}"));
    let options = ManagerOptions {
        controllers: selection,
        ..ManagerOptions::default()
    };

    // kube-gc: built, started and run on its own runtime, so that its threads hold all it
    // allocates and spend all its CPU.
    let cpu_at_start = cpu_of_threads("kube-gc");
    let shutdown = CancellationToken::new();
    let (ready_tx, ready_rx) = tokio::sync::oneshot::channel();
    let stop = shutdown.clone();
    let started = Instant::now();
    let task = kube_gc.spawn(async move {
        let client = Client::new(&client_config, &ClientOptions::default())
            .unwrap_or_else(|e| panic!("client: {e}"));
        let set = Manager::new(client, options)
            .start()
            .await
            .unwrap_or_else(|e| panic!("start: {e}"));
        let readiness = set.readiness();
        let running = tokio::spawn(set.run(stop.clone()));
        if readiness.wait(&stop).await.is_ok() {
            let _ = ready_tx.send(());
        }
        running.await
    });
    if ready_rx.await.is_err() {
        panic!("kube-gc never became ready");
    }
    let synced = started.elapsed();
    // The start-up's lists are answered; what follows is the deletion's.
    tokio::time::sleep(Duration::from_secs(1)).await;

    let cpu_before = cpu_of_threads("kube-gc");
    let held_before = memory_support::apart_live_bytes();
    memory_support::reset_apart_peak();
    let first_seq = sim.journal().entries().last().map_or(0, |e| e.seq);
    let deleted_at = Utc::now();
    let deleting = Instant::now();
    if let Err(e) = sim.delete(
        &Gvr::new("", "v1", "namespaces"),
        None,
        NAMESPACE,
        &DeleteOptions::default(),
    ) {
        panic!("delete the namespace: {e}");
    }
    let gone = tokio::time::timeout(
        Duration::from_secs(600),
        sim.wait_for(&Gvr::new("", "v1", "namespaces"), None, NAMESPACE, |o| {
            o.is_none()
        }),
    )
    .await;
    let elapsed = deleting.elapsed();
    if !matches!(gone, Ok(Ok(None))) {
        panic!("the namespace was not finalized within 600 s: {gone:?}");
    }
    let cpu = cpu_of_threads("kube-gc").saturating_sub(cpu_before);
    let cpu_with_start = cpu_of_threads("kube-gc").saturating_sub(cpu_at_start);
    let peak = memory_support::apart_peak_bytes();
    let content_gone = sim
        .deletions()
        .iter()
        .filter(|d| d.namespace.as_deref() == Some(NAMESPACE))
        .map(|d| d.at)
        .max()
        .and_then(|at| (at - deleted_at).to_std().ok())
        .unwrap_or_default();
    let left: usize = KINDS
        .iter()
        .map(|(g, v, r, _)| {
            sim.list(&Gvr::new(g, v, r), Some(NAMESPACE))
                .map_or(0, |l| l.len())
        })
        .sum();
    let requests: Vec<JournalEntry> = sim
        .journal()
        .entries_after(first_seq)
        .into_iter()
        .filter(|e| {
            e.header("user-agent")
                .is_some_and(|agent| agent.starts_with(AGENT))
        })
        .collect();
    let [by_verb, by_component, in_detail] = tally(&requests);
    println!(
        "namespace of {n} objects ({} kinds, {} each), --controllers={controllers}: \
         DELETE → content gone {:.2} s, → namespace gone {:.2} s (its safety delay is 5 s); \
         {left} objects left in it; kube-gc sent {} requests: {by_verb} (by component: {by_component}); \
         kube-gc CPU {:.3} s over the deletion, {:.3} s from its start (synced in {:.2} s); \
         kube-gc heap {:.1} MiB held at the DELETE, peak {:.1} MiB until gone (+{:.1} MiB) \
         [seeded in {:.1} s]",
        KINDS.len(),
        (n / KINDS.len()).max(1),
        content_gone.as_secs_f64(),
        elapsed.as_secs_f64(),
        requests.len(),
        cpu.as_secs_f64(),
        cpu_with_start.as_secs_f64(),
        synced.as_secs_f64(),
        mib(held_before),
        mib(peak),
        mib(peak - held_before),
        seeded.as_secs_f64(),
    );
    println!("  its requests by component, verb and resource: {in_detail}");
    shutdown.cancel();
    match task.await {
        Ok(Ok(Ok(()))) => {}
        other => eprintln!("kube-gc did not stop cleanly: {other:?}"),
    }
    sim.shutdown().await;
}

fn main() {
    let sizes = env_sizes("NS_BENCH_OBJECTS", &[100, 10_000]);
    let controllers = std::env::var("NS_BENCH_CONTROLLERS")
        .unwrap_or_else(|_| "namespace,garbagecollector,podgc,pvc-protection".into());
    let kube_gc = runtime("kube-gc", true);
    let server = runtime("sim", false);
    for n in sizes {
        server.block_on(run(&kube_gc, n, &controllers));
    }
}
