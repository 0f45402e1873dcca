//! The simulated API server's two outages against the real server's captures:
//!
//! - **kube-apiserver stopped** (exchange 85): connections refused until it starts again, open
//!   watches ended, and once started it answers at once, its watch caches rebuilt (a watch from
//!   before the restart gets the 410 of exchanges 55 and 59).
//! - **etcd stopped** (exchanges 77–84): what needs etcd waits for the request timeout and
//!   fails 504 with exchange 77's body; what the server holds in memory is served; the health
//!   checks fail naming etcd; open watches stay open; a request still waiting when etcd comes
//!   back goes on.
//!
//! The paused clock stands in for the real minute of the request timeout.

mod sim_support;

use std::time::Duration;

use kube_gc::sim::handlers::etcd::{LIVEZ_ETCD_DOWN, READYZ_ETCD_DOWN};
use kube_gc::sim::SimConfig;
use serde_json::{json, Value};
use sim_support::*;

const JOBS: &str = "/apis/batch/v1/namespaces/capture/jobs";

/// The lines of a health answer, without the passing ones a capture lists and the sim leaves
/// out.
fn failing_lines(body: &str) -> Vec<&str> {
    body.lines()
        .filter(|l| !l.starts_with("[+]poststarthook") && !l.starts_with("[+]"))
        .collect()
}

#[tokio::test]
async fn a_stopped_api_server_refuses_connections_and_answers_again_once_started() {
    let server = start(SimConfig::default()).await;
    create_job(&server, "before");
    let watch = client()
        .get(url(&server, &format!("{JOBS}?watch=1&resourceVersion=0")))
        .send()
        .await
        .expect("open a watch");
    let mut lines = Lines::new(watch);
    assert_eq!(lines.take(1).await.len(), 1, "the initial ADDED");

    server.stop_apiserver().await;
    assert!(!server.is_listening());
    // The watch ends (exchange 85: cleanly, a minute later; here at once).
    assert!(lines.rest().await.is_empty());
    let refused = client().get(url(&server, JOBS)).send().await;
    match refused {
        Err(e) => assert!(e.is_connect(), "refused, not {e}"),
        Ok(response) => panic!("a stopped server answered {}", response.status()),
    }
    let rv_before = server.resource_version();
    create_job(&server, "moves-the-revision");

    server
        .start_apiserver()
        .await
        .expect("the API server starts again");
    let (status, list) = send(client().get(url(&server, JOBS))).await;
    assert_eq!(status, 200, "answers as soon as it listens (exchange 85)");
    assert_eq!(list["items"].as_array().map(Vec::len), Some(2));
    // The watch caches were rebuilt: a watch from before the restart gets the 410.
    let old = client()
        .get(url(
            &server,
            &format!("{JOBS}?watch=1&resourceVersion={rv_before}"),
        ))
        .send()
        .await
        .expect("watch");
    let events = Lines::new(old).rest().await;
    assert_eq!(events.len(), 1, "{events:?}");
    assert_eq!(events[0]["type"], "ERROR");
    assert_eq!(events[0]["object"]["code"], 410);
}

#[tokio::test(start_paused = true)]
async fn while_etcd_is_down_what_needs_it_times_out_and_what_is_in_memory_is_served() {
    let server = start(SimConfig::default()).await;
    let job = create_job(&server, "outage-probe");
    let watch = client()
        .get(url(
            &server,
            &format!("{JOBS}?watch=1&resourceVersion={}", rv(&job)),
        ))
        .send()
        .await
        .expect("open a watch");
    server.set_etcd_up(false);

    // Exchange 77: a DELETE fails at the deadline with the Timeout Status.
    let started = tokio::time::Instant::now();
    let (status, body) = send(
        client()
            .delete(url(&server, &format!("{JOBS}/outage-probe")))
            .json(&json!({"apiVersion": "v1", "kind": "DeleteOptions",
                "preconditions": {"uid": job["metadata"]["uid"]}})),
    )
    .await;
    assert_eq!((status, &body), (504, &captured_body("77-")));
    assert_eq!(
        started.elapsed(),
        Duration::from_secs(60),
        "the request timeout"
    );
    // Exchange 78: a LIST read from etcd (with `limit`) too.
    let (status, _) = send(client().get(url(&server, &format!("{JOBS}?limit=500")))).await;
    assert_eq!(status, exchange("78-")["response"]["status"]);
    // Exchange 80: a LIST the watch cache answers is served at once.
    let started = tokio::time::Instant::now();
    let (status, list) =
        send(client().get(url(&server, &format!("{JOBS}?resourceVersion=0")))).await;
    assert_eq!(status, 200);
    assert_eq!(list["items"][0]["metadata"]["name"], "outage-probe");
    assert_eq!(started.elapsed(), Duration::ZERO);
    // Exchanges 81-83: the health checks fail on etcd, /version does not need it.
    for (path, ours, capture) in [
        ("/readyz", READYZ_ETCD_DOWN, "81-"),
        ("/livez", LIVEZ_ETCD_DOWN, "82-"),
    ] {
        let response = client()
            .get(url(&server, path))
            .send()
            .await
            .expect("health");
        assert_eq!(response.status().as_u16(), 500);
        assert_eq!(response.text().await.unwrap_or_default(), ours);
        let captured = captured_body(capture);
        let captured = captured.as_str().unwrap_or_default();
        assert_eq!(failing_lines(ours), failing_lines(captured), "{path}");
    }
    let (status, _) = send(client().get(url(&server, "/version"))).await;
    assert_eq!(status, 200);

    // A request still waiting when etcd comes back goes on (after exchange 84's outage the
    // first GET was answered at once).
    let get = tokio::spawn(send(
        client().get(url(&server, &format!("{JOBS}/outage-probe"))),
    ));
    tokio::time::sleep(Duration::from_secs(10)).await;
    server.set_etcd_up(true);
    let (status, got) = get.await.expect("the GET");
    assert_eq!(status, 200);
    assert_eq!(got["metadata"]["name"], "outage-probe");

    // Exchange 84: the watch stayed open through it all; it still delivers.
    let mut lines = Lines::new(watch);
    let (status, _) = send(
        client()
            .delete(url(&server, &format!("{JOBS}/outage-probe")))
            .json(&json!({"propagationPolicy": "Background"})),
    )
    .await;
    assert_eq!(status, 200);
    let event: Value = lines.next().await.expect("the watch is still open");
    assert_eq!(event["type"], "DELETED");
}
