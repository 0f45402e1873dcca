//! Relisting as client-go does, pinned by a real API server's answers after a restart: its
//! watch cache starts again at the current revision, so a watch from an older version gets 410;
//! the relist then asks for the last synced version without `limit`, which the server serves
//! from its watch cache at the current version, where a LIST with `limit` would have been read
//! from etcd at exactly the old one (`fixtures/real-apiserver/exchanges/55–60`).

use super::*;

fn list_params(call: &Call) -> &ListParams {
    match call {
        Call::List(p) => p,
        other => panic!("expected a list, got {other:?}"),
    }
}

#[tokio::test(start_paused = true)]
async fn a_relist_after_a_410_asks_for_the_last_synced_version_without_limit() {
    let script = Scripted::default()
        .list(list("1587", vec![obj("before-1", "1586")]))
        // A restarted API server's watch cache starts at the current revision, after 1587: the
        // watch gets one ERROR event with a 410 `Expired` Status, and the stream ends
        // (exchange 59).
        .watch(Ok(vec![expired_event()]))
        // Unpaged, the relist is served from the watch cache, not older than 1587: the current
        // objects at the current version (exchange 57).
        .list(list(
            "1594",
            vec![obj("after-1", "1594"), obj("before-1", "1586")],
        ))
        // A watch from the relist's version is inside the new watch cache's window and delivers
        // what changes after it (exchange 60).
        .watch(Ok(vec![Ok(WatchEvent::Added(obj("after-2", "1595")))]));
    let out = run(script, ReflectorConfig::default()).await;
    assert_eq!(
        call_summary(&out.calls),
        [
            "list rv=0",
            "watch rv=1587",
            "list rv=1587",
            "watch rv=1594",
            "watch rv=1595"
        ]
    );
    assert_eq!(list_params(&out.calls[0].1).limit, Some(500), "first list");
    assert_eq!(list_params(&out.calls[2].1).limit, None, "relist");
    assert_eq!(
        list_params(&out.calls[2].1).resource_version_match,
        None,
        "no match: the watch cache's not-older-than"
    );
    assert_eq!(
        out.sink,
        [
            "replaced@1587 before-1",
            "replaced@1594 after-1,before-1",
            "added after-2@1595"
        ]
    );
}

#[tokio::test(start_paused = true)]
async fn a_server_that_paged_the_first_list_keeps_being_paged() {
    // A list at 0 that comes in pages means no watch cache: client-go keeps its page size.
    let script = Scripted::default()
        .paged_list(list("5", vec![obj("a", "5")]))
        .watch(Ok(vec![expired_event()]))
        .list(list("7", vec![]));
    let out = run(script, ReflectorConfig::default()).await;
    assert_eq!(
        call_summary(&out.calls),
        ["list rv=0", "watch rv=5", "list rv=5", "watch rv=7"]
    );
    assert_eq!(list_params(&out.calls[2].1).limit, Some(500));
}

#[tokio::test(start_paused = true)]
async fn a_consistent_list_is_paged_but_only_a_paged_list_at_zero_means_no_watch_cache() {
    // The relist's version is unavailable, so a consistent list follows, paged; etcd pages it
    // whatever the cache, so it says nothing about the cache and the next relist is unpaged.
    let script = Scripted::default()
        .list(list("5", vec![]))
        .watch(Ok(vec![expired_event()]))
        .list(Err(http_error(410, &[])))
        .paged_list(list("9", vec![]))
        .watch(Ok(vec![expired_event()]))
        .list(list("11", vec![]));
    let out = run(script, ReflectorConfig::default()).await;
    assert_eq!(
        call_summary(&out.calls),
        [
            "list rv=0",
            "watch rv=5",
            "list rv=5",
            "list rv=-",
            "watch rv=9",
            "list rv=9",
            "watch rv=11"
        ]
    );
    assert_eq!(list_params(&out.calls[2].1).limit, None);
    assert_eq!(list_params(&out.calls[3].1).limit, Some(500));
    assert_eq!(list_params(&out.calls[5].1).limit, None);
}

#[tokio::test(start_paused = true)]
async fn a_stuck_reflector_reports_recovery_once_its_watch_holds_not_when_it_ends() {
    let mut script = Scripted::default().list(list("5", vec![]));
    // Twelve refused watches: 230–461 s of backoff (bases 0.8 s doubling to 30 s, each delay
    // within [base, 2 × base)), well past the 60 s limit.
    for _ in 0..12 {
        script = script.watch(Err(http_error(503, &[])));
    }
    // Then a watch that works and stays open (its stall deadline is 330 s or more after it
    // opens, so past 560 s).
    let script = script.stalled_watch(vec![]);
    let reflector = Reflector::new(
        script,
        ReflectorConfig {
            seed: Some(1),
            ..ReflectorConfig::default()
        },
    );
    let metrics = reflector.metrics();
    let cancel = CancellationToken::new();
    let task = tokio::spawn(reflector.run(Arc::new(Recorder::default()), cancel.clone()));
    // Reported at the first step that ends past 60 s: by 60 s plus one longest delay.
    tokio::time::sleep(Duration::from_secs(200)).await;
    assert!(
        metrics.is_stuck() && metrics.reported_stuck(),
        "stuck by 200 s"
    );
    tokio::time::sleep(Duration::from_secs(280)).await;
    assert!(!metrics.is_stuck());
    assert!(
        !metrics.reported_stuck(),
        "the recovery is reported while the watch is still open"
    );
    cancel.cancel();
    task.await.unwrap();
}

#[tokio::test(start_paused = true)]
async fn a_410_on_the_first_watch_the_returning_server_answers_is_relisted_at_once() {
    // Eight watches meet the server away (503): the backoff grows to its 30 s cap. Then the
    // restarted server answers a watch — this request is the one that tells the process it
    // is back, so no return comes later to cut the backoff short — and its stream says 410.
    // The outage's backoff says nothing about this loop: the relist is immediate (kube-gc on
    // a real kube-apiserver before this: 30–60 s, and 91 s with the next restart).
    let mut script = Scripted::default().list(list("5", vec![]));
    for _ in 0..8 {
        script = script.watch(Err(http_error(503, &[])));
    }
    let script = script
        .watch(Ok(vec![expired_event()]))
        .list(list("9", vec![]))
        .watch(Err(http_error(503, &[])))
        .watch(Err(http_error(503, &[])));
    let out = run(script, ReflectorConfig::default()).await;
    let calls = call_summary(&out.calls);
    assert_eq!(
        calls[9..],
        [
            "watch rv=5",
            "list rv=5",
            "watch rv=9",
            "watch rv=9",
            "watch rv=9"
        ]
    );
    assert!(
        gap(&out.calls, 9) >= Duration::from_secs(30),
        "the outage's backoff grew"
    );
    assert_eq!(
        gap(&out.calls, 10),
        Duration::ZERO,
        "relisted at once after the 410"
    );
    // A later failure backs off from the beginning (0.8–1.6 s), not from the outage's cap.
    assert!(
        in_jitter_range(gap(&out.calls, 12), 800),
        "{:?}",
        gap(&out.calls, 12)
    );
}
