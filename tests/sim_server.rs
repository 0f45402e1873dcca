//! The server around the store: injected faults, the request journal, TLS with HTTP/2, the
//! kubeconfig it writes, and shutdown.

mod sim_support;

use std::time::Duration;

use kube_gc::sim::faults::{FaultPlan, Verb};
use kube_gc::sim::SimConfig;
use serde_json::json;
use sim_support::*;

const JOBS: &str = "/apis/batch/v1/namespaces/capture/jobs";

#[tokio::test]
async fn throttling_answers_a_plain_text_429_with_retry_after() {
    let plan = FaultPlan::new(1).throttle(1.0, 7);
    let server = start(SimConfig::default().with_fault_plan(plan)).await;
    let response = match client().get(url(&server, JOBS)).send().await {
        Ok(r) => r,
        Err(e) => panic!("{e}"),
    };
    assert_eq!(response.status().as_u16(), 429);
    let retry_after = response
        .headers()
        .get("retry-after")
        .and_then(|v| v.to_str().ok())
        .map(str::to_string);
    assert_eq!(retry_after.as_deref(), Some("7"));
    // Like the real priority-and-fairness filter: plain text, not a Status.
    let content_type = response
        .headers()
        .get("content-type")
        .and_then(|v| v.to_str().ok())
        .map(str::to_string);
    assert_eq!(content_type.as_deref(), Some("text/plain; charset=utf-8"));
    let text = response.text().await.unwrap_or_default();
    assert_eq!(text, kube_gc::sim::status::THROTTLED_PLAIN_TEXT_BODY);
    assert_eq!(server.faults().injected().throttled, 1);

    // Turning faults off mid-run.
    server.faults().set_plan(FaultPlan::default());
    let (code, _) = send(client().get(url(&server, JOBS))).await;
    assert_eq!(code, 200);
}

#[tokio::test]
async fn per_verb_errors_hit_only_that_verb() {
    let plan = FaultPlan::new(3).fail(Verb::Delete, 1.0, &[503]);
    let server = start(SimConfig::default().with_fault_plan(plan)).await;
    create_job(&server, "pi");
    let http = client();
    let (code, body) = send(http.delete(url(&server, &format!("{JOBS}/pi")))).await;
    assert_eq!(code, 503);
    assert_eq!(body["reason"], "ServiceUnavailable");
    assert!(
        server.get(&jobs(), Some("capture"), "pi").is_ok(),
        "the fault happened before the delete"
    );
    let (code, _) = send(http.get(url(&server, &format!("{JOBS}/pi")))).await;
    assert_eq!(code, 200);
}

#[tokio::test(start_paused = true)]
async fn latency_delays_requests_on_the_paused_clock() {
    let plan = FaultPlan::new(5).latency(Duration::from_secs(2), Duration::from_secs(2));
    let server = start(SimConfig::default().with_fault_plan(plan)).await;
    let started = tokio::time::Instant::now();
    let (code, _) = send(client().get(url(&server, JOBS))).await;
    assert_eq!(code, 200);
    assert!(started.elapsed() >= Duration::from_secs(2));
    assert_eq!(server.faults().injected().delayed, 1);
}

#[tokio::test]
async fn every_request_is_journaled_without_credentials() {
    let server = start(SimConfig::default().with_token("t0ken")).await;
    let http = client();
    send(
        http.get(url(&server, "/apis/batch/v1"))
            .bearer_auth("t0ken"),
    )
    .await;
    send(
        http.post(url(&server, JOBS))
            .bearer_auth("t0ken")
            .json(&job("pi")),
    )
    .await;
    send(
        http.delete(url(
            &server,
            &format!("{JOBS}/pi?propagationPolicy=Background"),
        ))
        .bearer_auth("t0ken")
        .json(&json!({"preconditions": {"uid": "x"}})),
    )
    .await;
    send(
        http.get(url(&server, &format!("{JOBS}?limit=5")))
            .bearer_auth("nope"),
    )
    .await;
    let entries = server.journal().entries();
    let seen: Vec<(Verb, &str, u16)> = entries
        .iter()
        .map(|e| (e.verb, e.method.as_str(), e.status))
        .collect();
    assert_eq!(
        seen,
        vec![
            (Verb::Discovery, "GET", 200),
            (Verb::Create, "POST", 201),
            (Verb::Delete, "DELETE", 409),
            (Verb::List, "GET", 401),
        ]
    );
    let delete = &server.journal().deletes()[0];
    assert_eq!(delete.query_value("propagationPolicy"), Some("Background"));
    assert_eq!(delete.body, Some(json!({"preconditions": {"uid": "x"}})));
    assert_eq!(delete.header("authorization"), Some("Bearer"));
    assert_eq!(entries[3].query_value("limit"), Some("5"));
}

#[tokio::test]
async fn tls_serves_http2_with_the_generated_ca() {
    let server = start(SimConfig::default().with_tls()).await;
    assert_eq!(server.url().scheme(), "https");
    let ca = server.ca_pem().map(str::to_string);
    let http = client_trusting(ca.as_deref());
    let response = match http.get(url(&server, "/version")).send().await {
        Ok(r) => r,
        Err(e) => panic!("{e}"),
    };
    assert_eq!(
        response.version(),
        reqwest::Version::HTTP_2,
        "ALPN picks h2"
    );
    assert_eq!(response.status().as_u16(), 200);

    create_job(&server, "a");
    let watch = http
        .get(url(&server, &format!("{JOBS}?watch=1")))
        .send()
        .await;
    let mut lines = match watch {
        Ok(r) => Lines::new(r),
        Err(e) => panic!("{e}"),
    };
    assert_eq!(
        summary(&lines.take(1).await),
        vec![("ADDED".into(), "a".into())]
    );

    // A client that does not trust the CA is refused.
    assert!(client().get(url(&server, "/version")).send().await.is_err());
}

#[tokio::test]
async fn writes_a_private_kubeconfig_naming_the_server() {
    let server = start(SimConfig::default().with_tls().with_token("abc")).await;
    let dir = match tempfile::tempdir() {
        Ok(dir) => dir,
        Err(e) => panic!("{e}"),
    };
    let path = dir.path().join("config");
    if let Err(e) = server.write_kubeconfig(&path) {
        panic!("{e}");
    }
    let text = std::fs::read_to_string(&path).unwrap_or_default();
    assert!(text.contains(server.url().as_str().trim_end_matches('/')));
    assert!(text.contains("certificate-authority-data"));
    assert!(text.contains("token: abc"));
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(&path)
            .map(|m| m.permissions().mode() & 0o777)
            .unwrap_or(0);
        assert_eq!(mode, 0o600);
    }
}

#[tokio::test]
async fn shutdown_ends_watches_and_stops_accepting() {
    let server = start(SimConfig::default()).await;
    let address = url(&server, JOBS);
    let watch = client().get(format!("{address}?watch=1")).send().await;
    let mut lines = match watch {
        Ok(r) => Lines::new(r),
        Err(e) => panic!("{e}"),
    };
    server.shutdown().await;
    assert!(lines.rest().await.is_empty());
    assert!(client().get(&address).send().await.is_err());
}

#[tokio::test]
async fn in_process_deletions_are_logged_with_their_final_state() {
    let server = start(SimConfig::default()).await;
    create_job(&server, "pi");
    let options = kube_gc::sim::DeleteOptions::propagation(kube_gc::sim::Propagation::Background);
    let outcome = server.delete(&jobs(), Some("capture"), "pi", &options);
    assert!(matches!(
        outcome,
        Ok(kube_gc::sim::DeleteOutcome::Deleted(_))
    ));
    let deletions = server.deletions();
    assert_eq!(deletions.len(), 1);
    assert_eq!(deletions[0].name, "pi");
    assert_eq!(deletions[0].gvr, jobs());
    assert_eq!(deletions[0].final_state.value()["metadata"]["name"], "pi");
    assert_eq!(deletions[0].rv, server.resource_version());
    let history = server.history();
    assert_eq!(
        history.last().map(|c| c.kind),
        Some(kube_gc::sim::history::ChangeKind::Deleted)
    );
}

#[tokio::test]
async fn a_client_certificate_from_the_ca_authenticates_without_a_token() {
    let server = start(SimConfig::default().with_tls().with_token("t")).await;
    let ca = server.ca_pem().map(str::to_string);
    let identity = server
        .tls()
        .map(|tls| tls.generate_client_cert("kube-gc", &["system:masters"]));
    let (cert, key) = match identity {
        Some(Ok(identity)) => identity,
        other => panic!("client certificate: {other:?}"),
    };
    let with_cert = client_with_identity(ca.as_deref(), Some((&cert, &key)));
    let (code, _) = send(with_cert.get(url(&server, JOBS))).await;
    assert_eq!(code, 200);
    let (code, body) = send(client_trusting(ca.as_deref()).get(url(&server, JOBS))).await;
    assert_eq!(code, 401);
    assert_eq!(body["reason"], "Unauthorized");
}

#[tokio::test]
async fn wait_for_follows_changes_without_polling() {
    let server = std::sync::Arc::new(start(SimConfig::default()).await);
    create_job(&server, "pi");
    let writer = {
        let server = std::sync::Arc::clone(&server);
        tokio::spawn(async move {
            tokio::task::yield_now().await;
            let mut job = server
                .get(&jobs(), Some("capture"), "pi")
                .unwrap_or_default();
            job["status"] = json!({"succeeded": 1});
            let _ = server.update_status(&jobs(), job);
            let options =
                kube_gc::sim::DeleteOptions::propagation(kube_gc::sim::Propagation::Background);
            let _ = server.delete(&jobs(), Some("capture"), "pi", &options);
        })
    };
    let done = |job: Option<&serde_json::Value>| job.is_some_and(|j| j["status"]["succeeded"] == 1);
    let finished = tokio::time::timeout(
        Duration::from_secs(10),
        server.wait_for(&jobs(), Some("capture"), "pi", done),
    )
    .await;
    assert!(matches!(finished, Ok(Ok(Some(_)))), "{finished:?}");
    let gone = tokio::time::timeout(
        Duration::from_secs(10),
        server.wait_for(&jobs(), Some("capture"), "pi", |job| job.is_none()),
    )
    .await;
    assert!(matches!(gone, Ok(Ok(None))), "{gone:?}");
    let _ = writer.await;
    assert_eq!(server.store().open_watches(), 0, "waiters unregister");
}
