//! [`NotifyMetrics`]: what the notifier sent, and what it could not.
//!
//! | name | type | meaning |
//! |---|---|---|
//! | `kube_gc_notification_batches_sent_total{destination}` | counter | batches a receiver accepted (2xx) |
//! | `kube_gc_notification_batches_dropped_total{destination}` | counter | batches given up on: the receiver refused them, or did not accept them before the next batch was due, or the policy's Secret could not be read |
//! | `kube_gc_notification_attempts_failed_total{destination}` | counter | requests that failed (each retry counts) |
//!
//! `destination` is `--notify-webhook-url`, or the policy as `ClusterRetentionPolicy/name` or
//! `RetentionPolicy/namespace/name`.

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::registry::Registry;

/// A destination label.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct DestinationLabels {
    /// `--notify-webhook-url`, or the policy.
    pub destination: String,
}

/// The notifier's metrics; share behind an `Arc`.
#[derive(Debug, Default)]
pub struct NotifyMetrics {
    sent: Family<DestinationLabels, Counter>,
    dropped: Family<DestinationLabels, Counter>,
    failed: Family<DestinationLabels, Counter>,
}

impl NotifyMetrics {
    /// Adds every metric to `registry`.
    pub fn register(&self, registry: &mut Registry) {
        registry.register(
            "kube_gc_notification_batches_sent",
            "Notification batches a receiver accepted",
            self.sent.clone(),
        );
        registry.register(
            "kube_gc_notification_batches_dropped",
            "Notification batches given up on (refused, not accepted in time, or no URL to send to)",
            self.dropped.clone(),
        );
        registry.register(
            "kube_gc_notification_attempts_failed",
            "Notification requests that failed, each retry counted",
            self.failed.clone(),
        );
    }

    fn labels(destination: &str) -> DestinationLabels {
        DestinationLabels {
            destination: destination.to_owned(),
        }
    }

    /// A batch accepted.
    pub fn sent(&self, destination: &str) {
        self.sent.get_or_create(&Self::labels(destination)).inc();
    }

    /// A batch given up on.
    pub fn dropped(&self, destination: &str) {
        self.dropped.get_or_create(&Self::labels(destination)).inc();
    }

    /// A request that failed.
    pub fn failed(&self, destination: &str) {
        self.failed.get_or_create(&Self::labels(destination)).inc();
    }

    /// Batches accepted so far.
    pub fn sent_count(&self, destination: &str) -> u64 {
        self.sent.get_or_create(&Self::labels(destination)).get()
    }

    /// Batches given up on so far.
    pub fn dropped_count(&self, destination: &str) -> u64 {
        self.dropped.get_or_create(&Self::labels(destination)).get()
    }

    /// Requests failed so far.
    pub fn failed_count(&self, destination: &str) -> u64 {
        self.failed.get_or_create(&Self::labels(destination)).get()
    }
}
