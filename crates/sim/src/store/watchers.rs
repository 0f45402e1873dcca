//! The store's registry of open watches.
//!
//! Contract: each watch owns a bounded channel. The store hands every committed change to the
//! registry *while still holding its lock*, so a watcher sees changes in commit order with no gap
//! between its initial replay and live delivery. Delivery never blocks a writer: a watcher whose
//! buffer is full is dropped from the registry (its stream drains what it has, then ends) and
//! must re-watch — what the real server's cacher does to unresponsive watchers. Bookmark markers
//! go through the same channel, so a bookmark's resourceVersion never overtakes an undelivered
//! event.

use std::collections::HashMap;

use tokio::sync::mpsc;

use crate::filter::ObjectFilter;
use crate::history::Change;
use crate::resources::ResourceId;
use crate::stamped::Stamped;

/// One item a watch stream writes out.
#[derive(Debug, Clone)]
pub enum WatchItem {
    /// An `ADDED`, `MODIFIED` or `DELETED` event.
    Event {
        /// The event type.
        event_type: &'static str,
        /// The object as the watcher receives it.
        object: Stamped,
    },
    /// A `BOOKMARK` at this resourceVersion; `initial_events_end` marks the end of the initial
    /// events of a streaming list (`sendInitialEvents=true`).
    Bookmark {
        /// The resourceVersion every earlier event has been delivered up to.
        rv: u64,
        /// Whether to annotate it `k8s.io/initial-events-end: "true"`.
        initial_events_end: bool,
    },
}

/// Identifies a registered watcher.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct WatcherId(u64);

struct Slot {
    resource: ResourceId,
    filter: ObjectFilter,
    /// Changes at or below this version are not delivered (a watch from a future version).
    after_rv: u64,
    tx: mpsc::Sender<WatchItem>,
}

/// The open watches and their channels.
#[derive(Default)]
pub struct Watchers {
    slots: HashMap<WatcherId, Slot>,
    next_id: u64,
    dropped_slow: u64,
}

impl std::fmt::Debug for Watchers {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Watchers")
            .field("open", &self.slots.len())
            .field("dropped_slow", &self.dropped_slow)
            .finish()
    }
}

impl Watchers {
    /// Registers a watcher for `resource` that receives changes after `after_rv` passing `filter`.
    pub fn add(
        &mut self,
        resource: ResourceId,
        filter: ObjectFilter,
        after_rv: u64,
        tx: mpsc::Sender<WatchItem>,
    ) -> WatcherId {
        let id = WatcherId(self.next_id);
        self.next_id += 1;
        self.slots.insert(
            id,
            Slot {
                resource,
                filter,
                after_rv,
                tx,
            },
        );
        id
    }

    /// Removes a watcher (its stream ends once it has drained its buffer).
    pub fn remove(&mut self, id: WatcherId) {
        self.slots.remove(&id);
    }

    /// Removes the watchers of `resource`: their streams end once drained.
    pub fn end_resource(&mut self, resource: ResourceId) {
        self.slots.retain(|_, slot| slot.resource != resource);
    }

    /// Removes every watcher: every watch stream ends.
    pub fn clear(&mut self) {
        self.slots.clear();
    }

    /// Number of open watchers.
    pub fn len(&self) -> usize {
        self.slots.len()
    }

    /// How many watchers were dropped for falling behind.
    pub fn dropped_slow(&self) -> u64 {
        self.dropped_slow
    }

    /// Offers a committed change to every watcher of its resource, dropping watchers that are
    /// gone or too far behind.
    pub fn dispatch(&mut self, change: &Change) {
        let mut dead = Vec::new();
        for (id, slot) in &self.slots {
            if slot.resource != change.resource || change.rv <= slot.after_rv {
                continue;
            }
            let Some((event_type, object)) = slot.filter.event_for(change) else {
                continue;
            };
            if slot
                .tx
                .try_send(WatchItem::Event { event_type, object })
                .is_err()
            {
                dead.push(*id);
            }
        }
        for id in dead {
            if let Some(slot) = self.slots.remove(&id) {
                if !slot.tx.is_closed() {
                    self.dropped_slow += 1;
                }
            }
        }
    }

    /// Queues a bookmark at `rv` behind everything already queued for watcher `id`.
    pub fn bookmark(&mut self, id: WatcherId, rv: u64) {
        let Some(slot) = self.slots.get(&id) else {
            return;
        };
        let item = WatchItem::Bookmark {
            rv: rv.max(slot.after_rv),
            initial_events_end: false,
        };
        if slot.tx.try_send(item).is_err() {
            self.remove(id);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::history::ChangeKind;
    use crate::stamped::Stamped;
    use serde_json::json;
    use std::sync::Arc;

    fn change(rv: u64, resource: usize) -> Change {
        Change {
            rv,
            at: chrono::DateTime::<chrono::Utc>::default(),
            resource: ResourceId(resource),
            key: "a".into(),
            kind: ChangeKind::Added,
            object: Stamped::stored(Arc::new(json!({"metadata": {"name": "a"}}))),
            previous: None,
        }
    }

    #[test]
    fn delivers_only_the_watched_resource_after_the_start_version() {
        let mut watchers = Watchers::default();
        let (tx, mut rx) = mpsc::channel(8);
        watchers.add(ResourceId(1), ObjectFilter::default(), 5, tx);
        watchers.dispatch(&change(5, 1));
        watchers.dispatch(&change(6, 0));
        watchers.dispatch(&change(7, 1));
        match rx.try_recv() {
            Ok(WatchItem::Event { event_type, .. }) => assert_eq!(event_type, "ADDED"),
            other => panic!("unexpected {other:?}"),
        }
        assert!(rx.try_recv().is_err());
    }

    #[test]
    fn a_full_buffer_drops_the_watcher_instead_of_blocking() {
        let mut watchers = Watchers::default();
        let (tx, mut rx) = mpsc::channel(1);
        watchers.add(ResourceId(0), ObjectFilter::default(), 0, tx);
        watchers.dispatch(&change(1, 0));
        watchers.dispatch(&change(2, 0));
        assert_eq!(watchers.len(), 0);
        assert_eq!(watchers.dropped_slow(), 1);
        assert!(rx.try_recv().is_ok());
        assert!(matches!(
            rx.try_recv(),
            Err(mpsc::error::TryRecvError::Disconnected)
        ));
    }

    #[test]
    fn bookmarks_queue_behind_events() {
        let mut watchers = Watchers::default();
        let (tx, mut rx) = mpsc::channel(8);
        let id = watchers.add(ResourceId(0), ObjectFilter::default(), 0, tx);
        watchers.dispatch(&change(1, 0));
        watchers.bookmark(id, 1);
        assert!(matches!(rx.try_recv(), Ok(WatchItem::Event { .. })));
        assert!(matches!(
            rx.try_recv(),
            Ok(WatchItem::Bookmark { rv: 1, .. })
        ));
    }
}
