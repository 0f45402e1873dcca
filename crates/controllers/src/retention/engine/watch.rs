//! [`ResourceWatch`]: one watched resource — an informer whose cache holds [`Assessment`]s,
//! computed by the item decoder while each object is decoded, a [`GroupIndex`], and the
//! handlers that turn assessments into work: a key now, a key at the expiry time, or a group
//! to re-rank.
//!
//! Contract:
//! - A watch is built for one [`WatchPlan`] and never changes its rules: when the plan's
//!   fingerprint changes the engine stops it and starts a new one, which lists again and
//!   assesses every object under the new rules (the objects themselves were never kept).
//! - The handlers decide at once: an object to keep is not queued at all, one waiting for its
//!   TTL is queued for its expiry time (`add_after`), an expired or unreadable one now.
//! - [`ResourceWatch::stop`] cancels the informer and waits for its task. A watch built
//!   [`unstarted`](ResourceWatch::unstarted) hands its informer to whoever runs it (a TTL
//!   controller's [`Controller`](kube_gc_runtime::controller::Controller)), which then owns it.
//! - A watch lists and watches one namespace when its context says so (a TTL controller's
//!   `--namespace`), every namespace otherwise.

use std::sync::Arc;

use parking_lot::Mutex;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

use crate::retention::assessment::{assess, gone, needed, Assessment, ResourcePolicies, Standing};
use crate::retention::need::Need;
use crate::retention::policy::Target;
use crate::retention::verdict::{decide, Verdict};
use crate::retention::wire::decode_needed;
use kube_gc_client::{Api, Client, DecodeItem, ItemDecoder, ResourceRef};
use kube_gc_core::clock::SharedClock;
use kube_gc_runtime::cache::{Cacheable, Store};
use kube_gc_runtime::informer::{HandlerFns, InformerSynced, SharedInformer};
use kube_gc_runtime::reflector::{ReflectorMetrics, WatchErrorHandler};
use kube_gc_runtime::sources::{SourceKey, Sources, Subscriber};
use kube_gc_runtime::workqueue::WorkQueue;

use super::groups::{GroupIndex, GroupKey};
use super::plan::WatchPlan;
use super::WorkKey;

/// One watched resource.
pub struct ResourceWatch {
    /// What is watched.
    pub target: Arc<Target>,
    /// As discovery describes it.
    pub resource: ResourceRef,
    /// The rules its assessments were made with.
    pub rules: Arc<ResourcePolicies>,
    /// The plan's fingerprint it was started for.
    pub fingerprint: String,
    /// The assessments.
    pub store: Arc<Store<Assessment>>,
    /// The history groups.
    pub groups: Arc<GroupIndex>,
    /// Reads and deletes through the controller's client.
    pub api: Api<serde_json::Value>,
    synced: Option<InformerSynced>,
    metrics: Option<Arc<ReflectorMetrics>>,
    stop: CancellationToken,
    task: Mutex<Option<JoinHandle<()>>>,
}

/// What a watch is started with.
pub struct WatchContext {
    /// Whose watch it is (`retention`, `ttl-after-finished`): its informer's name in logs.
    pub controller: &'static str,
    /// Where lists and watches come from: one per resource, shared with the other
    /// controllers reading it.
    pub sources: Sources,
    /// Reads and deletes.
    pub client: Client,
    /// Where work goes.
    pub queue: WorkQueue<WorkKey>,
    /// Wall time, for assessing.
    pub clock: SharedClock,
    /// Watch only this namespace (a TTL controller's `--namespace`); `None` for all.
    pub namespace: Option<String>,
    /// Told of every failed list and watch request of the watches, with the resource watched
    /// (the retention controller looks at discovery again on a 404, and stops watching what it
    /// is forbidden to read on a 403); `None`: the reflectors only log and retry.
    pub on_error: Option<TargetErrorHandler>,
}

/// A handler of a watch's failed list and watch requests, told which resource failed.
pub type TargetErrorHandler = Arc<dyn Fn(&Target, &kube_gc_client::Error) + Send + Sync>;

impl ResourceWatch {
    /// Starts watching `target` as `plan` says; the watch owns its informer's task.
    ///
    /// # Panics
    ///
    /// Outside a Tokio runtime.
    pub fn start(target: Target, plan: &WatchPlan, context: &WatchContext) -> Arc<ResourceWatch> {
        let (watch, informer) = Self::unstarted(target, plan, context);
        let task = tokio::spawn(informer.run(watch.stop.clone()));
        *watch.task.lock() = Some(task);
        watch
    }

    /// The watch of `target`, and its informer, not running: whoever runs the informer owns
    /// it (a TTL controller hands it to its [`Controller`](kube_gc_runtime::controller::Controller),
    /// which waits for its cache and stops it after the workers drain). [`stop`](Self::stop)
    /// then has nothing to stop.
    ///
    /// # Panics
    ///
    /// Outside a Tokio runtime (registering the handlers spawns their task).
    pub fn unstarted(
        target: Target,
        plan: &WatchPlan,
        context: &WatchContext,
    ) -> (Arc<ResourceWatch>, SharedInformer<Assessment>) {
        let target = Arc::new(target);
        let rules = Arc::clone(&plan.rules);
        let clock = Arc::clone(&context.clock);
        let decoder = assessing(Arc::clone(&rules), move || clock.now());
        let namespace = context.namespace.as_deref();
        let key = SourceKey {
            resource: plan.resource.clone(),
            namespace: namespace.map(str::to_owned),
        };
        let on_error = context.on_error.as_ref().map(|handler| {
            let (handler, target) = (Arc::clone(handler), Arc::clone(&target));
            WatchErrorHandler::new(move |error| handler(&target, error))
        });
        let subscriber = Subscriber {
            on_error,
            ..Subscriber::objects(context.controller, decoder)
        };
        let informer =
            SharedInformer::builder(format!("{} {target}", context.controller), Store::new())
                .source(&context.sources, key, subscriber)
                .build();
        let groups = Arc::new(GroupIndex::default());
        informer.add_handler(handlers(&target, &groups, context));
        let watch = Arc::new(ResourceWatch {
            api: Api::dynamic(context.client.clone(), plan.resource.clone(), namespace),
            resource: plan.resource.clone(),
            fingerprint: plan.fingerprint.clone(),
            store: Arc::clone(informer.store()),
            synced: Some(informer.synced()),
            metrics: informer.reflector_metrics().cloned(),
            target,
            rules,
            groups,
            stop: CancellationToken::new(),
            task: Mutex::new(None),
        });
        (watch, informer)
    }

    /// A watch with no informer behind it: an empty store the caller fills (tests; tools that
    /// judge objects they listed themselves). It never syncs and has nothing to stop.
    pub fn detached(target: Target, plan: &WatchPlan, client: Client) -> Arc<ResourceWatch> {
        Arc::new(ResourceWatch {
            target: Arc::new(target),
            resource: plan.resource.clone(),
            rules: Arc::clone(&plan.rules),
            fingerprint: plan.fingerprint.clone(),
            store: Arc::new(Store::new()),
            groups: Arc::new(GroupIndex::default()),
            api: Api::dynamic(client, plan.resource.clone(), None),
            synced: None,
            metrics: None,
            stop: CancellationToken::new(),
            task: Mutex::new(None),
        })
    }

    /// Whether the first list is cached.
    pub fn has_synced(&self) -> bool {
        self.synced.as_ref().is_some_and(InformerSynced::has_synced)
    }

    /// A handle to wait for the first list with (`None` for a watch that never lists).
    pub fn synced(&self) -> Option<InformerSynced> {
        self.synced.clone()
    }

    /// The informer's reflector counters.
    pub fn reflector_metrics(&self) -> Option<&Arc<ReflectorMetrics>> {
        self.metrics.as_ref()
    }

    /// Stops the informer and waits for it.
    pub async fn stop(&self) {
        self.stop.cancel();
        let task = self.task.lock().take();
        if let Some(task) = task {
            let _ = task.await;
        }
    }
}

/// Decodes each object straight to its [`Assessment`] under `rules`, assessed at `now()`: only
/// what the rules read is built, assessed, and dropped; the assessment is kept.
pub fn assessing(
    rules: Arc<ResourcePolicies>,
    now: impl Fn() -> chrono::DateTime<chrono::Utc> + Send + Sync + 'static,
) -> ItemDecoder<Assessment> {
    let need = needed(&rules.policies);
    Arc::new(Assessing { rules, need, now })
}

/// The item decoder [`assessing`] makes.
struct Assessing<F> {
    rules: Arc<ResourcePolicies>,
    /// What the rules and the assessment read of an object.
    need: Need,
    now: F,
}

impl<F> DecodeItem<Assessment> for Assessing<F>
where
    F: Fn() -> chrono::DateTime<chrono::Utc> + Send + Sync + 'static,
{
    fn decode(&self, bytes: &[u8]) -> Result<Assessment, serde_json::Error> {
        let object = decode_needed(bytes, &self.need)?;
        Ok(assess(&object, &self.rules, (self.now)()))
    }

    /// A deleted object is only forgotten (the cache entry, its group): its identity is all
    /// the informer and the handlers read of it.
    fn decode_deleted(&self, bytes: &[u8]) -> Result<Assessment, serde_json::Error> {
        gone(bytes)
    }

    /// What the rules read: with the TTL presets, a Job's metadata, its TTL and its
    /// conditions — what a protobuf answer can carry alone, skipping the pod template.
    fn reads(&self) -> Option<kube_gc_client::protobuf::Selection> {
        Some(self.need.selection())
    }
}

impl std::fmt::Debug for ResourceWatch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ResourceWatch")
            .field("target", &self.target)
            .field("cached", &self.store.len())
            .field("synced", &self.has_synced())
            .finish_non_exhaustive()
    }
}

fn handlers(
    target: &Arc<Target>,
    groups: &Arc<GroupIndex>,
    context: &WatchContext,
) -> HandlerFns<Assessment> {
    let route = Router {
        target: Arc::clone(target),
        groups: Arc::clone(groups),
        queue: context.queue.clone(),
        clock: Arc::clone(&context.clock),
    };
    let (on_add, on_update, on_delete) = (route.clone(), route.clone(), route);
    HandlerFns::new()
        .on_add(move |assessment: Arc<Assessment>| on_add.route(&assessment))
        .on_update(move |_old, assessment: Arc<Assessment>| on_update.route(&assessment))
        .on_delete(move |deleted| {
            on_delete.groups.remove(&deleted.object().cache_key());
        })
}

/// Turns an assessment into work.
#[derive(Clone)]
struct Router {
    target: Arc<Target>,
    groups: Arc<GroupIndex>,
    queue: WorkQueue<WorkKey>,
    clock: SharedClock,
}

impl Router {
    fn route(&self, assessment: &Assessment) {
        let key = assessment.cache_key();
        let object = WorkKey::Object {
            target: Arc::clone(&self.target),
            key: key.clone(),
        };
        let governed = match &assessment.standing {
            // Gone comes only with a DELETED event, which the handlers forget, never route.
            Standing::Ungoverned | Standing::Gone => {
                self.groups.place(&key, None);
                return;
            }
            Standing::Problem(_) => {
                self.groups.place(&key, None);
                self.queue.add(object);
                return;
            }
            Standing::Governed(governed) => governed,
        };
        match decide(&governed.facts, governed.ttl, self.clock.now()) {
            Ok(Verdict::Keep(_)) => {}
            Ok(Verdict::Wait { remaining, .. }) => self.queue.add_after(object, remaining),
            Ok(Verdict::Expired { .. }) | Err(_) => self.queue.add(object),
        }
        let group = governed
            .group
            .as_ref()
            .filter(|_| !governed.facts.being_deleted);
        let group = group.map(|value| GroupKey {
            policy: governed.policy,
            namespace: key.namespace().unwrap_or_default().into(),
            value: value.clone(),
        });
        self.groups.place(&key, group.clone());
        if let Some(group) = group {
            self.queue.add(WorkKey::Group {
                target: Arc::clone(&self.target),
                group: Box::new(group),
            });
        }
    }
}
