//! The simulated server's storage: objects, the global resourceVersion, history, watch caches
//! and watchers.
//!
//! Contract: one [`Store`] holds every object of every served resource as JSON, keyed like etcd
//! keys (`namespace/name`). All state sits behind one mutex that is never held across an
//! `.await`; each write takes it once, so writes are totally ordered by a single, monotonically
//! increasing resourceVersion, exactly as etcd revisions order a real cluster's writes. Each
//! committed write is appended to the [`History`] (the etcd side: exact reads, continue tokens,
//! compaction), to its resource's [`WatchCache`] (the API server side: where watches start,
//! rebuilt by [`Store::restart`]) and offered to every open watch while the lock is held, so a
//! watch never misses or reorders a change. The HTTP handlers and the in-process
//! API of `SimServer` both go through these methods, so they obey the same rules (uid,
//! resourceVersion, generation, finalizers, deletion).
//!
//! The write paths live in `write.rs` (create/update/patch, with the rules on server-owned
//! fields in `server_fields.rs` and those of a few built-in types in `built_in.rs`),
//! `delete.rs` (one object, or a collection; Pods' grace periods in `graceful.rs`) and
//! `namespace.rs` (a namespace's own lifecycle); reads in `list.rs`.

mod built_in;
mod delete;
mod error;
mod graceful;
mod list;
pub mod namespace;
mod server_fields;
pub mod watch_cache;
mod watchers;
mod write;

use std::collections::{BTreeMap, VecDeque};
use std::sync::Arc;

use chrono::{DateTime, Utc};
use parking_lot::Mutex;
use serde_json::Value;
use tokio::sync::{mpsc, watch};

pub use delete::{DeleteOptions, DeleteOutcome, DeletedCollection, Propagation};
pub use error::StoreError;
pub use list::{ListOptions, ListPage, ListSource};
pub use server_fields::UpdateTarget;
pub use watch_cache::{Sizing as WatchCacheSizing, WatchCache};
pub use watchers::{WatchItem, WatcherId};

use crate::clock::{format_time, Clock};
use crate::filter::ObjectFilter;
use crate::history::{Change, ChangeKind, History};
use crate::object;
use crate::resources::{Gvr, ResourceDef, ResourceId, Resources};
use crate::stamped::Stamped;
use watchers::Watchers;

/// Tuning of a [`Store`].
#[derive(Debug, Clone)]
pub struct StoreConfig {
    /// Changes kept for reads at old versions (etcd's history, also bounded by compaction).
    pub history_limit: usize,
    /// How each resource's watch cache sizes its window of past events.
    pub watch_cache: WatchCacheSizing,
    /// Events a watcher may have queued before it is dropped as too slow.
    pub watch_buffer: usize,
    /// Deletions remembered by [`Store::deletions`] (oldest forgotten first).
    pub deletion_log_limit: usize,
}

impl Default for StoreConfig {
    fn default() -> Self {
        StoreConfig {
            history_limit: 100_000,
            watch_cache: WatchCacheSizing::default(),
            watch_buffer: 10_000,
            deletion_log_limit: 100_000,
        }
    }
}

/// One object that left storage: what was deleted, when, and its final state.
#[derive(Debug, Clone)]
pub struct DeletionRecord {
    /// resourceVersion of the deletion.
    pub rv: u64,
    /// Time of the deletion (server clock).
    pub at: DateTime<Utc>,
    /// The object's resource.
    pub gvr: Gvr,
    /// The object's namespace (`None` when cluster-scoped).
    pub namespace: Option<String>,
    /// The object's name.
    pub name: String,
    /// The object's uid.
    pub uid: String,
    /// The object as it was when it was removed, at the resourceVersion of the last write that
    /// stored it (`rv` is the deletion's); shared with the history ([`Stamped::value`] reads it).
    pub final_state: Stamped,
}

/// Where a new watch starts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WatchStart {
    /// Synthetic `ADDED` events for every current object, then live changes (`resourceVersion`
    /// unset or `0`).
    Current,
    /// Like [`WatchStart::Current`], then a bookmark marking the end of the initial events
    /// (`sendInitialEvents=true`).
    InitialEventsThenBookmark,
    /// Replay of every change after this resourceVersion, then live changes.
    After(u64),
}

/// A registered watch: what to send first, then the live channel.
#[derive(Debug)]
pub struct WatchRegistration {
    /// The registry id, for [`Store::unwatch`] and [`Store::request_bookmark`].
    pub id: WatcherId,
    /// Items to send before anything from `live`.
    pub initial: Vec<WatchItem>,
    /// Live items, in commit order; closes when the watcher is dropped.
    pub live: mpsc::Receiver<WatchItem>,
}

struct State {
    rv: u64,
    objects: Vec<BTreeMap<String, Arc<Value>>>,
    history: History,
    /// One per resource, indexed by [`ResourceId`].
    watch_caches: Vec<WatchCache>,
    /// The latest committed resourceVersion, for reads that wait until the store reaches one.
    version: watch::Sender<u64>,
    watchers: Watchers,
    deletions: VecDeque<DeletionRecord>,
    deletion_log_limit: usize,
}

/// The object store shared by the HTTP handlers and the in-process API.
pub struct Store {
    resources: Arc<Resources>,
    clock: Arc<dyn Clock>,
    config: StoreConfig,
    state: Mutex<State>,
}

impl std::fmt::Debug for Store {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let state = self.state.lock();
        f.debug_struct("Store")
            .field("resource_version", &state.rv)
            .field("watchers", &state.watchers)
            .finish()
    }
}

impl Store {
    /// An empty store for `resources`.
    pub fn new(resources: Arc<Resources>, clock: Arc<dyn Clock>, config: StoreConfig) -> Store {
        let objects = vec![BTreeMap::new(); resources.len()];
        let watch_caches = (0..resources.len())
            .map(|_| WatchCache::new(config.watch_cache, 0))
            .collect();
        let state = State {
            rv: 0,
            objects,
            history: History::new(0, config.history_limit),
            watch_caches,
            version: watch::Sender::new(0),
            watchers: Watchers::default(),
            deletions: VecDeque::new(),
            deletion_log_limit: config.deletion_log_limit,
        };
        Store {
            resources,
            clock,
            config,
            state: Mutex::new(state),
        }
    }

    /// The served resources.
    pub fn resources(&self) -> &Arc<Resources> {
        &self.resources
    }

    /// The clock used for timestamps.
    pub fn clock(&self) -> &Arc<dyn Clock> {
        &self.clock
    }

    /// The current (latest committed) resourceVersion.
    pub fn resource_version(&self) -> u64 {
        self.state.lock().rv
    }

    /// One object.
    pub fn get(
        &self,
        resource: ResourceId,
        namespace: Option<&str>,
        name: &str,
    ) -> Result<Arc<Value>, StoreError> {
        let key = self.key(resource, namespace, name);
        self.state.lock().existing(resource, &key, name)
    }

    /// Waits until the store has committed `rv`, for at most `limit`; whether it did. A real
    /// API server's watch cache waits so for a list "not older than" a version it has not seen
    /// yet (3 s), then answers 504.
    pub async fn wait_for_version(&self, rv: u64, limit: std::time::Duration) -> bool {
        let mut version = self.state.lock().version.subscribe();
        let reached = tokio::time::timeout(limit, version.wait_for(|current| *current >= rv)).await;
        matches!(reached, Ok(Ok(_)))
    }

    /// Opens a watch on `resource` for objects passing `filter`.
    ///
    /// Fails with [`StoreError::WatchTooOld`] when `start` is a version older than the window of
    /// the resource's watch cache.
    pub fn watch(
        &self,
        resource: ResourceId,
        filter: ObjectFilter,
        start: WatchStart,
    ) -> Result<WatchRegistration, StoreError> {
        let (tx, live) = mpsc::channel(self.config.watch_buffer.max(1));
        let mut state = self.state.lock();
        let now = state.rv;
        let (initial, after_rv) = match start {
            WatchStart::Current | WatchStart::InitialEventsThenBookmark => {
                let mut initial: Vec<WatchItem> = state.objects[resource.0]
                    .values()
                    .filter(|obj| filter.matches(obj))
                    .map(|obj| WatchItem::Event {
                        event_type: "ADDED",
                        object: Stamped::stored(Arc::clone(obj)),
                    })
                    .collect();
                if start == WatchStart::InitialEventsThenBookmark {
                    initial.push(WatchItem::Bookmark {
                        rv: now,
                        initial_events_end: true,
                    });
                }
                (initial, now)
            }
            WatchStart::After(rv) => {
                let cache = &state.watch_caches[resource.0];
                let Some(since) = cache.since(rv) else {
                    return Err(StoreError::WatchTooOld {
                        requested: rv,
                        oldest: cache.window_start(),
                    });
                };
                let initial = since
                    .filter_map(|c| filter.event_for(c))
                    .map(|(event_type, object)| WatchItem::Event { event_type, object })
                    .collect();
                (initial, rv.max(now))
            }
        };
        let id = state.watchers.add(resource, filter, after_rv, tx);
        Ok(WatchRegistration { id, initial, live })
    }

    /// Closes a watch's registration (its live channel ends).
    pub fn unwatch(&self, id: WatcherId) {
        self.state.lock().watchers.remove(id);
    }

    /// Queues a bookmark at the current resourceVersion behind the watcher's pending events.
    pub fn request_bookmark(&self, id: WatcherId) {
        let mut state = self.state.lock();
        let rv = state.rv;
        state.watchers.bookmark(id, rv);
    }

    /// Ends every open watch (their streams end after draining what is queued).
    pub fn close_watches(&self) {
        self.state.lock().watchers.clear();
    }

    /// Ends the open watches of `resource` (their streams end after draining what is queued).
    pub fn close_watches_of(&self, resource: ResourceId) {
        self.state.lock().watchers.end_resource(resource);
    }

    /// Number of open watches.
    pub fn open_watches(&self) -> usize {
        self.state.lock().watchers.len()
    }

    /// How many watchers were dropped because their buffer filled up.
    pub fn slow_watchers_dropped(&self) -> u64 {
        self.state.lock().watchers.dropped_slow()
    }

    /// Restarts the API server in front of the store: every watch ends and every resource's
    /// watch cache is rebuilt at the current revision, so watches from any earlier version now
    /// get 410 (exchanges 55, 59). Objects and etcd's history are kept: exact reads and continue
    /// tokens still work until compaction (exchange 56).
    pub fn restart(&self) {
        let mut state = self.state.lock();
        state.watchers.clear();
        let rv = state.rv;
        for cache in &mut state.watch_caches {
            cache.rebuild(rv);
        }
    }

    /// Compacts etcd's history to the current revision: exact reads and continue tokens at any
    /// earlier version now get 410 (exchanges 53, 54). Watches are not affected: they are
    /// served from the watch caches.
    pub fn compact(&self) {
        let rv = self.resource_version();
        self.compact_to(rv);
    }

    /// Compacts etcd's history to `rv` (never backwards), as the API server's compactor does
    /// every interval with the revision it saw the interval before.
    pub fn compact_to(&self, rv: u64) {
        self.state.lock().history.compact(rv);
    }

    /// The oldest resourceVersion exact reads and continue tokens can still use (etcd's
    /// compaction point).
    pub fn oldest_resource_version(&self) -> u64 {
        self.state.lock().history.window_start()
    }

    /// The oldest resourceVersion a watch of `resource` can start from.
    pub fn watch_window_start(&self, resource: ResourceId) -> u64 {
        self.state.lock().watch_caches[resource.0].window_start()
    }

    /// The retained change log, oldest first.
    pub fn history(&self) -> Vec<Arc<Change>> {
        self.state.lock().history.iter().cloned().collect()
    }

    /// Objects removed from storage, oldest first (bounded by
    /// [`StoreConfig::deletion_log_limit`]; unaffected by [`Store::compact`]).
    pub fn deletions(&self) -> Vec<DeletionRecord> {
        self.state.lock().deletions.iter().cloned().collect()
    }

    /// Every current object of `resource` (in key order), optionally in one namespace.
    pub fn snapshot(&self, resource: ResourceId, namespace: Option<&str>) -> Vec<Arc<Value>> {
        let filter = ObjectFilter::namespace(namespace);
        let state = self.state.lock();
        state.objects[resource.0]
            .values()
            .filter(|obj| filter.matches(obj))
            .cloned()
            .collect()
    }

    fn def(&self, resource: ResourceId) -> &ResourceDef {
        self.resources.def(resource)
    }

    fn key(&self, resource: ResourceId, namespace: Option<&str>, name: &str) -> String {
        let namespace = namespace.filter(|_| self.def(resource).namespaced);
        object::store_key(namespace, name)
    }
}

/// One write that stores an object, about to be committed.
struct Write {
    resource: ResourceId,
    key: String,
    /// The new object; its resourceVersion is set on commit.
    object: Value,
    /// The stored object being replaced (`None` on create).
    previous: Option<Arc<Value>>,
}

/// One deletion about to be committed.
struct Removal {
    resource: ResourceId,
    key: String,
    /// The object's final state: the stored object itself, unless the deletion changed it
    /// (an update that removed the last finalizer, a graceful deletion's mark).
    last: Stamped,
    /// The object's state before the removal.
    previous: Stamped,
}

impl State {
    /// The stored object at `key`, or the NotFound every read and write of a missing object gets.
    fn existing(
        &self,
        resource: ResourceId,
        key: &str,
        name: &str,
    ) -> Result<Arc<Value>, StoreError> {
        self.objects[resource.0]
            .get(key)
            .cloned()
            .ok_or_else(|| StoreError::NotFound {
                resource,
                name: name.to_string(),
            })
    }

    /// Whether the object stored at `key` is still `read` (the same stored version, not an
    /// equal copy): what a write decided outside the lock commits on.
    fn holds(&self, resource: ResourceId, key: &str, read: &Arc<Value>) -> bool {
        self.objects[resource.0]
            .get(key)
            .is_some_and(|stored| Arc::ptr_eq(stored, read))
    }

    /// Commits a write that stores an object (a create or an update): assigns the next
    /// resourceVersion, stores the object, appends the change to the history and offers it to
    /// watchers.
    fn commit(&mut self, write: Write, at: DateTime<Utc>) -> Arc<Value> {
        let Write {
            resource,
            key,
            object: mut obj,
            previous,
        } = write;
        self.rv += 1;
        object::set_meta(
            &mut obj,
            "resourceVersion",
            Some(Value::from(self.rv.to_string())),
        );
        let obj = Arc::new(obj);
        self.objects[resource.0].insert(key.clone(), Arc::clone(&obj));
        let kind = match previous {
            Some(_) => ChangeKind::Modified,
            None => ChangeKind::Added,
        };
        self.publish(Change {
            rv: self.rv,
            at,
            resource,
            key,
            kind,
            object: Stamped::stored(Arc::clone(&obj)),
            previous: previous.map(Stamped::stored),
        });
        obj
    }

    /// Commits a graceful deletion's mark: assigns the next resourceVersion and logs `existing`
    /// marked for deletion at `at`, as an update to it — without copying it, and without
    /// storing it in the map, because the caller removes the object under the same lock
    /// ([`State::commit_deletion`]): nothing reads that state but the history, the watchers and
    /// the answer.
    fn commit_deletion_mark(
        &mut self,
        resource: ResourceId,
        key: String,
        existing: Arc<Value>,
        at: DateTime<Utc>,
    ) -> Stamped {
        self.rv += 1;
        let marked = Stamped::marked_for_deletion(Arc::clone(&existing), self.rv, &format_time(at));
        self.publish(Change {
            rv: self.rv,
            at,
            resource,
            key,
            kind: ChangeKind::Modified,
            object: marked.clone(),
            previous: Some(Stamped::stored(existing)),
        });
        marked
    }

    /// Commits a deletion: assigns the next resourceVersion, removes the object, logs `last` as
    /// its final state, appends the change and offers it to watchers. `last` is shared, not
    /// copied: it keeps the resourceVersion of the write that stored it, and the answer and
    /// the DELETED events present it at the deletion's ([`Stamped`]).
    fn commit_deletion(
        &mut self,
        def: &ResourceDef,
        removal: Removal,
        at: DateTime<Utc>,
    ) -> Stamped {
        let Removal {
            resource,
            key,
            last,
            previous,
        } = removal;
        self.rv += 1;
        self.objects[resource.0].remove(&key);
        self.deletions.push_back(DeletionRecord {
            rv: self.rv,
            at,
            gvr: Gvr::new(&def.group, &def.version, &def.resource),
            namespace: object::namespace(last.object()).map(str::to_string),
            name: object::name(last.object()).unwrap_or_default().to_string(),
            uid: object::uid(last.object()).unwrap_or_default().to_string(),
            final_state: last.clone(),
        });
        if self.deletions.len() > self.deletion_log_limit {
            self.deletions.pop_front();
        }
        self.publish(Change {
            rv: self.rv,
            at,
            resource,
            key,
            kind: ChangeKind::Deleted,
            object: last.clone(),
            previous: Some(previous),
        });
        last.presented_at(self.rv)
    }

    /// Appends a committed change to the history and the resource's watch cache, and offers it
    /// to every watcher, all under the lock the write holds.
    fn publish(&mut self, change: Change) {
        let change = Arc::new(change);
        self.watchers.dispatch(&change);
        self.watch_caches[change.resource.0].push(Arc::clone(&change));
        self.history.push(change);
        self.version.send_replace(self.rv);
    }
}

#[cfg(test)]
mod tests;
