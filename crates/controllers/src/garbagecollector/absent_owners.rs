//! The absent-owner cache: owners a live read found missing, so that the next dependent naming
//! the same owner needs no request.
//!
//! Contract: a bounded LRU (upstream: 500 entries). The key is the full owner reference plus the
//! namespace it was looked up in (as upstream since v1.20): an owner absent from one namespace
//! says nothing about another namespace, and a reference with another kind or name is another
//! lookup. Entries never expire on their own: an absence proven for a UID is final, since UIDs
//! are never reused.

use std::collections::{HashMap, VecDeque};

/// Upstream's size.
pub const DEFAULT_CAPACITY: usize = 500;

/// Who was looked up, and where.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct AbsentKey {
    /// `apiVersion` of the reference.
    pub api_version: String,
    /// Kind of the reference.
    pub kind: String,
    /// Name of the reference.
    pub name: String,
    /// UID of the reference.
    pub uid: String,
    /// The namespace it was looked up in (`None` for cluster-scoped owners).
    pub namespace: Option<String>,
}

/// A least-recently-used set of absent owners.
#[derive(Debug)]
pub struct AbsentOwnerCache {
    capacity: usize,
    /// Key → the tick it was last used at.
    entries: HashMap<AbsentKey, u64>,
    /// (tick, key) in use order; stale pairs (older tick than the entry's) are skipped.
    order: VecDeque<(u64, AbsentKey)>,
    tick: u64,
}

impl AbsentOwnerCache {
    /// An empty cache holding at most `capacity` owners.
    pub fn new(capacity: usize) -> AbsentOwnerCache {
        AbsentOwnerCache {
            capacity: capacity.max(1),
            entries: HashMap::new(),
            order: VecDeque::new(),
            tick: 0,
        }
    }

    /// Whether `key` was found absent; a hit counts as a use.
    pub fn contains(&mut self, key: &AbsentKey) -> bool {
        if !self.entries.contains_key(key) {
            return false;
        }
        self.touch(key.clone());
        true
    }

    /// Records `key` as absent, evicting the least recently used owner when full.
    pub fn insert(&mut self, key: AbsentKey) {
        self.touch(key);
        while self.entries.len() > self.capacity {
            self.evict_one();
        }
    }

    /// Number of owners held.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// Whether the cache is empty.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    fn touch(&mut self, key: AbsentKey) {
        self.tick += 1;
        self.entries.insert(key.clone(), self.tick);
        self.order.push_back((self.tick, key));
        // Keep the order log from growing without bound on hits.
        if self.order.len() > self.capacity * 4 {
            let entries = &self.entries;
            self.order.retain(|(tick, k)| entries.get(k) == Some(tick));
        }
    }

    fn evict_one(&mut self) {
        while let Some((tick, key)) = self.order.pop_front() {
            if self.entries.get(&key) == Some(&tick) {
                self.entries.remove(&key);
                return;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(name: &str, namespace: Option<&str>) -> AbsentKey {
        AbsentKey {
            api_version: "v1".into(),
            kind: "ConfigMap".into(),
            name: name.into(),
            uid: format!("uid-{name}"),
            namespace: namespace.map(str::to_owned),
        }
    }

    #[test]
    fn the_least_recently_used_owner_is_evicted_first() {
        let mut cache = AbsentOwnerCache::new(2);
        cache.insert(key("a", Some("ns")));
        cache.insert(key("b", Some("ns")));
        assert!(cache.contains(&key("a", Some("ns"))));
        cache.insert(key("c", Some("ns")));
        assert!(cache.contains(&key("a", Some("ns"))));
        assert!(!cache.contains(&key("b", Some("ns"))));
        assert!(cache.contains(&key("c", Some("ns"))));
        assert_eq!(cache.len(), 2);
    }

    #[test]
    fn the_namespace_is_part_of_the_key() {
        let mut cache = AbsentOwnerCache::new(DEFAULT_CAPACITY);
        cache.insert(key("a", Some("one")));
        assert!(!cache.contains(&key("a", Some("two"))));
        assert!(!cache.contains(&key("a", None)));
    }

    #[test]
    fn many_hits_keep_the_order_log_bounded() {
        let mut cache = AbsentOwnerCache::new(2);
        cache.insert(key("a", None));
        for _ in 0..100 {
            assert!(cache.contains(&key("a", None)));
        }
        assert!(cache.order.len() <= 8);
    }
}
