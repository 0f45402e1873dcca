//! [`SharedInformer`]: one cache of one resource, kept current by the events a reflector
//! reports, and any number of [`EventHandler`]s told about every change (client-go's
//! `sharedIndexInformer` and `sharedProcessor`).
//!
//! Contract:
//! - The informer is the reflector's [`ReflectorSink`]: each event is applied to the cache
//!   first, then the resulting notification is queued to every handler, so a handler that looks
//!   at the cache sees the change it is told about (or a later one).
//! - Cache write and dispatch happen under one lock (the *dispatch lock*), which registering a
//!   handler and a resync also take. That is what makes every handler see each object's history
//!   exactly once and in order: a handler registered late gets the cache's contents as adds and
//!   then exactly the changes applied after them; a resync cannot slip between a change and its
//!   notification. The lock is held only for synchronous work (cache write, queueing to
//!   unbounded buffers), never across an `.await`, and handlers never take it.
//! - Lock order: the dispatch lock, then one cache lock at a time (the cache's own rule).
//! - The reflector (if the informer was built with one, or its subscription to a shared
//!   [`Sources`] source) and the resync timer run inside
//!   [`SharedInformer::run`]'s future; the handler tasks are spawned by `add_handler`. All of
//!   them stop when `run`'s token is cancelled, and `run` returns only after they have; if `run`
//!   is never called or dropped half-way and the informer is dropped, the handler tasks are
//!   aborted.

use std::sync::Arc;
use std::time::Duration;

use futures_util::future::BoxFuture;
use parking_lot::Mutex;
use tokio::sync::watch;
use tokio::task::JoinHandle;
use tokio::time::MissedTickBehavior;
use tokio_util::sync::CancellationToken;

use crate::cache::{Cacheable, Deleted, ReplaceDiff, Store};
use crate::reflector::{
    ListWatch, Reflector, ReflectorConfig, ReflectorEvent, ReflectorMetrics, ReflectorSink,
};
use crate::sources::{Hold, SourceKey, Sources, Subscriber};

use super::handler::{EventHandler, Notification};
use super::listener::{spawn_listener, HandlerRegistration, Listener};
use super::synced::InformerSynced;

/// A cache of one resource plus the handlers told about its changes; shared by cloning.
pub struct SharedInformer<T> {
    inner: Arc<Inner<T>>,
}

/// Runs the informer's reflector, given the informer as its sink: the reflector's type erased,
/// so that the informer is generic over what it caches only, not over where it lists from.
type RunReflector<T> =
    Box<dyn FnOnce(Arc<SharedInformer<T>>, CancellationToken) -> BoxFuture<'static, ()> + Send>;

struct Inner<T> {
    name: String,
    store: Arc<Store<T>>,
    resync_period: Option<Duration>,
    /// Taken by the first `run`. A function rather than a ready future: a future holding the
    /// informer as its sink, stored in the informer, would keep it alive forever.
    reflector: Mutex<Option<RunReflector<T>>>,
    reflector_metrics: Option<Arc<ReflectorMetrics>>,
    /// The dispatch lock: the handlers' buffers, in registration order.
    listeners: Mutex<Vec<Listener<T>>>,
    /// The handlers' tasks, joined when the informer stops.
    listener_tasks: Mutex<Vec<JoinHandle<()>>>,
    /// Stops the handler tasks; cancelled when `run` ends or the informer is dropped.
    stop: CancellationToken,
    /// `true` once the first list is in the cache.
    synced: watch::Sender<bool>,
}

/// Configures a [`SharedInformer`]; start with [`SharedInformer::builder`].
pub struct SharedInformerBuilder<T> {
    name: String,
    store: Store<T>,
    resync_period: Option<Duration>,
    reflector: Option<(RunReflector<T>, Arc<ReflectorMetrics>)>,
}

impl<T> SharedInformerBuilder<T>
where
    T: Cacheable + Send + Sync + 'static,
{
    /// Keeps the cache current with `reflector`, which [`SharedInformer::run`] runs. Without
    /// one, the informer only changes when something calls its [`ReflectorSink::apply`] (tests
    /// do, to feed it by hand).
    pub fn reflector<L>(mut self, reflector: Reflector<L>) -> Self
    where
        L: ListWatch<Object = T>,
    {
        let metrics = reflector.metrics();
        let run: RunReflector<T> = Box::new(move |sink, stop| Box::pin(reflector.run(sink, stop)));
        self.reflector = Some((run, metrics));
        self
    }

    /// Keeps the cache current with `subscriber`'s projections of `key`'s source in `sources`
    /// — one list and watch shared with every other subscriber of that resource — which
    /// [`SharedInformer::run`] subscribes to, and leaves when it stops.
    pub fn source(self, sources: &Sources, key: SourceKey, subscriber: Subscriber<T>) -> Self {
        self.source_holding(sources, key, subscriber, None)
    }

    /// As [`source`](Self::source), keeping `hold` (taken from `sources` while the controller
    /// was built) until this informer has subscribed: the sources do not list before it has
    /// joined, so their first list serves it too instead of being made again for it.
    pub fn source_holding(
        mut self,
        sources: &Sources,
        key: SourceKey,
        subscriber: Subscriber<T>,
        hold: Option<Hold>,
    ) -> Self {
        let metrics = sources.metrics(&key);
        let sources = sources.clone();
        let run: RunReflector<T> = Box::new(move |sink, stop| {
            Box::pin(async move {
                let subscription = sources.subscribe(key, subscriber, sink);
                drop(hold);
                stop.cancelled().await;
                subscription.leave().await;
            })
        });
        self.reflector = Some((run, metrics));
        self
    }

    /// Every `period`, re-delivers each cached object to every handler as an update with the
    /// same old and new state (client-go's resync), so a controller periodically re-examines
    /// everything even if no event arrives. Off by default.
    pub fn resync_every(mut self, period: Duration) -> Self {
        self.resync_period = Some(period).filter(|period| !period.is_zero());
        self
    }

    /// The informer, with no handlers and an empty, unsynced cache.
    pub fn build(self) -> SharedInformer<T> {
        let (reflector, reflector_metrics) = self.reflector.unzip();
        SharedInformer {
            inner: Arc::new(Inner {
                name: self.name,
                store: Arc::new(self.store),
                resync_period: self.resync_period,
                reflector: Mutex::new(reflector),
                reflector_metrics,
                listeners: Mutex::new(Vec::new()),
                listener_tasks: Mutex::new(Vec::new()),
                stop: CancellationToken::new(),
                synced: watch::Sender::new(false),
            }),
        }
    }
}

impl<T> SharedInformer<T>
where
    T: Cacheable + Send + Sync + 'static,
{
    /// An informer called `name` (its resource, say `jobs.batch`, for logs) that lists and
    /// watches `source` (an [`Api`](kube_gc_client::Api), usually) into a default [`Store`],
    /// with no resync. Use [`builder`](Self::builder) for indexes, a transform or a resync.
    pub fn new<L>(name: impl Into<String>, source: L, config: ReflectorConfig) -> Self
    where
        L: ListWatch<Object = T>,
    {
        Self::builder(name, Store::new())
            .reflector(Reflector::new(source, config))
            .build()
    }

    /// Starts configuring an informer called `name` (its resource, say `jobs.batch`, for logs)
    /// that keeps its objects in `store`.
    pub fn builder(name: impl Into<String>, store: Store<T>) -> SharedInformerBuilder<T> {
        SharedInformerBuilder {
            name: name.into(),
            store,
            resync_period: None,
            reflector: None,
        }
    }

    /// The informer's name.
    pub fn name(&self) -> &str {
        &self.inner.name
    }

    /// The cache, for workers to read. Only the informer writes to it.
    pub fn store(&self) -> &Arc<Store<T>> {
        &self.inner.store
    }

    /// Whether the initial list is in the cache.
    pub fn has_synced(&self) -> bool {
        *self.inner.synced.borrow()
    }

    /// The reflector's counters (lists, watches, relists, errors), if it has one.
    pub fn reflector_metrics(&self) -> Option<&Arc<ReflectorMetrics>> {
        self.inner.reflector_metrics.as_ref()
    }

    /// A handle to wait for this informer's initial list with, whatever `T` is.
    pub fn synced(&self) -> InformerSynced {
        InformerSynced::new(self.inner.name.clone(), self.inner.synced.subscribe())
    }

    /// Registers `handler` and starts its task. It first receives every object already cached
    /// as an add, then every change from there on.
    ///
    /// # Panics
    ///
    /// Outside a Tokio runtime (it spawns the handler's task).
    pub fn add_handler<H: EventHandler<T>>(&self, handler: H) -> HandlerRegistration {
        let inner = &self.inner;
        let name = format!("{} handler {}", inner.name, std::any::type_name::<H>());
        let (listener, registration, task) = spawn_listener(name, handler, inner.stop.clone());
        {
            let mut listeners = inner.listeners.lock();
            for object in inner.store.list() {
                listener.send(Notification::Added(object));
            }
            // The informer's sync flag and its handlers' sync marks change together under the
            // dispatch lock: a handler joining now gets its mark either here or with the
            // first list.
            if *inner.synced.borrow() {
                listener.mark_synced();
            }
            listeners.push(listener);
        }
        inner.listener_tasks.lock().push(task);
        registration
    }

    /// Runs the reflector and the resync timer until `shutdown` is cancelled, then stops every
    /// handler task (each finishes the notification it is handling; backlogs are dropped) and
    /// returns once they have all ended.
    ///
    /// Call it once: an informer runs once. (The reflector is handed to the first call only,
    /// and once stopped, handler tasks stay stopped.)
    pub async fn run(self, shutdown: CancellationToken) {
        // Dropping this future half-way stops the handler tasks too.
        let _stop_on_drop = self.inner.stop.clone().drop_guard();
        let reflector = self.inner.reflector.lock().take();
        let reflect = async {
            match reflector {
                Some(run) => run(Arc::new(self.clone()), shutdown.clone()).await,
                None => std::future::pending().await,
            }
        };
        tokio::select! {
            () = shutdown.cancelled() => {}
            () = reflect => {}
            () = self.resync_forever() => {}
        }
        self.stop().await;
    }

    /// Re-delivers every cached object as an update each resync period; never returns (waits
    /// forever if resync is off).
    async fn resync_forever(&self) {
        let Some(period) = self.inner.resync_period else {
            return std::future::pending().await;
        };
        let mut ticks = tokio::time::interval_at(tokio::time::Instant::now() + period, period);
        // A late tick (a busy runtime) shifts the schedule rather than firing twice in a row.
        ticks.set_missed_tick_behavior(MissedTickBehavior::Delay);
        loop {
            ticks.tick().await;
            self.resync();
        }
    }

    /// Queues every cached object to every handler as an unchanged update.
    fn resync(&self) {
        let inner = &self.inner;
        let mut listeners = inner.listeners.lock();
        let objects = inner.store.list();
        tracing::debug!(informer = %inner.name, objects = objects.len(), "resync");
        for object in objects {
            dispatch(
                &mut listeners,
                Notification::Updated {
                    old: Arc::clone(&object),
                    new: object,
                },
            );
        }
    }

    /// Stops the handler tasks and waits for them to end.
    async fn stop(&self) {
        self.inner.stop.cancel();
        let tasks = std::mem::take(&mut *self.inner.listener_tasks.lock());
        for task in tasks {
            if let Err(error) = task.await {
                // Handler panics are caught in the task, so this is an abort or a bug.
                tracing::error!(informer = %self.inner.name, %error, "handler task failed");
            }
        }
    }
}

impl<T> ReflectorSink<T> for SharedInformer<T>
where
    T: Cacheable + Send + Sync + 'static,
{
    fn apply(&self, event: ReflectorEvent<T>) {
        let inner = &self.inner;
        let store = &inner.store;
        let mut listeners = inner.listeners.lock();
        match event {
            ReflectorEvent::Replaced {
                objects,
                resource_version,
            } => {
                let diff = store.replace(objects, &resource_version);
                dispatch_diff(&mut listeners, diff);
                // After the diff is queued, so that whoever learns of the sync finds the
                // initial adds already in every handler's buffer.
                let first_list = inner
                    .synced
                    .send_if_modified(|synced| !std::mem::replace(synced, true));
                if first_list {
                    for listener in listeners.iter() {
                        listener.mark_synced();
                    }
                }
            }
            ReflectorEvent::Added(object) | ReflectorEvent::Modified(object) => {
                // The cache, not the event type, decides add or update: an ADDED event for a
                // key the cache holds (a relist raced the watch) is an update, as in client-go.
                let applied = store.apply_added(object);
                let notification = match applied.previous {
                    None => Notification::Added(applied.object),
                    Some(old) => Notification::Updated {
                        old,
                        new: applied.object,
                    },
                };
                dispatch(&mut listeners, notification);
            }
            ReflectorEvent::Deleted(object) => {
                // Delivered even if the cache never held the key, as client-go does: the
                // handler may know the object from elsewhere.
                let applied = store.apply_deleted(object);
                dispatch(
                    &mut listeners,
                    Notification::Deleted(Deleted::Observed(applied.object)),
                );
            }
            ReflectorEvent::Bookmark { resource_version } => {
                store.apply_bookmark(&resource_version);
            }
        }
    }
}

/// Queues a relist's changes: adds, then updates, then deletes whose final state is unknown.
fn dispatch_diff<T>(listeners: &mut Vec<Listener<T>>, diff: ReplaceDiff<T>) {
    for object in diff.added {
        dispatch(listeners, Notification::Added(object));
    }
    for updated in diff.updated {
        dispatch(
            listeners,
            Notification::Updated {
                old: updated.old,
                new: updated.new,
            },
        );
    }
    for tombstone in diff.deleted {
        dispatch(
            listeners,
            Notification::Deleted(Deleted::FinalStateUnknown(tombstone)),
        );
    }
}

/// Queues `notification` to every handler, forgetting handlers whose task has ended.
fn dispatch<T>(listeners: &mut Vec<Listener<T>>, notification: Notification<T>) {
    listeners.retain(|listener| listener.send(notification.clone()));
}

impl<T> Clone for SharedInformer<T> {
    fn clone(&self) -> Self {
        SharedInformer {
            inner: Arc::clone(&self.inner),
        }
    }
}

impl<T: Cacheable> std::fmt::Debug for SharedInformer<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SharedInformer")
            .field("name", &self.inner.name)
            .field("store", &self.inner.store)
            .field("handlers", &self.inner.listeners.lock().len())
            .field("resync_period", &self.inner.resync_period)
            .finish()
    }
}

impl<T> Drop for Inner<T> {
    /// The last handle is gone without `run` having stopped the tasks: abort them rather than
    /// leave them waiting on buffers nobody will fill.
    fn drop(&mut self) {
        self.stop.cancel();
        for task in self.listener_tasks.get_mut().drain(..) {
            task.abort();
        }
    }
}
