//! What a relist changed: [`ReplaceDiff`], and the tombstone a shared informer delivers for an
//! object that vanished while nobody was watching ([`Tombstone`], client-go's
//! `DeletedFinalStateUnknown`).
//!
//! Contract: [`merge_shard`] compares a shard's cached objects with the same shard's slice of a
//! new list, in one ordered pass, and yields the shard's new contents plus the notifications:
//! - a key only in the new list is **added**;
//! - a key in both is **updated** (old, new) unless both carry the same non-empty
//!   resourceVersion, in which case the object has not changed, nothing is reported, and the
//!   cached `Arc` is kept (readers holding it still hold the current state);
//! - a key only in the cache is **deleted**, as a tombstone carrying the last state the cache
//!   knew, because the real final state (and the deletion itself) happened during a gap in the
//!   watch and was never seen.

use std::collections::BTreeMap;
use std::sync::Arc;

use super::Cacheable;
use super::ObjectKey;

/// The notifications a relist (`Store::replace`) owes the informer's handlers.
#[derive(Debug)]
pub struct ReplaceDiff<T> {
    /// Objects the cache did not hold before.
    pub added: Vec<Arc<T>>,
    /// Objects whose resourceVersion changed (or was unknown).
    pub updated: Vec<Updated<T>>,
    /// Objects the cache held that the new list lacks.
    pub deleted: Vec<Tombstone<T>>,
}

/// One object's state before and after a change.
#[derive(Debug)]
pub struct Updated<T> {
    /// The state the cache held.
    pub old: Arc<T>,
    /// The state now stored.
    pub new: Arc<T>,
}

/// A deletion learnt from a relist rather than from a watch event: the object is gone, and
/// `last_known` is the last state the cache saw, not its final state.
///
/// Handlers must not treat `last_known` as current (its resourceVersion is stale; it may have
/// changed, even gained finalizers or a new owner, before it was deleted).
#[derive(Debug)]
pub struct Tombstone<T> {
    /// The key the object was stored under.
    pub key: ObjectKey,
    /// The last state the cache held.
    pub last_known: Arc<T>,
}

/// How a deleted object reaches a delete handler.
#[derive(Debug)]
pub enum Deleted<T> {
    /// A watch `DELETED` event: the object's final state as the server sent it.
    Observed(Arc<T>),
    /// A relist found the object gone; only its last known state is available.
    FinalStateUnknown(Tombstone<T>),
}

impl<T> Deleted<T> {
    /// The object, whether final or last known.
    pub fn object(&self) -> &Arc<T> {
        match self {
            Deleted::Observed(object) => object,
            Deleted::FinalStateUnknown(tombstone) => &tombstone.last_known,
        }
    }

    /// Whether the object is the server's final state.
    pub fn is_final_state_known(&self) -> bool {
        matches!(self, Deleted::Observed(_))
    }
}

// Cloning copies `Arc`s, so it needs no `T: Clone` (which `derive` would demand).
impl<T> Clone for Tombstone<T> {
    fn clone(&self) -> Self {
        Tombstone {
            key: self.key.clone(),
            last_known: Arc::clone(&self.last_known),
        }
    }
}

impl<T> Clone for Deleted<T> {
    fn clone(&self) -> Self {
        match self {
            Deleted::Observed(object) => Deleted::Observed(Arc::clone(object)),
            Deleted::FinalStateUnknown(tombstone) => Deleted::FinalStateUnknown(tombstone.clone()),
        }
    }
}

impl<T> From<Tombstone<T>> for Deleted<T> {
    fn from(tombstone: Tombstone<T>) -> Self {
        Deleted::FinalStateUnknown(tombstone)
    }
}

impl<T> Default for ReplaceDiff<T> {
    fn default() -> Self {
        ReplaceDiff {
            added: Vec::new(),
            updated: Vec::new(),
            deleted: Vec::new(),
        }
    }
}

impl<T> ReplaceDiff<T> {
    /// Whether the relist changed nothing.
    pub fn is_empty(&self) -> bool {
        self.added.is_empty() && self.updated.is_empty() && self.deleted.is_empty()
    }

    /// How many notifications the relist owes.
    pub fn len(&self) -> usize {
        self.added.len() + self.updated.len() + self.deleted.len()
    }
}

/// Merges one shard's cached objects (`cached`) with its slice of a new list (`listed`), both
/// in key order, appending the notifications to `diff` and returning the shard's new contents.
pub(crate) fn merge_shard<T: Cacheable>(
    cached: &BTreeMap<ObjectKey, Arc<T>>,
    listed: BTreeMap<ObjectKey, Arc<T>>,
    diff: &mut ReplaceDiff<T>,
) -> BTreeMap<ObjectKey, Arc<T>> {
    let mut cached = cached.iter().peekable();
    let mut merged = Vec::with_capacity(listed.len());
    for (key, new) in listed {
        // Cached keys ordered before `key` are missing from the list: deleted.
        while let Some(gone) = cached.next_if(|(cached_key, _)| **cached_key < key) {
            diff.deleted.push(tombstone(gone));
        }
        let kept = match cached.next_if(|(cached_key, _)| **cached_key == key) {
            None => {
                diff.added.push(Arc::clone(&new));
                new
            }
            Some((_, old)) if is_unchanged(&**old, &*new) => Arc::clone(old),
            Some((_, old)) => {
                diff.updated.push(Updated {
                    old: Arc::clone(old),
                    new: Arc::clone(&new),
                });
                new
            }
        };
        merged.push((key, kept));
    }
    // Cached keys after the last listed one are missing too.
    diff.deleted.extend(cached.map(tombstone));
    // Built from sorted input, a BTreeMap packs its nodes full, smaller than one grown by
    // inserts.
    merged.into_iter().collect()
}

/// The tombstone of a cached entry missing from a new list.
fn tombstone<T>((key, last_known): (&ObjectKey, &Arc<T>)) -> Tombstone<T> {
    Tombstone {
        key: key.clone(),
        last_known: Arc::clone(last_known),
    }
}

/// Whether the server's resourceVersions say `old` and `new` are the same state. An empty
/// version proves nothing, so it counts as a change.
fn is_unchanged<T: Cacheable>(old: &T, new: &T) -> bool {
    let version = new.resource_version();
    !version.is_empty() && old.resource_version() == version
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A minimal cacheable object: a key, a resourceVersion and a payload.
    #[derive(Debug, PartialEq)]
    struct Obj {
        key: &'static str,
        version: &'static str,
        payload: u32,
    }

    impl Cacheable for Obj {
        fn cache_key(&self) -> ObjectKey {
            ObjectKey::parse(self.key).unwrap()
        }
        fn resource_version(&self) -> &str {
            self.version
        }
        fn uid(&self) -> &str {
            self.key
        }
    }

    fn map(objects: Vec<Obj>) -> BTreeMap<ObjectKey, Arc<Obj>> {
        objects
            .into_iter()
            .map(|o| (o.cache_key(), Arc::new(o)))
            .collect()
    }

    fn obj(key: &'static str, version: &'static str, payload: u32) -> Obj {
        Obj {
            key,
            version,
            payload,
        }
    }

    #[test]
    fn a_relist_reports_adds_updates_and_deletes_and_skips_unchanged() {
        let cached = map(vec![
            obj("ns/deleted-1", "1", 1),
            obj("ns/same", "2", 2),
            obj("ns/changed", "3", 3),
            obj("ns/zz-deleted-2", "4", 4),
        ]);
        let listed = map(vec![
            obj("ns/same", "2", 2),
            obj("ns/changed", "5", 33),
            obj("ns/new", "6", 6),
        ]);
        let mut diff = ReplaceDiff::default();
        let merged = merge_shard(&cached, listed, &mut diff);

        let added: Vec<&str> = diff.added.iter().map(|o| o.key).collect();
        assert_eq!(added, ["ns/new"]);
        assert_eq!(diff.updated.len(), 1);
        assert_eq!(*diff.updated[0].old, obj("ns/changed", "3", 3));
        assert_eq!(*diff.updated[0].new, obj("ns/changed", "5", 33));
        let deleted: Vec<String> = diff.deleted.iter().map(|t| t.key.to_string()).collect();
        assert_eq!(deleted, ["ns/deleted-1", "ns/zz-deleted-2"]);
        assert_eq!(diff.len(), 4);

        let contents: Vec<&str> = merged.values().map(|o| o.key).collect();
        assert_eq!(contents, ["ns/changed", "ns/new", "ns/same"]);
    }

    #[test]
    fn tombstones_carry_the_last_known_state() {
        let cached = map(vec![obj("ns/gone", "7", 42)]);
        let mut diff = ReplaceDiff::default();
        let merged = merge_shard(&cached, BTreeMap::new(), &mut diff);
        assert!(merged.is_empty());
        let tombstone = &diff.deleted[0];
        assert_eq!(tombstone.key.to_string(), "ns/gone");
        assert!(Arc::ptr_eq(&tombstone.last_known, &cached[&tombstone.key]));
        assert_eq!(tombstone.last_known.payload, 42);

        let deleted = Deleted::from(tombstone.clone());
        assert!(!deleted.is_final_state_known());
        assert_eq!(deleted.object().payload, 42);
    }

    #[test]
    fn an_unchanged_object_keeps_its_cached_arc() {
        let cached = map(vec![obj("ns/same", "2", 2)]);
        let listed = map(vec![obj("ns/same", "2", 2)]);
        let mut diff = ReplaceDiff::default();
        let merged = merge_shard(&cached, listed, &mut diff);
        assert!(diff.is_empty());
        let key = ObjectKey::new("ns", "same");
        assert!(Arc::ptr_eq(&merged[&key], &cached[&key]));
    }

    #[test]
    fn an_empty_resource_version_counts_as_a_change() {
        let cached = map(vec![obj("ns/a", "", 1)]);
        let listed = map(vec![obj("ns/a", "", 2)]);
        let mut diff = ReplaceDiff::default();
        merge_shard(&cached, listed, &mut diff);
        assert_eq!(diff.updated.len(), 1);
        assert_eq!(diff.updated[0].new.payload, 2);
    }

    #[test]
    fn an_observed_deletion_has_a_known_final_state() {
        let deleted = Deleted::Observed(Arc::new(obj("ns/a", "9", 1)));
        assert!(deleted.is_final_state_known());
        assert_eq!(deleted.object().version, "9");
    }
}
