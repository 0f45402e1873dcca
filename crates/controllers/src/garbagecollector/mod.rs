//! The ownerReference garbage collector (kube-controller-manager's `garbagecollector`): deletes
//! objects whose owners are gone, and carries out Foreground and Orphan deletions.
//!
//! ```text
//!  discovery (every 30 s) ──▶ Monitors: one metadata-only reflector per deletable resource
//!                                  │ GraphEvent (unbounded channel)
//!                                  ▼
//!                           graph builder task ── the only writer of the Graph (uid → node)
//!                                  │ Effects
//!                    ┌─────────────┴──────────────┐
//!                    ▼                            ▼
//!        attempt-to-delete queue         attempt-to-orphan queue
//!        N workers: judge owners,        N workers: drop the owner's reference from each
//!        DELETE with uid + rv,           dependent, then its `orphan` finalizer
//!        patch away dead references,
//!        finish Foreground deletions
//! ```
//!
//! Contract:
//! - Nothing with a live, valid owner is deleted: a deletion is decided from owners the graph
//!   observed (or, for owners it has not observed, from a live read), and sent with the UID and
//!   resourceVersion preconditions of the copy judged, so the server refuses it if the object
//!   changed meanwhile.
//! - Workers start once every monitor's first list is in the graph, or after
//!   [`GcOptions::initial_sync_timeout`]; decisions that need a type not synced yet are
//!   deferred.
//! - [`GarbageCollector::run`] returns after its token is cancelled and every task stopped:
//!   queued work is dropped, work in progress finishes (drained shutdown).
//!
//! | file | what it holds |
//! |---|---|
//! | `identity.rs` | UIDs, types, identities, compact owner references, the string interner |
//! | `graph.rs` | the graph and its nodes |
//! | `builder.rs` | graph update rules and the builder task |
//! | `monitors.rs` | monitors, and which types are synced |
//! | `owners.rs` | solid / dangling / waiting verdicts |
//! | `attempt_delete.rs`, `attempt_orphan.rs` | the two workers' decisions |
//! | `requests.rs` | every write, with its guards |
//! | `errors.rs` | why an attempt is retried, why `run` failed |
//! | `steps.rs` | the workers' steps one at a time, for tests outside the crate (`test-util`) |
//! | `absent_owners.rs` | the absent-owner LRU |
//! | `dot.rs`, `metrics.rs` | debug graph, Prometheus metrics |
//!
//! `docs/garbage-collector.md` explains the design and how it differs from upstream.
//!
//! ```no_run
//! # async fn example(client: kube_gc_client::Client) -> Result<(), Box<dyn std::error::Error>> {
//! use kube_gc_controllers::garbagecollector::{GarbageCollector, GcOptions};
//! use prometheus_client::registry::Registry;
//! use tokio_util::sync::CancellationToken;
//!
//! let gc = GarbageCollector::new(client, GcOptions::default());
//! let mut handle = gc.handle(); // readiness, the debug graph, metrics
//! handle.metrics().register(&mut Registry::default());
//! let shutdown = CancellationToken::new();
//! let task = tokio::spawn(gc.run(shutdown.clone()));
//! handle.wait_ready().await;
//! let dot = handle.debug_graph(&[]); // text/vnd.graphviz
//! # let _ = dot;
//! shutdown.cancel();
//! task.await??;
//! # Ok(()) }
//! ```

pub mod absent_owners;
mod attempt_delete;
mod attempt_orphan;
pub mod builder;
pub mod dot;
mod errors;
pub mod graph;
pub mod identity;
pub mod metrics;
pub mod monitors;
mod owners;
pub mod pending;
pub mod requests;
#[cfg(feature = "test-util")]
pub mod steps;

use std::sync::Arc;
use std::time::Duration;

use parking_lot::{Mutex, RwLock};
use tokio::sync::{mpsc, watch, Notify};
use tokio::task::JoinSet;
use tokio_util::sync::CancellationToken;

use crate::deleted::SharedFeed;
use crate::wiring::Wiring;
use absent_owners::AbsentOwnerCache;
use attempt_delete::Done;
use builder::GraphEvent;
use graph::Graph;
use identity::Uid;
use kube_gc_client::availability::warn_unless_unavailable;
use kube_gc_client::{Client, Discovery, ResourceRef};
use kube_gc_core::clock::SharedClock;
use kube_gc_runtime::controller::server_wait::{Park, ServerWait};
use kube_gc_runtime::events::SharedRecorder;
use kube_gc_runtime::reflector::{ReflectorConfig, ReflectorMetrics};
use kube_gc_runtime::sources::Hold;
use kube_gc_runtime::workqueue::WorkQueue;
use monitors::{MonitorCounters, Monitors, SyncState};

pub use errors::{GcError, WorkError};
pub use metrics::GcMetrics;
pub use owners::{action, Action, INVALID_NAMESPACE_REASON};

/// The controller's name, as `--controllers` selects it.
pub const CONTROLLER: &str = "garbagecollector";

/// Name of the attempt-to-delete queue (its metrics' `name` label).
pub const ATTEMPT_TO_DELETE_QUEUE: &str = "garbage_collector_attempt_to_delete";
/// Name of the attempt-to-orphan queue.
pub const ATTEMPT_TO_ORPHAN_QUEUE: &str = "garbage_collector_attempt_to_orphan";

/// How soon discovery runs again after one that could not read every group (doubling up to
/// the discovery period).
pub const REDISCOVER_AFTER_FAILURE: Duration = Duration::from_secs(1);

/// Resources never monitored (group, plural): Events are high-churn and never owners.
pub const IGNORED_RESOURCES: [(&str, &str); 2] = [("", "events"), ("events.k8s.io", "events")];

/// How the collector runs.
#[derive(Clone)]
pub struct GcOptions {
    /// Workers per queue (`--concurrent-gc-syncs`, 20).
    pub workers: usize,
    /// How often discovery is re-run to find new and removed resources (30 s).
    pub discovery_period: Duration,
    /// The longest the workers wait for every monitor's first list (30 s).
    pub initial_sync_timeout: Duration,
    /// How long a decision waiting for an unsynced type is put off (1 s).
    pub defer_delay: Duration,
    /// Owners remembered as absent (500).
    pub absent_owner_cache_size: usize,
    /// How the monitors list and watch, when the collector has sources of its own.
    pub reflector: ReflectorConfig,
    /// What it shares with the process: the sources its monitors read through — the
    /// process's, shared with the other controllers, whose metadata client
    /// (kube-controller-manager's `metadata-informers`) keeps dozens of monitors starting from
    /// delaying a deletion — where `OwnerRefInvalidNamespace` warnings, the two queues'
    /// metrics and each deletion go, and the clock what the feed is told reads.
    pub wiring: Wiring,
}

impl Default for GcOptions {
    fn default() -> Self {
        GcOptions {
            workers: 20,
            discovery_period: Duration::from_secs(30),
            initial_sync_timeout: Duration::from_secs(30),
            defer_delay: Duration::from_secs(1),
            absent_owner_cache_size: absent_owners::DEFAULT_CAPACITY,
            reflector: ReflectorConfig::default(),
            wiring: Wiring::default(),
        }
    }
}

impl std::fmt::Debug for GcOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GcOptions")
            .field("workers", &self.workers)
            .field("discovery_period", &self.discovery_period)
            .field("initial_sync_timeout", &self.initial_sync_timeout)
            .finish_non_exhaustive()
    }
}

/// What the builder, the workers and the handle share.
pub(crate) struct Shared {
    client: Client,
    graph: RwLock<Graph>,
    discovery: RwLock<Arc<Discovery>>,
    sync: Arc<SyncState>,
    monitor_counters: Arc<MonitorCounters>,
    synced_changed: Arc<Notify>,
    absent: Mutex<AbsentOwnerCache>,
    attempt_to_delete: WorkQueue<Uid>,
    attempt_to_orphan: WorkQueue<Uid>,
    /// Where the attempt-to-delete queue's keys wait while the API server is unavailable.
    delete_waits: ServerWait<Uid>,
    /// The same for the attempt-to-orphan queue.
    orphan_waits: ServerWait<Uid>,
    graph_changes: mpsc::UnboundedSender<GraphEvent>,
    recorder: SharedRecorder,
    metrics: GcMetrics,
    feed: SharedFeed,
    clock: SharedClock,
}

impl Shared {
    /// The resource serving `kind` in `api_version`, from the latest discovery. Unknown there
    /// because its group's discovery failed is [`WorkError::DiscoveryIncomplete`], not
    /// [`WorkError::NoMapping`]: the decision waits for the next discovery.
    fn resource_for(&self, api_version: &str, kind: &str) -> Result<ResourceRef, WorkError> {
        let discovery = self.discovery.read();
        if let Some(found) = discovery.resource_for_kind(api_version, kind) {
            return Ok(found.resource.clone());
        }
        let group = api_version.rsplit_once('/').map_or("", |(group, _)| group);
        let missing = (api_version.to_owned(), kind.to_owned());
        Err(if discovery.group_failed(group) {
            WorkError::DiscoveryIncomplete {
                api_version: missing.0,
                kind: missing.1,
            }
        } else {
            WorkError::NoMapping {
                api_version: missing.0,
                kind: missing.1,
            }
        })
    }
}

/// The garbage collector, ready to [`run`](GarbageCollector::run).
pub struct GarbageCollector {
    shared: Arc<Shared>,
    options: GcOptions,
    graph_changes: mpsc::UnboundedReceiver<GraphEvent>,
    ready: watch::Sender<bool>,
    /// Keeps the sources from listing until the first monitors have subscribed.
    start_hold: Option<Hold>,
}

/// A cheap handle on a collector: readiness, the debug graph, metrics.
#[derive(Clone)]
pub struct GcHandle {
    shared: Arc<Shared>,
    ready: watch::Receiver<bool>,
}

impl GarbageCollector {
    /// A collector sending its requests through `client`. Must be called inside a Tokio runtime
    /// (the queues start their timer tasks).
    pub fn new(client: Client, options: GcOptions) -> GarbageCollector {
        let (tx, rx) = mpsc::unbounded_channel();
        let queue = |name: &str| options.wiring.queue(name).build();
        let waits = |name: &str| ServerWait::new(name, client.availability().clone());
        let (delete_waits, orphan_waits) = (
            waits(ATTEMPT_TO_DELETE_QUEUE),
            waits(ATTEMPT_TO_ORPHAN_QUEUE),
        );
        let shared = Arc::new(Shared {
            client,
            graph: RwLock::new(Graph::new()),
            discovery: RwLock::new(Arc::new(Discovery::default())),
            sync: Arc::new(SyncState::default()),
            monitor_counters: Arc::new(MonitorCounters::default()),
            synced_changed: Arc::new(Notify::new()),
            absent: Mutex::new(AbsentOwnerCache::new(options.absent_owner_cache_size)),
            attempt_to_delete: queue(ATTEMPT_TO_DELETE_QUEUE),
            attempt_to_orphan: queue(ATTEMPT_TO_ORPHAN_QUEUE),
            delete_waits,
            orphan_waits,
            graph_changes: tx,
            recorder: Arc::clone(&options.wiring.recorder),
            metrics: GcMetrics::new(),
            feed: Arc::clone(&options.wiring.feed),
            clock: Arc::clone(&options.wiring.clock),
        });
        GarbageCollector {
            shared,
            options,
            graph_changes: rx,
            ready: watch::channel(false).0,
            start_hold: None,
        }
    }

    /// Keeps `hold` until its first monitors have subscribed: the process's sources then list
    /// each resource once for the collector and the controllers that subscribed before it.
    pub fn holding(mut self, hold: Hold) -> Self {
        self.start_hold = Some(hold);
        self
    }

    /// A handle for readiness, the debug graph and metrics; valid while and after it runs.
    pub fn handle(&self) -> GcHandle {
        GcHandle {
            shared: Arc::clone(&self.shared),
            ready: self.ready.subscribe(),
        }
    }

    /// Runs until `shutdown` is cancelled: discovery and monitors, the graph builder, and the
    /// workers once the graph is synced (or the initial sync timed out).
    pub async fn run(self, shutdown: CancellationToken) -> Result<(), GcError> {
        let GarbageCollector {
            shared,
            options,
            graph_changes,
            ready,
            start_hold,
        } = self;
        let builder_stop = CancellationToken::new();
        let builder = tokio::spawn(builder::run(
            Arc::clone(&shared),
            graph_changes,
            builder_stop.clone(),
        ));
        // If this future is dropped mid-run (its task aborted), the builder must stop with it:
        // it holds `shared`, and with it the queues' timer tasks.
        let _stop_builder_on_drop = builder_stop.clone().drop_guard();
        let sources = options
            .wiring
            .sources_or_own(&shared.client, &options.reflector);
        let mut monitors = Monitors::new(
            sources,
            shared.graph_changes.clone(),
            Arc::clone(&shared.sync),
            Arc::clone(&shared.monitor_counters),
        );
        let complete = refresh(&shared, &mut monitors).await;
        // Every monitor discovery asked for has subscribed: the sources may list now.
        drop(start_hold);

        let mut workers = JoinSet::new();
        if wait_until_synced(&shared, options.initial_sync_timeout, &shutdown).await {
            for _ in 0..options.workers.max(1) {
                workers.spawn(delete_worker(Arc::clone(&shared), options.defer_delay));
                workers.spawn(orphan_worker(Arc::clone(&shared), options.defer_delay));
            }
            for (waits, queue) in [
                (&shared.delete_waits, &shared.attempt_to_delete),
                (&shared.orphan_waits, &shared.attempt_to_orphan),
            ] {
                let (waits, queue, stop) = (waits.clone(), queue.clone(), shutdown.clone());
                workers.spawn(async move { waits.run(queue, stop).await });
            }
            ready.send_replace(true);
            let period = options.discovery_period;
            rediscover_until(&shutdown, &shared, &mut monitors, period, complete).await;
        }

        ready.send_replace(false);
        // Drained: work in progress finishes, queued work is dropped, then the sources stop.
        shared.attempt_to_delete.shut_down_with_drain().await;
        shared.attempt_to_orphan.shut_down_with_drain().await;
        let mut failure = None;
        while let Some(joined) = workers.join_next().await {
            if let Err(source) = joined {
                failure.get_or_insert(GcError::TaskFailed {
                    task: "worker",
                    source,
                });
            }
        }
        monitors.stop_all().await;
        builder_stop.cancel();
        if let Err(source) = builder.await {
            failure.get_or_insert(GcError::TaskFailed {
                task: "graph builder",
                source,
            });
        }
        failure.map_or(Ok(()), Err)
    }
}

/// Waits for every monitor to sync, or for `timeout` (then logs which did not); `false` if
/// `shutdown` came first.
async fn wait_until_synced(
    shared: &Shared,
    timeout: Duration,
    shutdown: &CancellationToken,
) -> bool {
    let synced = tokio::select! {
        () = shutdown.cancelled() => return false,
        synced = wait_for_sync(shared, timeout) => synced,
    };
    if !synced {
        let pending: Vec<String> = shared
            .sync
            .snapshot()
            .into_iter()
            .filter(|(_, synced)| !synced)
            .map(|(gk, _)| format!("{}.{}", gk.kind, gk.group))
            .collect();
        tracing::warn!(
            pending = %pending.join(","),
            "starting garbage collector workers before every monitor synced; \
             decisions that need those types are deferred"
        );
    }
    true
}

/// Re-runs discovery every `period` until `shutdown` — sooner after one that could not read
/// every group: [`REDISCOVER_AFTER_FAILURE`], doubling up to `period`, so that a group missed
/// while the API server was erring is monitored again within seconds of its return.
async fn rediscover_until(
    shutdown: &CancellationToken,
    shared: &Shared,
    monitors: &mut Monitors,
    period: Duration,
    mut complete: bool,
) {
    let mut retry = REDISCOVER_AFTER_FAILURE;
    loop {
        let wait = if complete { period } else { retry.min(period) };
        tokio::select! {
            () = shutdown.cancelled() => return,
            () = tokio::time::sleep(wait) => {}
        }
        retry = if complete {
            REDISCOVER_AFTER_FAILURE
        } else {
            retry * 2
        };
        tokio::select! {
            () = shutdown.cancelled() => return,
            done = refresh(shared, monitors) => complete = done,
        }
    }
}

/// Re-runs discovery and makes the monitors match it; whether every group was read.
async fn refresh(shared: &Shared, monitors: &mut Monitors) -> bool {
    let discovery = match Discovery::run(&shared.client).await {
        Ok(discovery) => discovery,
        Err(error) => {
            warn_unless_unavailable!(error, err = %error, "garbage collector discovery failed; keeping the current monitors");
            shared.metrics.sync_failed();
            return false;
        }
    };
    let complete = discovery.failures().is_empty();
    if !complete {
        shared.metrics.sync_failed();
    }
    let wanted: Vec<ResourceRef> = discovery
        .deletable()
        .into_iter()
        .filter(|r| !IGNORED_RESOURCES.contains(&(r.group.as_str(), r.plural.as_str())))
        .cloned()
        .collect();
    // A group version that could not be read now keeps what was known of it.
    let discovery = discovery.keeping_failed_from(&shared.discovery.read());
    *shared.discovery.write() = Arc::new(discovery);
    let discovery = Arc::clone(&shared.discovery.read());
    let (started, stopped) = monitors
        .sync(&wanted, |r| discovery.group_failed(&r.group))
        .await;
    if started + stopped > 0 {
        tracing::info!(started, stopped, "garbage collector monitors changed");
    }
    shared.metrics.set_monitors(monitors.resources().len());
    // A type that just stopped being monitored may have been the one a waiter was missing.
    shared.synced_changed.notify_waiters();
    complete
}

/// Waits until every monitored type is synced (true) or `timeout` passed (false).
async fn wait_for_sync(shared: &Shared, timeout: Duration) -> bool {
    let wait = async {
        loop {
            let changed = shared.synced_changed.notified();
            tokio::pin!(changed);
            changed.as_mut().enable();
            if shared.sync.all_synced() {
                return;
            }
            changed.await;
        }
    };
    tokio::time::timeout(timeout, wait).await.is_ok()
}

async fn delete_worker(shared: Arc<Shared>, defer_delay: Duration) {
    let queue = &shared.attempt_to_delete;
    while let Some(uid) = queue.get().await {
        let outcome = attempt_delete::attempt_to_delete(&shared, &uid).await;
        finish(
            &shared,
            queue,
            &shared.delete_waits,
            uid,
            outcome,
            defer_delay,
        );
    }
}

async fn orphan_worker(shared: Arc<Shared>, defer_delay: Duration) {
    let queue = &shared.attempt_to_orphan;
    while let Some(uid) = queue.get().await {
        let outcome = attempt_orphan::attempt_to_orphan(&shared, &uid).await;
        finish(
            &shared,
            queue,
            &shared.orphan_waits,
            uid,
            outcome,
            defer_delay,
        );
    }
}

/// Tells `queue` how the attempt on `uid` went: forgotten when finished, looked at again after
/// `defer_delay` when deferred, parked in `waits` when the API server was unavailable, else
/// retried with back-off.
fn finish(
    shared: &Shared,
    queue: &WorkQueue<Uid>,
    waits: &ServerWait<Uid>,
    uid: Uid,
    outcome: Result<Done, WorkError>,
    defer_delay: Duration,
) {
    match outcome {
        Ok(done) => {
            waits.settle(&uid);
            match done {
                Done::Finished => queue.forget(&uid),
                Done::Deferred => queue.add_after(uid.clone(), defer_delay),
            }
        }
        Err(error @ WorkError::DiscoveryIncomplete { .. }) => {
            shared.metrics.failed(error.label());
            waits.settle(&uid);
            tracing::debug!(queue = queue.name(), %uid, err = %error, "deferred until discovery reads the group");
            queue.add_after(uid.clone(), defer_delay);
        }
        Err(error) => {
            shared.metrics.failed(error.label());
            let parked = error
                .is_unavailable()
                .then(|| waits.park(uid.clone(), &error));
            match parked {
                Some(Park::Parked) => {}
                Some(Park::RetryNow) => queue.add(uid.clone()),
                Some(Park::BackOff) | None => {
                    waits.settle(&uid);
                    tracing::debug!(queue = queue.name(), %uid, err = %error, "attempt failed; retrying with back-off");
                    queue.add_rate_limited(uid.clone());
                }
            }
        }
    }
    queue.done(&uid);
}

impl GcHandle {
    /// Whether the workers are running (the graph synced, or the initial sync timed out).
    pub fn is_ready(&self) -> bool {
        *self.ready.borrow()
    }

    /// Waits until the workers run; `false` if the collector stopped first.
    pub async fn wait_ready(&mut self) -> bool {
        self.ready.wait_for(|ready| *ready).await.is_ok()
    }

    /// The readiness flag itself (true while the workers run), for a manager that waits on
    /// several controllers.
    pub fn ready_watch(&self) -> watch::Receiver<bool> {
        self.ready.clone()
    }

    /// The attempt-to-delete and attempt-to-orphan queues (clones share them), for
    /// `/debug/workqueue`.
    pub fn queues(&self) -> [WorkQueue<Uid>; 2] {
        [
            self.shared.attempt_to_delete.clone(),
            self.shared.attempt_to_orphan.clone(),
        ]
    }

    /// The graph as Graphviz DOT, all of it or `uids` with their owners and dependents.
    pub fn debug_graph(&self, uids: &[String]) -> String {
        dot::render(&self.shared.graph.read(), uids)
    }

    /// `read` applied to the graph under its read lock (the builder waits meanwhile: keep it
    /// short, and never await inside).
    pub fn read_graph<R>(&self, read: impl FnOnce(&Graph) -> R) -> R {
        read(&self.shared.graph.read())
    }

    /// What the collector last discovered (refreshed every discovery period).
    pub fn discovery(&self) -> Arc<Discovery> {
        Arc::clone(&self.shared.discovery.read())
    }

    /// The collector's metrics (register them once).
    pub fn metrics(&self) -> &GcMetrics {
        &self.shared.metrics
    }

    /// Nodes in the graph now.
    pub fn graph_len(&self) -> usize {
        self.shared.graph.read().len()
    }

    /// Monitored types, with whether each is synced.
    pub fn monitored(&self) -> Vec<(identity::GroupKind, bool)> {
        self.shared.sync.snapshot()
    }

    /// The reflector counters of the monitors running now, by resource.
    pub fn monitor_reflectors(&self) -> Vec<(String, Arc<ReflectorMetrics>)> {
        self.shared.monitor_counters.snapshot()
    }

    /// Where the keys of (attempt-to-delete, attempt-to-orphan) wait while the API server is
    /// unavailable (for metrics and readiness).
    pub fn server_waits(&self) -> [ServerWait<Uid>; 2] {
        [
            self.shared.delete_waits.clone(),
            self.shared.orphan_waits.clone(),
        ]
    }

    /// What the graph proves the collector will delete (`pending.rs`), read when asked. The
    /// source holds the collector weakly: once the collector is gone, it reads nothing (and
    /// keeps none of its tasks alive).
    pub fn pending_source(&self) -> crate::pending::SharedPendingSource {
        let shared = Arc::downgrade(&self.shared);
        Arc::new(move |query: &crate::pending::PendingQuery| {
            let Some(shared) = shared.upgrade() else {
                return Vec::new();
            };
            let pending = pending::pending(&shared.graph.read(), query);
            vec![pending]
        })
    }

    /// Keys queued or in progress on (attempt-to-delete, attempt-to-orphan).
    pub fn queue_lengths(&self) -> (usize, usize) {
        (
            self.shared.attempt_to_delete.len(),
            self.shared.attempt_to_orphan.len(),
        )
    }
}
