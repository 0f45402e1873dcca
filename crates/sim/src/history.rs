//! The bounded change log behind watches and reads at old resourceVersions.
//!
//! Contract: every committed write appends one [`Change`] carrying the global resourceVersion it
//! was committed at, the object as watchers see it, and the object as it was before. This is
//! the simulated server's etcd: the log keeps at most `limit` changes and forgets older ones when
//! compacted; [`History::window_start`] is the oldest resourceVersion from which it can still
//! rebuild *every* later state (an exact list or a continue token at an older version is
//! answered with 410 Expired, as the real server does once etcd compacted). Watches are served
//! from the per-resource watch caches instead (`store::watch_cache`). Because each change keeps the previous object, the state of a resource at any
//! version inside the window is the current state with the later changes undone ("MVCC-lite").
//!
//! [`ObjectTimelines`] turns a list of changes into each object's states by UID, for checks that
//! judge an object as it was just before some change (the soak's and the GC tests' invariants).

use std::collections::{BTreeMap, HashMap, VecDeque};
use std::sync::Arc;

use chrono::{DateTime, Utc};
use serde_json::Value;

use crate::object;
use crate::resources::ResourceId;
use crate::stamped::Stamped;

/// What a change did to its object.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ChangeKind {
    /// The object was created.
    Added,
    /// The object was updated.
    Modified,
    /// The object was removed from storage.
    Deleted,
}

impl ChangeKind {
    /// The watch event type the change is delivered as to an unfiltered watcher.
    pub fn event_type(self) -> &'static str {
        match self {
            ChangeKind::Added => "ADDED",
            ChangeKind::Modified => "MODIFIED",
            ChangeKind::Deleted => "DELETED",
        }
    }
}

/// One committed write.
#[derive(Debug, Clone)]
pub struct Change {
    /// The resourceVersion the write was committed at.
    pub rv: u64,
    /// Wall-clock time of the commit (from the server's clock).
    pub at: DateTime<Utc>,
    /// Which resource the object belongs to.
    pub resource: ResourceId,
    /// The object's store key (`namespace/name` or `name`).
    pub key: String,
    /// What happened.
    pub kind: ChangeKind,
    /// The object as the change wrote it, shared with the store ([`Stamped`]). A deletion
    /// stores nothing: its `object` is the object's last stored state (the same as `previous`,
    /// but for a deletion by an update that removed the last finalizer: that update's object),
    /// still at the last write's resourceVersion; watchers receive it at `rv`. A graceful
    /// deletion's mark is written over the stored object ([`Stamped::marked_for_deletion`]).
    pub object: Stamped,
    /// The object before the change (`None` for [`ChangeKind::Added`]).
    pub previous: Option<Stamped>,
}

/// A bounded log of changes across all resources, oldest first.
#[derive(Debug)]
pub struct History {
    changes: VecDeque<Arc<Change>>,
    limit: usize,
    window_start: u64,
}

impl History {
    /// An empty log that can replay everything after `start_rv` and keeps at most `limit`
    /// changes (at least one).
    pub fn new(start_rv: u64, limit: usize) -> History {
        History {
            changes: VecDeque::new(),
            limit: limit.max(1),
            window_start: start_rv,
        }
    }

    /// Appends a change, dropping the oldest one when the log is full.
    pub fn push(&mut self, change: Arc<Change>) {
        if self.changes.len() == self.limit {
            if let Some(dropped) = self.changes.pop_front() {
                self.window_start = dropped.rv;
            }
        }
        self.changes.push_back(change);
    }

    /// Compacts to `rv` (etcd's compaction): states older than `rv` can no longer be read.
    /// Compacting to a version the window already passed does nothing. The changes themselves
    /// stay for inspection ([`History::iter`]) until the count bound drops them.
    pub fn compact(&mut self, rv: u64) {
        self.window_start = self.window_start.max(rv);
    }

    /// The oldest resourceVersion every later change is known for.
    pub fn window_start(&self) -> u64 {
        self.window_start
    }

    /// Whether changes after `rv` can all be replayed.
    pub fn covers(&self, rv: u64) -> bool {
        rv >= self.window_start
    }

    /// Changes committed after `rv`, oldest first (callers check [`History::covers`] first).
    pub fn since(&self, rv: u64) -> impl Iterator<Item = &Arc<Change>> {
        let start = self.changes.partition_point(|c| c.rv <= rv);
        self.changes.range(start..)
    }

    /// Every retained change, oldest first.
    pub fn iter(&self) -> impl Iterator<Item = &Arc<Change>> {
        self.changes.iter()
    }

    /// How `resource` differed at `rv` from now: for every key changed after `rv`, its state at
    /// `rv` (`None`: it did not exist). Callers check [`History::covers`] first. Reading the
    /// current objects through this overlay ([`Rewound`]) gives the objects as of `rv` without
    /// copying the ones that did not change.
    pub fn overlay(&self, resource: ResourceId, rv: u64) -> BTreeMap<String, Option<Arc<Value>>> {
        let mut overlay = BTreeMap::new();
        // The oldest change after `rv` holds, in `previous`, the state at `rv` (a copy only for
        // a graceful deletion's mark, which no current object shares).
        for change in self.since(rv).filter(|c| c.resource == resource) {
            overlay
                .entry(change.key.clone())
                .or_insert_with(|| change.previous.as_ref().map(Stamped::to_arc));
        }
        overlay
    }
}

/// The objects of one resource as of an older resourceVersion: the current objects with an
/// overlay of the keys that changed since, iterated together in key order.
#[derive(Debug, Clone, Copy)]
pub struct Rewound<'a> {
    /// The current objects.
    pub current: &'a BTreeMap<String, Arc<Value>>,
    /// Keys changed since, with their older state (from [`History::overlay`]).
    pub overlay: &'a BTreeMap<String, Option<Arc<Value>>>,
}

impl<'a> Rewound<'a> {
    /// Objects with keys in `range`, in key order.
    pub fn range<R>(self, range: R) -> impl Iterator<Item = (&'a String, &'a Arc<Value>)> + 'a
    where
        R: std::ops::RangeBounds<String> + Clone + 'a,
    {
        let mut current = self.current.range(range.clone()).peekable();
        let mut overlay = self.overlay.range(range).peekable();
        std::iter::from_fn(move || loop {
            let take_overlay = match (current.peek(), overlay.peek()) {
                (None, None) => return None,
                (Some(_), None) => false,
                (None, Some(_)) => true,
                (Some((ck, _)), Some((ok, _))) => ok <= ck,
            };
            if !take_overlay {
                return current.next();
            }
            let (key, older) = overlay.next()?;
            // The overlay replaces the current entry for the same key.
            if current.peek().is_some_and(|(ck, _)| *ck == key) {
                current.next();
            }
            if let Some(obj) = older {
                return Some((key, obj));
            }
        })
    }
}

/// One object's states in commit order: `(resourceVersion, object after the change)`, with `None`
/// once it was removed.
type Timeline = Vec<(u64, Option<Arc<Value>>)>;

/// Every state each object had, by UID, in commit order. UIDs are never reused, so a re-created
/// namesake has a timeline of its own.
#[derive(Debug, Default)]
pub struct ObjectTimelines {
    by_uid: HashMap<String, Timeline>,
}

impl ObjectTimelines {
    /// The timelines of every object `changes` (oldest first) touch.
    pub fn new<'a>(changes: impl IntoIterator<Item = &'a Change>) -> ObjectTimelines {
        let mut timelines = ObjectTimelines::default();
        for change in changes {
            let uid = object::uid(change.object.object()).unwrap_or_default();
            let state = (change.kind != ChangeKind::Deleted).then(|| change.object.to_arc());
            timelines
                .by_uid
                .entry(uid.to_owned())
                .or_default()
                .push((change.rv, state));
        }
        timelines
    }

    /// The object with `uid` as it was just before the change committed at `rv`: its state
    /// after the last earlier change, `None` if it did not exist then (or was already removed).
    pub fn state_before(&self, uid: &str, rv: u64) -> Option<&Value> {
        self.by_uid
            .get(uid)?
            .iter()
            .rev()
            .find(|(at, _)| *at < rv)
            .and_then(|(_, state)| state.as_deref())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn change(
        rv: u64,
        key: &str,
        kind: ChangeKind,
        value: i64,
        previous: Option<i64>,
    ) -> Arc<Change> {
        Arc::new(Change {
            rv,
            at: DateTime::<Utc>::default(),
            resource: ResourceId(0),
            key: key.to_string(),
            kind,
            object: Stamped::stored(Arc::new(json!({ "v": value }))),
            previous: previous.map(|p| Stamped::stored(Arc::new(json!({ "v": p })))),
        })
    }

    #[test]
    fn drops_oldest_changes_and_moves_the_window() {
        let mut history = History::new(10, 2);
        history.push(change(11, "a", ChangeKind::Added, 1, None));
        history.push(change(12, "b", ChangeKind::Added, 1, None));
        assert!(history.covers(10));
        history.push(change(13, "a", ChangeKind::Modified, 2, Some(1)));
        assert!(!history.covers(10));
        assert!(history.covers(11));
        let replay: Vec<u64> = history.since(11).map(|c| c.rv).collect();
        assert_eq!(replay, vec![12, 13]);
    }

    #[test]
    fn compaction_moves_the_window() {
        let mut history = History::new(0, 10);
        history.push(change(1, "a", ChangeKind::Added, 1, None));
        history.compact(1);
        assert!(!history.covers(0));
        assert!(history.covers(1));
        assert_eq!(history.iter().count(), 1, "kept for inspection");
    }

    #[test]
    fn compaction_to_an_older_version_keeps_the_later_changes() {
        let mut history = History::new(0, 10);
        for rv in 1..=4 {
            history.push(change(rv, "a", ChangeKind::Modified, rv as i64, None));
        }
        history.compact(2);
        assert!(!history.covers(1));
        assert_eq!(history.since(2).map(|c| c.rv).collect::<Vec<_>>(), [3, 4]);
        history.compact(1);
        assert_eq!(history.window_start(), 2, "compaction never goes back");
    }

    fn rewind(
        history: &History,
        current: &BTreeMap<String, Arc<Value>>,
        rv: u64,
    ) -> Vec<(String, Value)> {
        let overlay = history.overlay(ResourceId(0), rv);
        let view = Rewound {
            current,
            overlay: &overlay,
        };
        view.range::<std::ops::RangeFull>(..)
            .map(|(k, v)| (k.clone(), (**v).clone()))
            .collect()
    }

    #[test]
    fn rewinding_undoes_later_changes() {
        let mut history = History::new(0, 10);
        history.push(change(1, "a", ChangeKind::Added, 1, None));
        history.push(change(2, "b", ChangeKind::Added, 1, None));
        history.push(change(3, "a", ChangeKind::Modified, 2, Some(1)));
        history.push(change(4, "b", ChangeKind::Deleted, 1, Some(1)));
        history.push(change(5, "c", ChangeKind::Added, 1, None));
        history.push(change(6, "a", ChangeKind::Modified, 3, Some(2)));
        let mut current = BTreeMap::new();
        current.insert("a".to_string(), Arc::new(json!({"v": 3})));
        current.insert("c".to_string(), Arc::new(json!({"v": 1})));

        let v = |n: i64| json!({ "v": n });
        assert_eq!(
            rewind(&history, &current, 2),
            vec![("a".into(), v(1)), ("b".into(), v(1))]
        );
        assert_eq!(rewind(&history, &current, 1), vec![("a".into(), v(1))]);
        assert_eq!(rewind(&history, &current, 4), vec![("a".into(), v(2))]);
        assert_eq!(
            rewind(&history, &current, 5),
            vec![("a".into(), v(2)), ("c".into(), v(1))]
        );
        assert_eq!(
            rewind(&history, &current, 6),
            vec![("a".into(), v(3)), ("c".into(), v(1))]
        );
    }

    fn with_uid(rv: u64, uid: &str, kind: ChangeKind, value: i64) -> Change {
        Change {
            rv,
            at: DateTime::<Utc>::default(),
            resource: ResourceId(0),
            key: "ns/a".to_string(),
            kind,
            object: Stamped::stored(Arc::new(json!({"metadata": {"uid": uid}, "v": value}))),
            previous: None,
        }
    }

    #[test]
    fn timelines_give_each_uid_its_state_before_a_change() {
        let changes = [
            with_uid(10, "first", ChangeKind::Added, 1),
            with_uid(12, "first", ChangeKind::Modified, 2),
            with_uid(14, "first", ChangeKind::Deleted, 2),
            // Re-created under the same name: another UID, another timeline.
            with_uid(15, "second", ChangeKind::Added, 7),
        ];
        let timelines = ObjectTimelines::new(&changes);
        let v = |uid, rv| timelines.state_before(uid, rv).map(|o| o["v"].clone());
        assert_eq!(v("first", 10), None, "not there before it was added");
        assert_eq!(v("first", 12), Some(json!(1)));
        assert_eq!(
            v("first", 14),
            Some(json!(2)),
            "as it was just before removal"
        );
        assert_eq!(v("first", 15), None, "removed");
        assert_eq!(v("second", 14), None);
        assert_eq!(v("second", 16), Some(json!(7)));
    }
}
