//! The shared informer fed by hand, as a reflector would feed it: what its handlers are told, in
//! which order, and when. Paused clock throughout; nothing sleeps.

use std::sync::Arc;
use std::time::Duration;

use kube_gc::runtime::cache::{Cacheable, Deleted, ObjectKey, Store};
use kube_gc::runtime::informer::{
    wait_for_cache_sync, EventHandler, HandlerFns, SharedInformer, WaitForSyncError,
};
use kube_gc::runtime::reflector::{ReflectorEvent, ReflectorSink};
use tokio::sync::{mpsc, watch};
use tokio_util::sync::CancellationToken;

/// A minimal cached object: its key and resourceVersion.
#[derive(Debug)]
struct Obj {
    key: ObjectKey,
    version: String,
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

fn obj(name: &str, version: u32) -> Obj {
    Obj {
        key: ObjectKey::new("ns", name),
        version: version.to_string(),
    }
}

fn replaced(objects: Vec<Obj>, version: u32) -> ReflectorEvent<Obj> {
    ReflectorEvent::Replaced {
        objects,
        resource_version: version.to_string(),
    }
}

fn informer() -> SharedInformer<Obj> {
    SharedInformer::builder("objs", Store::new()).build()
}

/// A handler that writes each notification as a line of text, optionally waiting at a gate
/// before handling each one (to play a slow handler).
struct Recorder {
    lines: mpsc::UnboundedSender<String>,
    gate: Option<watch::Receiver<bool>>,
}

fn describe(object: &Obj) -> String {
    format!("{}@{}", object.key, object.version)
}

impl Recorder {
    fn new() -> (Recorder, mpsc::UnboundedReceiver<String>) {
        let (lines, received) = mpsc::unbounded_channel();
        (Recorder { lines, gate: None }, received)
    }

    /// A recorder that handles nothing until the returned sender sends `true`.
    fn gated() -> (
        Recorder,
        mpsc::UnboundedReceiver<String>,
        watch::Sender<bool>,
    ) {
        let (mut recorder, received) = Recorder::new();
        let (open, gate) = watch::channel(false);
        recorder.gate = Some(gate);
        (recorder, received, open)
    }

    async fn record(&mut self, line: String) {
        if let Some(gate) = &mut self.gate {
            gate.wait_for(|open| *open)
                .await
                .expect("the test holds the gate");
        }
        // The test may have stopped listening; that is not the handler's problem.
        let _ = self.lines.send(line);
    }
}

impl EventHandler<Obj> for Recorder {
    async fn on_add(&mut self, object: Arc<Obj>) {
        self.record(format!("add {}", describe(&object))).await;
    }

    async fn on_update(&mut self, old: Arc<Obj>, new: Arc<Obj>) {
        let line = if Arc::ptr_eq(&old, &new) {
            format!("resync {}", describe(&new))
        } else {
            format!("update {} -> {}", describe(&old), new.version)
        };
        self.record(line).await;
    }

    async fn on_delete(&mut self, deleted: Deleted<Obj>) {
        let line = match &deleted {
            Deleted::Observed(object) => format!("delete {}", describe(object)),
            Deleted::FinalStateUnknown(tombstone) => {
                format!("delete-unknown {}", describe(&tombstone.last_known))
            }
        };
        self.record(line).await;
    }
}

/// Receives exactly `n` lines.
async fn take(lines: &mut mpsc::UnboundedReceiver<String>, n: usize) -> Vec<String> {
    let mut taken = Vec::with_capacity(n);
    for _ in 0..n {
        taken.push(lines.recv().await.expect("the handler is alive"));
    }
    taken
}

/// Lets every runnable task run, then asserts that nothing more was recorded.
async fn assert_quiet(lines: &mut mpsc::UnboundedReceiver<String>) {
    for _ in 0..10 {
        tokio::task::yield_now().await;
    }
    assert_eq!(lines.try_recv().ok(), None);
}

#[tokio::test(start_paused = true)]
async fn every_handler_sees_each_objects_changes_in_order() {
    let informer = informer();
    let (first, mut first_lines) = Recorder::new();
    let (second, mut second_lines) = Recorder::new();
    informer.add_handler(first);
    informer.add_handler(second);

    informer.apply(replaced(vec![], 1));
    informer.apply(ReflectorEvent::Added(obj("a", 2)));
    informer.apply(ReflectorEvent::Added(obj("b", 3)));
    informer.apply(ReflectorEvent::Modified(obj("a", 4)));
    informer.apply(ReflectorEvent::Modified(obj("b", 5)));
    informer.apply(ReflectorEvent::Deleted(obj("a", 6)));
    informer.apply(ReflectorEvent::Modified(obj("b", 7)));

    let expected = [
        "add ns/a@2",
        "add ns/b@3",
        "update ns/a@2 -> 4",
        "update ns/b@3 -> 5",
        "delete ns/a@6",
        "update ns/b@5 -> 7",
    ];
    assert_eq!(take(&mut first_lines, 6).await, expected);
    assert_eq!(take(&mut second_lines, 6).await, expected);
    assert_quiet(&mut first_lines).await;
    assert_eq!(informer.store().len(), 1);
}

#[tokio::test(start_paused = true)]
async fn the_cache_decides_add_or_update_and_is_written_before_handlers_hear() {
    let informer = informer();
    let store = Arc::clone(informer.store());
    let (lines_tx, mut lines) = mpsc::unbounded_channel();
    // A handler that looks the object up in the cache: it is there, in the state the handler
    // is told about or a later one.
    informer.add_handler(HandlerFns::new().on_add(move |object: Arc<Obj>| {
        let cached = store
            .get(&object.key)
            .expect("cached before the handler runs");
        let line = format!("told {}, cached {}", object.version, cached.version);
        lines_tx.send(line).unwrap();
    }));
    let (recorder, mut recorded) = Recorder::new();
    informer.add_handler(recorder);

    // A MODIFIED event for an unknown key is an add; an ADDED one for a known key an update.
    informer.apply(ReflectorEvent::Modified(obj("a", 1)));
    informer.apply(ReflectorEvent::Added(obj("a", 2)));
    // A deletion of a key never cached is still delivered.
    informer.apply(ReflectorEvent::Deleted(obj("ghost", 3)));

    assert_eq!(take(&mut lines, 1).await, ["told 1, cached 2"]);
    assert_eq!(
        take(&mut recorded, 3).await,
        ["add ns/a@1", "update ns/a@1 -> 2", "delete ns/ghost@3"]
    );
}

#[tokio::test(start_paused = true)]
async fn a_slow_handler_blocks_neither_the_sink_nor_other_handlers() {
    let informer = informer();
    let (slow, mut slow_lines, open_gate) = Recorder::gated();
    let (fast, mut fast_lines) = Recorder::new();
    let slow_registration = informer.add_handler(slow);
    informer.add_handler(fast);

    informer.apply(replaced(vec![], 1));
    for version in 2..102 {
        informer.apply(ReflectorEvent::Modified(obj("a", version)));
    }

    // Every apply returned while the slow handler is parked at its gate on the first event, and
    // the fast handler got everything.
    let fast_seen = take(&mut fast_lines, 100).await;
    assert_eq!(fast_seen[0], "add ns/a@2");
    assert_eq!(fast_seen[99], "update ns/a@100 -> 101");
    assert_quiet(&mut slow_lines).await;
    assert_eq!(slow_registration.pending(), 100);

    open_gate.send_replace(true);
    let slow_seen = take(&mut slow_lines, 100).await;
    assert_eq!(slow_seen, fast_seen, "same notifications, same order");
    tokio::task::yield_now().await;
    assert_eq!(slow_registration.pending(), 0);
}

#[tokio::test(start_paused = true)]
async fn a_relist_is_delivered_as_adds_updates_and_unknown_final_state_deletes() {
    let informer = informer();
    let (recorder, mut lines) = Recorder::new();
    informer.add_handler(recorder);
    assert!(!informer.has_synced());

    informer.apply(replaced(
        vec![obj("same", 1), obj("changed", 1), obj("gone", 1)],
        1,
    ));
    assert!(informer.has_synced());
    let mut initial = take(&mut lines, 3).await;
    initial.sort();
    assert_eq!(
        initial,
        ["add ns/changed@1", "add ns/gone@1", "add ns/same@1"]
    );

    informer.apply(replaced(
        vec![obj("same", 1), obj("changed", 5), obj("new", 5)],
        5,
    ));
    // Adds, then updates, then deletes; the unchanged object is not mentioned.
    assert_eq!(
        take(&mut lines, 3).await,
        [
            "add ns/new@5",
            "update ns/changed@1 -> 5",
            "delete-unknown ns/gone@1"
        ]
    );
    assert_quiet(&mut lines).await;
    assert_eq!(
        informer.store().last_sync_resource_version().as_deref(),
        Some("5")
    );
}

#[tokio::test(start_paused = true)]
async fn a_late_handler_gets_the_cached_objects_as_adds_then_only_later_changes() {
    let informer = informer();
    let (early, mut early_lines) = Recorder::new();
    informer.add_handler(early);
    informer.apply(replaced(vec![obj("a", 1), obj("b", 1)], 1));
    informer.apply(ReflectorEvent::Modified(obj("a", 2)));
    informer.apply(ReflectorEvent::Deleted(obj("b", 3)));
    informer.apply(ReflectorEvent::Added(obj("c", 4)));
    take(&mut early_lines, 5).await;

    let (late, mut late_lines) = Recorder::new();
    informer.add_handler(late);
    informer.apply(ReflectorEvent::Modified(obj("c", 5)));

    let mut adds = take(&mut late_lines, 2).await;
    adds.sort();
    assert_eq!(adds, ["add ns/a@2", "add ns/c@4"]);
    assert_eq!(take(&mut late_lines, 1).await, ["update ns/c@4 -> 5"]);
    assert_quiet(&mut late_lines).await;
}

#[tokio::test(start_paused = true)]
async fn a_bookmark_moves_the_resource_version_and_tells_no_handler() {
    let informer = informer();
    let (recorder, mut lines) = Recorder::new();
    informer.add_handler(recorder);
    informer.apply(replaced(vec![], 1));
    informer.apply(ReflectorEvent::Bookmark {
        resource_version: "9".into(),
    });
    assert_quiet(&mut lines).await;
    assert_eq!(
        informer.store().last_sync_resource_version().as_deref(),
        Some("9")
    );
}

#[tokio::test(start_paused = true)]
async fn resync_redelivers_every_cached_object_each_period() {
    let informer = SharedInformer::builder("objs", Store::new())
        .resync_every(Duration::from_secs(30))
        .build();
    let (recorder, mut lines) = Recorder::new();
    informer.add_handler(recorder);
    let shutdown = CancellationToken::new();
    let running = tokio::spawn(informer.clone().run(shutdown.clone()));

    informer.apply(replaced(vec![obj("a", 1), obj("b", 1)], 1));
    take(&mut lines, 2).await;

    tokio::time::advance(Duration::from_secs(29)).await;
    assert_quiet(&mut lines).await;
    tokio::time::advance(Duration::from_secs(1)).await;
    let mut resynced = take(&mut lines, 2).await;
    resynced.sort();
    assert_eq!(resynced, ["resync ns/a@1", "resync ns/b@1"]);

    informer.apply(ReflectorEvent::Deleted(obj("a", 2)));
    assert_eq!(take(&mut lines, 1).await, ["delete ns/a@2"]);
    tokio::time::advance(Duration::from_secs(30)).await;
    assert_eq!(take(&mut lines, 1).await, ["resync ns/b@1"]);

    shutdown.cancel();
    running.await.unwrap();
}

#[tokio::test(start_paused = true)]
async fn wait_for_cache_sync_ends_on_sync_or_on_cancellation() {
    let jobs = informer();
    let pods = informer();
    let cancel = CancellationToken::new();

    let waiting = tokio::spawn({
        let caches = [jobs.synced(), pods.synced()];
        let cancel = cancel.clone();
        async move { wait_for_cache_sync(caches, &cancel).await }
    });
    jobs.apply(replaced(vec![obj("a", 1)], 1));
    tokio::task::yield_now().await;
    assert!(!waiting.is_finished(), "pods has not synced");
    cancel.cancel();
    assert_eq!(
        waiting.await.unwrap(),
        Err(WaitForSyncError::Cancelled("objs".into()))
    );

    pods.apply(replaced(vec![], 1));
    let fresh = CancellationToken::new();
    let result = wait_for_cache_sync([jobs.synced(), pods.synced()], &fresh).await;
    assert_eq!(result, Ok(()));
}

#[tokio::test(start_paused = true)]
async fn a_panicking_handler_loses_one_notification_and_keeps_going() {
    let informer = informer();
    let (lines_tx, mut lines) = mpsc::unbounded_channel();
    informer.add_handler(HandlerFns::new().on_add(move |object: Arc<Obj>| {
        assert_ne!(object.key.name(), "bad", "handler bug");
        lines_tx.send(describe(&object)).unwrap();
    }));
    informer.apply(ReflectorEvent::Added(obj("bad", 1)));
    informer.apply(ReflectorEvent::Added(obj("good", 2)));
    assert_eq!(take(&mut lines, 1).await, ["ns/good@2"]);
}

#[tokio::test(start_paused = true)]
async fn run_stops_every_handler_task_when_cancelled() {
    let informer = informer();
    let (recorder, mut lines) = Recorder::new();
    let registration = informer.add_handler(recorder);
    let shutdown = CancellationToken::new();
    let running = tokio::spawn(informer.clone().run(shutdown.clone()));
    informer.apply(ReflectorEvent::Added(obj("a", 1)));
    assert_eq!(take(&mut lines, 1).await, ["add ns/a@1"]);

    shutdown.cancel();
    running.await.unwrap();
    // The handler (and its sender) is gone with its task.
    assert_eq!(lines.recv().await, None);
    // Events after the stop still reach the cache; nobody is told.
    informer.apply(ReflectorEvent::Added(obj("b", 2)));
    assert_eq!(informer.store().len(), 2);
    assert_eq!(registration.pending(), 0);
}

#[tokio::test(start_paused = true)]
async fn a_handler_is_synced_once_it_has_handled_the_initial_list() {
    let informer = informer();
    let (slow, mut slow_lines, open_gate) = Recorder::gated();
    let early = informer.add_handler(slow);
    let cancel = CancellationToken::new();

    informer.apply(replaced(vec![obj("a", 1), obj("b", 1)], 1));
    assert!(informer.has_synced());
    // Sent the initial list, not yet handled it.
    assert!(!early.synced().has_synced());
    let waiting = tokio::spawn({
        let synced = early.synced();
        let cancel = cancel.clone();
        async move { synced.wait(&cancel).await }
    });
    tokio::task::yield_now().await;
    assert!(!waiting.is_finished());

    open_gate.send_replace(true);
    assert_eq!(waiting.await.unwrap(), Ok(()));
    assert_eq!(take(&mut slow_lines, 2).await.len(), 2);

    // A handler registered after the sync is synced once it has handled the cached objects.
    let (late, mut late_lines) = Recorder::new();
    let late = informer.add_handler(late);
    late.synced().wait(&cancel).await.unwrap();
    assert_eq!(take(&mut late_lines, 2).await.len(), 2);
    // Later events change nothing.
    informer.apply(replaced(vec![obj("a", 2)], 2));
    assert!(late.synced().has_synced());
}

#[tokio::test(start_paused = true)]
async fn a_handler_is_not_synced_before_the_informer() {
    let informer = informer();
    let (recorder, mut lines) = Recorder::new();
    let registration = informer.add_handler(recorder);
    informer.apply(ReflectorEvent::Added(obj("a", 1)));
    assert_eq!(take(&mut lines, 1).await, ["add ns/a@1"]);
    assert!(!registration.synced().has_synced());
}
