//! The UID guard against a namespace re-created under the same name, on the simulated server.

use super::*;
use crate::namespace::content::ContentIndex;
use crate::namespace::metrics::NamespaceMetrics;
use kube_gc_client::{Client, ClientOptions};
use kube_gc_core::clock::ManualClock;
use kube_gc_runtime::cache::Store;
use kube_gc_runtime::events::NoopRecorder;
use kube_gc_sim::{Gvr, SimConfig, SimServer};
use serde_json::json;

fn namespaces() -> Gvr {
    Gvr::new("", "v1", "namespaces")
}

/// A server where namespace `team-a` was deleted (the copy returned), then — finalized by
/// someone else — re-created under the same name with a Pod, and a controller whose cache
/// still holds the first one, being deleted.
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
    // Loaded as a user's `--kubeconfig`, as `kube_gc::sim::Connect` does.
    let path = dir.path().join("kubeconfig");
    sim.write_kubeconfig(&path).unwrap();
    let config = kube_gc_client::config::ClientConfig::load(
        &kube_gc_client::config::LoadOptions::file(&path),
        &kube_gc_client::config::Environment::empty(),
    )
    .unwrap();
    let client = Client::new(&config, &ClientOptions::default().with_rate(0.0, 1)).unwrap();
    let store: Store<CachedNamespace> = Store::new();
    store.apply_added(CachedNamespace::from_raw(stale).unwrap());
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
    let subject = judged.subject();
    // The server refuses the write on the judged copy's UID and resourceVersion.
    let refused = requests::finalize(&shared.client, &judged.raw).await;
    assert!(refused.is_err_and(|e| e.is_conflict()));
    let mut pass = Pass {
        progress: Progress::default(),
        shared: &shared,
        subject,
        judged,
        discovery: shared.latest_discovery(),
        failures: HashMap::new(),
        listed: HashMap::new(),
        blocked: Vec::new(),
        confirmed: true,
    };
    let assessment = pass.assess();
    pass.finalize(&assessment).await.unwrap();
    // The re-created namespace, being deleted too, keeps its finalizer: it is judged on its
    // own, after its own safety delay.
    let namespace = sim.get(&namespaces(), None, "team-a").unwrap();
    assert_eq!(namespace["spec"]["finalizers"], json!(["kubernetes"]));
    assert_eq!(shared.metrics.finalized_total(), 0);
}
