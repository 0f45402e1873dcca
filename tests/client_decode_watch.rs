//! Replays the watch bodies captured from a real kube-apiserver v1.28.7
//! (fixtures/real-apiserver/exchanges, `response.chunks`, split exactly as they arrived) through
//! `kube_gc::client::watch_stream`, and checks the events against the captured
//! `response.events`.

use bytes::Bytes;
use futures_util::{stream, StreamExt};
use kube_gc::api::{EventType, Job, PartialObjectMetadata, StatusReason, WatchEvent};
use kube_gc::client::{Error, WatchDecoder, WatchStream};
use proptest::prelude::*;
use serde_json::Value;

macro_rules! exchange {
    ($name:literal) => {
        serde_json::from_str::<Value>(include_str!(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/fixtures/real-apiserver/exchanges/",
            $name,
            ".json"
        )))
        .expect("fixture is JSON")
    };
}

struct Capture {
    name: &'static str,
    chunks: Vec<Vec<u8>>,
    events: Vec<Value>,
}

impl Capture {
    fn new(name: &'static str, exchange: Value) -> Self {
        let response = &exchange["response"];
        let chunks = response["chunks"].as_array().expect("chunks");
        let events = response["events"].as_array().expect("events");
        Capture {
            name,
            chunks: chunks
                .iter()
                .map(|c| c.as_str().expect("text").as_bytes().to_vec())
                .collect(),
            events: events.iter().map(as_decoded).collect(),
        }
    }

    fn body(&self) -> Vec<u8> {
        self.chunks.concat()
    }
}

/// A captured event as `WatchEvent<Value>` re-encodes it: identical, except that a BOOKMARK
/// keeps only its type and `metadata.resourceVersion` (the rest is an empty skeleton).
fn as_decoded(event: &Value) -> Value {
    if event["type"] != "BOOKMARK" {
        return event.clone();
    }
    let object = &event["object"];
    serde_json::json!({
        "type": "BOOKMARK",
        "object": {
            "apiVersion": object["apiVersion"],
            "kind": object["kind"],
            "metadata": {"resourceVersion": object["metadata"]["resourceVersion"]},
        },
    })
}

/// Compares event by event, so a failure names the first differing event instead of printing
/// whole bodies.
fn assert_same_events(decoded: &[Value], expected: &[Value], what: &str) {
    assert_eq!(decoded.len(), expected.len(), "{what}: number of events");
    for (i, (d, e)) in decoded.iter().zip(expected).enumerate() {
        assert!(
            d == e,
            "{what}: event {i} differs: {} vs {}",
            d["type"],
            e["type"]
        );
    }
}

fn captures() -> Vec<Capture> {
    vec![
        Capture::new("20", exchange!("20-job-watch")),
        Capture::new("21", exchange!("21-job-watch-meta")),
        Capture::new("22", exchange!("22-job-watch-too-old")),
        Capture::new("23", exchange!("23-job-watch-bookmark")),
        Capture::new("52", exchange!("52-job-watch-expired")),
        Capture::new("55", exchange!("55-job-watch-too-old-after-restart")),
    ]
}

/// Feeds `chunks` to a fresh decoder; every item, then the end-of-stream check.
fn decode<T: serde::de::DeserializeOwned>(
    chunks: impl IntoIterator<Item = impl AsRef<[u8]>>,
) -> Vec<Result<WatchEvent<T>, Error>> {
    let mut decoder = WatchDecoder::new();
    let mut items = Vec::new();
    for chunk in chunks {
        decoder.push(chunk.as_ref());
        items.extend(decoder.drain());
    }
    items.extend(decoder.finish().map(Err));
    items
}

fn as_values(items: Vec<Result<WatchEvent<Value>, Error>>) -> Vec<Value> {
    items
        .into_iter()
        .map(|item| serde_json::to_value(item.expect("no error")).expect("encodes"))
        .collect()
}

#[test]
fn captured_chunks_decode_to_the_captured_events() {
    for capture in captures() {
        let decoded = as_values(decode(&capture.chunks));
        assert_same_events(&decoded, &capture.events, capture.name);
    }
}

#[test]
fn captured_chunks_decode_the_same_through_an_item_decoder() {
    // The real server writes every line as `{"type":…,"object":…}` with nothing after the
    // object, so each of these objects reaches the item decoder without the line being
    // parsed first (WatchEvent::from_slice_with): the events must be the serde path's.
    let decoder: kube_gc::client::ItemDecoder<Value> =
        std::sync::Arc::new(|object: &[u8]| serde_json::from_slice(object));
    for capture in captures() {
        let mut watch = WatchDecoder::with_item_decoder(std::sync::Arc::clone(&decoder));
        let mut items = Vec::new();
        for chunk in &capture.chunks {
            watch.push(chunk);
            items.extend(watch.drain());
        }
        items.extend(watch.finish().map(Err));
        assert_same_events(&as_values(items), &capture.events, capture.name);
    }
}

/// Tags each object with the method it went to.
struct Tagging;

impl kube_gc::client::DecodeItem<(&'static str, Value)> for Tagging {
    fn decode(&self, object: &[u8]) -> Result<(&'static str, Value), serde_json::Error> {
        Ok(("current", serde_json::from_slice(object)?))
    }
    fn decode_deleted(&self, object: &[u8]) -> Result<(&'static str, Value), serde_json::Error> {
        Ok(("final state", serde_json::from_slice(object)?))
    }
}

#[test]
fn captured_deleted_objects_go_to_decode_deleted_and_no_others_do() {
    let mut deleted = 0;
    for capture in captures() {
        let mut watch = WatchDecoder::with_item_decoder(std::sync::Arc::new(Tagging));
        let mut items = Vec::new();
        for chunk in &capture.chunks {
            watch.push(chunk);
            items.extend(watch.drain());
        }
        for (item, expected) in items.into_iter().zip(&capture.events) {
            let event = item.expect("decodes");
            let tagged = match &event {
                WatchEvent::Added(o) | WatchEvent::Modified(o) | WatchEvent::Deleted(o) => o,
                WatchEvent::Bookmark(_) | WatchEvent::Error(_) => continue,
            };
            let want = if expected["type"] == "DELETED" {
                deleted += 1;
                "final state"
            } else {
                "current"
            };
            assert_eq!(tagged.0, want, "exchange {}", capture.name);
            assert_eq!(tagged.1, expected["object"], "exchange {}", capture.name);
        }
    }
    assert!(deleted > 0, "the captures hold DELETED events");
}

#[test]
fn captured_chunks_split_lines_across_chunks() {
    // The fixtures really exercise reassembly: some chunk ends inside a line, and some chunk
    // holds more than one line.
    let all = captures();
    let mid_line = all
        .iter()
        .flat_map(|c| &c.chunks)
        .any(|chunk| !chunk.ends_with(b"\n"));
    let multi_line = all
        .iter()
        .flat_map(|c| &c.chunks)
        .any(|chunk| chunk.iter().filter(|&&b| b == b'\n').count() > 1);
    assert!(mid_line && multi_line);
}

#[test]
fn typed_and_metadata_only_decoding_of_the_captures() {
    let all = captures();
    for capture in all.iter().filter(|c| c.name != "21") {
        let typed = decode::<Job>(&capture.chunks);
        assert_eq!(
            typed.len(),
            capture.events.len(),
            "exchange {}",
            capture.name
        );
        for (item, expected) in typed.iter().zip(&capture.events) {
            let event = item.as_ref().expect("decodes");
            let wire_type = serde_json::to_value(event.event_type()).expect("encodes");
            assert_eq!(wire_type, expected["type"]);
            if let Some(job) = event.object() {
                assert_eq!(
                    job.metadata.resource_version.as_deref(),
                    expected["object"]["metadata"]["resourceVersion"].as_str()
                );
            }
        }
    }
    let meta = all.iter().find(|c| c.name == "21").expect("21");
    for item in decode::<PartialObjectMetadata>(&meta.chunks) {
        let event = item.expect("decodes");
        assert_eq!(
            event.object().map(|o| o.types.kind.as_str()),
            Some("PartialObjectMetadata")
        );
    }
}

#[test]
fn the_410_watch_yields_one_error_event_and_ends() {
    let capture = Capture::new("55", exchange!("55-job-watch-too-old-after-restart"));
    let items = decode::<Job>(&capture.chunks);
    assert_eq!(items.len(), 1);
    let Ok(WatchEvent::Error(status)) = &items[0] else {
        panic!("expected ERROR: {items:?}")
    };
    assert_eq!(status.reason, StatusReason::Expired);
    assert!(Error::from((**status).clone()).is_gone());
}

#[test]
fn a_malformed_line_is_an_error_item_and_decoding_continues() {
    let body = Capture::new("20", exchange!("20-job-watch")).body();
    let lines: Vec<&[u8]> = body.split_inclusive(|&b| b == b'\n').collect();
    let long_garbage = format!("{{\"type\":\"ADDED\",\"object\":{}\n", "x".repeat(10_000));
    let mut with_garbage: Vec<u8> = Vec::new();
    with_garbage.extend_from_slice(lines[0]);
    with_garbage.extend_from_slice(b"{not json at all\n");
    with_garbage.extend_from_slice(lines[1]);
    with_garbage.extend_from_slice(long_garbage.as_bytes());
    with_garbage.extend_from_slice(b"{\"type\":\"EXPLODED\",\"object\":{}}\n");
    for line in &lines[2..] {
        with_garbage.extend_from_slice(line);
    }

    // Split into small chunks so errors also straddle chunk boundaries.
    let items = decode::<Job>(with_garbage.chunks(100));
    let shape: Vec<String> = items
        .iter()
        .map(|item| match item {
            Ok(event) => format!("{:?}", event.event_type()),
            Err(Error::Decode { what, snippet, .. }) => {
                assert_eq!(*what, "watch event");
                assert!(
                    snippet.len() < 300,
                    "snippet kept short: {} bytes",
                    snippet.len()
                );
                "Decode".to_owned()
            }
            Err(other) => format!("unexpected {other}"),
        })
        .collect();
    assert_eq!(
        shape,
        ["Added", "Decode", "Modified", "Decode", "Decode", "Deleted", "Bookmark"]
    );
    // The long line's error names its length.
    let Err(long) = &items[3] else { unreachable!() };
    assert!(long.to_string().contains("10025 bytes"), "{long}");
}

#[test]
fn a_stream_cut_mid_line_ends_with_a_truncation_error() {
    let body = Capture::new("20", exchange!("20-job-watch")).body();
    let cut = &body[..body.len() - 40];
    let items = decode::<Job>([cut]);
    let (last, events) = items.split_last().expect("items");
    assert_eq!(events.len(), 3);
    assert!(events.iter().all(Result::is_ok));
    match last {
        Err(err @ Error::TruncatedLine { len, .. }) => {
            assert!(*len > 0);
            assert!(err.is_retryable());
        }
        other => panic!("expected TruncatedLine, got {other:?}"),
    }
    // Only whitespace left over is not a truncation.
    assert!(decode::<Job>([b"\n  \r\n".as_slice()]).is_empty());
}

fn chunk_stream(
    chunks: Vec<Result<Vec<u8>, std::io::Error>>,
) -> impl futures_util::Stream<Item = Result<Bytes, std::io::Error>> {
    stream::iter(chunks.into_iter().map(|c| c.map(Bytes::from)))
}

#[tokio::test]
async fn stream_adapter_yields_the_captured_events() {
    for capture in captures() {
        let body = chunk_stream(capture.chunks.iter().cloned().map(Ok).collect());
        let items: Vec<_> = WatchStream::<Value>::new(body).collect().await;
        assert_same_events(&as_values(items), &capture.events, capture.name);
    }
}

#[tokio::test]
async fn stream_adapter_reports_a_transport_error_once_and_ends() {
    let body = Capture::new("20", exchange!("20-job-watch")).body();
    let first_line_end = body.iter().position(|&b| b == b'\n').expect("a line") + 1;
    // The first line, then part of the second, then the connection breaks.
    let chunks = vec![
        Ok(body[..first_line_end].to_vec()),
        Ok(body[first_line_end..first_line_end + 100].to_vec()),
        Err(std::io::Error::new(
            std::io::ErrorKind::ConnectionReset,
            "reset by peer",
        )),
        Ok(body[first_line_end + 100..].to_vec()),
    ];
    let items: Vec<_> = WatchStream::<Job>::new(chunk_stream(chunks))
        .collect()
        .await;
    let types: Vec<_> = items
        .iter()
        .map(|i| i.as_ref().ok().map(WatchEvent::event_type))
        .collect();
    // The partial second line is not reported as a truncation on top of the transport error,
    // and nothing after the error is read.
    assert_eq!(types, [Some(EventType::Added), None]);
    assert!(matches!(items[1], Err(Error::Connection { .. })));
}

#[tokio::test]
async fn stream_adapter_reports_truncation_at_end_of_body() {
    let chunks = vec![Ok(
        b"{\"type\":\"ADDED\",\"object\":{}}\n{\"type\":\"MOD".to_vec()
    )];
    let items: Vec<_> = WatchStream::<Value>::new(chunk_stream(chunks))
        .collect()
        .await;
    assert_eq!(items.len(), 2);
    assert!(matches!(
        items[1],
        Err(Error::TruncatedLine { len: 12, .. })
    ));
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    /// However the body is split, the same events come out.
    #[test]
    fn any_split_of_a_captured_body_gives_the_same_events(
        which in 0usize..4,
        cuts in prop::collection::vec(any::<prop::sample::Index>(), 0..40),
    ) {
        let capture = match which {
            0 => Capture::new("20", exchange!("20-job-watch")),
            1 => Capture::new("21", exchange!("21-job-watch-meta")),
            2 => Capture::new("22", exchange!("22-job-watch-too-old")),
            _ => Capture::new("55", exchange!("55-job-watch-too-old-after-restart")),
        };
        let body = capture.body();
        let mut points: Vec<usize> = cuts.iter().map(|i| i.index(body.len() + 1)).collect();
        points.sort_unstable();
        let mut chunks = Vec::new();
        let mut from = 0;
        for point in points.into_iter().chain([body.len()]) {
            chunks.push(&body[from..point]);
            from = point;
        }
        let decoded = as_values(decode(chunks));
        prop_assert!(decoded == capture.events, "exchange {} split differently", capture.name);
    }
}
