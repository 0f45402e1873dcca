//! One list and one watch per resource per process (`runtime::sources`), against the simulated
//! API server: the controllers of `kube-gc run` share them whatever is enabled; subscribers of
//! one resource each get their own projection of the same objects; metadata only is asked for
//! while nobody needs more; a late subscriber costs one more list, not a second watch; the last
//! to leave stops the source.

mod client_support;
mod ttl_support;

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use kube_gc::api::PartialObjectMetadata;
use kube_gc::client::ResourceRef;
use kube_gc::manager::{Manager, ManagerOptions};
use kube_gc::runtime::cache::Store;
use kube_gc::runtime::informer::SharedInformer;
use kube_gc::runtime::reflector::{Form, ReflectorConfig};
use kube_gc::runtime::sources::{SourceKey, Sources, Subscriber};
use kube_gc::sim::faults::Verb;
use kube_gc::sim::journal::JournalEntry;
use kube_gc::sim::SimServer;
use serde_json::Value;
use tokio_util::sync::CancellationToken;

use ttl_support::*;

/// Requests of `verb` by collection path (`/apis/batch/v1/jobs`), counted.
fn count(journal: &[JournalEntry], verb: Verb) -> BTreeMap<String, usize> {
    let mut counts = BTreeMap::new();
    for entry in journal.iter().filter(|e| e.verb == verb) {
        *counts.entry(entry.path.clone()).or_insert(0) += 1;
    }
    counts
}

/// The resources several controllers of `kube-gc run` read.
const SHARED: [&str; 9] = [
    "/apis/batch/v1/jobs",
    "/apis/batch.volcano.sh/v1alpha1/jobs",
    "/api/v1/namespaces",
    "/apis/kube-gc.io/v1alpha1/retentionpolicies",
    "/apis/kube-gc.io/v1alpha1/clusterretentionpolicies",
    "/api/v1/pods",
    "/api/v1/nodes",
    "/api/v1/persistentvolumeclaims",
    "/api/v1/persistentvolumes",
];

/// Until the sim has seen a WATCH of each of `paths` (on the paused clock: no real waiting).
async fn until_watched(sim: &SimServer, paths: &[&str]) {
    let all_watched = || {
        let watches = count(&sim.journal().entries(), Verb::Watch);
        paths.iter().all(|path| watches.contains_key(*path))
    };
    tokio::time::timeout(PATIENCE, async {
        while !all_watched() {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    })
    .await
    .expect("every shared resource is watched");
}

fn lists_of(sim: &SimServer, path: &str) -> Vec<JournalEntry> {
    sim.journal()
        .entries()
        .into_iter()
        .filter(|e| e.verb == Verb::List && e.path == path)
        .collect()
}

fn jobs_key() -> SourceKey {
    SourceKey::all(ResourceRef::new("batch", "v1", "jobs", "Job", true))
}

/// An informer over `key`'s source keeping what `subscriber` decodes.
fn informer<T>(sources: &Sources, subscriber: Subscriber<T>) -> SharedInformer<T>
where
    T: kube_gc::runtime::cache::Cacheable + Send + Sync + 'static,
{
    SharedInformer::builder(subscriber.name.clone(), Store::new())
        .source(sources, jobs_key(), subscriber)
        .build()
}

#[tokio::test(start_paused = true)]
async fn every_controller_of_kube_gc_run_shares_one_list_and_one_watch_per_resource() {
    let world = world().await;
    create_job(world.sim(), "done", Some(0), Some(world.now()));
    create_vcjob(world.sim(), "vc-done", Some(0), "Completed", world.now());
    let set = Manager::new(world.harness.client.clone(), ManagerOptions::default())
        .clock(Arc::clone(&world.clock))
        .start()
        .await
        .expect("the manager starts");
    assert_eq!(
        set.names(),
        [
            "ttl-after-finished",
            "volcano-job-ttl",
            "garbagecollector",
            "namespace",
            "retention",
            "podgc",
            "pvc-protection",
            "pv-protection"
        ]
    );
    let readiness = set.readiness();
    let shutdown = CancellationToken::new();
    let running = tokio::spawn(set.run(shutdown.clone()));
    readiness.wait(&shutdown).await.expect("ready");
    wait_deleted(world.sim(), &jobs(), "done").await;
    wait_deleted(world.sim(), &vcjobs(), "vc-done").await;
    // Ready means every cache holds its first list; a reflector opens its watch only after that,
    // so the last WATCH may still be on its way when the deletions are seen. Counted once each
    // has arrived.
    until_watched(world.sim(), &SHARED).await;

    let journal = world.sim().journal().entries();
    let lists = count(&journal, Verb::List);
    let watches = count(&journal, Verb::Watch);
    // Jobs: the TTL controller, the collector and the namespace controller; Volcano Jobs: the
    // Volcano TTL controller, the collector and the namespace controller; namespaces: retention,
    // the collector and the namespace controller; both policy kinds: retention and the
    // collector; Pods: the pod garbage collector, the PVC protection controller, the collector
    // and the namespace controller; Nodes: the pod garbage collector and the collector; claims:
    // both protection controllers, the collector and the namespace controller; volumes: the PV
    // protection controller and the collector; every other namespaced resource: the collector
    // and the namespace controller.
    for shared in SHARED {
        assert_eq!(lists.get(shared), Some(&1), "LISTs of {shared}: {lists:#?}");
        assert_eq!(
            watches.get(shared),
            Some(&1),
            "WATCHes of {shared}: {watches:#?}"
        );
    }
    for (path, n) in lists.iter().chain(&watches) {
        assert_eq!(*n, 1, "{path} was read {n} times");
    }
    // Whole objects where a controller reads more than metadata, metadata only elsewhere.
    let accept = |path: &str| {
        let list = lists_of(world.sim(), path);
        list[0].header("accept").unwrap_or_default().to_owned()
    };
    assert!(!accept("/apis/batch/v1/jobs").contains("PartialObjectMetadata"));
    // Protobuf first for the Jobs (what the TTL judgement and the collector read is all in the
    // tables) and for every metadata list; JSON only for a custom resource's whole objects.
    assert_eq!(
        accept("/apis/batch/v1/jobs"),
        "application/vnd.kubernetes.protobuf,application/json"
    );
    assert!(accept("/api/v1/configmaps").starts_with("application/vnd.kubernetes.protobuf;"));
    // Pods in protobuf for their two readers' projections (the tables cover what both read);
    // Nodes, claims and volumes as JSON: the client has no tables for them.
    assert_eq!(
        accept("/api/v1/pods"),
        "application/vnd.kubernetes.protobuf,application/json"
    );
    assert_eq!(accept("/api/v1/nodes"), "application/json");
    assert_eq!(
        accept("/apis/batch.volcano.sh/v1alpha1/jobs"),
        "application/json"
    );
    // Namespaces whole: the namespace controller sends one back whole to finalize it.
    assert!(!accept("/api/v1/namespaces").contains("PartialObjectMetadataList"));
    assert!(accept("/api/v1/configmaps").contains("PartialObjectMetadataList"));
    shutdown.cancel();
    running.await.unwrap().unwrap();
}

/// Without the garbage collector, whose start-up holds the sources until its monitors have
/// subscribed, the controllers that read Pods, Nodes, claims and volumes hold them themselves
/// until each of their informers has joined: still one list per resource.
#[tokio::test(start_paused = true)]
async fn the_pod_gc_and_the_protection_controllers_share_one_list_per_resource_on_their_own() {
    let world = world().await;
    let options = ManagerOptions {
        controllers: kube_gc::manager::ControllerSelection::parse(&[
            "podgc",
            "pvc-protection",
            "pv-protection",
        ])
        .unwrap(),
        ..ManagerOptions::default()
    };
    let set = Manager::new(world.harness.client.clone(), options)
        .clock(Arc::clone(&world.clock))
        .start()
        .await
        .expect("the manager starts");
    let readiness = set.readiness();
    let shutdown = CancellationToken::new();
    let running = tokio::spawn(set.run(shutdown.clone()));
    readiness.wait(&shutdown).await.expect("ready");
    let journal = world.sim().journal().entries();
    let lists = count(&journal, Verb::List);
    for path in [
        "/api/v1/pods",
        "/api/v1/nodes",
        "/api/v1/persistentvolumeclaims",
        "/api/v1/persistentvolumes",
    ] {
        assert_eq!(lists.get(path), Some(&1), "LISTs of {path}: {lists:#?}");
    }
    shutdown.cancel();
    running.await.unwrap().unwrap();
}

#[tokio::test(start_paused = true)]
async fn two_subscribers_share_one_list_and_each_keeps_its_own_projection() {
    let world = world().await;
    create_job(world.sim(), "a", Some(30), None);
    let sources = Sources::new(world.harness.client.clone(), ReflectorConfig::default());
    let hold = sources.hold();
    let whole = informer(&sources, Subscriber::<Value>::serde("whole", Form::Objects));
    let names = informer(
        &sources,
        Subscriber::<PartialObjectMetadata>::serde("names", Form::Metadata),
    );
    let stop = CancellationToken::new();
    let tasks = [
        tokio::spawn(whole.clone().run(stop.clone())),
        tokio::spawn(names.clone().run(stop.clone())),
    ];
    eventually("both subscribed", || sources.running().len() == 1).await;
    drop(hold);
    eventually("both synced", || whole.has_synced() && names.has_synced()).await;

    create_job(world.sim(), "b", Some(30), None);
    eventually("both saw b", || {
        whole.store().len() == 2 && names.store().len() == 2
    })
    .await;
    let cached = whole.store().list();
    assert!(cached
        .iter()
        .all(|job| job["spec"]["ttlSecondsAfterFinished"] == 30));
    assert!(names
        .store()
        .list()
        .iter()
        .all(|m| m.metadata.uid.is_some()));
    // One whole-object list and one watch for both.
    assert_eq!(lists_of(world.sim(), "/apis/batch/v1/jobs").len(), 1);
    let journal = world.sim().journal().entries();
    assert_eq!(
        count(&journal, Verb::Watch).get("/apis/batch/v1/jobs"),
        Some(&1)
    );
    assert_eq!(sources.metrics(&jobs_key()).snapshot().lists, 1);

    stop.cancel();
    for task in tasks {
        task.await.unwrap();
    }
    assert!(
        sources.running().is_empty(),
        "the last to leave stops the source"
    );
}

#[tokio::test(start_paused = true)]
async fn metadata_only_while_nobody_needs_more_and_a_late_subscriber_costs_one_list() {
    let world = world().await;
    create_job(world.sim(), "a", Some(30), None);
    let sources = Sources::new(world.harness.client.clone(), ReflectorConfig::default());
    let names = informer(
        &sources,
        Subscriber::<PartialObjectMetadata>::serde("names", Form::Metadata),
    );
    let stop = CancellationToken::new();
    let first = tokio::spawn(names.clone().run(stop.clone()));
    eventually("synced", || names.has_synced()).await;
    let lists = lists_of(world.sim(), "/apis/batch/v1/jobs");
    assert_eq!(lists.len(), 1);
    assert!(lists[0]
        .header("accept")
        .is_some_and(|accept| accept.contains("PartialObjectMetadataList")));

    // A subscriber of whole objects joins: one more list, now of whole objects, for both.
    let updates = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let counted = Arc::clone(&updates);
    names.add_handler(kube_gc::runtime::informer::HandlerFns::new().on_update(
        move |_old, _new: Arc<PartialObjectMetadata>| {
            counted.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        },
    ));
    let whole = informer(&sources, Subscriber::<Value>::serde("whole", Form::Objects));
    let second = tokio::spawn(whole.clone().run(stop.clone()));
    eventually("the late one synced", || whole.has_synced()).await;
    let lists = lists_of(world.sim(), "/apis/batch/v1/jobs");
    assert_eq!(lists.len(), 2, "one more list");
    let counted = sources.metrics(&jobs_key()).snapshot();
    assert_eq!(
        (counted.lists, counted.relists),
        (2, 0),
        "a restart for a late subscriber is a list, not a relist: no watch failed"
    );
    assert!(!lists[1]
        .header("accept")
        .unwrap_or_default()
        .contains("PartialObjectMetadata"));
    tokio::time::sleep(Duration::from_millis(100)).await;
    assert_eq!(
        updates.load(std::sync::atomic::Ordering::SeqCst),
        0,
        "the relist changed nothing for the first subscriber"
    );
    // Both still follow the one watch now open.
    create_job(world.sim(), "b", Some(30), None);
    eventually("both saw b", || {
        whole.store().len() == 2 && names.store().len() == 2
    })
    .await;
    stop.cancel();
    first.await.unwrap();
    second.await.unwrap();
}
