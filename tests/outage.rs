//! Deletions that fall due while the API server is away go out the moment it answers again —
//! for every controller, whatever the outage looks like — and nothing due is missed.
//!
//! The whole manager (both TTL controllers, the garbage collector, the retention controller)
//! runs against the simulated API server on tokio's paused clock. Three kinds of deletion fall
//! due during a 30 s outage: Jobs whose TTL expires, Pods under a retention policy whose TTL
//! expires, and the dependents of an owner deleted just before (their first DELETEs refused
//! with 503, so the collector holds them when the outage begins). The outage is, in turn:
//!
//! - the API server stopped and started again (connections refused in between, as a real
//!   kube-apiserver's are after SIGTERM: exchange 85);
//! - etcd stopped behind a running API server (each request that needs it hangs a minute and
//!   fails 504: exchanges 77–84);
//! - the server answering 503 to everything, then 429 with `Retry-After: 1`.
//!
//! Each test reads the server's change history and request journal: every due object's
//! deletion took effect within a second of the server's return and none before it, nothing else
//! was deleted, and each deletion was a DELETE the server accepted.

mod client_support;
mod ttl_support;

use std::sync::Arc;
use std::time::Duration;

use chrono::{DateTime, SubsecRound, Utc};
use kube_gc::client::outage::PROBE_INTERVAL;
use kube_gc::manager::{Manager, ManagerOptions};
use kube_gc::metrics::Metrics;
use kube_gc::runtime::reflector::RETURN_SPREAD;
use kube_gc::server::Endpoints;
use kube_gc::sim::faults::{FaultPlan, Verb};
use kube_gc::sim::history::ChangeKind;
use kube_gc::sim::journal::JournalEntry;
use kube_gc::sim::{DeleteOptions, Gvr, Propagation, SimConfig, SimServer};
use serde_json::{json, Value};
use tokio_util::sync::CancellationToken;
use ttl_support::{create_job, eventually, wire_time, world_with, World};

/// The outage's length, as the issue sets it.
const OUTAGE: Duration = Duration::from_secs(30);
/// How soon after the server's return every due deletion must have reached it.
const RESUMED_WITHIN: Duration = Duration::from_secs(1);

fn pods() -> Gvr {
    Gvr::new("", "v1", "pods")
}

fn configmaps() -> Gvr {
    Gvr::new("", "v1", "configmaps")
}

fn cluster_policies() -> Gvr {
    Gvr::new("kube-gc.io", "v1alpha1", "clusterretentionpolicies")
}

/// An object of the scene: its kind, namespace and name.
#[derive(Clone, Debug, PartialEq)]
struct Object {
    kind: &'static str,
    namespace: &'static str,
    name: String,
}

impl Object {
    fn job(name: &str) -> Object {
        Object {
            kind: "Job",
            namespace: "default",
            name: name.to_owned(),
        }
    }

    fn pod(name: &str) -> Object {
        Object {
            kind: "Pod",
            namespace: "data",
            name: name.to_owned(),
        }
    }

    fn configmap(name: &str) -> Object {
        Object {
            kind: "ConfigMap",
            namespace: "web",
            name: name.to_owned(),
        }
    }

    /// The path its DELETE is sent to.
    fn path(&self) -> String {
        let (prefix, plural) = match self.kind {
            "Job" => ("/apis/batch/v1", "jobs"),
            "Pod" => ("/api/v1", "pods"),
            _ => ("/api/v1", "configmaps"),
        };
        format!(
            "{prefix}/namespaces/{}/{plural}/{}",
            self.namespace, self.name
        )
    }

    fn is(&self, object: &Value) -> bool {
        object["kind"] == self.kind
            && object["metadata"]["namespace"] == self.namespace
            && object["metadata"]["name"] == self.name.as_str()
    }
}

/// What the scene expects deleted, and what it expects kept.
struct Scene {
    due: Vec<Object>,
    kept: Vec<Object>,
}

/// A Pod in `data` that Succeeded at `finished_at` (or runs, without).
fn create_pod(sim: &SimServer, name: &str, finished_at: Option<DateTime<Utc>>) {
    let pod = json!({"apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": name, "namespace": "data"},
        "spec": {"restartPolicy": "Never", "containers": [{"name": "main", "image": "busybox:1.36"}]}});
    let mut created = sim.create(&pods(), pod).expect("create the Pod");
    created["status"] = match finished_at {
        Some(at) => json!({"phase": "Succeeded", "containerStatuses": [{"name": "main", "state":
            {"terminated": {"exitCode": 0, "startedAt": wire_time(at), "finishedAt": wire_time(at)}}}]}),
        None => json!({"phase": "Running"}),
    };
    sim.update_status(&pods(), created)
        .expect("set the Pod's status");
}

/// The retention policy of the scene's Pods: two minutes after they finish.
fn create_policy(sim: &SimServer) {
    let policy: Value = serde_saphyr::from_str(
        "apiVersion: kube-gc.io/v1alpha1\nkind: ClusterRetentionPolicy\n\
         metadata: {name: finished-pods}\n\
         spec: {preset: pods, ttlSecondsAfterFinished: 120, namespaces: [data]}",
    )
    .expect("policy YAML");
    sim.create(&cluster_policies(), policy)
        .expect("create the policy");
}

/// Jobs and Pods that expire 3 to 27 s from now — inside an outage that begins within the next
/// 3 s and lasts [`OUTAGE`] — and some that never do (unfinished, no TTL, an hour to go). Waits
/// a second so that the controllers have seen them.
async fn expiring(world: &World, scene: &mut Scene) {
    let sim = world.sim();
    let now = world.now();
    for n in 0..10 {
        let name = format!("expires-{n}");
        create_job(sim, &name, Some(3 + 2 * n), Some(now));
        scene.due.push(Object::job(&name));
    }
    create_job(sim, "expires-in-an-hour", Some(3600), Some(now));
    create_job(sim, "running", Some(0), None);
    create_job(sim, "no-ttl", None, Some(now));
    for name in ["expires-in-an-hour", "running", "no-ttl"] {
        scene.kept.push(Object::job(name));
    }
    // Finished 117, 113, … 97 s ago: 3, 7, … 23 s to go.
    for n in 0..6 {
        let name = format!("pod-{n}");
        create_pod(
            sim,
            &name,
            Some(now - chrono::Duration::seconds(117 - 4 * n)),
        );
        scene.due.push(Object::pod(&name));
    }
    create_pod(sim, "pod-running", None);
    create_pod(sim, "pod-fresh", Some(now));
    for name in ["pod-running", "pod-fresh"] {
        scene.kept.push(Object::pod(name));
    }
    tokio::time::sleep(Duration::from_secs(1)).await;
}

/// An owner ConfigMap with dependents, and a dependent whose owner lives.
fn owned(sim: &SimServer, scene: &mut Scene) -> Value {
    let owner = sim
        .create(
            &configmaps(),
            json!({"apiVersion": "v1", "kind": "ConfigMap",
                "metadata": {"name": "owner", "namespace": "web"}}),
        )
        .expect("create the owner");
    let living = sim
        .create(
            &configmaps(),
            json!({"apiVersion": "v1", "kind": "ConfigMap",
                "metadata": {"name": "living-owner", "namespace": "web"}}),
        )
        .expect("create the living owner");
    let reference = |o: &Value| {
        json!([{"apiVersion": "v1", "kind": "ConfigMap", "name": o["metadata"]["name"],
            "uid": o["metadata"]["uid"], "controller": true}])
    };
    for n in 0..8 {
        let name = format!("dependent-{n}");
        sim.create(
            &configmaps(),
            json!({"apiVersion": "v1", "kind": "ConfigMap",
                "metadata": {"name": name, "namespace": "web", "ownerReferences": reference(&owner)}}),
        )
        .expect("create a dependent");
        scene.due.push(Object::configmap(&name));
    }
    sim.create(
        &configmaps(),
        json!({"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": "kept-dependent", "namespace": "web",
                "ownerReferences": reference(&living)}}),
    )
    .expect("create the kept dependent");
    scene.kept.push(Object::configmap("kept-dependent"));
    scene.kept.push(Object::configmap("living-owner"));
    owner
}

/// Deletes the owner while every DELETE the controllers send is refused with 503, and waits
/// until the collector has tried (and failed) every dependent: when the outage begins, the
/// collector holds them all.
async fn orphan_dependents_under_503(world: &World, scene: &Scene) {
    let sim = world.sim();
    sim.faults()
        .set_plan(FaultPlan::new(7).fail(Verb::Delete, 1.0, &[503]));
    sim.delete(
        &configmaps(),
        Some("web"),
        "owner",
        &DeleteOptions::propagation(Propagation::Background),
    )
    .expect("delete the owner");
    let dependents: Vec<String> = scene
        .due
        .iter()
        .filter(|o| o.kind == "ConfigMap")
        .map(Object::path)
        .collect();
    eventually("the collector tried every dependent", || {
        let tried = sim.journal().deletes();
        dependents
            .iter()
            .all(|path| tried.iter().any(|e| &e.path == path && e.status == 503))
    })
    .await;
}

async fn world() -> World {
    world_with(
        SimConfig::default()
            .with_namespaces(&["default", "data", "web"])
            .with_journal_capacity(200_000),
    )
    .await
}

/// The running manager.
struct Running {
    shutdown: CancellationToken,
    task: tokio::task::JoinHandle<Result<(), kube_gc::manager::ControllerFailed>>,
}

async fn start_manager(world: &World) -> Running {
    let endpoints = Endpoints::new(Metrics::new(), false);
    let manager = Manager::new(world.harness.client.clone(), ManagerOptions::default())
        .clock(Arc::clone(&world.clock))
        .publish_to(&endpoints);
    let set = manager.start().await.expect("the manager starts");
    let ready = set.readiness();
    let shutdown = CancellationToken::new();
    let task = tokio::spawn(set.run(shutdown.clone()));
    eventually("every controller is ready", || ready.is_ready()).await;
    Running { shutdown, task }
}

impl Running {
    async fn stop(self) {
        self.shutdown.cancel();
        let stopped = self.task.await.expect("the manager task");
        assert!(stopped.is_ok(), "{stopped:?}");
    }
}

/// When the deletion of `object` took effect in storage: the first change that gave it a
/// `deletionTimestamp` (a Foreground or graceful deletion) or removed it.
fn deleted_at(sim: &SimServer, object: &Object) -> Option<DateTime<Utc>> {
    sim.history().into_iter().find_map(|change| {
        let stored = change.object.value();
        let marked = stored["metadata"]["deletionTimestamp"].is_string();
        (object.is(&stored) && (marked || change.kind == ChangeKind::Deleted)).then_some(change.at)
    })
}

/// Whether the server accepted a DELETE of `object`: every deletion was a controller's request.
fn accepted_delete(deletes: &[JournalEntry], object: &Object) -> bool {
    let path = object.path();
    deletes
        .iter()
        .any(|e| e.path == path && (200..300).contains(&e.status))
}

/// Every due object's deletion took effect within [`RESUMED_WITHIN`] of `back` and none before
/// it, each through a DELETE the server accepted; nothing kept was deleted. Returns the
/// latencies, longest first.
fn assert_resumed(world: &World, scene: &Scene, back: DateTime<Utc>) -> Vec<Duration> {
    let sim = world.sim();
    let deletes = sim.journal().deletes();
    let mut latencies = Vec::new();
    for object in &scene.due {
        let Some(at) = deleted_at(sim, object) else {
            panic!("{object:?} was never deleted");
        };
        let latency = (at - back).to_std().unwrap_or_else(|_| {
            panic!("{object:?} was deleted at {at}, before the server was back at {back}")
        });
        assert!(
            latency <= RESUMED_WITHIN,
            "{object:?} was deleted {latency:?} after the server was back"
        );
        assert!(
            accepted_delete(&deletes, object),
            "{object:?}: no DELETE accepted"
        );
        latencies.push(latency);
    }
    for object in &scene.kept {
        assert_eq!(
            deleted_at(sim, object),
            None,
            "{object:?} must not have been deleted"
        );
    }
    latencies.sort_unstable_by(|a, b| b.cmp(a));
    latencies
}

/// Lets the manager work for five seconds after the server came `back`, checks that it resumed
/// ([`assert_resumed`]), stops it, and prints what it measured (`extra` appended).
async fn resumes_after(
    world: &World,
    scene: &Scene,
    running: Running,
    back: DateTime<Utc>,
    extra: &str,
) {
    tokio::time::sleep(Duration::from_secs(5)).await;
    let latencies = assert_resumed(world, scene, back);
    println!(
        "{} deletions after the return, slowest {:?}{extra}",
        latencies.len(),
        latencies.first()
    );
    running.stop().await;
}

/// The scene, the manager running it, and the dependents held by a 503: ready for an outage.
async fn scene_before_an_outage(world: &World) -> (Scene, Running) {
    let mut scene = Scene {
        due: Vec::new(),
        kept: Vec::new(),
    };
    create_policy(world.sim());
    owned(world.sim(), &mut scene);
    let running = start_manager(world).await;
    orphan_dependents_under_503(world, &scene).await;
    expiring(world, &mut scene).await;
    (scene, running)
}

#[tokio::test(start_paused = true)]
async fn deletions_due_while_the_api_server_is_stopped_go_out_within_a_second_of_its_return() {
    let world = world().await;
    let (scene, running) = scene_before_an_outage(&world).await;

    let sim = world.sim();
    sim.stop_apiserver().await;
    sim.faults().set_plan(FaultPlan::new(7));
    tokio::time::sleep(OUTAGE).await;
    let back = world.now();
    sim.start_apiserver()
        .await
        .expect("the API server starts again");
    resumes_after(&world, &scene, running, back, "").await;
}

/// etcd down for longer than the API server's request timeout (one minute), so that requests do
/// fail (504) rather than merely wait; after a shorter outage a request still waiting goes on
/// when etcd is back.
#[tokio::test(start_paused = true)]
async fn deletions_due_while_etcd_is_down_go_out_within_a_second_of_its_return() {
    let world = world().await;
    let (scene, running) = scene_before_an_outage(&world).await;

    let sim = world.sim();
    sim.set_etcd_up(false);
    sim.faults().set_plan(FaultPlan::new(7));
    tokio::time::sleep(3 * OUTAGE).await;
    let back = world.now();
    let timed_out = sim
        .journal()
        .deletes()
        .iter()
        .filter(|e| e.status == 504)
        .count();
    assert!(
        timed_out > 0,
        "the outage outlasted the request timeout: DELETEs got 504"
    );
    sim.set_etcd_up(true);
    let extra = format!("; {timed_out} DELETEs timed out");
    resumes_after(&world, &scene, running, back, &extra).await;
}

/// The server answers every request 503 for half the outage, then 429 with `Retry-After: 1`
/// (which the client obeys, up to ten times per request) for the other half.
#[tokio::test(start_paused = true)]
async fn deletions_due_while_the_server_answers_503_then_429_go_out_within_a_second_of_its_return()
{
    let world = world().await;
    let (scene, running) = scene_before_an_outage(&world).await;

    let sim = world.sim();
    sim.faults()
        .set_plan(FaultPlan::new(7).fail_all(1.0, &[503]));
    tokio::time::sleep(OUTAGE / 2).await;
    sim.faults().set_plan(FaultPlan::new(7).throttle(1.0, 1));
    tokio::time::sleep(OUTAGE / 2).await;
    let back = world.now();
    sim.faults().set_plan(FaultPlan::new(7));
    resumes_after(&world, &scene, running, back, "").await;
}

/// After the API server's return the informers see changes again within a few seconds, not
/// after the rest of their backoff: a Job that finishes just after the return, with no TTL to
/// wait, is deleted soon after. The outage is long enough (90 s) for the reflectors' backoff to
/// reach its cap (30–60 s), and the restarted server's watch caches answer their re-watches 410:
/// the relist that follows must not wait out a backoff the outage grew. The bound: the return
/// seen by `/readyz` (a probe interval), the reflector's spread ([`RETURN_SPREAD`]), the first
/// step of a fresh backoff after a watch that ended at once (at most 1.6 s), and half a second
/// to relist and delete.
#[tokio::test(start_paused = true)]
async fn changes_made_right_after_the_return_are_seen_within_a_few_seconds() {
    let world = world().await;
    let running = start_manager(&world).await;
    let sim = world.sim();
    // A write moves the revision on (as exchanges 56-60 show a busy server's does): every
    // watch but the ConfigMaps' is then behind the restarted watch caches, and gets 410.
    sim.create(
        &configmaps(),
        json!({"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": "unrelated", "namespace": "web"}}),
    )
    .expect("create a ConfigMap");
    tokio::time::sleep(Duration::from_secs(1)).await;
    sim.stop_apiserver().await;
    tokio::time::sleep(3 * OUTAGE).await;
    let back = world.now();
    sim.start_apiserver()
        .await
        .expect("the API server starts again");
    let job = Object::job("finished-after-the-return");
    create_job(sim, &job.name, Some(0), Some(back));
    tokio::time::sleep(Duration::from_secs(5)).await;

    let deleted = deleted_at(sim, &job).expect("the Job is deleted");
    let latency = (deleted - back).to_std().unwrap_or_default();
    let bound = PROBE_INTERVAL + RETURN_SPREAD + Duration::from_millis(1600 + 500);
    assert!(latency <= bound, "deleted {latency:?} after the return");
    println!("deleted {latency:?} after the return");
    running.stop().await;
}

/// The scenario the issue was found with, on the paused clock: Jobs expiring one every two
/// seconds while the API server is stopped three times (15 s each, 10 s apart), relisted from
/// its rebuilt watch caches after each start. Every Job is deleted within a second of its
/// expiry, or of the end of the outage it expired in — however many outages its key met.
#[tokio::test(start_paused = true)]
async fn jobs_expiring_across_three_restarts_are_each_deleted_within_a_second() {
    let world = world().await;
    let running = start_manager(&world).await;
    let sim = world.sim();
    // Finish times are written in whole seconds, as the API server writes them.
    let start = world.now().trunc_subsecs(0);
    let names: Vec<String> = (0..30).map(|n| format!("every-two-seconds-{n}")).collect();
    for (n, name) in (0i32..).zip(&names) {
        create_job(sim, name, Some(3 + 2 * n), Some(start));
    }
    tokio::time::sleep(Duration::from_secs(2)).await;
    let mut outages = Vec::new();
    for _ in 0..3 {
        let down = world.now();
        sim.stop_apiserver().await;
        tokio::time::sleep(Duration::from_secs(15)).await;
        let back = world.now();
        sim.start_apiserver()
            .await
            .expect("the API server starts again");
        outages.push((down, back));
        tokio::time::sleep(Duration::from_secs(10)).await;
    }
    tokio::time::sleep(Duration::from_secs(10)).await;

    for (n, name) in (0i64..).zip(&names) {
        let expired = start + chrono::Duration::seconds(3 + 2 * n);
        let due = outages
            .iter()
            .find(|(down, back)| *down <= expired && expired < *back)
            .map_or(expired, |(_, back)| *back);
        let deleted = deleted_at(sim, &Object::job(name))
            .unwrap_or_else(|| panic!("{name} was never deleted"));
        let latency = (deleted - due).to_std().unwrap_or_else(|_| {
            panic!("{name} was deleted at {deleted}, before it was due at {due}")
        });
        assert!(
            latency <= RESUMED_WITHIN,
            "{name}: {latency:?} after it was due"
        );
    }
    running.stop().await;
}
