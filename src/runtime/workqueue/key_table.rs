//! Where the queue keeps its keys: each key is stored **once**, in a slab slot, and everything
//! else in the queue (the ready FIFO, the timer heap) refers to it by its slot number, a `u32`.
//!
//! - The slab is a `Vec` of slots; a freed slot goes on a free list and is reused, so the slab
//!   never grows beyond the highest number of keys known at once.
//! - An index maps a key to its slot: a `hashbrown::HashTable<u32>`, the raw table under std's
//!   `HashMap`. It stores only the 4-byte slot numbers and asks the slab for the key when it needs
//!   to compare or re-hash, so the key is never copied into the index.
//! - Hashing is std's `RandomState` (SipHash-1-3 with per-process random keys). Keys are
//!   `namespace/name` strings that cluster users choose, so the hash must resist deliberate
//!   collisions (HashDoS); the queue hashes a key once per `add` and once per `done`, which keeps
//!   SipHash's cost small (see `docs/performance.md`).
//!
//! Why slots rather than a `HashMap<K, Entry>`: the FIFO and the heap hold 4-byte numbers instead
//! of clones of the key (no allocation per timer, far less memory), and `get` reaches a key's
//! record by position instead of by hashing it again.

use hashbrown::HashTable;
use std::hash::{BuildHasher, Hash, RandomState};

/// The number of a slot in the slab.
pub(super) type SlotId = u32;

/// Keys stored once, each with a record `V`, addressed by key or by [`SlotId`].
pub(super) struct KeyTable<K, V> {
    slots: Vec<Option<(K, V)>>,
    free: Vec<SlotId>,
    index: HashTable<SlotId>,
    hasher: RandomState,
}

impl<K: Eq + Hash, V> KeyTable<K, V> {
    pub(super) fn new() -> Self {
        KeyTable {
            slots: Vec::new(),
            free: Vec::new(),
            index: HashTable::new(),
            hasher: RandomState::new(),
        }
    }

    /// The slot of `key`, if the table holds it.
    pub(super) fn find(&self, key: &K) -> Option<SlotId> {
        let slots = &self.slots;
        self.index
            .find(self.hasher.hash_one(key), |&id| {
                key_of(slots, id) == Some(key)
            })
            .copied()
    }

    /// The slot of `key`, storing it with the record `make()` first if the table does not hold
    /// it. Returns the slot and whether it was inserted. One hash of the key either way.
    pub(super) fn find_or_insert(&mut self, key: K, make: impl FnOnce() -> V) -> (SlotId, bool) {
        let hash = self.hasher.hash_one(&key);
        if let Some(&id) = self
            .index
            .find(hash, |&id| key_of(&self.slots, id) == Some(&key))
        {
            return (id, false);
        }
        let id = match self.free.pop() {
            Some(id) => {
                self.slots[id as usize] = Some((key, make()));
                id
            }
            None => {
                let id = SlotId::try_from(self.slots.len())
                    .expect("more than 4 billion keys in one workqueue");
                self.slots.push(Some((key, make())));
                id
            }
        };
        let (slots, hasher) = (&self.slots, &self.hasher);
        self.index
            .insert_unique(hash, id, |&id| match key_of(slots, id) {
                Some(key) => hasher.hash_one(key),
                None => 0, // unreachable: the index holds only occupied slots
            });
        (id, true)
    }

    /// The key in slot `id`.
    pub(super) fn key(&self, id: SlotId) -> Option<&K> {
        key_of(&self.slots, id)
    }

    /// The record in slot `id`.
    pub(super) fn get(&self, id: SlotId) -> Option<&V> {
        self.slots.get(id as usize)?.as_ref().map(|(_, v)| v)
    }

    /// The record in slot `id`, to change.
    pub(super) fn get_mut(&mut self, id: SlotId) -> Option<&mut V> {
        self.slots.get_mut(id as usize)?.as_mut().map(|(_, v)| v)
    }

    /// Finds `key` and lets `f` read and change its record; `f` returns its result and whether
    /// to forget the key. Returns `None` if the table does not hold `key`. One hash of the key,
    /// even when it is forgotten.
    pub(super) fn update<R>(
        &mut self,
        key: &K,
        f: impl FnOnce(SlotId, &mut V) -> (R, bool),
    ) -> Option<R> {
        let hash = self.hasher.hash_one(key);
        let slots = &mut self.slots;
        let entry = self
            .index
            .find_entry(hash, |&id| key_of(slots, id) == Some(key))
            .ok()?;
        let id = *entry.get();
        let (_, record) = slots.get_mut(id as usize)?.as_mut()?;
        let (result, forget) = f(id, record);
        if forget {
            entry.remove();
            slots[id as usize] = None;
            self.free.push(id);
        }
        Some(result)
    }

    /// Forgets the key in slot `id` and frees the slot for reuse.
    pub(super) fn remove(&mut self, id: SlotId) {
        let Some((key, _)) = self.slots.get(id as usize).and_then(Option::as_ref) else {
            return;
        };
        let hash = self.hasher.hash_one(key);
        if let Ok(entry) = self.index.find_entry(hash, |&other| other == id) {
            entry.remove();
        }
        self.slots[id as usize] = None;
        self.free.push(id);
    }

    /// Keeps only the keys whose record `keep` approves of (and may change).
    pub(super) fn retain(&mut self, mut keep: impl FnMut(&mut V) -> bool) {
        let doomed: Vec<SlotId> = (0..self.slots.len() as SlotId)
            .filter(|&id| self.get_mut(id).is_some_and(|v| !keep(v)))
            .collect();
        for id in doomed {
            self.remove(id);
        }
    }

    /// Keys held.
    #[cfg(test)]
    pub(super) fn len(&self) -> usize {
        self.index.len()
    }

    /// Every key and its record, in no particular order.
    #[cfg(test)]
    pub(super) fn iter(&self) -> impl Iterator<Item = (SlotId, &K, &V)> {
        self.slots
            .iter()
            .enumerate()
            .filter_map(|(id, slot)| slot.as_ref().map(|(k, v)| (id as SlotId, k, v)))
    }
}

fn key_of<K, V>(slots: &[Option<(K, V)>], id: SlotId) -> Option<&K> {
    slots.get(id as usize)?.as_ref().map(|(k, _)| k)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_are_stored_once_and_slots_are_reused() {
        let mut table: KeyTable<String, u8> = KeyTable::new();
        let (a, new_a) = table.find_or_insert("a".to_string(), || 1);
        let (b, _) = table.find_or_insert("b".to_string(), || 2);
        let (a_again, new_again) = table.find_or_insert("a".to_string(), || 9);
        assert!(new_a && !new_again);
        assert_eq!(a, a_again);
        assert_eq!(
            table.get(a),
            Some(&1),
            "the second insert kept the first record"
        );
        assert_eq!(table.find(&"b".to_string()), Some(b));
        assert_eq!(table.len(), 2);
        table.remove(a);
        assert_eq!(table.find(&"a".to_string()), None);
        assert_eq!(table.get(a), None);
        let (c, _) = table.find_or_insert("c".to_string(), || 3);
        assert_eq!(c, a, "the freed slot is reused");
        assert_eq!(table.key(c).map(String::as_str), Some("c"));
        assert_eq!(table.len(), 2);
    }

    #[test]
    fn the_index_survives_growth_and_retain() {
        let mut table: KeyTable<u32, u32> = KeyTable::new();
        for i in 0..10_000 {
            let _ = table.find_or_insert(i, || i);
        }
        table.retain(|v| *v % 2 == 0);
        assert_eq!(table.len(), 5_000);
        for i in 0..10_000 {
            let found = table.find(&i).and_then(|id| table.get(id)).copied();
            assert_eq!(found, (i % 2 == 0).then_some(i));
        }
        assert_eq!(table.iter().count(), 5_000);
    }
}
