//! The run loop against a scripted [`ListWatch`]: every answer is canned, so each test pins one
//! path of the state machine exactly — requests, their parameters, their (virtual) times and
//! what the sink sees.

use std::collections::VecDeque;
use std::time::Duration;

use futures_util::StreamExt;
use http::HeaderMap;
use parking_lot::Mutex;
use serde_json::{json, Value};

use super::*;
use kube_gc_api::{Bookmark, BookmarkMeta, List, ListMeta, Status, StatusReason, WatchEvent};
use kube_gc_client::{ApiError, ListParams, WatchParams};

/// One request the reflector made, and when.
#[derive(Debug)]
enum Call {
    List(ListParams),
    Watch(WatchParams),
}

type WatchItems = Vec<Result<WatchEvent<Value>, Error>>;

/// How a scripted watch stream behaves after its items.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum AfterItems {
    /// The stream ends.
    End,
    /// The stream stays open and silent forever (a wedged proxy).
    Stall,
    /// The request is never answered at all (no response headers).
    NeverAnswered,
}

/// Answers lists and watches from scripts; once a script runs out, the request never answers
/// and `exhausted` is notified, which ends the run.
#[derive(Default)]
struct Scripted {
    lists: Mutex<VecDeque<Result<Listed<Value>, Error>>>,
    watches: Mutex<VecDeque<(Result<WatchItems, Error>, AfterItems)>>,
    calls: Arc<Mutex<Vec<(Instant, Call)>>>,
    exhausted: Arc<tokio::sync::Notify>,
}

impl Scripted {
    fn list(self, result: Result<List<Value>, Error>) -> Self {
        self.lists.lock().push_back(result.map(Listed::from));
        self
    }

    /// A list the server sent in more than one page.
    fn paged_list(self, result: Result<List<Value>, Error>) -> Self {
        let paged = result.map(|list| Listed { list, paged: true });
        self.lists.lock().push_back(paged);
        self
    }

    fn watch(self, result: Result<WatchItems, Error>) -> Self {
        self.watches.lock().push_back((result, AfterItems::End));
        self
    }

    /// A watch request the server never answers.
    fn unanswered_watch(self) -> Self {
        self.watches
            .lock()
            .push_back((Ok(vec![]), AfterItems::NeverAnswered));
        self
    }

    /// A watch that delivers `items` and then neither sends nor ends.
    fn stalled_watch(self, items: WatchItems) -> Self {
        self.watches
            .lock()
            .push_back((Ok(items), AfterItems::Stall));
        self
    }
}

impl ListWatch for Scripted {
    type Object = Value;

    async fn list(&self, params: &ListParams) -> Result<Listed<Value>, Error> {
        self.calls
            .lock()
            .push((Instant::now(), Call::List(params.clone())));
        let next = self.lists.lock().pop_front();
        match next {
            Some(result) => result,
            None => self.run_out().await,
        }
    }

    async fn watch(&self, params: &WatchParams) -> Result<EventStream<Value>, Error> {
        self.calls
            .lock()
            .push((Instant::now(), Call::Watch(params.clone())));
        let next = self.watches.lock().pop_front();
        match next {
            Some((result, AfterItems::End)) => Ok(futures_util::stream::iter(result?).boxed()),
            Some((result, AfterItems::Stall)) => Ok(futures_util::stream::iter(result?)
                .chain(futures_util::stream::pending())
                .boxed()),
            Some((_, AfterItems::NeverAnswered)) => std::future::pending().await,
            None => self.run_out().await,
        }
    }
}

impl Scripted {
    /// The script has nothing more to say: tell the test, and never answer.
    async fn run_out<T>(&self) -> T {
        self.exhausted.notify_one();
        std::future::pending().await
    }
}

/// Writes down each event in a short form.
#[derive(Default)]
struct Recorder(Mutex<Vec<String>>);

impl ReflectorSink<Value> for Recorder {
    fn apply(&self, event: ReflectorEvent<Value>) {
        let line = match event {
            ReflectorEvent::Replaced {
                objects,
                resource_version,
            } => {
                let names: Vec<_> = objects.iter().map(name).collect();
                format!("replaced@{resource_version} {}", names.join(","))
            }
            ReflectorEvent::Added(o) => format!("added {}@{}", name(&o), o.resource_version()),
            ReflectorEvent::Modified(o) => {
                format!("modified {}@{}", name(&o), o.resource_version())
            }
            ReflectorEvent::Deleted(o) => format!("deleted {}@{}", name(&o), o.resource_version()),
            ReflectorEvent::Bookmark { resource_version } => format!("bookmark@{resource_version}"),
        };
        self.0.lock().push(line);
    }
}

fn name(object: &Value) -> String {
    object.cache_key().to_string()
}

fn obj(name: &str, rv: &str) -> Value {
    json!({"metadata": {"name": name, "resourceVersion": rv}})
}

fn list(rv: &str, objects: Vec<Value>) -> Result<List<Value>, Error> {
    Ok(List {
        metadata: ListMeta {
            resource_version: Some(rv.into()),
            ..ListMeta::default()
        },
        items: objects,
        ..List::default()
    })
}

fn bookmark(rv: &str, initial_events_end: bool) -> Result<WatchEvent<Value>, Error> {
    let mut metadata = BookmarkMeta {
        resource_version: rv.into(),
        ..BookmarkMeta::default()
    };
    if initial_events_end {
        metadata.annotations.insert(
            kube_gc_api::INITIAL_EVENTS_END_ANNOTATION.into(),
            "true".into(),
        );
    }
    Ok(WatchEvent::Bookmark(Bookmark {
        metadata,
        ..Bookmark::default()
    }))
}

fn expired_event() -> Result<WatchEvent<Value>, Error> {
    Ok(WatchEvent::Error(Box::new(Status {
        code: Some(410),
        reason: StatusReason::Expired,
        ..Status::default()
    })))
}

fn http_error(code: u16, headers: &[(&'static str, &'static str)]) -> Error {
    let mut map = HeaderMap::new();
    for (name, value) in headers {
        map.insert(*name, http::HeaderValue::from_static(value));
    }
    let reason = match code {
        404 => "NotFound",
        410 => "Expired",
        422 => "Invalid",
        429 => "TooManyRequests",
        _ => "InternalError",
    };
    let body = format!(r#"{{"kind":"Status","reason":"{reason}","code":{code}}}"#);
    ApiError::from_response(code, &map, body.as_bytes()).into()
}

fn malformed() -> Result<WatchEvent<Value>, Error> {
    let line = b"{\"type\":\"ADDED\",\"object\":{";
    let source = serde_json::from_slice::<Value>(line).unwrap_err();
    Err(Error::decode("watch event", line, source))
}

struct Outcome {
    sink: Vec<String>,
    calls: Vec<(Duration, Call)>,
    metrics: MetricsSnapshot,
}

/// Runs a reflector over `script` until the script runs out (or for an hour of virtual time),
/// then stops it.
async fn run(script: Scripted, config: ReflectorConfig) -> Outcome {
    let calls = Arc::clone(&script.calls);
    let exhausted = Arc::clone(&script.exhausted);
    let reflector = Reflector::new(
        script,
        ReflectorConfig {
            seed: Some(1),
            ..config
        },
    );
    let metrics = reflector.metrics();
    let sink = Arc::new(Recorder::default());
    let cancel = CancellationToken::new();
    let start = Instant::now();
    let task = tokio::spawn(reflector.run(Arc::clone(&sink), cancel.clone()));
    tokio::select! {
        _ = tokio::time::sleep(Duration::from_secs(3600)) => {}
        _ = exhausted.notified() => {}
    }
    cancel.cancel();
    task.await.unwrap();
    let calls = std::mem::take(&mut *calls.lock())
        .into_iter()
        .map(|(at, call)| (at - start, call))
        .collect();
    let sink = std::mem::take(&mut *sink.0.lock());
    Outcome {
        sink,
        calls,
        metrics: metrics.snapshot(),
    }
}

/// A compact form of the calls: `list rv=0`, `watch rv=5`, `watch-list`.
fn call_summary(calls: &[(Duration, Call)]) -> Vec<String> {
    calls
        .iter()
        .map(|(_, call)| match call {
            Call::List(p) => format!("list rv={}", p.resource_version.as_deref().unwrap_or("-")),
            Call::Watch(p) if p.send_initial_events => "watch-list".to_owned(),
            Call::Watch(p) => format!("watch rv={}", p.resource_version.as_deref().unwrap_or("-")),
        })
        .collect()
}

fn gap(calls: &[(Duration, Call)], i: usize) -> Duration {
    calls[i].0 - calls[i - 1].0
}

fn in_jitter_range(delay: Duration, base_ms: u64) -> bool {
    let base = Duration::from_millis(base_ms);
    delay >= base && delay < base * 2
}

#[tokio::test(start_paused = true)]
async fn list_then_watch_resuming_from_the_last_event_or_bookmark() {
    let script = Scripted::default()
        .list(list("5", vec![obj("a", "4")]))
        .watch(Ok(vec![
            Ok(WatchEvent::Added(obj("b", "6"))),
            bookmark("7", false),
        ]))
        .watch(Ok(vec![
            Ok(WatchEvent::Modified(obj("a", "8"))),
            Ok(WatchEvent::Deleted(obj("b", "9"))),
        ]));
    let out = run(script, ReflectorConfig::default()).await;
    assert_eq!(
        out.sink,
        [
            "replaced@5 a",
            "added b@6",
            "bookmark@7",
            "modified a@8",
            "deleted b@9"
        ]
    );
    assert_eq!(
        call_summary(&out.calls),
        ["list rv=0", "watch rv=5", "watch rv=7", "watch rv=9"]
    );
    match &out.calls[0].1 {
        Call::List(p) => assert_eq!(p.limit, Some(500)),
        other => panic!("{other:?}"),
    }
    for (_, call) in &out.calls[1..] {
        let Call::Watch(p) = call else { panic!() };
        assert!(p.allow_bookmarks);
        let timeout = p.timeout_seconds.unwrap();
        assert!((300..600).contains(&timeout), "{timeout}");
    }
    // Watches that delivered events are resumed at once.
    assert!(out.calls.iter().all(|(at, _)| at.is_zero()));
    let m = out.metrics;
    assert_eq!((m.lists, m.relists, m.watches, m.backoffs), (1, 0, 3, 0));
    assert_eq!((m.added, m.modified, m.deleted, m.bookmarks), (1, 1, 1, 1));
}

#[tokio::test(start_paused = true)]
async fn a_malformed_line_is_skipped_and_counted() {
    let script = Scripted::default().list(list("1", vec![])).watch(Ok(vec![
        Ok(WatchEvent::Added(obj("a", "2"))),
        malformed(),
        Ok(WatchEvent::Added(obj("b", "3"))),
    ]));
    let out = run(script, ReflectorConfig::default()).await;
    assert_eq!(out.sink, ["replaced@1 ", "added a@2", "added b@3"]);
    assert_eq!(out.metrics.malformed_events, 1);
    assert_eq!(
        call_summary(&out.calls),
        ["list rv=0", "watch rv=1", "watch rv=3"]
    );
}

#[tokio::test(start_paused = true)]
async fn a_short_empty_watch_backs_off_and_an_expired_one_relists_then_lists_consistently() {
    let script = Scripted::default()
        .list(list("5", vec![obj("a", "5")]))
        .watch(Ok(vec![])) // ends at once with nothing: a failure
        .watch(Ok(vec![expired_event()])) // 410 at once: also short
        .list(Err(http_error(410, &[]))) // the last synced version is gone too
        .list(list("9", vec![obj("b", "9")]));
    let out = run(script, ReflectorConfig::default()).await;
    assert_eq!(
        call_summary(&out.calls),
        [
            "list rv=0",
            "watch rv=5",
            "watch rv=5",
            "list rv=5",
            "list rv=-",
            "watch rv=9"
        ]
    );
    assert!(
        in_jitter_range(gap(&out.calls, 2), 800),
        "{:?}",
        gap(&out.calls, 2)
    );
    assert!(
        in_jitter_range(gap(&out.calls, 3), 1_600),
        "{:?}",
        gap(&out.calls, 3)
    );
    assert!(
        gap(&out.calls, 4).is_zero(),
        "the consistent list comes at once"
    );
    assert!(gap(&out.calls, 5).is_zero());
    assert_eq!(out.sink, ["replaced@5 a", "replaced@9 b"]);
    let m = out.metrics;
    assert_eq!((m.lists, m.relists, m.backoffs, m.errors), (2, 1, 2, 1));
}

#[tokio::test(start_paused = true)]
async fn list_failures_back_off_exponentially_and_honour_retry_after() {
    let script = Scripted::default()
        .list(Err(http_error(500, &[])))
        .list(Err(http_error(500, &[])))
        .list(Err(http_error(500, &[])))
        .list(Err(http_error(429, &[("retry-after", "20")])))
        .list(list("3", vec![]));
    let out = run(script, ReflectorConfig::default()).await;
    assert_eq!(
        call_summary(&out.calls),
        ["list rv=0"; 5]
            .into_iter()
            .chain(["watch rv=3"])
            .collect::<Vec<_>>()
    );
    for (i, base_ms) in [(1, 800), (2, 1_600), (3, 3_200)] {
        assert!(
            in_jitter_range(gap(&out.calls, i), base_ms),
            "{i}: {:?}",
            gap(&out.calls, i)
        );
    }
    assert_eq!(gap(&out.calls, 4), Duration::from_secs(20));
    assert_eq!(out.metrics.backoffs, 4);
}

#[tokio::test(start_paused = true)]
async fn the_owner_hears_of_every_failed_list_and_watch_request() {
    let script = Scripted::default()
        .list(Err(http_error(404, &[])))
        .list(list("3", vec![]))
        .watch(Err(http_error(500, &[])));
    let exhausted = Arc::clone(&script.exhausted);
    let heard: Arc<Mutex<Vec<bool>>> = Arc::default();
    let handler = {
        let heard = Arc::clone(&heard);
        WatchErrorHandler::new(move |e| heard.lock().push(e.is_not_found()))
    };
    let config = ReflectorConfig {
        seed: Some(1),
        ..ReflectorConfig::default()
    };
    let reflector = Reflector::new(script, config).on_error(handler);
    let cancel = CancellationToken::new();
    let task = tokio::spawn(reflector.run(Arc::new(Recorder::default()), cancel.clone()));
    exhausted.notified().await;
    cancel.cancel();
    task.await.unwrap();
    // The 404 list, then the 500 watch; the successful list is not reported.
    assert_eq!(*heard.lock(), [true, false]);
}

#[tokio::test(start_paused = true)]
async fn cancelling_ends_the_loop_in_the_middle_of_a_backoff() {
    let script = Scripted::default().list(Err(http_error(500, &[])));
    let reflector = Reflector::new(
        script,
        ReflectorConfig {
            seed: Some(1),
            ..ReflectorConfig::default()
        },
    );
    let cancel = CancellationToken::new();
    let started = Instant::now();
    let task = tokio::spawn(reflector.run(Arc::new(Recorder::default()), cancel.clone()));
    tokio::time::sleep(Duration::from_millis(100)).await;
    cancel.cancel();
    task.await.unwrap();
    assert_eq!(started.elapsed(), Duration::from_millis(100));
}

/// The variant's name; exhaustive, so a new state fails to compile here until it is named
/// (and then drawn: see the test below).
fn variant_name(state: &State) -> &'static str {
    match state {
        State::StreamingList { .. } => "StreamingList",
        State::Listing { .. } => "Listing",
        State::Watching { .. } => "Watching",
        State::BackingOff { .. } => "BackingOff",
    }
}

#[test]
fn the_diagram_in_the_module_contract_draws_exactly_the_states_of_the_enum() {
    let contract = include_str!("mod.rs");
    let start = contract.find("//!  start ──▶").expect("the diagram");
    let end = start + contract[start..].find("//! ```").expect("its end");
    // Every `Name{` in the diagram whose name is capitalised is a state.
    let mut drawn: Vec<&str> = contract[start..end]
        .split('{')
        .filter_map(|before| {
            let name = before.rsplit(|c: char| !c.is_alphanumeric()).next()?;
            name.starts_with(char::is_uppercase).then_some(name)
        })
        .collect();
    drawn.sort_unstable();
    drawn.dedup();
    let backing_off = State::BackingOff {
        delay: Duration::ZERO,
        then: Box::new(State::Listing {
            from: ListFrom::Latest,
        }),
    };
    let mut states: Vec<&str> = [
        ListBy::StreamingList.list(ListFrom::AnyCached),
        State::Listing {
            from: ListFrom::AnyCached,
        },
        State::Watching {
            resource_version: "1".into(),
        },
        backing_off,
    ]
    .iter()
    .map(variant_name)
    .collect();
    states.sort_unstable();
    assert_eq!(drawn, states);
}

mod relist;
mod stall;
mod streaming_list;
