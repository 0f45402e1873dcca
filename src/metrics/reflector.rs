//! [`ReflectorCollector`]: the reflectors' own counters ([`ReflectorMetrics`]), read at scrape
//! time.
//!
//! Contract: client-go no longer publishes reflector metrics, so these carry kube-gc's prefix:
//! `kube_gc_reflector_*_total{resource}` — lists, relists, watches, stalled watches, streaming
//! list fallbacks, backoffs, malformed events — and `kube_gc_reflector_events_total{resource,
//! type}` by watch event type. The counters live in the reflectors (relaxed atomics); a scrape
//! reads one snapshot per reflector, so registering costs nothing between scrapes.

use std::sync::Arc;

use parking_lot::RwLock;
use prometheus_client::collector::Collector;
use prometheus_client::encoding::{DescriptorEncoder, EncodeMetric};
use prometheus_client::metrics::counter::ConstCounter;
use prometheus_client::metrics::MetricType;

use crate::runtime::reflector::{MetricsSnapshot, ReflectorMetrics};

type Counted = fn(&MetricsSnapshot) -> u64;

/// A reflector's counters and the resource it reflects.
type Registered = (String, Arc<ReflectorMetrics>);

/// `(name, help, value)` of each per-resource counter.
const COUNTERS: [(&str, &str, Counted); 7] = [
    (
        "kube_gc_reflector_lists",
        "Complete lists delivered to the cache",
        |s| s.lists,
    ),
    (
        "kube_gc_reflector_relists",
        "Lists after the first: a watch could not resume",
        |s| s.relists,
    ),
    ("kube_gc_reflector_watches", "Watch requests made", |s| {
        s.watches
    }),
    (
        "kube_gc_reflector_stalled_watches",
        "Watches abandoned for outliving their timeout",
        |s| s.stalled_watches,
    ),
    (
        "kube_gc_reflector_watch_list_fallbacks",
        "Streaming lists refused or failed, replaced by a paged list",
        |s| s.watch_list_fallbacks,
    ),
    (
        "kube_gc_reflector_backoffs",
        "Delays waited out after a failure",
        |s| s.backoffs,
    ),
    (
        "kube_gc_reflector_malformed_events",
        "Watch lines that could not be decoded",
        |s| s.malformed_events,
    ),
];

/// The registered reflectors; cheap to clone (clones share the list).
#[derive(Clone, Debug, Default)]
pub struct ReflectorCollector {
    reflectors: Arc<RwLock<Vec<Registered>>>,
}

impl ReflectorCollector {
    /// Publishes the counters of the reflector of `resource` (e.g. `batch/v1/jobs`).
    pub fn add(&self, resource: &str, metrics: Arc<ReflectorMetrics>) {
        self.reflectors.write().push((resource.to_owned(), metrics));
    }

    fn snapshots(&self) -> Vec<(String, MetricsSnapshot)> {
        self.reflectors
            .read()
            .iter()
            .map(|(resource, metrics)| (resource.clone(), metrics.snapshot()))
            .collect()
    }
}

impl Collector for ReflectorCollector {
    fn encode(&self, mut encoder: DescriptorEncoder) -> Result<(), std::fmt::Error> {
        let snapshots = self.snapshots();
        if snapshots.is_empty() {
            return Ok(());
        }
        for (name, help, value) in COUNTERS {
            let mut family = encoder.encode_descriptor(name, help, None, MetricType::Counter)?;
            for (resource, snapshot) in &snapshots {
                let labels = [("resource", resource.clone())];
                ConstCounter::new(value(snapshot)).encode(family.encode_family(&labels)?)?;
            }
        }
        let mut family = encoder.encode_descriptor(
            "kube_gc_reflector_events",
            "Watch events received, by type",
            None,
            MetricType::Counter,
        )?;
        for (resource, s) in &snapshots {
            for (type_, count) in [
                ("ADDED", s.added),
                ("MODIFIED", s.modified),
                ("DELETED", s.deleted),
                ("BOOKMARK", s.bookmarks),
                ("ERROR", s.errors),
            ] {
                let labels = [("resource", resource.clone()), ("type", type_.to_owned())];
                ConstCounter::new(count).encode(family.encode_family(&labels)?)?;
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::metrics::Metrics;

    #[test]
    fn counters_are_read_at_scrape_time_per_resource() {
        let metrics = Metrics::new();
        assert!(!metrics.encode().unwrap().contains("kube_gc_reflector"));
        let jobs = Arc::new(ReflectorMetrics::default());
        metrics.reflectors().add("batch/v1/jobs", jobs.clone());
        let text = metrics.encode().unwrap();
        for line in [
            "# TYPE kube_gc_reflector_lists counter",
            r#"kube_gc_reflector_lists_total{resource="batch/v1/jobs"} 0"#,
            r#"kube_gc_reflector_events_total{resource="batch/v1/jobs",type="ADDED"} 0"#,
        ] {
            assert!(
                text.lines().any(|l| l == line),
                "missing {line:?} in\n{text}"
            );
        }
    }
}
