//! What the workqueue benchmarks share: realistic keys, and the `add_after` insert measurement
//! (a queue already holding a million timers, then fresh keys inserted and timed).
#![allow(dead_code)] // Each bench binary uses part of it.

use kube_gc_workqueue::WorkQueue;
use std::ops::Range;
use std::time::{Duration, Instant};

/// Timers already waiting when the insert cost is measured.
pub const PENDING_TIMERS: usize = 1_000_000;

/// Realistic `namespace/name` keys, 25 bytes each.
pub fn key(i: usize) -> String {
    format!("namespace-{:02}/job-{:07}", i % 50, i)
}

/// A queue holding [`PENDING_TIMERS`] timers, all an hour or more away, with keys `key(0..)`.
pub fn queue_with_pending_timers() -> WorkQueue<String> {
    let queue = WorkQueue::new("insert");
    let hour = Duration::from_secs(3600);
    for i in 0..PENDING_TIMERS {
        queue.add_after(
            key(i),
            hour + Duration::from_micros(i as u64 * 7 % 3_600_000),
        );
    }
    queue
}

/// Time taken to `add_after` `inserts` fresh keys, `key(first..first + inserts)` (made before
/// the clock starts), into `queue`.
pub fn time_inserts(queue: &WorkQueue<String>, first: usize, inserts: usize) -> Duration {
    let hour = Duration::from_secs(3600);
    let fresh: Vec<String> = (first..first + inserts).map(key).collect();
    let start = Instant::now();
    for (i, key) in fresh.into_iter().enumerate() {
        queue.add_after(key, hour + Duration::from_micros(i as u64 * 13 % 3_600_000));
    }
    start.elapsed()
}

/// Takes the keys `key(keys)`, waiting in `queue`, out of it again: each is added (which cancels
/// its timer), taken and done. Lets a benchmark insert into the same queue of a million timers
/// sample after sample without the queue growing.
pub async fn remove_waiting(queue: &WorkQueue<String>, keys: Range<usize>) {
    let count = keys.len();
    for i in keys {
        queue.add(key(i));
    }
    for _ in 0..count {
        if let Some(taken) = queue.get().await {
            queue.done(&taken);
        }
    }
}
