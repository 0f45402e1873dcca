//! Streaming lists (WatchList): the initial events delivered as one list, the same stream
//! followed as the watch, and every way the streaming list falls back to a LIST.

use super::*;

/// A reflector that asks for streaming lists.
fn streaming() -> ReflectorConfig {
    ReflectorConfig {
        use_watch_list: true,
        ..ReflectorConfig::default()
    }
}

#[tokio::test(start_paused = true)]
async fn a_refused_watch_list_falls_back_to_list_and_is_not_asked_again() {
    let script = Scripted::default()
        .watch(Err(http_error(422, &[])))
        .list(list("5", vec![obj("a", "5")]))
        .watch(Ok(vec![
            Ok(WatchEvent::Added(obj("b", "6"))),
            expired_event(),
        ]))
        .list(list("8", vec![obj("a", "5")]));
    let out = run(script, streaming()).await;
    assert_eq!(
        call_summary(&out.calls),
        [
            "watch-list",
            "list rv=0",
            "watch rv=5",
            "list rv=6",
            "watch rv=8"
        ]
    );
    assert_eq!(out.sink, ["replaced@5 a", "added b@6", "replaced@8 a"]);
    let m = out.metrics;
    assert_eq!((m.watch_lists, m.watch_list_fallbacks), (1, 1));
}

#[tokio::test(start_paused = true)]
async fn a_watch_list_delivers_its_initial_events_as_one_replace_then_watches_on() {
    let script = Scripted::default().watch(Ok(vec![
        Ok(WatchEvent::Added(obj("a", "3"))),
        bookmark("3", false),
        Ok(WatchEvent::Added(obj("b", "4"))),
        bookmark("6", true),
        Ok(WatchEvent::Modified(obj("a", "7"))),
    ]));
    let out = run(script, streaming()).await;
    assert_eq!(call_summary(&out.calls), ["watch-list", "watch rv=7"]);
    let Call::Watch(p) = &out.calls[0].1 else {
        panic!()
    };
    assert!(p.allow_bookmarks && p.resource_version.is_none());
    assert_eq!(out.sink, ["replaced@6 a,b", "modified a@7"]);
    let m = out.metrics;
    assert_eq!((m.lists, m.watch_lists, m.watch_list_fallbacks), (1, 1, 0));
}

#[tokio::test(start_paused = true)]
async fn an_incomplete_watch_list_falls_back_this_time_only() {
    let script = Scripted::default()
        .watch(Ok(vec![Ok(WatchEvent::Added(obj("a", "3")))])) // ends before its bookmark
        .list(list("5", vec![obj("a", "5")]))
        .watch(Ok(vec![expired_event()]))
        .watch(Ok(vec![
            Ok(WatchEvent::Added(obj("a", "8"))),
            bookmark("9", true),
        ]));
    let out = run(script, streaming()).await;
    assert_eq!(
        call_summary(&out.calls),
        [
            "watch-list",
            "list rv=0",
            "watch rv=5",
            "watch-list",
            "watch rv=9"
        ]
    );
    assert_eq!(out.sink, ["replaced@5 a", "replaced@9 a"]);
    let m = out.metrics;
    assert_eq!((m.watch_lists, m.watch_list_fallbacks), (2, 1));
}

#[tokio::test(start_paused = true)]
async fn a_malformed_initial_event_abandons_the_streaming_list_rather_than_lose_an_object() {
    let script = Scripted::default()
        .watch(Ok(vec![
            Ok(WatchEvent::Added(obj("a", "3"))),
            malformed(),
            bookmark("4", true),
        ]))
        .list(list("4", vec![obj("a", "3"), obj("b", "4")]));
    let out = run(script, streaming()).await;
    assert_eq!(
        call_summary(&out.calls),
        ["watch-list", "list rv=0", "watch rv=4"]
    );
    assert_eq!(out.sink, ["replaced@4 a,b"]);
    let m = out.metrics;
    assert_eq!((m.malformed_events, m.watch_list_fallbacks), (1, 1));
}

#[tokio::test(start_paused = true)]
async fn a_watch_list_stalled_before_its_initial_events_end_falls_back_to_list() {
    let script = Scripted::default()
        .stalled_watch(vec![Ok(WatchEvent::Added(obj("a", "3")))])
        .list(list("5", vec![obj("a", "5")]));
    let out = run(script, streaming()).await;
    assert_eq!(
        call_summary(&out.calls),
        ["watch-list", "list rv=0", "watch rv=5"]
    );
    let Call::Watch(stalled) = &out.calls[0].1 else {
        panic!("the first call is a watch")
    };
    let timeout = Duration::from_secs(stalled.timeout_seconds.unwrap().into());
    assert_eq!(gap(&out.calls, 1), timeout + Duration::from_secs(30));
    assert_eq!(out.sink, ["replaced@5 a"]);
    let m = out.metrics;
    assert_eq!((m.stalled_watches, m.watch_list_fallbacks), (1, 1));
}

#[tokio::test(start_paused = true)]
async fn an_unanswered_watch_list_falls_back_to_list_after_the_grace() {
    let script = Scripted::default()
        .unanswered_watch()
        .list(list("5", vec![obj("a", "5")]));
    let out = run(script, streaming()).await;
    assert_eq!(
        call_summary(&out.calls),
        ["watch-list", "list rv=0", "watch rv=5"]
    );
    assert_eq!(gap(&out.calls, 1), Duration::from_secs(30));
    assert_eq!(out.sink, ["replaced@5 a"]);
    let m = out.metrics;
    assert_eq!((m.stalled_watches, m.watch_list_fallbacks), (1, 1));
}
