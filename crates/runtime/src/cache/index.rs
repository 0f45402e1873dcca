//! Secondary indexes: find cached objects by a derived value (an owner's UID, a label...)
//! without scanning the whole cache, as client-go's `Indexers` do.
//!
//! Contract:
//! - An index is a name and an [`IndexFn`] returning the values an object is filed under (none,
//!   one, or several). Index functions must be pure and quick: the cache calls them again on
//!   an object's old state to remove its entries, and calls them while holding a shard lock.
//! - Each shard keeps its own [`IndexEntries`], updated under the same lock as its objects, so
//!   an index never points at an object that is not in the shard or that no longer has the
//!   value.
//! - Entries are `(value, key)` pairs in one ordered set per index and shard: the keys filed
//!   under a value are the contiguous run starting at `(value, smallest key)`. That costs one
//!   set entry per pair, where a map of value to set of keys would pay a whole set's overhead
//!   for each of the (mostly single-element) buckets.

use std::collections::BTreeSet;
use std::ops::Bound;

use super::ObjectKey;

/// Computes the values an object is filed under in one index (e.g. the UIDs of its owners).
pub type IndexFn<T> = fn(&T) -> Vec<String>;

/// A named index definition, shared by all shards.
pub(crate) struct Indexer<T> {
    /// The name queries use (`Store::by_index(name, value)`).
    pub(crate) name: String,
    /// Computes an object's values.
    pub(crate) values: IndexFn<T>,
}

/// The lower bound of a value's run of entries: the value paired with the smallest key.
pub(crate) type IndexProbe = (String, ObjectKey);

/// Builds the probe that [`IndexEntries::keys_with`] starts from. Built once per query and
/// shared by every shard, so a query allocates once, not once per shard.
pub(crate) fn probe(value: &str) -> IndexProbe {
    // Cluster-scoped (namespace "") with an empty name orders before every real key.
    (value.to_owned(), ObjectKey::cluster_scoped(""))
}

/// One index's entries within one shard.
#[derive(Debug, Default)]
pub(crate) struct IndexEntries {
    pairs: BTreeSet<(String, ObjectKey)>,
}

impl IndexEntries {
    /// Files `key` under each of `values`.
    pub(crate) fn insert(&mut self, key: &ObjectKey, values: Vec<String>) {
        for value in values {
            self.pairs.insert((value, key.clone()));
        }
    }

    /// Removes `key` from under each of `values` (the values its old state was filed under).
    pub(crate) fn remove(&mut self, key: &ObjectKey, values: Vec<String>) {
        for value in values {
            // The pair is rebuilt to look it up; `BTreeSet` cannot borrow a tuple's parts.
            self.pairs.remove(&(value, key.clone()));
        }
    }

    /// The keys filed under the value of `probe` (see [`probe`]), in key order.
    pub(crate) fn keys_with<'a>(
        &'a self,
        probe: &'a IndexProbe,
    ) -> impl Iterator<Item = &'a ObjectKey> + 'a {
        self.pairs
            .range((Bound::Included(probe), Bound::Unbounded))
            .take_while(move |(value, _)| *value == probe.0)
            .map(|(_, key)| key)
    }

    /// How many `(value, key)` pairs this shard holds.
    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        self.pairs.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(text: &str) -> ObjectKey {
        ObjectKey::parse(text).unwrap()
    }

    fn keys_with(entries: &IndexEntries, value: &str) -> Vec<String> {
        let probe = probe(value);
        entries.keys_with(&probe).map(|k| k.to_string()).collect()
    }

    #[test]
    fn a_value_finds_exactly_the_keys_filed_under_it() {
        let mut entries = IndexEntries::default();
        entries.insert(&key("ns/a"), vec!["owner-1".into()]);
        entries.insert(&key("ns/b"), vec!["owner-1".into(), "owner-2".into()]);
        entries.insert(&key("ns/c"), vec!["owner-10".into()]);
        assert_eq!(keys_with(&entries, "owner-1"), ["ns/a", "ns/b"]);
        assert_eq!(keys_with(&entries, "owner-2"), ["ns/b"]);
        // A value that is a prefix of another does not match it.
        assert_eq!(keys_with(&entries, "owner-10"), ["ns/c"]);
        assert!(keys_with(&entries, "owner").is_empty());
    }

    #[test]
    fn removing_drops_only_the_given_values() {
        let mut entries = IndexEntries::default();
        entries.insert(&key("ns/b"), vec!["x".into(), "y".into()]);
        entries.remove(&key("ns/b"), vec!["x".into()]);
        assert!(keys_with(&entries, "x").is_empty());
        assert_eq!(keys_with(&entries, "y"), ["ns/b"]);
        assert_eq!(entries.len(), 1);
    }

    #[test]
    fn cluster_scoped_keys_are_found_too() {
        let mut entries = IndexEntries::default();
        entries.insert(&key("node-1"), vec!["zone-a".into()]);
        assert_eq!(keys_with(&entries, "zone-a"), ["node-1"]);
    }

    #[test]
    fn duplicate_values_file_a_key_once() {
        let mut entries = IndexEntries::default();
        entries.insert(&key("ns/a"), vec!["v".into(), "v".into()]);
        assert_eq!(entries.len(), 1);
        entries.remove(&key("ns/a"), vec!["v".into(), "v".into()]);
        assert_eq!(entries.len(), 0);
    }
}
