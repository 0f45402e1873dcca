//! One resource's watch cache: where watches, and lists that do not go to etcd, are served from
//! (kube-apiserver's `watchCache`, one per resource).
//!
//! Contract, as v1.28's `staging/src/k8s.io/apiserver/pkg/storage/cacher/watch_cache.go`:
//! - A cache is built at a revision (`built_at`: the server's start, or its restart — the real
//!   cacher lists etcd then) and from then on keeps that resource's changes in a ring.
//! - The ring's capacity follows the real sizing rule ([`Sizing`]): it starts at `lower` (100);
//!   when it is full and its oldest event is younger than `fresh_for` (75 s) it doubles, up to
//!   `upper` (102,400); when it is full and the event a quarter of the ring back from the newest
//!   is older than `fresh_for`, it halves, down to `lower`. Otherwise a full ring drops its
//!   oldest event for the new one.
//! - A watch from version N can be served when N ≥ [`WatchCache::window_start`]: `built_at`
//!   while no event has been dropped since the cache was built, else one below the oldest event
//!   kept. An older N is refused with 410 `too old resource version: N (window start)` —
//!   exchanges 55 and 59, where a restarted server refuses the version its clients last saw.
//! - The cache knows nothing of etcd: compaction does not touch it. A restart rebuilds it.
//!
//! One deliberate difference: when the real ring halves it drops events without marking the
//! window as moved (so a watch from `built_at` would silently miss them); here a halving that
//! drops events moves the window, so a client is told with a 410 instead.

use std::collections::VecDeque;
use std::sync::Arc;
use std::time::Duration;

use crate::history::Change;

/// How a watch cache sizes its ring (the real server's constants by default).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Sizing {
    /// The smallest capacity, and the first (real: 100).
    pub lower: usize,
    /// The largest capacity (real: 100 × 1024).
    pub upper: usize,
    /// How long the cache tries to keep events (real: 75 s).
    pub fresh_for: Duration,
}

impl Default for Sizing {
    fn default() -> Self {
        Sizing {
            lower: 100,
            upper: 100 * 1024,
            fresh_for: Duration::from_secs(75),
        }
    }
}

/// The recent changes of one resource, and from which version a watch can start.
#[derive(Debug)]
pub struct WatchCache {
    sizing: Sizing,
    capacity: usize,
    events: VecDeque<Arc<Change>>,
    /// The revision the cache was (re)built at.
    built_at: u64,
    /// Whether an event has left the ring since it was built.
    dropped_since_built: bool,
}

impl WatchCache {
    /// An empty cache built at revision `built_at`.
    pub fn new(sizing: Sizing, built_at: u64) -> WatchCache {
        let lower = sizing.lower.max(1);
        let sizing = Sizing {
            lower,
            upper: sizing.upper.max(lower),
            ..sizing
        };
        WatchCache {
            sizing,
            capacity: lower,
            events: VecDeque::new(),
            built_at,
            dropped_since_built: false,
        }
    }

    /// Rebuilds the cache at `revision`, forgetting every event (an API server restart).
    pub fn rebuild(&mut self, revision: u64) {
        *self = WatchCache::new(self.sizing, revision);
    }

    /// The ring's current capacity.
    pub fn capacity(&self) -> usize {
        self.capacity
    }

    /// Keeps `change` (of this cache's resource), resizing or dropping the oldest as the real
    /// cache does.
    pub fn push(&mut self, change: Arc<Change>) {
        self.resize_for(&change);
        if self.events.len() >= self.capacity {
            self.events.pop_front();
            self.dropped_since_built = true;
        }
        self.events.push_back(change);
    }

    /// The oldest version a watch can start from.
    pub fn window_start(&self) -> u64 {
        match self.events.front() {
            Some(oldest) if self.dropped_since_built => oldest.rv.saturating_sub(1),
            _ => self.built_at,
        }
    }

    /// The kept changes after `rv`, oldest first; `None` if `rv` is older than the window.
    pub fn since(&self, rv: u64) -> Option<impl Iterator<Item = &Arc<Change>>> {
        if rv < self.window_start() {
            return None;
        }
        let first = self.events.partition_point(|c| c.rv <= rv);
        Some(self.events.range(first..))
    }

    fn resize_for(&mut self, change: &Change) {
        if self.events.len() < self.capacity {
            return;
        }
        let age = |c: &Change| (change.at - c.at).to_std().unwrap_or_default();
        let oldest_is_fresh = self
            .events
            .front()
            .is_some_and(|oldest| age(oldest) < self.sizing.fresh_for);
        if oldest_is_fresh {
            self.capacity = (self.capacity * 2).min(self.sizing.upper);
            return;
        }
        let quarter_back = self.events.len() - self.capacity / 4;
        let recent_is_stale = self
            .events
            .get(quarter_back)
            .is_some_and(|c| age(c) > self.sizing.fresh_for);
        let halved = (self.capacity / 2).max(self.sizing.lower);
        if recent_is_stale && halved < self.capacity {
            self.capacity = halved;
            let excess = self.events.len().saturating_sub(halved);
            if excess > 0 {
                self.events.drain(..excess);
                self.dropped_since_built = true;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::history::ChangeKind;
    use crate::resources::ResourceId;
    use crate::stamped::Stamped;
    use chrono::{DateTime, Utc};
    use serde_json::json;

    fn change(rv: u64, at_secs: i64) -> Arc<Change> {
        Arc::new(Change {
            rv,
            at: DateTime::<Utc>::from_timestamp(at_secs, 0).unwrap_or_default(),
            resource: ResourceId(0),
            key: format!("ns/o{rv}"),
            kind: ChangeKind::Added,
            object: Stamped::stored(Arc::new(json!({}))),
            previous: None,
        })
    }

    fn small(lower: usize, upper: usize) -> Sizing {
        Sizing {
            lower,
            upper,
            fresh_for: Duration::from_secs(75),
        }
    }

    fn versions(cache: &WatchCache, after: u64) -> Option<Vec<u64>> {
        Some(cache.since(after)?.map(|c| c.rv).collect())
    }

    #[test]
    fn a_new_cache_serves_watches_from_the_revision_it_was_built_at() {
        // Exchange 59: built at 1592 after a restart, a watch from 1587 is too old.
        let mut cache = WatchCache::new(Sizing::default(), 1592);
        assert_eq!(cache.window_start(), 1592);
        assert!(cache.since(1587).is_none());
        assert_eq!(versions(&cache, 1592), Some(vec![]));
        cache.push(change(1594, 0));
        assert_eq!(versions(&cache, 1592), Some(vec![1594]));
        assert_eq!(versions(&cache, 1594), Some(vec![]));
        // Exchange 60: a watch from a newer version than any event is fine.
        assert_eq!(versions(&cache, 1600), Some(vec![]));
    }

    #[test]
    fn once_an_event_is_dropped_the_window_starts_below_the_oldest_kept() {
        let mut cache = WatchCache::new(small(2, 2), 10);
        for rv in [11, 15, 20] {
            cache.push(change(rv, 0));
        }
        // 11 was dropped: the oldest kept is 15, so a watch may start at 14 or later.
        assert_eq!(cache.window_start(), 14);
        assert!(cache.since(13).is_none());
        assert_eq!(versions(&cache, 14), Some(vec![15, 20]));
        assert_eq!(versions(&cache, 17), Some(vec![20]));
    }

    #[test]
    fn a_full_ring_of_fresh_events_doubles_up_to_the_upper_bound() {
        let mut cache = WatchCache::new(small(2, 8), 0);
        for rv in 1..=8 {
            cache.push(change(rv, 0));
        }
        assert_eq!(cache.capacity(), 8);
        assert_eq!(cache.window_start(), 0, "nothing dropped while growing");
        cache.push(change(9, 0));
        assert_eq!(cache.capacity(), 8, "the upper bound holds");
        assert_eq!(cache.window_start(), 1);
    }

    #[test]
    fn a_full_ring_of_stale_events_halves_and_moves_the_window() {
        let mut cache = WatchCache::new(small(2, 8), 0);
        for rv in 1..=8 {
            cache.push(change(rv, 0));
        }
        // 100 s later: the oldest is stale, and so is the event a quarter back from the newest.
        cache.push(change(9, 100));
        assert_eq!(cache.capacity(), 4);
        assert_eq!(versions(&cache, 5), Some(vec![6, 7, 8, 9]));
        assert_eq!(cache.window_start(), 5);
    }

    #[test]
    fn rebuilding_forgets_every_event() {
        let mut cache = WatchCache::new(Sizing::default(), 0);
        cache.push(change(1, 0));
        cache.push(change(2, 0));
        cache.rebuild(2);
        assert!(cache.since(1).is_none());
        assert_eq!(versions(&cache, 2), Some(vec![]));
    }
}
