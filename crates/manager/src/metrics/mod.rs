//! Prometheus metrics: one [`Metrics`] registry the whole process shares, and the collectors
//! that feed it with client-go's metric names.
//!
//! - [`Metrics`]: the registry, what `/metrics` encodes (OpenMetrics text, via
//!   `prometheus_client`'s encoder).
//! - [`workqueue`]: [`WorkqueueMetrics`], the workqueue's
//!   [`MetricsProvider`](kube_gc_runtime::workqueue::MetricsProvider), publishing
//!   `workqueue_*{name}`.
//! - [`rest_client`]: [`RestClientMetrics`], the client's
//!   [`RequestObserver`](kube_gc_client::RequestObserver), publishing `rest_client_*`.
//! - [`reflector`]: [`ReflectorCollector`], the reflectors' counters read at scrape time,
//!   publishing `kube_gc_reflector_*`.
//! - [`availability`]: [`AvailabilityCollector`], whether the API server answers and the keys
//!   waiting for it, read at scrape time, publishing `kube_gc_apiserver_*` and
//!   `kube_gc_workqueue_waiting_for_apiserver`.
//! - [`pending`]: [`PendingCollector`], what each controller will delete within the hour and
//!   the day, read from the controllers at scrape time, publishing `kube_gc_pending_deletions`.
//! - [`text_format`]: the Prometheus text format 0.0.4, for scrapers that ask for `text/plain`
//!   and not OpenMetrics.
//! - [`process`]: [`ProcessCollector`], `process_*` (CPU, memory, start time, file
//!   descriptors) from `/proc/self`, as every Prometheus client library publishes them.
//!
//! Contract: registering happens while wiring the process, before serving; every metric is
//! registered once (prometheus_client does not de-duplicate names). Encoding takes the registry
//! lock only for the time of the encode, and never while a collector updates a value (values are
//! atomics shared between the registry and the collectors).

pub mod availability;
pub mod pending;
pub mod process;
pub mod reflector;
pub mod rest_client;
pub mod text_format;
pub mod workqueue;

use std::sync::Arc;

use parking_lot::Mutex;
use prometheus_client::registry::Registry;

pub use availability::AvailabilityCollector;
pub use pending::PendingCollector;
pub use process::ProcessCollector;
pub use reflector::ReflectorCollector;
pub use rest_client::RestClientMetrics;
pub use workqueue::WorkqueueMetrics;

/// The `Content-Type` of [`Metrics::encode`]'s output.
pub const CONTENT_TYPE: &str = "application/openmetrics-text; version=1.0.0; charset=utf-8";

/// The process's metric registry; cheap to clone (clones share it).
#[derive(Clone)]
pub struct Metrics {
    registry: Arc<Mutex<Registry>>,
    reflectors: ReflectorCollector,
    availability: AvailabilityCollector,
    pending: PendingCollector,
}

impl Default for Metrics {
    fn default() -> Self {
        let reflectors = ReflectorCollector::default();
        let availability = AvailabilityCollector::default();
        let pending = PendingCollector::default();
        let mut registry = Registry::default();
        registry.register_collector(Box::new(reflectors.clone()));
        registry.register_collector(Box::new(availability.clone()));
        registry.register_collector(Box::new(pending.clone()));
        registry.register_collector(Box::new(ProcessCollector));
        Metrics {
            registry: Arc::new(Mutex::new(registry)),
            reflectors,
            availability,
            pending,
        }
    }
}

impl std::fmt::Debug for Metrics {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Metrics").finish_non_exhaustive()
    }
}

impl Metrics {
    /// An empty registry.
    pub fn new() -> Metrics {
        Metrics::default()
    }

    /// Runs `register` on the registry, e.g. to add a controller's own metrics.
    pub fn register_with<T>(&self, register: impl FnOnce(&mut Registry) -> T) -> T {
        register(&mut self.registry.lock())
    }

    /// A [`WorkqueueMetrics`] registered here, to build queues with.
    pub fn workqueue(&self) -> Arc<WorkqueueMetrics> {
        Arc::new(self.register_with(WorkqueueMetrics::register))
    }

    /// A [`RestClientMetrics`] registered here, to build clients with.
    pub fn rest_client(&self) -> Arc<RestClientMetrics> {
        Arc::new(self.register_with(RestClientMetrics::register))
    }

    /// Where reflectors are registered to publish their counters.
    pub fn reflectors(&self) -> &ReflectorCollector {
        &self.reflectors
    }

    /// Where the API server's availability and the keys waiting for it are published.
    pub fn availability(&self) -> &AvailabilityCollector {
        &self.availability
    }

    /// Where the controllers publish what they will delete.
    pub fn pending(&self) -> &PendingCollector {
        &self.pending
    }

    /// Everything registered, in the OpenMetrics text format ([`CONTENT_TYPE`]).
    pub fn encode(&self) -> Result<String, std::fmt::Error> {
        let mut text = String::new();
        prometheus_client::encoding::text::encode(&mut text, &self.registry.lock())?;
        Ok(text)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use prometheus_client::metrics::counter::Counter;

    #[test]
    fn registered_metrics_are_encoded_with_an_eof_marker() {
        let metrics = Metrics::new();
        let deletions = Counter::<u64>::default();
        metrics.register_with(|r| r.register("kube_gc_deletions", "Deletions", deletions.clone()));
        deletions.inc();
        let text = metrics.encode().unwrap();
        assert!(text.contains("# TYPE kube_gc_deletions counter"), "{text}");
        assert!(text.contains("kube_gc_deletions_total 1"), "{text}");
        assert!(text.ends_with("# EOF\n"), "{text}");
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn the_process_metrics_are_served() {
        let text = Metrics::new().encode().unwrap();
        for line in [
            "# TYPE process_cpu_seconds counter",
            "# TYPE process_resident_memory_bytes gauge",
            "# TYPE process_start_time_seconds gauge",
            "# TYPE process_open_fds gauge",
        ] {
            assert!(
                text.lines().any(|l| l == line),
                "missing {line:?} in\n{text}"
            );
        }
        assert!(
            text.lines()
                .any(|l| l.starts_with("process_cpu_seconds_total ")),
            "{text}"
        );
    }
}
