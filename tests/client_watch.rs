//! Watches end to end against the simulated API server: typed and metadata-only events, the
//! 410 that arrives as an ERROR event, bookmarks, and the rule that a watch has no client-side
//! timeout (the server's `timeoutSeconds` ends it).

mod client_support;

use std::time::Duration;

use client_support::{job, jobs, last_request, seed, start, start_with, unthrottled};
use futures_util::StreamExt;
use kube_gc::api::{Job, WatchEvent, ACCEPT_PARTIAL_OBJECT_METADATA};
use kube_gc::client::{Api, Error, WatchParams, WatchStream};
use kube_gc::sim::{DeleteOptions, Propagation, SimConfig};
use serde_json::json;

/// The next event, or a panic if the stream ended.
async fn next<T>(stream: &mut WatchStream<T>) -> WatchEvent<T>
where
    T: serde::de::DeserializeOwned + Unpin,
{
    match stream.next().await {
        Some(Ok(event)) => event,
        Some(Err(e)) => panic!("watch failed: {e}"),
        None => panic!("watch ended early"),
    }
}

fn name_of(event: &WatchEvent<Job>) -> Option<String> {
    event.object().and_then(|j| j.metadata.name.clone())
}

#[tokio::test]
async fn live_events_decode_as_typed_objects() {
    let h = start().await;
    let from = h.sim.resource_version().to_string();
    let api: Api<Job> = Api::namespaced(h.client.clone(), "default");
    let mut events = api
        .watch(&WatchParams::from_version(from.clone(), 60))
        .await
        .unwrap();
    let request = last_request(&h.sim);
    assert_eq!(request.query_value("watch"), Some("1"));
    assert_eq!(request.query_value("resourceVersion"), Some(from.as_str()));
    assert_eq!(request.query_value("allowWatchBookmarks"), Some("true"));
    assert_eq!(request.query_value("timeoutSeconds"), Some("60"));

    let created = seed(&h.sim, &jobs(), job("default", "w"));
    let mut touched = created.clone();
    touched["metadata"]["labels"]["touched"] = json!("yes");
    h.sim.update(&jobs(), touched).unwrap();
    let background = DeleteOptions::propagation(Propagation::Background);
    h.sim
        .delete(&jobs(), Some("default"), "w", &background)
        .unwrap();

    let added = next(&mut events).await;
    assert!(matches!(added, WatchEvent::Added(_)), "{added:?}");
    assert_eq!(name_of(&added).as_deref(), Some("w"));
    let modified = next(&mut events).await;
    match &modified {
        WatchEvent::Modified(job) => assert_eq!(job.metadata.labels["touched"], "yes"),
        other => panic!("expected MODIFIED, got {other:?}"),
    }
    assert!(matches!(next(&mut events).await, WatchEvent::Deleted(_)));
}

#[tokio::test]
async fn without_a_version_existing_objects_arrive_as_added() {
    let h = start().await;
    for name in ["a", "b", "c"] {
        seed(&h.sim, &jobs(), job("default", name));
    }
    let api: Api<Job> = Api::all(h.client.clone());
    let mut events = api.watch(&WatchParams::default()).await.unwrap();
    let mut names = Vec::new();
    for _ in 0..3 {
        let event = next(&mut events).await;
        assert!(matches!(event, WatchEvent::Added(_)));
        names.extend(name_of(&event));
    }
    names.sort();
    assert_eq!(names, vec!["a", "b", "c"]);
    assert_eq!(last_request(&h.sim).path, "/apis/batch/v1/jobs");
}

#[tokio::test]
async fn a_version_from_before_a_restart_ends_the_watch_with_a_410_error_event() {
    let h = start().await;
    let old = h.sim.resource_version().to_string();
    seed(&h.sim, &jobs(), job("default", "newer"));
    // The restarted API server's watch cache starts at the current revision.
    h.sim.restart();

    let api: Api<Job> = Api::namespaced(h.client.clone(), "default");
    let mut events = api
        .watch(&WatchParams::from_version(old, 60))
        .await
        .unwrap();
    // Like the real server (exchange 55): HTTP 200, then one ERROR event, then the end.
    assert_eq!(last_request(&h.sim).status, 200);
    let status = match next(&mut events).await {
        WatchEvent::Error(status) => *status,
        other => panic!("expected ERROR, got {other:?}"),
    };
    assert_eq!(status.code, Some(410));
    let err = Error::from(status);
    assert!(err.is_gone() && err.is_expired(), "{err}");
    assert!(events.next().await.is_none());
}

#[tokio::test]
async fn metadata_only_watch_sends_its_accept_and_decodes_partial_objects() {
    let h = start().await;
    seed(&h.sim, &jobs(), job("default", "m"));
    let api: Api<Job> = Api::namespaced(h.client.clone(), "default");
    let mut events = api.watch_metadata(&WatchParams::default()).await.unwrap();
    assert_eq!(
        last_request(&h.sim).header("accept"),
        Some(ACCEPT_PARTIAL_OBJECT_METADATA)
    );
    match next(&mut events).await {
        WatchEvent::Added(meta) => {
            assert_eq!(meta.types.kind, "PartialObjectMetadata");
            assert_eq!(meta.metadata.name.as_deref(), Some("m"));
        }
        other => panic!("expected ADDED, got {other:?}"),
    }
}

#[tokio::test]
async fn a_watch_refused_up_front_is_an_error_not_a_stream() {
    let h = start().await;
    let api: Api<Job> = Api::dynamic(
        h.client.clone(),
        kube_gc::client::ResourceRef::new("example.com", "v1", "widgets", "Widget", true),
        Some("default"),
    );
    let err = api.watch(&WatchParams::default()).await.unwrap_err();
    assert!(err.is_not_found(), "{err}");
}

/// On a paused clock: the request timeout (1 s) does not apply to a watch, which lasts until
/// the server ends it at `timeoutSeconds` (30 s), after a bookmark.
#[tokio::test(start_paused = true)]
async fn a_watch_outlives_the_request_timeout_and_ends_at_timeout_seconds() {
    let mut options = unthrottled().without_timeouts();
    options.request_timeout = Some(Duration::from_secs(1));
    let h = start_with(SimConfig::default(), options).await;
    let from = h.sim.resource_version().to_string();
    let api: Api<Job> = Api::namespaced(h.client.clone(), "default");

    let started = tokio::time::Instant::now();
    let mut events = api
        .watch(&WatchParams::from_version(from, 30))
        .await
        .unwrap();
    let mut bookmarks = 0;
    while let Some(event) = events.next().await {
        match event {
            Ok(WatchEvent::Bookmark(_)) => bookmarks += 1,
            Ok(other) => panic!("unexpected event {other:?}"),
            Err(e) => panic!("the watch failed instead of ending: {e}"),
        }
    }
    assert!(
        started.elapsed() >= Duration::from_secs(30),
        "{:?}",
        started.elapsed()
    );
    assert!(bookmarks >= 1);
}
