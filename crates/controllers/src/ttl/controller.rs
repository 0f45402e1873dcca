//! [`TtlController`]: the TTL-after-finished controller for one kind — the retention engine run
//! with the kind's fixed policy ([`TtlKind::policy`]) instead of the policy objects, and with
//! upstream's settings: one [`ResourceWatch`] over the kind (scoped by `--namespace`), whose
//! handlers queue each finished object for its expiry time, and [`RetentionReconciler`] workers
//! that delete it `Foreground` with UID and resourceVersion preconditions (or upstream's GET
//! first, `--ttl-fresh-read=always`), count into kube-controller-manager's metric names, and
//! treat a missing finish time as an error for the key, retried with back-off.
//!
//! Contract: `build` wires everything and starts nothing; [`TtlController::run`] starts the
//! informer, waits for its cache, runs the workers until the token is cancelled, then drains and
//! stops (see [`Controller`]). The cache holds the engine's assessments, never the objects.

use std::collections::BTreeMap;
use std::marker::PhantomData;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use parking_lot::RwLock;

use crate::retention::assessment::Assessment;
use crate::retention::engine::{
    ReconcileSettings, ResourceWatch, RetentionReconciler, WatchContext, WatchMap, WatchPlan,
    WorkKey,
};
use crate::retention::policy::Target;
use crate::retention::verdict::{decide, Verdict as FactsVerdict};
use crate::wiring::Wiring;
use crate::{Progress, ProgressProbe};
use kube_gc_client::{Client, ResourceRef};
use kube_gc_core::clock::SharedClock;
use kube_gc_runtime::cache::{ObjectKey, Store};
use kube_gc_runtime::controller::{Controller, ControllerError, ReconcileCounters, ServerWait};
use kube_gc_runtime::events::SharedRecorder;
use kube_gc_runtime::informer::{HandlerFns, InformerSynced};
use kube_gc_runtime::workqueue::WorkQueue;

use super::kind::TtlKind;
use super::metrics::{KindTally, TtlMetrics};
use super::state::rules;
use super::TtlOptions;

/// The TTL-after-finished controller for kind `K`, ready to run.
pub struct TtlController<K: TtlKind> {
    watch: Arc<ResourceWatch>,
    /// Objects the informer's cache has taken in (its adds), for progress displays.
    seen: Arc<AtomicU64>,
    synced: InformerSynced,
    queue: WorkQueue<WorkKey>,
    controller: Controller<WorkKey, RetentionReconciler>,
    _kind: PhantomData<fn() -> K>,
}

/// Configures a [`TtlController`]: what it shares with the rest of the process.
pub struct TtlControllerBuilder<K: TtlKind> {
    client: Client,
    options: TtlOptions,
    wiring: Wiring,
    metrics: Arc<TtlMetrics>,
    _kind: PhantomData<fn() -> K>,
}

impl<K: TtlKind> TtlControllerBuilder<K> {
    /// What it shares with the process (default: [`Wiring::default`], a controller on its
    /// own). With the process's [`Sources`], the informer's list and watch are shared with
    /// every other controller reading the resource, whose clients (kube-controller-manager's
    /// `shared-informers`) then carry them; the controller's own client carries only its reads
    /// and deletions.
    pub fn wiring(mut self, wiring: Wiring) -> Self {
        self.wiring = wiring;
        self
    }

    /// The metrics to update (default: private ones nobody reads).
    pub fn metrics(mut self, metrics: Arc<TtlMetrics>) -> Self {
        self.metrics = metrics;
        self
    }

    /// Wires the watch, queue and workers; starts nothing.
    ///
    /// # Panics
    ///
    /// Outside a Tokio runtime (registering a handler spawns its task).
    pub fn build(self) -> TtlController<K> {
        let queue = self.wiring.queue(K::QUEUE).build();
        let availability = self.client.availability().clone();
        let context = WatchContext {
            controller: K::CONTROLLER,
            sources: self
                .wiring
                .sources_or_own(&self.client, &self.options.reflector),
            client: self.client,
            queue: queue.clone(),
            clock: Arc::clone(&self.wiring.clock),
            namespace: self.options.namespace.clone(),
            on_error: None,
        };
        let (watch, informer) = ResourceWatch::unstarted(target::<K>(), &plan::<K>(), &context);
        let seen = Arc::new(AtomicU64::new(0));
        let adds = Arc::clone(&seen);
        informer.add_handler(HandlerFns::new().on_add(move |_| {
            adds.fetch_add(1, Ordering::Relaxed);
        }));
        let Wiring {
            clock,
            recorder,
            feed,
            ..
        } = self.wiring;
        let reconciler =
            reconciler::<K>(&watch, &self.options, clock, self.metrics, recorder).with_feed(feed);
        let controller = Controller::new(K::CONTROLLER, queue.clone(), reconciler)
            .workers(self.options.workers)
            .wait_for_server(availability)
            .informer(&informer);
        TtlController {
            synced: informer.synced(),
            watch,
            seen,
            queue,
            controller,
            _kind: PhantomData,
        }
    }
}

/// The engine's target for `K`'s resource.
fn target<K: TtlKind>() -> Target {
    let resource = K::resource();
    Target {
        group: resource.group,
        version: resource.version,
        resource: resource.plural,
    }
}

/// The watch plan of `K`: its resource under its fixed policy.
fn plan<K: TtlKind>() -> WatchPlan {
    WatchPlan {
        resource: K::resource(),
        rules: Arc::new(rules::<K>()),
        fingerprint: K::CONTROLLER.to_owned(),
    }
}

fn watch_map(watch: &Arc<ResourceWatch>) -> WatchMap {
    let target = (*watch.target).clone();
    Arc::new(RwLock::new(BTreeMap::from([(target, Arc::clone(watch))])))
}

/// A reconciler of the controller of `K` over a watch with no informer behind it, whose
/// store the caller fills: the state between a cache check and the server's answer, made on
/// purpose (tests; tools that judge objects they listed themselves).
pub fn detached<K: TtlKind>(
    client: Client,
    options: &TtlOptions,
    clock: SharedClock,
    metrics: Arc<TtlMetrics>,
    recorder: SharedRecorder,
) -> (Arc<ResourceWatch>, RetentionReconciler) {
    let watch = ResourceWatch::detached(target::<K>(), &plan::<K>(), client);
    let reconciler = reconciler::<K>(&watch, options, clock, metrics, recorder);
    (watch, reconciler)
}

/// The engine's reconciler over `watch`, with upstream's settings for `K`: its controller's
/// name, a missing finish time retried as an error, kube-controller-manager's metric names.
fn reconciler<K: TtlKind>(
    watch: &Arc<ResourceWatch>,
    options: &TtlOptions,
    clock: SharedClock,
    metrics: Arc<TtlMetrics>,
    recorder: SharedRecorder,
) -> RetentionReconciler {
    let settings = ReconcileSettings {
        controller: K::CONTROLLER,
        dry_run: options.dry_run,
        fresh_read: options.fresh_read,
        retry_unschedulable: true,
    };
    let tally = Arc::new(KindTally::new(metrics, K::KIND));
    RetentionReconciler::new(watch_map(watch), clock, tally, recorder).with_settings(settings)
}

/// The work key of `key` in the controller of `K`.
pub fn work_key<K: TtlKind>(key: ObjectKey) -> WorkKey {
    WorkKey::Object {
        target: Arc::new(target::<K>()),
        key,
    }
}

impl<K: TtlKind> TtlController<K> {
    /// Starts configuring the controller for `client` with `options`.
    pub fn builder(client: Client, options: TtlOptions) -> TtlControllerBuilder<K> {
        TtlControllerBuilder {
            client,
            options,
            wiring: Wiring::default(),
            metrics: Arc::new(TtlMetrics::new()),
            _kind: PhantomData,
        }
    }

    /// The controller's name (`ttl-after-finished`, `volcano-job-ttl`).
    pub fn name(&self) -> &'static str {
        K::CONTROLLER
    }

    /// The resource it cleans up.
    pub fn resource(&self) -> ResourceRef {
        K::resource()
    }

    /// Turns true once the informer's first list is cached.
    pub fn synced(&self) -> InformerSynced {
        self.synced.clone()
    }

    /// The engine's watch of the kind: its assessments and rules (read-only; for
    /// `/debug/explain`, progress displays and tests).
    pub fn watch(&self) -> &Arc<ResourceWatch> {
        &self.watch
    }

    /// The cached assessments.
    pub fn store(&self) -> &Arc<Store<Assessment>> {
        &self.watch.store
    }

    /// The informer's reflector counters (lists, watches, relists, errors), for `/metrics`.
    pub fn reflector_metrics(&self) -> Option<Arc<kube_gc_runtime::reflector::ReflectorMetrics>> {
        self.watch.reflector_metrics().cloned()
    }

    /// The workqueue (for its depth).
    pub fn queue(&self) -> &WorkQueue<WorkKey> {
        &self.queue
    }

    /// Where its keys wait while the API server is unavailable (for metrics).
    pub fn server_wait(&self) -> Option<ServerWait<WorkKey>> {
        self.controller.server_wait()
    }

    /// A probe counting what the controller holds: objects seen so far, cached objects, those
    /// waiting for their TTL (judged at `clock`'s now), and the queue's depth. It walks the
    /// cache, so it is meant for a display refreshed a few times a second, not for a hot path.
    pub fn progress_probe(&self, clock: SharedClock) -> ProgressProbe {
        let store = Arc::clone(&self.watch.store);
        let seen = Arc::clone(&self.seen);
        let queue = self.queue.clone();
        Arc::new(move || {
            let now = clock.now();
            let assessments = store.list();
            let waiting = assessments
                .iter()
                .filter_map(|j| j.governed())
                .filter(|g| matches!(decide(&g.facts, g.ttl, now), Ok(FactsVerdict::Wait { .. })))
                .count();
            Progress {
                seen: seen.load(Ordering::Relaxed),
                cached: assessments.len(),
                waiting,
                queued: queue.len(),
            }
        })
    }

    /// What it will delete, and when, read from its cache when asked
    /// (`kube_gc_pending_deletions`, the notifier's next window).
    /// The source holds the watch weakly: once the controller is gone, it reads nothing.
    pub fn pending_source(&self) -> crate::pending::SharedPendingSource {
        let watch = Arc::downgrade(&self.watch);
        Arc::new(move |query: &crate::pending::PendingQuery| {
            let Some(watch) = watch.upgrade() else {
                return Vec::new();
            };
            crate::retention::engine::pending(std::slice::from_ref(&watch), query, K::CONTROLLER)
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
