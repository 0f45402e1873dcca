//! Helpers shared by the `tests/reflector_*.rs` suites: a sink that keeps what a cache would
//! keep (and a log of every event), a way to wait for it without sleeping, and a [`ListWatch`]
//! wrapper that notes when each request was made on tokio's (paused) clock.
#![allow(dead_code)] // Each test crate uses a different subset.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use kube_gc::client::{Error, ListParams, WatchParams};
use kube_gc::runtime::cache::Cacheable;
use kube_gc::runtime::reflector::{
    EventStream, ListWatch, Listed, Reflector, ReflectorConfig, ReflectorEvent, ReflectorSink,
};
use parking_lot::Mutex;
use tokio::sync::watch;
use tokio::task::JoinHandle;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

/// One event as the sink saw it, without the object's body.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Seen {
    /// A complete list: the keys, in list order, and the list's version.
    Replaced {
        keys: Vec<String>,
        resource_version: String,
    },
    /// ADDED `key` at `resource_version`.
    Added(String, String),
    /// MODIFIED.
    Modified(String, String),
    /// DELETED.
    Deleted(String, String),
    /// A bookmark.
    Bookmark(String),
}

impl Seen {
    /// The resourceVersion of a watch event about an object.
    pub fn object_version(&self) -> Option<u64> {
        match self {
            Seen::Added(_, rv) | Seen::Modified(_, rv) | Seen::Deleted(_, rv) => rv.parse().ok(),
            _ => None,
        }
    }

    /// The form fixtures state expectations in: `replaced@RV key,key`, `added KEY@RV`, …,
    /// `bookmark@RV`.
    pub fn summary(&self) -> String {
        match self {
            Seen::Replaced {
                keys,
                resource_version,
            } => format!("replaced@{resource_version} {}", keys.join(",")),
            Seen::Added(key, rv) => format!("added {key}@{rv}"),
            Seen::Modified(key, rv) => format!("modified {key}@{rv}"),
            Seen::Deleted(key, rv) => format!("deleted {key}@{rv}"),
            Seen::Bookmark(rv) => format!("bookmark@{rv}"),
        }
    }
}

/// What a cache built from the events holds: key → object.
pub struct Model<T> {
    /// The objects, by key.
    pub objects: BTreeMap<String, T>,
    /// Every event, in order.
    pub log: Vec<Seen>,
    /// The last resourceVersion an event or list carried.
    pub resource_version: String,
}

impl<T: Cacheable> Model<T> {
    /// key → resourceVersion of every object held.
    pub fn versions(&self) -> BTreeMap<String, String> {
        self.objects
            .iter()
            .map(|(k, o)| (k.clone(), o.resource_version().to_owned()))
            .collect()
    }

    /// The last resourceVersion as a number (0 before any).
    pub fn version(&self) -> u64 {
        self.resource_version.parse().unwrap_or(0)
    }
}

/// A sink that applies events to a [`Model`] and lets a test wait for a condition on it.
pub struct ModelSink<T> {
    model: Mutex<Model<T>>,
    changes: watch::Sender<u64>,
}

impl<T> Default for ModelSink<T> {
    fn default() -> Self {
        ModelSink {
            model: Mutex::new(Model {
                objects: BTreeMap::new(),
                log: Vec::new(),
                resource_version: String::new(),
            }),
            changes: watch::channel(0).0,
        }
    }
}

impl<T: Cacheable + Send + Sync + 'static> ReflectorSink<T> for ModelSink<T> {
    fn apply(&self, event: ReflectorEvent<T>) {
        let mut model = self.model.lock();
        let model = &mut *model;
        let seen = match event {
            ReflectorEvent::Replaced {
                objects,
                resource_version,
            } => {
                let keys = objects.iter().map(|o| o.cache_key().to_string()).collect();
                model.objects = objects
                    .into_iter()
                    .map(|o| (o.cache_key().to_string(), o))
                    .collect();
                model.resource_version.clone_from(&resource_version);
                Seen::Replaced {
                    keys,
                    resource_version,
                }
            }
            ReflectorEvent::Added(o) => {
                let (key, rv) = identify(&o);
                model.objects.insert(key.clone(), o);
                model.resource_version.clone_from(&rv);
                Seen::Added(key, rv)
            }
            ReflectorEvent::Modified(o) => {
                let (key, rv) = identify(&o);
                model.objects.insert(key.clone(), o);
                model.resource_version.clone_from(&rv);
                Seen::Modified(key, rv)
            }
            ReflectorEvent::Deleted(o) => {
                let (key, rv) = identify(&o);
                model.objects.remove(&key);
                model.resource_version.clone_from(&rv);
                Seen::Deleted(key, rv)
            }
            ReflectorEvent::Bookmark { resource_version } => {
                model.resource_version.clone_from(&resource_version);
                Seen::Bookmark(resource_version)
            }
        };
        model.log.push(seen);
        self.changes.send_modify(|n| *n += 1);
    }
}

fn identify<T: Cacheable>(object: &T) -> (String, String) {
    (
        object.cache_key().to_string(),
        object.resource_version().to_owned(),
    )
}

impl<T: Cacheable> ModelSink<T> {
    /// Reads the model.
    pub fn read<R>(&self, f: impl FnOnce(&Model<T>) -> R) -> R {
        f(&self.model.lock())
    }

    /// The event log so far.
    pub fn log(&self) -> Vec<Seen> {
        self.read(|m| m.log.clone())
    }

    /// Waits (on tokio's clock, so a paused clock runs ahead) until `condition` holds; panics
    /// with the event log after an hour of virtual time.
    pub async fn wait_until(&self, what: &str, condition: impl Fn(&Model<T>) -> bool) {
        let mut changes = self.changes.subscribe();
        let wait = async {
            loop {
                if self.read(&condition) {
                    return;
                }
                if changes.changed().await.is_err() {
                    return;
                }
            }
        };
        if tokio::time::timeout(Duration::from_secs(3600), wait)
            .await
            .is_err()
        {
            let log = self.log();
            let tail = &log[log.len().saturating_sub(20)..];
            panic!("timed out waiting for {what}; last events: {tail:?}");
        }
    }
}

/// A running reflector, stopped (and joined) by [`Running::stop`].
pub struct Running<T> {
    /// What it delivered.
    pub sink: Arc<ModelSink<T>>,
    /// Its counters.
    pub metrics: Arc<kube_gc::runtime::reflector::ReflectorMetrics>,
    cancel: CancellationToken,
    task: JoinHandle<()>,
}

/// Starts a reflector over `source` on its own task.
pub fn spawn<L>(source: L, config: ReflectorConfig) -> Running<L::Object>
where
    L: ListWatch,
    L::Object: Cacheable + Send + Sync,
{
    let reflector = Reflector::new(source, config);
    let metrics = reflector.metrics();
    let sink = Arc::new(ModelSink::default());
    let cancel = CancellationToken::new();
    let task = tokio::spawn(reflector.run(Arc::clone(&sink), cancel.clone()));
    Running {
        sink,
        metrics,
        cancel,
        task,
    }
}

impl<T> Running<T> {
    /// Cancels the reflector and waits for its task.
    pub async fn stop(self) {
        self.cancel.cancel();
        if let Err(e) = self.task.await {
            panic!("the reflector task failed: {e}");
        }
    }
}

/// The config tests start from: a fixed seed, so requests and delays are reproducible.
pub fn config() -> ReflectorConfig {
    ReflectorConfig {
        seed: Some(42),
        ..ReflectorConfig::default()
    }
}

/// Which request a [`Timed`] source saw.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Request {
    /// A (paged) list.
    List(ListParams),
    /// A watch.
    Watch(WatchParams),
}

/// Wraps a [`ListWatch`], noting each request and when (tokio time) it was made.
pub struct Timed<L> {
    inner: L,
    /// The requests so far.
    pub requests: Arc<Mutex<Vec<(Instant, Request)>>>,
    made: watch::Sender<usize>,
}

impl<L> Timed<L> {
    /// Wraps `inner`.
    pub fn new(inner: L) -> Self {
        Timed {
            inner,
            requests: Arc::default(),
            made: watch::channel(0).0,
        }
    }

    /// A handle to wait on the number of requests made.
    pub fn counter(&self) -> watch::Receiver<usize> {
        self.made.subscribe()
    }

    fn note(&self, request: Request) {
        self.requests.lock().push((Instant::now(), request));
        self.made.send_modify(|n| *n += 1);
    }
}

/// Waits until `counter` reaches `n`.
pub async fn wait_for_requests(counter: &mut watch::Receiver<usize>, n: usize) {
    let reached = counter.wait_for(|made| *made >= n);
    match tokio::time::timeout(Duration::from_secs(3600), reached).await {
        Ok(Ok(_)) => {}
        _ => panic!("fewer than {n} requests were made"),
    }
}

impl<L: ListWatch> ListWatch for Timed<L> {
    type Object = L::Object;

    async fn list(&self, params: &ListParams) -> Result<Listed<L::Object>, Error> {
        self.note(Request::List(params.clone()));
        self.inner.list(params).await
    }

    async fn watch(&self, params: &WatchParams) -> Result<EventStream<L::Object>, Error> {
        self.note(Request::Watch(params.clone()));
        self.inner.watch(params).await
    }
}
