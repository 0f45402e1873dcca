//! The namespace controller's UID guard against a namespace finalized by someone else and
//! re-created under the same name while the controller's cache still holds the first one, being
//! deleted — at the read a pass makes before it deletes content, and at the finalize — on the
//! simulated server (whose namespaces follow the real lifecycle, exchanges 137–164).

use std::sync::Arc;

use kube_gc::client::{Client, ClientOptions};
use kube_gc::clock::ManualClock;
use kube_gc::controllers::namespace::steps::finalize_confirmed;
use kube_gc::controllers::namespace::{
    CachedNamespace, ContentIndex, NamespaceMetrics, NamespaceReconciler, Shared,
};
use kube_gc::events::NoopRecorder;
use kube_gc::runtime::cache::ObjectKey;
use kube_gc::runtime::cache::Store;
use kube_gc::runtime::controller::{Action, Reconciler};
use kube_gc::sim::faults::Verb;
use kube_gc::sim::Connect as _;
use kube_gc::sim::{Gvr, SimConfig, SimServer};
use serde_json::{json, Value};

fn namespaces() -> Gvr {
    Gvr::new("", "v1", "namespaces")
}

/// A server where namespace `team-a` was deleted (the copy returned), then — finalized by
/// someone else — re-created under the same name with a Pod, and a controller's state whose
/// cache still holds the first one, being deleted.
async fn re_created() -> (SimServer, Arc<Shared>, tempfile::TempDir) {
    let sim = SimServer::start(SimConfig::default()).await.unwrap();
    sim.create(&namespaces(), json!({"metadata": {"name": "team-a"}}))
        .unwrap();
    sim.delete(&namespaces(), None, "team-a", &Default::default())
        .unwrap();
    let stale = sim.get(&namespaces(), None, "team-a").unwrap();
    let mut emptied = stale.clone();
    emptied["spec"]["finalizers"] = json!([]);
    sim.finalize_namespace(emptied).unwrap();
    sim.create(&namespaces(), json!({"metadata": {"name": "team-a"}}))
        .unwrap();
    let pod = json!({"metadata": {"name": "web", "namespace": "team-a"},
        "spec": {"containers": [{"name": "c", "image": "busybox:1.36"}]}});
    sim.create(&Gvr::new("", "v1", "pods"), pod).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let config = sim.client_config(&dir.path().join("kubeconfig")).unwrap();
    let client = Client::new(&config, &ClientOptions::default().with_rate(0.0, 1)).unwrap();
    let store: Store<CachedNamespace> = Store::new();
    store.apply_added(CachedNamespace::from_raw(stale).unwrap());
    // An hour on: the safety delay since the first deletion has passed.
    let clock = Arc::new(ManualClock::new(
        chrono::Utc::now() + chrono::Duration::hours(1),
    ));
    let shared = Arc::new(Shared::new(
        client,
        Arc::new(store),
        ContentIndex::new(Arc::new(|_: &str| {})),
        clock,
        Arc::new(NoopRecorder),
        NamespaceMetrics::new(),
        std::time::Duration::from_secs(5),
        false,
    ));
    shared.rediscover().await.unwrap();
    (sim, shared, dir)
}

fn uid(object: &Value) -> String {
    object["metadata"]["uid"]
        .as_str()
        .unwrap_or_default()
        .to_owned()
}

#[tokio::test]
async fn a_stale_copy_never_touches_the_namespace_re_created_under_its_name() {
    let (sim, shared, _dir) = re_created().await;
    let reconciler = NamespaceReconciler::new(Arc::clone(&shared));
    let action = reconciler.reconcile(&"team-a".to_owned()).await.unwrap();
    assert_eq!(action, Action::Done);
    // The LIST saw the new namespace's Pod; the GET before deleting it saw another UID.
    let pods = sim
        .list(&Gvr::new("", "v1", "pods"), Some("team-a"))
        .unwrap();
    assert_eq!(pods.len(), 1);
    assert!(pods[0]["metadata"].get("deletionTimestamp").is_none());
    let namespace = sim.get(&namespaces(), None, "team-a").unwrap();
    assert_eq!(namespace["spec"]["finalizers"], json!(["kubernetes"]));
    assert_eq!(namespace["status"]["phase"], "Active");
    sim.shutdown().await;
}

#[tokio::test]
async fn a_finalize_judged_on_a_namespace_since_re_created_fails_and_finalizes_nothing() {
    let (sim, shared, _dir) = re_created().await;
    // Judged (and confirmed) before the re-creation; the finalize comes after it.
    sim.delete(&namespaces(), None, "team-a", &Default::default())
        .unwrap();
    let judged = shared
        .namespaces
        .get(&ObjectKey::cluster_scoped("team-a"))
        .unwrap();
    let judged_uid = uid(&judged.raw);
    sim.journal().clear();
    finalize_confirmed(&shared, judged).await.unwrap();
    // The server refused the write on the judged copy's UID and resourceVersion.
    let finalizes: Vec<(u16, String)> = sim
        .journal()
        .entries()
        .iter()
        .filter(|e| e.verb == Verb::Update && e.path.ends_with("/finalize"))
        .map(|e| (e.status, e.body.as_ref().map(uid).unwrap_or_default()))
        .collect();
    assert_eq!(finalizes, [(409, judged_uid)]);
    // The re-created namespace, being deleted too, keeps its finalizer: it is judged on its
    // own, after its own safety delay.
    let namespace = sim.get(&namespaces(), None, "team-a").unwrap();
    assert_eq!(namespace["spec"]["finalizers"], json!(["kubernetes"]));
    assert_eq!(shared.metrics.finalized_total(), 0);
    sim.shutdown().await;
}
