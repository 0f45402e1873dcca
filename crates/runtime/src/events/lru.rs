//! [`Lru`]: a map of bounded size that forgets its least recently used entry, as the caches of
//! client-go's event correlator do (4,096 entries each).
//!
//! Contract: `get_mut` and `insert` mark an entry used; inserting into a full map evicts the
//! least recently used entry. Both are O(log n).

use std::collections::{BTreeMap, HashMap};
use std::hash::Hash;

/// A least-recently-used map.
#[derive(Debug)]
pub struct Lru<K, V> {
    capacity: usize,
    entries: HashMap<K, (V, u64)>,
    /// use tick → key, oldest first.
    order: BTreeMap<u64, K>,
    tick: u64,
}

impl<K: Clone + Eq + Hash, V> Lru<K, V> {
    /// An empty map holding at most `capacity` entries (at least one).
    pub fn new(capacity: usize) -> Self {
        Lru {
            capacity: capacity.max(1),
            entries: HashMap::new(),
            order: BTreeMap::new(),
            tick: 0,
        }
    }

    fn touch(&mut self, key: &K) -> u64 {
        self.tick += 1;
        if let Some((_, used)) = self.entries.get_mut(key) {
            self.order.remove(used);
            *used = self.tick;
            self.order.insert(self.tick, key.clone());
        }
        self.tick
    }

    /// The entry for `key`, marked used.
    pub fn get_mut(&mut self, key: &K) -> Option<&mut V> {
        self.touch(key);
        self.entries.get_mut(key).map(|(value, _)| value)
    }

    /// Inserts or replaces `key`, evicting the least recently used entry if full.
    pub fn insert(&mut self, key: K, value: V) {
        if let Some((_, used)) = self.entries.remove(&key) {
            self.order.remove(&used);
        } else if self.entries.len() >= self.capacity {
            if let Some((_, oldest)) = self.order.pop_first() {
                self.entries.remove(&oldest);
            }
        }
        self.tick += 1;
        self.order.insert(self.tick, key.clone());
        self.entries.insert(key, (value, self.tick));
    }

    /// The number of entries.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// Whether the map is empty.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_least_recently_used_entry_goes_first() {
        let mut lru = Lru::new(2);
        lru.insert("a", 1);
        lru.insert("b", 2);
        *lru.get_mut(&"a").unwrap() += 10; // a is now the most recent
        lru.insert("c", 3);
        assert_eq!(lru.len(), 2);
        assert!(lru.get_mut(&"b").is_none());
        assert_eq!(lru.get_mut(&"a").copied(), Some(11));
        lru.insert("a", 0); // replacing does not evict
        assert_eq!(lru.len(), 2);
        assert_eq!(lru.get_mut(&"c").copied(), Some(3));
    }
}
