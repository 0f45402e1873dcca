//! [`ReflectorCollector`]: the reflectors' own counters ([`ReflectorMetrics`]), read at scrape
//! time.
//!
//! Contract: client-go no longer publishes reflector metrics, so these carry kube-gc's prefix:
//! `kube_gc_reflector_*_total{controller, resource}` — lists, relists, watches, stalled watches,
//! streaming list fallbacks, backoffs, malformed events — and `kube_gc_reflector_events_total`
//! with a `type` label more. The counters are those of each resource's one list and watch
//! ([`Sources`](kube_gc_runtime::sources::Sources)); the `controller` label names every controller
//! reading it, sorted and comma-separated (`garbagecollector,ttl-after-finished` for
//! `batch/v1/jobs` when both run): registered by each, a shared reflector is still one series. The
//! counters live in the reflectors (relaxed atomics); a scrape reads one snapshot per reflector,
//! so registering costs nothing between scrapes. A controller whose reflectors come and go (the
//! collector's monitors follow discovery) registers a *source* asked for its current set at
//! each scrape instead.
//!
//! One gauge per reflector, `kube_gc_reflector_seconds_since_last_sync`: 0 while its watch
//! works, else how long since it last did. [`ReflectorCollector::stuck`] names the reflectors
//! past their limit (twice the backoff cap), for `/readyz`.

use std::sync::Arc;

use parking_lot::RwLock;
use prometheus_client::collector::Collector;
use prometheus_client::encoding::{DescriptorEncoder, EncodeMetric};
use prometheus_client::metrics::counter::ConstCounter;
use prometheus_client::metrics::gauge::ConstGauge;
use prometheus_client::metrics::MetricType;

use kube_gc_runtime::reflector::{MetricsSnapshot, ReflectorMetrics};

type Counted = fn(&MetricsSnapshot) -> u64;

/// The current reflectors of one controller, as `(resource, counters)` pairs.
pub type ReflectorSource = Arc<dyn Fn() -> Vec<(String, Arc<ReflectorMetrics>)> + Send + Sync>;

/// What one controller registered.
#[derive(Clone)]
enum Registered {
    /// One reflector, for the life of the process.
    One {
        controller: String,
        resource: String,
        metrics: Arc<ReflectorMetrics>,
    },
    /// Whatever the source lists at scrape time.
    Source {
        controller: String,
        source: ReflectorSource,
    },
}

/// One reflector's counters as read by a scrape, with its labels.
struct Snapshot {
    controller: String,
    resource: String,
    counts: MetricsSnapshot,
    since_last_sync: f64,
    stuck: bool,
}

impl Snapshot {
    fn of(controller: String, resource: String, metrics: &ReflectorMetrics) -> Snapshot {
        Snapshot {
            controller,
            resource,
            counts: metrics.snapshot(),
            since_last_sync: metrics.since_last_sync().as_secs_f64(),
            stuck: metrics.is_stuck(),
        }
    }
}

impl Snapshot {
    fn labels(&self) -> [(&'static str, String); 2] {
        [
            ("controller", self.controller.clone()),
            ("resource", self.resource.clone()),
        ]
    }
}

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
#[derive(Clone, Default)]
pub struct ReflectorCollector {
    registered: Arc<RwLock<Vec<Registered>>>,
}

impl std::fmt::Debug for ReflectorCollector {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ReflectorCollector")
            .field("registered", &self.registered.read().len())
            .finish()
    }
}

impl ReflectorCollector {
    /// Publishes the counters of `controller`'s reflector of `resource` (e.g. `batch/v1/jobs`).
    pub fn add(&self, controller: &str, resource: &str, metrics: Arc<ReflectorMetrics>) {
        self.registered.write().push(Registered::One {
            controller: controller.to_owned(),
            resource: resource.to_owned(),
            metrics,
        });
    }

    /// Publishes, at every scrape, the counters of the reflectors `source` lists then.
    pub fn add_source(&self, controller: &str, source: ReflectorSource) {
        self.registered.write().push(Registered::Source {
            controller: controller.to_owned(),
            source,
        });
    }

    fn snapshots(&self) -> Vec<Snapshot> {
        // Cloned out first: a source runs without the registry's lock held.
        let registered = self.registered.read().clone();
        let mut readers: Vec<(Vec<String>, String, Arc<ReflectorMetrics>)> = Vec::new();
        let mut add = |controller: &str, resource: String, metrics: Arc<ReflectorMetrics>| {
            // One list and watch shared by several controllers is one series, naming them all.
            match readers
                .iter_mut()
                .find(|(_, _, m)| Arc::ptr_eq(m, &metrics))
            {
                Some((controllers, _, _)) => controllers.push(controller.to_owned()),
                None => readers.push((vec![controller.to_owned()], resource, metrics)),
            }
        };
        for entry in registered {
            match entry {
                Registered::One {
                    controller,
                    resource,
                    metrics,
                } => add(&controller, resource, metrics),
                Registered::Source { controller, source } => {
                    for (resource, metrics) in source() {
                        add(&controller, resource, metrics);
                    }
                }
            }
        }
        readers
            .into_iter()
            .map(|(mut controllers, resource, metrics)| {
                controllers.sort();
                controllers.dedup();
                Snapshot::of(controllers.join(","), resource, &metrics)
            })
            .collect()
    }

    /// The reflectors that have had no working list+watch for longer than they may, as
    /// `controller resource`: they cannot see changes.
    pub fn stuck(&self) -> Vec<String> {
        self.snapshots()
            .into_iter()
            .filter(|s| s.stuck)
            .map(|s| format!("{} {}", s.controller, s.resource))
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
            for snapshot in &snapshots {
                let labels = snapshot.labels();
                ConstCounter::new(value(&snapshot.counts))
                    .encode(family.encode_family(&labels)?)?;
            }
        }
        let mut family = encoder.encode_descriptor(
            "kube_gc_reflector_seconds_since_last_sync",
            "Seconds since the reflector last had a working watch (0 while it has one)",
            None,
            MetricType::Gauge,
        )?;
        for snapshot in &snapshots {
            ConstGauge::new(snapshot.since_last_sync)
                .encode(family.encode_family(&snapshot.labels())?)?;
        }
        let mut family = encoder.encode_descriptor(
            "kube_gc_reflector_events",
            "Watch events received, by type",
            None,
            MetricType::Counter,
        )?;
        for snapshot in &snapshots {
            let s = &snapshot.counts;
            for (type_, count) in [
                ("ADDED", s.added),
                ("MODIFIED", s.modified),
                ("DELETED", s.deleted),
                ("BOOKMARK", s.bookmarks),
                ("ERROR", s.errors),
            ] {
                let [controller, resource] = snapshot.labels();
                let labels = [controller, resource, ("type", type_.to_owned())];
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
        metrics
            .reflectors()
            .add("ttl-after-finished", "batch/v1/jobs", jobs.clone());
        let text = metrics.encode().unwrap();
        for line in [
            "# TYPE kube_gc_reflector_lists counter",
            r#"kube_gc_reflector_lists_total{controller="ttl-after-finished",resource="batch/v1/jobs"} 0"#,
            r#"kube_gc_reflector_events_total{controller="ttl-after-finished",resource="batch/v1/jobs",type="ADDED"} 0"#,
            "# TYPE kube_gc_reflector_seconds_since_last_sync gauge",
        ] {
            assert!(
                text.lines().any(|l| l == line),
                "missing {line:?} in\n{text}"
            );
        }
    }

    #[test]
    fn a_source_is_asked_for_its_reflectors_at_every_scrape() {
        let metrics = Metrics::new();
        type Current = RwLock<Vec<(String, Arc<ReflectorMetrics>)>>;
        let current: Arc<Current> = Arc::default();
        let source = Arc::clone(&current);
        metrics
            .reflectors()
            .add_source("garbagecollector", Arc::new(move || source.read().clone()));
        assert!(!metrics
            .encode()
            .unwrap()
            .contains("kube_gc_reflector_lists_total"));
        current
            .write()
            .push(("v1/pods".into(), Arc::new(ReflectorMetrics::default())));
        let line =
            r#"kube_gc_reflector_lists_total{controller="garbagecollector",resource="v1/pods"} 0"#;
        assert!(metrics.encode().unwrap().lines().any(|l| l == line));
        current.write().clear();
        assert!(!metrics.encode().unwrap().contains("v1/pods"));
    }

    #[test]
    fn a_reflector_two_controllers_share_is_one_series_naming_both() {
        let metrics = Metrics::new();
        let jobs = Arc::new(ReflectorMetrics::default());
        let shared = Arc::clone(&jobs);
        metrics.reflectors().add_source(
            "garbagecollector",
            Arc::new(move || vec![("batch/v1/jobs".into(), Arc::clone(&shared))]),
        );
        metrics
            .reflectors()
            .add("ttl-after-finished", "batch/v1/jobs", jobs);
        let text = metrics.encode().unwrap();
        let lists: Vec<&str> = text
            .lines()
            .filter(|l| l.starts_with("kube_gc_reflector_lists_total"))
            .collect();
        assert_eq!(
            lists,
            [
                r#"kube_gc_reflector_lists_total{controller="garbagecollector,ttl-after-finished",resource="batch/v1/jobs"} 0"#
            ]
        );
    }
}
