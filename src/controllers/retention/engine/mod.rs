//! The retention engine: [`RetentionController`] watches the policies and the namespaces,
//! plans which resources to watch and with which rules (`plan.rs`), keeps one
//! [`ResourceWatch`] per resource (`watch.rs`), deletes what is due (`reconcile.rs`) and
//! reports on every policy (`status.rs`).
//!
//! ```text
//!  RetentionPolicy ─┐                        ┌─ ResourceWatch v1/pods ──────┐
//!  ClusterRetention ├─▶ planner ── plan ──▶  ├─ ResourceWatch tekton.dev/… ├─▶ WorkQueue ─▶ workers
//!  Namespace labels ┘   (debounced)          └─ …  (Judgements, groups)     ┘   (reconcile.rs)
//!                          └──────────▶ status writer (every status interval, when changed)
//! ```
//!
//! Contract:
//! - A policy change (or a namespace label change under a `namespaceSelector`) is planned
//!   after [`RetentionOptions::replan_delay`]; resources whose rules changed are watched
//!   afresh (one LIST each), since only judgements, never objects, are cached.
//! - No deletion happens before the policies, the namespaces and the resource's own list are
//!   cached: a watch's keys are queued by its own handlers, after its first list.
//! - Invalid policies get `Ready=False` with the fields at fault and a Warning Event, once per
//!   generation, and delete nothing.
//! - Every task (planner, status writer, watches) is owned by [`RetentionController::run`]
//!   and stopped before it returns.

mod groups;
mod metrics;
mod plan;
mod reconcile;
mod status;
mod watch;

use std::collections::{BTreeMap, HashMap};
use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use parking_lot::{Mutex, RwLock};
use tokio::sync::Notify;
use tokio_util::sync::CancellationToken;

use crate::api::{ObjectReference, PartialObjectMetadata};
use crate::client::{Api, Client, Discovery, Patch, PostParams, ResourceRef};
use crate::clock::{SharedClock, SystemClock};
use crate::events::{EventRecord, EventType, NoopRecorder, SharedRecorder};
use crate::runtime::cache::ObjectKey;
use crate::runtime::controller::{Controller, ControllerError};
use crate::runtime::informer::{HandlerFns, InformerSynced, SharedInformer};
use crate::runtime::reflector::{MetadataOnly, ReflectorConfig, ReflectorMetrics};
use crate::runtime::workqueue::{MetricsProvider, WorkQueue};

pub use groups::{GroupIndex, GroupKey};
pub use metrics::RetentionMetrics;
pub use plan::{plan, Plan, PolicyInput, PolicyState, WatchPlan};
pub use reconcile::{RetentionError, RetentionReconciler};
pub use status::{count, status_for, Counts};
pub use watch::{ResourceWatch, WatchContext};

use super::policy::spec::{CLUSTER_PLURAL, GROUP, NAMESPACED_PLURAL, VERSION};
use super::policy::{PolicyId, RetentionPolicyObject, RetentionPolicyStatus, Target};

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
        /// The group.
        group: GroupKey,
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
    /// How often statuses are recounted (and written if they changed).
    pub status_interval: Duration,
    /// How often discovery is read again while a policy names a resource not served.
    pub rediscover_interval: Duration,
    /// Every policy as if it said `dryRun: true` (`kube-gc run --dry-run`).
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
}

/// The retention controller, ready to run.
pub struct RetentionController {
    shared: Arc<Shared>,
    controller: Controller<WorkKey, RetentionReconciler>,
}

/// Configures a [`RetentionController`].
pub struct RetentionControllerBuilder {
    client: Client,
    informer_client: Option<Client>,
    options: RetentionOptions,
    clock: SharedClock,
    metrics: Arc<RetentionMetrics>,
    recorder: SharedRecorder,
    queue_metrics: Option<Arc<dyn MetricsProvider>>,
}

impl RetentionControllerBuilder {
    /// The client informers list and watch through (default: the controller's).
    pub fn informer_client(mut self, client: Client) -> Self {
        self.informer_client = Some(client);
        self
    }

    /// Where wall time is read (default: the system clock).
    pub fn clock(mut self, clock: SharedClock) -> Self {
        self.clock = clock;
        self
    }

    /// The metrics to update.
    pub fn metrics(mut self, metrics: Arc<RetentionMetrics>) -> Self {
        self.metrics = metrics;
        self
    }

    /// Where Events go (default: dropped).
    pub fn recorder(mut self, recorder: SharedRecorder) -> Self {
        self.recorder = recorder;
        self
    }

    /// The workqueue's metrics provider.
    pub fn queue_metrics(mut self, provider: Option<Arc<dyn MetricsProvider>>) -> Self {
        self.queue_metrics = provider;
        self
    }

    /// Wires everything; starts nothing.
    ///
    /// # Panics
    ///
    /// Outside a Tokio runtime (registering handlers spawns their tasks).
    pub fn build(self) -> RetentionController {
        let informer_client = self.informer_client.unwrap_or_else(|| self.client.clone());
        let reflector = self.options.reflector.clone();
        let policies = |resource: ResourceRef| {
            let api: Api<RetentionPolicyObject> =
                Api::dynamic(informer_client.clone(), resource.clone(), None);
            SharedInformer::new(resource.path_name(), api, reflector.clone())
        };
        let namespaced = policies(namespaced_policies());
        let cluster = policies(cluster_policies());
        let namespaces_api: Api<serde_json::Value> = Api::dynamic(
            informer_client.clone(),
            ResourceRef::new("", "v1", "namespaces", "Namespace", false),
            None,
        );
        let namespaces = SharedInformer::new(
            "retention namespaces",
            MetadataOnly(namespaces_api),
            reflector.clone(),
        );
        let mut queue = WorkQueue::builder("retention");
        if let Some(provider) = self.queue_metrics {
            queue = queue.metrics(provider);
        }
        let queue = queue.build();
        let watches: WatchMap = Arc::default();
        let shared = Arc::new(Shared {
            context: WatchContext {
                informer_client,
                client: self.client.clone(),
                queue: queue.clone(),
                clock: Arc::clone(&self.clock),
                reflector,
            },
            client: self.client,
            watches: Arc::clone(&watches),
            states: Mutex::new(BTreeMap::new()),
            metrics: Arc::clone(&self.metrics),
            recorder: Arc::clone(&self.recorder),
            clock: Arc::clone(&self.clock),
            options: self.options.clone(),
            namespaced,
            cluster,
            namespaces,
            dirty: Notify::new(),
        });
        for informer in [&shared.namespaced, &shared.cluster] {
            informer.add_handler(replan_on_change(&shared));
        }
        shared.namespaces.add_handler(replan_on_change(&shared));
        let reconciler = RetentionReconciler::new(watches, self.clock, self.metrics, self.recorder)
            .with_dry_run(self.options.dry_run);
        let controller = Controller::new(CONTROLLER, queue, reconciler)
            .workers(self.options.workers)
            .informer(&shared.namespaces)
            .informer(&shared.namespaced)
            .informer(&shared.cluster);
        RetentionController { shared, controller }
    }
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
            informer_client: None,
            options,
            clock: Arc::new(SystemClock),
            metrics: Arc::new(RetentionMetrics::default()),
            recorder: Arc::new(NoopRecorder),
            queue_metrics: None,
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

    /// The workqueue (for `/debug/workqueue` and its depth).
    pub fn queue(&self) -> WorkQueue<WorkKey> {
        self.shared.context.queue.clone()
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
        let planner = tokio::spawn(planner(
            Arc::clone(&self.shared),
            self.synced(),
            tasks_stop.clone(),
        ));
        let writer = tokio::spawn(status_writer(
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

async fn wait_synced(caches: &[InformerSynced], stop: &CancellationToken) -> bool {
    for cache in caches {
        if cache.wait(stop).await.is_err() {
            return false;
        }
    }
    !stop.is_cancelled()
}

/// Plans again after every change (debounced), and periodically while a policy waits for a
/// resource to be served.
async fn planner(shared: Arc<Shared>, caches: Vec<InformerSynced>, stop: CancellationToken) {
    if !wait_synced(&caches, &stop).await {
        return;
    }
    let mut discovery: Option<(tokio::time::Instant, Arc<Discovery>)> = None;
    loop {
        let waiting_for_resources = shared
            .states
            .lock()
            .values()
            .any(|s| matches!(s, PolicyState::NotServed { .. }));
        let recheck = if waiting_for_resources {
            shared.options.rediscover_interval
        } else {
            Duration::from_secs(3600)
        };
        tokio::select! {
            _ = stop.cancelled() => return,
            _ = shared.dirty.notified() => {}
            _ = tokio::time::sleep(recheck) => {}
        }
        tokio::select! {
            _ = stop.cancelled() => return,
            _ = tokio::time::sleep(shared.options.replan_delay) => {}
        }
        let fresh_enough = discovery
            .as_ref()
            .is_some_and(|(at, _)| at.elapsed() < shared.options.rediscover_interval);
        if !fresh_enough {
            match Discovery::run(&shared.client).await {
                Ok(found) => discovery = Some((tokio::time::Instant::now(), Arc::new(found))),
                Err(e) => {
                    tracing::warn!(error = %e, "retention: discovery failed; planning with what was known")
                }
            }
        }
        let known = discovery.as_ref().map(|(_, d)| Arc::clone(d));
        apply(&shared, make_plan(&shared, known.as_deref())).await;
    }
}

fn make_plan(shared: &Shared, discovery: Option<&Discovery>) -> Plan {
    let namespaced = shared.namespaced.store().list();
    let cluster = shared.cluster.store().list();
    let mut inputs: Vec<PolicyInput<'_>> = Vec::new();
    inputs.extend(namespaced.iter().map(|o| PolicyInput {
        object: o,
        cluster: false,
    }));
    inputs.extend(cluster.iter().map(|o| PolicyInput {
        object: o,
        cluster: true,
    }));
    let namespaces: BTreeMap<String, BTreeMap<String, String>> = shared
        .namespaces
        .store()
        .list()
        .iter()
        .filter_map(|ns| Some((ns.metadata.name.clone()?, ns.metadata.labels.clone())))
        .collect();
    let served = |target: &Target| {
        discovery?.resources().iter().find_map(|found| {
            let r = &found.resource;
            (r.group == target.group && r.version == target.version && r.plural == target.resource)
                .then(|| r.clone())
        })
    };
    plan(&inputs, &namespaces, &served)
}

/// Makes the running watches match `plan`, and records the policies' states.
async fn apply(shared: &Shared, plan: Plan) {
    let mut stopping = Vec::new();
    {
        let mut watches = shared.watches.write();
        let gone: Vec<Target> = watches
            .iter()
            .filter(|(t, w)| {
                plan.watches
                    .get(*t)
                    .is_none_or(|p| p.fingerprint != w.fingerprint)
            })
            .map(|(t, _)| t.clone())
            .collect();
        for target in gone {
            stopping.extend(watches.remove(&target));
        }
        for (target, wanted) in &plan.watches {
            if !watches.contains_key(target) {
                tracing::info!(resource = %target, policies = wanted.rules.policies.len(), "retention: watching");
                let watch = ResourceWatch::start(target.clone(), wanted, &shared.context);
                watches.insert(target.clone(), watch);
            }
        }
    }
    for watch in stopping {
        watch.stop().await;
    }
    report_states(shared, plan.policies);
}

/// Records the policies' states, with a Warning Event for each newly invalid generation.
fn report_states(shared: &Shared, states: BTreeMap<PolicyId, PolicyState>) {
    let mut previous = shared.states.lock();
    let (mut ready, mut invalid, mut not_served) = (0, 0, 0);
    for (id, state) in &states {
        match state {
            PolicyState::Ready { .. } => ready += 1,
            PolicyState::Invalid { .. } => invalid += 1,
            PolicyState::NotServed { .. } => not_served += 1,
        }
        if previous.get(id) == Some(state) {
            continue;
        }
        match state {
            PolicyState::Invalid { errors, .. } => {
                let message = errors
                    .iter()
                    .map(ToString::to_string)
                    .collect::<Vec<_>>()
                    .join("; ");
                tracing::warn!(policy = %id, "invalid retention policy; it deletes nothing: {message}");
                record_policy_event(shared, id, EventType::Warning, "InvalidSpec", &message);
            }
            PolicyState::NotServed { missing, .. } => {
                let missing = missing
                    .iter()
                    .map(ToString::to_string)
                    .collect::<Vec<_>>()
                    .join(", ");
                tracing::warn!(policy = %id, "retention policy names resources the API server does not serve: {missing}");
                record_policy_event(
                    shared,
                    id,
                    EventType::Warning,
                    "ResourceNotServed",
                    &missing,
                );
            }
            PolicyState::Ready { .. } => tracing::info!(policy = %id, "retention policy ready"),
        }
    }
    shared.metrics.set_policies(ready, invalid, not_served);
    *previous = states;
}

fn record_policy_event(
    shared: &Shared,
    id: &PolicyId,
    kind: EventType,
    reason: &str,
    message: &str,
) {
    let resource = if id.namespace.is_some() {
        namespaced_policies()
    } else {
        cluster_policies()
    };
    let uid = policy_object(shared, id).and_then(|o| o.metadata.uid.clone());
    shared.recorder.record(EventRecord {
        regarding: ObjectReference {
            api_version: Some(resource.api_version()),
            kind: Some(resource.kind),
            namespace: id.namespace.clone(),
            name: Some(id.name.clone()),
            uid,
            ..ObjectReference::default()
        },
        event_type: kind,
        reason: reason.to_owned(),
        message: message.to_owned(),
    });
}

fn policy_object(shared: &Shared, id: &PolicyId) -> Option<Arc<RetentionPolicyObject>> {
    let key = ObjectKey::new(id.namespace.as_deref().unwrap_or(""), &id.name);
    match id.namespace {
        Some(_) => shared.namespaced.store().get(&key),
        None => shared.cluster.store().get(&key),
    }
}

/// Recounts every status interval and writes the statuses that changed.
async fn status_writer(shared: Arc<Shared>, caches: Vec<InformerSynced>, stop: CancellationToken) {
    if !wait_synced(&caches, &stop).await {
        return;
    }
    let mut written = Written::default();
    loop {
        tokio::select! {
            _ = stop.cancelled() => return,
            _ = tokio::time::sleep(shared.options.status_interval) => {}
        }
        write_statuses(&shared, &mut written).await;
    }
}

/// What the status writer remembers between rounds.
#[derive(Default)]
struct Written {
    /// The last status written per policy.
    statuses: HashMap<PolicyId, RetentionPolicyStatus>,
    /// `status.deleted` as found when this process first saw the policy: the count carries
    /// over restarts of kube-gc, and this process's deletions are added to it.
    deleted_before: HashMap<PolicyId, u64>,
}

async fn write_statuses(shared: &Shared, written: &mut Written) {
    let watches: Vec<_> = shared.watches.read().values().cloned().collect();
    let now = shared.clock.now();
    let counts = count(&watches, now);
    let states = shared.states.lock().clone();
    for (id, state) in states {
        let Some(object) = policy_object(shared, &id) else {
            continue;
        };
        let before = *written
            .deleted_before
            .entry(id.clone())
            .or_insert_with(|| object.status.as_ref().map_or(0, |s| s.deleted));
        let deleted = before + shared.metrics.deletions(&id.to_string());
        let previous = written.statuses.get(&id).or(object.status.as_ref());
        let status = status_for(
            &state,
            counts.get(&id).copied().unwrap_or_default(),
            deleted,
            previous,
            now,
        );
        if object.status.as_ref() == Some(&status) || written.statuses.get(&id) == Some(&status) {
            continue;
        }
        let resource = if id.namespace.is_some() {
            namespaced_policies()
        } else {
            cluster_policies()
        };
        let api: Api<RetentionPolicyObject> =
            Api::dynamic(shared.client.clone(), resource, id.namespace.as_deref());
        let patch = Patch::Merge(serde_json::json!({ "status": status }));
        match api
            .patch_status(&id.name, &PostParams::default(), &patch)
            .await
        {
            Ok(_) => {
                written.statuses.insert(id, status);
            }
            Err(e) => {
                shared.metrics.observe_api_error("patch");
                tracing::warn!(policy = %id, error = %e, "could not write the policy's status");
            }
        }
    }
}
