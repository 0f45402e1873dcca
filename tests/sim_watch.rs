//! WATCH over HTTP: replay, live events, 410, bookmarks, selectors, metadata-only, WatchList,
//! injected cuts and slow watchers, compared with the real server's captures.

mod sim_support;

use std::time::Duration;

use kube_gc::sim::faults::FaultPlan;
use kube_gc::sim::{DeleteOptions, Propagation, SimConfig, SimServer};
use serde_json::{json, Value};
use sim_support::*;

const JOBS: &str = "/apis/batch/v1/namespaces/capture/jobs";

async fn open(server: &SimServer, query: &str, accept: Option<&str>) -> Lines {
    let mut request = client().get(url(server, &format!("{JOBS}?{query}")));
    if let Some(accept) = accept {
        request = request.header("accept", accept);
    }
    match request.send().await {
        Ok(response) => {
            assert_eq!(response.status().as_u16(), 200);
            Lines::new(response)
        }
        Err(e) => panic!("watch request failed: {e}"),
    }
}

/// The create / label / delete sequence of exchange 20, through the in-process API.
fn create_touch_delete(server: &SimServer) {
    let created = create_job(server, "watched");
    let mut touched = created.clone();
    touched["metadata"]["labels"]["touched"] = json!("yes");
    if let Err(e) = server.update(&jobs(), touched) {
        panic!("{e}");
    }
    let background = DeleteOptions::propagation(Propagation::Background);
    if let Err(e) = server.delete(&jobs(), Some("capture"), "watched", &background) {
        panic!("{e}");
    }
}

#[tokio::test(start_paused = true)]
async fn replays_from_a_version_and_ends_with_a_bookmark_like_exchange_20() {
    let server = start(SimConfig::default()).await;
    let from = server.resource_version();
    create_touch_delete(&server);
    let response = client()
        .get(url(
            &server,
            &format!(
                "{JOBS}?watch=1&resourceVersion={from}&allowWatchBookmarks=true&timeoutSeconds=4"
            ),
        ))
        .send()
        .await;
    let response = match response {
        Ok(r) => r,
        Err(e) => panic!("{e}"),
    };
    let header = |name: &str| {
        response
            .headers()
            .get(name)
            .and_then(|v| v.to_str().ok())
            .map(str::to_string)
    };
    assert_eq!(header("content-type").as_deref(), Some("application/json"));
    assert_eq!(header("transfer-encoding").as_deref(), Some("chunked"));
    let events = Lines::new(response).rest().await;
    let last_rv = server.resource_version().to_string();
    assert_eq!(
        summary(&events),
        vec![
            ("ADDED".into(), "watched".into()),
            ("MODIFIED".into(), "watched".into()),
            ("DELETED".into(), "watched".into()),
            ("BOOKMARK".into(), last_rv.clone()),
        ]
    );
    let real = &exchange("20-")["response"]["events"];
    assert_eq!(
        events[2]["object"]["metadata"]["resourceVersion"],
        last_rv.as_str()
    );
    let bookmark = &events[3]["object"];
    assert_eq!(bookmark["kind"], real[3]["object"]["kind"]);
    assert_eq!(bookmark["apiVersion"], real[3]["object"]["apiVersion"]);
    assert_eq!(
        bookmark["metadata"],
        json!({"resourceVersion": last_rv, "creationTimestamp": null})
    );
    assert_eq!(
        events[1]["object"]["metadata"]["labels"],
        real[1]["object"]["metadata"]["labels"]
    );
}

#[tokio::test]
async fn without_a_version_sends_current_objects_then_live_changes() {
    let server = start(SimConfig::default()).await;
    create_job(&server, "existing");
    let mut lines = open(&server, "watch=true", None).await;
    create_job(&server, "new");
    let events = lines.take(2).await;
    assert_eq!(
        summary(&events),
        vec![
            ("ADDED".into(), "existing".into()),
            ("ADDED".into(), "new".into())
        ]
    );
}

#[tokio::test]
async fn a_version_older_than_the_window_gets_one_error_event_like_exchange_55() {
    let server = start(SimConfig::default()).await;
    let old = server.resource_version();
    create_job(&server, "a");
    // After a restart the watch cache starts at the current revision (exchanges 55, 59).
    server.restart();
    let events = open(
        &server,
        &format!("watch=1&resourceVersion={old}&timeoutSeconds=2"),
        None,
    )
    .await
    .rest()
    .await;
    assert_eq!(events.len(), 1);
    let real = &exchange("55-")["response"]["events"][0];
    let mut expected = real.clone();
    expected["object"]["message"] = json!(format!(
        "too old resource version: {old} ({})",
        server.resource_version()
    ));
    assert_eq!(events[0], expected);
}

#[tokio::test(start_paused = true)]
async fn quiet_watches_get_periodic_bookmarks_only_when_allowed() {
    let config = SimConfig::default().with_bookmark_interval(Duration::from_secs(60));
    let server = start(config).await;
    let now = server.resource_version().to_string();
    let events = open(
        &server,
        &format!("watch=1&resourceVersion={now}&allowWatchBookmarks=true&timeoutSeconds=150"),
        None,
    )
    .await
    .rest()
    .await;
    assert_eq!(
        summary(&events),
        vec![
            ("BOOKMARK".into(), now.clone()),
            ("BOOKMARK".into(), now.clone()),
            ("BOOKMARK".into(), now.clone()),
        ],
        "at 60 s, 120 s and just before the 150 s timeout"
    );
    let events = open(
        &server,
        &format!("watch=1&resourceVersion={now}&timeoutSeconds=150"),
        None,
    )
    .await
    .rest()
    .await;
    assert!(events.is_empty(), "no bookmarks unless allowed: {events:?}");
}

#[tokio::test]
async fn selectors_filter_and_leaving_the_selection_is_a_deletion() {
    let server = start(SimConfig::default()).await;
    let now = server.resource_version();
    let mut lines = open(
        &server,
        &format!("watch=1&resourceVersion={now}&labelSelector=tier%3Dx"),
        None,
    )
    .await;
    create_job(&server, "unlabelled");
    let mut labelled = job("labelled");
    labelled["metadata"]["labels"]["tier"] = json!("x");
    let created = server.create(&jobs(), labelled).unwrap_or_default();
    let mut relabelled = created.clone();
    relabelled["metadata"]["labels"]["tier"] = json!("y");
    let updated = server.update(&jobs(), relabelled).unwrap_or_default();
    let events = lines.take(2).await;
    assert_eq!(
        summary(&events),
        vec![
            ("ADDED".into(), "labelled".into()),
            ("DELETED".into(), "labelled".into())
        ]
    );
    // The deletion shows the last state that matched, at the change's resourceVersion.
    assert_eq!(events[1]["object"]["metadata"]["labels"]["tier"], "x");
    assert_eq!(
        events[1]["object"]["metadata"]["resourceVersion"],
        updated["metadata"]["resourceVersion"]
    );
}

#[tokio::test]
async fn metadata_only_watch_like_exchange_21() {
    let server = start(SimConfig::default()).await;
    let now = server.resource_version();
    let accept = "application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1";
    let mut lines = open(
        &server,
        &format!("watch=1&resourceVersion={now}"),
        Some(accept),
    )
    .await;
    create_touch_delete(&server);
    let events = lines.take(3).await;
    let real = &exchange("21-")["response"]["events"];
    for (event, real) in events.iter().zip(real.as_array().into_iter().flatten()) {
        assert_eq!(event["type"], real["type"]);
        let keys = |v: &Value| {
            v["object"]
                .as_object()
                .map(|o| o.keys().cloned().collect::<Vec<_>>())
        };
        assert_eq!(keys(event), keys(real));
        assert_eq!(event["object"]["kind"], "PartialObjectMetadata");
    }
    assert_eq!(events.len(), 3);
}

#[tokio::test]
async fn watch_list_is_refused_unless_enabled() {
    let server = start(SimConfig::default()).await;
    let query =
        "watch=1&sendInitialEvents=true&resourceVersionMatch=NotOlderThan&allowWatchBookmarks=true";
    let (code, body) = send(client().get(url(&server, &format!("{JOBS}?{query}")))).await;
    assert_eq!(code, 422);
    assert_eq!(
        body["message"],
        "ListOptions.meta.k8s.io \"\" is invalid: sendInitialEvents: Forbidden: sendInitialEvents is forbidden for watch unless the WatchList feature gate is enabled"
    );
    assert_eq!(
        body["details"]["causes"][0]["reason"],
        "FieldValueForbidden"
    );

    let server = start(SimConfig::default().with_watch_list(true)).await;
    create_job(&server, "a");
    create_job(&server, "b");
    let now = server.resource_version().to_string();
    let mut lines = open(&server, query, None).await;
    let events = lines.take(3).await;
    assert_eq!(
        summary(&events),
        vec![
            ("ADDED".into(), "a".into()),
            ("ADDED".into(), "b".into()),
            ("BOOKMARK".into(), now)
        ]
    );
    assert_eq!(
        events[2]["object"]["metadata"]["annotations"],
        json!({"k8s.io/initial-events-end": "true"})
    );
}

#[tokio::test]
async fn send_initial_events_false_suppresses_the_synthetic_adds_even_from_version_0() {
    let server = start(SimConfig::default().with_watch_list(true)).await;
    create_job(&server, "existing");
    let query =
        "watch=1&resourceVersion=0&sendInitialEvents=false&resourceVersionMatch=NotOlderThan";
    let mut lines = open(&server, query, None).await;
    create_job(&server, "later");
    let first = lines.take(1).await;
    assert_eq!(summary(&first), vec![("ADDED".into(), "later".into())]);
}

#[tokio::test]
async fn injected_cuts_end_watches_after_n_events() {
    let plan = FaultPlan::new(7).cut_watches_after_events(2);
    let server = start(SimConfig::default().with_fault_plan(plan)).await;
    for name in ["a", "b", "c"] {
        create_job(&server, name);
    }
    let events = open(&server, "watch=1", None).await.rest().await;
    assert_eq!(
        summary(&events),
        vec![("ADDED".into(), "a".into()), ("ADDED".into(), "b".into())]
    );
}

#[tokio::test]
async fn a_slow_watcher_is_dropped_instead_of_blocking_writers() {
    let server = start(SimConfig::default().with_watch_buffer(4)).await;
    let now = server.resource_version();
    let mut lines = open(&server, &format!("watch=1&resourceVersion={now}"), None).await;
    // The writes run without yielding, so the watch cannot drain its buffer meanwhile.
    for i in 0..50 {
        create_job(&server, &format!("job-{i}"));
    }
    assert_eq!(server.store().slow_watchers_dropped(), 1);
    let events = lines.rest().await;
    assert_eq!(events.len(), 4, "the stream ends after what was buffered");
    assert_eq!(server.store().open_watches(), 0);
}

#[tokio::test]
async fn dropping_connections_ends_open_watches() {
    let server = start(SimConfig::default()).await;
    let mut lines = open(&server, "watch=1", None).await;
    server.drop_connections();
    assert!(lines.rest().await.is_empty());
    // New connections are served as before.
    let (code, _) = send(client().get(url(&server, JOBS))).await;
    assert_eq!(code, 200);
}

/// Over HTTP/2 each watch is a task of its own: cutting its connection must end it at once, not
/// leave it holding a watcher slot until some later event finds the stream gone.
#[tokio::test]
async fn dropping_connections_ends_http2_watches_at_once() {
    let server = start(SimConfig::default().with_tls()).await;
    let http = client_trusting(server.ca_pem());
    let response = http
        .get(url(&server, &format!("{JOBS}?watch=1")))
        .send()
        .await
        .unwrap();
    assert_eq!(response.version(), reqwest::Version::HTTP_2);
    assert_eq!(server.store().open_watches(), 1);
    server.drop_connections();
    let mut spins = 0;
    while server.store().open_watches() > 0 && spins < 10_000 {
        tokio::task::yield_now().await;
        spins += 1;
    }
    assert_eq!(server.store().open_watches(), 0, "after {spins} yields");
    drop(response);
}

#[tokio::test(start_paused = true)]
async fn injected_cuts_end_watches_after_a_duration() {
    let plan = FaultPlan::new(7).cut_watches_after(Duration::from_secs(30));
    let server = start(SimConfig::default().with_fault_plan(plan)).await;
    let started = tokio::time::Instant::now();
    let events = open(
        &server,
        "watch=1&allowWatchBookmarks=true&timeoutSeconds=300",
        None,
    )
    .await
    .rest()
    .await;
    assert!(
        events.is_empty(),
        "a cut is not a timeout: no final bookmark"
    );
    let elapsed = started.elapsed();
    assert!(
        elapsed >= Duration::from_secs(30) && elapsed < Duration::from_secs(60),
        "{elapsed:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_writers_are_seen_by_a_watcher_in_order_without_gaps() {
    let server = std::sync::Arc::new(start(SimConfig::default()).await);
    let from = server.resource_version();
    let mut lines = open(&server, &format!("watch=1&resourceVersion={from}"), None).await;
    let mut writers = tokio::task::JoinSet::new();
    for writer in 0..4 {
        let server = std::sync::Arc::clone(&server);
        writers.spawn(async move {
            let http = client();
            for i in 0..25 {
                let name = format!("w{writer}-{i}");
                let (code, created) = send(http.post(url(&server, JOBS)).json(&job(&name))).await;
                assert_eq!(code, 201);
                let mut labelled = created.clone();
                labelled["metadata"]["labels"]["step"] = json!("2");
                let (code, _) = send(
                    http.put(url(&server, &format!("{JOBS}/{name}")))
                        .json(&labelled),
                )
                .await;
                assert_eq!(code, 200);
                if i % 2 == 0 {
                    let background = json!({"propagationPolicy": "Background"});
                    let (code, _) = send(
                        http.delete(url(&server, &format!("{JOBS}/{name}")))
                            .json(&background),
                    )
                    .await;
                    assert_eq!(code, 200);
                }
            }
        });
    }
    while let Some(result) = writers.join_next().await {
        if let Err(e) = result {
            panic!("writer failed: {e}");
        }
    }
    let expected: Vec<u64> = server
        .history()
        .iter()
        .filter(|c| c.rv > from)
        .map(|c| c.rv)
        .collect();
    assert_eq!(expected.len(), 4 * (25 * 2 + 13));
    let events = lines.take(expected.len()).await;
    let seen: Vec<u64> = events.iter().map(|e| rv(&e["object"])).collect();
    assert_eq!(seen, expected, "every change once, in commit order");
}
