//! `kube-gc explain namespaces/NAME` against the simulated server, whose namespaces follow the
//! real lifecycle (exchanges 137–164): a namespace held by `spec.finalizers: [kubernetes]` and
//! a ConfigMap's finalizer says what remains, who removes each finalizer and who finishes it —
//! and the namespace controller then does what it said; a foreground deletion, a claim held by
//! a running Pod and a Pod in its grace period are followed to the root cause; a group discovery
//! cannot read blocks the finalize and is named; a namespace not being deleted gets a short
//! answer.

mod client_support;
mod explain_support;
mod ttl_support;

use std::sync::Arc;
use std::time::Duration;

use chrono::{DateTime, Utc};
use kube_gc::controllers::namespace::{NamespaceController, NamespaceOptions};
use kube_gc::controllers::Wiring;
use kube_gc::explain::{render, Blocker, Explanation, FinalizerOwner, FinalizerWait, VerdictKind};
use kube_gc::manager::ControllerSelection;
use kube_gc::runtime::sources::Sources;
use kube_gc::sim::{DeleteOptions, Gvr, Propagation, SimConfig, SimServer};
use serde_json::{json, Value};
use tokio_util::sync::CancellationToken;

use explain_support::{explain_assuming, explain_at};
use ttl_support::{wire_time, world_with, World, PATIENCE};

const HOLD: &str = "example.com/hold";

fn namespaces() -> Gvr {
    Gvr::new("", "v1", "namespaces")
}
fn configmaps() -> Gvr {
    Gvr::new("", "v1", "configmaps")
}
fn pods() -> Gvr {
    Gvr::new("", "v1", "pods")
}
fn nodes() -> Gvr {
    Gvr::new("", "v1", "nodes")
}
fn claims() -> Gvr {
    Gvr::new("", "v1", "persistentvolumeclaims")
}
fn jobs() -> Gvr {
    Gvr::new("batch", "v1", "jobs")
}

async fn world(names: &[&str]) -> World {
    world_with(SimConfig::default().with_namespaces(names)).await
}

async fn explain(world: &World, type_: &str, namespace: &str, name: &str) -> Explanation {
    explain_at(world, type_, namespace, name, world.now())
        .await
        .expect("explained")
}

/// Deletes a namespace as kubectl does; returns its `deletionTimestamp`.
fn delete_namespace(sim: &SimServer, name: &str) -> DateTime<Utc> {
    sim.delete(&namespaces(), None, name, &DeleteOptions::default())
        .expect("delete the namespace");
    let marked = sim.get(&namespaces(), None, name).expect("still there");
    let at = marked["metadata"]["deletionTimestamp"]
        .as_str()
        .expect("marked");
    DateTime::parse_from_rfc3339(at).expect("a time").to_utc()
}

fn configmap(namespace: &str, name: &str, finalizers: &[&str]) -> Value {
    json!({"metadata": {"name": name, "namespace": namespace, "finalizers": finalizers},
        "data": {"k": "v"}})
}

/// A Pod in `namespace` bound to `node` (empty: not scheduled) using `claims`.
fn pod(namespace: &str, name: &str, node: &str, claims: &[&str], extra: Value) -> Value {
    let volumes: Vec<Value> = claims
        .iter()
        .map(|c| json!({"name": c, "persistentVolumeClaim": {"claimName": c}}))
        .collect();
    let mut pod = json!({"metadata": {"name": name, "namespace": namespace},
        "spec": {"containers": [{"name": "c", "image": "busybox:1.36"}], "volumes": volumes}});
    if !node.is_empty() {
        pod["spec"]["nodeName"] = json!(node);
    }
    if let Some(fields) = extra.as_object() {
        for (k, v) in fields {
            pod["metadata"][k] = v.clone();
        }
    }
    pod
}

fn ready_node(sim: &SimServer, name: &str) {
    let node = sim
        .create(&nodes(), json!({"metadata": {"name": name}}))
        .expect("a node");
    let mut node = node;
    node["status"] = json!({"conditions": [{"type": "Ready", "status": "True"}]});
    sim.update_status(&nodes(), node).expect("ready");
}

/// The `kubernetes` finalizer of `spec.finalizers` in an explanation.
fn kubernetes(said: &Explanation) -> &FinalizerWait {
    let deletion = said.deletion.as_ref().expect("being deleted");
    deletion
        .finalizers
        .iter()
        .find(|f| f.finalizer == "kubernetes" && f.field == Some("spec.finalizers"))
        .unwrap_or_else(|| panic!("no kubernetes finalizer: {said:#?}"))
}

/// The blocker about `object`, anywhere in `list`.
fn find<'b>(list: &'b [Blocker], object: &str) -> Option<&'b Blocker> {
    list.iter().find_map(|b| {
        if b.object == object {
            Some(b)
        } else {
            find(&b.blockers, object)
        }
    })
}

fn blocker<'b>(list: &'b [Blocker], object: &str) -> &'b Blocker {
    find(list, object).unwrap_or_else(|| panic!("no blocker {object}: {list:#?}"))
}

fn decision<'e>(said: &'e Explanation, controller: &str) -> &'e kube_gc::explain::Decision {
    said.decisions
        .iter()
        .find(|d| d.controller == controller)
        .unwrap_or_else(|| panic!("no decision of {controller}"))
}

/// The namespace controller running against the world, as `kube-gc run` builds it.
struct Running {
    stop: CancellationToken,
    task: tokio::task::JoinHandle<Result<(), kube_gc::runtime::controller::ControllerError>>,
}

fn run_namespace_controller(world: &World) -> Running {
    let client = world.harness.client.clone();
    let sources = Sources::new(
        client.for_component("shared-informers", 1.0),
        Default::default(),
    );
    let options = NamespaceOptions {
        wiring: Wiring::default()
            .sources(sources)
            .clock(Arc::clone(&world.clock)),
        ..NamespaceOptions::default()
    };
    let controller =
        NamespaceController::new(client.for_component("namespace-controller", 1.0), options);
    let stop = CancellationToken::new();
    let task = tokio::spawn(controller.run(stop.clone()));
    Running { stop, task }
}

impl Running {
    async fn stop(self) {
        self.stop.cancel();
        let stopped = tokio::time::timeout(PATIENCE, self.task).await;
        assert!(matches!(stopped, Ok(Ok(Ok(())))), "{stopped:?}");
    }
}

async fn until(
    sim: &SimServer,
    gvr: &Gvr,
    namespace: Option<&str>,
    name: &str,
    what: impl Fn(Option<&Value>) -> bool,
) {
    let waited = tokio::time::timeout(PATIENCE, sim.wait_for(gvr, namespace, name, what)).await;
    assert!(matches!(waited, Ok(Ok(_))), "{name} never got there");
}

/// The scene users ask about ("why is my namespace still Terminating"): `kubernetes` in
/// `spec.finalizers` and a ConfigMap with a finalizer nobody removes.
#[tokio::test(start_paused = true)]
async fn a_namespace_held_by_kubernetes_and_a_configmaps_finalizer_says_what_holds_it_and_who_finishes_it(
) {
    let world = world(&["default", "xn-held"]).await;
    let sim = world.sim();
    sim.create(&configmaps(), configmap("xn-held", "cm-a", &[HOLD]))
        .expect("the ConfigMap");
    let deleted_at = delete_namespace(sim, "xn-held");

    let before = sim.journal().entries().len();
    let said = explain(&world, "namespaces", "", "xn-held").await;
    let methods: std::collections::BTreeSet<String> = sim.journal().entries()[before..]
        .iter()
        .map(|e| e.method.clone())
        .collect();
    assert_eq!(
        methods,
        std::collections::BTreeSet::from(["GET".to_owned()]),
        "only reads"
    );
    assert_eq!(said.verdict, VerdictKind::Blocked, "{said:#?}");
    let screen = render::text(&said);
    assert!(!screen.contains("no finalizers"), "{screen}");
    let held = kubernetes(&said);
    assert!(matches!(
        held.owner,
        FinalizerOwner::KubeGc {
            controller: "namespace",
            ..
        }
    ));
    assert!(
        held.waits_for
            .starts_with("its content to be deleted, then kube-gc's namespace (run here"),
        "{held:?}"
    );
    let cm = blocker(&held.blockers, "ConfigMap xn-held/cm-a");
    assert_eq!(
        cm.why,
        "not deleted yet: the namespace controller deletes it; once deleted, its finalizers \
         example.com/hold hold it"
    );
    let hold = blocker(&cm.blockers, "finalizer example.com/hold");
    assert!(
        hold.why
            .starts_with("removed by no controller kube-gc knows of"),
        "{hold:?}"
    );
    let delay = blocker(&held.blockers, "the safety delay");
    assert!(
        delay
            .why
            .contains(&wire_time(deleted_at + chrono::Duration::seconds(5))),
        "{delay:?}"
    );

    let report = said.namespace.as_ref().expect("a namespace report");
    assert_eq!(report.phase, "Terminating");
    let remaining = &report.remaining[0];
    assert_eq!(
        (
            remaining.resource.as_str(),
            remaining.count,
            remaining.names.clone()
        ),
        ("configmaps", 1, vec!["cm-a".to_owned()])
    );
    assert_eq!(remaining.finalizers[0].owner, FinalizerOwner::Unknown);
    let by = report.finished_by.as_ref().expect("who finishes it");
    assert!(by.run_here, "{by:?}");
    assert_eq!(by.next, "delete configmaps (one deletecollection)");
    assert!(
        by.safety_delay_left_seconds
            .is_some_and(|left| (1..=5).contains(&left)),
        "{by:?}"
    );
    let namespace = decision(&said, "namespace");
    assert_eq!(
        (namespace.governs, namespace.verdict),
        (true, VerdictKind::Blocked)
    );
    assert!(
        screen.contains("kubernetes (spec.finalizers): waits for its content to be deleted"),
        "{screen}"
    );
    assert!(
        screen.contains("Who finishes it\n  kube-gc's namespace controller"),
        "{screen}"
    );

    // Where kube-gc does not run the namespace controller, kcm's is named — and what happens
    // where none runs.
    let managed = ControllerSelection::parse(&["volcano-job-ttl", "retention"]).expect("known");
    let elsewhere = explain_assuming(&world, "namespaces", "", "xn-held", &managed, world.now())
        .await
        .expect("explained");
    let by = elsewhere
        .namespace
        .as_ref()
        .and_then(|r| r.finished_by.as_ref())
        .expect("who");
    assert!(!by.run_here);
    assert!(
        by.who
            .starts_with("kube-controller-manager's namespace-controller"),
        "{by:?}"
    );
    assert!(by.who.contains("it stays Terminating"), "{by:?}");
    assert!(kubernetes(&elsewhere)
        .waits_for
        .contains("kube-controller-manager's namespace-controller"));

    // The controller does what explain said: it deletes the ConfigMap, then waits for its
    // finalizer, past the safety delay.
    let running = run_namespace_controller(&world);
    until(sim, &configmaps(), Some("xn-held"), "cm-a", |cm| {
        cm.is_some_and(|cm| cm["metadata"]["deletionTimestamp"].is_string())
    })
    .await;
    tokio::time::sleep(Duration::from_secs(10)).await;
    let waiting = explain(&world, "namespaces", "", "xn-held").await;
    let held = kubernetes(&waiting);
    assert_eq!(
        blocker(&held.blockers, "ConfigMap xn-held/cm-a").why,
        "being deleted, held by its finalizers example.com/hold"
    );
    assert!(
        find(&held.blockers, "the safety delay").is_none(),
        "{held:#?}"
    );
    let by = waiting
        .namespace
        .as_ref()
        .and_then(|r| r.finished_by.as_ref())
        .expect("who");
    assert_eq!(by.safety_delay_left_seconds, Some(0));
    assert!(by.next.starts_with("wait for what remains to go"), "{by:?}");
    assert_eq!(
        by.waits_for[0],
        "configmaps: 1 to go, 1 held by example.com/hold"
    );

    // Its release is all it waited for.
    let mut cm = sim
        .get(&configmaps(), Some("xn-held"), "cm-a")
        .expect("held");
    cm["metadata"]["finalizers"] = json!([]);
    sim.update(&configmaps(), cm).expect("released");
    until(sim, &namespaces(), None, "xn-held", |ns| ns.is_none()).await;
    running.stop().await;
}

/// An empty namespace: finalized when the safety delay ends, as explain says.
#[tokio::test(start_paused = true)]
async fn an_empty_namespace_is_finalized_when_explain_says() {
    let world = world(&["default", "xn-empty"]).await;
    let deleted_at = delete_namespace(world.sim(), "xn-empty");
    let said = explain(&world, "ns", "", "xn-empty").await;
    assert_eq!(said.verdict, VerdictKind::DeleteAt, "{said:#?}");
    let due = deleted_at + chrono::Duration::seconds(5);
    assert_eq!(said.delete_at, Some(wire_time(due)));
    let running = run_namespace_controller(&world);
    until(world.sim(), &namespaces(), None, "xn-empty", |ns| {
        ns.is_none()
    })
    .await;
    let late = world.now() - due;
    assert!(
        late >= chrono::Duration::zero() && late < chrono::Duration::seconds(1),
        "{late}"
    );
    running.stop().await;
}

/// A Job deleted in the foreground waits on its Pod, whose own finalizer holds it.
#[tokio::test(start_paused = true)]
async fn a_foreground_deletion_is_followed_to_its_dependents_finalizers() {
    let world = world(&["default", "xn-fg"]).await;
    let sim = world.sim();
    let job = sim
        .create(
            &jobs(),
            json!({"metadata": {"name": "owner", "namespace": "xn-fg"},
                "spec": {"template": {"spec": {"restartPolicy": "Never",
                    "containers": [{"name": "c", "image": "busybox:1.36"}]}}}}),
        )
        .expect("the Job");
    let reference = json!([{"apiVersion": "batch/v1", "kind": "Job", "name": "owner",
        "uid": job["metadata"]["uid"], "controller": true, "blockOwnerDeletion": true}]);
    let worker = pod(
        "xn-fg",
        "worker",
        "",
        &[],
        json!({"ownerReferences": reference, "finalizers": ["example.com/protect"]}),
    );
    sim.create(&pods(), worker).expect("the Pod");
    sim.delete(
        &jobs(),
        Some("xn-fg"),
        "owner",
        &DeleteOptions::propagation(Propagation::Foreground),
    )
    .expect("delete the Job in the foreground");
    delete_namespace(sim, "xn-fg");

    let said = explain(&world, "namespaces", "", "xn-fg").await;
    let held = kubernetes(&said);
    let owner = blocker(&held.blockers, "Job xn-fg/owner");
    assert_eq!(
        owner.why,
        "being deleted, held by its finalizers foregroundDeletion"
    );
    let foreground = blocker(&owner.blockers, "finalizer foregroundDeletion");
    assert!(
        foreground
            .why
            .contains("once its blocking dependents are deleted"),
        "{foreground:?}"
    );
    let dependent = blocker(&foreground.blockers, "Pod xn-fg/worker");
    assert!(
        dependent.why.contains("example.com/protect"),
        "{dependent:?}"
    );
    // The Pod itself, among what remains: deleted first, then its finalizer holds it.
    let worker = held
        .blockers
        .iter()
        .find(|b| b.object == "Pod xn-fg/worker")
        .expect("the Pod");
    assert!(
        worker.why.starts_with("not deleted yet: the namespace controller deletes Pods first; once deleted, its finalizers example.com/protect hold it"),
        "{worker:?}"
    );
}

/// A claim being deleted is held by `pvc-protection` while a running Pod uses it.
#[tokio::test(start_paused = true)]
async fn a_claim_held_by_a_running_pod_names_the_pod_and_what_ends_it() {
    let world = world(&["default", "xn-pvc"]).await;
    let sim = world.sim();
    ready_node(sim, "n1");
    sim.create(
        &claims(),
        json!({"metadata": {"name": "data", "namespace": "xn-pvc"},
        "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}}}),
    )
    .expect("the claim");
    let mut web = sim
        .create(&pods(), pod("xn-pvc", "web", "n1", &["data"], json!({})))
        .expect("the Pod");
    web["status"] = json!({"phase": "Running"});
    sim.update_status(&pods(), web).expect("running");
    sim.delete(&claims(), Some("xn-pvc"), "data", &DeleteOptions::default())
        .expect("delete the claim");
    delete_namespace(sim, "xn-pvc");

    let said = explain(&world, "namespaces", "", "xn-pvc").await;
    let held = kubernetes(&said);
    let claim = blocker(&held.blockers, "PersistentVolumeClaim xn-pvc/data");
    assert_eq!(
        claim.why,
        "being deleted, held by its finalizers kubernetes.io/pvc-protection"
    );
    let protection = blocker(&claim.blockers, "finalizer kubernetes.io/pvc-protection");
    assert!(
        protection
            .why
            .starts_with("removed by kube-gc's pvc-protection (run here;"),
        "{protection:?}"
    );
    let user = blocker(&protection.blockers, "Pod xn-pvc/web");
    assert_eq!(
        user.why,
        "uses it; not deleted yet (the namespace controller deletes Pods first); then its \
         kubelet on node n1 removes it once its containers have stopped"
    );

    // The claim itself: the PVC protection controller's decision and its finalizer's wait.
    let data = explain(&world, "pvc", "xn-pvc", "data").await;
    let pvc = decision(&data, "pvc-protection");
    assert_eq!(
        (pvc.governs, pvc.verdict),
        (true, VerdictKind::Blocked),
        "{pvc:?}"
    );
    assert!(
        pvc.summary.starts_with("in use by pod xn-pvc/web"),
        "{pvc:?}"
    );
    let wait = &data.deletion.as_ref().expect("being deleted").finalizers[0];
    assert_eq!(wait.blockers[0].object, "Pod xn-pvc/web");
    assert!(
        wait.waits_for
            .ends_with("to remove it once no scheduled Pod uses it"),
        "{wait:?}"
    );
}

/// A Pod in its grace period on a node that does not exist: when its grace period ends, and
/// that the pod garbage collector removes it.
#[tokio::test(start_paused = true)]
async fn a_pod_in_its_grace_period_says_when_it_ends_and_what_removes_it() {
    let world = world(&["default", "xn-grace"]).await;
    let sim = world.sim();
    sim.create(&pods(), pod("xn-grace", "web", "gone", &[], json!({})))
        .expect("the Pod");
    sim.delete(&pods(), Some("xn-grace"), "web", &DeleteOptions::default())
        .expect("delete it");
    delete_namespace(sim, "xn-grace");
    let said = explain(&world, "namespaces", "", "xn-grace").await;
    let web = blocker(&kubernetes(&said).blockers, "Pod xn-grace/web");
    let ends = wire_time(world.now() + chrono::Duration::seconds(30));
    assert_eq!(
        web.why,
        format!(
            "terminating, its 30s grace period ends {ends} (in 30s); node gone does not exist: \
             kube-gc's podgc force-deletes it after a 40 s quarantine"
        )
    );
    let pod = explain(&world, "pods", "xn-grace", "web").await;
    // Not "gone shortly": it waits for its grace period, and for what removes it then.
    assert_eq!(pod.verdict, VerdictKind::DeleteAt, "{pod:#?}");
    let grace = pod
        .deletion
        .as_ref()
        .and_then(|d| d.grace.as_ref())
        .expect("graceful");
    assert_eq!((grace.seconds, grace.ends_at.clone()), (30, ends.clone()));
    let screen = render::text(&pod);
    assert!(!screen.contains("it should be gone shortly"), "{screen}");
    let podgc = decision(&pod, "podgc");
    assert_eq!(podgc.verdict, VerdictKind::DeleteAt, "{podgc:?}");
    assert_eq!(
        podgc.delete_at,
        Some(wire_time(world.now() + chrono::Duration::seconds(40)))
    );
}

/// A group discovery cannot read may serve content: the finalize waits for it, and says so.
#[tokio::test(start_paused = true)]
async fn a_stale_group_blocks_the_finalize_and_is_named() {
    let world = world(&["default", "xn-stale"]).await;
    let sim = world.sim();
    sim.set_stale("batch.volcano.sh", "v1alpha1", true);
    delete_namespace(sim, "xn-stale");
    tokio::time::sleep(Duration::from_secs(6)).await;
    let said = explain(&world, "namespaces", "", "xn-stale").await;
    assert_eq!(said.verdict, VerdictKind::Blocked, "{said:#?}");
    let report = said.namespace.as_ref().expect("a report");
    assert_eq!(
        report.discovery_failures[0].what,
        "batch.volcano.sh/v1alpha1"
    );
    let group = blocker(
        &kubernetes(&said).blockers,
        "discovery of batch.volcano.sh/v1alpha1",
    );
    assert!(
        group.why.contains("the finalize waits until it answers"),
        "{group:?}"
    );
    let namespace = decision(&said, "namespace");
    assert_eq!(
        namespace.summary,
        "it cannot finalize until what failed succeeds; retried with back-off"
    );
    sim.set_stale("batch.volcano.sh", "v1alpha1", false);
    let said = explain(&world, "namespaces", "", "xn-stale").await;
    assert_eq!(said.verdict, VerdictKind::DeleteNow, "{said:#?}");
}

#[tokio::test(start_paused = true)]
async fn a_namespace_not_being_deleted_gets_a_short_answer() {
    let world = world(&["default", "xn-live"]).await;
    let said = explain(&world, "namespaces", "", "xn-live").await;
    assert_eq!(said.verdict, VerdictKind::Keep);
    assert_eq!(
        said.reasons,
        ["Active: not being deleted; kube-gc never deletes a namespace, it finishes the deletion of one that was deleted"]
    );
    assert!(said.deletion.is_none());
    let report = said.namespace.as_ref().expect("a report");
    assert!(
        report.remaining.is_empty() && report.finished_by.is_none(),
        "{report:?}"
    );
    // Only the namespace was read: none of its content.
    let screen = render::text(&said);
    assert!(!screen.contains("Content"), "{screen}");
}
