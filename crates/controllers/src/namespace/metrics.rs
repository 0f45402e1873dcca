//! [`NamespaceMetrics`]: the namespace controller's Prometheus metrics. Its queue reports
//! through the workqueue's `MetricsProvider` as kube-controller-manager's (`name="namespace"`);
//! kcm has no metric of its own for namespace deletion, these are kube-gc's.
//!
//! Contract: cheap to clone (every metric is shared), registered once with
//! [`NamespaceMetrics::register`]. A namespace counts as blocked for a reason from the pass that
//! finds it so until the pass that does not (or until it is gone): the gauge says how many are
//! blocked now, the counter how many times one became so.

use std::time::Duration;

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::{exponential_buckets, Histogram};
use prometheus_client::registry::Registry;

/// The `reason` label: a [`Blocker::reason`](super::decide::Blocker::reason).
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct ReasonLabels {
    /// e.g. `DiscoveryFailed`, `Forbidden`, `ContentRemaining`.
    pub reason: String,
}

/// The namespace controller's metrics.
#[derive(Clone, Debug)]
pub struct NamespaceMetrics {
    finalized: Counter,
    blocked_total: Family<ReasonLabels, Counter>,
    blocked: Family<ReasonLabels, Gauge>,
    deletion_duration: Histogram,
}

impl Default for NamespaceMetrics {
    fn default() -> Self {
        NamespaceMetrics {
            finalized: Counter::default(),
            blocked_total: Family::default(),
            blocked: Family::default(),
            // 0.25 s … ~68 min.
            deletion_duration: Histogram::new(exponential_buckets(0.25, 2.0, 15)),
        }
    }
}

impl NamespaceMetrics {
    /// Fresh metrics, all zero.
    pub fn new() -> NamespaceMetrics {
        NamespaceMetrics::default()
    }

    /// Adds every metric to `registry`.
    pub fn register(&self, registry: &mut Registry) {
        registry.register(
            "namespace_controller_finalized",
            "Namespaces whose kubernetes finalizer the controller removed, their content deleted",
            self.finalized.clone(),
        );
        registry.register(
            "namespace_controller_blocked",
            "Times a namespace being deleted became blocked, by reason",
            self.blocked_total.clone(),
        );
        registry.register(
            "namespace_controller_namespaces_blocked",
            "Namespaces being deleted that are blocked now, by reason",
            self.blocked.clone(),
        );
        registry.register(
            "namespace_controller_deletion_duration_seconds",
            "Seconds from a namespace's deletionTimestamp to the removal of its kubernetes finalizer",
            self.deletion_duration.clone(),
        );
    }

    pub(super) fn finalized(&self, after: Duration) {
        self.finalized.inc();
        self.deletion_duration.observe(after.as_secs_f64());
    }

    /// A namespace's reasons went from `before` to `after`.
    pub(super) fn blocked_changed(&self, before: &[&'static str], after: &[&'static str]) {
        for reason in after.iter().filter(|r| !before.contains(r)) {
            let labels = ReasonLabels {
                reason: (*reason).to_owned(),
            };
            self.blocked_total.get_or_create(&labels).inc();
            self.blocked.get_or_create(&labels).inc();
        }
        for reason in before.iter().filter(|r| !after.contains(r)) {
            let labels = ReasonLabels {
                reason: (*reason).to_owned(),
            };
            self.blocked.get_or_create(&labels).dec();
        }
    }

    /// Namespaces finalized so far.
    pub fn finalized_total(&self) -> u64 {
        self.finalized.get()
    }

    /// Times a namespace became blocked for `reason`.
    pub fn blocked_total(&self, reason: &str) -> u64 {
        let labels = ReasonLabels {
            reason: reason.to_owned(),
        };
        self.blocked_total.get_or_create(&labels).get()
    }

    /// Namespaces blocked for `reason` now.
    pub fn blocked_now(&self, reason: &str) -> i64 {
        let labels = ReasonLabels {
            reason: reason.to_owned(),
        };
        self.blocked.get_or_create(&labels).get()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use prometheus_client::encoding::text::encode;

    #[test]
    fn metrics_are_exposed_under_their_names() {
        let metrics = NamespaceMetrics::new();
        let mut registry = Registry::default();
        metrics.register(&mut registry);
        metrics.finalized(Duration::from_millis(5_200));
        metrics.blocked_changed(&[], &["Forbidden", "DiscoveryFailed"]);
        metrics.blocked_changed(&["Forbidden", "DiscoveryFailed"], &["DiscoveryFailed"]);
        let mut text = String::new();
        assert!(encode(&mut text, &registry).is_ok());
        assert!(
            text.contains("namespace_controller_finalized_total 1"),
            "{text}"
        );
        assert!(text.contains("namespace_controller_blocked_total{reason=\"Forbidden\"} 1"));
        assert!(text.contains("namespace_controller_namespaces_blocked{reason=\"Forbidden\"} 0"));
        assert!(text.contains("namespace_controller_deletion_duration_seconds_count 1"));
        assert_eq!(metrics.blocked_now("DiscoveryFailed"), 1);
        assert_eq!(metrics.blocked_total("DiscoveryFailed"), 1);
    }
}
