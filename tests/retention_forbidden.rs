//! A retention policy naming a resource kube-gc's RBAC does not cover, on the simulated server
//! refusing kube-gc's service account as a real server's RBAC does (exchanges 200–206), on the
//! paused clock:
//!
//! - reading refused: that policy goes `Ready=False`, reason `Forbidden`, naming the resource,
//!   the server's words and the RBAC rule to grant, with a Warning Event on it and
//!   `kube_gc_retention_policies{state="forbidden"}`; its watch stops (no stuck informer, so
//!   `/readyz`'s input stays clean and the controller ready) while every other policy works; the
//!   resource is tried again by one small LIST every 30 s, and watched as soon as it is granted;
//! - deleting refused: the policy is `Forbidden` while the objects it would delete stay, and
//!   acts once the delete is granted.

mod client_support;
mod ttl_support;

use std::sync::Arc;
use std::time::Duration;

use kube_gc::client::config::Environment;
use kube_gc::client::Client;
use kube_gc::events::{CollectingRecorder, EventType};
use kube_gc::manager::{ControllerSelection, Manager, ManagerOptions};
use kube_gc::metrics::Metrics;
use kube_gc::server::Endpoints;
use kube_gc::sim::{Gvr, SimConfig, SimServer};
use serde_json::{json, Value};
use tokio_util::sync::CancellationToken;
use ttl_support::{eventually, wire_time, world_with, World};

/// kube-gc's service account, as the managed overlay installs it.
const KUBE_GC: &str = "system:serviceaccount:kube-system:kube-gc";

fn pods() -> Gvr {
    Gvr::new("", "v1", "pods")
}

fn policies() -> Gvr {
    Gvr::new("kube-gc.io", "v1alpha1", "retentionpolicies")
}

/// A server refusing kube-gc's service account what `forbid` lists (`(resource, verbs)` of the
/// core group), and a client authenticating as that account.
async fn refusing(forbid: &[(&str, &[&str])]) -> (World, Client, tempfile::TempDir) {
    let mut config = SimConfig::default()
        .with_namespaces(&["default", "data"])
        .with_user("kube-gc-token", KUBE_GC, &["system:serviceaccounts"]);
    for (resource, verbs) in forbid {
        config = config.forbidding(KUBE_GC, "", resource, verbs);
    }
    let world = world_with(config).await;
    let dir = tempfile::tempdir().expect("tempdir");
    let config = client_support::custom_config(
        world.sim(),
        dir.path(),
        "kube-gc-kubeconfig",
        "",
        "kube-gc",
        "{token: kube-gc-token}",
        &Environment::empty(),
    );
    let client = Client::new(&config, &client_support::unthrottled()).expect("client");
    (world, client, dir)
}

/// A Pod in `data` that Succeeded at `finished_at`.
fn finished_pod(sim: &SimServer, name: &str, finished_at: chrono::DateTime<chrono::Utc>) {
    let mut pod = sim
        .create(
            &pods(),
            json!({"apiVersion": "v1", "kind": "Pod",
                "metadata": {"name": name, "namespace": "data"},
                "spec": {"restartPolicy": "Never", "containers": [{"name": "c", "image": "busybox"}]}}),
        )
        .expect("create the Pod");
    pod["status"] = json!({"phase": "Succeeded", "containerStatuses": [{"name": "c", "state":
        {"terminated": {"exitCode": 0, "startedAt": wire_time(finished_at),
            "finishedAt": wire_time(finished_at)}}}]});
    sim.update_status(&pods(), pod).expect("finish the Pod");
}

fn create_policy(sim: &SimServer, name: &str, spec: Value) {
    sim.create(
        &policies(),
        json!({"apiVersion": "kube-gc.io/v1alpha1", "kind": "RetentionPolicy",
            "metadata": {"name": name, "namespace": "data"}, "spec": spec}),
    )
    .expect("create the policy");
}

/// The policy's `Ready` condition.
fn ready(sim: &SimServer, name: &str) -> Value {
    sim.get(&policies(), Some("data"), name)
        .ok()
        .and_then(|p| {
            p["status"]["conditions"]
                .as_array()?
                .iter()
                .find(|c| c["type"] == "Ready")
                .cloned()
        })
        .unwrap_or(Value::Null)
}

/// The retention controller alone, run by the manager and published on `endpoints`, as
/// `kube-gc run --controllers=retention` runs it.
struct Running {
    endpoints: Endpoints,
    recorder: Arc<CollectingRecorder>,
    ready: kube_gc::manager::Readiness,
    shutdown: CancellationToken,
    task: tokio::task::JoinHandle<()>,
}

async fn run(world: &World, client: Client) -> Running {
    let endpoints = Endpoints::new(Metrics::new(), false);
    let recorder = Arc::new(CollectingRecorder::new());
    let options = ManagerOptions {
        controllers: ControllerSelection::parse(&["retention"]).expect("selection"),
        retention_status_interval: Duration::from_secs(1),
        ..ManagerOptions::default()
    };
    let set = Manager::new(client, options)
        .clock(Arc::clone(&world.clock))
        .recorder(Arc::clone(&recorder) as _)
        .publish_to(&endpoints)
        .start()
        .await
        .expect("the manager starts");
    let ready = set.readiness();
    let shutdown = CancellationToken::new();
    let stop = shutdown.clone();
    let task = tokio::spawn(async move {
        set.run(stop).await.expect("the controllers ran");
    });
    Running {
        endpoints,
        recorder,
        ready,
        shutdown,
        task,
    }
}

impl Running {
    fn metric(&self, line_start: &str) -> Option<String> {
        let text = self.endpoints.metrics.encode().expect("metrics encode");
        text.lines()
            .find(|l| l.starts_with(line_start))
            .map(str::to_owned)
    }

    async fn stop(self) {
        self.shutdown.cancel();
        self.task.await.expect("the manager task");
    }
}

/// Requests for ConfigMaps in the journal, and of those the watches.
fn configmap_requests(sim: &SimServer) -> (usize, usize) {
    let entries = sim.journal().entries();
    let requests: Vec<_> = entries
        .iter()
        .filter(|e| e.path == "/api/v1/configmaps")
        .collect();
    let watches = requests
        .iter()
        .filter(|e| {
            e.query
                .iter()
                .any(|(k, v)| k == "watch" && (v == "true" || v == "1"))
        })
        .count();
    (requests.len(), watches)
}

#[tokio::test(start_paused = true)]
async fn a_policy_kube_gc_may_not_read_is_forbidden_alone_and_recovers_once_granted() {
    let (world, client, _dir) =
        refusing(&[("configmaps", &["get", "list", "watch", "delete"])]).await;
    let sim = world.sim();
    create_policy(
        sim,
        "expiring-configmaps",
        json!({"resource": {"group": "", "version": "v1", "resource": "configmaps"},
            "ttlSecondsAfterCreation": 3600}),
    );
    create_policy(
        sim,
        "finished-pods",
        json!({"preset": "pods", "ttlSecondsAfterFinished": 60}),
    );
    finished_pod(sim, "done", world.now() - chrono::Duration::minutes(10));
    let running = run(&world, client).await;

    eventually("the configmaps policy says it is forbidden", || {
        ready(sim, "expiring-configmaps")["reason"] == "Forbidden"
    })
    .await;
    let condition = ready(sim, "expiring-configmaps");
    assert_eq!(condition["status"], "False");
    let message = condition["message"].as_str().unwrap_or_default();
    assert_eq!(
        message,
        format!(
            "kube-gc may not read v1/configmaps (configmaps is forbidden: User \"{KUBE_GC}\" \
             cannot list resource \"configmaps\" in API group \"\" at the cluster scope); grant \
             its service account the RBAC rule {{apiGroups: [\"\"], resources: [\"configmaps\"], \
             verbs: [\"get\", \"list\", \"watch\", \"delete\"]}}"
        )
    );
    // The other policy is unaffected: ready, and it deletes its finished Pod.
    eventually("the Pod is deleted", || {
        sim.get(&pods(), Some("data"), "done").is_err()
    })
    .await;
    assert_eq!(ready(sim, "finished-pods")["reason"], "Watching");
    let events = running.recorder.events();
    let warning = events
        .iter()
        .find(|e| e.reason == "Forbidden")
        .expect("a Warning Event on the policy");
    assert_eq!(warning.event_type, EventType::Warning);
    assert_eq!(
        warning.regarding.name.as_deref(),
        Some("expiring-configmaps")
    );
    assert_eq!(warning.message, message);

    // Two minutes on — twice what makes an informer stuck — nothing is stuck, the controller
    // is ready, and the forbidden policy is counted.
    tokio::time::sleep(Duration::from_secs(120)).await;
    assert_eq!(
        running.endpoints.metrics.reflectors().stuck(),
        Vec::<String>::new()
    );
    assert!(running.ready.is_ready());
    assert_eq!(
        running
            .metric("kube_gc_retention_policies{state=\"forbidden\"}")
            .as_deref(),
        Some("kube_gc_retention_policies{state=\"forbidden\"} 1")
    );
    assert_eq!(
        running
            .metric("kube_gc_retention_policies{state=\"ready\"}")
            .as_deref(),
        Some("kube_gc_retention_policies{state=\"ready\"} 1")
    );
    // Cheap while refused: no watch after the first refusal, one small LIST every 30 s.
    let (before, _) = configmap_requests(sim);
    tokio::time::sleep(Duration::from_secs(600)).await;
    let (after, watches) = configmap_requests(sim);
    assert!(
        (18..=22).contains(&(after - before)),
        "{} LISTs in 10 minutes",
        after - before
    );
    assert!(watches <= 1, "{watches} watches of a forbidden resource");
    assert_eq!(
        running
            .recorder
            .events()
            .iter()
            .filter(|e| e.reason == "Forbidden")
            .count(),
        1,
        "one Warning while the refusal stands"
    );

    // The rule is granted: within one try, the resource is watched and the policy ready.
    sim.grant(KUBE_GC, "", "configmaps");
    let granted = tokio::time::Instant::now();
    eventually("the configmaps policy is ready", || {
        ready(sim, "expiring-configmaps")["reason"] == "Watching"
    })
    .await;
    assert!(
        granted.elapsed() <= Duration::from_secs(32),
        "{:?}",
        granted.elapsed()
    );
    eventually("its resource is watched", || configmap_requests(sim).1 >= 1).await;
    running.stop().await;
}

#[tokio::test(start_paused = true)]
async fn a_policy_kube_gc_may_not_delete_for_is_forbidden_and_deletes_nothing_until_granted() {
    let (world, client, _dir) = refusing(&[("pods", &["delete"])]).await;
    let sim = world.sim();
    create_policy(
        sim,
        "finished-pods",
        json!({"preset": "pods", "ttlSecondsAfterFinished": 60}),
    );
    finished_pod(sim, "done", world.now() - chrono::Duration::minutes(10));
    let running = run(&world, client).await;

    eventually("the policy says it may not delete", || {
        ready(sim, "finished-pods")["reason"] == "Forbidden"
    })
    .await;
    let message = ready(sim, "finished-pods")["message"]
        .as_str()
        .unwrap_or_default()
        .to_owned();
    assert!(
        message.starts_with(&format!(
            "kube-gc may not delete v1/pods (pods \"done\" is forbidden: User \"{KUBE_GC}\" \
             cannot delete resource \"pods\" in API group \"\" in the namespace \"data\")"
        )),
        "{message}"
    );
    // Still watched and counted: it matches the Pod it would delete.
    eventually("the status counts the Pod", || {
        sim.get(&policies(), Some("data"), "finished-pods")
            .map(|p| p["status"]["matched"] == 1)
            .unwrap_or(false)
    })
    .await;
    tokio::time::sleep(Duration::from_secs(120)).await;
    assert!(sim.get(&pods(), Some("data"), "done").is_ok());
    assert!(running.ready.is_ready());
    assert!(running.endpoints.metrics.reflectors().stuck().is_empty());

    sim.grant(KUBE_GC, "", "pods");
    eventually("the Pod is deleted", || {
        sim.get(&pods(), Some("data"), "done").is_err()
    })
    .await;
    eventually("the policy is ready", || {
        ready(sim, "finished-pods")["reason"] == "Watching"
    })
    .await;
    running.stop().await;
}
