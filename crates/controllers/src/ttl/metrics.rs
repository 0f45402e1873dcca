//! [`TtlMetrics`]: the TTL controllers' Prometheus metrics, built from `prometheus_client` types.
//!
//! Contract: one `TtlMetrics` is shared by both kinds; every series carries a `kind` label
//! (`Job`, `VolcanoJob`). [`TtlMetrics::register`] adds them to a registry, whoever serves it:
//!
//! | name | type | meaning |
//! |---|---|---|
//! | `ttl_after_finished_controller_job_deletion_duration_seconds` | histogram | seconds from expiry to a successful delete; upstream's buckets 0.1 × 2^k, k = 0..13 |
//! | `ttl_after_finished_controller_deletions_total` | counter | objects deleted |
//! | `ttl_after_finished_controller_errors_total` | counter | failed reconciles, by `reason` (`missing_finish_time`, `unreadable`, `api`) |
//!
//! The workqueue metrics come from the queue's own `MetricsProvider`.

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::histogram::{exponential_buckets, Histogram};
use prometheus_client::registry::Registry;

use crate::retention::engine::Tally;
use crate::retention::policy::CompiledPolicy;

/// Labels of the per-kind series.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct KindLabels {
    /// `Job` or `VolcanoJob`.
    pub kind: &'static str,
}

/// Labels of the error counter.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct ErrorLabels {
    /// `Job` or `VolcanoJob`.
    pub kind: &'static str,
    /// Why the reconcile failed.
    pub reason: &'static str,
}

/// Why a reconcile failed, as the error counter labels it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ErrorReason {
    /// A finished object without a finish time.
    MissingFinishTime,
    /// A TTL or status field that cannot be read (a TTL that is not a number): the object is
    /// kept and a Warning Event says why.
    Unreadable,
    /// A request to the API server failed.
    Api,
}

impl ErrorReason {
    fn label(self) -> &'static str {
        match self {
            ErrorReason::MissingFinishTime => "missing_finish_time",
            ErrorReason::Unreadable => "unreadable",
            ErrorReason::Api => "api",
        }
    }
}

type HistogramConstructor = fn() -> Histogram;

/// The TTL controllers' metrics; cheap to share behind an `Arc`.
#[derive(Debug)]
pub struct TtlMetrics {
    deletion_duration: Family<KindLabels, Histogram, HistogramConstructor>,
    deletions: Family<KindLabels, Counter>,
    errors: Family<ErrorLabels, Counter>,
}

impl Default for TtlMetrics {
    fn default() -> Self {
        TtlMetrics::new()
    }
}

/// Upstream's buckets: 0.1 s doubling 14 times, up to 819.2 s.
fn deletion_histogram() -> Histogram {
    Histogram::new(exponential_buckets(0.1, 2.0, 14))
}

impl TtlMetrics {
    /// Metrics with every series at zero.
    pub fn new() -> Self {
        TtlMetrics {
            deletion_duration: Family::new_with_constructor(deletion_histogram),
            deletions: Family::default(),
            errors: Family::default(),
        }
    }

    /// Adds every metric to `registry`.
    pub fn register(&self, registry: &mut Registry) {
        registry.register(
            "ttl_after_finished_controller_job_deletion_duration_seconds",
            "The time it took to delete the job since it became eligible for deletion",
            self.deletion_duration.clone(),
        );
        registry.register(
            "ttl_after_finished_controller_deletions",
            "Finished objects deleted because their TTL expired",
            self.deletions.clone(),
        );
        registry.register(
            "ttl_after_finished_controller_errors",
            "Failed TTL reconciles, retried with back-off",
            self.errors.clone(),
        );
    }

    /// A successful delete of a `kind` object, `latency_seconds` after it expired.
    pub fn observe_deletion(&self, kind: &'static str, latency_seconds: f64) {
        let labels = KindLabels { kind };
        self.deletion_duration
            .get_or_create(&labels)
            .observe(latency_seconds.max(0.0));
        self.deletions.get_or_create(&labels).inc();
    }

    /// A failed reconcile of a `kind` object.
    pub fn observe_error(&self, kind: &'static str, reason: ErrorReason) {
        let labels = ErrorLabels {
            kind,
            reason: reason.label(),
        };
        self.errors.get_or_create(&labels).inc();
    }

    /// How many `kind` objects were deleted so far.
    pub fn deletions(&self, kind: &'static str) -> u64 {
        self.deletions.get_or_create(&KindLabels { kind }).get()
    }

    /// How many `kind` reconciles failed for `reason` so far.
    pub fn errors(&self, kind: &'static str, reason: ErrorReason) -> u64 {
        let labels = ErrorLabels {
            kind,
            reason: reason.label(),
        };
        self.errors.get_or_create(&labels).get()
    }
}

/// The engine's outcomes, counted into a [`TtlMetrics`] under one kind's label: a TTL
/// controller's [`Tally`].
#[derive(Debug)]
pub struct KindTally {
    metrics: std::sync::Arc<TtlMetrics>,
    kind: &'static str,
}

impl KindTally {
    /// Counts into `metrics` as `kind` (`Job`, `VolcanoJob`).
    pub fn new(metrics: std::sync::Arc<TtlMetrics>, kind: &'static str) -> KindTally {
        KindTally { metrics, kind }
    }
}

impl Tally for KindTally {
    fn deleted(
        &self,
        _policy: &CompiledPolicy,
        _reason: &'static str,
        dry_run: bool,
        latency: Option<f64>,
    ) {
        // Upstream counts deletions made, not decisions: a dry run counts nothing.
        if !dry_run {
            self.metrics
                .observe_deletion(self.kind, latency.unwrap_or(0.0));
        }
    }

    fn kept(&self, reason: &'static str) {
        let reason = match reason {
            "finish_time_unknown" => ErrorReason::MissingFinishTime,
            _ => ErrorReason::Unreadable,
        };
        self.metrics.observe_error(self.kind, reason);
    }

    fn api_error(&self, _verb: &'static str) {
        self.metrics.observe_error(self.kind, ErrorReason::Api);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn registered_metrics_render_with_upstream_names_and_buckets() {
        let metrics = TtlMetrics::new();
        metrics.observe_deletion("Job", 0.003);
        metrics.observe_error("VolcanoJob", ErrorReason::MissingFinishTime);
        let mut registry = Registry::default();
        metrics.register(&mut registry);
        let mut text = String::new();
        prometheus_client::encoding::text::encode(&mut text, &registry).unwrap();
        for needle in [
            r#"ttl_after_finished_controller_job_deletion_duration_seconds_bucket{le="0.1",kind="Job"} 1"#,
            r#"ttl_after_finished_controller_job_deletion_duration_seconds_bucket{le="819.2",kind="Job"} 1"#,
            r#"ttl_after_finished_controller_deletions_total{kind="Job"} 1"#,
            r#"ttl_after_finished_controller_errors_total{kind="VolcanoJob",reason="missing_finish_time"} 1"#,
        ] {
            assert!(text.contains(needle), "{needle} not in:\n{text}");
        }
        assert_eq!(metrics.deletions("Job"), 1);
        assert_eq!(
            metrics.errors("VolcanoJob", ErrorReason::MissingFinishTime),
            1
        );
    }

    #[test]
    fn the_engines_outcomes_are_counted_under_upstreams_names() {
        use crate::ttl::{BatchJob, TtlKind};
        let metrics = std::sync::Arc::new(TtlMetrics::new());
        let tally = KindTally::new(std::sync::Arc::clone(&metrics), "Job");
        let policy = BatchJob::policy();
        tally.deleted(&policy, "ttl", true, Some(1.0));
        assert_eq!(metrics.deletions("Job"), 0, "a dry run deletes nothing");
        tally.deleted(&policy, "ttl", false, Some(1.0));
        assert_eq!(metrics.deletions("Job"), 1);
        tally.kept("finish_time_unknown");
        tally.kept("own_ttl");
        tally.api_error("delete");
        assert_eq!(metrics.errors("Job", ErrorReason::MissingFinishTime), 1);
        assert_eq!(metrics.errors("Job", ErrorReason::Unreadable), 1);
        assert_eq!(metrics.errors("Job", ErrorReason::Api), 1);
    }
}
