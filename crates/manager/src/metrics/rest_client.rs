//! [`RestClientMetrics`]: client-go's `rest_client_*` metrics, fed by the client's
//! [`RequestObserver`] hook.
//!
//! Contract (names, labels and buckets as client-go's `component-base/metrics/prometheus/restclient`,
//! plus a `client` label naming the component whose client made the request —
//! `ttl-after-finished`, `garbagecollector`, `shared-informers`, `metadata-informers`,
//! `leader-election`, `events`, or `kube-gc` for the rest —, since each has its own rate
//! limiter):
//! - `rest_client_requests_total{code, method, host, client}`: attempts by status code
//!   (`<error>` when no response came), HTTP method and `host:port`.
//! - `rest_client_request_duration_seconds{verb, host, client}`: attempt latency up to the
//!   response headers, buckets 5 ms … 60 s.
//! - `rest_client_rate_limiter_duration_seconds{verb, host, client}`: how long each attempt
//!   waited for its client's rate limiter (zero waits included), same buckets.

use std::time::Duration;

use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::histogram::Histogram;
use prometheus_client::registry::Registry;
use url::Url;

use kube_gc_client::{Attempt, AttemptResult, RequestObserver};

/// client-go's latency buckets (seconds).
pub const LATENCY_BUCKETS: [f64; 12] = [
    0.005, 0.025, 0.1, 0.25, 0.5, 1.0, 2.0, 4.0, 8.0, 15.0, 30.0, 60.0,
];

type ResultLabels = [(&'static str, String); 4];
type LatencyLabels = [(&'static str, String); 3];

fn latency_histogram() -> Histogram {
    Histogram::new(LATENCY_BUCKETS)
}

/// The rest-client metric families.
#[derive(Clone, Debug)]
pub struct RestClientMetrics {
    results: Family<ResultLabels, Counter>,
    latency: Family<LatencyLabels, Histogram, fn() -> Histogram>,
    rate_limiter: Family<LatencyLabels, Histogram, fn() -> Histogram>,
}

impl RestClientMetrics {
    /// Creates the families and registers them under `rest_client_` in `registry`.
    pub fn register(registry: &mut Registry) -> RestClientMetrics {
        let histogram: fn() -> Histogram = latency_histogram;
        let metrics = RestClientMetrics {
            results: Family::default(),
            latency: Family::new_with_constructor(histogram),
            rate_limiter: Family::new_with_constructor(histogram),
        };
        let r = registry.sub_registry_with_prefix("rest_client");
        r.register(
            "requests",
            "Number of HTTP requests, partitioned by status code, method, and host.",
            metrics.results.clone(),
        );
        r.register(
            "request_duration_seconds",
            "Request latency in seconds. Broken down by verb, and host.",
            metrics.latency.clone(),
        );
        r.register(
            "rate_limiter_duration_seconds",
            "Client side rate limiter latency in seconds. Broken down by verb, and host.",
            metrics.rate_limiter.clone(),
        );
        metrics
    }
}

/// `verb`, `host` and `client` of an attempt.
fn latency_labels(attempt: &Attempt<'_>) -> LatencyLabels {
    [
        ("verb", attempt.method.as_str().to_owned()),
        ("host", host_of(attempt.url)),
        ("client", attempt.client.to_owned()),
    ]
}

/// `host:port` as client-go's `url.Host` (the port only when the URL names one).
fn host_of(url: &Url) -> String {
    match (url.host_str(), url.port()) {
        (Some(host), Some(port)) => format!("{host}:{port}"),
        (Some(host), None) => host.to_owned(),
        (None, _) => String::new(),
    }
}

impl RequestObserver for RestClientMetrics {
    fn observe(&self, attempt: Attempt<'_>, result: AttemptResult, elapsed: Duration) {
        let code = match result {
            AttemptResult::Status(code) => code.to_string(),
            AttemptResult::TransportError => "<error>".to_owned(),
        };
        self.results
            .get_or_create(&[
                ("code", code),
                ("method", attempt.method.as_str().to_owned()),
                ("host", host_of(attempt.url)),
                ("client", attempt.client.to_owned()),
            ])
            .inc();
        self.latency
            .get_or_create(&latency_labels(&attempt))
            .observe(elapsed.as_secs_f64());
    }

    fn waited(&self, attempt: Attempt<'_>, waited: Duration) {
        self.rate_limiter
            .get_or_create(&latency_labels(&attempt))
            .observe(waited.as_secs_f64());
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::metrics::Metrics;
    use http::Method;

    #[test]
    fn attempts_are_counted_by_code_method_and_host() {
        let metrics = Metrics::new();
        let rest = metrics.rest_client();
        let url = Url::parse("https://10.0.0.1:6443/apis/batch/v1/jobs").unwrap();
        let attempt = |method, client| Attempt {
            client,
            method,
            url: &url,
        };
        let ttl = "ttl-after-finished";
        rest.observe(
            attempt(&Method::GET, ttl),
            AttemptResult::Status(200),
            Duration::from_millis(3),
        );
        rest.observe(
            attempt(&Method::GET, ttl),
            AttemptResult::Status(200),
            Duration::from_millis(30),
        );
        rest.observe(
            attempt(&Method::DELETE, "garbagecollector"),
            AttemptResult::TransportError,
            Duration::from_secs(1),
        );
        rest.waited(attempt(&Method::DELETE, "garbagecollector"), Duration::ZERO);
        rest.waited(
            attempt(&Method::GET, "shared-informers"),
            Duration::from_millis(50),
        );
        let text = metrics.encode().unwrap();
        for line in [
            r#"rest_client_requests_total{code="200",method="GET",host="10.0.0.1:6443",client="ttl-after-finished"} 2"#,
            r#"rest_client_requests_total{code="<error>",method="DELETE",host="10.0.0.1:6443",client="garbagecollector"} 1"#,
            r#"rest_client_request_duration_seconds_bucket{le="0.005",verb="GET",host="10.0.0.1:6443",client="ttl-after-finished"} 1"#,
            r#"rest_client_request_duration_seconds_bucket{le="0.1",verb="GET",host="10.0.0.1:6443",client="ttl-after-finished"} 2"#,
            r#"rest_client_rate_limiter_duration_seconds_bucket{le="0.005",verb="DELETE",host="10.0.0.1:6443",client="garbagecollector"} 1"#,
            r#"rest_client_rate_limiter_duration_seconds_bucket{le="0.025",verb="GET",host="10.0.0.1:6443",client="shared-informers"} 0"#,
            r#"rest_client_rate_limiter_duration_seconds_bucket{le="0.1",verb="GET",host="10.0.0.1:6443",client="shared-informers"} 1"#,
        ] {
            assert!(
                text.lines().any(|l| l == line),
                "missing {line:?} in\n{text}"
            );
        }
    }
}
