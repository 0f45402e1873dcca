//! [`AvailabilityCollector`]: whether the API server answers, as the process finds it, and the
//! keys each workqueue holds waiting for it — read at scrape time.
//!
//! | metric | kind | meaning |
//! |---|---|---|
//! | `kube_gc_apiserver_available` | gauge | 1 while the last request was answered, 0 during an outage |
//! | `kube_gc_apiserver_unavailable_seconds` | gauge | how long the current outage has lasted (0 while answering) |
//! | `kube_gc_apiserver_outages_total` | counter | outages that ended: the server answered again |
//! | `kube_gc_workqueue_waiting_for_apiserver{name}` | gauge | keys of queue `name` waiting for the server instead of backing off |
//!
//! Contract: nothing is published until [`AvailabilityCollector::watch`] names the availability
//! to read (the process's client's); queues are added with [`AvailabilityCollector::add_queue`]
//! by the controllers that own them. Values live where they are kept (the availability's watch
//! channel, each waiting room's counter), so nothing is updated between scrapes.

use std::sync::Arc;

use parking_lot::RwLock;
use prometheus_client::collector::Collector;
use prometheus_client::encoding::{DescriptorEncoder, EncodeMetric};
use prometheus_client::metrics::counter::ConstCounter;
use prometheus_client::metrics::gauge::ConstGauge;
use prometheus_client::metrics::MetricType;

use kube_gc_client::ServerAvailability;
use kube_gc_runtime::controller::ServerWait;

/// Counts a queue's keys waiting for the server.
type WaitingKeys = Arc<dyn Fn() -> usize + Send + Sync>;

#[derive(Default)]
struct Registered {
    availability: Option<ServerAvailability>,
    queues: Vec<(String, WaitingKeys)>,
}

/// The availability and the waiting keys to publish; cheap to clone (clones share them).
#[derive(Clone, Default)]
pub struct AvailabilityCollector {
    registered: Arc<RwLock<Registered>>,
}

impl std::fmt::Debug for AvailabilityCollector {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let registered = self.registered.read();
        f.debug_struct("AvailabilityCollector")
            .field("watching", &registered.availability.is_some())
            .field("queues", &registered.queues.len())
            .finish()
    }
}

impl AvailabilityCollector {
    /// Publishes `availability` (the one every client of the process records into).
    pub fn watch(&self, availability: ServerAvailability) {
        self.registered.write().availability = Some(availability);
    }

    /// Publishes how many keys of the queue `name` wait for the server in `wait`.
    pub fn add_queue<K: Send + 'static>(&self, name: &str, wait: &ServerWait<K>) {
        let wait = wait.clone();
        let waiting: WaitingKeys = Arc::new(move || wait.waiting());
        self.registered
            .write()
            .queues
            .push((name.to_owned(), waiting));
    }
}

impl Collector for AvailabilityCollector {
    fn encode(&self, mut encoder: DescriptorEncoder) -> Result<(), std::fmt::Error> {
        let (availability, queues) = {
            let registered = self.registered.read();
            (registered.availability.clone(), registered.queues.clone())
        };
        if let Some(availability) = availability {
            let now = availability.current();
            let unavailable_for = now.unavailable_for(tokio::time::Instant::now());
            let gauges = [
                (
                    "kube_gc_apiserver_available",
                    "1 while the API server answered the last request, 0 during an outage",
                    i64::from(now.answering),
                ),
                (
                    "kube_gc_apiserver_unavailable_seconds",
                    "How long the current API server outage has lasted (0 while it answers)",
                    i64::try_from(unavailable_for.as_secs()).unwrap_or(i64::MAX),
                ),
            ];
            for (name, help, value) in gauges {
                let metric = encoder.encode_descriptor(name, help, None, MetricType::Gauge)?;
                ConstGauge::new(value).encode(metric)?;
            }
            let metric = encoder.encode_descriptor(
                "kube_gc_apiserver_outages",
                "API server outages that ended: it answered again after failing",
                None,
                MetricType::Counter,
            )?;
            ConstCounter::new(now.returns).encode(metric)?;
        }
        if queues.is_empty() {
            return Ok(());
        }
        let mut family = encoder.encode_descriptor(
            "kube_gc_workqueue_waiting_for_apiserver",
            "Keys that wait for the API server to answer again instead of backing off",
            None,
            MetricType::Gauge,
        )?;
        for (name, waiting) in queues {
            let labels = [("name", name)];
            ConstGauge::new(i64::try_from(waiting()).unwrap_or(i64::MAX))
                .encode(family.encode_family(&labels)?)?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::metrics::Metrics;
    use kube_gc_client::AttemptResult;

    #[tokio::test(start_paused = true)]
    async fn availability_and_waiting_keys_are_read_at_scrape_time() {
        let metrics = Metrics::new();
        assert!(!metrics.encode().unwrap().contains("kube_gc_apiserver"));
        let availability = ServerAvailability::new();
        metrics.availability().watch(availability.clone());
        let wait = ServerWait::<String>::new("ttl-after-finished", availability.clone());
        metrics
            .availability()
            .add_queue("ttl_jobs_to_delete", &wait);

        availability.record(AttemptResult::TransportError);
        tokio::time::advance(std::time::Duration::from_secs(7)).await;
        for key in ["a", "b", "c"] {
            wait.park(key.to_owned(), &"connection refused");
        }
        assert_lines(
            &metrics.encode().unwrap(),
            &[
                "kube_gc_apiserver_available 0",
                "kube_gc_apiserver_unavailable_seconds 7",
                "kube_gc_apiserver_outages_total 0",
                r#"kube_gc_workqueue_waiting_for_apiserver{name="ttl_jobs_to_delete"} 3"#,
            ],
        );

        availability.record(AttemptResult::Status(200));
        for key in ["a", "b", "c"] {
            wait.settle(&key.to_owned());
        }
        assert_lines(
            &metrics.encode().unwrap(),
            &[
                "kube_gc_apiserver_available 1",
                "kube_gc_apiserver_unavailable_seconds 0",
                "kube_gc_apiserver_outages_total 1",
                r#"kube_gc_workqueue_waiting_for_apiserver{name="ttl_jobs_to_delete"} 0"#,
            ],
        );
    }

    fn assert_lines(text: &str, lines: &[&str]) {
        for line in lines {
            assert!(
                text.lines().any(|l| l == *line),
                "missing {line:?} in\n{text}"
            );
        }
    }
}
