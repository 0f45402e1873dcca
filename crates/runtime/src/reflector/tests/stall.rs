//! Watches the server neither answers nor ends: given up by the watchdog after the stall grace.

use super::*;

#[tokio::test(start_paused = true)]
async fn a_stalled_watch_is_abandoned_after_its_timeout_and_grace_and_resumed() {
    let script = Scripted::default()
        .list(list("1", vec![]))
        .stalled_watch(vec![Ok(WatchEvent::Added(obj("a", "2")))]);
    let config = ReflectorConfig {
        watch_stall_grace: Duration::from_secs(30),
        ..ReflectorConfig::default()
    };
    let out = run(script, config).await;
    assert_eq!(
        call_summary(&out.calls),
        ["list rv=0", "watch rv=1", "watch rv=2"]
    );
    let Call::Watch(stalled) = &out.calls[1].1 else {
        panic!("the second call is a watch")
    };
    let timeout = Duration::from_secs(stalled.timeout_seconds.unwrap().into());
    // Given up exactly at timeoutSeconds + grace, and resumed at once: no backoff, no relist.
    assert_eq!(gap(&out.calls, 2), timeout + Duration::from_secs(30));
    assert_eq!(out.sink, ["replaced@1 ", "added a@2"]);
    let m = out.metrics;
    assert_eq!((m.stalled_watches, m.backoffs, m.relists), (1, 0, 0));
}

#[tokio::test(start_paused = true)]
async fn an_unanswered_watch_request_is_given_up_after_the_grace_and_retried_after_a_backoff() {
    let script = Scripted::default()
        .list(list("1", vec![]))
        .unanswered_watch()
        .watch(Ok(vec![Ok(WatchEvent::Added(obj("a", "2")))]));
    let out = run(script, ReflectorConfig::default()).await;
    assert_eq!(
        call_summary(&out.calls),
        ["list rv=0", "watch rv=1", "watch rv=1", "watch rv=2"]
    );
    let waited = gap(&out.calls, 2);
    let backoff = waited - Duration::from_secs(30);
    assert!(in_jitter_range(backoff, 800), "{waited:?}");
    assert_eq!(out.sink, ["replaced@1 ", "added a@2"]);
    let m = out.metrics;
    assert_eq!((m.stalled_watches, m.backoffs, m.relists), (1, 1, 0));
}
