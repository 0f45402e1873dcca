//! The bounded change log behind watches and reads at old resourceVersions.
//!
//! Contract: every committed write appends one [`Change`] carrying the global resourceVersion it
//! was committed at, the object as watchers see it, and the object as it was before. The log
//! keeps at most `limit` changes; [`History::window_start`] is the oldest resourceVersion from
//! which the log can still replay *every* later change (a watch or list from an older version is
//! answered with 410 Expired, as the real server does once etcd compacted or the watch cache
//! moved on). Because each change keeps the previous object, the state of a resource at any
//! version inside the window is the current state with the later changes undone ("MVCC-lite").

use std::collections::{BTreeMap, VecDeque};
use std::sync::Arc;

use chrono::{DateTime, Utc};
use serde_json::Value;

use crate::sim::resources::ResourceId;

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
    /// The object as watchers receive it; for a deletion, its final state stamped with `rv`.
    pub object: Arc<Value>,
    /// The stored object before the change (`None` for [`ChangeKind::Added`]).
    pub previous: Option<Arc<Value>>,
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

    /// Forgets every change: from now on only the current resourceVersion (`now_rv`) can be
    /// watched or listed from.
    pub fn compact(&mut self, now_rv: u64) {
        self.changes.clear();
        self.window_start = now_rv;
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

    /// Turns the current objects of `resource` into its objects as of `rv` by undoing, newest
    /// first, every later change (callers check [`History::covers`] first).
    pub fn rewind(
        &self,
        resource: ResourceId,
        current: &BTreeMap<String, Arc<Value>>,
        rv: u64,
    ) -> BTreeMap<String, Arc<Value>> {
        let mut state = current.clone();
        let later: Vec<&Arc<Change>> = self.since(rv).filter(|c| c.resource == resource).collect();
        for change in later.into_iter().rev() {
            match &change.previous {
                None => {
                    state.remove(&change.key);
                }
                Some(previous) => {
                    state.insert(change.key.clone(), Arc::clone(previous));
                }
            }
        }
        state
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
            object: Arc::new(json!({ "v": value })),
            previous: previous.map(|p| Arc::new(json!({ "v": p }))),
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
    fn compaction_forgets_everything() {
        let mut history = History::new(0, 10);
        history.push(change(1, "a", ChangeKind::Added, 1, None));
        history.compact(1);
        assert!(!history.covers(0));
        assert!(history.covers(1));
        assert_eq!(history.iter().count(), 0);
    }

    #[test]
    fn rewinding_undoes_later_changes() {
        let mut history = History::new(0, 10);
        history.push(change(1, "a", ChangeKind::Added, 1, None));
        history.push(change(2, "b", ChangeKind::Added, 1, None));
        history.push(change(3, "a", ChangeKind::Modified, 2, Some(1)));
        history.push(change(4, "b", ChangeKind::Deleted, 1, Some(1)));
        let mut current = BTreeMap::new();
        current.insert("a".to_string(), Arc::new(json!({"v": 2})));

        let at2 = history.rewind(ResourceId(0), &current, 2);
        assert_eq!(at2.get("a").map(|v| v["v"].clone()), Some(json!(1)));
        assert_eq!(at2.get("b").map(|v| v["v"].clone()), Some(json!(1)));
        let at1 = history.rewind(ResourceId(0), &current, 1);
        assert_eq!(at1.len(), 1);
        let at4 = history.rewind(ResourceId(0), &current, 4);
        assert_eq!(at4, current);
    }
}
