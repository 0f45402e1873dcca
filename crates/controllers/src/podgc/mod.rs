//! The pod garbage collector (`podgc`; kube-controller-manager's
//! `pod-garbage-collector-controller`): on an API server where no kube-controller-manager runs,
//! the Pods nothing else will ever remove.
//!
//! Reading order: [`decide`] (the rules, pure), [`facts`] (what is cached of Pods and Nodes),
//! `handlers.rs` (events → keys), `reconcile.rs` (keys → requests), [`force`] (the guarded
//! requests), [`metrics`].
//!
//! Contract:
//! - It force-deletes (status `Failed` first, then `DELETE` with `gracePeriodSeconds: 0`, both
//!   guarded by the Pod's uid and resourceVersion) Pods bound to a node that does not exist —
//!   after a 40 s quarantine ([`PodGcOptions::quarantine`]) and a GET confirming the node is gone —, terminating Pods on a node
//!   that is not ready and is tainted `node.kubernetes.io/out-of-service` (after a GET of the
//!   node), terminating Pods never scheduled, and the oldest terminated Pods above
//!   `--terminated-pod-gc-threshold` (12,500 by default, 0 turns that rule off).
//! - Event-driven where kube-controller-manager passes over every Pod every 20 s: a Pod is
//!   judged when it or its node changes, a quarantine is an `add_after`, the threshold is
//!   checked when a Pod terminates. Nothing polls.
//! - It lists and watches Pods (only the members [`PodFacts::reads`] names, in protobuf) and
//!   Nodes through the process's shared sources; its own requests are the confirmations the
//!   safety rules demand and the deletions.
//! - A non-terminated Pod on a `Ready` node is never touched.

pub mod decide;
pub mod facts;
pub mod force;
mod handlers;
pub mod metrics;
pub mod pending;
mod reconcile;

use std::sync::atomic::AtomicUsize;
use std::sync::Arc;
use std::time::Duration;

use kube_gc_client::{Api, Client, ResourceRef};
use kube_gc_core::clock::SharedClock;
use kube_gc_runtime::cache::{ObjectKey, Store};
use kube_gc_runtime::controller::{Controller, ControllerError, ServerWait};
use kube_gc_runtime::events::{NoopRecorder, SharedRecorder};
use kube_gc_runtime::informer::{InformerSynced, SharedInformer};
use kube_gc_runtime::reflector::{ReflectorConfig, ReflectorMetrics};
use kube_gc_runtime::sources::{SourceKey, Subscriber};
use kube_gc_runtime::workqueue::WorkQueue;

pub use decide::{Reason, Verdict, DEFAULT_TERMINATED_POD_THRESHOLD, QUARANTINE};
pub use facts::{NodeFacts, PodFacts, PodPhase};
pub use handlers::Quarantines;
pub use metrics::PodGcMetrics;
pub use reconcile::{PodGcError, PodGcReconciler};

use crate::deleted::NoFeed;
use crate::settled::Settled;
use crate::wiring::Wiring;
use handlers::{OnNodes, OnPods, Watching};

/// The controller's name, as `--controllers` selects it.
pub const CONTROLLER: &str = "podgc";
/// Its workqueue's name (the `name` label of the workqueue metrics).
pub const QUEUE: &str = "podgc";
/// The `User-Agent` suffix (and rate limiter) of its requests, as kube-controller-manager's.
pub const COMPONENT: &str = "pod-garbage-collector";
/// Workers: keys handled at once (kube-controller-manager has no flag for it).
pub const WORKERS: usize = 5;
/// The Pod cache's index by `spec.nodeName`.
const BY_NODE: &str = "node";

/// core/v1 Pods.
pub fn pod_resource() -> ResourceRef {
    ResourceRef::new("", "v1", "pods", "Pod", true)
}

/// core/v1 Nodes.
pub fn node_resource() -> ResourceRef {
    ResourceRef::new("", "v1", "nodes", "Node", false)
}

/// A unit of work.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum PodGcKey {
    /// A Pod that may be due for a force deletion.
    Pod(ObjectKey),
    /// A node missing from the cache, whose Pods are orphans once it is confirmed gone.
    Node(String),
    /// The terminated Pods may be above the threshold.
    Terminated,
}

/// What the command line decides about the pod garbage collector.
#[derive(Clone, Debug, PartialEq)]
pub struct PodGcOptions {
    /// `--terminated-pod-gc-threshold`: terminated Pods kept before the oldest go; 0 keeps all.
    pub terminated_threshold: usize,
    /// How long a node missing from the cache is waited for before it is read and its Pods
    /// force-deleted ([`QUARANTINE`], upstream's fixed 40 s; no flag sets it — `kube-gc demo`,
    /// on a timescale of seconds, shortens it).
    pub quarantine: Duration,
    /// `--dry-run`: decide and log, write nothing.
    pub dry_run: bool,
    /// How its informers list and watch, when it has no shared sources.
    pub reflector: ReflectorConfig,
}

impl Default for PodGcOptions {
    fn default() -> Self {
        PodGcOptions {
            terminated_threshold: DEFAULT_TERMINATED_POD_THRESHOLD,
            quarantine: QUARANTINE,
            dry_run: false,
            reflector: ReflectorConfig::default(),
        }
    }
}

/// The pod garbage collector, wired and not started.
pub struct PodGcController {
    controller: Controller<PodGcKey, PodGcReconciler>,
    watching: Arc<Watching>,
    synced: Vec<InformerSynced>,
    reflectors: Vec<(ResourceRef, Arc<ReflectorMetrics>)>,
}

/// Configures a [`PodGcController`].
pub struct PodGcBuilder {
    client: Client,
    options: PodGcOptions,
    wiring: Wiring,
    metrics: Arc<PodGcMetrics>,
}

impl PodGcBuilder {
    /// What it shares with the process: sources, clock, where Warning events, queue metrics
    /// and each force deletion go (default: [`Wiring::default`], a controller on its own).
    pub fn wiring(mut self, wiring: Wiring) -> Self {
        self.wiring = wiring;
        self
    }

    /// The metrics to count into (default: private ones).
    pub fn metrics(mut self, metrics: Arc<PodGcMetrics>) -> Self {
        self.metrics = metrics;
        self
    }

    /// Wires informers, handlers, queue and workers; starts nothing.
    ///
    /// # Panics
    ///
    /// Outside a Tokio runtime (registering a handler spawns its task).
    pub fn build(self) -> PodGcController {
        let queue = self.wiring.queue(QUEUE).build();
        let sources = self
            .wiring
            .sources_or_own(&self.client, &self.options.reflector);
        let pod_store = Store::builder().index(BY_NODE, node_of).build();
        // Each informer holds the sources until it has subscribed: the controllers built beside
        // this one read the same resources, and the first list is to serve them all.
        let pods = SharedInformer::builder("pods", pod_store)
            .source_holding(
                &sources,
                SourceKey::all(pod_resource()),
                Subscriber::objects(CONTROLLER, PodFacts::decoder()),
                Some(sources.hold()),
            )
            .build();
        let nodes = SharedInformer::builder("nodes", Store::new())
            .source_holding(
                &sources,
                SourceKey::all(node_resource()),
                Subscriber::objects(CONTROLLER, NodeFacts::decoder()),
                Some(sources.hold()),
            )
            .build();
        let watching = Arc::new(Watching {
            pods: Arc::clone(pods.store()),
            nodes: Arc::clone(nodes.store()),
            queue: queue.clone(),
            clock: Arc::clone(&self.wiring.clock),
            quarantines: Arc::new(Quarantines::default()),
            quarantine: self.options.quarantine,
            terminated: Arc::new(AtomicUsize::new(0)),
            threshold: self.options.terminated_threshold,
            forced: Settled::default(),
            feed: Arc::clone(&self.wiring.feed),
        });
        pods.add_handler(OnPods(Arc::clone(&watching)));
        nodes.add_handler(OnNodes(Arc::clone(&watching)));
        let reconciler = reconciler(
            &self.client,
            Arc::clone(&watching),
            self.metrics,
            Arc::clone(&self.wiring.recorder),
            &self.options,
        );
        let reflectors = [
            crate::reflector_of(pod_resource(), &pods),
            crate::reflector_of(node_resource(), &nodes),
        ]
        .into_iter()
        .flatten()
        .collect();
        let synced = vec![pods.synced(), nodes.synced()];
        let availability = self.client.availability().clone();
        let controller = Controller::new(CONTROLLER, queue, reconciler)
            .workers(WORKERS)
            .wait_for_server(availability)
            .informer(&pods)
            .informer(&nodes);
        PodGcController {
            controller,
            watching,
            synced,
            reflectors,
        }
    }
}

/// A reconciler over caches the caller fills, with no informer behind them: the state between
/// a cache read and the server's answer, made on purpose (tests; tools that judge Pods they
/// listed themselves).
pub struct Detached {
    /// The reconciler.
    pub reconciler: PodGcReconciler,
    /// Its Pod cache (indexed by node, as the controller's).
    pub pods: Arc<Store<PodFacts>>,
    /// Its Node cache.
    pub nodes: Arc<Store<NodeFacts>>,
    /// Its quarantines.
    pub quarantines: Arc<Quarantines>,
}

impl Detached {
    /// A detached reconciler for `client`, counting into `metrics`.
    pub fn new(
        client: Client,
        options: &PodGcOptions,
        clock: SharedClock,
        metrics: Arc<PodGcMetrics>,
    ) -> Detached {
        let watching = Arc::new(Watching {
            pods: Arc::new(Store::builder().index(BY_NODE, node_of).build()),
            nodes: Arc::new(Store::new()),
            queue: WorkQueue::new(QUEUE),
            clock,
            quarantines: Arc::new(Quarantines::default()),
            quarantine: options.quarantine,
            terminated: Arc::new(AtomicUsize::new(0)),
            threshold: options.terminated_threshold,
            forced: Settled::default(),
            feed: Arc::new(NoFeed),
        });
        Detached {
            pods: Arc::clone(&watching.pods),
            nodes: Arc::clone(&watching.nodes),
            quarantines: Arc::clone(&watching.quarantines),
            reconciler: reconciler(&client, watching, metrics, Arc::new(NoopRecorder), options),
        }
    }
}

/// The reconciler over `watching`'s caches.
fn reconciler(
    client: &Client,
    watching: Arc<Watching>,
    metrics: Arc<PodGcMetrics>,
    recorder: SharedRecorder,
    options: &PodGcOptions,
) -> PodGcReconciler {
    PodGcReconciler {
        watching,
        pods: Api::dynamic(client.clone(), pod_resource(), None),
        pod_facts: Api::dynamic(client.clone(), pod_resource(), None),
        nodes: Api::dynamic(client.clone(), node_resource(), None),
        metrics,
        recorder,
        dry_run: options.dry_run,
    }
}

/// The index function of the Pod cache: the node a Pod is bound to.
fn node_of(pod: &PodFacts) -> Vec<String> {
    if pod.is_scheduled() {
        vec![pod.node_name.clone()]
    } else {
        Vec::new()
    }
}

impl PodGcController {
    /// Starts configuring the controller for `client` (its own, as
    /// `Client::for_component(COMPONENT, 1.0)` makes it) with `options`.
    pub fn builder(client: Client, options: PodGcOptions) -> PodGcBuilder {
        PodGcBuilder {
            client,
            options,
            wiring: Wiring::default(),
            metrics: Arc::new(PodGcMetrics::default()),
        }
    }

    /// The Pod and Node caches' sync flags.
    pub fn synced(&self) -> Vec<InformerSynced> {
        self.synced.clone()
    }

    /// The cached Pods (for `kube-gc explain` / `plan` and tests).
    pub fn pods(&self) -> &Arc<Store<PodFacts>> {
        &self.watching.pods
    }

    /// The cached Nodes.
    pub fn nodes(&self) -> &Arc<Store<NodeFacts>> {
        &self.watching.nodes
    }

    /// Since when each missing node has been in quarantine.
    pub fn quarantines(&self) -> &Arc<Quarantines> {
        &self.watching.quarantines
    }

    /// What it will force-delete, and when, read from its caches when asked
    /// (`kube_gc_pending_deletions`, the notifier's next window).
    /// The source holds the caches weakly: once the controller is gone, it reads nothing.
    pub fn pending_source(&self) -> crate::pending::SharedPendingSource {
        let watching = Arc::downgrade(&self.watching);
        Arc::new(move |query: &crate::pending::PendingQuery| {
            let Some(watching) = watching.upgrade() else {
                return Vec::new();
            };
            let pods = watching.pods.list();
            let quarantines = Arc::clone(&watching.quarantines);
            vec![pending::pending(
                &pods,
                &watching.nodes,
                |node| quarantines.since(node),
                watching.threshold,
                query,
            )]
        })
    }

    /// The workqueue (for `/debug/workqueue` and its depth).
    pub fn queue(&self) -> &WorkQueue<PodGcKey> {
        &self.watching.queue
    }

    /// Where its keys wait while the API server is unavailable.
    pub fn server_wait(&self) -> Option<ServerWait<PodGcKey>> {
        self.controller.server_wait()
    }

    /// The reflector counters of its Pod and Node informers.
    pub fn reflector_metrics(&self) -> &[(ResourceRef, Arc<ReflectorMetrics>)] {
        &self.reflectors
    }

    /// Runs until `shutdown` is cancelled, then drains and stops.
    ///
    /// # Errors
    ///
    /// [`ControllerError`] if a cache can never sync.
    pub async fn run(
        self,
        shutdown: tokio_util::sync::CancellationToken,
    ) -> Result<(), ControllerError> {
        self.controller.run(shutdown).await
    }
}
