//! Where the queue keeps its keys: each key is stored **once**, in a slab slot, and everything
//! else in the queue (the ready FIFO, the timer heap) refers to it by a [`KeyId`], a 4-byte
//! handle. The slots are this module's business: the queue's state speaks of keys and their
//! ids, never of slot numbers.
//!
//! *What it adds over the reference* (`reference.rs` keeps the key itself in every collection:
//! a `HashSet` of dirty keys, one of keys being processed, a `VecDeque` of ready keys, maps of
//! timers), and what that buys:
//!
//! - The key is stored once, and the FIFO and the heap hold 4-byte ids instead of clones of it:
//!   no allocation per timer and far less memory per waiting key (`docs/performance.md`), and
//!   `get` reaches a key's record by position instead of by hashing it again.
//! - One record per key (`V`) instead of membership in several sets: `add` and `done` hash the
//!   key once, where the reference looks it up in each set. [`find`](KeyTable::find) returns the
//!   hash it used, so that [`forget`](KeyTable::forget) after it hashes nothing again.
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

use super::chunked_vec::ChunkedVec;
use hashbrown::HashTable;
use std::hash::{BuildHasher, Hash, RandomState};

/// Shards of the index. At a million keys each holds about 4,000, and growing one re-files (and
/// faults in fresh memory for) a 256th of what growing a single table did: a fraction of a
/// millisecond instead of 7 ms. Empty shards allocate nothing.
pub(super) const INDEX_SHARDS: usize = 256;

/// A key held by a [`KeyTable`]: a handle that stays valid until the key is forgotten (its
/// number is then reused for another key, so the holder must know the key is still there).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub(super) struct KeyId(u32);

impl KeyId {
    fn slot(self) -> usize {
        self.0 as usize
    }
}

/// A key [`find`](KeyTable::find) found: its id, and the hash it was found by, so that
/// [`forget`](KeyTable::forget)ting it needs no second hash.
#[derive(Debug, Clone, Copy)]
pub(super) struct Found {
    pub(super) id: KeyId,
    hash: KeyHash,
}

/// An entry of the index: where the key is, and 32 bits of its hash.
#[derive(Debug, Clone, Copy)]
struct IndexEntry {
    id: KeyId,
    hash: u32,
}

/// The hash the table files an entry under, made from the 32 bits the entry keeps: the table
/// picks buckets with the low bits and filters with the top 7, so both halves carry the hash.
fn table_hash(hash: u32) -> u64 {
    (u64::from(hash) << 32) | u64::from(hash)
}

/// Keys stored once, each with a record `V`, addressed by key or by [`KeyId`].
pub(super) struct KeyTable<K, V> {
    slots: ChunkedVec<Option<(K, V)>>,
    free: ChunkedVec<KeyId>,
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

    /// `key`, if the table holds it.
    pub(super) fn find(&self, key: &K) -> Option<Found> {
        let hash = self.hash(key);
        let id = self.find_hashed(key, hash)?;
        Some(Found { id, hash })
    }

    /// The record of `key`, if the table holds it.
    pub(super) fn get_by_key(&self, key: &K) -> Option<&V> {
        self.get(self.find(key)?.id)
    }

    /// The id of `key`, storing it with the record `make()` first if the table does not hold
    /// it. Returns the id and whether it was inserted. One hash of the key either way.
    pub(super) fn find_or_insert(&mut self, key: K, make: impl FnOnce() -> V) -> (KeyId, bool) {
        let hash = self.hash(&key);
        if let Some(id) = self.find_hashed(&key, hash) {
            return (id, false);
        }
        let id = self.store(key, make());
        let entry = IndexEntry {
            id,
            hash: hash.hash,
        };
        self.index[hash.shard]
            .insert_unique(table_hash(hash.hash), entry, |entry| table_hash(entry.hash));
        (id, true)
    }

    /// The key `id` stands for.
    pub(super) fn key(&self, id: KeyId) -> Option<&K> {
        self.slots.get(id.slot())?.as_ref().map(|(k, _)| k)
    }

    /// The record of the key `id`.
    pub(super) fn get(&self, id: KeyId) -> Option<&V> {
        self.slots.get(id.slot())?.as_ref().map(|(_, v)| v)
    }

    /// The record of the key `id`, to change.
    pub(super) fn get_mut(&mut self, id: KeyId) -> Option<&mut V> {
        self.slots.get_mut(id.slot())?.as_mut().map(|(_, v)| v)
    }

    /// Forgets a key found by [`find`](Self::find) (without hashing it again); its id is free for
    /// reuse.
    pub(super) fn forget(&mut self, found: Found) {
        let Found { id, hash } = found;
        if let Ok(entry) =
            self.index[hash.shard].find_entry(table_hash(hash.hash), |entry| entry.id == id)
        {
            entry.remove();
        }
        self.slots[id.slot()] = None;
        self.free.push(id);
    }

    /// Keeps only the keys whose record `keep` approves of (and may change).
    pub(super) fn retain(&mut self, mut keep: impl FnMut(&mut V) -> bool) {
        let mut doomed = Vec::new();
        for slot in 0..self.slots.len() {
            let id = KeyId(slot as u32);
            if self.get_mut(id).is_some_and(|v| !keep(v)) {
                doomed.push(id);
            }
        }
        for id in doomed {
            if let Some(key) = self.key(id) {
                let hash = self.hash(key);
                self.forget(Found { id, hash });
            }
        }
    }

    /// Keys held.
    #[cfg(test)]
    pub(super) fn len(&self) -> usize {
        self.index.iter().map(HashTable::len).sum()
    }

    /// Every key and its record, in no particular order.
    #[cfg(test)]
    pub(super) fn iter(&self) -> impl Iterator<Item = (KeyId, &K, &V)> {
        self.slots.iter().enumerate().filter_map(|(slot, entry)| {
            let (k, v) = entry.as_ref()?;
            Some((KeyId(slot as u32), k, v))
        })
    }

    /// Puts `key` and its record in a free slot, or a new one.
    fn store(&mut self, key: K, record: V) -> KeyId {
        match self.free.pop() {
            Some(id) => {
                self.slots[id.slot()] = Some((key, record));
                id
            }
            None => {
                let slot = self.slots.push(Some((key, record)));
                KeyId(u32::try_from(slot).expect("more than 4 billion keys in one workqueue"))
            }
        }
    }

    /// Looks `key`, whose hash is `hash`, up in the index.
    fn find_hashed(&self, key: &K, hash: KeyHash) -> Option<KeyId> {
        let is_key =
            |entry: &IndexEntry| entry.hash == hash.hash && self.key(entry.id) == Some(key);
        let entry = self.index[hash.shard].find(table_hash(hash.hash), is_key)?;
        Some(entry.id)
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
        assert_eq!(table.find(&"b".to_string()).map(|f| f.id), Some(b));
        assert_eq!(table.len(), 2);
        let found = table.find(&"a".to_string()).expect("\"a\" is held");
        assert_eq!(found.id, a);
        table.forget(found);
        assert!(table.find(&"a".to_string()).is_none());
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
            let found = table.get_by_key(&i).copied();
            assert_eq!(found, (i % 2 == 0).then_some(i));
        }
        assert_eq!(table.iter().count(), 5_000);
    }
}
