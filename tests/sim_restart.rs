//! The simulated API server across a restart and a compaction, request for request against the
//! real server's captures (exchanges 53–60): what each LIST row of the real table answers, the
//! watch cache's window, and the faults and timers that restart or compact it.

mod sim_support;

use std::time::Duration;

use kube_gc::sim::faults::FaultPlan;
use kube_gc::sim::store::WatchCacheSizing;
use kube_gc::sim::{SimConfig, SimServer};
use serde_json::{json, Value};
use sim_support::*;

const NS: &str = "capture-relist2";
const CONFIGMAPS: &str = "/api/v1/namespaces/capture-relist2/configmaps";

fn configmap(name: &str) -> Value {
    json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name, "namespace": NS}})
}

fn create(server: &SimServer, name: &str) -> u64 {
    match server.create(&configmaps(), configmap(name)) {
        Ok(created) => rv(&created),
        Err(e) => panic!("creating {name}: {e}"),
    }
}

/// The names of a list's items, and its resourceVersion.
fn listed(list: &Value) -> (Vec<String>, String) {
    let names = list["items"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|i| i["metadata"]["name"].as_str().map(str::to_owned))
        .collect();
    let rv = list["metadata"]["resourceVersion"]
        .as_str()
        .unwrap_or_default()
        .to_owned();
    (names, rv)
}

fn names_of(prefix: &str) -> Vec<String> {
    listed(&captured_body(prefix)).0
}

async fn list(server: &SimServer, query: &str) -> (u16, Value) {
    send(client().get(url(server, &format!("{CONFIGMAPS}?{query}")))).await
}

async fn watch(server: &SimServer, query: &str) -> Vec<Value> {
    let response = client()
        .get(url(server, &format!("{CONFIGMAPS}?watch=1&{query}")))
        .send()
        .await
        .unwrap_or_else(|e| panic!("watch failed: {e}"));
    assert_eq!(
        response.status().as_u16(),
        200,
        "a 410 watch is still HTTP 200"
    );
    Lines::new(response).rest().await
}

/// The scenario of exchanges 56–60: two ConfigMaps, the last synced version, a restart, one
/// more ConfigMap. Returns the server, the last synced version and the restart's version.
async fn restarted() -> (SimServer, u64, u64) {
    let server = start(SimConfig::default().with_namespaces(&["default", NS])).await;
    create(&server, "before-1");
    let synced = create(&server, "before-2");
    // Something else moves the revision on before the restart, as in the capture (1587 → 1592).
    create_job(&server, "unrelated");
    server.restart();
    let restarted_at = server.resource_version();
    create(&server, "after-1");
    (server, synced, restarted_at)
}

#[tokio::test(start_paused = true)]
async fn a_paginated_relist_reads_etcd_at_exactly_the_old_version_like_exchange_56() {
    let (server, synced, _) = restarted().await;
    let (code, body) = list(&server, &format!("limit=500&resourceVersion={synced}")).await;
    assert_eq!(code, 200);
    // The old state at the old version: what made the reflector go blind.
    assert_eq!(listed(&body), (names_of("56-"), synced.to_string()));
}

#[tokio::test(start_paused = true)]
async fn an_unpaginated_relist_is_served_from_the_watch_cache_like_exchange_57() {
    let (server, synced, _) = restarted().await;
    let (code, body) = list(&server, &format!("resourceVersion={synced}")).await;
    assert_eq!(code, 200);
    let now = server.resource_version().to_string();
    assert_eq!(listed(&body), (names_of("57-"), now));
    assert_eq!(body["kind"], captured_body("57-")["kind"]);
}

#[tokio::test(start_paused = true)]
async fn limit_with_not_older_than_reads_the_present_from_etcd_like_exchange_58() {
    let (server, synced, _) = restarted().await;
    let (code, body) = list(
        &server,
        &format!("limit=500&resourceVersion={synced}&resourceVersionMatch=NotOlderThan"),
    )
    .await;
    assert_eq!(code, 200);
    let now = server.resource_version().to_string();
    assert_eq!(listed(&body), (names_of("58-"), now));
}

#[tokio::test(start_paused = true)]
async fn a_watch_from_before_the_restart_gets_the_410_of_exchange_59() {
    let (server, synced, restarted_at) = restarted().await;
    let events = watch(
        &server,
        &format!("resourceVersion={synced}&timeoutSeconds=2"),
    )
    .await;
    let mut expected = exchange("59-")["response"]["events"].clone();
    expected[0]["object"]["message"] = json!(format!(
        "too old resource version: {synced} ({restarted_at})"
    ));
    assert_eq!(Value::Array(events), expected);
}

#[tokio::test(start_paused = true)]
async fn a_watch_from_the_relists_version_works_like_exchange_60() {
    let (server, synced, _) = restarted().await;
    let (_, relisted) = list(&server, &format!("resourceVersion={synced}")).await;
    let from = listed(&relisted).1;
    create(&server, "after-2");
    let events = watch(&server, &format!("resourceVersion={from}&timeoutSeconds=1")).await;
    let real = &exchange("60-")["response"]["events"][0];
    assert_eq!(summary(&events), [("ADDED".into(), "after-2".into())]);
    assert_eq!(events[0]["object"]["kind"], real["object"]["kind"]);
}

#[tokio::test(start_paused = true)]
async fn compaction_expires_exact_reads_but_not_the_watch_cache() {
    let (server, synced, restarted_at) = restarted().await;
    server.compact();
    // Exchange 54: etcd no longer has the old revision.
    let (code, body) = list(&server, &format!("limit=500&resourceVersion={synced}")).await;
    assert_eq!((code, body), (410, captured_body("54-")));
    // The watch cache does not care: a watch from its window still works.
    let events = watch(
        &server,
        &format!("resourceVersion={restarted_at}&timeoutSeconds=1"),
    )
    .await;
    assert_eq!(summary(&events), [("ADDED".into(), "after-1".into())]);
}

#[tokio::test(start_paused = true)]
async fn a_watch_cache_that_dropped_events_refuses_watches_from_before_them() {
    let sizing = WatchCacheSizing {
        lower: 2,
        upper: 2,
        fresh_for: Duration::from_secs(75),
    };
    let config = SimConfig::default()
        .with_namespaces(&["default", NS])
        .with_watch_cache(sizing);
    let server = start(config).await;
    let first = create(&server, "a");
    create(&server, "b");
    create(&server, "c");
    create(&server, "d");
    // The ring holds c and d: a watch may start from one below c.
    let events = watch(
        &server,
        &format!("resourceVersion={first}&timeoutSeconds=1"),
    )
    .await;
    assert_eq!(events.len(), 1);
    assert_eq!(events[0]["object"]["code"], 410);
    let window = server
        .store()
        .watch_window_start(server.store().resources().lookup(&configmaps()).unwrap());
    assert_eq!(window, first + 1);
    let events = watch(
        &server,
        &format!("resourceVersion={window}&timeoutSeconds=1"),
    )
    .await;
    assert_eq!(
        summary(&events),
        [("ADDED".into(), "c".into()), ("ADDED".into(), "d".into())]
    );
}

/// The captured body with its version numbers swapped for this server's.
fn expected_body(prefix: &str, ahead: u64, current: u64) -> Value {
    let captured = exchange(prefix);
    let real_path = captured["request"]["path"].as_str().unwrap_or_default();
    let real_ahead = real_path
        .split(['=', '&'])
        .find_map(|part| part.parse::<u64>().ok().filter(|v| *v > 1000))
        .unwrap_or_default();
    let mut body = captured["response"]["body"].clone();
    if let Some(message) = body["message"].as_str() {
        let message = message.replace(&real_ahead.to_string(), &ahead.to_string());
        let message = match message.rsplit_once("current: ") {
            Some((head, _)) => format!("{head}current: {current}"),
            None => message,
        };
        body["message"] = json!(message);
    }
    body
}

#[tokio::test(start_paused = true)]
async fn a_version_the_server_has_not_reached_is_answered_as_exchanges_61_to_63() {
    let server = start(SimConfig::default().with_namespaces(&["default", NS])).await;
    let current = server.resource_version();
    let ahead = current + 100_000;
    // The watch cache waits 3 s (tokio's clock, paused here), then 504, retry after 1 s (61).
    let started = tokio::time::Instant::now();
    let (code, body) = list(&server, &format!("resourceVersion={ahead}")).await;
    assert_eq!(started.elapsed(), Duration::from_secs(3));
    assert_eq!((code, body), (504, expected_body("61-", ahead, current)));
    // etcd with NotOlderThan: at once, 504 with no retry hint (62).
    let started = tokio::time::Instant::now();
    let query = format!("limit=5&resourceVersion={ahead}&resourceVersionMatch=NotOlderThan");
    let (code, body) = list(&server, &query).await;
    assert!(started.elapsed().is_zero());
    assert_eq!((code, body), (504, expected_body("62-", ahead, current)));
    // etcd at exactly a future revision: etcd's own 500 (63).
    for query in [
        format!("limit=5&resourceVersion={ahead}"),
        format!("resourceVersion={ahead}&resourceVersionMatch=Exact"),
    ] {
        let (code, body) = list(&server, &query).await;
        assert_eq!((code, body), (500, captured_body("63-")), "{query}");
    }
}

#[tokio::test(start_paused = true)]
async fn a_list_from_the_cache_answers_as_soon_as_the_version_arrives() {
    let server = start(SimConfig::default().with_namespaces(&["default", NS])).await;
    let ahead = server.resource_version() + 1;
    // The version arrives while the list waits: it is answered with it.
    let waiting = tokio::spawn({
        let url = url(&server, &format!("{CONFIGMAPS}?resourceVersion={ahead}"));
        async move { send(client().get(url)).await }
    });
    tokio::time::sleep(Duration::from_millis(500)).await;
    create(&server, "late");
    let (code, body) = waiting.await.unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(code, 200);
    assert_eq!(listed(&body).0, ["late"]);
}

#[tokio::test(start_paused = true)]
async fn the_compactor_keeps_one_interval_of_history() {
    let interval = Duration::from_secs(300);
    let config = SimConfig::default()
        .with_namespaces(&["default", NS])
        .with_compaction_interval(Some(interval));
    let server = start(config).await;
    let early = create(&server, "early");
    create(&server, "middle");
    // First round: it only notes the revision.
    tokio::time::sleep(interval + Duration::from_secs(1)).await;
    let noted = server.resource_version();
    create(&server, "later");
    assert!(server.store().oldest_resource_version() < early);
    // Second round: compacted to what the first round saw.
    tokio::time::sleep(interval).await;
    assert_eq!(server.store().oldest_resource_version(), noted);
    let (code, _) = list(&server, &format!("limit=5&resourceVersion={early}")).await;
    assert_eq!(code, 410);
    let (code, _) = list(&server, &format!("limit=5&resourceVersion={noted}")).await;
    assert_eq!(code, 200);
}

#[tokio::test(start_paused = true)]
async fn a_restart_fault_cuts_the_request_and_rebuilds_the_watch_caches() {
    let server = start(SimConfig::default().with_namespaces(&["default", NS])).await;
    let before = create(&server, "a");
    create(&server, "b");
    server.faults().set_plan(FaultPlan::new(1).restart(1.0));
    let cut = client()
        .get(url(
            &server,
            &format!("{CONFIGMAPS}?resourceVersion={before}"),
        ))
        .send()
        .await;
    assert!(cut.is_err(), "the restart drops the connection: {cut:?}");
    assert_eq!(server.faults().injected().restarts, 1);
    server.faults().set_plan(FaultPlan::default());
    let events = watch(
        &server,
        &format!("resourceVersion={before}&timeoutSeconds=1"),
    )
    .await;
    assert_eq!(events[0]["object"]["code"], 410);
}
