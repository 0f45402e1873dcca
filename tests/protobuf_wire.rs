//! The protobuf decoder (`kube_gc::client::protobuf`) against a real kube-apiserver v1.28.7's
//! bytes (`fixtures/real-apiserver/exchanges/100`–`117`) and against itself:
//! - every captured protobuf body and watch stream decodes;
//! - the protobuf Job, Pod and ConfigMap lists, transcoded to JSON, agree with the JSON
//!   captures of the same lists on every member the tables cover;
//! - the streaming list decoder gives the same events however the body is split;
//! - encode → transcode gives back generated `ObjectMeta` and Job values;
//! - arbitrary and mutated bytes never panic, and truncation is an error saying where.

mod sim_support;

use bytes::Bytes;
use kube_gc::client::protobuf::{
    encode, schema, transcode, Envelope, ListError, ListEvent, ListStream, Selection, WatchFrames,
};
use proptest::prelude::*;
use serde_json::{json, Map, Value};
use sim_support::{captured_bytes, captured_chunks, exchange};

// ---------------------------------------------------------------- captures

/// Every event of a list body fed in `pieces`.
fn list_events(pieces: &[&[u8]]) -> Result<Vec<ListEvent>, ListError> {
    let mut stream = ListStream::new();
    let mut events = Vec::new();
    for piece in pieces {
        stream.feed(Bytes::copy_from_slice(piece));
        while let Some(event) = stream.next_event()? {
            events.push(event);
        }
    }
    stream.finish()?;
    Ok(events)
}

/// A list body's items as JSON values (their kind from the list's).
fn list_items_json(body: &[u8]) -> Vec<Value> {
    let events = list_events(&[body]).expect("decodes");
    let ListEvent::Type { api_version, kind } = &events[0] else {
        panic!("type first: {:?}", events[0]);
    };
    let item_kind = schema::list_item_kind(kind).expect("a list");
    let message = schema::for_kind(api_version, item_kind).expect("a table");
    events
        .iter()
        .filter_map(|e| match e {
            ListEvent::Item(bytes) => Some(bytes),
            _ => None,
        })
        .map(|item| {
            let text =
                transcode::to_json(message, item, None, &Selection::all()).expect("transcodes");
            serde_json::from_slice(&text).expect("valid JSON")
        })
        .collect()
}

#[test]
fn every_captured_protobuf_exchange_decodes() {
    let mut seen = 0;
    for n in 100..124 {
        let prefix = format!("{n}-");
        let dir = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/fixtures/real-apiserver/exchanges"
        );
        let exists = std::fs::read_dir(dir)
            .expect("dir")
            .filter_map(Result::ok)
            .any(|e| e.file_name().to_string_lossy().starts_with(&prefix));
        if !exists {
            continue;
        }
        let response = &exchange(&prefix)["response"];
        let content_type = response["headers"]["content-type"].as_str().unwrap_or("");
        if response.get("chunks_base64").is_some() {
            assert_eq!(
                content_type, "application/vnd.kubernetes.protobuf;stream=watch",
                "{n}"
            );
            let mut frames = WatchFrames::new();
            for chunk in captured_chunks(&prefix) {
                frames.feed(Bytes::from(chunk));
                while let Some(frame) = frames.next_frame().expect("frames decode") {
                    let json = frame.to_json(&Selection::all()).expect("objects transcode");
                    serde_json::from_slice::<Value>(&json).expect("valid JSON");
                }
            }
            frames.finish().expect("the stream ends between frames");
            seen += 1;
        } else if response.get("body_base64").is_some() {
            assert_eq!(content_type, "application/vnd.kubernetes.protobuf", "{n}");
            let bytes = captured_bytes(&prefix);
            let envelope = Envelope::decode(&bytes).expect("an envelope");
            if envelope.kind.ends_with("List") {
                assert!(!list_items_json(&bytes).is_empty(), "{n}");
            } else {
                let json = transcode::body_to_json(&bytes, &Selection::all()).expect("transcodes");
                serde_json::from_slice::<Value>(&json).expect("valid JSON");
            }
            seen += 1;
        }
    }
    assert_eq!(seen, 17, "protobuf exchanges among 100–123");
}

// ---------------------------------------------------------------- agreement with JSON

fn is_empty(value: &Value) -> bool {
    match value {
        Value::Null => true,
        Value::Object(m) => m.is_empty(),
        Value::Array(a) => a.is_empty(),
        _ => false,
    }
}

/// Checks that `pb` (transcoded) and `json` (the server's JSON) agree: every member of `pb`
/// equals the JSON one, and every JSON member is in `pb` unless it is empty (`null`, `{}`,
/// `[]`: Go writes those for plain values without `omitempty`, protobuf cannot say them).
fn agree(pb: &Value, json: &Value, path: &str, problems: &mut Vec<String>) {
    match (pb, json) {
        (Value::Object(p), Value::Object(j)) => {
            for (key, value) in j {
                let at = if path.is_empty() {
                    key.clone()
                } else {
                    format!("{path}.{key}")
                };
                match p.get(key) {
                    Some(pv) => agree(pv, value, &at, problems),
                    None if is_empty(value) => {}
                    None => problems.push(format!("{at}: missing from protobuf, JSON has {value}")),
                }
            }
            for key in p.keys().filter(|k| !j.contains_key(*k)) {
                problems.push(format!("{path}.{key}: only in protobuf: {}", p[key]));
            }
        }
        (Value::Array(p), Value::Array(j)) if p.len() == j.len() => {
            for (pv, jv) in p.iter().zip(j) {
                agree(pv, jv, path, problems);
            }
        }
        (p, j) if p == j => {}
        (p, j) => problems.push(format!("{path}: protobuf {p} ≠ JSON {j}")),
    }
}

fn assert_lists_agree(protobuf: &str, json: &str, expected_items: usize) {
    let pb_items = list_items_json(&captured_bytes(protobuf));
    let json_items = exchange(json)["response"]["body"]["items"]
        .as_array()
        .expect("items")
        .clone();
    assert_eq!(pb_items.len(), expected_items);
    assert_eq!(json_items.len(), expected_items);
    let mut problems = Vec::new();
    for (pb, json) in pb_items.iter().zip(&json_items) {
        agree(pb, json, "", &mut problems);
    }
    assert!(
        problems.is_empty(),
        "{protobuf} vs {json}:\n{}",
        problems.join("\n")
    );
}

#[test]
fn the_protobuf_job_list_agrees_with_the_json_one() {
    assert_lists_agree("100-", "101-", 3);
    // And on the members the TTL controller reads, spelled out.
    let pb = list_items_json(&captured_bytes("100-"));
    let done = pb
        .iter()
        .find(|j| j["metadata"]["name"] == "pb-done")
        .expect("pb-done");
    assert_eq!(done["spec"]["ttlSecondsAfterFinished"], 100);
    assert_eq!(done["metadata"]["ownerReferences"][0]["kind"], "ConfigMap");
    assert_eq!(
        done["status"]["conditions"][0]["lastTransitionTime"],
        "2026-11-26T19:31:02Z"
    );
    let running = pb
        .iter()
        .find(|j| j["metadata"]["name"] == "pb-running")
        .expect("pb-running");
    assert_eq!(running["spec"]["ttlSecondsAfterFinished"], 0);
    let deleting = pb
        .iter()
        .find(|j| j["metadata"]["name"] == "pb-deleting")
        .expect("pb-deleting");
    assert_eq!(
        deleting["metadata"]["finalizers"],
        json!(["capture.kube-gc.io/hold"])
    );
    assert!(deleting["metadata"]["deletionTimestamp"].is_string());
}

#[test]
fn the_protobuf_pod_and_config_map_lists_agree_with_the_json_ones() {
    assert_lists_agree("113-", "114-", 1);
    assert_lists_agree("116-", "117-", 1);
}

#[test]
fn a_typed_job_reads_the_same_from_both_encodings() {
    let pb: Vec<kube_gc::api::Job> = list_items_json(&captured_bytes("100-"))
        .into_iter()
        .map(|v| serde_json::from_value(v).expect("a Job"))
        .collect();
    let json: kube_gc::api::List<kube_gc::api::Job> =
        serde_json::from_value(exchange("101-")["response"]["body"].clone()).expect("a JobList");
    assert_eq!(pb, json.items);
}

// ---------------------------------------------------------------- streaming

fn config(cases: u32) -> ProptestConfig {
    ProptestConfig {
        cases,
        failure_persistence: None,
        ..ProptestConfig::default()
    }
}

/// `body` cut at the given points (sorted, deduplicated, in range).
fn split<'a>(body: &'a [u8], cuts: &[usize]) -> Vec<&'a [u8]> {
    let mut points: Vec<usize> = cuts.iter().map(|c| c % (body.len() + 1)).collect();
    points.sort_unstable();
    points.dedup();
    let mut pieces = Vec::new();
    let mut from = 0;
    for point in points.into_iter().chain([body.len()]) {
        pieces.push(&body[from..point]);
        from = point;
    }
    pieces
}

proptest! {
    #![proptest_config(config(256))]

    #[test]
    fn list_events_do_not_depend_on_the_split(
        which in 0usize..4,
        cuts in prop::collection::vec(any::<usize>(), 0..12),
    ) {
        let prefix = ["100-", "102-", "105-", "113-"][which];
        let body = captured_bytes(prefix);
        let whole = list_events(&[&body]).expect("decodes");
        prop_assert_eq!(list_events(&split(&body, &cuts)).expect("decodes"), whole);
    }

    #[test]
    fn watch_frames_do_not_depend_on_the_split(cuts in prop::collection::vec(any::<usize>(), 0..12)) {
        let stream = captured_chunks("103-").concat();
        let decode = |pieces: Vec<&[u8]>| {
            let mut frames = WatchFrames::new();
            let mut out = Vec::new();
            for piece in pieces {
                frames.feed(Bytes::copy_from_slice(piece));
                while let Some(frame) = frames.next_frame().expect("decodes") {
                    out.push(frame);
                }
            }
            frames.finish().expect("complete");
            out
        };
        prop_assert_eq!(decode(split(&stream, &cuts)), decode(vec![&stream[..]]));
    }
}

// ---------------------------------------------------------------- round trips

fn word() -> impl Strategy<Value = String> {
    "[a-z0-9][a-z0-9.-]{0,12}"
}

fn text() -> impl Strategy<Value = String> {
    "[a-zA-Z0-9 \"\\\\/é😀\n]{1,16}"
}

/// An RFC 3339 time to the second, in 1970–2100.
fn time() -> impl Strategy<Value = String> {
    (0i64..4_102_444_800).prop_map(|s| {
        chrono::DateTime::from_timestamp(s, 0)
            .expect("in range")
            .to_rfc3339_opts(chrono::SecondsFormat::Secs, true)
    })
}

fn string_map() -> impl Strategy<Value = Option<Value>> {
    prop::option::of(
        prop::collection::btree_map(word(), text(), 1..4).prop_map(|m| {
            Value::Object(m.into_iter().map(|(k, v)| (k, Value::String(v))).collect())
        }),
    )
}

fn owner_reference() -> impl Strategy<Value = Value> {
    (
        word(),
        word(),
        word(),
        word(),
        prop::option::of(any::<bool>()),
        prop::option::of(any::<bool>()),
    )
        .prop_map(|(api_version, kind, name, uid, controller, block)| {
            let mut o = json!({"apiVersion": api_version, "kind": kind, "name": name, "uid": uid});
            if let Some(c) = controller {
                o["controller"] = json!(c);
            }
            if let Some(b) = block {
                o["blockOwnerDeletion"] = json!(b);
            }
            o
        })
}

/// An `ObjectMeta` in the form the transcoder writes: no empty plain values, times to the
/// second, a `creationTimestamp` always (a plain struct: null when absent).
fn object_meta() -> impl Strategy<Value = Value> {
    (
        (
            word(),
            prop::option::of(word()),
            word(),
            1u32..1_000_000,
            1i64..i64::MAX,
        ),
        (
            prop::option::of(time()),
            prop::option::of(time()),
            prop::option::of(0i64..600),
        ),
        (string_map(), string_map()),
        prop::collection::vec(owner_reference(), 0..3),
        prop::collection::vec(word(), 0..3),
    )
        .prop_map(
            |(
                (name, namespace, uid, rv, generation),
                (created, deleted, grace),
                (labels, annotations),
                owners,
                finalizers,
            )| {
                let mut m = Map::new();
                m.insert("name".into(), json!(name));
                if let Some(ns) = namespace {
                    m.insert("namespace".into(), json!(ns));
                }
                m.insert("uid".into(), json!(uid));
                m.insert("resourceVersion".into(), json!(rv.to_string()));
                m.insert("generation".into(), json!(generation));
                m.insert(
                    "creationTimestamp".into(),
                    created.map_or(Value::Null, Value::from),
                );
                if let Some(d) = deleted {
                    m.insert("deletionTimestamp".into(), json!(d));
                }
                if let Some(g) = grace {
                    m.insert("deletionGracePeriodSeconds".into(), json!(g));
                }
                if let Some(l) = labels {
                    m.insert("labels".into(), l);
                }
                if let Some(a) = annotations {
                    m.insert("annotations".into(), a);
                }
                if !owners.is_empty() {
                    m.insert("ownerReferences".into(), Value::Array(owners));
                }
                if !finalizers.is_empty() {
                    m.insert("finalizers".into(), json!(finalizers));
                }
                Value::Object(m)
            },
        )
}

fn condition() -> impl Strategy<Value = Value> {
    (
        word(),
        prop_oneof![Just("True"), Just("False")],
        time(),
        prop::option::of(word()),
    )
        .prop_map(|(kind, status, at, reason)| {
            let mut c = json!({"type": kind, "status": status,
                               "lastProbeTime": at, "lastTransitionTime": at});
            if let Some(r) = reason {
                c["reason"] = json!(r);
            }
            c
        })
}

/// A Job in the transcoder's form: spec pointers set or not (0 included), a minimal template.
fn job() -> impl Strategy<Value = Value> {
    (
        object_meta(),
        (
            prop::option::of(0i32..100_000),
            prop::option::of(-1i32..10),
            prop::option::of(any::<bool>()),
        ),
        prop::collection::vec(condition(), 0..3),
        (prop::option::of(time()), 0i32..5, prop::option::of(0i32..5)),
    )
        .prop_map(
            |(metadata, (ttl, backoff, suspend), conditions, (start, failed, ready))| {
                let mut spec = json!({"template": {"metadata": {"creationTimestamp": null},
                "spec": {"containers": [{"name": "c", "image": "busybox", "resources": {}}]}}});
                for (key, value) in [
                    ("ttlSecondsAfterFinished", ttl.map(Value::from)),
                    ("backoffLimit", backoff.map(Value::from)),
                    ("suspend", suspend.map(Value::from)),
                ] {
                    if let Some(v) = value {
                        spec[key] = v;
                    }
                }
                let mut status = json!({});
                if !conditions.is_empty() {
                    status["conditions"] = Value::Array(conditions);
                }
                if let Some(s) = start {
                    status["startTime"] = json!(s);
                }
                if failed != 0 {
                    status["failed"] = json!(failed);
                }
                if let Some(r) = ready {
                    status["ready"] = json!(r);
                }
                json!({"metadata": metadata, "spec": spec, "status": status})
            },
        )
}

fn transcoded(message: &'static schema::Message, bytes: &[u8]) -> Value {
    let text = transcode::to_json(message, bytes, None, &Selection::all()).expect("transcodes");
    serde_json::from_slice(&text).expect("valid JSON")
}

proptest! {
    #![proptest_config(config(256))]

    #[test]
    fn object_meta_round_trips(meta in object_meta()) {
        let bytes = encode::message_bytes(&schema::OBJECT_META, &meta).expect("encodes");
        prop_assert_eq!(transcoded(&schema::OBJECT_META, &bytes), meta);
    }

    #[test]
    fn jobs_round_trip_through_a_list(jobs in prop::collection::vec(job(), 0..4)) {
        let body = encode::list("batch/v1", "JobList", &json!({"resourceVersion": "1"}), &jobs)
            .expect("encodes");
        let items = list_items_json(&body);
        prop_assert_eq!(items, jobs);
    }
}

// ---------------------------------------------------------------- hostile input

/// Bytes that look like protobuf often enough to get past the first field.
fn protobuf_ish() -> impl Strategy<Value = Vec<u8>> {
    let piece = prop_oneof![
        Just(vec![0x6b, 0x38, 0x73, 0x00]),
        Just(vec![0x0a]),
        Just(vec![0x12]),
        Just(vec![0x08]),
        Just(vec![0x0b]),
        Just(vec![0x80, 0x80]),
        (0u8..40).prop_map(|n| vec![0x12, n]),
        prop::collection::vec(any::<u8>(), 0..6),
    ];
    prop::collection::vec(piece, 0..48).prop_map(|pieces| pieces.concat())
}

/// A captured body with a few bytes overwritten.
fn mutated_capture() -> impl Strategy<Value = Vec<u8>> {
    (
        0usize..3,
        prop::collection::vec((any::<usize>(), any::<u8>()), 1..6),
    )
        .prop_map(|(which, edits)| {
            let mut bytes = captured_bytes(["100-", "112-", "113-"][which]);
            for (at, byte) in edits {
                let len = bytes.len();
                bytes[at % len] = byte;
            }
            bytes
        })
}

fn exercise(bytes: &[u8]) {
    let _ = list_events(&[bytes]);
    let mut frames = WatchFrames::new();
    frames.feed(Bytes::copy_from_slice(bytes));
    while let Ok(Some(frame)) = frames.next_frame() {
        let _ = frame.to_json(&Selection::all());
        let _ = frame.status();
    }
    let _ = frames.finish();
    if let Ok(envelope) = Envelope::decode(bytes) {
        let _ = transcode::object_to_json(&envelope, &Selection::all());
    }
    for message in [
        &schema::JOB,
        &schema::POD,
        &schema::STATUS,
        &schema::CONFIG_MAP,
    ] {
        if let Ok(text) = transcode::to_json(message, bytes, None, &Selection::all()) {
            serde_json::from_slice::<Value>(&text).expect("whatever the input, the output is JSON");
        }
    }
}

proptest! {
    #![proptest_config(config(512))]

    #[test]
    fn arbitrary_bytes_never_panic(bytes in prop::collection::vec(any::<u8>(), 0..256)) {
        exercise(&bytes);
    }

    #[test]
    fn protobuf_looking_bytes_never_panic(bytes in protobuf_ish()) {
        exercise(&bytes);
        let mut with_magic = vec![0x6b, 0x38, 0x73, 0x00];
        with_magic.extend_from_slice(&bytes);
        exercise(&with_magic);
    }

    #[test]
    fn mutated_captures_never_panic(bytes in mutated_capture()) {
        exercise(&bytes);
    }
}

#[test]
fn a_truncated_body_is_an_error_naming_what_was_cut() {
    let bytes = captured_bytes("112-");
    // Cut inside the envelope's raw object (it ends 4 bytes before the body does).
    for cut in 4..bytes.len() - 4 {
        let err = transcode::body_to_json(&bytes[..cut], &Selection::all()).unwrap_err();
        let text = err.to_string();
        assert!(
            text.contains("truncated") || text.contains("carries no object"),
            "cut at {cut}: {text}"
        );
    }
    let err = transcode::body_to_json(&bytes[..100], &Selection::all()).unwrap_err();
    // The object (field 2 of the envelope) starts at byte 24 and is 2321 bytes long.
    assert_eq!(
        err.to_string(),
        "malformed runtime.Unknown envelope: truncated field 2 (length-delimited (2)) at byte 24: \
         it needs 2321 bytes, 76 remain"
    );
    let body = captured_bytes("105-");
    let err = list_events(&[&body[..body.len() / 2]]).unwrap_err();
    assert!(
        err.to_string().starts_with(&format!(
            "protobuf list body ended after {} bytes, inside item",
            body.len() / 2
        )),
        "{err}"
    );
}
