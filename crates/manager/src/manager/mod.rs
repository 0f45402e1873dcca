//! The controller manager: what `kube-gc run` and `kube-gc demo` start — kube-controller-manager's
//! role, for kube-gc's controllers.
//!
//! Contract:
//! - [`Manager::start`] reads discovery once, then asks each registered controller's init
//!   function (in registration order) to build itself, skipping the ones `--controllers`
//!   disables ([`ControllerSelection`]). An init function returns `None` when the cluster does
//!   not serve its resource — a cluster without the Volcano CRD skips `volcano-job-ttl` with an
//!   info log — and an error only for a real failure.
//! - The result is a [`ControllerSet`]: run it with a cancellation token; read its
//!   [`Readiness`] (every cache synced) from a health endpoint or anywhere else.
//! - Controllers are plugged in by name with [`Manager::with_controller`]; [`Manager::new`]
//!   registers the two TTL controllers, the ownerReference garbage collector
//!   ([`GARBAGE_COLLECTOR`], always possible: it only needs discovery), the namespace
//!   controller ([`NAMESPACE`]), the retention controller ([`RETENTION`], when the
//!   `kube-gc.io` CRDs are installed), the pod garbage collector ([`PODGC`]) and the PVC and
//!   PV protection controllers ([`PVC_PROTECTION`], [`PV_PROTECTION`]). Leader election wraps
//!   [`ControllerSet::run`] without the manager knowing.
//! - Every controller tells the process's deletion feed what it deletes and registers where
//!   what it will delete is read ([`PendingCollector`]); unless it is a dry run, a
//!   [`Notifier`] (a service of the set, run while the controllers run) sends both to
//!   `--notify-webhook-url` and to each retention policy's own destination.
//! - With [`Manager::publish_to`], controllers publish on the HTTP server's [`Endpoints`]: their
//!   metrics (TTL, garbage collector, workqueues, reflectors, deletions to come), their queues for
//!   `/debug/workqueue`, the garbage collector's graph, and their caches for `/debug/explain`
//!   ([`LiveExplainer`]: each running controller registers its cache, and the manager records
//!   why each other one does not run).
//!
//! ```text
//! Manager::new(client, options)            ttl-after-finished, volcano-job-ttl, garbagecollector,
//!                                          namespace, retention, podgc, pvc-protection,
//!                                          pv-protection
//!   .publish_to(&endpoints)                metrics, queues, debug pages
//!   .start().await?                        discovery → enabled + served → ControllerSet
//!   .run(shutdown).await?                  all controllers until cancelled, then drained
//! ```

mod garbage_collector;
mod namespace;
mod podgc;
mod protection;
mod retention;
mod set;

use std::sync::Arc;
use std::time::Duration;

use tokio_util::sync::CancellationToken;

pub use crate::selection::{
    ControllerSelection, SelectionError, UnknownController, GARBAGE_COLLECTOR, KNOWN_CONTROLLERS,
    NAMESPACE, PODGC, PVC_PROTECTION, PV_PROTECTION, RETENTION, TTL_AFTER_FINISHED,
    VOLCANO_JOB_TTL,
};
pub use kube_gc_controllers::podgc::DEFAULT_TERMINATED_POD_THRESHOLD;
pub use kube_gc_controllers::{Progress, ProgressProbe};
pub use set::{BoxError, ControllerFailed, ControllerSet, ManagedController, Readiness};

use crate::explain::live::{LiveExplainer, TtlView};
use crate::metrics::PendingCollector;
use crate::notify::{Notifier, NotifyMetrics, NotifyOptions, WebhookClientError};
use crate::server::Endpoints;
use kube_gc_client::outage::watch_outages;
use kube_gc_client::{Client, Discovery, ResourceRef};
use kube_gc_controllers::deleted::{NoFeed, SharedFeed};
use kube_gc_controllers::retention::engine::RetentionOptions;
use kube_gc_controllers::ttl::{
    BatchJob, FreshRead, TtlController, TtlKind, TtlMetrics, TtlOptions, VolcanoJobs,
    DEFAULT_JOB_WORKERS, DEFAULT_VOLCANO_WORKERS,
};
use kube_gc_controllers::Wiring;
use kube_gc_core::clock::{SharedClock, SystemClock};
use kube_gc_runtime::events::{NoopRecorder, SharedRecorder};
use kube_gc_runtime::reflector::ReflectorConfig;
use kube_gc_runtime::sources::Sources;
use kube_gc_runtime::workqueue::MetricsProvider;

/// `--concurrent-retention-syncs`'s default, as `--concurrent-ttl-after-finished-syncs`.
pub const DEFAULT_RETENTION_WORKERS: usize = 5;
/// `--concurrent-gc-syncs`'s default, as kube-controller-manager.
pub const DEFAULT_GC_WORKERS: usize = 20;
/// The `User-Agent` suffix (and rate limiter) of the typed informers' lists and watches.
pub const SHARED_INFORMERS: &str = "shared-informers";
/// The `User-Agent` suffix (and rate limiter) of the metadata-only informers (the garbage
/// collector's monitors).
pub const METADATA_INFORMERS: &str = "metadata-informers";
/// `--gc-discovery-period`'s default.
pub const DEFAULT_GC_DISCOVERY_PERIOD: Duration = Duration::from_secs(30);
/// `--gc-initial-sync-timeout`'s default, as kube-controller-manager since v1.32.
pub const DEFAULT_GC_INITIAL_SYNC_TIMEOUT: Duration = Duration::from_secs(30);

/// What the command line decides about the controllers.
#[derive(Debug, Clone, PartialEq)]
pub struct ManagerOptions {
    /// `--controllers`.
    pub controllers: ControllerSelection,
    /// `--namespace`: watch and clean up one namespace only.
    pub namespace: Option<String>,
    /// `--dry-run`: decide and log, delete nothing.
    pub dry_run: bool,
    /// `--ttl-fresh-read`.
    pub fresh_read: FreshRead,
    /// `--concurrent-ttl-after-finished-syncs`.
    pub job_ttl_workers: usize,
    /// `--worker-threads-for-gc`.
    pub volcano_ttl_workers: usize,
    /// `--concurrent-gc-syncs`: workers of each garbage collector queue.
    pub gc_workers: usize,
    /// `--gc-discovery-period`: how often the garbage collector looks for new resources.
    pub gc_discovery_period: Duration,
    /// `--gc-initial-sync-timeout`: how long the garbage collector's workers wait for every
    /// monitor to sync.
    pub gc_initial_sync_timeout: Duration,
    /// `--concurrent-retention-syncs`: workers of the retention controller.
    pub retention_workers: usize,
    /// `--concurrent-namespace-syncs`: namespaces deleted at once.
    pub namespace_workers: usize,
    /// `--namespace-sync-period`: how often every namespace being deleted is looked at again
    /// whatever happened (zero: never).
    pub namespace_sync_period: Duration,
    /// `--namespace-deletion-grace-period`: the least time between a namespace's deletion and
    /// its finalize.
    pub namespace_deletion_grace_period: Duration,
    /// How often the retention controller recounts its policies' statuses (the demo, on a
    /// timescale of seconds, wants them sooner than a cluster does).
    pub retention_status_interval: Duration,
    /// `--terminated-pod-gc-threshold`: terminated Pods the pod garbage collector keeps.
    pub terminated_pod_gc_threshold: usize,
    /// How long the pod garbage collector waits for a missing node before its Pods go
    /// (upstream's fixed 40 s; no flag: the demo, on a timescale of seconds, shortens it).
    pub pod_gc_quarantine: Duration,
    /// `--notify-webhook-url`, `--notify-interval`: where and how often notifications go.
    pub notify: NotifyOptions,
    /// How informers list and watch.
    pub reflector: ReflectorConfig,
}

impl Default for ManagerOptions {
    fn default() -> Self {
        ManagerOptions {
            controllers: ControllerSelection::default(),
            namespace: None,
            dry_run: false,
            fresh_read: FreshRead::default(),
            job_ttl_workers: DEFAULT_JOB_WORKERS,
            volcano_ttl_workers: DEFAULT_VOLCANO_WORKERS,
            gc_workers: DEFAULT_GC_WORKERS,
            gc_discovery_period: DEFAULT_GC_DISCOVERY_PERIOD,
            gc_initial_sync_timeout: DEFAULT_GC_INITIAL_SYNC_TIMEOUT,
            retention_workers: DEFAULT_RETENTION_WORKERS,
            namespace_workers: kube_gc_controllers::namespace::DEFAULT_WORKERS,
            namespace_sync_period: kube_gc_controllers::namespace::DEFAULT_SYNC_PERIOD,
            namespace_deletion_grace_period: kube_gc_controllers::namespace::DEFAULT_FINALIZE_DELAY,
            retention_status_interval: RetentionOptions::default().status_interval,
            terminated_pod_gc_threshold: DEFAULT_TERMINATED_POD_THRESHOLD,
            pod_gc_quarantine: kube_gc_controllers::podgc::QUARANTINE,
            notify: NotifyOptions::default(),
            reflector: ReflectorConfig::default(),
        }
    }
}

/// Everything an init function may use to build its controller.
#[derive(Clone)]
pub struct ControllerContext<'a> {
    /// The API client; each controller takes its own from it ([`Client::for_component`]).
    pub client: &'a Client,
    /// Where every controller's lists and watches come from: one per resource, whichever
    /// controllers read it. Whole objects go through the `shared-informers` client, metadata
    /// (the garbage collector's monitors) through `metadata-informers`.
    pub sources: &'a Sources,
    /// What every controller takes from the process: those sources, the wall clock, where
    /// Warning events go, the workqueue metrics provider (if metrics are served), and where
    /// each deletion (and those an `Audit` policy would make) is told.
    pub wiring: Wiring,
    /// What the server serves.
    pub discovery: &'a Discovery,
    /// The command line's decisions.
    pub options: &'a ManagerOptions,
    /// The TTL controllers' metrics.
    pub ttl_metrics: &'a Arc<TtlMetrics>,
    /// Where controllers publish their metrics, queues and debug pages, if anywhere.
    pub endpoints: Option<&'a Endpoints>,
    /// Where controllers register their caches for `/debug/explain` (with `endpoints`).
    pub explainer: Option<&'a LiveExplainer>,
    /// Where controllers register what they will delete (`/metrics`, notifications).
    pub pending: &'a PendingCollector,
}

impl ControllerContext<'_> {
    /// Whether the server serves `resource` with the verbs a controller needs to list, watch
    /// and delete it.
    pub fn serves(&self, resource: &ResourceRef) -> bool {
        self.discovery.serves(resource)
    }
}

/// What an init function made of its controller.
pub enum Init {
    /// Built: the manager runs it.
    Run(ManagedController),
    /// Not built, and why (the cluster lacks what it needs; `--namespace` rules it out) — the
    /// manager logs the reason and `/debug/explain` repeats it.
    Skip(String),
}

/// Builds one controller, or says why it is skipped.
pub type InitFn = Box<dyn FnOnce(&ControllerContext<'_>) -> Result<Init, BoxError> + Send>;

/// Why the manager could not start or run.
#[derive(Debug, thiserror::Error)]
pub enum ManagerError {
    /// Discovery failed.
    #[error("cannot read the API server's discovery documents: {0}")]
    Discovery(#[source] kube_gc_client::Error),
    /// A controller could not be built.
    #[error("cannot start controller {controller}: {source}")]
    Init {
        /// Its name.
        controller: &'static str,
        /// Why.
        #[source]
        source: BoxError,
    },
    /// A controller failed while running.
    #[error(transparent)]
    Failed(#[from] ControllerFailed),
    /// `--notify-webhook-url` is given, but no HTTPS client can be built to send to it.
    #[error("cannot send notifications: {0}")]
    Notifier(#[source] WebhookClientError),
}

/// The controller manager.
pub struct Manager {
    client: Client,
    options: ManagerOptions,
    clock: SharedClock,
    recorder: SharedRecorder,
    queue_metrics: Option<Arc<dyn MetricsProvider>>,
    ttl_metrics: Arc<TtlMetrics>,
    endpoints: Option<Endpoints>,
    inits: Vec<(&'static str, InitFn)>,
}

impl Manager {
    /// A manager for `client`, with every controller of [`KNOWN_CONTROLLERS`] registered.
    pub fn new(client: Client, options: ManagerOptions) -> Self {
        Manager {
            client,
            options,
            clock: Arc::new(SystemClock),
            recorder: Arc::new(NoopRecorder),
            queue_metrics: None,
            ttl_metrics: Arc::new(TtlMetrics::new()),
            endpoints: None,
            inits: Vec::new(),
        }
        .with_controller(TTL_AFTER_FINISHED, Box::new(init_ttl::<BatchJob>))
        .with_controller(VOLCANO_JOB_TTL, Box::new(init_ttl::<VolcanoJobs>))
        .with_controller(GARBAGE_COLLECTOR, Box::new(garbage_collector::init))
        .with_controller(NAMESPACE, Box::new(namespace::init))
        .with_controller(RETENTION, Box::new(retention::init))
        .with_controller(PODGC, Box::new(podgc::init))
        .with_controller(PVC_PROTECTION, Box::new(protection::init_pvc))
        .with_controller(PV_PROTECTION, Box::new(protection::init_pv))
    }

    /// Registers a controller under `name` (one of [`KNOWN_CONTROLLERS`]).
    pub fn with_controller(mut self, name: &'static str, init: InitFn) -> Self {
        self.inits.push((name, init));
        self
    }

    /// Where controllers read wall time (default: the system clock).
    pub fn clock(mut self, clock: SharedClock) -> Self {
        self.clock = clock;
        self
    }

    /// Where controllers send Warning events (default: dropped).
    pub fn recorder(mut self, recorder: SharedRecorder) -> Self {
        self.recorder = recorder;
        self
    }

    /// The workqueue metrics provider (default: none).
    pub fn queue_metrics(mut self, provider: Arc<dyn MetricsProvider>) -> Self {
        self.queue_metrics = Some(provider);
        self
    }

    /// Publishes on `endpoints`: the TTL metrics and a workqueue metrics provider are
    /// registered with its registry now; each controller built by [`start`](Self::start) adds
    /// its queues to `/debug/workqueue`, its reflector counters, and its own metrics and debug
    /// pages. Call once.
    pub fn publish_to(mut self, endpoints: &Endpoints) -> Self {
        let metrics = &endpoints.metrics;
        metrics.register_with(|registry| self.ttl_metrics.register(registry));
        metrics
            .availability()
            .watch(self.client.availability().clone());
        self.queue_metrics = Some(metrics.workqueue());
        self.endpoints = Some(endpoints.clone());
        self
    }

    /// The TTL controllers' metrics, to register with a registry or read.
    pub fn ttl_metrics(&self) -> &Arc<TtlMetrics> {
        &self.ttl_metrics
    }

    /// Reads discovery and builds every enabled controller whose resources are served.
    ///
    /// # Errors
    ///
    /// [`ManagerError::Discovery`] or [`ManagerError::Init`].
    pub async fn start(self) -> Result<ControllerSet, ManagerError> {
        let discovery = Arc::new(discover_patiently(&self.client).await?);
        let explainer = self.endpoints.as_ref().map(|endpoints| {
            let explainer = LiveExplainer::new(Arc::clone(&discovery), Arc::clone(&self.clock));
            explainer.publish(endpoints);
            explainer
        });
        // One token bucket per client, as kube-controller-manager has: informers' lists and
        // watches never delay a controller's deletions, nor one controller another's.
        let sources = Sources::with_clients(
            self.client.for_component(SHARED_INFORMERS, 1.0),
            self.client.for_component(METADATA_INFORMERS, 1.0),
            self.options.reflector.clone(),
        );
        // The same collector `/metrics` reads, so that notifications and gauges agree.
        let pending = self
            .endpoints
            .as_ref()
            .map(|e| e.metrics.pending().clone())
            .unwrap_or_default();
        let notifier = self.notifier(&pending)?;
        let feed = notifier
            .as_ref()
            .map_or_else(|| Arc::new(NoFeed) as SharedFeed, Notifier::feed);
        let wiring = Wiring::default()
            .sources(sources.clone())
            .clock(Arc::clone(&self.clock))
            .recorder(Arc::clone(&self.recorder))
            .queue_metrics(self.queue_metrics.clone())
            .feed(feed);
        let context = ControllerContext {
            client: &self.client,
            sources: &sources,
            wiring,
            discovery: &discovery,
            options: &self.options,
            ttl_metrics: &self.ttl_metrics,
            endpoints: self.endpoints.as_ref(),
            explainer: explainer.as_ref(),
            pending: &pending,
        };
        for known in KNOWN_CONTROLLERS {
            let registered = self.inits.iter().any(|(name, _)| *name == known);
            if !registered && self.options.controllers.is_enabled(known) {
                tracing::info!(controller = known, "not part of this build; skipping");
            }
        }
        let mut set = ControllerSet::new();
        for (name, init) in self.inits {
            if !self.options.controllers.is_enabled(name) {
                tracing::info!(controller = name, "disabled by --controllers");
                if let Some(explainer) = &explainer {
                    explainer.not_running(name, "disabled by --controllers");
                }
                continue;
            }
            match init(&context).map_err(|source| ManagerError::Init {
                controller: name,
                source,
            })? {
                Init::Run(controller) => set.push(controller),
                Init::Skip(reason) => {
                    tracing::info!(controller = name, %reason, "skipping the controller");
                    if let Some(explainer) = &explainer {
                        explainer.not_running(name, format!("skipped at start-up: {reason}"));
                    }
                }
            }
        }
        if set.is_empty() {
            tracing::warn!("no controller is enabled and served; nothing to do");
        }
        let client = self.client.clone();
        set.add_service("api-server-availability", move |stop| {
            watch_outages(client, stop)
        });
        if let Some(notifier) = notifier {
            set.add_service("notifier", move |stop| notifier.run(stop));
        }
        Ok(set)
    }

    /// The notifier, unless this is a dry run (which sends nothing anywhere, as it writes
    /// nothing). Without `--notify-webhook-url` it only serves the policies that name a
    /// destination of their own, and one that cannot be built (no trust roots) is a warning;
    /// with the flag, an error.
    fn notifier(&self, pending: &PendingCollector) -> Result<Option<Notifier>, ManagerError> {
        if self.options.dry_run {
            if self.options.notify.webhook.is_some() {
                tracing::info!("dry run: no notification is sent");
            }
            return Ok(None);
        }
        let metrics = Arc::new(NotifyMetrics::default());
        let client = self.client.for_component("notifier", 1.0);
        let built = Notifier::new(
            self.options.notify.clone(),
            Some(client),
            pending.clone(),
            Arc::clone(&self.clock),
            Arc::clone(&metrics),
        );
        match built {
            Ok(notifier) => {
                if let Some(endpoints) = &self.endpoints {
                    endpoints.metrics.register_with(|r| metrics.register(r));
                }
                Ok(Some(notifier))
            }
            Err(error) if self.options.notify.webhook.is_some() => {
                Err(ManagerError::Notifier(error))
            }
            Err(error) => {
                tracing::warn!(%error, "retention policies' notifications cannot be sent");
                Ok(None)
            }
        }
    }

    /// [`start`](Self::start), then runs the controllers until `shutdown` is cancelled.
    ///
    /// # Errors
    ///
    /// As `start`, or the first controller that failed.
    pub async fn run(self, shutdown: CancellationToken) -> Result<(), ManagerError> {
        let set = self.start().await?;
        set.run(shutdown).await?;
        Ok(())
    }
}

impl std::fmt::Debug for Manager {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let names: Vec<&str> = self.inits.iter().map(|(name, _)| *name).collect();
        f.debug_struct("Manager")
            .field("options", &self.options)
            .field("controllers", &names)
            .finish_non_exhaustive()
    }
}

/// How often start-up re-reads discovery when it failed, and how long it waits before each retry.
const DISCOVERY_RETRIES: [Duration; 5] = [
    Duration::from_secs(1),
    Duration::from_secs(2),
    Duration::from_secs(4),
    Duration::from_secs(8),
    Duration::from_secs(16),
];

/// Discovery, re-read with backoff while it fails or some group's document fails, so that a
/// blip at start-up (an API server restarting, an aggregated API briefly down) neither stops
/// kube-gc nor makes it believe a resource is not served. After ~31 s it gives what it has:
/// a total failure is an error, and a controller whose group is still failing refuses to start
/// (`init_ttl`) rather than be skipped.
async fn discover_patiently(client: &Client) -> Result<Discovery, ManagerError> {
    let mut retries = DISCOVERY_RETRIES.iter();
    loop {
        let attempt = Discovery::run(client).await;
        // Credentials the server refuses will not be accepted a second later: say so at once.
        // (Later in a run, requests keep retrying: a rotated token can come back.)
        let attempt = match attempt {
            Err(e) if refuses_credentials(&e) => return Err(ManagerError::Discovery(e)),
            Ok(mut discovery) => {
                let refusal = discovery
                    .failures()
                    .iter()
                    .position(|f| refuses_credentials(&f.error));
                if let Some(index) = refusal {
                    let refused = discovery.take_failures().swap_remove(index);
                    return Err(ManagerError::Discovery(refused.error));
                }
                Ok(discovery)
            }
            other => other,
        };
        let failing = match &attempt {
            Ok(discovery) if discovery.failures().is_empty() => None,
            Ok(discovery) => Some(discovery.failures()[0].error.to_string()),
            Err(e) => Some(e.to_string()),
        };
        match (failing, retries.next()) {
            (Some(error), Some(wait)) => {
                tracing::warn!(%error, ?wait, "discovery failed at start-up; retrying");
                tokio::time::sleep(*wait).await;
            }
            _ => return attempt.map_err(ManagerError::Discovery),
        }
    }
}

/// A 401 or 403: the server refuses these credentials (or their rights).
fn refuses_credentials(error: &kube_gc_client::Error) -> bool {
    error.is_unauthorized() || error.is_forbidden()
}

/// `plural.group/version`, as the logs name a resource.
fn resource_name(resource: &ResourceRef) -> String {
    format!(
        "{}.{}/{}",
        resource.plural, resource.group, resource.version
    )
}

/// The init function of the TTL controller for kind `K`.
fn init_ttl<K: TtlKind>(context: &ControllerContext<'_>) -> Result<Init, BoxError> {
    let resource = K::resource();
    if !context.serves(&resource) && context.discovery.group_failed(&resource.group) {
        // Absent because its discovery document failed, not because it is not served: skipping
        // the controller would leave these objects uncollected for the life of the process.
        return Err(format!(
            "discovery of group {:?} failed, so whether {} is served is unknown",
            resource.group, resource.plural
        )
        .into());
    }
    if !context.serves(&resource) {
        return Ok(Init::Skip(format!(
            "the server does not serve {}",
            resource_name(&resource)
        )));
    }
    let options = context.options;
    let workers = if K::CONTROLLER == VOLCANO_JOB_TTL {
        options.volcano_ttl_workers
    } else {
        options.job_ttl_workers
    };
    let ttl_options = TtlOptions {
        workers,
        namespace: options.namespace.clone(),
        dry_run: options.dry_run,
        fresh_read: options.fresh_read,
        reflector: options.reflector.clone(),
    };
    let client = context.client.for_component(K::CONTROLLER, 1.0);
    let controller = TtlController::<K>::builder(client, ttl_options)
        .wiring(context.wiring.clone())
        .metrics(Arc::clone(context.ttl_metrics))
        .build();
    context.pending.add(
        controller.pending_source(),
        Arc::clone(&context.wiring.clock),
    );
    if let Some(endpoints) = context.endpoints {
        endpoints
            .queues
            .register(Arc::new(controller.queue().clone()));
        if let Some(wait) = controller.server_wait() {
            endpoints.metrics.availability().add_queue(K::QUEUE, &wait);
        }
        if let Some(reflector) = controller.reflector_metrics() {
            endpoints
                .metrics
                .reflectors()
                .add(K::CONTROLLER, &resource.path_name(), reflector);
        }
    }
    if let Some(explainer) = context.explainer {
        let watch = Arc::clone(controller.watch());
        explainer.register(Arc::new(TtlView::<K>::new(watch, controller.synced())));
    }
    let caches = vec![controller.synced()];
    let probe = controller.progress_probe(Arc::clone(&context.wiring.clock));
    let managed = ManagedController::new(K::CONTROLLER, caches, move |shutdown| {
        controller.run(shutdown)
    });
    Ok(Init::Run(managed.with_progress(probe)))
}
