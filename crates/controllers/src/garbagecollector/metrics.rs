//! [`GcMetrics`]: the garbage collector's own Prometheus metrics. The attempt-to-delete and
//! attempt-to-orphan queues report through the workqueue's `MetricsProvider` instead
//! (`garbage_collector_attempt_to_delete`, `garbage_collector_attempt_to_orphan`).
//!
//! Contract: cheap to clone (every metric is shared), registered once with [`GcMetrics::register`].

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::registry::Registry;

use kube_gc_api::PropagationPolicy;

/// The `policy` label of the deletion counter.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct PolicyLabels {
    /// `Background`, `Foreground` or `Orphan`.
    pub policy: String,
}

/// The `operation` label of the error counter.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct OperationLabels {
    /// `get`, `delete`, `patch`, `mapping` or `conflict`.
    pub operation: String,
}

/// The garbage collector's metrics.
#[derive(Clone, Debug, Default)]
pub struct GcMetrics {
    graph_nodes: Gauge,
    monitors: Gauge,
    deletions: Family<PolicyLabels, Counter>,
    errors: Family<OperationLabels, Counter>,
    resources_sync_errors: Counter,
}

impl GcMetrics {
    /// Fresh metrics, all zero.
    pub fn new() -> GcMetrics {
        GcMetrics::default()
    }

    /// Adds every metric to `registry`.
    pub fn register(&self, registry: &mut Registry) {
        registry.register(
            "garbagecollector_graph_nodes",
            "Nodes in the garbage collector's dependency graph (observed, virtual and gone)",
            self.graph_nodes.clone(),
        );
        registry.register(
            "garbagecollector_monitors",
            "Resources the garbage collector monitors",
            self.monitors.clone(),
        );
        registry.register(
            "garbagecollector_deletions",
            "Objects the garbage collector deleted, by propagation policy",
            self.deletions.clone(),
        );
        registry.register(
            "garbagecollector_errors",
            "Failed garbage collector attempts, by operation",
            self.errors.clone(),
        );
        registry.register(
            "garbagecollector_controller_resources_sync_error",
            "Failed discoveries of the resources to monitor",
            self.resources_sync_errors.clone(),
        );
    }

    pub(super) fn set_graph_nodes(&self, nodes: usize) {
        self.graph_nodes
            .set(i64::try_from(nodes).unwrap_or(i64::MAX));
    }

    pub(super) fn set_monitors(&self, monitors: usize) {
        self.monitors
            .set(i64::try_from(monitors).unwrap_or(i64::MAX));
    }

    pub(super) fn deleted(&self, policy: PropagationPolicy) {
        let policy = format!("{policy:?}");
        self.deletions.get_or_create(&PolicyLabels { policy }).inc();
    }

    pub(super) fn failed(&self, operation: &str) {
        let operation = operation.to_owned();
        self.errors
            .get_or_create(&OperationLabels { operation })
            .inc();
    }

    pub(super) fn sync_failed(&self) {
        self.resources_sync_errors.inc();
    }

    /// Objects deleted with `policy` so far.
    pub fn deletions(&self, policy: PropagationPolicy) -> u64 {
        let policy = format!("{policy:?}");
        self.deletions.get_or_create(&PolicyLabels { policy }).get()
    }

    /// Failed attempts of `operation` so far.
    pub fn errors(&self, operation: &str) -> u64 {
        let operation = operation.to_owned();
        self.errors
            .get_or_create(&OperationLabels { operation })
            .get()
    }

    /// Nodes in the graph at the last update.
    pub fn graph_nodes(&self) -> i64 {
        self.graph_nodes.get()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use prometheus_client::encoding::text::encode;

    #[test]
    fn metrics_are_exposed_under_their_names() {
        let metrics = GcMetrics::new();
        let mut registry = Registry::default();
        metrics.register(&mut registry);
        metrics.deleted(PropagationPolicy::Background);
        metrics.set_graph_nodes(3);
        metrics.failed("delete");
        let mut text = String::new();
        assert!(encode(&mut text, &registry).is_ok());
        assert!(text.contains("garbagecollector_deletions_total{policy=\"Background\"} 1"));
        assert!(text.contains("garbagecollector_graph_nodes 3"));
        assert!(text.contains("garbagecollector_errors_total{operation=\"delete\"} 1"));
        assert!(text.contains("garbagecollector_controller_resources_sync_error_total 0"));
        assert_eq!(metrics.deletions(PropagationPolicy::Background), 1);
    }
}
