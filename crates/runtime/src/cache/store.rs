//! [`Store`]: the sharded, indexed object cache an informer keeps, and [`StoreBuilder`].
//!
//! Contract:
//! - One writer, the reflector, and any number of readers (workers, handlers). Concurrent
//!   writers are memory-safe too, but the recorded resourceVersion is then whichever write
//!   finished last, so the reflector must be the only writer.
//! - Every method is synchronous and returns with no lock held, so no lock is ever held across
//!   an `.await`.
//! - Lock discipline: a method holds **at most one lock at a time** — one shard's lock, or the
//!   resourceVersion lock — never two, so there is no lock order to get wrong and no deadlock.
//!   The transform runs outside any lock; index functions run under one shard's lock; neither
//!   may call back into the store.
//! - Each write is atomic within its shard: a reader sees an object and its index entries both
//!   before or both after a write, never half of it. Objects are immutable `Arc`s, so a reader
//!   can never see a torn object either.
//! - A [`Store::replace`] is atomic per shard, not across shards (see its docs).

use std::collections::BTreeMap;
use std::fmt;
use std::hash::{BuildHasher, RandomState};
use std::num::NonZeroUsize;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use parking_lot::{Mutex, RwLock, RwLockUpgradableReadGuard};

use super::diff::{merge_shard, ReplaceDiff};
use super::index::{probe, IndexFn, Indexer};
use super::shard::Shard;
use super::Cacheable;
use super::ObjectKey;

/// A function applied to every object before it is stored (client-go's `SetTransform`), e.g. to
/// drop fields a controller never reads.
pub type TransformFn<T> = Box<dyn Fn(T) -> T + Send + Sync>;

/// A query named an index the store was not built with.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("the cache has no index named {0:?}")]
pub struct UnknownIndex(pub String);

/// The result of applying a watch event: the event's object (after the transform) and the
/// state the cache held for its key before.
///
/// For an added or modified object, `previous` tells a shared informer which handler to call:
/// none means the object is new (`on_add(object)`), some means it changed
/// (`on_update(previous, object)`) — whatever the event's type said, as client-go decides. For
/// a deletion, `object` is the final state to hand to `on_delete` and `previous` what the cache
/// dropped (none if it never held the key).
#[derive(Debug)]
pub struct Applied<T> {
    /// The event's object, after the transform; stored, unless the event was a deletion.
    pub object: Arc<T>,
    /// What the cache held for the key before the event, if anything.
    pub previous: Option<Arc<T>>,
}

/// The most shards a store may have; more would only cost memory and slow whole-cache reads.
pub const MAX_SHARDS: usize = 1024;

/// The shard count used by [`Store::new`]: four shards per CPU, rounded up to a power of two and
/// kept within 16..=64.
///
/// Four per CPU makes two threads rarely want the same shard; at least 16 keeps a relist's
/// per-shard lock holds short even on small machines; at most 64 because `list`, `len` and
/// index queries visit every shard.
pub fn default_shard_count() -> usize {
    let cpus = std::thread::available_parallelism().map_or(1, NonZeroUsize::get);
    cpus.saturating_mul(4).clamp(16, 64).next_power_of_two()
}

/// A thread-safe cache of objects keyed by [`ObjectKey`], split into shards.
///
/// An object lives in the shard picked by hashing its key, so writers and readers of different
/// objects rarely contend for a lock. Reads return `Arc`s: cheap to clone, immutable, and valid
/// after the lock is released.
pub struct Store<T> {
    /// Always a power of two long, so `hash & (len - 1)` picks a shard.
    shards: Box<[RwLock<Shard<T>>]>,
    /// Picks a key's shard. std's SipHash with per-store random keys: object names are chosen
    /// by cluster users, and a keyed hash stops them from piling objects into one shard; hashing
    /// a short key costs little next to decoding the object being stored.
    hasher: RandomState,
    indexers: Vec<Indexer<T>>,
    transform: Option<TransformFn<T>>,
    /// The resourceVersion the contents are current as of; empty until the first write.
    resource_version: Mutex<String>,
    /// Set once the first `replace` (the initial list) is stored; never cleared.
    synced: AtomicBool,
}

/// Configures a [`Store`]: shard count, indexes and transform.
pub struct StoreBuilder<T> {
    shard_count: usize,
    indexers: Vec<Indexer<T>>,
    transform: Option<TransformFn<T>>,
}

impl<T> StoreBuilder<T> {
    /// Uses `count` shards, rounded up to a power of two and kept within 1..=[`MAX_SHARDS`].
    pub fn shards(mut self, count: usize) -> Self {
        self.shard_count = count.clamp(1, MAX_SHARDS).next_power_of_two();
        self
    }

    /// Adds an index named `name`; a second index with the same name replaces the first.
    ///
    /// `values` must be pure and quick: it runs under a shard lock, and again on an object's
    /// old state to remove its entries.
    pub fn index(mut self, name: impl Into<String>, values: IndexFn<T>) -> Self {
        let name = name.into();
        self.indexers.retain(|indexer| indexer.name != name);
        self.indexers.push(Indexer { name, values });
        self
    }

    /// Applies `transform` to every object before it is stored.
    pub fn transform(mut self, transform: impl Fn(T) -> T + Send + Sync + 'static) -> Self {
        self.transform = Some(Box::new(transform));
        self
    }

    /// The configured, empty store.
    pub fn build(self) -> Store<T> {
        let index_count = self.indexers.len();
        Store {
            shards: (0..self.shard_count)
                .map(|_| RwLock::new(Shard::empty(index_count)))
                .collect(),
            hasher: RandomState::new(),
            indexers: self.indexers,
            transform: self.transform,
            resource_version: Mutex::new(String::new()),
            synced: AtomicBool::new(false),
        }
    }
}

impl<T: Cacheable> Default for Store<T> {
    fn default() -> Self {
        Store::new()
    }
}

impl<T: Cacheable> Store<T> {
    /// An empty store with [`default_shard_count`] shards, no indexes and no transform.
    pub fn new() -> Self {
        Store::builder().build()
    }

    /// A builder for a store with indexes, a transform or a chosen shard count.
    pub fn builder() -> StoreBuilder<T> {
        StoreBuilder {
            shard_count: default_shard_count(),
            indexers: Vec::new(),
            transform: None,
        }
    }

    // ---- Writes (the reflector) ----

    /// Stores an object from a watch `ADDED` event.
    pub fn apply_added(&self, object: T) -> Applied<T> {
        self.upsert(object)
    }

    /// Stores an object from a watch `MODIFIED` event. Same effect as [`Store::apply_added`]:
    /// the cache stores the latest state either way, and [`Applied::previous`] (not the event
    /// type) says whether the key was known.
    pub fn apply_modified(&self, object: T) -> Applied<T> {
        self.upsert(object)
    }

    /// Removes the object a watch `DELETED` event names. The event's object, transformed like
    /// any other, is returned as the final state for delete handlers.
    pub fn apply_deleted(&self, object: T) -> Applied<T> {
        let object = Arc::new(self.transformed(object));
        let key = object.cache_key();
        let previous = self.shard(&key).write().remove(&key, &self.indexers);
        self.advance_resource_version(object.resource_version());
        Applied { object, previous }
    }

    /// Records the resourceVersion of a watch `BOOKMARK`: the contents are current as of it.
    pub fn apply_bookmark(&self, resource_version: &str) {
        self.advance_resource_version(resource_version);
    }

    /// Replaces the whole contents with a fresh list taken at `resource_version`, returning the
    /// notifications the change owes (see [`ReplaceDiff`]).
    ///
    /// Atomic per shard: each shard's new contents are computed while readers keep reading the
    /// old ones (an upgradable read lock keeps other writers out), then swapped in under a brief
    /// write lock. A concurrent reader therefore sees, for each shard, either all of its old
    /// contents or all of its new ones — never a mix — but while a replace is running, some
    /// shards may already be new and others still old; a `list()` taken then can mix the two
    /// lists. Every object it returns is a complete state the server once held.
    ///
    /// Duplicate keys in `items` keep the last. The first replace marks the store synced;
    /// `resource_version` becomes the last synced one (unless empty, as for events).
    pub fn replace(
        &self,
        items: impl IntoIterator<Item = T>,
        resource_version: &str,
    ) -> ReplaceDiff<T> {
        let mut listed: Vec<BTreeMap<ObjectKey, Arc<T>>> =
            self.shards.iter().map(|_| BTreeMap::new()).collect();
        for item in items {
            let item = self.transformed(item);
            let key = item.cache_key();
            listed[self.shard_index(&key)].insert(key, Arc::new(item));
        }
        let mut diff = ReplaceDiff::default();
        for (lock, listed) in self.shards.iter().zip(listed) {
            let cached = lock.upgradable_read();
            let merged = merge_shard(cached.objects(), listed, &mut diff);
            let rebuilt = Shard::with_objects(merged, &self.indexers);
            let mut shard = RwLockUpgradableReadGuard::upgrade(cached);
            let old = std::mem::replace(&mut *shard, rebuilt);
            drop(shard);
            // Freed after the lock is released, so readers do not wait for deallocation.
            drop(old);
        }
        self.advance_resource_version(resource_version);
        self.synced.store(true, Ordering::Release);
        diff
    }

    // ---- Reads (workers, handlers) ----

    /// The object stored under `key`.
    pub fn get(&self, key: &ObjectKey) -> Option<Arc<T>> {
        self.shard(key).read().get(key).cloned()
    }

    /// Every object, grouped by shard, in key order within a shard (no overall order).
    pub fn list(&self) -> Vec<Arc<T>> {
        self.collect_from_shards(|shard, out| out.extend(shard.objects().values().cloned()))
    }

    /// The objects in `namespace` (`""` lists cluster-scoped objects), in no overall order.
    pub fn list_namespace(&self, namespace: &str) -> Vec<Arc<T>> {
        self.collect_from_shards(|shard, out| out.extend(shard.in_namespace(namespace).cloned()))
    }

    /// The objects filed under `value` in the index named `index`, in no overall order.
    pub fn by_index(&self, index: &str, value: &str) -> Result<Vec<Arc<T>>, UnknownIndex> {
        let position = self
            .indexers
            .iter()
            .position(|indexer| indexer.name == index)
            .ok_or_else(|| UnknownIndex(index.to_owned()))?;
        let probe = probe(value);
        Ok(self
            .collect_from_shards(|shard, out| out.extend(shard.indexed(position, &probe).cloned())))
    }

    /// Every key, grouped by shard, in key order within a shard.
    pub fn keys(&self) -> Vec<ObjectKey> {
        self.collect_from_shards(|shard, out| out.extend(shard.objects().keys().cloned()))
    }

    /// How many objects are cached (a sum over shards, each read at a slightly different
    /// instant while a writer is active).
    pub fn len(&self) -> usize {
        self.shards.iter().map(|shard| shard.read().len()).sum()
    }

    /// Whether nothing is cached.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Whether the initial list has been stored. Until then the cache may lack objects that
    /// exist, so a controller must not act on an absence.
    pub fn has_synced(&self) -> bool {
        self.synced.load(Ordering::Acquire)
    }

    /// The resourceVersion the contents are current as of (the last list, event or bookmark
    /// applied), or `None` before any; the reflector resumes a watch from it.
    pub fn last_sync_resource_version(&self) -> Option<String> {
        let version = self.resource_version.lock();
        (!version.is_empty()).then(|| version.clone())
    }

    /// How many shards the store has (a power of two).
    pub fn shard_count(&self) -> usize {
        self.shards.len()
    }

    // ---- Internals ----

    fn upsert(&self, object: T) -> Applied<T> {
        let object = Arc::new(self.transformed(object));
        let key = object.cache_key();
        let previous = self
            .shard(&key)
            .write()
            .upsert(key, Arc::clone(&object), &self.indexers);
        self.advance_resource_version(object.resource_version());
        Applied { object, previous }
    }

    fn transformed(&self, object: T) -> T {
        match &self.transform {
            Some(transform) => transform(object),
            None => object,
        }
    }

    /// Records `version` as current; an empty version (an object that carries none) is not
    /// progress and is ignored.
    fn advance_resource_version(&self, version: &str) {
        if !version.is_empty() {
            let mut current = self.resource_version.lock();
            current.clear();
            current.push_str(version);
        }
    }

    fn shard_index(&self, key: &ObjectKey) -> usize {
        // Truncating the 64-bit hash is fine: only the low bits are used.
        (self.hasher.hash_one(key.as_str()) as usize) & (self.shards.len() - 1)
    }

    fn shard(&self, key: &ObjectKey) -> &RwLock<Shard<T>> {
        &self.shards[self.shard_index(key)]
    }

    /// Runs `collect` on each shard in turn under its read lock, one lock at a time.
    fn collect_from_shards<R>(&self, mut collect: impl FnMut(&Shard<T>, &mut Vec<R>)) -> Vec<R> {
        let mut out = Vec::new();
        for shard in self.shards.iter() {
            collect(&shard.read(), &mut out);
        }
        out
    }
}

impl<T: Cacheable> fmt::Debug for Store<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Store")
            .field("shards", &self.shards.len())
            .field("len", &self.len())
            .field(
                "indexes",
                &self.indexers.iter().map(|i| &i.name).collect::<Vec<_>>(),
            )
            .field("has_synced", &self.has_synced())
            .field("resource_version", &self.last_sync_resource_version())
            .finish()
    }
}

#[cfg(test)]
mod tests;
