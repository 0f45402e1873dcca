//! The HTTP server over real sockets: every endpoint over HTTPS (certificate from files) and
//! plain HTTP, `/metrics` parsed back strictly, the rest-client hook fed by real requests to the
//! simulated API server, debug pages on and off, and graceful shutdown.

mod server_support;

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use kube_gc::api::Job;
use kube_gc::client::{Api, Client, ClientOptions};
use kube_gc::metrics::Metrics;
use kube_gc::runtime::workqueue::{ItemExponentialFailureRateLimiter, WorkQueue};
use kube_gc::server::{
    AuthOptions, CertificateSource, DebugPage, DelegatedAuth, Endpoints, Listener, Server,
};
use kube_gc::sim::Connect as _;
use kube_gc::sim::{SimConfig, SimServer};
use server_support::{http_client, parse};
use tokio_util::sync::CancellationToken;

const GRAPH: &str = "/debug/controllers/garbage-collector-controller/graph";

struct Running {
    https: String,
    http: String,
    ca_pem: String,
    shutdown: CancellationToken,
    server: kube_gc::server::RunningServer,
    _dir: tempfile::TempDir,
}

/// A server on two ephemeral ports: HTTPS with a certificate written to files, and plain HTTP.
async fn start(endpoints: Endpoints) -> Running {
    let dir = tempfile::tempdir().unwrap();
    let certified = rcgen::generate_simple_self_signed(vec!["localhost".into()]).unwrap();
    let (cert, key) = (dir.path().join("tls.crt"), dir.path().join("tls.key"));
    std::fs::write(&cert, certified.cert.pem()).unwrap();
    std::fs::write(&key, certified.signing_key.serialize_pem()).unwrap();
    let listeners = [
        Listener {
            address: "127.0.0.1:0".parse().unwrap(),
            tls: Some(CertificateSource::Files { cert, key }),
            authenticate: false,
        },
        Listener {
            address: "127.0.0.1:0".parse().unwrap(),
            tls: None,
            authenticate: false,
        },
    ];
    let shutdown = CancellationToken::new();
    let server = Server::start(&listeners, endpoints, None, shutdown.clone())
        .await
        .unwrap();
    Running {
        https: format!("https://localhost:{}", server.addresses[0].port()),
        http: format!("http://127.0.0.1:{}", server.addresses[1].port()),
        ca_pem: certified.cert.pem(),
        shutdown,
        server,
        _dir: dir,
    }
}

async fn get(client: &reqwest::Client, url: String) -> (u16, String, String) {
    let response = client.get(url).send().await.unwrap();
    let status = response.status().as_u16();
    let content_type = response
        .headers()
        .get("content-type")
        .map(|v| v.to_str().unwrap().to_owned())
        .unwrap_or_default();
    (status, content_type, response.text().await.unwrap())
}

#[test]
fn the_test_parser_refuses_malformed_expositions() {
    server_support::self_check();
}

#[tokio::test]
async fn every_endpoint_answers_over_https_and_http() {
    let endpoints = Endpoints::new(Metrics::new(), true);
    let synced = Arc::new(AtomicBool::new(false));
    let flag = synced.clone();
    endpoints
        .readiness
        .add("informer-sync", move || flag.load(Ordering::Relaxed));
    endpoints.add_debug_route(GRAPH, || {
        DebugPage::ok(
            "text/vnd.graphviz",
            Bytes::from_static(b"digraph full {\n}\n"),
        )
    });
    // Retries an hour away, so no timer fires while the test runs.
    let hour = Duration::from_secs(3_600);
    let queue: WorkQueue<String> = WorkQueue::builder("ttl-after-finished")
        .metrics(endpoints.metrics.workqueue())
        .rate_limiter(Arc::new(ItemExponentialFailureRateLimiter::new(hour, hour)))
        .build();
    endpoints.queues.register(Arc::new(queue.clone()));
    let reflector = Arc::new(kube_gc::runtime::reflector::ReflectorMetrics::default());
    endpoints
        .metrics
        .reflectors()
        .add("ttl-after-finished", "batch/v1/jobs", reflector);
    queue.add("default/ready".into());
    queue.add_after("default/later".into(), Duration::from_secs(30));
    queue.add_rate_limited("default/flaky".into());
    // A second failure while the key still waits is de-duplicated: no extra requeue.
    queue.add_rate_limited("default/flaky".into());
    let running = start(endpoints).await;

    for (client, base) in [
        (http_client(Some(&running.ca_pem)), running.https.clone()),
        (http_client(None), running.http.clone()),
    ] {
        for path in ["/healthz", "/livez"] {
            assert_eq!(get(&client, format!("{base}{path}")).await.0, 200);
        }
        synced.store(false, Ordering::Relaxed);
        let (status, _, body) = get(&client, format!("{base}/readyz")).await;
        assert_eq!(status, 500);
        assert!(body.contains("[-]informer-sync failed"), "{body}");
        synced.store(true, Ordering::Relaxed);
        let (status, _, body) = get(&client, format!("{base}/readyz?verbose")).await;
        assert_eq!(
            (status, body.as_str()),
            (200, "[+]informer-sync ok\nreadyz check passed\n")
        );

        let (status, content_type, body) = get(&client, format!("{base}/metrics")).await;
        assert_eq!(status, 200);
        assert_eq!(content_type, kube_gc::metrics::CONTENT_TYPE);
        let metrics = parse(&body).unwrap_or_else(|e| panic!("{e}\n{body}"));
        let name = [("name", "ttl-after-finished")];
        assert_eq!(metrics.value("workqueue_depth", &name), Some(1.0));
        assert_eq!(metrics.value("workqueue_adds_total", &name), Some(1.0));
        assert_eq!(metrics.value("workqueue_retries_total", &name), Some(3.0));
        assert_eq!(
            metrics.families["workqueue_queue_duration_seconds"],
            "histogram"
        );

        let (status, content_type, body) = get(&client, format!("{base}/debug/workqueue")).await;
        assert_eq!((status, content_type.as_str()), (200, "application/json"));
        let json: serde_json::Value = serde_json::from_str(&body).unwrap();
        let q = &json["queues"][0];
        assert_eq!(q["name"], "ttl-after-finished");
        assert_eq!(q["depth"], 1);
        assert_eq!(q["waiting"], 2);
        assert!(q["next_ready_in_seconds"].as_f64().unwrap() > 0.0);
        assert_eq!(q["most_requeued"][0]["key"], "default/flaky");
        assert_eq!(q["most_requeued"][0]["requeues"], 1);

        let (status, content_type, body) = get(&client, format!("{base}{GRAPH}")).await;
        assert_eq!((status, content_type.as_str()), (200, "text/vnd.graphviz"));
        assert!(body.starts_with("digraph"));
        assert_eq!(get(&client, format!("{base}/nothing-here")).await.0, 404);
    }
    running.shutdown.cancel();
    running.server.stopped().await;
}

#[tokio::test]
async fn debug_pages_are_absent_unless_enabled() {
    let endpoints = Endpoints::new(Metrics::new(), false);
    endpoints.add_debug_route(GRAPH, || DebugPage::ok("text/vnd.graphviz", Bytes::new()));
    let running = start(endpoints).await;
    let client = http_client(None);
    for path in ["/debug/workqueue", GRAPH] {
        assert_eq!(get(&client, format!("{}{path}", running.http)).await.0, 404);
    }
    assert_eq!(
        get(&client, format!("{}/healthz", running.http)).await.0,
        200
    );
    running.shutdown.cancel();
    running.server.stopped().await;
}

#[tokio::test]
async fn rest_client_metrics_count_real_requests() {
    let sim = SimServer::start(SimConfig::default().with_namespaces(&["a"]))
        .await
        .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let config = sim.client_config(&dir.path().join("kubeconfig")).unwrap();
    let metrics = Metrics::new();
    let options = ClientOptions::default()
        .with_rate(0.0, 1)
        .with_observer(metrics.rest_client());
    let client = Client::new(&config, &options).unwrap();
    let jobs: Api<Job> = Api::namespaced(client, "a");
    jobs.list(&Default::default()).await.unwrap();
    jobs.list(&Default::default()).await.unwrap();
    assert!(jobs.get("missing").await.unwrap_err().is_not_found());

    let endpoints = Endpoints::new(metrics, false);
    let running = start(endpoints).await;
    let (_, _, body) = get(&http_client(None), format!("{}/metrics", running.http)).await;
    let parsed = parse(&body).unwrap_or_else(|e| panic!("{e}\n{body}"));
    let host = format!("127.0.0.1:{}", sim.url().port().unwrap());
    let ok = [
        ("code", "200"),
        ("method", "GET"),
        ("host", host.as_str()),
        ("client", "kube-gc"),
    ];
    let not_found = [
        ("code", "404"),
        ("method", "GET"),
        ("host", host.as_str()),
        ("client", "kube-gc"),
    ];
    assert_eq!(parsed.value("rest_client_requests_total", &ok), Some(2.0));
    assert_eq!(
        parsed.value("rest_client_requests_total", &not_found),
        Some(1.0)
    );
    let latency = [
        ("verb", "GET"),
        ("host", host.as_str()),
        ("client", "kube-gc"),
    ];
    assert_eq!(
        parsed.value("rest_client_request_duration_seconds_count", &latency),
        Some(3.0)
    );
    running.shutdown.cancel();
    running.server.stopped().await;
}

#[tokio::test]
async fn shutdown_stops_accepting_connections() {
    let running = start(Endpoints::default()).await;
    let client = http_client(None);
    let url = format!("{}/healthz", running.http);
    assert_eq!(get(&client, url.clone()).await.0, 200);
    running.shutdown.cancel();
    running.server.stopped().await;
    assert!(http_client(None).get(url).send().await.is_err());
}

#[tokio::test(start_paused = true)]
async fn every_retry_is_a_separate_attempt() {
    use kube_gc::sim::faults::FaultPlan;
    let sim =
        SimServer::start(SimConfig::default().with_fault_plan(FaultPlan::new(3).throttle(1.0, 1)))
            .await
            .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let config = sim.client_config(&dir.path().join("kubeconfig")).unwrap();
    let metrics = Metrics::new();
    let options = ClientOptions::default()
        .with_rate(0.0, 1)
        .without_timeouts()
        .with_observer(metrics.rest_client());
    let client = Client::new(&config, &options).unwrap();
    let jobs: Api<Job> = Api::namespaced(client, "default");
    assert!(jobs
        .list(&Default::default())
        .await
        .unwrap_err()
        .is_too_many_requests());
    let parsed = parse(&metrics.encode().unwrap()).unwrap();
    let host = format!("127.0.0.1:{}", sim.url().port().unwrap());
    let throttled = [
        ("code", "429"),
        ("method", "GET"),
        ("host", host.as_str()),
        ("client", "kube-gc"),
    ];
    // The first attempt and ten retries after Retry-After.
    assert_eq!(
        parsed.value("rest_client_requests_total", &throttled),
        Some(11.0)
    );
}

/// The secure port asks the API server who each request is and whether they may read the path,
/// as kube-controller-manager's does: no credentials 401 (the API server's own Status,
/// exchange 41), a user without the right 403, a user with it 200; the probes' paths to
/// anyone; each answer remembered, so a scraper costs one review per answer's lifetime.
#[tokio::test]
async fn the_secure_port_asks_the_api_server_who_may_read_it() {
    let sim = SimServer::start(
        SimConfig::default()
            .with_token("kube-gc-token")
            .with_user(
                "scraper-token",
                "system:serviceaccount:monitoring:prometheus",
                &["system:serviceaccounts"],
            )
            .with_user("nobody-token", "system:serviceaccount:default:nobody", &[])
            .allowing("system:serviceaccount:monitoring:prometheus", &["/metrics"]),
    )
    .await
    .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let config = sim.client_config(&dir.path().join("kubeconfig")).unwrap();
    let client = Client::new(&config, &ClientOptions::default().with_rate(0.0, 1)).unwrap();
    let auth = Arc::new(DelegatedAuth::new(client, AuthOptions::default()));

    let certified = rcgen::generate_simple_self_signed(vec!["localhost".into()]).unwrap();
    let (cert, key) = (dir.path().join("tls.crt"), dir.path().join("tls.key"));
    std::fs::write(&cert, certified.cert.pem()).unwrap();
    std::fs::write(&key, certified.signing_key.serialize_pem()).unwrap();
    let listeners = [Listener {
        address: "127.0.0.1:0".parse().unwrap(),
        tls: Some(CertificateSource::Files { cert, key }),
        authenticate: true,
    }];
    let shutdown = CancellationToken::new();
    let server = Server::start(
        &listeners,
        Endpoints::new(Metrics::new(), true),
        Some(auth),
        shutdown.clone(),
    )
    .await
    .unwrap();
    let base = format!("https://localhost:{}", server.addresses[0].port());
    let https = http_client(Some(&certified.cert.pem()));
    let ask = |path: &str, token: Option<&str>| {
        let mut request = https.get(format!("{base}{path}"));
        if let Some(token) = token {
            request = request.bearer_auth(token);
        }
        async move {
            let response = request.send().await.unwrap();
            let status = response.status().as_u16();
            (status, response.text().await.unwrap())
        }
    };

    let (status, body) = ask("/metrics", None).await;
    assert_eq!(status, 401);
    let unauthorized: serde_json::Value = serde_json::from_str(&body).unwrap();
    let captured: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/fixtures/real-apiserver/exchanges/41-unauthorized.json"
        ))
        .unwrap(),
    )
    .unwrap();
    assert_eq!(unauthorized, captured["response"]["body"]);
    assert_eq!(ask("/metrics", Some("a-token-nobody-has")).await.0, 401);
    let (status, body) = ask("/metrics", Some("nobody-token")).await;
    assert_eq!(status, 403);
    assert!(
        body.contains(r#"forbidden: User \"system:serviceaccount:default:nobody\" cannot get path \"/metrics\""#),
        "{body}"
    );
    assert_eq!(ask("/metrics", Some("scraper-token")).await.0, 200);
    assert_eq!(
        ask("/debug/workqueue", Some("scraper-token")).await.0,
        403,
        "its role lists /metrics only"
    );
    assert_eq!(
        ask("/debug/workqueue", Some("kube-gc-token")).await.0,
        200,
        "system:masters"
    );
    for probe in ["/healthz", "/readyz", "/livez"] {
        assert_ne!(ask(probe, None).await.0, 401, "{probe} is for the kubelet");
    }

    // Remembered: more scrapes, no more reviews.
    let reviews = |path: &str| {
        sim.journal()
            .entries()
            .iter()
            .filter(|e| e.path == path)
            .count()
    };
    let (tokens, accesses) = (
        reviews("/apis/authentication.k8s.io/v1/tokenreviews"),
        reviews("/apis/authorization.k8s.io/v1/subjectaccessreviews"),
    );
    for _ in 0..5 {
        assert_eq!(ask("/metrics", Some("scraper-token")).await.0, 200);
    }
    assert_eq!(
        reviews("/apis/authentication.k8s.io/v1/tokenreviews"),
        tokens
    );
    assert_eq!(
        reviews("/apis/authorization.k8s.io/v1/subjectaccessreviews"),
        accesses
    );
    shutdown.cancel();
    server.stopped().await;
}
