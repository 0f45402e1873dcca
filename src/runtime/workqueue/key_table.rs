//! Where the queue keeps its keys: each key is stored **once**, in a slab slot, and everything
//! else in the queue (the ready FIFO, the timer heap) refers to it by its slot number, a `u32`.
//!
//! - The slab is a [`ChunkedVec`] of slots; a freed slot goes on a free list and is reused, so
//!   the slab never grows beyond the highest number of keys known at once, and it grows a chunk
//!   at a time, never copying the keys it holds.
//! - An index maps a key to its slot: [`INDEX_SHARDS`] `hashbrown::HashTable`s (the raw table
//!   under std's `HashMap`), the key's hash choosing the shard. Each entry is 8 bytes, the slot
//!   number and 32 bits of the key's hash; the index asks the slab for the key only to compare,
//!   so the key is never copied into it.
//! - Growth is what shapes the index. A hash table grows by re-filing every entry into a table
//!   twice the size, in one step, under the queue's lock. At a million keys that step took 200 ms
//!   when it re-hashed each key through the slab; keeping the hash in the entry made it one pass
//!   over the table, 6.5–7.7 ms (measured); splitting the index into shards that fill evenly and
//!   grow one at a time divides that pause by the number of shards.
//! - Hashing is std's `RandomState` (SipHash-1-3 with per-process random keys). Keys are
//!   `namespace/name` strings that cluster users choose, so the hash must resist deliberate
//!   collisions (HashDoS); the queue hashes a key once per `add` and once per `done`, which keeps
//!   SipHash's cost small (see `docs/performance.md`). Of the 64-bit hash, the low bits pick the
//!   shard and the high 32 are kept in the entry, so no bit does both jobs.
//!
//! Why slots rather than a `HashMap<K, Entry>`: the FIFO and the heap hold 4-byte numbers instead
//! of clones of the key (no allocation per timer, far less memory), and `get` reaches a key's
//! record by position instead of by hashing it again.

use super::chunked_vec::ChunkedVec;
use hashbrown::HashTable;
use std::hash::{BuildHasher, Hash, RandomState};

/// Shards of the index. At a million keys each holds about 4,000, and growing one re-files (and
/// faults in fresh memory for) a 256th of what growing a single table did: a fraction of a
/// millisecond instead of 7 ms. Empty shards allocate nothing.
pub(super) const INDEX_SHARDS: usize = 256;

/// The number of a slot in the slab.
pub(super) type SlotId = u32;

/// An entry of the index: where the key is, and 32 bits of its hash.
#[derive(Debug, Clone, Copy)]
struct IndexEntry {
    slot: SlotId,
    hash: u32,
}

/// The hash the table files an entry under, made from the 32 bits the entry keeps: the table
/// picks buckets with the low bits and filters with the top 7, so both halves carry the hash.
fn table_hash(hash: u32) -> u64 {
    (u64::from(hash) << 32) | u64::from(hash)
}

/// Keys stored once, each with a record `V`, addressed by key or by [`SlotId`].
pub(super) struct KeyTable<K, V> {
    slots: ChunkedVec<Option<(K, V)>>,
    free: ChunkedVec<SlotId>,
    /// `INDEX_SHARDS` tables; see [`KeyHash`] for which one holds a key.
    index: Box<[HashTable<IndexEntry>]>,
    hasher: RandomState,
}

/// A key's hash, split into the shard of the index that holds the key and the 32 bits its
/// entry keeps.
#[derive(Debug, Clone, Copy)]
struct KeyHash {
    shard: usize,
    hash: u32,
}

impl<K: Eq + Hash, V> KeyTable<K, V> {
    pub(super) fn new() -> Self {
        KeyTable {
            slots: ChunkedVec::default(),
            free: ChunkedVec::default(),
            index: (0..INDEX_SHARDS).map(|_| HashTable::new()).collect(),
            hasher: RandomState::new(),
        }
    }

    /// The slot of `key`, if the table holds it.
    pub(super) fn find(&self, key: &K) -> Option<SlotId> {
        let KeyHash { shard, hash } = self.hash(key);
        let slots = &self.slots;
        self.index[shard]
            .find(table_hash(hash), |entry| {
                is_entry_of(slots, entry, key, hash)
            })
            .map(|entry| entry.slot)
    }

    /// The slot of `key`, storing it with the record `make()` first if the table does not hold
    /// it. Returns the slot and whether it was inserted. One hash of the key either way.
    pub(super) fn find_or_insert(&mut self, key: K, make: impl FnOnce() -> V) -> (SlotId, bool) {
        let KeyHash { shard, hash } = self.hash(&key);
        let slots = &self.slots;
        let index = &mut self.index[shard];
        if let Some(entry) = index.find(table_hash(hash), |entry| {
            is_entry_of(slots, entry, &key, hash)
        }) {
            return (entry.slot, false);
        }
        let slot = match self.free.pop() {
            Some(slot) => {
                self.slots[slot as usize] = Some((key, make()));
                slot
            }
            None => SlotId::try_from(self.slots.push(Some((key, make()))))
                .expect("more than 4 billion keys in one workqueue"),
        };
        let entry = IndexEntry { slot, hash };
        index.insert_unique(table_hash(hash), entry, |entry| table_hash(entry.hash));
        (slot, true)
    }

    /// The key in slot `slot`.
    pub(super) fn key(&self, slot: SlotId) -> Option<&K> {
        key_of(&self.slots, slot)
    }

    /// The record in slot `slot`.
    pub(super) fn get(&self, slot: SlotId) -> Option<&V> {
        self.slots.get(slot as usize)?.as_ref().map(|(_, v)| v)
    }

    /// The record in slot `slot`, to change.
    pub(super) fn get_mut(&mut self, slot: SlotId) -> Option<&mut V> {
        self.slots.get_mut(slot as usize)?.as_mut().map(|(_, v)| v)
    }

    /// Finds `key` and lets `f` read and change its record; `f` returns its result and whether
    /// to forget the key. Returns `None` if the table does not hold `key`. One hash of the key,
    /// even when it is forgotten.
    pub(super) fn update<R>(
        &mut self,
        key: &K,
        f: impl FnOnce(SlotId, &mut V) -> (R, bool),
    ) -> Option<R> {
        let KeyHash { shard, hash } = self.hash(key);
        let slots = &mut self.slots;
        let entry = self.index[shard]
            .find_entry(table_hash(hash), |entry| {
                is_entry_of(slots, entry, key, hash)
            })
            .ok()?;
        let slot = entry.get().slot;
        let (_, record) = slots.get_mut(slot as usize)?.as_mut()?;
        let (result, forget) = f(slot, record);
        if forget {
            entry.remove();
            slots[slot as usize] = None;
            self.free.push(slot);
        }
        Some(result)
    }

    /// Forgets the key in slot `slot` and frees the slot for reuse.
    pub(super) fn remove(&mut self, slot: SlotId) {
        let Some(key) = self.key(slot) else {
            return;
        };
        let KeyHash { shard, hash } = self.hash(key);
        if let Ok(entry) =
            self.index[shard].find_entry(table_hash(hash), |entry| entry.slot == slot)
        {
            entry.remove();
        }
        self.slots[slot as usize] = None;
        self.free.push(slot);
    }

    /// Keeps only the keys whose record `keep` approves of (and may change).
    pub(super) fn retain(&mut self, mut keep: impl FnMut(&mut V) -> bool) {
        let doomed: Vec<SlotId> = (0..self.slots.len() as SlotId)
            .filter(|&slot| self.get_mut(slot).is_some_and(|v| !keep(v)))
            .collect();
        for slot in doomed {
            self.remove(slot);
        }
    }

    /// Keys held.
    #[cfg(test)]
    pub(super) fn len(&self) -> usize {
        self.index.iter().map(HashTable::len).sum()
    }

    /// Every key and its record, in no particular order.
    #[cfg(test)]
    pub(super) fn iter(&self) -> impl Iterator<Item = (SlotId, &K, &V)> {
        self.slots
            .iter()
            .enumerate()
            .filter_map(|(slot, entry)| entry.as_ref().map(|(k, v)| (slot as SlotId, k, v)))
    }

    /// The key's SipHash: its low bits pick the shard, its high 32 bits go in the entry. A
    /// million keys share their 32 bits with another key only about a hundred times; those few
    /// are told apart by comparing the keys.
    fn hash(&self, key: &K) -> KeyHash {
        let full = self.hasher.hash_one(key);
        KeyHash {
            shard: full as usize % INDEX_SHARDS,
            hash: (full >> 32) as u32,
        }
    }
}

/// Whether `entry` is the index entry of `key`, whose hash is `hash`.
fn is_entry_of<K: Eq, V>(
    slots: &ChunkedVec<Option<(K, V)>>,
    entry: &IndexEntry,
    key: &K,
    hash: u32,
) -> bool {
    entry.hash == hash && key_of(slots, entry.slot) == Some(key)
}

fn key_of<K, V>(slots: &ChunkedVec<Option<(K, V)>>, slot: SlotId) -> Option<&K> {
    slots.get(slot as usize)?.as_ref().map(|(k, _)| k)
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
