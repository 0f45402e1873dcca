//! [`WorkqueueMetrics`]: the workqueue metrics of client-go, in Prometheus.
//!
//! Contract: implements [`MetricsProvider`]; every queue built with it publishes, under the
//! `workqueue_` prefix with label `name` = the queue's name, the metrics listed in
//! [`kube_gc_runtime::workqueue::metrics`] (`depth`, `adds_total`, `queue_duration_seconds`,
//! `work_duration_seconds`, `unfinished_work_seconds`, `longest_running_processor_seconds`,
//! `retries_total`), histograms with [`DURATION_BUCKETS`]. Two queues with the same name share
//! their series.

use std::sync::atomic::AtomicU64;
use std::sync::Arc;

use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::Histogram;
use prometheus_client::registry::Registry;

use kube_gc_runtime::workqueue::metrics::DURATION_BUCKETS;
use kube_gc_runtime::workqueue::{MetricsProvider, QueueMetrics};

/// A label set of one queue: `name="<queue>"`.
type QueueLabel = [(&'static str, String); 1];
type FloatGauge = Gauge<f64, AtomicU64>;
type HistogramFamily = Family<QueueLabel, Histogram, fn() -> Histogram>;

fn duration_histogram() -> Histogram {
    Histogram::new(DURATION_BUCKETS)
}

/// The workqueue metric families.
#[derive(Clone, Debug)]
pub struct WorkqueueMetrics {
    depth: Family<QueueLabel, Gauge>,
    adds: Family<QueueLabel, Counter>,
    retries: Family<QueueLabel, Counter>,
    queue_duration: HistogramFamily,
    work_duration: HistogramFamily,
    unfinished_work: Family<QueueLabel, FloatGauge>,
    longest_running: Family<QueueLabel, FloatGauge>,
}

impl WorkqueueMetrics {
    /// Creates the families and registers them under `workqueue_` in `registry`.
    pub fn register(registry: &mut Registry) -> WorkqueueMetrics {
        let histogram: fn() -> Histogram = duration_histogram;
        let metrics = WorkqueueMetrics {
            depth: Family::default(),
            adds: Family::default(),
            retries: Family::default(),
            queue_duration: Family::new_with_constructor(histogram),
            work_duration: Family::new_with_constructor(histogram),
            unfinished_work: Family::default(),
            longest_running: Family::default(),
        };
        let r = registry.sub_registry_with_prefix("workqueue");
        r.register("depth", "Current depth of workqueue", metrics.depth.clone());
        r.register(
            "adds",
            "Total number of adds handled by workqueue",
            metrics.adds.clone(),
        );
        r.register(
            "queue_duration_seconds",
            "How long in seconds an item stays in workqueue before being requested",
            metrics.queue_duration.clone(),
        );
        r.register(
            "work_duration_seconds",
            "How long in seconds processing an item from workqueue takes",
            metrics.work_duration.clone(),
        );
        r.register(
            "unfinished_work_seconds",
            "How many seconds of work has been done that is in progress and hasn't been observed by work_duration",
            metrics.unfinished_work.clone(),
        );
        r.register(
            "longest_running_processor_seconds",
            "How many seconds has the longest running processor for workqueue been running",
            metrics.longest_running.clone(),
        );
        r.register(
            "retries",
            "Total number of retries handled by workqueue",
            metrics.retries.clone(),
        );
        metrics
    }
}

impl MetricsProvider for WorkqueueMetrics {
    fn queue_metrics(&self, name: &str) -> Arc<dyn QueueMetrics> {
        let label = [("name", name.to_owned())];
        Arc::new(OneQueue {
            depth: self.depth.get_or_create_owned(&label),
            adds: self.adds.get_or_create_owned(&label),
            retries: self.retries.get_or_create_owned(&label),
            queue_duration: self.queue_duration.get_or_create_owned(&label),
            work_duration: self.work_duration.get_or_create_owned(&label),
            unfinished_work: self.unfinished_work.get_or_create_owned(&label),
            longest_running: self.longest_running.get_or_create_owned(&label),
        })
    }
}

/// The series of one queue (each a handle sharing its value with the registry).
struct OneQueue {
    depth: Gauge,
    adds: Counter,
    retries: Counter,
    queue_duration: Histogram,
    work_duration: Histogram,
    unfinished_work: FloatGauge,
    longest_running: FloatGauge,
}

impl QueueMetrics for OneQueue {
    fn set_depth(&self, depth: usize) {
        self.depth.set(i64::try_from(depth).unwrap_or(i64::MAX));
    }
    fn inc_adds(&self) {
        self.adds.inc();
    }
    fn inc_retries(&self) {
        self.retries.inc();
    }
    fn observe_queue_duration(&self, seconds: f64) {
        self.queue_duration.observe(seconds);
    }
    fn observe_work_duration(&self, seconds: f64) {
        self.work_duration.observe(seconds);
    }
    fn set_unfinished_work(&self, seconds: f64) {
        self.unfinished_work.set(seconds);
    }
    fn set_longest_running_processor(&self, seconds: f64) {
        self.longest_running.set(seconds);
    }
}

#[cfg(test)]
mod tests {
    use crate::metrics::Metrics;
    use kube_gc_runtime::workqueue::WorkQueue;

    #[tokio::test(start_paused = true)]
    async fn a_queue_publishes_client_go_names_with_its_label() {
        let metrics = Metrics::new();
        let provider = metrics.workqueue();
        let queue: WorkQueue<String> = WorkQueue::builder("ttl-after-finished")
            .metrics(provider)
            .build();
        queue.add("a".into());
        queue.add("b".into());
        queue.add("a".into());
        let key = queue.get().await.unwrap();
        tokio::time::advance(std::time::Duration::from_millis(5)).await;
        queue.refresh_unfinished_work();
        queue.done(&key);
        let text = metrics.encode().unwrap();
        for line in [
            "workqueue_depth{name=\"ttl-after-finished\"} 1",
            "workqueue_adds_total{name=\"ttl-after-finished\"} 2",
            "workqueue_work_duration_seconds_count{name=\"ttl-after-finished\"} 1",
            "workqueue_work_duration_seconds_bucket{le=\"0.01\",name=\"ttl-after-finished\"} 1",
            "workqueue_work_duration_seconds_bucket{le=\"0.001\",name=\"ttl-after-finished\"} 0",
            "workqueue_unfinished_work_seconds{name=\"ttl-after-finished\"} 0.005",
            "workqueue_retries_total{name=\"ttl-after-finished\"} 0",
        ] {
            assert!(
                text.lines().any(|l| l == line),
                "missing {line:?} in\n{text}"
            );
        }
        assert_eq!(
            text.matches("workqueue_queue_duration_seconds_bucket{")
                .count(),
            11,
            "10 buckets and +Inf"
        );
    }
}
