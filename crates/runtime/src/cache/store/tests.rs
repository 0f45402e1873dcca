//! Unit tests of [`Store`]: writes, reads, indexes, transform, replace, sync state.

use super::*;

/// A small projection: key, version, owner and a field a transform can strip.
#[derive(Debug, Clone, PartialEq)]
struct Pod {
    key: ObjectKey,
    version: String,
    owner: Option<String>,
    notes: String,
}

impl Cacheable for Pod {
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

fn pod(key: &str, version: &str, owner: Option<&str>) -> Pod {
    Pod {
        key: ObjectKey::parse(key).unwrap(),
        version: version.into(),
        owner: owner.map(Into::into),
        notes: "a long annotation".into(),
    }
}

fn by_owner(pod: &Pod) -> Vec<String> {
    pod.owner.iter().cloned().collect()
}

fn indexed_store() -> Store<Pod> {
    Store::builder().shards(4).index("owner", by_owner).build()
}

fn key(text: &str) -> ObjectKey {
    ObjectKey::parse(text).unwrap()
}

/// The keys of `objects`, sorted, as text.
fn sorted_keys(objects: &[Arc<Pod>]) -> Vec<String> {
    let mut keys: Vec<String> = objects.iter().map(|p| p.key.to_string()).collect();
    keys.sort();
    keys
}

fn owned_by(store: &Store<Pod>, owner: &str) -> Vec<String> {
    sorted_keys(&store.by_index("owner", owner).unwrap())
}

#[test]
fn added_then_modified_reports_the_previous_state() {
    let store = indexed_store();
    let first = store.apply_added(pod("ns/a", "1", None));
    assert!(first.previous.is_none());
    assert_eq!(first.object.version, "1");

    let second = store.apply_modified(pod("ns/a", "2", None));
    assert!(Arc::ptr_eq(
        second.previous.as_ref().unwrap(),
        &first.object
    ));
    assert_eq!(store.get(&key("ns/a")).unwrap().version, "2");
    assert_eq!(store.len(), 1);
}

#[test]
fn a_modified_event_for_an_unknown_key_stores_it_as_new() {
    let store = indexed_store();
    let stored = store.apply_modified(pod("ns/a", "5", None));
    assert!(stored.previous.is_none());
    assert!(store.get(&key("ns/a")).is_some());
}

#[test]
fn deleting_returns_the_cached_state_and_forgets_the_key() {
    let store = indexed_store();
    store.apply_added(pod("ns/a", "1", Some("rs-1")));
    let deleted = store.apply_deleted(pod("ns/a", "3", Some("rs-1")));
    assert_eq!(deleted.previous.unwrap().version, "1");
    assert_eq!(
        deleted.object.version, "3",
        "the final state is the event's"
    );
    assert!(store.get(&key("ns/a")).is_none());
    assert!(owned_by(&store, "rs-1").is_empty());
    assert!(store.is_empty());
    // Deleting what is not cached is harmless.
    assert!(store
        .apply_deleted(pod("ns/a", "4", None))
        .previous
        .is_none());
}

#[test]
fn an_object_whose_owner_changes_moves_between_index_buckets() {
    let store = indexed_store();
    store.apply_added(pod("ns/a", "1", Some("rs-1")));
    store.apply_added(pod("ns/b", "1", Some("rs-1")));
    assert_eq!(owned_by(&store, "rs-1"), ["ns/a", "ns/b"]);

    store.apply_modified(pod("ns/a", "2", Some("rs-2")));
    assert_eq!(owned_by(&store, "rs-1"), ["ns/b"]);
    assert_eq!(owned_by(&store, "rs-2"), ["ns/a"]);

    store.apply_modified(pod("ns/b", "2", None));
    assert!(owned_by(&store, "rs-1").is_empty());
}

#[test]
fn index_answers_are_the_current_objects() {
    let store = indexed_store();
    store.apply_added(pod("ns/a", "1", Some("rs-1")));
    store.apply_modified(pod("ns/a", "2", Some("rs-1")));
    let found = store.by_index("owner", "rs-1").unwrap();
    assert_eq!(found.len(), 1);
    assert_eq!(found[0].version, "2");
}

#[test]
fn an_unknown_index_is_an_error() {
    let store = indexed_store();
    assert_eq!(
        store.by_index("label", "x").unwrap_err(),
        UnknownIndex("label".into())
    );
}

#[test]
fn a_later_index_with_the_same_name_replaces_the_earlier() {
    fn by_version(pod: &Pod) -> Vec<String> {
        vec![pod.version.clone()]
    }
    let store = Store::builder()
        .index("x", by_owner)
        .index("x", by_version)
        .build();
    store.apply_added(pod("ns/a", "7", Some("rs-1")));
    assert_eq!(sorted_keys(&store.by_index("x", "7").unwrap()), ["ns/a"]);
    assert!(store.by_index("x", "rs-1").unwrap().is_empty());
}

#[test]
fn namespaces_list_their_own_objects_only() {
    let store = indexed_store();
    for text in ["a/x", "a/y", "a-b/x", "a0/x", "b/x"] {
        store.apply_added(pod(text, "1", None));
    }
    assert_eq!(sorted_keys(&store.list_namespace("a")), ["a/x", "a/y"]);
    assert_eq!(sorted_keys(&store.list_namespace("a-b")), ["a-b/x"]);
    assert!(store.list_namespace("c").is_empty());
    assert!(store.list_namespace("").is_empty());
    assert_eq!(store.list().len(), 5);
}

#[test]
fn cluster_scoped_objects_are_keyed_by_name_and_listed_under_the_empty_namespace() {
    let store = indexed_store();
    store.apply_added(pod("node-1", "1", None));
    store.apply_added(pod("ns/a", "1", None));
    assert_eq!(
        store
            .get(&ObjectKey::cluster_scoped("node-1"))
            .unwrap()
            .key
            .as_str(),
        "node-1"
    );
    assert_eq!(sorted_keys(&store.list_namespace("")), ["node-1"]);
    let mut keys: Vec<String> = store.keys().iter().map(ToString::to_string).collect();
    keys.sort();
    assert_eq!(keys, ["node-1", "ns/a"]);
}

#[test]
fn the_transform_runs_before_every_store() {
    let store: Store<Pod> = Store::builder()
        .transform(|mut pod: Pod| {
            pod.notes.clear();
            pod
        })
        .build();
    assert_eq!(store.apply_added(pod("ns/a", "1", None)).object.notes, "");
    assert_eq!(
        store.apply_modified(pod("ns/a", "2", None)).object.notes,
        ""
    );
    let diff = store.replace(vec![pod("ns/b", "3", None)], "3");
    assert_eq!(diff.added[0].notes, "");
    assert!(store.list().iter().all(|p| p.notes.is_empty()));
}

#[test]
fn replace_reports_the_changes_and_leaves_exactly_the_new_list() {
    let store = indexed_store();
    store.replace(
        vec![
            pod("ns/same", "1", Some("rs-1")),
            pod("ns/changed", "1", Some("rs-1")),
            pod("ns/gone", "1", Some("rs-1")),
        ],
        "10",
    );
    let diff = store.replace(
        vec![
            pod("ns/same", "1", Some("rs-1")),
            pod("ns/changed", "2", Some("rs-2")),
            pod("ns/new", "3", None),
        ],
        "20",
    );
    assert_eq!(sorted_keys(&diff.added), ["ns/new"]);
    assert_eq!(diff.updated.len(), 1);
    assert_eq!(diff.updated[0].old.version, "1");
    assert_eq!(diff.updated[0].new.version, "2");
    assert_eq!(diff.deleted.len(), 1);
    assert_eq!(diff.deleted[0].key.as_str(), "ns/gone");
    assert_eq!(diff.deleted[0].last_known.owner.as_deref(), Some("rs-1"));

    assert_eq!(
        sorted_keys(&store.list()),
        ["ns/changed", "ns/new", "ns/same"]
    );
    // The indexes were rebuilt from the new contents.
    assert_eq!(owned_by(&store, "rs-1"), ["ns/same"]);
    assert_eq!(owned_by(&store, "rs-2"), ["ns/changed"]);
    assert_eq!(store.last_sync_resource_version().as_deref(), Some("20"));
}

#[test]
fn replace_keeps_the_last_of_duplicate_keys() {
    let store = indexed_store();
    let diff = store.replace(vec![pod("ns/a", "1", None), pod("ns/a", "2", None)], "5");
    assert_eq!(diff.added.len(), 1);
    assert_eq!(diff.added[0].version, "2");
    assert_eq!(store.len(), 1);
}

#[test]
fn replace_with_an_empty_list_tombstones_everything() {
    let store = indexed_store();
    store.apply_added(pod("ns/a", "1", Some("rs-1")));
    store.apply_added(pod("node-1", "1", None));
    let diff = store.replace(Vec::new(), "9");
    let mut gone: Vec<String> = diff.deleted.iter().map(|t| t.key.to_string()).collect();
    gone.sort();
    assert_eq!(gone, ["node-1", "ns/a"]);
    assert!(store.is_empty());
    assert!(owned_by(&store, "rs-1").is_empty());
}

#[test]
fn synced_only_after_the_first_replace() {
    let store = indexed_store();
    assert!(!store.has_synced());
    store.apply_added(pod("ns/a", "1", None));
    assert!(
        !store.has_synced(),
        "watch events before the list do not sync"
    );
    store.replace(Vec::new(), "1");
    assert!(store.has_synced());
    store.replace(vec![pod("ns/a", "2", None)], "2");
    assert!(store.has_synced(), "a relist never unsyncs");
}

#[test]
fn the_resource_version_follows_lists_events_and_bookmarks() {
    let store = indexed_store();
    assert_eq!(store.last_sync_resource_version(), None);
    store.replace(Vec::new(), "100");
    assert_eq!(store.last_sync_resource_version().as_deref(), Some("100"));
    store.apply_added(pod("ns/a", "101", None));
    assert_eq!(store.last_sync_resource_version().as_deref(), Some("101"));
    store.apply_deleted(pod("ns/a", "102", None));
    assert_eq!(store.last_sync_resource_version().as_deref(), Some("102"));
    store.apply_bookmark("150");
    assert_eq!(store.last_sync_resource_version().as_deref(), Some("150"));
    // An object without a version proves no progress.
    store.apply_added(pod("ns/b", "", None));
    assert_eq!(store.last_sync_resource_version().as_deref(), Some("150"));
}

#[test]
fn shard_counts_are_powers_of_two() {
    assert_eq!(Store::<Pod>::builder().shards(0).build().shard_count(), 1);
    assert_eq!(Store::<Pod>::builder().shards(5).build().shard_count(), 8);
    assert_eq!(Store::<Pod>::builder().shards(64).build().shard_count(), 64);
    assert_eq!(
        Store::<Pod>::builder()
            .shards(usize::MAX)
            .build()
            .shard_count(),
        MAX_SHARDS
    );
    let default = Store::<Pod>::new().shard_count();
    assert!(default.is_power_of_two() && (16..=64).contains(&default));
}

#[test]
fn objects_spread_over_shards() {
    let store: Store<Pod> = Store::builder().shards(16).build();
    for i in 0..1600 {
        store.apply_added(pod(&format!("ns/pod-{i}"), "1", None));
    }
    let sizes: Vec<usize> = store.shards.iter().map(|s| s.read().len()).collect();
    // 100 per shard on average; a usable hash keeps every shard well within 2x.
    assert!(sizes.iter().all(|&n| (50..200).contains(&n)), "{sizes:?}");
}

#[test]
fn a_single_shard_store_behaves_the_same() {
    let store: Store<Pod> = Store::builder().shards(1).index("owner", by_owner).build();
    store.apply_added(pod("ns/a", "1", Some("rs-1")));
    store.apply_added(pod("ns/b", "1", Some("rs-1")));
    store.replace(vec![pod("ns/b", "2", Some("rs-1"))], "2");
    assert_eq!(owned_by(&store, "rs-1"), ["ns/b"]);
    assert_eq!(store.len(), 1);
}

#[test]
fn full_api_objects_are_cacheable_too() {
    use kube_gc_api::{Job, ObjectMeta};
    let store: Store<Job> = Store::new();
    let job = Job {
        metadata: ObjectMeta {
            name: Some("pi".into()),
            namespace: Some("default".into()),
            resource_version: Some("7".into()),
            ..ObjectMeta::default()
        },
        ..Job::default()
    };
    store.apply_added(job);
    assert!(store.get(&ObjectKey::new("default", "pi")).is_some());
    assert_eq!(store.last_sync_resource_version().as_deref(), Some("7"));
}

#[test]
fn a_store_can_be_shared_between_threads() {
    fn assert_send_sync<S: Send + Sync>() {}
    assert_send_sync::<Store<Pod>>();
    assert_send_sync::<Store<kube_gc_api::Job>>();
}
