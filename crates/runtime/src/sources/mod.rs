//! Reading order: this contract, then [`fanout`] (one object decoded for each subscriber),
//! [`source`] (one resource's reflector and its restarts), [`gate`] (the start-up wait).
//!
//! [`Sources`]: one list and one watch per resource per process, shared by every controller
//! that reads the resource (client-go's `SharedInformerFactory`, extended to the garbage
//! collector's metadata monitors, which in kube-controller-manager v1.28 list and watch Jobs a
//! second time beside the TTL controller's informer — seen in the kit's audit log).
//!
//! ```text
//!                                   ┌─▶ TTL decoder ─▶ Assessment ────────────▶ TTL informer
//!  LIST / WATCH batch/v1 jobs ─text─┤
//!  (one reflector)                  └─▶ metadata decoder ─▶ PartialObjectMetadata ─▶ GC graph
//! ```
//!
//! Contract:
//! - A [`Subscriber`] is a name, the [`Form`] it needs (whole objects or metadata), an item
//!   decoder (what it keeps of each object) and optionally a handler of failed requests. It is
//!   fed through [`Sources::feed`] into its sink (an informer, the collector's graph) for as
//!   long as its token runs.
//! - Subscribers of the same resource in the same namespace scope share one source: one
//!   reflector, one list and one watch. Each object's text is decoded by every subscriber's
//!   decoder, so each keeps its own projection and only that; the wire carries the object once.
//! - The source asks for metadata only while every subscriber wants only that, whole objects as
//!   soon as one does.
//! - A subscriber joining a source that already lists makes it list again (one more LIST; the
//!   others take it as a relist, whose difference is empty); [`Sources::hold`] lets start-up
//!   subscriptions gather first (an informer can carry one and drop it as it subscribes:
//!   `SharedInformerBuilder::source_holding`). Leaving costs nothing; the last to leave stops
//!   the source.
//! - Each resource's reflector counters live as long as the [`Sources`], across restarts
//!   ([`Sources::metrics`]).
//! - Lists and watches of whole objects go through the objects client (`shared-informers`),
//!   those of metadata through the metadata client (`metadata-informers`), as in
//!   kube-controller-manager.

mod fanout;
mod gate;
mod source;

use std::collections::HashMap;
use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use parking_lot::Mutex;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

pub use gate::Hold;

use self::fanout::{Slot, TypedSlot};
use self::gate::Gate;
use self::source::{Source, SourceContext};
use crate::cache::Cacheable;
use crate::reflector::{Form, ReflectorConfig, ReflectorMetrics, ReflectorSink, WatchErrorHandler};
use kube_gc_client::protobuf::Selection;
use kube_gc_client::{Client, DecodeItem, ItemDecoder, ResourceRef};

/// The longest a [`Hold`] delays the first lists.
pub const HOLD_LIMIT: Duration = Duration::from_secs(5);

/// What is listed and watched: a resource, in one namespace or all.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct SourceKey {
    /// The resource.
    pub resource: ResourceRef,
    /// One namespace, or `None` for all.
    pub namespace: Option<String>,
}

impl SourceKey {
    /// `resource` in every namespace.
    pub fn all(resource: ResourceRef) -> SourceKey {
        SourceKey {
            resource,
            namespace: None,
        }
    }
}

impl fmt::Display for SourceKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.resource.path_name())?;
        match &self.namespace {
            Some(namespace) => write!(f, " in {namespace}"),
            None => Ok(()),
        }
    }
}

/// One reader of a source.
pub struct Subscriber<T> {
    /// Who reads, for the logs (`ttl-after-finished`, `garbagecollector`).
    pub name: String,
    /// What it needs the server to send.
    pub form: Form,
    /// What it keeps of each object.
    pub decoder: ItemDecoder<T>,
    /// Told of every failed list and watch request of the source.
    pub on_error: Option<WatchErrorHandler>,
}

impl<T> Subscriber<T> {
    /// A subscriber of whole objects keeping what `decoder` makes of each, told of no
    /// failures.
    pub fn objects(name: impl Into<String>, decoder: ItemDecoder<T>) -> Subscriber<T> {
        Subscriber {
            name: name.into(),
            form: Form::Objects,
            decoder,
            on_error: None,
        }
    }
}

impl<T: serde::de::DeserializeOwned + Send + Sync + 'static> Subscriber<T> {
    /// A subscriber keeping each object as the `T` serde makes of its text (of the whole
    /// object, or of its metadata as `form` says), told of no failures. With
    /// [`Form::Metadata`] it says it reads `metadata` only (less `managedFields`), so a source that also serves
    /// whole-object subscribers hands it (in protobuf) no more.
    pub fn serde(name: impl Into<String>, form: Form) -> Subscriber<T> {
        // `managedFields` too is left out: `ObjectMeta` has no such field (serde would skip
        // it), and in protobuf it is the bulk of the metadata, JSON text to be checked.
        let reads = (form == Form::Metadata)
            .then(|| Selection::paths(["metadata"]).without("metadata.managedFields"));
        Subscriber {
            name: name.into(),
            form,
            decoder: serde_decoder(reads),
            on_error: None,
        }
    }
}

/// A decoder keeping each object as the `T` serde makes of its text, which says it reads only
/// `reads` (`None`: everything), so that a protobuf source transcodes no more than that.
pub fn serde_decoder<T>(reads: Option<Selection>) -> ItemDecoder<T>
where
    T: serde::de::DeserializeOwned + Send + Sync + 'static,
{
    Arc::new(SerdeDecoder::<T> {
        reads,
        _type: std::marker::PhantomData,
    })
}

/// Decodes with serde, reading what it says it reads.
struct SerdeDecoder<T> {
    reads: Option<Selection>,
    _type: std::marker::PhantomData<fn() -> T>,
}

impl<T: serde::de::DeserializeOwned + 'static> DecodeItem<T> for SerdeDecoder<T> {
    fn decode(&self, text: &[u8]) -> Result<T, serde_json::Error> {
        serde_json::from_slice(text)
    }

    fn reads(&self) -> Option<Selection> {
        self.reads.clone()
    }
}

/// The process's sources, by resource; shared by cloning.
#[derive(Clone)]
pub struct Sources {
    inner: Arc<Inner>,
}

struct Inner {
    objects_client: Client,
    metadata_client: Client,
    config: ReflectorConfig,
    gate: Gate,
    running: Mutex<HashMap<SourceKey, Running>>,
    metrics: Mutex<HashMap<SourceKey, Arc<ReflectorMetrics>>>,
}

struct Running {
    source: Arc<Source>,
    task: JoinHandle<()>,
}

impl Sources {
    /// Sources listing and watching through `client`, as `config` says.
    pub fn new(client: Client, config: ReflectorConfig) -> Sources {
        Sources::with_clients(client.clone(), client, config)
    }

    /// Sources listing and watching whole objects through `objects` and metadata through
    /// `metadata`.
    pub fn with_clients(objects: Client, metadata: Client, config: ReflectorConfig) -> Sources {
        Sources {
            inner: Arc::new(Inner {
                objects_client: objects,
                metadata_client: metadata,
                config,
                gate: Gate::new(HOLD_LIMIT),
                running: Mutex::new(HashMap::new()),
                metrics: Mutex::new(HashMap::new()),
            }),
        }
    }

    /// Keeps every source from listing until the hold is dropped (at most [`HOLD_LIMIT`]).
    pub fn hold(&self) -> Hold {
        self.inner.gate.hold()
    }

    /// The reflector counters of `key`'s source, which last as long as these sources.
    pub fn metrics(&self, key: &SourceKey) -> Arc<ReflectorMetrics> {
        let mut metrics = self.inner.metrics.lock();
        Arc::clone(metrics.entry(key.clone()).or_default())
    }

    /// The resources with a source now, sorted.
    pub fn running(&self) -> Vec<SourceKey> {
        let mut keys: Vec<SourceKey> = self.inner.running.lock().keys().cloned().collect();
        keys.sort_by_key(|key| key.to_string());
        keys
    }

    /// Feeds `sink` with `subscriber`'s projections of `key` until `stop` is cancelled, then
    /// leaves the source (stopping it if nobody else reads it). Dropping the future leaves too.
    pub async fn feed<T>(
        &self,
        key: SourceKey,
        subscriber: Subscriber<T>,
        sink: Arc<dyn ReflectorSink<T>>,
        stop: CancellationToken,
    ) where
        T: Cacheable + Send + 'static,
    {
        let subscription = self.subscribe(key, subscriber, sink);
        stop.cancelled().await;
        subscription.leave().await;
    }

    /// Feeds `sink` with `subscriber`'s projections of `key` from now until the subscription
    /// is left or dropped. The subscriber has joined when this returns, so a hold dropped
    /// after it cannot let the source list without it.
    ///
    /// # Panics
    ///
    /// Outside a Tokio runtime, when it starts the source's task.
    pub fn subscribe<T>(
        &self,
        key: SourceKey,
        subscriber: Subscriber<T>,
        sink: Arc<dyn ReflectorSink<T>>,
    ) -> Subscription
    where
        T: Cacheable + Send + 'static,
    {
        let slot: Arc<dyn Slot> = Arc::new(TypedSlot::new(
            subscriber.name,
            subscriber.form,
            subscriber.decoder,
            sink,
            subscriber.on_error,
        ));
        let mut running = self.inner.running.lock();
        let entry = running.entry(key.clone()).or_insert_with(|| {
            let source = Source::new(key.clone());
            let context = SourceContext {
                objects_client: self.inner.objects_client.clone(),
                metadata_client: self.inner.metadata_client.clone(),
                config: self.inner.config.clone(),
                metrics: self.metrics(&key),
                gate: self.inner.gate.clone(),
            };
            let task = tokio::spawn(Arc::clone(&source).run(context));
            Running { source, task }
        });
        entry.source.join(Arc::clone(&slot));
        tracing::debug!(source = %key, subscriber = slot.name(), "subscribed");
        Subscription {
            sources: Arc::clone(&self.inner),
            key,
            source: Arc::clone(&entry.source),
            slot: Some(slot),
        }
    }
}

impl fmt::Debug for Sources {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Sources")
            .field("running", &self.running())
            .finish_non_exhaustive()
    }
}

/// One subscriber's place in a source. Dropping it leaves too, without waiting for the
/// source's task to end.
pub struct Subscription {
    sources: Arc<Inner>,
    key: SourceKey,
    source: Arc<Source>,
    slot: Option<Arc<dyn Slot>>,
}

impl Subscription {
    /// Leaves the source; if this was its last subscriber, stops it and waits for its task.
    pub async fn leave(mut self) {
        if let Some(task) = self.detach() {
            if let Err(error) = task.await {
                tracing::error!(source = %self.key, %error, "a source's task failed");
            }
        }
    }

    /// Leaves; the source's task, to wait for, if this was its last subscriber.
    fn detach(&mut self) -> Option<JoinHandle<()>> {
        let slot = self.slot.take()?;
        let mut running = self.sources.running.lock();
        if !self.source.leave(&slot) {
            return None;
        }
        self.source.stop();
        // The map may already hold a newer source for the key (this one emptied and a new
        // subscriber started another): only this one's entry goes.
        let ours = running
            .get(&self.key)
            .is_some_and(|entry| Arc::ptr_eq(&entry.source, &self.source));
        if ours {
            running.remove(&self.key).map(|entry| entry.task)
        } else {
            None
        }
    }
}

impl fmt::Debug for Subscription {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Subscription")
            .field("key", &self.key)
            .finish_non_exhaustive()
    }
}

impl Drop for Subscription {
    fn drop(&mut self) {
        let _ = self.detach();
    }
}
