//! [`Shard`]: one slice of the cache — its objects and its index entries — as a plain data
//! structure with no locking. The store wraps each shard in a lock.
//!
//! Contract: every method keeps the index entries in step with the objects, so whoever holds a
//! shard (behind its lock) sees an index that matches the objects exactly.

use std::collections::BTreeMap;
use std::sync::Arc;

use super::index::{IndexEntries, IndexProbe, Indexer};
use super::ObjectKey;

/// The objects whose keys hash to one shard, ordered by key, and their index entries.
pub(crate) struct Shard<T> {
    /// Ordered by (namespace, name), so one namespace is one contiguous run: the namespace
    /// "index" costs nothing beyond the map itself.
    objects: BTreeMap<ObjectKey, Arc<T>>,
    /// One entry set per index, in the order of the store's index definitions.
    indexes: Vec<IndexEntries>,
}

impl<T> Shard<T> {
    /// An empty shard with room for `index_count` indexes.
    pub(crate) fn empty(index_count: usize) -> Self {
        Shard {
            objects: BTreeMap::new(),
            indexes: (0..index_count).map(|_| IndexEntries::default()).collect(),
        }
    }

    /// A shard holding exactly `objects`, with its indexes computed from them.
    pub(crate) fn with_objects(
        objects: BTreeMap<ObjectKey, Arc<T>>,
        indexers: &[Indexer<T>],
    ) -> Self {
        let mut shard = Self::empty(indexers.len());
        for (key, object) in &objects {
            shard.file(key, object, indexers);
        }
        shard.objects = objects;
        shard
    }

    /// The object stored under `key`.
    pub(crate) fn get(&self, key: &ObjectKey) -> Option<&Arc<T>> {
        self.objects.get(key)
    }

    /// Stores `object` under `key`, returning what it replaced.
    pub(crate) fn upsert(
        &mut self,
        key: ObjectKey,
        object: Arc<T>,
        indexers: &[Indexer<T>],
    ) -> Option<Arc<T>> {
        if let Some(old) = self.objects.get(&key) {
            let old = Arc::clone(old);
            self.unfile(&key, &old, indexers);
        }
        self.file(&key, &object, indexers);
        self.objects.insert(key, object)
    }

    /// Removes the object stored under `key`, returning it.
    pub(crate) fn remove(&mut self, key: &ObjectKey, indexers: &[Indexer<T>]) -> Option<Arc<T>> {
        let old = self.objects.remove(key)?;
        self.unfile(key, &old, indexers);
        Some(old)
    }

    /// All objects, in key order.
    pub(crate) fn objects(&self) -> &BTreeMap<ObjectKey, Arc<T>> {
        &self.objects
    }

    /// The objects in `namespace` (`""` for cluster-scoped objects), in key order.
    pub(crate) fn in_namespace<'a>(
        &'a self,
        namespace: &'a str,
    ) -> impl Iterator<Item = &'a Arc<T>> + 'a {
        // Namespace and empty name: the smallest key of the namespace. Namespace "" is
        // represented as a cluster-scoped key, which orders first, as "" should.
        let first = ObjectKey::new(namespace, "");
        self.objects
            .range(first..)
            .take_while(move |(key, _)| key.namespace().unwrap_or_default() == namespace)
            .map(|(_, object)| object)
    }

    /// The objects filed under `probe`'s value in the index at `position`.
    pub(crate) fn indexed<'a>(
        &'a self,
        position: usize,
        probe: &'a IndexProbe,
    ) -> impl Iterator<Item = &'a Arc<T>> + 'a {
        self.indexes
            .get(position)
            .into_iter()
            .flat_map(move |entries| entries.keys_with(probe))
            // Always found: entries change only together with the objects they point at.
            .filter_map(|key| self.objects.get(key))
    }

    /// How many objects the shard holds.
    pub(crate) fn len(&self) -> usize {
        self.objects.len()
    }

    /// Adds `object`'s index entries.
    fn file(&mut self, key: &ObjectKey, object: &T, indexers: &[Indexer<T>]) {
        for (entries, indexer) in self.indexes.iter_mut().zip(indexers) {
            entries.insert(key, (indexer.values)(object));
        }
    }

    /// Removes `object`'s index entries (recomputed: index functions are pure).
    fn unfile(&mut self, key: &ObjectKey, object: &T, indexers: &[Indexer<T>]) {
        for (entries, indexer) in self.indexes.iter_mut().zip(indexers) {
            entries.remove(key, (indexer.values)(object));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// (name, owner) pairs; the owner is the only index value.
    type Obj = (&'static str, Option<&'static str>);

    fn by_owner(obj: &Obj) -> Vec<String> {
        obj.1.iter().map(|owner| owner.to_string()).collect()
    }

    fn indexers() -> Vec<Indexer<Obj>> {
        vec![Indexer {
            name: "owner".into(),
            values: by_owner,
        }]
    }

    fn owned_by(shard: &Shard<Obj>, owner: &str) -> Vec<&'static str> {
        let probe = super::super::index::probe(owner);
        shard.indexed(0, &probe).map(|obj| obj.0).collect()
    }

    #[test]
    fn index_entries_follow_every_write_and_never_outlive_their_object() {
        let indexers = indexers();
        let mut shard = Shard::empty(1);
        let key = ObjectKey::new("ns", "a");
        shard.upsert(key.clone(), Arc::new(("a", Some("o1"))), &indexers);
        shard.upsert(key.clone(), Arc::new(("a", Some("o2"))), &indexers);
        assert!(owned_by(&shard, "o1").is_empty());
        assert_eq!(owned_by(&shard, "o2"), ["a"]);
        assert_eq!(shard.indexes[0].len(), 1);

        shard.upsert(key.clone(), Arc::new(("a", None)), &indexers);
        assert_eq!(shard.indexes[0].len(), 0);
        shard.upsert(key.clone(), Arc::new(("a", Some("o1"))), &indexers);
        assert_eq!(shard.remove(&key, &indexers).map(|o| o.0), Some("a"));
        assert_eq!(shard.indexes[0].len(), 0);
        assert_eq!(shard.len(), 0);
    }

    #[test]
    fn a_rebuilt_shard_indexes_all_its_objects() {
        let indexers = indexers();
        let objects: BTreeMap<ObjectKey, Arc<Obj>> =
            [("a", Some("o1")), ("b", Some("o1")), ("c", None)]
                .into_iter()
                .map(|obj| (ObjectKey::new("ns", obj.0), Arc::new(obj)))
                .collect();
        let shard = Shard::with_objects(objects, &indexers);
        assert_eq!(owned_by(&shard, "o1"), ["a", "b"]);
        assert_eq!(shard.len(), 3);
    }

    #[test]
    fn a_namespace_is_one_run_of_keys() {
        let mut shard = Shard::empty(0);
        for (namespace, name) in [("a", "x"), ("a-b", "x"), ("a", "y"), ("", "a"), ("b", "x")] {
            let obj: Obj = (name, None);
            shard.upsert(ObjectKey::new(namespace, name), Arc::new(obj), &[]);
        }
        let names = |ns| shard.in_namespace(ns).map(|obj| obj.0).collect::<Vec<_>>();
        assert_eq!(names("a"), ["x", "y"]);
        assert_eq!(names("a-b"), ["x"]);
        assert_eq!(names(""), ["a"]);
        assert!(names("c").is_empty());
    }
}
