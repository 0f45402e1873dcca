//! The worker loop: what happens to a key after each kind of reconcile outcome, how workers
//! share keys, and how a controller starts and stops. Paused clock throughout: delays are
//! measured on tokio's virtual clock, nothing sleeps in real time.

use std::collections::{HashMap, HashSet};
use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use kube_gc::runtime::cache::{Cacheable, ObjectKey, Store};
use kube_gc::runtime::controller::{Action, Controller, ControllerError, Reconciler};
use kube_gc::runtime::informer::{HandlerFns, SharedInformer, WaitForSyncError};
use kube_gc::runtime::reflector::{ReflectorEvent, ReflectorSink};
use kube_gc::runtime::workqueue::WorkQueue;
use parking_lot::Mutex;
use tokio::sync::{mpsc, watch};
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

/// A reconciler made of a closure, so each test states its behaviour inline.
struct FnReconciler<F>(F);

impl<F, Fut> Reconciler<String> for FnReconciler<F>
where
    F: Fn(String) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<Action, String>> + Send,
{
    type Error = String;

    fn reconcile(&self, key: &String) -> impl Future<Output = Result<Action, String>> + Send {
        (self.0)(key.clone())
    }
}

/// Per-key attempt counter shared with a reconciler.
#[derive(Clone, Default)]
struct Attempts(Arc<Mutex<HashMap<String, u32>>>);

impl Attempts {
    /// Counts one more attempt of `key` and returns its number (1 for the first).
    fn next(&self, key: &str) -> u32 {
        let mut attempts = self.0.lock();
        let count = attempts.entry(key.to_owned()).or_default();
        *count += 1;
        *count
    }
}

/// A controller over `queue` running `reconcile` with `workers` workers, started on its own task.
fn start<F, Fut>(
    queue: &WorkQueue<String>,
    workers: usize,
    reconcile: F,
) -> (
    CancellationToken,
    tokio::task::JoinHandle<Result<(), ControllerError>>,
    Arc<kube_gc::runtime::controller::ReconcileCounters>,
)
where
    F: Fn(String) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<Action, String>> + Send + 'static,
{
    let controller =
        Controller::new("test", queue.clone(), FnReconciler(reconcile)).workers(workers);
    let counters = controller.counters();
    let shutdown = CancellationToken::new();
    let running = tokio::spawn(controller.run(shutdown.clone()));
    (shutdown, running, counters)
}

fn ms(n: u64) -> Duration {
    Duration::from_millis(n)
}

/// The gaps between consecutive instants.
fn gaps(instants: &[Instant]) -> Vec<Duration> {
    instants.windows(2).map(|pair| pair[1] - pair[0]).collect()
}

#[tokio::test(start_paused = true)]
async fn ok_forgets_the_keys_back_off() {
    let queue = WorkQueue::new("test");
    let attempts = Attempts::default();
    let (seen_tx, mut seen) = mpsc::unbounded_channel();
    let (shutdown, running, counters) = start(&queue, 1, move |key| {
        let attempt = attempts.next(&key);
        let seen_tx = seen_tx.clone();
        async move {
            seen_tx.send(attempt).unwrap();
            if attempt <= 2 {
                Err(format!("attempt {attempt} fails"))
            } else {
                Ok(Action::Done)
            }
        }
    });
    queue.add("ns/a".to_string());
    for expected in 1..=3 {
        assert_eq!(seen.recv().await, Some(expected));
    }
    // The third attempt succeeded: its `forget` runs before `done`, right after reconcile.
    tokio::task::yield_now().await;
    assert_eq!(queue.num_requeues(&"ns/a".to_string()), 0);
    assert_eq!(
        (counters.reconciles(), counters.errors(), counters.panics()),
        (3, 2, 0)
    );
    shutdown.cancel();
    running.await.unwrap().unwrap();
}

#[tokio::test(start_paused = true)]
async fn errors_are_retried_with_exponential_back_off() {
    let queue = WorkQueue::new("test");
    let (seen_tx, mut seen) = mpsc::unbounded_channel();
    let (shutdown, running, counters) = start(&queue, 1, move |_key| {
        seen_tx.send(Instant::now()).unwrap();
        async { Err::<Action, _>("always fails".to_string()) }
    });
    queue.add("ns/a".to_string());
    let mut instants = Vec::new();
    for _ in 0..6 {
        instants.push(seen.recv().await.unwrap());
    }
    // The default controller limiter: 5 ms doubling per failure (the bucket's burst of 100 is
    // not reached).
    assert_eq!(gaps(&instants), [ms(5), ms(10), ms(20), ms(40), ms(80)]);
    assert!(queue.num_requeues(&"ns/a".to_string()) >= 5);
    assert!(counters.errors() >= 5);
    shutdown.cancel();
    running.await.unwrap().unwrap();
}

#[tokio::test(start_paused = true)]
async fn requeue_after_brings_the_key_back_after_the_delay() {
    let queue = WorkQueue::new("test");
    let (seen_tx, mut seen) = mpsc::unbounded_channel();
    let attempts = Attempts::default();
    let (shutdown, running, _counters) = start(&queue, 1, move |key| {
        let attempt = attempts.next(&key);
        seen_tx.send((attempt, Instant::now())).unwrap();
        async move {
            match attempt {
                1 => Err("first fails".to_string()),
                2 => Ok(Action::RequeueAfter(Duration::from_secs(30))),
                _ => Ok(Action::Done),
            }
        }
    });
    queue.add("ns/a".to_string());
    let (_, first) = seen.recv().await.unwrap();
    let (_, second) = seen.recv().await.unwrap();
    assert_eq!(second - first, ms(5), "rate-limited after the error");
    // A successful requeue is not a failure: the back-off was forgotten.
    tokio::task::yield_now().await;
    assert_eq!(queue.num_requeues(&"ns/a".to_string()), 0);
    let (third_attempt, third) = seen.recv().await.unwrap();
    assert_eq!(third_attempt, 3);
    assert_eq!(third - second, Duration::from_secs(30));
    shutdown.cancel();
    running.await.unwrap().unwrap();
}

#[tokio::test(start_paused = true)]
async fn a_panicking_reconcile_is_retried_and_the_worker_survives() {
    let queue = WorkQueue::new("test");
    let attempts = Attempts::default();
    let (seen_tx, mut seen) = mpsc::unbounded_channel();
    let (shutdown, running, counters) = start(&queue, 1, move |key| {
        let attempt = attempts.next(&key);
        seen_tx
            .send((key.clone(), attempt, Instant::now()))
            .unwrap();
        async move {
            if key == "ns/bomb" && attempt == 1 {
                panic!("reconcile bug");
            }
            Ok(Action::Done)
        }
    });
    queue.add("ns/bomb".to_string());
    queue.add("ns/other".to_string());

    let (key, attempt, panicked_at) = seen.recv().await.unwrap();
    assert_eq!((key.as_str(), attempt), ("ns/bomb", 1));
    // The one worker went on to the next key...
    let (key, _, _) = seen.recv().await.unwrap();
    assert_eq!(key, "ns/other");
    // ...and the panicked key came back, rate-limited.
    let (key, attempt, retried_at) = seen.recv().await.unwrap();
    assert_eq!((key.as_str(), attempt), ("ns/bomb", 2));
    assert_eq!(retried_at - panicked_at, ms(5));

    tokio::task::yield_now().await;
    assert_eq!(
        (counters.reconciles(), counters.errors(), counters.panics()),
        (3, 0, 1)
    );
    shutdown.cancel();
    running.await.unwrap().unwrap();
}

#[tokio::test(start_paused = true)]
async fn workers_share_the_load_but_never_a_key() {
    const WORKERS: usize = 4;
    const ROUNDS: usize = 50;
    let queue = WorkQueue::new("test");
    let in_progress: Arc<Mutex<HashSet<String>>> = Arc::default();
    let most_at_once = Arc::new(Mutex::new(0_usize));
    let (done_tx, mut done) = mpsc::unbounded_channel();
    let (shutdown, running, counters) = start(&queue, WORKERS, {
        let in_progress = Arc::clone(&in_progress);
        let most_at_once = Arc::clone(&most_at_once);
        move |key| {
            let in_progress = Arc::clone(&in_progress);
            let most_at_once = Arc::clone(&most_at_once);
            let done_tx = done_tx.clone();
            async move {
                {
                    let mut keys = in_progress.lock();
                    assert!(keys.insert(key.clone()), "{key} reconciled twice at once");
                    let mut most = most_at_once.lock();
                    *most = (*most).max(keys.len());
                }
                // Virtual time: lets the other workers (and the test's re-adds) run meanwhile.
                tokio::time::sleep(ms(10)).await;
                in_progress.lock().remove(&key);
                done_tx.send(key).unwrap();
                Ok(Action::Done)
            }
        }
    });

    let keys: Vec<String> = (0..6).map(|i| format!("ns/k{i}")).collect();
    for _ in 0..ROUNDS {
        // Every key again, including the ones being reconciled right now.
        for key in &keys {
            queue.add(key.clone());
        }
        tokio::time::sleep(ms(3)).await;
    }
    // Let everything still queued finish.
    tokio::time::sleep(Duration::from_secs(10)).await;
    shutdown.cancel();
    running.await.unwrap().unwrap();

    let mut reconciled = 0;
    while done.try_recv().is_ok() {
        reconciled += 1;
    }
    // The overlap assertion panics inside reconcile, where the loop catches it: count them.
    assert_eq!(counters.panics(), 0, "a key was reconciled twice at once");
    assert_eq!(
        *most_at_once.lock(),
        WORKERS,
        "all workers were busy at once"
    );
    // Re-adds during a reconcile were coalesced, not lost and not run in parallel.
    assert!(reconciled > keys.len() && reconciled < keys.len() * ROUNDS);
}

#[tokio::test(start_paused = true)]
async fn shutdown_finishes_the_work_in_hand_and_starts_no_more() {
    let queue = WorkQueue::new("test");
    let (gate_tx, gate) = watch::channel(false);
    let (events_tx, mut events) = mpsc::unbounded_channel();
    let (shutdown, running, counters) = start(&queue, 1, move |key| {
        let mut gate = gate.clone();
        let events_tx = events_tx.clone();
        async move {
            events_tx.send(format!("start {key}")).unwrap();
            if key == "ns/slow" {
                gate.wait_for(|open| *open).await.unwrap();
            }
            events_tx.send(format!("finish {key}")).unwrap();
            Ok(Action::Done)
        }
    });
    queue.add("ns/slow".to_string());
    assert_eq!(events.recv().await.unwrap(), "start ns/slow");
    queue.add("ns/queued".to_string());

    shutdown.cancel();
    for _ in 0..10 {
        tokio::task::yield_now().await;
    }
    assert!(!running.is_finished(), "waits for the reconcile in hand");
    assert!(queue.is_shutting_down());

    gate_tx.send_replace(true);
    running.await.unwrap().unwrap();
    assert_eq!(events.recv().await.unwrap(), "finish ns/slow");
    // The queued key was never started.
    assert_eq!(events.try_recv().ok(), None);
    assert_eq!(counters.reconciles(), 1);
}

/// A cached object for the tests with informers.
#[derive(Debug)]
struct Obj {
    key: ObjectKey,
}

impl Cacheable for Obj {
    fn cache_key(&self) -> ObjectKey {
        self.key.clone()
    }
    fn resource_version(&self) -> &str {
        ""
    }
    fn uid(&self) -> &str {
        self.key.as_str()
    }
}

fn obj(name: &str) -> Obj {
    Obj {
        key: ObjectKey::new("ns", name),
    }
}

#[tokio::test(start_paused = true)]
async fn workers_start_after_the_caches_sync_and_informers_stop_last() {
    let informer = SharedInformer::builder("objs", Store::new()).build();
    let queue = WorkQueue::new("test");
    let handler_queue = queue.clone();
    let registration = informer.add_handler(
        HandlerFns::new().on_add(move |object: Arc<Obj>| handler_queue.add(object.key.to_string())),
    );
    let (seen_tx, mut seen) = mpsc::unbounded_channel();
    let controller = Controller::new(
        "test",
        queue.clone(),
        FnReconciler(move |key: String| {
            seen_tx.send(key).unwrap();
            async { Ok(Action::Done) }
        }),
    )
    .workers(2)
    .informer(&informer);
    let shutdown = CancellationToken::new();
    let running = tokio::spawn(controller.run(shutdown.clone()));

    // A key queued before the sync waits for it.
    queue.add("ns/early".to_string());
    for _ in 0..10 {
        tokio::task::yield_now().await;
    }
    assert_eq!(
        seen.try_recv().ok(),
        None,
        "no worker before the cache syncs"
    );

    informer.apply(ReflectorEvent::Replaced {
        objects: vec![obj("listed")],
        resource_version: "1".into(),
    });
    let mut first_two = vec![seen.recv().await.unwrap(), seen.recv().await.unwrap()];
    first_two.sort();
    assert_eq!(first_two, ["ns/early", "ns/listed"]);

    shutdown.cancel();
    running.await.unwrap().unwrap();
    // The controller stopped the informer it owned: its handler task is gone, so new events
    // queue nothing.
    informer.apply(ReflectorEvent::Added(obj("after")));
    assert_eq!(registration.pending(), 0);
    assert!(queue.is_shutting_down());
}

#[tokio::test(start_paused = true)]
async fn shutdown_while_waiting_for_caches_is_a_clean_stop() {
    let informer: SharedInformer<Obj> = SharedInformer::builder("objs", Store::new()).build();
    let queue = WorkQueue::new("test");
    let controller = Controller::new(
        "test",
        queue,
        FnReconciler(|_key: String| async { Ok(Action::Done) }),
    )
    .informer(&informer);
    let shutdown = CancellationToken::new();
    let running = tokio::spawn(controller.run(shutdown.clone()));
    tokio::task::yield_now().await;
    shutdown.cancel();
    running.await.unwrap().unwrap();
}

#[tokio::test(start_paused = true)]
async fn a_cache_that_can_never_sync_is_an_error() {
    let synced = {
        let informer: SharedInformer<Obj> = SharedInformer::builder("objs", Store::new()).build();
        informer.synced()
    };
    let controller = Controller::new(
        "test",
        WorkQueue::new("test"),
        FnReconciler(|_key: String| async { Ok(Action::Done) }),
    )
    .wait_for(synced);
    let result = controller.run(CancellationToken::new()).await;
    assert!(matches!(
        result,
        Err(ControllerError::CacheSync {
            source: WaitForSyncError::InformerGone(_),
            ..
        })
    ));
}

#[tokio::test(start_paused = true)]
async fn dropping_the_run_future_stops_everything_it_started() {
    let informer = SharedInformer::builder("objs", Store::new()).build();
    let (seen_tx, mut seen) = mpsc::unbounded_channel();
    let registration = informer.add_handler(HandlerFns::new().on_add(move |object: Arc<Obj>| {
        seen_tx.send(object.key.to_string()).unwrap();
    }));
    let controller = Controller::new(
        "test",
        WorkQueue::new("test"),
        FnReconciler(|_key: String| async { Ok(Action::Done) }),
    )
    .workers(3)
    .informer(&informer);
    let running = tokio::spawn(controller.run(CancellationToken::new()));
    informer.apply(ReflectorEvent::Replaced {
        objects: vec![obj("a")],
        resource_version: "1".into(),
    });
    assert_eq!(seen.recv().await.unwrap(), "ns/a");

    running.abort();
    assert!(running.await.unwrap_err().is_cancelled());
    // The informer's handler task saw its stop signal and ended, dropping the handler.
    assert_eq!(seen.recv().await, None);
    informer.apply(ReflectorEvent::Added(obj("b")));
    assert_eq!(registration.pending(), 0);
}
