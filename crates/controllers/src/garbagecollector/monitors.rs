//! Monitors: one metadata subscription per deletable resource to the process's
//! [`Sources`] — a list and watch of its own, or a share of the one another controller already
//! reads the resource with — all feeding the graph builder's channel; [`SyncState`], which records which types are monitored and whether
//! their first complete list reached the graph; and [`MonitorCounters`], the running monitors'
//! reflector counters for the metrics endpoint.
//!
//! Contract:
//! - [`Monitors::sync`] makes the running set match the wanted set: new resources get a monitor,
//!   resources no longer served lose theirs — except those of groups whose discovery failed,
//!   which are kept (as upstream does), since their absence may be temporary.
//! - A monitor's events go to the graph channel as they arrive; it keeps no cache of its own
//!   (the graph is the cache), so each object is held once.
//! - A type counts as synced when the graph builder has applied its first list, not merely when
//!   the list arrived: a worker that sees "synced" can trust the graph for that type.
//! - [`Monitors::stop_all`] leaves every subscription (a source nobody else reads stops).

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use parking_lot::RwLock;
use tokio::sync::mpsc::UnboundedSender;

use super::builder::GraphEvent;
use super::identity::{GroupKind, Gvk};
use kube_gc_api::PartialObjectMetadata;
use kube_gc_client::ResourceRef;
use kube_gc_runtime::reflector::{Form, ReflectorEvent, ReflectorMetrics, ReflectorSink};
use kube_gc_runtime::sources::{SourceKey, Sources, Subscriber, Subscription};

/// Which types are monitored, and which of those the graph holds completely.
#[derive(Debug, Default)]
pub struct SyncState {
    monitored: RwLock<HashMap<GroupKind, bool>>,
}

impl SyncState {
    /// Whether a monitor watches this type.
    pub fn is_monitored(&self, group_kind: &GroupKind) -> bool {
        self.monitored.read().contains_key(group_kind)
    }

    /// Whether a monitor watches this type and its first list is in the graph.
    pub fn is_synced(&self, group_kind: &GroupKind) -> bool {
        self.monitored.read().get(group_kind) == Some(&true)
    }

    /// Whether every monitored type is synced.
    pub fn all_synced(&self) -> bool {
        self.monitored.read().values().all(|synced| *synced)
    }

    /// Monitored types, with whether each is synced.
    pub fn snapshot(&self) -> Vec<(GroupKind, bool)> {
        let mut all: Vec<_> = self
            .monitored
            .read()
            .iter()
            .map(|(k, v)| (k.clone(), *v))
            .collect();
        all.sort();
        all
    }

    pub(super) fn mark_synced(&self, group_kind: &GroupKind) {
        if let Some(synced) = self.monitored.write().get_mut(group_kind) {
            *synced = true;
        }
    }

    pub(super) fn started(&self, group_kind: GroupKind) {
        self.monitored.write().entry(group_kind).or_insert(false);
    }

    fn stopped(&self, group_kind: &GroupKind) {
        self.monitored.write().remove(group_kind);
    }
}

/// The reflector counters of the running monitors, by resource (`group/version/plural`, or
/// `version/plural` for the core group). An entry comes and goes with its monitor.
#[derive(Debug, Default)]
pub struct MonitorCounters {
    by_resource: RwLock<BTreeMap<String, Arc<ReflectorMetrics>>>,
}

impl MonitorCounters {
    /// The current monitors' counters, sorted by resource.
    pub fn snapshot(&self) -> Vec<(String, Arc<ReflectorMetrics>)> {
        self.by_resource
            .read()
            .iter()
            .map(|(resource, metrics)| (resource.clone(), Arc::clone(metrics)))
            .collect()
    }

    fn started(&self, resource: &ResourceRef, metrics: Arc<ReflectorMetrics>) {
        self.by_resource
            .write()
            .insert(resource.path_name(), metrics);
    }

    fn stopped(&self, resource: &ResourceRef) {
        self.by_resource.write().remove(&resource.path_name());
    }
}

/// The subscriber name of the monitors, in the sources' logs.
const MONITOR: &str = "garbagecollector";

/// Turns one resource's events into graph events.
struct MonitorSink {
    gvk: Arc<Gvk>,
    graph_changes: UnboundedSender<GraphEvent>,
}

impl ReflectorSink<PartialObjectMetadata> for MonitorSink {
    fn apply(&self, event: ReflectorEvent<PartialObjectMetadata>) {
        let gvk = Arc::clone(&self.gvk);
        let change = match event {
            ReflectorEvent::Replaced { objects, .. } => GraphEvent::Replaced { gvk, objects },
            ReflectorEvent::Added(object) | ReflectorEvent::Modified(object) => {
                GraphEvent::Upserted { gvk, object }
            }
            ReflectorEvent::Deleted(object) => GraphEvent::Deleted { gvk, object },
            ReflectorEvent::Bookmark { .. } => return,
        };
        // A closed channel means the builder stopped: the collector is shutting down.
        let _ = self.graph_changes.send(change);
    }
}

struct Monitor {
    group_kind: GroupKind,
    subscription: Subscription,
}

/// The running monitors, by resource.
pub struct Monitors {
    sources: Sources,
    graph_changes: UnboundedSender<GraphEvent>,
    sync: Arc<SyncState>,
    counters: Arc<MonitorCounters>,
    running: HashMap<ResourceRef, Monitor>,
}

impl Monitors {
    /// No monitors yet; each one started subscribes to `sources`.
    pub fn new(
        sources: Sources,
        graph_changes: UnboundedSender<GraphEvent>,
        sync: Arc<SyncState>,
        counters: Arc<MonitorCounters>,
    ) -> Monitors {
        Monitors {
            sources,
            graph_changes,
            sync,
            counters,
            running: HashMap::new(),
        }
    }

    /// The resources monitored now.
    pub fn resources(&self) -> Vec<ResourceRef> {
        let mut all: Vec<ResourceRef> = self.running.keys().cloned().collect();
        all.sort();
        all
    }

    /// Starts a monitor for each wanted resource not monitored yet and stops those no longer
    /// wanted, keeping those for which `keep` says discovery could not tell. Returns how many
    /// were started and stopped.
    pub async fn sync(
        &mut self,
        wanted: &[ResourceRef],
        keep: impl Fn(&ResourceRef) -> bool,
    ) -> (usize, usize) {
        let gone: Vec<ResourceRef> = self
            .running
            .keys()
            .filter(|r| !wanted.contains(r) && !keep(r))
            .cloned()
            .collect();
        for resource in &gone {
            if let Some(monitor) = self.running.remove(resource) {
                tracing::info!(resource = %resource.plural, group = %resource.group, "stopping garbage collector monitor");
                stop(monitor, &self.sync).await;
                self.counters.stopped(resource);
            }
        }
        let mut started = 0;
        for resource in wanted {
            if !self.running.contains_key(resource) {
                self.start(resource.clone());
                started += 1;
            }
        }
        (started, gone.len())
    }

    fn start(&mut self, resource: ResourceRef) {
        let gvk = Arc::new(Gvk {
            api_version: resource.api_version().into(),
            kind: resource.kind.as_str().into(),
        });
        let group_kind = gvk.group_kind();
        self.sync.started(group_kind.clone());
        let sink = Arc::new(MonitorSink {
            gvk,
            graph_changes: self.graph_changes.clone(),
        });
        let key = SourceKey::all(resource.clone());
        self.counters.started(&resource, self.sources.metrics(&key));
        let subscriber = Subscriber::<PartialObjectMetadata>::serde(MONITOR, Form::Metadata);
        let subscription = self.sources.subscribe(key, subscriber, sink);
        tracing::debug!(resource = %resource.plural, group = %resource.group, "started garbage collector monitor");
        self.running.insert(
            resource,
            Monitor {
                group_kind,
                subscription,
            },
        );
    }

    /// Stops every monitor and waits for their tasks.
    pub async fn stop_all(&mut self) {
        for (resource, monitor) in self.running.drain() {
            stop(monitor, &self.sync).await;
            self.counters.stopped(&resource);
        }
    }
}

async fn stop(monitor: Monitor, sync: &SyncState) {
    monitor.subscription.leave().await;
    sync.stopped(&monitor.group_kind);
}

/// Monitors dropped without [`Monitors::stop_all`] (their owner's future was cancelled) take
/// their counters off the metrics endpoint too; their subscriptions leave as they drop.
impl Drop for Monitors {
    fn drop(&mut self) {
        for resource in self.running.keys() {
            self.counters.stopped(resource);
        }
    }
}
