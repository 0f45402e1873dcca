//! The cache as a shared informer uses it, step by step: a projection type, an owner index, the
//! initial list, watch events, and a relist after a watch gap. Read top to bottom.

use kube_gc::runtime::cache::{Cacheable, Deleted, ObjectKey, Store};

/// What a controller keeps of each Pod: identity, version and owner — not the whole object.
#[derive(Debug)]
struct PodRef {
    key: ObjectKey,
    uid: String,
    version: String,
    owner_uid: Option<String>,
}

impl Cacheable for PodRef {
    fn cache_key(&self) -> ObjectKey {
        self.key.clone()
    }
    fn resource_version(&self) -> &str {
        &self.version
    }
    fn uid(&self) -> &str {
        &self.uid
    }
}

fn pod(name: &str, version: &str, owner: &str) -> PodRef {
    PodRef {
        key: ObjectKey::new("default", name),
        uid: format!("uid-{name}"),
        version: version.into(),
        owner_uid: Some(owner.into()),
    }
}

/// The owner index: each Pod is filed under the UIDs of its owners.
fn owner_uids(pod: &PodRef) -> Vec<String> {
    pod.owner_uid.iter().cloned().collect()
}

#[test]
fn an_informer_session() {
    let store: Store<PodRef> = Store::builder().index("owner", owner_uids).build();

    // 1. The reflector's initial LIST. Until it is stored, an absence proves nothing.
    assert!(!store.has_synced());
    let diff = store.replace(vec![pod("a", "1", "rs-1"), pod("b", "1", "rs-1")], "10");
    assert_eq!(diff.added.len(), 2, "the informer calls on_add for each");
    assert!(store.has_synced());
    assert_eq!(store.last_sync_resource_version().as_deref(), Some("10"));

    // 2. A watch MODIFIED event: the key is known, so the informer calls on_update(old, new).
    let applied = store.apply_modified(pod("a", "11", "rs-2"));
    let old = applied.previous.expect("a was cached");
    assert_eq!(
        (old.version.as_str(), applied.object.version.as_str()),
        ("1", "11")
    );
    // The Pod changed owner, so it moved between index buckets.
    assert_eq!(store.by_index("owner", "rs-1").unwrap().len(), 1);
    assert_eq!(store.by_index("owner", "rs-2").unwrap()[0].key.name(), "a");

    // 3. A watch DELETED event carries the final state.
    let applied = store.apply_deleted(pod("a", "12", "rs-2"));
    let deleted = Deleted::Observed(applied.object);
    assert!(deleted.is_final_state_known());
    assert!(store.get(&ObjectKey::new("default", "a")).is_none());

    // 4. The watch breaks for too long (410 Gone); meanwhile "b" was deleted and "c" created.
    //    The relist reports both; "b"'s deletion was never seen, so it arrives as a tombstone
    //    carrying the last state the cache knew.
    let diff = store.replace(vec![pod("c", "30", "rs-3")], "31");
    assert_eq!(diff.added[0].key.to_string(), "default/c");
    let tombstone = &diff.deleted[0];
    assert_eq!(tombstone.key.to_string(), "default/b");
    assert_eq!(
        tombstone.last_known.version, "1",
        "stale: the last state seen, not the final one"
    );
    let deleted = Deleted::from(tombstone.clone());
    assert!(!deleted.is_final_state_known());
    assert_eq!(deleted.object().uid(), "uid-b");

    // 5. A worker turns a workqueue key back into the cached object.
    let key: ObjectKey = "default/c".parse().expect("a valid key");
    assert_eq!(
        store.get(&key).map(|pod| pod.version.clone()).as_deref(),
        Some("30")
    );
    assert_eq!(store.last_sync_resource_version().as_deref(), Some("31"));
}
