//! [`TtlController`]: the TTL-after-finished controller for one kind, assembled from the
//! runtime — an informer over the kind's compact projection, add/update handlers that queue the
//! keys needing cleanup, a workqueue, and [`TtlReconciler`] workers.
//!
//! Contract: `build` wires everything and starts nothing; [`TtlController::run`] starts the
//! informer, waits for its cache, runs the workers until the token is cancelled, then drains and
//! stops (see [`Controller`]). There is no delete handler: a deleted object has nothing left to
//! clean up, and a key queued for it finds the cache empty.

use std::sync::Arc;

use crate::client::{Api, Client};
use crate::clock::{SharedClock, SystemClock};
use crate::controllers::{Progress, ProgressProbe};
use crate::events::{NoopRecorder, SharedRecorder};
use crate::runtime::cache::{Cacheable, ObjectKey, Store};
use crate::runtime::controller::{Controller, ControllerError, ReconcileCounters};
use crate::runtime::informer::{HandlerFns, InformerSynced, SharedInformer};
use crate::runtime::reflector::Reflector;
use crate::runtime::workqueue::{MetricsProvider, WorkQueue};

use super::judge::{judge, Verdict};
use super::kind::TtlKind;
use super::metrics::TtlMetrics;
use super::object::TtlObject;
use super::reconcile::{ReconcileSettings, TtlReconciler};
use super::TtlOptions;

/// The TTL-after-finished controller for kind `K`, ready to run.
pub struct TtlController<K: TtlKind> {
    informer: SharedInformer<TtlObject<K>>,
    queue: WorkQueue<ObjectKey>,
    controller: Controller<ObjectKey, TtlReconciler<K>>,
}

/// Configures a [`TtlController`]: what it shares with the rest of the process.
pub struct TtlControllerBuilder<K: TtlKind> {
    client: Client,
    informer_client: Option<Client>,
    options: TtlOptions,
    clock: SharedClock,
    metrics: Arc<TtlMetrics>,
    queue_metrics: Option<Arc<dyn MetricsProvider>>,
    recorder: SharedRecorder,
    _kind: std::marker::PhantomData<fn() -> K>,
}

impl<K: TtlKind> TtlControllerBuilder<K> {
    /// Where wall time is read from (default: the system clock).
    pub fn clock(mut self, clock: SharedClock) -> Self {
        self.clock = clock;
        self
    }

    /// The metrics to update (default: private ones nobody reads).
    pub fn metrics(mut self, metrics: Arc<TtlMetrics>) -> Self {
        self.metrics = metrics;
        self
    }

    /// The workqueue's metrics provider (default: none).
    pub fn queue_metrics(mut self, provider: Option<Arc<dyn MetricsProvider>>) -> Self {
        self.queue_metrics = provider;
        self
    }

    /// The client the informer lists and watches through (kube-controller-manager's
    /// `shared-informers`); the controller's own client then carries only its reads and
    /// deletions (default: the controller's client for both).
    pub fn informer_client(mut self, client: Client) -> Self {
        self.informer_client = Some(client);
        self
    }

    /// Where Warning events go (default: dropped).
    pub fn recorder(mut self, recorder: SharedRecorder) -> Self {
        self.recorder = recorder;
        self
    }

    /// Wires the informer, handlers, queue and workers; starts nothing.
    ///
    /// # Panics
    ///
    /// Outside a Tokio runtime (registering a handler spawns its task).
    pub fn build(self) -> TtlController<K> {
        let resource = K::resource();
        let api: Api<TtlObject<K>> = Api::dynamic(
            self.client,
            resource.clone(),
            self.options.namespace.as_deref(),
        );
        let informer_name = format!("{}.{}", resource.plural, resource.group);
        let informer_api = match self.informer_client {
            Some(client) => Api::dynamic(client, resource, self.options.namespace.as_deref()),
            None => api.clone(),
        };
        let informer = SharedInformer::builder(informer_name, Store::new())
            .reflector(Reflector::new(informer_api, self.options.reflector.clone()))
            .build();

        let mut queue = WorkQueue::builder(K::QUEUE);
        if let Some(provider) = self.queue_metrics {
            queue = queue.metrics(provider);
        }
        let queue = queue.build();
        let (on_add, on_update) = (queue.clone(), queue.clone());
        informer.add_handler(
            HandlerFns::new()
                .on_add(move |object: Arc<TtlObject<K>>| enqueue_if_needed(&on_add, &object))
                .on_update(move |_old, object: Arc<TtlObject<K>>| {
                    enqueue_if_needed(&on_update, &object)
                }),
        );

        let settings = ReconcileSettings {
            clock: self.clock,
            fresh_read: self.options.fresh_read,
            dry_run: self.options.dry_run,
            metrics: self.metrics,
            recorder: self.recorder,
        };
        let reconciler = TtlReconciler::new(Arc::clone(informer.store()), api, settings);
        let controller = Controller::new(K::CONTROLLER, queue.clone(), reconciler)
            .workers(self.options.workers)
            .informer(&informer);
        TtlController {
            informer,
            queue,
            controller,
        }
    }
}

/// The handlers' rule: queue the object if it is not being deleted, has a TTL and finished.
fn enqueue_if_needed<K>(queue: &WorkQueue<ObjectKey>, object: &TtlObject<K>) {
    if object.state().needs_cleanup() {
        queue.add(object.cache_key());
    }
}

impl<K: TtlKind> TtlController<K> {
    /// Starts configuring the controller for `client` with `options`.
    pub fn builder(client: Client, options: TtlOptions) -> TtlControllerBuilder<K> {
        TtlControllerBuilder {
            client,
            informer_client: None,
            options,
            clock: Arc::new(SystemClock),
            metrics: Arc::new(TtlMetrics::new()),
            queue_metrics: None,
            recorder: Arc::new(NoopRecorder),
            _kind: std::marker::PhantomData,
        }
    }

    /// The controller's name (`ttl-after-finished`, `volcano-job-ttl`).
    pub fn name(&self) -> &'static str {
        K::CONTROLLER
    }

    /// Turns true once the informer's first list is cached.
    pub fn synced(&self) -> InformerSynced {
        self.informer.synced()
    }

    /// The cache of projections (read-only; for progress displays and tests).
    pub fn store(&self) -> &Arc<Store<TtlObject<K>>> {
        self.informer.store()
    }

    /// The informer's reflector counters (lists, watches, relists, errors), for `/metrics`.
    pub fn reflector_metrics(&self) -> Option<Arc<crate::runtime::reflector::ReflectorMetrics>> {
        self.informer.reflector_metrics().cloned()
    }

    /// The workqueue (for its depth).
    pub fn queue(&self) -> &WorkQueue<ObjectKey> {
        &self.queue
    }

    /// A probe counting what the controller holds: cached objects, those waiting for their
    /// TTL (judged at `clock`'s now), and the queue's depth. It walks the cache, so it is meant
    /// for a display refreshed a few times a second, not for a hot path.
    pub fn progress_probe(&self, clock: SharedClock) -> ProgressProbe {
        let store = Arc::clone(self.informer.store());
        let queue = self.queue.clone();
        Arc::new(move || {
            let now = clock.now();
            let objects = store.list();
            let waiting = objects
                .iter()
                .filter(|o| matches!(judge(o.state(), now), Ok(Verdict::Wait { .. })))
                .count();
            Progress {
                cached: objects.len(),
                waiting,
                queued: queue.len(),
            }
        })
    }

    /// Reconciles, errors and panics so far.
    pub fn counters(&self) -> Arc<ReconcileCounters> {
        self.controller.counters()
    }

    /// Runs until `shutdown` is cancelled, then drains and stops.
    ///
    /// # Errors
    ///
    /// [`ControllerError`] if the cache can never sync.
    pub async fn run(
        self,
        shutdown: tokio_util::sync::CancellationToken,
    ) -> Result<(), ControllerError> {
        self.controller.run(shutdown).await
    }
}

impl<K: TtlKind> std::fmt::Debug for TtlController<K> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TtlController")
            .field("name", &K::CONTROLLER)
            .field("controller", &self.controller)
            .finish_non_exhaustive()
    }
}
