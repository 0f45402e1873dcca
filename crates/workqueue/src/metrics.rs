//! Metrics hooks of the workqueue, with client-go's names and meanings.
//!
//! A [`MetricsProvider`] hands out one [`QueueMetrics`] object per queue name; the queue calls
//! its methods as things happen. The exporter (Prometheus, a later issue) implements the provider
//! and publishes, under subsystem `workqueue` and label `name`:
//!
//! | metric                               | kind      | meaning                                        |
//! |--------------------------------------|-----------|------------------------------------------------|
//! | `depth`                              | gauge     | keys waiting to be handed out (dirty keys)     |
//! | `adds_total`                         | counter   | adds that were not de-duplicated               |
//! | `queue_duration_seconds`             | histogram | from the add to the `get` that hands it out     |
//! | `work_duration_seconds`              | histogram | from `get` to `done`                           |
//! | `unfinished_work_seconds`            | gauge     | sum of the ages of all work in progress        |
//! | `longest_running_processor_seconds`  | gauge     | age of the oldest work in progress             |
//! | `retries_total`                      | counter   | every `add_after` / `add_rate_limited` call    |
//!
//! Histograms use [`DURATION_BUCKETS`] (client-go's: 10 buckets from 1e-8 s, factor 10).
//!
//! The two "unfinished" gauges are not pushed on a timer (client-go refreshes them every 500 ms
//! from a goroutine per queue). The queue computes them on demand from the start times of the work
//! in progress: the exporter calls
//! [`WorkQueue::refresh_unfinished_work`](super::WorkQueue::refresh_unfinished_work) right before
//! it encodes a scrape, so the values are exact at scrape time and idle queues cost nothing.
//!
//! Methods are called while the queue's lock is held: implementations must be quick and must not
//! call back into the queue.

use parking_lot::Mutex;
use std::collections::HashMap;
use std::sync::atomic::{AtomicI64, AtomicU64, Ordering};
use std::sync::Arc;

/// Upper bounds (seconds) of the duration histograms: 1e-8, 1e-7, …, 10.
pub const DURATION_BUCKETS: [f64; 10] = [1e-8, 1e-7, 1e-6, 1e-5, 1e-4, 1e-3, 1e-2, 1e-1, 1.0, 10.0];

/// The metrics of one named queue.
pub trait QueueMetrics: Send + Sync {
    /// `depth`: the number of dirty keys, i.e. added and not yet handed to a worker.
    fn set_depth(&self, depth: usize);
    /// `adds_total`: one add that made a key dirty (de-duplicated adds are not counted).
    fn inc_adds(&self);
    /// `retries_total`: one delayed add (`add_after` or `add_rate_limited`).
    fn inc_retries(&self);
    /// `queue_duration_seconds`: how long a key waited between its add and the `get`.
    fn observe_queue_duration(&self, seconds: f64);
    /// `work_duration_seconds`: how long a worker held a key, from `get` to `done`.
    fn observe_work_duration(&self, seconds: f64);
    /// `unfinished_work_seconds`: the summed age of all work in progress.
    fn set_unfinished_work(&self, seconds: f64);
    /// `longest_running_processor_seconds`: the age of the oldest work in progress.
    fn set_longest_running_processor(&self, seconds: f64);
}

/// Creates the [`QueueMetrics`] of each queue, by queue name.
pub trait MetricsProvider: Send + Sync {
    /// The metrics object for the queue called `name`.
    fn queue_metrics(&self, name: &str) -> Arc<dyn QueueMetrics>;
}

/// The default provider: records nothing.
#[derive(Debug, Clone, Copy, Default)]
pub struct NoopMetricsProvider;

/// The metrics object [`NoopMetricsProvider`] hands out.
#[derive(Debug, Clone, Copy, Default)]
pub struct NoopQueueMetrics;

impl MetricsProvider for NoopMetricsProvider {
    fn queue_metrics(&self, _name: &str) -> Arc<dyn QueueMetrics> {
        Arc::new(NoopQueueMetrics)
    }
}

impl QueueMetrics for NoopQueueMetrics {
    fn set_depth(&self, _depth: usize) {}
    fn inc_adds(&self) {}
    fn inc_retries(&self) {}
    fn observe_queue_duration(&self, _seconds: f64) {}
    fn observe_work_duration(&self, _seconds: f64) {}
    fn set_unfinished_work(&self, _seconds: f64) {}
    fn set_longest_running_processor(&self, _seconds: f64) {}
}

/// A provider that keeps everything in memory, for tests and debugging.
#[derive(Debug, Default)]
pub struct RecordingMetricsProvider {
    queues: Mutex<HashMap<String, Arc<RecordingQueueMetrics>>>,
}

impl RecordingMetricsProvider {
    /// An empty recorder.
    pub fn new() -> Self {
        Self::default()
    }

    /// What has been recorded for the queue called `name`, if it was created.
    pub fn queue(&self, name: &str) -> Option<Arc<RecordingQueueMetrics>> {
        self.queues.lock().get(name).cloned()
    }
}

impl MetricsProvider for RecordingMetricsProvider {
    fn queue_metrics(&self, name: &str) -> Arc<dyn QueueMetrics> {
        self.queues
            .lock()
            .entry(name.to_owned())
            .or_default()
            .clone()
    }
}

/// Everything recorded for one queue. Gauges keep their last value; histograms keep every
/// observation.
#[derive(Debug, Default)]
pub struct RecordingQueueMetrics {
    depth: AtomicI64,
    adds: AtomicU64,
    retries: AtomicU64,
    queue_durations: Mutex<Vec<f64>>,
    work_durations: Mutex<Vec<f64>>,
    unfinished_work: Mutex<f64>,
    longest_running: Mutex<f64>,
}

impl RecordingQueueMetrics {
    /// Last `depth` set.
    pub fn depth(&self) -> i64 {
        self.depth.load(Ordering::Relaxed)
    }
    /// `adds_total`.
    pub fn adds(&self) -> u64 {
        self.adds.load(Ordering::Relaxed)
    }
    /// `retries_total`.
    pub fn retries(&self) -> u64 {
        self.retries.load(Ordering::Relaxed)
    }
    /// Every `queue_duration_seconds` observation, in order.
    pub fn queue_durations(&self) -> Vec<f64> {
        self.queue_durations.lock().clone()
    }
    /// Every `work_duration_seconds` observation, in order.
    pub fn work_durations(&self) -> Vec<f64> {
        self.work_durations.lock().clone()
    }
    /// Last `unfinished_work_seconds` set.
    pub fn unfinished_work(&self) -> f64 {
        *self.unfinished_work.lock()
    }
    /// Last `longest_running_processor_seconds` set.
    pub fn longest_running_processor(&self) -> f64 {
        *self.longest_running.lock()
    }
}

impl QueueMetrics for RecordingQueueMetrics {
    fn set_depth(&self, depth: usize) {
        let depth = i64::try_from(depth).unwrap_or(i64::MAX);
        self.depth.store(depth, Ordering::Relaxed);
    }
    fn inc_adds(&self) {
        self.adds.fetch_add(1, Ordering::Relaxed);
    }
    fn inc_retries(&self) {
        self.retries.fetch_add(1, Ordering::Relaxed);
    }
    fn observe_queue_duration(&self, seconds: f64) {
        self.queue_durations.lock().push(seconds);
    }
    fn observe_work_duration(&self, seconds: f64) {
        self.work_durations.lock().push(seconds);
    }
    fn set_unfinished_work(&self, seconds: f64) {
        *self.unfinished_work.lock() = seconds;
    }
    fn set_longest_running_processor(&self, seconds: f64) {
        *self.longest_running.lock() = seconds;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn buckets_are_ten_powers_of_ten_from_1e_8() {
        for (i, bound) in DURATION_BUCKETS.iter().enumerate() {
            let expected = 1e-8 * 10f64.powi(i as i32);
            assert!(
                (bound - expected).abs() <= expected * 1e-9,
                "{bound} vs {expected}"
            );
        }
    }

    #[test]
    fn recorder_hands_out_one_object_per_name() {
        let provider = RecordingMetricsProvider::new();
        let a = provider.queue_metrics("a");
        let a_again = provider.queue_metrics("a");
        provider.queue_metrics("b").inc_adds();
        a.inc_adds();
        a_again.inc_adds();
        a.set_depth(3);
        assert_eq!(provider.queue("a").map(|m| m.adds()), Some(2));
        assert_eq!(provider.queue("a").map(|m| m.depth()), Some(3));
        assert_eq!(provider.queue("b").map(|m| m.adds()), Some(1));
        assert!(provider.queue("c").is_none());
    }
}
