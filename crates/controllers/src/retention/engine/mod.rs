//! The retention engine: [`RetentionController`] watches the policies and the namespaces,
//! plans which resources to watch and with which rules (`plan.rs`, run by `planner.rs`, less
//! what the server forbids: `refusal.rs`), keeps one [`ResourceWatch`] per resource
//! (`watch.rs`), deletes what is due (`reconcile.rs`) and reports on every policy (`status.rs`,
//! written by `writer.rs`).
//!
//! ```text
//!  RetentionPolicy ─┐                        ┌─ ResourceWatch v1/pods ──────┐
//!  ClusterRetention ├─▶ planner ── plan ──▶  ├─ ResourceWatch tekton.dev/… ├─▶ WorkQueue ─▶ workers
//!  Namespace labels ┘   (debounced)          └─ …  (Assessments, groups)     ┘   (reconcile.rs)
//!                          └──────────▶ status writer (every status interval, when changed)
//! ```
//!
//! Contract:
//! - A policy change (or a namespace label change under a `namespaceSelector`) is planned
//!   after [`RetentionOptions::replan_delay`]; resources whose rules changed are watched
//!   afresh (one LIST each), since only assessments, never objects, are cached.
//! - No deletion happens before the policies, the namespaces and the resource's own list are
//!   cached: a watch's keys are queued by its own handlers, after its first list.
//! - Invalid policies get `Ready=False` with the fields at fault and a Warning Event, once per
//!   generation, and delete nothing.
//! - A resource the server forbids kube-gc to read or delete (a 403) makes the policies naming
//!   it `Ready=False`, reason `Forbidden`, with the RBAC rule to grant (`refusal.rs`); a resource
//!   it may not read is not watched, so one policy's missing rule never fails `/readyz` for the
//!   others, and is tried again every [`RetentionOptions::rediscover_interval`].
//! - Every task (planner, status writer, watches) is owned by [`RetentionController::run`]
//!   and stopped before it returns.

mod fresh_read;
mod groups;
mod metrics;
mod plan;
mod planner;
mod reconcile;
mod refusal;
mod refused;
mod status;
mod tally;
mod upcoming;
mod watch;
mod writer;

use std::collections::BTreeMap;
use std::fmt;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Weak};
use std::time::Duration;

use parking_lot::{Mutex, RwLock};
use tokio::sync::Notify;
use tokio_util::sync::CancellationToken;

use crate::deleted::SharedFeed;
use crate::pending::{Pending, PendingQuery, PendingSource};
use crate::wiring::Wiring;
use kube_gc_api::PartialObjectMetadata;
use kube_gc_client::{Client, ResourceRef};
use kube_gc_core::clock::SharedClock;
use kube_gc_runtime::cache::{ObjectKey, Store};
use kube_gc_runtime::controller::{Controller, ControllerError, ServerWait};
use kube_gc_runtime::events::SharedRecorder;
use kube_gc_runtime::informer::{HandlerFns, InformerSynced, SharedInformer};
use kube_gc_runtime::reflector::Form;
use kube_gc_runtime::reflector::{ReflectorConfig, ReflectorMetrics};
use kube_gc_runtime::sources::{SourceKey, Subscriber};
use kube_gc_runtime::workqueue::WorkQueue;

pub use fresh_read::{FreshRead, UnknownFreshRead};
pub use groups::{GroupIndex, GroupKey};
pub use metrics::{RetentionMetrics, StateTally};
pub use plan::{plan, plan_served, Plan, PolicyInput, PolicyState, WatchPlan};
pub use reconcile::{ReconcileSettings, RetentionError, RetentionReconciler};
pub use refusal::{forbid, Refusals};
pub use refused::{rule_needed, Refusal, Refused};
pub use status::{count, status_for, Counts};
pub use tally::Tally;
pub use upcoming::{pending, upcoming, Upcoming, HISTORY_LIMIT, TTL};
pub use watch::{assessing, ResourceWatch, TargetErrorHandler, WatchContext};

use super::policy::spec::{CLUSTER_PLURAL, GROUP, NAMESPACED_PLURAL, VERSION};
use super::policy::{PolicyId, RetentionPolicyObject, Target};

/// The controller's name, as `--controllers` selects it.
pub const CONTROLLER: &str = "retention";

/// A unit of work.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum WorkKey {
    /// An object whose TTL may be due.
    Object {
        /// Its resource.
        target: Arc<Target>,
        /// Its key.
        key: ObjectKey,
    },
    /// A history group to re-rank.
    Group {
        /// Its resource.
        target: Arc<Target>,
        /// The group (boxed: every waiting object's key sits in the queue's timers, and
        /// most keys are objects, so the key is kept to an object's size).
        group: Box<GroupKey>,
    },
}

impl WorkKey {
    /// The resource the key belongs to.
    pub fn target(&self) -> &Target {
        match self {
            WorkKey::Object { target, .. } | WorkKey::Group { target, .. } => target,
        }
    }
}

impl fmt::Display for WorkKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            WorkKey::Object { target, key } => write!(f, "{target} {key}"),
            WorkKey::Group { target, group } => write!(f, "{target} group {group}"),
        }
    }
}

/// The running watches, by resource.
pub type WatchMap = Arc<RwLock<BTreeMap<Target, Arc<ResourceWatch>>>>;

/// How the retention controller runs.
#[derive(Clone, Debug)]
pub struct RetentionOptions {
    /// Keys reconciled at once.
    pub workers: usize,
    /// How long after a policy or namespace change the plan is made (changes in that window
    /// are planned together).
    pub replan_delay: Duration,
    /// How often statuses are recounted (and written if they changed). A policy's new
    /// judgement — its first, a new generation, another `Ready` — is written at once.
    pub status_interval: Duration,
    /// How often discovery is read again while a policy names a resource not served, and a
    /// resource kube-gc was forbidden to read is tried again.
    pub rediscover_interval: Duration,
    /// Delete nothing, log and count what would be deleted, write no status
    /// (`kube-gc run --dry-run`).
    pub dry_run: bool,
    /// How informers list and watch.
    pub reflector: ReflectorConfig,
}

impl Default for RetentionOptions {
    fn default() -> Self {
        RetentionOptions {
            workers: 5,
            replan_delay: Duration::from_millis(200),
            status_interval: Duration::from_secs(10),
            rediscover_interval: Duration::from_secs(30),
            dry_run: false,
            reflector: ReflectorConfig::default(),
        }
    }
}

/// The resource of `RetentionPolicy`.
pub fn namespaced_policies() -> ResourceRef {
    ResourceRef::new(GROUP, VERSION, NAMESPACED_PLURAL, "RetentionPolicy", true)
}

/// The resource of `ClusterRetentionPolicy`.
pub fn cluster_policies() -> ResourceRef {
    ResourceRef::new(
        GROUP,
        VERSION,
        CLUSTER_PLURAL,
        "ClusterRetentionPolicy",
        false,
    )
}

/// What the planner, the status writer and the reconciler share.
struct Shared {
    client: Client,
    watches: WatchMap,
    states: Mutex<BTreeMap<PolicyId, PolicyState>>,
    metrics: Arc<RetentionMetrics>,
    recorder: SharedRecorder,
    clock: SharedClock,
    options: RetentionOptions,
    namespaced: SharedInformer<RetentionPolicyObject>,
    cluster: SharedInformer<RetentionPolicyObject>,
    namespaces: SharedInformer<PartialObjectMetadata>,
    context: WatchContext,
    dirty: Notify,
    /// A policy was judged anew (created, changed, or its state changed): the status writer
    /// writes what it now says at once, not at its next round.
    judged: Notify,
    /// A watch was answered 404: read discovery again before the next plan, however fresh.
    rediscover: AtomicBool,
    /// What the server forbids kube-gc on the policies' resources (403s).
    refusals: Arc<Refusals>,
    /// Where deletions are told, each policy's destination routed, and its delivery read.
    feed: SharedFeed,
}

/// The retention controller, ready to run.
pub struct RetentionController {
    shared: Arc<Shared>,
    controller: Controller<WorkKey, RetentionReconciler>,
}

/// Configures a [`RetentionController`].
pub struct RetentionControllerBuilder {
    client: Client,
    options: RetentionOptions,
    wiring: Wiring,
    metrics: Arc<RetentionMetrics>,
}

impl RetentionControllerBuilder {
    /// What it shares with the process: the [`Sources`] its informers and watches read
    /// through, clock, where Events, queue metrics and deletions (and those an `Audit` policy
    /// would make) go (default: [`Wiring::default`], a controller on its own).
    pub fn wiring(mut self, wiring: Wiring) -> Self {
        self.wiring = wiring;
        self
    }

    /// The metrics to update.
    pub fn metrics(mut self, metrics: Arc<RetentionMetrics>) -> Self {
        self.metrics = metrics;
        self
    }

    /// Wires everything; starts nothing.
    ///
    /// # Panics
    ///
    /// Outside a Tokio runtime (registering handlers spawns their tasks).
    pub fn build(self) -> RetentionController {
        let sources = self
            .wiring
            .sources_or_own(&self.client, &self.options.reflector);
        let policies = |resource: ResourceRef| {
            let key = SourceKey::all(resource.clone());
            let subscriber = Subscriber::<RetentionPolicyObject>::serde(CONTROLLER, Form::Objects);
            SharedInformer::builder(resource.path_name(), Store::new())
                .source(&sources, key, subscriber)
                .build()
        };
        let namespaced = policies(namespaced_policies());
        let cluster = policies(cluster_policies());
        let namespaces = SharedInformer::builder("retention namespaces", Store::new())
            .source(
                &sources,
                SourceKey::all(ResourceRef::new("", "v1", "namespaces", "Namespace", false)),
                Subscriber::<PartialObjectMetadata>::serde(CONTROLLER, Form::Metadata),
            )
            .build();
        let queue = self.wiring.queue("retention").build();
        let watches: WatchMap = Arc::default();
        let refusals = Arc::new(Refusals::default());
        let shared = Arc::new_cyclic(|weak| Shared {
            context: WatchContext {
                controller: CONTROLLER,
                sources,
                client: self.client.clone(),
                queue: queue.clone(),
                clock: Arc::clone(&self.wiring.clock),
                namespace: None,
                on_error: Some(on_watch_error(weak.clone(), Arc::clone(&refusals))),
            },
            client: self.client,
            watches: Arc::clone(&watches),
            states: Mutex::new(BTreeMap::new()),
            metrics: Arc::clone(&self.metrics),
            recorder: Arc::clone(&self.wiring.recorder),
            clock: Arc::clone(&self.wiring.clock),
            options: self.options.clone(),
            namespaced,
            cluster,
            namespaces,
            dirty: Notify::new(),
            judged: Notify::new(),
            rediscover: AtomicBool::new(false),
            refusals: Arc::clone(&refusals),
            feed: Arc::clone(&self.wiring.feed),
        });
        for informer in [&shared.namespaced, &shared.cluster] {
            informer.add_handler(replan_on_change(&shared));
        }
        shared.namespaces.add_handler(replan_on_change(&shared));
        let settings = ReconcileSettings {
            dry_run: self.options.dry_run,
            ..ReconcileSettings::default()
        };
        let Wiring {
            clock,
            recorder,
            feed,
            ..
        } = self.wiring;
        let reconciler = RetentionReconciler::new(watches, clock, self.metrics, recorder)
            .with_settings(settings)
            .with_refusals(refusals)
            .with_feed(feed);
        let controller = Controller::new(CONTROLLER, queue, reconciler)
            .workers(self.options.workers)
            .wait_for_server(shared.client.availability().clone())
            .informer(&shared.namespaces)
            .informer(&shared.namespaced)
            .informer(&shared.cluster);
        RetentionController { shared, controller }
    }
}

/// What the watches do with a failed request.
///
/// A 404 may mean that the resource is no longer served — its CustomResourceDefinition
/// deleted: its watch ends and every list and watch answers 404 (exchanges 74–76) — which only
/// discovery can tell, so the planner reads it again now rather than at its next periodic look;
/// if the resource is gone, the plan stops its watch and the policies naming it go
/// `ResourceNotServed`.
///
/// A 403 means kube-gc's RBAC does not cover the resource (exchanges 200–206): it is recorded,
/// and the plan stops the watch and turns the policies naming it `Forbidden` (`refusal.rs`).
fn on_watch_error(shared: Weak<Shared>, refusals: Arc<Refusals>) -> TargetErrorHandler {
    Arc::new(move |target: &Target, error: &kube_gc_client::Error| {
        if error.is_forbidden() {
            refusals.refused_read(target, server_said(error));
        } else if error.is_not_found() {
            if let Some(shared) = shared.upgrade() {
                shared.rediscover.store(true, Ordering::Relaxed);
                shared.dirty.notify_one();
            }
        }
    })
}

/// The server's own words for a refusal: its `Status` message, else the error as a whole.
fn server_said(error: &kube_gc_client::Error) -> String {
    error
        .api()
        .map_or_else(|| error.to_string(), |api| api.message.clone())
}

/// Handlers that only say "plan again".
fn replan_on_change<T: Send + Sync + 'static>(shared: &Arc<Shared>) -> HandlerFns<T> {
    let (a, u, d) = (
        Arc::downgrade(shared),
        Arc::downgrade(shared),
        Arc::downgrade(shared),
    );
    let poke = |weak: &std::sync::Weak<Shared>| {
        if let Some(shared) = weak.upgrade() {
            shared.dirty.notify_one();
        }
    };
    HandlerFns::new()
        .on_add(move |_| poke(&a))
        .on_update(move |_, _| poke(&u))
        .on_delete(move |_| poke(&d))
}

impl RetentionController {
    /// Starts configuring a controller that reads and deletes through `client`.
    pub fn builder(client: Client, options: RetentionOptions) -> RetentionControllerBuilder {
        RetentionControllerBuilder {
            client,
            options,
            wiring: Wiring::default(),
            metrics: Arc::new(RetentionMetrics::default()),
        }
    }

    /// The caches it needs before it is useful: policies and namespaces.
    pub fn synced(&self) -> Vec<InformerSynced> {
        vec![
            self.shared.namespaces.synced(),
            self.shared.namespaced.synced(),
            self.shared.cluster.synced(),
        ]
    }

    /// The running watches (for tests and the metrics endpoint).
    pub fn watches(&self) -> WatchMap {
        Arc::clone(&self.shared.watches)
    }

    /// What its policies will delete, and when, read from the running watches when asked
    /// (`kube_gc_pending_deletions`, the notifier's next window).
    /// The source holds the watches weakly: once the controller is gone, it reads nothing.
    pub fn pending_source(&self) -> Arc<dyn PendingSource> {
        let watches = Arc::downgrade(&self.shared.watches);
        Arc::new(move |query: &PendingQuery| -> Vec<Pending> {
            let Some(watches) = watches.upgrade() else {
                return Vec::new();
            };
            let running: Vec<_> = watches.read().values().cloned().collect();
            pending(&running, query, CONTROLLER)
        })
    }

    /// The workqueue (for `/debug/workqueue` and its depth).
    pub fn queue(&self) -> WorkQueue<WorkKey> {
        self.shared.context.queue.clone()
    }

    /// Where its keys wait while the API server is unavailable (for metrics).
    pub fn server_wait(&self) -> Option<ServerWait<WorkKey>> {
        self.controller.server_wait()
    }

    /// The reflector counters of every running watch, by resource, read when called: the
    /// metrics endpoint lists the watches of the moment.
    pub fn watch_reflectors(
        &self,
    ) -> impl Fn() -> Vec<(String, Arc<ReflectorMetrics>)> + Send + Sync + 'static {
        let watches = Arc::clone(&self.shared.watches);
        move || {
            watches
                .read()
                .iter()
                .filter_map(|(target, watch)| {
                    Some((target.to_string(), Arc::clone(watch.reflector_metrics()?)))
                })
                .collect()
        }
    }

    /// The reflector counters of the policies' and namespaces' informers, by resource.
    pub fn reflector_metrics(&self) -> Vec<(String, Arc<ReflectorMetrics>)> {
        let named = [
            (
                "v1/namespaces".to_owned(),
                &self.shared.namespaces.reflector_metrics(),
            ),
            (
                namespaced_policies().path_name(),
                &self.shared.namespaced.reflector_metrics(),
            ),
            (
                cluster_policies().path_name(),
                &self.shared.cluster.reflector_metrics(),
            ),
        ];
        named
            .into_iter()
            .filter_map(|(resource, metrics)| Some((resource, Arc::clone((*metrics)?))))
            .collect()
    }

    /// Runs until `shutdown` is cancelled; stops the planner, the status writer and every
    /// watch before returning.
    ///
    /// # Errors
    ///
    /// [`ControllerError`] if a cache can never sync.
    pub async fn run(self, shutdown: CancellationToken) -> Result<(), ControllerError> {
        let tasks_stop = shutdown.child_token();
        let planner = tokio::spawn(planner::planner(
            Arc::clone(&self.shared),
            self.synced(),
            tasks_stop.clone(),
        ));
        let writer = tokio::spawn(writer::status_writer(
            Arc::clone(&self.shared),
            self.synced(),
            tasks_stop.clone(),
        ));
        let result = self.controller.run(shutdown).await;
        tasks_stop.cancel();
        let _ = planner.await;
        let _ = writer.await;
        let watches: Vec<_> = std::mem::take(&mut *self.shared.watches.write())
            .into_values()
            .collect();
        for watch in watches {
            watch.stop().await;
        }
        result
    }
}

impl fmt::Debug for RetentionController {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RetentionController")
            .field("watches", &self.shared.watches.read().len())
            .finish_non_exhaustive()
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_work_key_is_an_objects_size() {
        // Every waiting object's key sits in the workqueue's timers: keep it small.
        assert!(
            std::mem::size_of::<super::WorkKey>() <= 32,
            "{}",
            std::mem::size_of::<super::WorkKey>()
        );
    }
}
