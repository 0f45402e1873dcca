//! Unit tests of the store's rules, without HTTP.

use std::sync::Arc;

use chrono::{DateTime, Utc};
use serde_json::{json, Value};

use super::*;
use crate::clock::ManualClock;
use crate::resources::Resources;

struct Fixture {
    store: Store,
    jobs: ResourceId,
    configmaps: ResourceId,
    namespaces: ResourceId,
}

fn fixture() -> Fixture {
    let resources = Arc::new(Resources::default());
    let start = DateTime::parse_from_rfc3339("2026-11-22T03:45:32Z")
        .map(|t| t.with_timezone(&Utc))
        .unwrap_or_default();
    let store = Store::new(
        Arc::clone(&resources),
        Arc::new(ManualClock::new(start)),
        StoreConfig::default(),
    );
    let namespaces = resources.namespaces().unwrap_or(ResourceId(0));
    let ns = json!({"metadata": {"name": "capture"}});
    store
        .create(namespaces, None, ns, false)
        .map(|_| ())
        .unwrap_or(());
    Fixture {
        jobs: resources
            .find("batch", "v1", "jobs")
            .unwrap_or(ResourceId(0)),
        configmaps: resources
            .find("", "v1", "configmaps")
            .unwrap_or(ResourceId(0)),
        namespaces,
        store,
    }
}

fn job(name: &str) -> Value {
    json!({"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": name, "labels": {"app": "capture"}},
        "spec": {"template": {"spec": {"containers": [{"name": "main", "image": "busybox"}]}}}})
}

fn create_job(f: &Fixture, name: &str) -> Arc<Value> {
    match f.store.create(f.jobs, Some("capture"), job(name), false) {
        Ok(obj) => obj,
        Err(e) => panic!("create {name}: {e}"),
    }
}

fn rv_of(obj: &Value) -> u64 {
    object::resource_version(obj)
        .and_then(|rv| rv.parse().ok())
        .unwrap_or(0)
}

#[test]
fn create_fills_server_owned_metadata() {
    let f = fixture();
    let created = create_job(&f, "pi");
    assert_eq!(created["kind"], "Job");
    assert_eq!(created["metadata"]["namespace"], "capture");
    assert_eq!(created["metadata"]["generation"], 1);
    assert_eq!(
        created["metadata"]["creationTimestamp"],
        "2026-11-22T03:45:32Z"
    );
    assert_eq!(created["status"], json!({}));
    assert_eq!(object::uid(&created).map(str::len), Some(36));
    assert_eq!(rv_of(&created), f.store.resource_version());
    let again = f.store.create(f.jobs, Some("capture"), job("pi"), false);
    assert!(matches!(again, Err(StoreError::AlreadyExists { .. })));
}

#[test]
fn create_needs_an_existing_namespace_and_resolves_generate_name() {
    let f = fixture();
    let missing = f.store.create(f.jobs, Some("nope"), job("a"), false);
    assert!(
        matches!(missing, Err(StoreError::NotFound { resource, .. }) if resource == f.namespaces)
    );
    let generated = f
        .store
        .create(
            f.configmaps,
            Some("capture"),
            json!({"metadata": {"generateName": "dependent."}}),
            false,
        )
        .map(|o| object::name(&o).unwrap_or_default().to_string());
    assert!(generated.is_ok_and(|n| n.starts_with("dependent.") && n.len() == 15));
}

#[test]
fn stale_updates_conflict_and_no_op_updates_are_not_committed() {
    let f = fixture();
    let created = create_job(&f, "pi");
    let mut stale = (*created).clone();
    stale["metadata"]["resourceVersion"] = json!("1");
    let result = f.store.update(
        f.jobs,
        Some("capture"),
        "pi",
        stale,
        UpdateTarget::Main,
        false,
    );
    assert!(matches!(result, Err(StoreError::Conflict { .. })));

    let before = f.store.resource_version();
    let same = f.store.update(
        f.jobs,
        Some("capture"),
        "pi",
        (*created).clone(),
        UpdateTarget::Main,
        false,
    );
    assert!(same.is_ok_and(|o| rv_of(&o) == before));
    assert_eq!(f.store.resource_version(), before);
}

#[test]
fn status_subresource_separates_spec_and_status() {
    let f = fixture();
    let created = create_job(&f, "pi");
    let mut with_status = (*created).clone();
    with_status["status"] = json!({"succeeded": 1});
    with_status["spec"]["parallelism"] = json!(2);
    let main = f
        .store
        .update(
            f.jobs,
            Some("capture"),
            "pi",
            with_status.clone(),
            UpdateTarget::Main,
            false,
        )
        .unwrap_or_default();
    assert_eq!(
        main["status"],
        json!({}),
        "PUT to the main resource ignores status"
    );
    assert_eq!(
        main["metadata"]["generation"], 2,
        "a spec change bumps generation"
    );
    with_status["metadata"]["resourceVersion"] = main["metadata"]["resourceVersion"].clone();
    with_status["spec"]["parallelism"] = json!(5);
    let status = f
        .store
        .update(
            f.jobs,
            Some("capture"),
            "pi",
            with_status,
            UpdateTarget::Status,
            false,
        )
        .unwrap_or_default();
    assert_eq!(status["status"], json!({"succeeded": 1}));
    assert_eq!(status["spec"]["parallelism"], 2, "/status ignores spec");
    assert_eq!(status["metadata"]["generation"], 2);
}

#[test]
fn default_job_deletion_orphans_and_finalizer_removal_completes_it() {
    let f = fixture();
    create_job(&f, "pi");
    let outcome = f
        .store
        .delete(f.jobs, Some("capture"), "pi", &DeleteOptions::default());
    let Ok(DeleteOutcome::Pending(marked)) = outcome else {
        panic!("expected a pending deletion, got {outcome:?}");
    };
    assert_eq!(object::finalizers(&marked), vec!["orphan"]);
    assert_eq!(marked["metadata"]["deletionGracePeriodSeconds"], 0);
    assert_eq!(marked["metadata"]["generation"], 2);
    assert!(object::deletion_timestamp(&marked).is_some());

    // Deleting again returns the object unchanged.
    let again = f
        .store
        .delete(f.jobs, Some("capture"), "pi", &DeleteOptions::default());
    assert!(matches!(again, Ok(DeleteOutcome::Pending(o)) if o == marked));

    // New finalizers cannot be added now.
    let mut added = (*marked).clone();
    added["metadata"]["finalizers"] = json!(["orphan", "x"]);
    let refused = f.store.update(
        f.jobs,
        Some("capture"),
        "pi",
        added,
        UpdateTarget::Main,
        false,
    );
    assert!(matches!(refused, Err(StoreError::Invalid { .. })));

    let removed = f.store.patch::<StoreError>(
        f.jobs,
        Some("capture"),
        "pi",
        UpdateTarget::Main,
        false,
        |obj| {
            object::set_finalizers(obj, &[]);
            Ok(())
        },
    );
    assert!(
        removed.is_ok_and(|o| rv_of(&o) == rv_of(&marked)),
        "answers with the last stored state"
    );
    assert!(f.store.get(f.jobs, Some("capture"), "pi").is_err());
    let deletions = f.store.deletions();
    assert_eq!(deletions.last().map(|d| d.name.as_str()), Some("pi"));
}

#[test]
fn background_deletion_removes_at_once_and_checks_preconditions() {
    let f = fixture();
    let created = create_job(&f, "pi");
    let wrong = DeleteOptions {
        precondition_uid: Some("00000000-0000-0000-0000-000000000000".into()),
        ..DeleteOptions::propagation(Propagation::Background)
    };
    let conflict = f.store.delete(f.jobs, Some("capture"), "pi", &wrong);
    assert!(matches!(
        conflict,
        Err(StoreError::DeletePrecondition { field: "uid", .. })
    ));
    let dry = DeleteOptions {
        dry_run: true,
        ..DeleteOptions::propagation(Propagation::Background)
    };
    assert!(matches!(
        f.store.delete(f.jobs, Some("capture"), "pi", &dry),
        Ok(DeleteOutcome::Deleted(_))
    ));
    assert!(
        f.store.get(f.jobs, Some("capture"), "pi").is_ok(),
        "dry run changes nothing"
    );
    let gone = f.store.delete(
        f.jobs,
        Some("capture"),
        "pi",
        &DeleteOptions::propagation(Propagation::Background),
    );
    // The final state is the object as it was, at the deletion's own resourceVersion.
    let Ok(DeleteOutcome::Deleted(stamped)) = gone else {
        panic!("not deleted: {gone:?}")
    };
    // Presented so, not copied: the stored object is the one the create stored.
    assert!(Arc::ptr_eq(stamped.object(), &created));
    let last = stamped.to_value();
    let rv = |o: &Value| {
        o["metadata"]["resourceVersion"]
            .as_str()
            .unwrap()
            .parse::<u64>()
            .unwrap()
    };
    assert!(rv(&last) > rv(&created));
    let mut same = last.clone();
    same["metadata"]["resourceVersion"] = created["metadata"]["resourceVersion"].clone();
    assert_eq!(same, *created);
    assert!(f.store.get(f.jobs, Some("capture"), "pi").is_err());
}

#[test]
fn lists_page_with_continue_tokens_and_remaining_counts() {
    let f = fixture();
    for name in ["list-a", "list-b", "list-c", "list-d"] {
        create_job(&f, name);
    }
    let mut options = ListOptions {
        filter: ObjectFilter::namespace(Some("capture")),
        limit: Some(2),
        ..ListOptions::default()
    };
    let first = f
        .store
        .list(f.jobs, &options)
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(first.items.len(), 2);
    assert_eq!(first.remaining_item_count, Some(2));
    // A write between pages does not show up: pages share the first page's version.
    create_job(&f, "list-b2");
    options.continue_token = first.continue_token.clone();
    let second = f
        .store
        .list(f.jobs, &options)
        .unwrap_or_else(|e| panic!("{e}"));
    let names: Vec<&str> = second
        .items
        .iter()
        .filter_map(|o| object::name(o))
        .collect();
    assert_eq!(names, vec!["list-c", "list-d"]);
    assert_eq!(second.resource_version, first.resource_version);
    assert!(second.continue_token.is_none());

    // resourceVersion=0 is served from the "watch cache": limit ignored.
    let all = ListOptions {
        resource_version: Some("0".into()),
        limit: Some(1),
        ..ListOptions::default()
    };
    let page = f.store.list(f.jobs, &all).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(page.items.len(), 5);
    assert!(page.continue_token.is_none());
}

#[test]
fn exact_lists_show_the_past_and_expire_after_compaction() {
    let f = fixture();
    let a = create_job(&f, "a");
    create_job(&f, "b");
    let exact = ListOptions {
        resource_version: Some(rv_of(&a).to_string()),
        resource_version_match: Some("Exact".into()),
        ..ListOptions::default()
    };
    let past = f
        .store
        .list(f.jobs, &exact)
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(past.items.len(), 1);
    assert_eq!(past.resource_version, rv_of(&a));

    let paged = ListOptions {
        limit: Some(1),
        ..ListOptions::default()
    };
    let first = f
        .store
        .list(f.jobs, &paged)
        .unwrap_or_else(|e| panic!("{e}"));
    create_job(&f, "c");
    f.store.compact();
    assert!(matches!(
        f.store.list(f.jobs, &exact),
        Err(StoreError::ListTooOld)
    ));
    let next = ListOptions {
        continue_token: first.continue_token,
        ..paged
    };
    let Err(StoreError::ContinueTooOld { fresh_continue }) = f.store.list(f.jobs, &next) else {
        panic!("expected 410 with a fresh continue token");
    };
    let resumed = ListOptions {
        continue_token: Some(fresh_continue),
        limit: Some(10),
        ..ListOptions::default()
    };
    let rest = f
        .store
        .list(f.jobs, &resumed)
        .unwrap_or_else(|e| panic!("{e}"));
    let names: Vec<&str> = rest.items.iter().filter_map(|o| object::name(o)).collect();
    assert_eq!(names, vec!["b", "c"]);

    let future = ListOptions {
        resource_version: Some("999".into()),
        ..ListOptions::default()
    };
    assert!(matches!(
        f.store.list(f.jobs, &future),
        Err(StoreError::TooLargeResourceVersion { .. })
    ));
}

fn drain(registration: &mut WatchRegistration) -> Vec<(String, String)> {
    let mut seen: Vec<WatchItem> = registration.initial.drain(..).collect();
    while let Ok(item) = registration.live.try_recv() {
        seen.push(item);
    }
    seen.into_iter()
        .map(|item| match item {
            WatchItem::Event { event_type, object } => (
                event_type.to_string(),
                object::name(object.object())
                    .unwrap_or_default()
                    .to_string(),
            ),
            WatchItem::Bookmark { rv, .. } => ("BOOKMARK".to_string(), rv.to_string()),
        })
        .collect()
}

#[test]
fn watches_replay_from_a_version_then_go_live() {
    let f = fixture();
    let a = create_job(&f, "a");
    create_job(&f, "b");
    let mut from_a = f
        .store
        .watch(
            f.jobs,
            ObjectFilter::default(),
            WatchStart::After(rv_of(&a)),
        )
        .unwrap_or_else(|e| panic!("{e}"));
    let mut current = f
        .store
        .watch(
            f.jobs,
            ObjectFilter::default(),
            WatchStart::InitialEventsThenBookmark,
        )
        .unwrap_or_else(|e| panic!("{e}"));
    let start = f.store.resource_version();
    f.store
        .delete(
            f.jobs,
            Some("capture"),
            "a",
            &DeleteOptions::propagation(Propagation::Background),
        )
        .map(|_| ())
        .unwrap_or(());
    assert_eq!(
        drain(&mut from_a),
        vec![("ADDED".into(), "b".into()), ("DELETED".into(), "a".into())]
    );
    assert_eq!(
        drain(&mut current),
        vec![
            ("ADDED".into(), "a".into()),
            ("ADDED".into(), "b".into()),
            ("BOOKMARK".into(), start.to_string()),
            ("DELETED".into(), "a".into()),
        ]
    );
    // Compaction is etcd's: the watch cache still serves the watch.
    f.store.compact();
    let watch_from_a = || {
        f.store.watch(
            f.jobs,
            ObjectFilter::default(),
            WatchStart::After(rv_of(&a)),
        )
    };
    assert!(watch_from_a().is_ok());
    // A restart rebuilds the watch cache at the current revision (exchange 55).
    f.store.restart();
    let now = f.store.resource_version();
    assert!(matches!(
        watch_from_a(),
        Err(StoreError::WatchTooOld { requested, oldest }) if requested == rv_of(&a) && oldest == now
    ));
    assert!(f
        .store
        .watch(f.jobs, ObjectFilter::default(), WatchStart::After(now))
        .is_ok());
}

#[test]
fn closing_watches_ends_their_channels() {
    let f = fixture();
    let mut registration = f
        .store
        .watch(f.jobs, ObjectFilter::default(), WatchStart::Current)
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(f.store.open_watches(), 1);
    f.store.close_watches();
    assert!(matches!(
        registration.live.try_recv(),
        Err(tokio::sync::mpsc::error::TryRecvError::Disconnected)
    ));
}

mod mvcc {
    //! Reads at every version inside the window agree with a model of the writes.

    use std::collections::BTreeMap;

    use proptest::prelude::*;
    use serde_json::json;

    use super::*;

    #[derive(Debug, Clone)]
    enum Op {
        Create(usize),
        Relabel(usize, u8),
        Delete(usize),
    }

    fn op() -> impl Strategy<Value = Op> {
        prop_oneof![
            (0..4usize).prop_map(Op::Create),
            (0..4usize, 0..3u8).prop_map(|(k, v)| Op::Relabel(k, v)),
            (0..4usize).prop_map(Op::Delete),
        ]
    }

    type Model = BTreeMap<String, String>;

    /// Applies one op to the store and, when the store accepted it, to the model.
    fn apply(f: &Fixture, model: &mut Model, op: &Op) {
        let ns = Some("capture");
        let name = |k: &usize| format!("cm-{k}");
        match op {
            Op::Create(k) => {
                let obj = json!({"metadata": {"name": name(k), "labels": {"v": "0"}}});
                if f.store.create(f.configmaps, ns, obj, false).is_ok() {
                    model.insert(name(k), "0".into());
                }
            }
            Op::Relabel(k, v) => {
                let result = f.store.patch::<StoreError>(
                    f.configmaps,
                    ns,
                    &name(k),
                    UpdateTarget::Main,
                    false,
                    |obj| {
                        obj["metadata"]["labels"]["v"] = json!(v.to_string());
                        Ok(())
                    },
                );
                if result.is_ok() {
                    model.insert(name(k), v.to_string());
                }
            }
            Op::Delete(k) => {
                let options = DeleteOptions::propagation(Propagation::Background);
                if f.store.delete(f.configmaps, ns, &name(k), &options).is_ok() {
                    model.remove(&name(k));
                }
            }
        }
    }

    fn read_all_pages(f: &Fixture, rv: u64, limit: usize) -> Model {
        let mut options = ListOptions {
            filter: ObjectFilter::namespace(Some("capture")),
            limit: Some(limit),
            resource_version: Some(rv.to_string()),
            resource_version_match: Some("Exact".into()),
            ..ListOptions::default()
        };
        let mut seen = Model::new();
        loop {
            let page = f
                .store
                .list(f.configmaps, &options)
                .unwrap_or_else(|e| panic!("{e}"));
            assert_eq!(page.resource_version, rv);
            for obj in &page.items {
                let name = object::name(obj).unwrap_or_default().to_string();
                let label = obj["metadata"]["labels"]["v"]
                    .as_str()
                    .unwrap_or_default()
                    .to_string();
                seen.insert(name, label);
            }
            match page.continue_token {
                Some(token) => {
                    options.continue_token = Some(token);
                    options.resource_version = None;
                    options.resource_version_match = None;
                }
                None => return seen,
            }
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(64))]
        #[test]
        fn exact_reads_match_the_model_at_every_version(ops in proptest::collection::vec(op(), 1..40)) {
            let f = fixture();
            let mut model = Model::new();
            let mut snapshots = vec![(f.store.resource_version(), model.clone())];
            for op in &ops {
                apply(&f, &mut model, op);
                snapshots.push((f.store.resource_version(), model.clone()));
            }
            for (rv, expected) in &snapshots {
                prop_assert_eq!(&read_all_pages(&f, *rv, 1), expected);
                prop_assert_eq!(&read_all_pages(&f, *rv, 100), expected);
            }
        }
    }
}

#[test]
fn a_graceful_deletion_copies_nothing_for_its_two_changes() {
    let f = fixture();
    let pods = Resources::default()
        .find("", "v1", "pods")
        .unwrap_or(ResourceId(0));
    let pod = json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"},
        "spec": {"containers": [{"name": "main", "image": "busybox"}]}});
    let created = match f.store.create(pods, Some("capture"), pod, false) {
        Ok(created) => created,
        Err(e) => panic!("create the pod: {e}"),
    };
    let outcome = f
        .store
        .delete(pods, Some("capture"), "p", &DeleteOptions::default());
    let Ok(DeleteOutcome::Deleted(last)) = outcome else {
        panic!("not deleted: {outcome:?}");
    };
    let history = f.store.history();
    let [.., marked, deleted] = history.as_slice() else {
        panic!("two changes expected, got {}", history.len());
    };
    assert_eq!(marked.kind, ChangeKind::Modified);
    assert_eq!(deleted.kind, ChangeKind::Deleted);
    assert_eq!(deleted.rv, marked.rv + 1);
    // No copy: the MODIFIED's object, the DELETED's, its previous state, the deletion log's
    // final state and the answer all share the stored Pod, with the mark written over it.
    let deletions = f.store.deletions();
    let shared = [
        marked.object.object(),
        deleted.object.object(),
        last.object(),
        deletions
            .last()
            .map_or(&created, |d| d.final_state.object()),
    ];
    assert!(shared.iter().all(|object| Arc::ptr_eq(object, &created)));
    assert!(deleted
        .previous
        .as_ref()
        .is_some_and(|previous| Arc::ptr_eq(previous.object(), &created)));
    assert!(
        created["metadata"].get("deletionTimestamp").is_none(),
        "the stored Pod is untouched"
    );
    // The MODIFIED presents the Pod marked, at its own version; the DELETED and the answer at
    // the deletion's, with the two fields the marking wrote.
    let modified = marked.object.to_value();
    assert_eq!(rv_of(&modified), marked.rv);
    assert_eq!(modified["metadata"]["deletionGracePeriodSeconds"], 0);
    assert!(object::deletion_timestamp(&modified).is_some());
    let presented = last.to_value();
    assert_eq!(rv_of(&presented), deleted.rv);
    assert_eq!(presented["metadata"]["deletionGracePeriodSeconds"], 0);
    assert_eq!(
        object::deletion_timestamp(&presented),
        object::deletion_timestamp(&modified)
    );
    assert_eq!(f.store.deletions().last().map(|d| d.rv), Some(deleted.rv));
    // A read at the mark's version (from the history) sees the marked Pod.
    let at_mark = f.store.list(
        pods,
        &ListOptions {
            resource_version: Some(marked.rv.to_string()),
            resource_version_match: Some("Exact".to_string()),
            ..ListOptions::default()
        },
    );
    let items = at_mark.map(|page| page.items).unwrap_or_default();
    assert_eq!(items.len(), 1);
    assert_eq!(items.first().map(|item| (**item).clone()), Some(modified));
}
