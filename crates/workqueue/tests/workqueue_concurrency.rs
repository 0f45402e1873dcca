//! The workqueue under real concurrency: many workers on a multi-threaded runtime, producers
//! adding the same few keys over and over while they are being processed.
//!
//! Checked: no key is ever held by two workers at once; every add is followed by a delivery (a
//! key added while it was processed is processed again); shut-down with drain lets every worker
//! finish and exit. Only immediate adds are used, so nothing waits on the real clock.

use kube_gc_workqueue::WorkQueue;
use parking_lot::Mutex;
use std::collections::HashSet;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

const KEYS: u32 = 64;
const WORKERS: usize = 16;
const PRODUCERS: u32 = 4;
const ADDS_PER_PRODUCER: u32 = 20_000;

/// Shared bookkeeping of the test, independent of the queue.
#[derive(Default)]
struct Ledger {
    /// Keys some worker holds right now.
    held: Mutex<HashSet<u32>>,
    /// Keys added since their last delivery. A worker settles the debt right after `get`; an add
    /// landing between the queue's hand-out and that settlement is credited to the wrong delivery,
    /// a window of a few instructions, whereas a lost re-queue would show for the whole `yield`
    /// that stands for the work (the exact rules are checked by `workqueue_model.rs`).
    owed: Mutex<HashSet<u32>>,
    deliveries: AtomicU64,
}

async fn worker(queue: WorkQueue<u32>, ledger: Arc<Ledger>) -> Result<(), String> {
    while let Some(key) = queue.get().await {
        ledger.owed.lock().remove(&key);
        if !ledger.held.lock().insert(key) {
            return Err(format!("key {key} handed to two workers"));
        }
        ledger.deliveries.fetch_add(1, Ordering::Relaxed);
        // Give other workers and producers a chance to run while we "work".
        tokio::task::yield_now().await;
        ledger.held.lock().remove(&key);
        queue.done(&key);
    }
    Ok(())
}

async fn producer(queue: WorkQueue<u32>, ledger: Arc<Ledger>, seed: u32) {
    for i in 0..ADDS_PER_PRODUCER {
        let key = (i.wrapping_mul(2_654_435_761).wrapping_add(seed)) % KEYS;
        // Owed before the add: a worker that takes the key after this point settles the debt.
        ledger.owed.lock().insert(key);
        queue.add(key);
        if i % 64 == 0 {
            tokio::task::yield_now().await;
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn workers_never_share_a_key_and_every_add_is_served() {
    let queue: WorkQueue<u32> = WorkQueue::new("concurrency");
    let ledger = Arc::new(Ledger::default());
    let workers: Vec<_> = (0..WORKERS)
        .map(|_| tokio::spawn(worker(queue.clone(), ledger.clone())))
        .collect();
    let producers: Vec<_> = (0..PRODUCERS)
        .map(|seed| tokio::spawn(producer(queue.clone(), ledger.clone(), seed)))
        .collect();
    for producer in producers {
        producer.await.expect("producer panicked");
    }
    // Every add has happened; shutting down now loses none of them (ready keys are still handed
    // out, dirty keys still re-queued by `done`).
    queue.shut_down_with_drain().await;
    for worker in workers {
        worker
            .await
            .expect("worker panicked")
            .expect("worker saw a violation");
    }
    assert!(
        ledger.owed.lock().is_empty(),
        "adds never served: {:?}",
        ledger.owed.lock()
    );
    assert!(ledger.held.lock().is_empty());
    let deliveries = ledger.deliveries.load(Ordering::Relaxed);
    let adds = u64::from(PRODUCERS * ADDS_PER_PRODUCER);
    assert!(
        deliveries <= adds,
        "more deliveries ({deliveries}) than adds ({adds})"
    );
    assert!(deliveries >= u64::from(KEYS));
    assert_eq!(queue.len(), 0);
}

#[tokio::test(start_paused = true)]
async fn many_timers_and_workers_on_the_paused_clock() {
    use std::time::Duration;
    let queue: WorkQueue<u32> = WorkQueue::new("timers");
    let ledger = Arc::new(Ledger::default());
    let workers: Vec<_> = (0..8)
        .map(|_| tokio::spawn(worker(queue.clone(), ledger.clone())))
        .collect();
    let start = tokio::time::Instant::now();
    for key in 0..1000u32 {
        ledger.owed.lock().insert(key);
        // Each key twice: the later request is dropped, the earlier one served.
        queue.add_after(key, Duration::from_millis(u64::from(key % 97) + 1));
        queue.add_after(key, Duration::from_millis(200));
    }
    // The paused clock jumps from timer to timer while the workers are idle.
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert_eq!(ledger.deliveries.load(Ordering::Relaxed), 1000);
    assert!(start.elapsed() >= Duration::from_millis(500));
    queue.shut_down_with_drain().await;
    for worker in workers {
        worker
            .await
            .expect("worker panicked")
            .expect("worker saw a violation");
    }
    assert!(ledger.owed.lock().is_empty());
}
