//! [`PodGcMetrics`]: the pod garbage collector's metrics, under kube-controller-manager's
//! v1.28 names (`pkg/controller/podgc/metrics`).
//!
//! | name | type | labels | meaning |
//! |---|---|---|---|
//! | `pod_gc_collector_force_delete_pods_total` | counter | `namespace`, `reason` | Pods force-deleted (each attempt) |
//! | `pod_gc_collector_force_delete_pod_errors_total` | counter | `namespace`, `reason` | attempts that failed |
//!
//! `reason` is `terminated`, `out-of-service`, `orphaned` or `unscheduled`. A dry run counts
//! nothing. The workqueue's metrics come from the queue (`name="podgc"`).

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::registry::Registry;

use super::decide::Reason;

/// The labels of both counters.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct ForceDeleteLabels {
    /// The Pod's namespace.
    pub namespace: String,
    /// Why it was force-deleted.
    pub reason: &'static str,
}

/// The pod garbage collector's counters; cheap to share behind an `Arc`.
#[derive(Debug, Default)]
pub struct PodGcMetrics {
    deleting: Family<ForceDeleteLabels, Counter>,
    errors: Family<ForceDeleteLabels, Counter>,
}

impl PodGcMetrics {
    /// Adds both counters to `registry`.
    pub fn register(&self, registry: &mut Registry) {
        registry.register(
            "pod_gc_collector_force_delete_pods",
            "Number of pods that are being forcefully deleted since the Pod GC Controller started.",
            self.deleting.clone(),
        );
        registry.register(
            "pod_gc_collector_force_delete_pod_errors",
            "Number of errors encountered when forcefully deleting the pods since the Pod GC Controller started.",
            self.errors.clone(),
        );
    }

    /// One force deletion attempted, in `namespace`, for `reason`.
    pub fn attempted(&self, namespace: &str, reason: Reason) {
        self.deleting
            .get_or_create(&labels(namespace, reason))
            .inc();
    }

    /// One force deletion that failed.
    pub fn failed(&self, namespace: &str, reason: Reason) {
        self.errors.get_or_create(&labels(namespace, reason)).inc();
    }

    /// Attempts so far in `namespace` for `reason` (tests, displays).
    pub fn attempts(&self, namespace: &str, reason: Reason) -> u64 {
        self.deleting
            .get_or_create(&labels(namespace, reason))
            .get()
    }

    /// Failures so far in `namespace` for `reason`.
    pub fn failures(&self, namespace: &str, reason: Reason) -> u64 {
        self.errors.get_or_create(&labels(namespace, reason)).get()
    }
}

fn labels(namespace: &str, reason: Reason) -> ForceDeleteLabels {
    ForceDeleteLabels {
        namespace: namespace.to_owned(),
        reason: reason.label(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counters_carry_upstreams_names_and_labels() {
        let metrics = PodGcMetrics::default();
        metrics.attempted("ns", Reason::Orphaned);
        metrics.attempted("ns", Reason::Orphaned);
        metrics.failed("ns", Reason::OutOfService);
        let mut registry = Registry::default();
        metrics.register(&mut registry);
        let mut text = String::new();
        prometheus_client::encoding::text::encode(&mut text, &registry).unwrap_or_default();
        assert!(text.contains(
            "pod_gc_collector_force_delete_pods_total{namespace=\"ns\",reason=\"orphaned\"} 2"
        ));
        assert!(text.contains(
            "pod_gc_collector_force_delete_pod_errors_total{namespace=\"ns\",reason=\"out-of-service\"} 1"
        ));
        assert_eq!(metrics.attempts("ns", Reason::Orphaned), 2);
    }
}
