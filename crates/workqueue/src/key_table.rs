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
//!   no allocation per timer and far less memory per waiting key (kube-gc's
//!   `docs/performance.md`), and `get` reaches a key's record by position instead of by hashing
//!   it again.
//! - One record per key (`V`) instead of membership in several sets: `add` and `done` hash the
//!   key once, where the reference looks it up in each set. [`find_mut`](KeyTable::find_mut)
//!   returns a [`KeyEntry`] that can forget the key through the same lookup.
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
//! - Hashing is std's `RandomState` (SipHash-1-3 with per-process random keys). Keys carry names
//!   that cluster users choose, so the hash must resist deliberate collisions (HashDoS); the
//!   queue hashes a key once per `add` and once per `done`, which keeps SipHash's cost small (see
//!   kube-gc's `docs/performance.md`). Of the 64-bit hash, the low bits pick the shard and the
//!   high 32 are kept in the entry, so no bit does both jobs.

use super::chunked_vec::ChunkedVec;
use hashbrown::hash_table::OccupiedEntry;
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

/// A key found to be changed, by [`find_mut`](KeyTable::find_mut): its record, and the index
/// entry it was found through, so that forgetting it takes neither a second hash nor a second
/// probe of the index.
///
/// Like `std`'s `HashMap` entries, it borrows the index and the slots side by side: the queue's
/// one split borrow, kept inside this module so that `done` reads plainly. What it saves is the
/// second probe of the index that forgetting by id would take (a few dozen instructions per
/// `done`); that saving was not benchmarked on its own — the readable `find` + remove-by-id
/// version measured no different within noise, while losing inlining cost 3 % of instructions
/// (kube-gc's `docs/performance.md`).
pub(super) struct KeyEntry<'a, K, V> {
    id: KeyId,
    index_entry: OccupiedEntry<'a, IndexEntry>,
    slots: &'a mut ChunkedVec<Option<(K, V)>>,
    free: &'a mut ChunkedVec<KeyId>,
}

impl<K, V> KeyEntry<'_, K, V> {
    /// The key's id.
    pub(super) fn id(&self) -> KeyId {
        self.id
    }

    /// The key's record, to change.
    #[inline]
    pub(super) fn record(&mut self) -> &mut V {
        let (_, record) = self.slots[self.id.slot()]
            .as_mut()
            .expect("invariant: an indexed slot holds its key");
        record
    }

    /// Forgets the key; its id is free for reuse.
    #[inline]
    pub(super) fn forget(self) {
        self.index_entry.remove();
        self.slots[self.id.slot()] = None;
        self.free.push(self.id);
    }
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

    /// The id of `key`, if the table holds it.
    pub(super) fn find(&self, key: &K) -> Option<KeyId> {
        self.find_hashed(key, self.hash(key))
    }

    /// The record of `key`, if the table holds it.
    pub(super) fn get_by_key(&self, key: &K) -> Option<&V> {
        self.get(self.find(key)?)
    }

    /// `key`, to change its record or forget it, if the table holds it. One hash of the key.
    #[inline]
    pub(super) fn find_mut(&mut self, key: &K) -> Option<KeyEntry<'_, K, V>> {
        let KeyHash { shard, hash } = self.hash(key);
        let slots = &mut self.slots;
        let index_entry = self.index[shard]
            .find_entry(table_hash(hash), |entry| {
                entry.hash == hash && key_of(slots, entry.id) == Some(key)
            })
            .ok()?;
        Some(KeyEntry {
            id: index_entry.get().id,
            index_entry,
            slots,
            free: &mut self.free,
        })
    }

    /// The id of `key`, storing it with the record `make()` first if the table does not hold
    /// it. Returns the id and whether it was inserted. One hash of the key either way.
    #[inline]
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
        key_of(&self.slots, id)
    }

    /// The record of the key `id`.
    pub(super) fn get(&self, id: KeyId) -> Option<&V> {
        self.slots.get(id.slot())?.as_ref().map(|(_, v)| v)
    }

    /// The record of the key `id`, to change.
    pub(super) fn get_mut(&mut self, id: KeyId) -> Option<&mut V> {
        self.slots.get_mut(id.slot())?.as_mut().map(|(_, v)| v)
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
            self.remove(id);
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
    #[inline]
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

    /// Forgets the key `id` (hashing it again to find its index entry).
    fn remove(&mut self, id: KeyId) {
        let Some(key) = self.key(id) else {
            return;
        };
        let KeyHash { shard, hash } = self.hash(key);
        if let Ok(entry) = self.index[shard].find_entry(table_hash(hash), |entry| entry.id == id) {
            entry.remove();
        }
        self.slots[id.slot()] = None;
        self.free.push(id);
    }

    /// Looks `key`, whose hash is `hash`, up in the index.
    #[inline]
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

fn key_of<K, V>(slots: &ChunkedVec<Option<(K, V)>>, id: KeyId) -> Option<&K> {
    slots.get(id.slot())?.as_ref().map(|(k, _)| k)
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
        let entry = table.find_mut(&"a".to_string()).expect("\"a\" is held");
        assert_eq!(entry.id(), a);
        entry.forget();
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
            let found = table.get_by_key(&i).copied();
            assert_eq!(found, (i % 2 == 0).then_some(i));
        }
        assert_eq!(table.iter().count(), 5_000);
    }
}
