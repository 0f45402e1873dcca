//! Model test of `runtime::cache::Store`: a random sequence of adds, modifies, deletes,
//! bookmarks and relists is applied both to the store and to a plain `BTreeMap`; after every
//! step both must hold the same objects and give the same namespace and index answers, and every
//! write must report what the model says it replaced (including a relist's full diff).

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use kube_gc::runtime::cache::{Cacheable, ObjectKey, ReplaceDiff, Store};
use proptest::prelude::*;

#[derive(Debug, Clone, PartialEq)]
struct Obj {
    key: ObjectKey,
    version: String,
    owner: Option<String>,
}

impl Cacheable for Obj {
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

fn by_owner(obj: &Obj) -> Vec<String> {
    obj.owner.iter().cloned().collect()
}

const NAMESPACES: [&str; 3] = ["", "a", "a-b"];
const NAMES: [&str; 3] = ["x", "y", "z"];
const OWNERS: [&str; 2] = ["o1", "o2"];

#[derive(Debug, Clone)]
enum Op {
    Added(Obj),
    Modified(Obj),
    Deleted(Obj),
    Bookmark(u8),
    Replace(Vec<Obj>, u8),
}

fn obj() -> impl Strategy<Value = Obj> {
    // Few keys, versions and owners, so operations collide: same key, same version, moves.
    (
        0..NAMESPACES.len(),
        0..NAMES.len(),
        0u8..4,
        prop::option::of(0..OWNERS.len()),
    )
        .prop_map(|(ns, name, version, owner)| Obj {
            key: ObjectKey::new(NAMESPACES[ns], NAMES[name]),
            // "0" stands for an object without a version.
            version: if version == 0 {
                String::new()
            } else {
                version.to_string()
            },
            owner: owner.map(|o| OWNERS[o].to_owned()),
        })
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        3 => obj().prop_map(Op::Added),
        3 => obj().prop_map(Op::Modified),
        2 => obj().prop_map(Op::Deleted),
        1 => any::<u8>().prop_map(Op::Bookmark),
        2 => (prop::collection::vec(obj(), 0..8), any::<u8>()).prop_map(|(items, rv)| Op::Replace(items, rv)),
    ]
}

type Model = BTreeMap<ObjectKey, Obj>;

/// Applies a relist to the model the way the store is specified to, returning the expected
/// (added, updated as (old, new), deleted) keys and states.
fn replace_model(model: &mut Model, items: &[Obj]) -> (Vec<Obj>, Vec<(Obj, Obj)>, Vec<Obj>) {
    let mut listed = Model::new();
    for item in items {
        listed.insert(item.key.clone(), item.clone());
    }
    let (mut added, mut updated, mut deleted) = (Vec::new(), Vec::new(), Vec::new());
    let mut next = Model::new();
    for (key, new) in listed {
        match model.get(&key) {
            None => {
                added.push(new.clone());
                next.insert(key, new);
            }
            Some(old) if !new.version.is_empty() && old.version == new.version => {
                next.insert(key, old.clone());
            }
            Some(old) => {
                updated.push((old.clone(), new.clone()));
                next.insert(key, new);
            }
        }
    }
    for (key, old) in model.iter() {
        if !next.contains_key(key) {
            deleted.push(old.clone());
        }
    }
    *model = next;
    (added, updated, deleted)
}

fn sorted(objects: impl IntoIterator<Item = Obj>) -> Vec<Obj> {
    let mut objects: Vec<Obj> = objects.into_iter().collect();
    objects.sort_by(|a, b| a.key.cmp(&b.key));
    objects
}

fn owned(objects: Vec<Arc<Obj>>) -> Vec<Obj> {
    sorted(objects.into_iter().map(|o| (*o).clone()))
}

fn check_diff(
    diff: ReplaceDiff<Obj>,
    expected: (Vec<Obj>, Vec<(Obj, Obj)>, Vec<Obj>),
) -> Result<(), TestCaseError> {
    let (added, updated, deleted) = expected;
    prop_assert_eq!(owned(diff.added), sorted(added));
    let mut got_updated: Vec<(Obj, Obj)> = diff
        .updated
        .iter()
        .map(|u| ((*u.old).clone(), (*u.new).clone()))
        .collect();
    got_updated.sort_by(|a, b| a.0.key.cmp(&b.0.key));
    prop_assert_eq!(got_updated, updated);
    for tombstone in &diff.deleted {
        prop_assert_eq!(&tombstone.key, &tombstone.last_known.key);
    }
    prop_assert_eq!(
        owned(diff.deleted.into_iter().map(|t| t.last_known).collect()),
        sorted(deleted)
    );
    Ok(())
}

fn check_contents(store: &Store<Obj>, model: &Model) -> Result<(), TestCaseError> {
    prop_assert_eq!(owned(store.list()), sorted(model.values().cloned()));
    prop_assert_eq!(store.len(), model.len());
    let keys: BTreeSet<ObjectKey> = store.keys().into_iter().collect();
    prop_assert_eq!(keys, model.keys().cloned().collect::<BTreeSet<_>>());
    for key in model.keys() {
        let cached = store.get(key).map(|o| (*o).clone());
        prop_assert_eq!(cached.as_ref(), model.get(key));
    }
    for namespace in NAMESPACES {
        let expected = model
            .values()
            .filter(|o| o.key.namespace().unwrap_or("") == namespace);
        prop_assert_eq!(
            owned(store.list_namespace(namespace)),
            sorted(expected.cloned())
        );
    }
    for owner in OWNERS {
        let expected = model.values().filter(|o| o.owner.as_deref() == Some(owner));
        let found = store
            .by_index("owner", owner)
            .map_err(|e| TestCaseError::fail(e.to_string()))?;
        prop_assert_eq!(owned(found), sorted(expected.cloned()));
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn the_store_behaves_like_an_ordered_map(
        shards in prop::sample::select(vec![1usize, 2, 8]),
        ops in prop::collection::vec(op(), 1..40),
    ) {
        let store: Store<Obj> = Store::builder().shards(shards).index("owner", by_owner).build();
        let mut model = Model::new();
        let mut synced = false;
        let mut version: Option<String> = None;
        for op in ops {
            match op {
                Op::Added(obj) | Op::Modified(obj) => {
                    let stored = store.apply_added(obj.clone());
                    prop_assert_eq!(&*stored.object, &obj);
                    let previous = model.insert(obj.key.clone(), obj.clone());
                    prop_assert_eq!(stored.previous.map(|o| (*o).clone()), previous);
                    if !obj.version.is_empty() { version = Some(obj.version.clone()); }
                }
                Op::Deleted(obj) => {
                    let deleted = store.apply_deleted(obj.clone());
                    prop_assert_eq!(&*deleted.object, &obj);
                    prop_assert_eq!(deleted.previous.map(|o| (*o).clone()), model.remove(&obj.key));
                    if !obj.version.is_empty() { version = Some(obj.version.clone()); }
                }
                Op::Bookmark(rv) => {
                    store.apply_bookmark(&rv.to_string());
                    version = Some(rv.to_string());
                }
                Op::Replace(items, rv) => {
                    let diff = store.replace(items.clone(), &rv.to_string());
                    check_diff(diff, replace_model(&mut model, &items))?;
                    synced = true;
                    version = Some(rv.to_string());
                }
            }
            check_contents(&store, &model)?;
            prop_assert_eq!(store.has_synced(), synced);
            prop_assert_eq!(store.last_sync_resource_version(), version.clone());
        }
    }
}
