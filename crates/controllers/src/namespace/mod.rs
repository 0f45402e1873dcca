//! The namespace controller (kube-controller-manager's `namespace-controller`): when a namespace
//! is deleted, delete its content, then remove the `kubernetes` finalizer from its
//! `spec.finalizers` so that it goes. Without it — on an API server with no
//! kube-controller-manager — a deleted namespace stays `Terminating` for ever.
//!
//! ```text
//!  namespaces informer ──(deletionTimestamp)──▶ queue "namespace" ◀──(content changed)── ContentIndex
//!  (whole objects)                                  │                                      ▲
//!                                                   ▼                                      │ metadata events
//!                              N workers: assess (decide.rs) → delete / LIST / finalize    │
//!                                                                                 ContentMonitors: one
//!  discovery (every period, and before a finalize) ──▶ monitors follow it ───────▶ subscription per
//!                                                                                 namespaced resource to
//!                                                                                 the shared sources
//! ```
//!
//! Contract:
//! - Event-driven: a namespace is queued when it is deleted and whenever its content changes —
//!   an object gone, a finalizer released — so it is finalized as soon as the last blocker goes,
//!   with no polling where nothing changes. Content nothing watches (Events) is listed, and
//!   listed again only while some of it is held.
//! - Safety: nothing is finalized while content remains, while discovery is incomplete, or
//!   after a refused request (403 included); the absence of content is proven by a LIST of
//!   every resource made after the safety delay (`--namespace-deletion-grace-period`, 5 s after
//!   the `deletionTimestamp`, as upstream's), never by the cache alone; the finalize is
//!   guarded by the UID and resourceVersion of the namespace judged (`reconcile.rs`).
//! - Pods go first (KEP-5080, as upstream since v1.34): nothing else is deleted while a Pod
//!   remains.
//! - Cheap: a resource holding nothing is never asked to delete anything; the index shares the
//!   garbage collector's lists and watches; conditions are written only when they change and the
//!   content is settled.
//! - [`NamespaceController::run`] returns after its token is cancelled: work in progress
//!   finishes, the monitors leave their sources.
//!
//! | file | what it holds |
//! |---|---|
//! | `decide.rs` | the pure decisions: [`Assessment`], [`Next`], [`Blocker`] |
//! | `conditions.rs` | kcm's five conditions from an assessment |
//! | `content.rs` | [`ContentIndex`], [`ContentMonitors`] |
//! | `shared.rs` | cached namespaces, discovery, each namespace's progress |
//! | `reconcile.rs` | one pass over one namespace |
//! | `reconcile/steps.rs` | the last step on its own, for tests outside the crate (`test-util`) |
//! | `requests.rs` | every request, with its guards |
//! | `metrics.rs` | [`NamespaceMetrics`] |
//!
//! `docs/namespaces.md` explains the design and how it differs from upstream.

pub mod conditions;
pub mod content;
pub mod decide;
pub mod metrics;
mod reconcile;
mod requests;
pub mod shared;

use std::sync::Arc;
use std::time::Duration;

use tokio_util::sync::CancellationToken;

pub use content::{ContentIndex, ContentMonitors};
pub use decide::{assess, Assessment, Blocker, Next};
pub use metrics::NamespaceMetrics;
#[cfg(feature = "test-util")]
pub use reconcile::steps;
pub use reconcile::{NamespaceError, NamespaceReconciler};
pub use shared::{CachedNamespace, Shared};

use crate::wiring::Wiring;
use kube_gc_client::{Client, ItemDecoder};
use kube_gc_runtime::cache::{ObjectKey, Store};
use kube_gc_runtime::controller::{Controller, ControllerError, ServerWait};
use kube_gc_runtime::informer::{HandlerFns, InformerSynced, SharedInformer};
use kube_gc_runtime::reflector::ReflectorConfig;
use kube_gc_runtime::sources::{Hold, SourceKey, Subscriber};
use kube_gc_runtime::workqueue::{
    BucketRateLimiter, ItemExponentialFailureRateLimiter, MaxOfRateLimiter, WorkQueue,
};

/// The controller's name (`--controllers`, logs, User-Agent).
pub const CONTROLLER: &str = "namespace";
/// The `User-Agent` suffix (and rate limiter) of its requests, as kube-controller-manager's.
pub const COMPONENT: &str = "namespace-controller";
/// Its queue's name, as kube-controller-manager's.
pub const QUEUE: &str = "namespace";
/// `--concurrent-namespace-syncs`' default, as kube-controller-manager's.
pub const DEFAULT_WORKERS: usize = 10;
/// `--namespace-sync-period`'s default, as kube-controller-manager's.
pub const DEFAULT_SYNC_PERIOD: Duration = Duration::from_secs(300);
/// `--namespace-deletion-grace-period`'s default: upstream's `namespaceDeletionGracePeriod`.
pub const DEFAULT_FINALIZE_DELAY: Duration = Duration::from_secs(5);
/// How often discovery is read again for new resources, by default.
pub const DEFAULT_DISCOVERY_PERIOD: Duration = Duration::from_secs(30);

/// How the controller runs.
#[derive(Clone)]
pub struct NamespaceOptions {
    /// Workers (`--concurrent-namespace-syncs`, 10).
    pub workers: usize,
    /// Every namespace being deleted is looked at again this often, whatever happened
    /// (`--namespace-sync-period`, 5 min; zero: never).
    pub sync_period: Duration,
    /// The least time between a namespace's deletion and its finalize
    /// (`--namespace-deletion-grace-period`, 5 s).
    pub finalize_delay: Duration,
    /// How often discovery is read for resources to monitor.
    pub discovery_period: Duration,
    /// Decide and log, write nothing.
    pub dry_run: bool,
    /// How the namespaces and the content are listed and watched, when the controller has
    /// sources of its own.
    pub reflector: ReflectorConfig,
    /// What it shares with the process: the sources the namespaces and the content come from
    /// (the process's, shared with the other controllers), clock, where Warning events and the
    /// queue's metrics go.
    pub wiring: Wiring,
}

impl Default for NamespaceOptions {
    fn default() -> NamespaceOptions {
        NamespaceOptions {
            workers: DEFAULT_WORKERS,
            sync_period: DEFAULT_SYNC_PERIOD,
            finalize_delay: DEFAULT_FINALIZE_DELAY,
            discovery_period: DEFAULT_DISCOVERY_PERIOD,
            dry_run: false,
            reflector: ReflectorConfig::default(),
            wiring: Wiring::default(),
        }
    }
}

/// The namespace controller, ready to [`run`](NamespaceController::run).
pub struct NamespaceController {
    shared: Arc<Shared>,
    queue: WorkQueue<String>,
    informer: SharedInformer<CachedNamespace>,
    controller: Controller<String, NamespaceReconciler>,
    monitors: ContentMonitors,
    synced: InformerSynced,
    discovery_period: Duration,
    start_hold: Option<Hold>,
}

/// A cheap handle on a controller: readiness, queue, metrics.
#[derive(Clone)]
pub struct NamespaceHandle {
    shared: Arc<Shared>,
    queue: WorkQueue<String>,
    synced: InformerSynced,
    server_wait: Option<ServerWait<String>>,
}

/// kube-controller-manager's namespace queue limiter: per key 5 ms doubling up to 60 s (a
/// blocked namespace is retried at least every minute), with the overall 10/s, burst 100.
fn rate_limiter() -> Arc<MaxOfRateLimiter<String>> {
    Arc::new(MaxOfRateLimiter::new(vec![
        Box::new(ItemExponentialFailureRateLimiter::new(
            Duration::from_millis(5),
            Duration::from_secs(60),
        )),
        Box::new(BucketRateLimiter::new(10.0, 100)),
    ]))
}

impl NamespaceController {
    /// A controller sending its requests through `client`. Must be called inside a Tokio
    /// runtime (the queue and the informer's handler start tasks).
    pub fn new(client: Client, options: NamespaceOptions) -> NamespaceController {
        let queue = options
            .wiring
            .queue(QUEUE)
            .rate_limiter(rate_limiter())
            .build();
        let sources = options.wiring.sources_or_own(&client, &options.reflector);
        let namespaces_store: Store<CachedNamespace> = Store::new();
        let decoder = Arc::new(CachedNamespace::decode) as ItemDecoder<CachedNamespace>;
        let subscriber = Subscriber::objects(CONTROLLER, decoder);
        let informer = SharedInformer::builder("namespaces", namespaces_store)
            .source(&sources, SourceKey::all(requests::namespaces()), subscriber)
            .resync_every(options.sync_period)
            .build();
        let namespaces = Arc::clone(informer.store());
        let index = ContentIndex::new(content_changed(Arc::clone(&namespaces), queue.clone()));
        let shared = Arc::new(Shared::new(
            client.clone(),
            namespaces,
            Arc::clone(&index),
            Arc::clone(&options.wiring.clock),
            Arc::clone(&options.wiring.recorder),
            NamespaceMetrics::new(),
            options.finalize_delay,
            options.dry_run,
        ));
        register_handlers(&informer, &queue, &shared);
        let monitors = ContentMonitors::new(sources, index);
        let synced = informer.synced();
        let controller = Controller::new(
            CONTROLLER,
            queue.clone(),
            NamespaceReconciler::new(Arc::clone(&shared)),
        )
        .workers(options.workers)
        .wait_for_server(client.availability().clone())
        .wait_for(informer.synced());
        NamespaceController {
            shared,
            queue,
            informer,
            controller,
            monitors,
            synced,
            discovery_period: options.discovery_period,
            start_hold: None,
        }
    }

    /// Keeps `hold` until the first content monitors have subscribed, so that each resource is
    /// listed once for this controller and the others starting with it.
    pub fn holding(mut self, hold: Hold) -> Self {
        self.start_hold = Some(hold);
        self
    }

    /// A handle for readiness, the queue and metrics.
    pub fn handle(&self) -> NamespaceHandle {
        NamespaceHandle {
            shared: Arc::clone(&self.shared),
            queue: self.queue.clone(),
            synced: self.synced.clone(),
            server_wait: self.controller.server_wait(),
        }
    }

    /// Runs until `shutdown` is cancelled: the first discovery and the monitors, the informer
    /// and the workers, and discovery again every period.
    ///
    /// # Errors
    ///
    /// When the namespaces' cache can never sync.
    pub async fn run(self, shutdown: CancellationToken) -> Result<(), ControllerError> {
        let NamespaceController {
            shared,
            queue,
            informer,
            controller,
            mut monitors,
            discovery_period,
            start_hold,
            ..
        } = self;
        if !first_discovery(&shared, &shutdown).await {
            return Ok(());
        }
        let latest = shared.latest_discovery();
        monitors.sync(&latest.monitored, |_| false).await;
        // The informer is owned here, not by the worker loop, so that it joins the namespaces'
        // source before the hold goes: one poll of its run subscribes it.
        let stop_informer = CancellationToken::new();
        let _stop_informer_on_drop = stop_informer.clone().drop_guard();
        let mut informer_run = Box::pin(informer.run(stop_informer.clone()));
        let _ = futures_util::FutureExt::now_or_never(informer_run.as_mut());
        // Every monitor the first discovery asked for, and the informer, have subscribed: the
        // sources may list.
        drop(start_hold);
        let informer_task = tokio::spawn(informer_run);
        let stop_following = CancellationToken::new();
        // If this future is dropped mid-run (its task aborted), the discovery task must stop
        // with it: it holds the monitors' subscriptions, and through them the sources.
        let _stop_following_on_drop = stop_following.clone().drop_guard();
        let following = tokio::spawn(follow_discovery(
            Arc::clone(&shared),
            monitors,
            queue,
            discovery_period,
            stop_following.clone(),
        ));
        let result = controller.run(shutdown).await;
        // The workers have drained: the informer and the monitors can go.
        stop_informer.cancel();
        stop_following.cancel();
        for (task, joined) in [
            ("informer", informer_task.await),
            ("discovery", following.await),
        ] {
            if let Err(error) = joined {
                tracing::error!(%error, task, "a namespace controller task failed");
            }
        }
        result
    }
}

/// Tells the queue of a namespace whose content changed, if it is being deleted by us.
fn content_changed(
    namespaces: Arc<Store<CachedNamespace>>,
    queue: WorkQueue<String>,
) -> content::ChangedFn {
    Arc::new(move |namespace: &str| {
        let ours = namespaces
            .get(&ObjectKey::cluster_scoped(namespace))
            .is_some_and(|ns| decide::is_ours(&ns.subject()));
        if ours {
            queue.add(namespace.to_owned());
        }
    })
}

/// Namespaces being deleted are queued at once (content deletion starts at once; only the
/// finalize waits for the safety delay); gone ones are forgotten.
fn register_handlers(
    informer: &SharedInformer<CachedNamespace>,
    queue: &WorkQueue<String>,
    shared: &Arc<Shared>,
) {
    let enqueue = |queue: WorkQueue<String>| {
        move |namespace: &CachedNamespace| {
            if namespace.namespace.metadata.deletion_timestamp.is_some() {
                if let Some(name) = &namespace.namespace.metadata.name {
                    queue.add(name.clone());
                }
            }
        }
    };
    let (on_add, on_update) = (enqueue(queue.clone()), enqueue(queue.clone()));
    let forget = Arc::clone(shared);
    informer.add_handler(
        HandlerFns::new()
            .on_add(move |ns: Arc<CachedNamespace>| on_add(&ns))
            .on_update(move |_old, ns: Arc<CachedNamespace>| on_update(&ns))
            .on_delete(move |deleted| {
                if let Some(name) = &deleted.object().namespace.metadata.name {
                    forget.forget(name);
                }
            }),
    );
}

/// Discovery until it answers (with back-off), or `false` if `shutdown` came first.
async fn first_discovery(shared: &Shared, shutdown: &CancellationToken) -> bool {
    let mut wait = Duration::from_secs(1);
    loop {
        match shared.rediscover().await {
            Ok(_) => return true,
            Err(error) => {
                tracing::warn!(%error, ?wait, "namespace controller discovery failed; retrying")
            }
        }
        tokio::select! {
            () = shutdown.cancelled() => return false,
            () = tokio::time::sleep(wait) => {}
        }
        wait = (wait * 2).min(Duration::from_secs(30));
    }
}

/// Reads discovery every `period` (and follows the discoveries passes make): the monitors follow
/// it, and when what must be emptied or what failed changed, every namespace being deleted is
/// looked at again. Stops the monitors when told to stop.
async fn follow_discovery(
    shared: Arc<Shared>,
    mut monitors: ContentMonitors,
    queue: WorkQueue<String>,
    period: Duration,
    stop: CancellationToken,
) {
    let mut seen = shared.latest_discovery();
    loop {
        tokio::select! {
            () = stop.cancelled() => break,
            () = shared.rediscovered.notified() => {}
            () = tokio::time::sleep(period) => {
                if let Err(error) = shared.rediscover().await {
                    tracing::debug!(%error, "namespace controller discovery failed; keeping the monitors");
                }
            }
        }
        let latest = shared.latest_discovery();
        if Arc::ptr_eq(&latest, &seen) {
            continue;
        }
        monitors
            .sync(&latest.monitored, |r| {
                latest.failed_groups.contains(&r.group)
            })
            .await;
        if latest.discovered.types != seen.discovered.types
            || latest.discovered.failed != seen.discovered.failed
        {
            for namespace in shared.terminating() {
                queue.add(namespace);
            }
        }
        seen = latest;
    }
    monitors.stop_all().await;
}

impl NamespaceHandle {
    /// Whether the namespaces' cache has synced.
    pub fn is_synced(&self) -> bool {
        self.synced.has_synced()
    }

    /// The readiness of the namespaces' cache, for a manager that waits on several.
    pub fn synced(&self) -> InformerSynced {
        self.synced.clone()
    }

    /// The queue (for `/debug/workqueue`).
    pub fn queue(&self) -> &WorkQueue<String> {
        &self.queue
    }

    /// Where the queue's keys wait while the API server is unavailable.
    pub fn server_wait(&self) -> Option<ServerWait<String>> {
        self.server_wait.clone()
    }

    /// The controller's metrics (register them once).
    pub fn metrics(&self) -> &NamespaceMetrics {
        &self.shared.metrics
    }

    /// What the controller knows: namespaces, content, discovery.
    pub fn shared(&self) -> &Arc<Shared> {
        &self.shared
    }
}
