//! The whole pipeline against the simulated API server: reflector → informer → handler →
//! workqueue → workers → reconcile → API call, with a toy controller that deletes every Job
//! labelled `doomed`. On tokio's paused clock, over real sockets.

mod client_support;

use std::sync::Arc;
use std::time::Duration;

use kube_gc::api::{DeleteOptions, Job};
use kube_gc::client::Api;
use kube_gc::runtime::cache::{Cacheable, ObjectKey, Store};
use kube_gc::runtime::controller::{Action, Controller, Reconciler};
use kube_gc::runtime::informer::{HandlerFns, SharedInformer};
use kube_gc::runtime::reflector::{Reflector, ReflectorConfig};
use kube_gc::runtime::workqueue::WorkQueue;
use kube_gc::sim::SimConfig;
use serde_json::{json, Value};
use tokio_util::sync::CancellationToken;

use client_support::{job, jobs, start_with, unthrottled};

/// Virtual time: a bound on waits that would otherwise hang a broken test forever.
const PATIENCE: Duration = Duration::from_secs(600);

/// Deletes the Jobs labelled `doomed`, reading them from the informer's cache.
struct DeleteDoomed {
    cache: Arc<Store<Job>>,
    api: Api<Job>,
}

impl Reconciler<ObjectKey> for DeleteDoomed {
    type Error = kube_gc::client::Error;

    async fn reconcile(&self, key: &ObjectKey) -> Result<Action, Self::Error> {
        let Some(job) = self.cache.get(key) else {
            return Ok(Action::Done); // Already gone.
        };
        if job.metadata.labels.contains_key("doomed") {
            // The UID precondition makes sure we delete the Job we looked at, not a new one
            // created under the same name since.
            let options = DeleteOptions::background().with_uid(job.uid());
            let api = self.api.within(key.namespace().unwrap_or_default());
            api.delete(key.name(), &options).await?;
        }
        Ok(Action::Done)
    }
}

fn doomed_job(name: &str) -> Value {
    let mut job = job("default", name);
    job["metadata"]["labels"] = json!({"doomed": "yes"});
    job
}

#[tokio::test(start_paused = true)]
async fn a_controller_deletes_what_its_reconciler_says_and_leaves_the_rest() {
    let harness = start_with(SimConfig::default(), unthrottled().without_timeouts()).await;
    let sim = &harness.sim;
    sim.create(&jobs(), job("default", "keep")).unwrap();
    sim.create(&jobs(), doomed_job("listed")).unwrap();

    let api: Api<Job> = Api::all(harness.client.clone());
    let informer = SharedInformer::builder("jobs.batch", Store::new())
        .reflector(Reflector::new(api.clone(), ReflectorConfig::default()))
        .build();
    let queue = WorkQueue::new("delete-doomed");
    let (on_add, on_update) = (queue.clone(), queue.clone());
    informer.add_handler(
        HandlerFns::new()
            .on_add(move |job: Arc<Job>| on_add.add(job.cache_key()))
            .on_update(move |_old, job: Arc<Job>| on_update.add(job.cache_key())),
    );
    let controller = Controller::new(
        "delete-doomed",
        queue,
        DeleteDoomed {
            cache: Arc::clone(informer.store()),
            api,
        },
    )
    .workers(2)
    .informer(&informer);
    let counters = controller.counters();
    let shutdown = CancellationToken::new();
    let running = tokio::spawn(controller.run(shutdown.clone()));

    let gone = |o: Option<&Value>| o.is_none();
    // A doomed Job from the initial list...
    tokio::time::timeout(
        PATIENCE,
        sim.wait_for(&jobs(), Some("default"), "listed", gone),
    )
    .await
    .expect("deleted in time")
    .unwrap();
    // ...one created later, seen on the watch...
    sim.create(&jobs(), doomed_job("created")).unwrap();
    tokio::time::timeout(
        PATIENCE,
        sim.wait_for(&jobs(), Some("default"), "created", gone),
    )
    .await
    .expect("deleted in time")
    .unwrap();
    // ...and one that becomes doomed by an update.
    let mut keep = sim.get(&jobs(), Some("default"), "keep").unwrap();
    keep["metadata"]["labels"]["doomed"] = json!("now");
    sim.update(&jobs(), keep).unwrap();
    tokio::time::timeout(
        PATIENCE,
        sim.wait_for(&jobs(), Some("default"), "keep", gone),
    )
    .await
    .expect("deleted in time")
    .unwrap();

    shutdown.cancel();
    running.await.unwrap().unwrap();
    assert_eq!(counters.errors() + counters.panics(), 0);
    // keep, listed, created, and keep again after its update; deletions were not enqueued.
    assert!(counters.reconciles() >= 4, "{}", counters.reconciles());
    harness.sim.shutdown().await;
}
