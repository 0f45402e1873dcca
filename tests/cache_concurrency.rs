//! Concurrency tests of `runtime::cache::Store`: readers on several threads while one writer
//! replaces and modifies. No sleeping: readers spin until the writer says it is done, and every
//! assertion must hold under any interleaving.
//!
//! Every object the writer stores in round `r` has version `r` and owner `owner-{r % 3}`, and
//! carries a checksum of its own fields, so a reader can tell a complete object from a torn one
//! and an object from its index entry.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Barrier};

use kube_gc::runtime::cache::{Cacheable, ObjectKey, Store};

const KEYS: usize = 300;
const ROUNDS: u64 = 150;
const READERS: usize = 3;

#[derive(Debug)]
struct Versioned {
    key: ObjectKey,
    version: String,
    round: u64,
    owner: String,
    /// A function of all the other fields: a torn object would not match it.
    checksum: u64,
}

impl Versioned {
    fn new(index: usize, round: u64) -> Self {
        let key = ObjectKey::new("ns", &format!("obj-{index}"));
        let owner = owner_of(round).to_owned();
        let checksum = checksum(&key, round, &owner);
        Versioned {
            key,
            version: round.to_string(),
            round,
            owner,
            checksum,
        }
    }

    fn is_whole(&self) -> bool {
        self.version == self.round.to_string()
            && self.owner == owner_of(self.round)
            && self.checksum == checksum(&self.key, self.round, &self.owner)
    }
}

fn owner_of(round: u64) -> &'static str {
    ["owner-0", "owner-1", "owner-2"][(round % 3) as usize]
}

fn checksum(key: &ObjectKey, round: u64, owner: &str) -> u64 {
    key.as_str()
        .bytes()
        .chain(owner.bytes())
        .fold(round, |sum, byte| {
            sum.wrapping_mul(31).wrapping_add(u64::from(byte))
        })
}

impl Cacheable for Versioned {
    fn cache_key(&self) -> ObjectKey {
        self.key.clone()
    }
    fn resource_version(&self) -> &str {
        &self.version
    }
    fn uid(&self) -> &str {
        self.key.as_str()
    }
}

fn by_owner(obj: &Versioned) -> Vec<String> {
    vec![obj.owner.clone()]
}

/// Round `round`'s full list.
fn list(round: u64) -> Vec<Versioned> {
    (0..KEYS).map(|i| Versioned::new(i, round)).collect()
}

/// The writer: each round relists everything at a new version, then modifies a few objects
/// to the next version through watch-style writes, so reads race both kinds of write.
fn write_rounds(store: &Store<Versioned>) {
    for round in (2..=ROUNDS).step_by(2) {
        let diff = store.replace(list(round), &round.to_string());
        assert!(diff.deleted.is_empty() && diff.added.is_empty());
        for i in (0..KEYS).step_by(7) {
            store.apply_modified(Versioned::new(i, round + 1));
        }
    }
}

/// One reader: checks every answer, at least once and then until the writer is done.
fn read_until(store: &Store<Versioned>, done: &AtomicBool) {
    let mut last_seen: HashMap<ObjectKey, u64> = HashMap::new();
    let keys: Vec<ObjectKey> = (0..KEYS)
        .map(|i| ObjectKey::new("ns", &format!("obj-{i}")))
        .collect();
    loop {
        for key in keys.iter().step_by(13) {
            let object = store
                .get(key)
                .expect("every key stays cached through relists");
            assert!(object.is_whole(), "torn object {object:?}");
            let previous = last_seen.insert(key.clone(), object.round).unwrap_or(0);
            assert!(
                object.round >= previous,
                "{key} went back from {previous} to {}",
                object.round
            );
        }
        for object in store.list_namespace("ns") {
            assert!(object.is_whole(), "torn object {object:?}");
        }
        for owner in ["owner-0", "owner-1", "owner-2"] {
            for object in store.by_index("owner", owner).expect("index exists") {
                // The index and the objects change under one lock: no stale entry.
                assert_eq!(
                    object.owner, owner,
                    "{} filed under a stale owner",
                    object.key
                );
            }
        }
        assert_eq!(store.len(), KEYS);
        if done.load(Ordering::Acquire) {
            return;
        }
    }
}

#[test]
fn readers_never_see_torn_objects_stale_index_entries_or_time_going_backwards() {
    let store: Store<Versioned> = Store::builder().shards(8).index("owner", by_owner).build();
    store.replace(list(1), "1");
    let done = AtomicBool::new(false);
    // Everyone starts together, so the reads overlap the writes.
    let start = Barrier::new(READERS + 1);
    std::thread::scope(|scope| {
        let readers: Vec<_> = (0..READERS)
            .map(|_| {
                scope.spawn(|| {
                    start.wait();
                    read_until(&store, &done)
                })
            })
            .collect();
        start.wait();
        write_rounds(&store);
        done.store(true, Ordering::Release);
        for reader in readers {
            reader.join().expect("reader thread panicked");
        }
    });
    // The final contents: the last relist plus the modifications after it.
    for (i, object) in (0..KEYS).map(|i| (i, store.get(&ObjectKey::new("ns", &format!("obj-{i}")))))
    {
        let expected = if i % 7 == 0 { ROUNDS + 1 } else { ROUNDS };
        assert_eq!(object.map(|o| o.round), Some(expected));
    }
    assert_eq!(
        store.last_sync_resource_version(),
        Some((ROUNDS + 1).to_string())
    );
}

#[test]
fn a_replace_is_atomic_per_shard_so_a_one_shard_list_never_mixes_versions() {
    // With a single shard every list() reads one shard under one lock: it must see one whole
    // relist, never part of two.
    let store: Store<Versioned> = Store::builder().shards(1).build();
    store.replace(list(1), "1");
    let done = AtomicBool::new(false);
    let start = Barrier::new(2);
    std::thread::scope(|scope| {
        let reader = scope.spawn(|| {
            start.wait();
            loop {
                let objects = store.list();
                assert_eq!(objects.len(), KEYS);
                let first = objects[0].round;
                assert!(
                    objects.iter().all(|o| o.round == first),
                    "a list mixed two relists"
                );
                if done.load(Ordering::Acquire) {
                    return;
                }
            }
        });
        start.wait();
        for round in 2..=ROUNDS {
            store.replace(list(round), &round.to_string());
        }
        done.store(true, Ordering::Release);
        reader.join().expect("reader thread panicked");
    });
}

#[test]
fn readers_on_tokio_tasks_see_the_same_guarantees() {
    // The store is synchronous: tasks call it directly, and no guard can live across an
    // .await because none escapes a method.
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .build()
        .expect("a tokio runtime");
    let store: Arc<Store<Versioned>> =
        Arc::new(Store::builder().shards(4).index("owner", by_owner).build());
    store.replace(list(1), "1");
    let done = Arc::new(AtomicBool::new(false));
    runtime.block_on(async {
        let readers: Vec<_> = (0..READERS)
            .map(|_| {
                let (store, done) = (Arc::clone(&store), Arc::clone(&done));
                tokio::spawn(async move {
                    loop {
                        for object in store.list() {
                            assert!(object.is_whole(), "torn object {object:?}");
                        }
                        if done.load(Ordering::Acquire) {
                            return;
                        }
                        // Lets the other readers run on this worker thread.
                        tokio::task::yield_now().await;
                    }
                })
            })
            .collect();
        let writer = {
            let (store, done) = (Arc::clone(&store), Arc::clone(&done));
            tokio::task::spawn_blocking(move || {
                write_rounds(&store);
                done.store(true, Ordering::Release);
            })
        };
        writer.await.expect("writer panicked");
        for reader in readers {
            reader.await.expect("reader panicked");
        }
    });
}
