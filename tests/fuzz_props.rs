//! Property tests of every parser kube-gc feeds untrusted bytes to — the proptest half of the
//! fuzzing in `fuzz/` (see docs/reliability.md). For each parser: arbitrary input never
//! panics and errors are typed; valid input round-trips. Case counts are modest so CI stays
//! fast; the cargo-fuzz targets run the same parsers for minutes.

use http::{HeaderMap, HeaderValue};
use kube_gc::api::{List, Status, StatusReason, WatchEvent};
use kube_gc::client::config::kubeconfig;
use kube_gc::client::{ApiError, Error, ListDecoder, WatchDecoder};
use kube_gc::sim::patch::{apply_json_patch, apply_strategic_merge_patch, PatchError};
use kube_gc::sim::selectors::{FieldSelector, LabelSelector, Operator};
use proptest::prelude::*;
use serde_json::{json, Map, Value};

fn config() -> ProptestConfig {
    ProptestConfig {
        cases: 128,
        failure_persistence: None,
        ..ProptestConfig::default()
    }
}

/// Bytes that are mostly JSON-ish, so parsers get past their first byte.
fn jsonish_bytes() -> impl Strategy<Value = Vec<u8>> {
    let piece = prop_oneof![
        Just(b"{".to_vec()),
        Just(b"}".to_vec()),
        Just(b"[".to_vec()),
        Just(b"]".to_vec()),
        Just(b"\"".to_vec()),
        Just(b":".to_vec()),
        Just(b",".to_vec()),
        Just(b"\n".to_vec()),
        Just(b"\\".to_vec()),
        Just(b"\"items\"".to_vec()),
        Just(b"\"type\":\"ADDED\"".to_vec()),
        Just(b"\"object\":".to_vec()),
        Just(b"\"kind\":\"Status\"".to_vec()),
        Just(b"null".to_vec()),
        Just(b"1e999".to_vec()),
        prop::collection::vec(any::<u8>(), 0..4),
    ];
    prop::collection::vec(piece, 0..40).prop_map(|pieces| pieces.concat())
}

/// A small JSON value (objects, arrays, strings with escapes, numbers).
fn json_value() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::from),
        any::<i64>().prop_map(Value::from),
        "[a-z\"\\\\/\u{e9}\u{1F600}\n]{0,6}".prop_map(Value::from),
    ];
    leaf.prop_recursive(3, 24, 4, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
            prop::collection::btree_map("[a-z~/]{1,3}", inner, 0..4)
                .prop_map(|m| Value::Object(m.into_iter().collect())),
        ]
    })
}

/// Cuts `body` at the given chunk lengths (cycled), never empty chunks.
fn chunks<'a>(body: &'a [u8], cuts: &[usize]) -> Vec<&'a [u8]> {
    let mut out = Vec::new();
    let mut rest = body;
    let mut sizes = cuts.iter().cycle();
    while !rest.is_empty() {
        let n = sizes.next().map_or(rest.len(), |&n| n.clamp(1, rest.len()));
        let (chunk, tail) = rest.split_at(n);
        out.push(chunk);
        rest = tail;
    }
    out
}

// ---------------------------------------------------------------- watch stream decoder

/// An event or error as text. A too-long line's snippet is the part received when the limit
/// was crossed, which depends on the chunking, so only the limit is kept.
fn describe_watch_item(item: Result<WatchEvent<Value>, Error>) -> String {
    match item {
        Ok(event) => format!("{event:?}"),
        Err(Error::LineTooLong { limit, .. }) => format!("line longer than {limit}"),
        Err(e) => format!("error: {e}"),
    }
}

/// Every event or error (as text) the watch decoder produces for `body` cut at `cuts`.
fn watch_outcome(body: &[u8], cuts: &[usize], max_line: usize) -> Vec<String> {
    let mut decoder = WatchDecoder::<Value>::with_max_line_bytes(max_line);
    let mut out = Vec::new();
    for chunk in chunks(body, cuts) {
        decoder.push(chunk);
        out.extend(decoder.drain().map(describe_watch_item));
    }
    out.extend(decoder.finish().map(|e| format!("end: {e}")));
    out
}

proptest! {
    #![proptest_config(config())]

    #[test]
    fn watch_decoding_of_garbage_is_independent_of_chunking(
        body in jsonish_bytes(),
        cuts in prop::collection::vec(1usize..9, 1..5),
        max_line in prop_oneof![Just(1usize << 20), 1usize..32],
    ) {
        prop_assert_eq!(watch_outcome(&body, &[], max_line), watch_outcome(&body, &cuts, max_line));
    }

    #[test]
    fn valid_watch_events_round_trip_through_any_chunking(
        objects in prop::collection::vec(json_value(), 0..6),
        cuts in prop::collection::vec(1usize..17, 1..5),
    ) {
        let events: Vec<WatchEvent<Value>> = objects
            .into_iter()
            .enumerate()
            .map(|(i, object)| match i % 3 {
                0 => WatchEvent::Added(object),
                1 => WatchEvent::Modified(object),
                _ => WatchEvent::Deleted(object),
            })
            .collect();
        let mut body = Vec::new();
        for event in &events {
            body.extend(serde_json::to_vec(event).unwrap());
            body.push(b'\n');
        }
        let mut decoder = WatchDecoder::<Value>::new();
        let mut decoded = Vec::new();
        for chunk in chunks(&body, &cuts) {
            decoder.push(chunk);
            for event in decoder.drain() {
                decoded.push(event.map_err(|e| e.to_string()));
            }
        }
        prop_assert!(decoder.finish().is_none());
        let expected: Vec<Result<WatchEvent<Value>, String>> = events.into_iter().map(Ok).collect();
        prop_assert_eq!(decoded, expected);
    }
}

// ---------------------------------------------------------------- streaming list decoder

fn list_outcome(body: &[u8], cuts: &[usize]) -> Result<List<Value>, String> {
    let mut decoder = ListDecoder::<Value>::new();
    for chunk in chunks(body, cuts) {
        decoder.feed(chunk).map_err(|e| e.to_string())?;
    }
    decoder.finish().map_err(|e| e.to_string())
}

proptest! {
    #![proptest_config(config())]

    #[test]
    fn list_decoding_of_garbage_agrees_with_serde_in_any_chunking(
        body in jsonish_bytes(),
        cuts in prop::collection::vec(1usize..9, 1..5),
    ) {
        let streamed = list_outcome(&body, &cuts);
        let whole = list_outcome(&body, &[]);
        prop_assert_eq!(streamed.is_ok(), whole.is_ok());
        if let (Ok(a), Ok(b)) = (&streamed, &whole) {
            prop_assert_eq!(&a.items, &b.items);
        }
        if let Ok(expected) = serde_json::from_slice::<List<Value>>(&body) {
            if expected.types.kind != "Status" {
                prop_assert_eq!(whole.map(|l| l.items), Ok(expected.items));
            }
        }
    }

    #[test]
    fn list_bodies_wrapped_in_garbage_are_typed_errors(
        prefix in jsonish_bytes(),
        items in prop::collection::vec(json_value(), 0..4),
    ) {
        let list = json!({"kind": "ConfigMapList", "apiVersion": "v1", "metadata": {}, "items": items});
        let mut body = prefix;
        body.extend(serde_json::to_vec(&list).unwrap());
        // Any failure is one of the client's typed errors, never a panic.
        if let Err(e) = list_outcome(&body, &[3]) {
            prop_assert!(!e.is_empty());
        }
    }
}

// ---------------------------------------------------------------- kubeconfig

fn name() -> impl Strategy<Value = String> {
    "[a-z][a-z0-9-]{0,8}"
}

proptest! {
    #![proptest_config(config())]

    #[test]
    fn kubeconfig_parsing_of_arbitrary_bytes_never_panics(bytes in prop::collection::vec(any::<u8>(), 0..256)) {
        if let Err(e) = kubeconfig::parse(&bytes) {
            prop_assert!(!e.to_string().is_empty());
        }
    }

    #[test]
    fn kubeconfig_parsing_of_yamlish_text_never_panics(
        lines in prop::collection::vec(
            prop_oneof![
                Just("clusters:".to_string()),
                Just("- name: a".to_string()),
                Just("  cluster:".to_string()),
                Just("    server: https://x".to_string()),
                Just("    certificate-authority-data: !!binary AAAA".to_string()),
                Just("users: ~".to_string()),
                Just("contexts: [{name: c, context: {cluster: a}}]".to_string()),
                Just("current-context: 7".to_string()),
                Just("&a [*a]".to_string()),
                Just("\t- ]".to_string()),
                "[ -~]{0,12}",
            ],
            0..12,
        ),
    ) {
        let text = lines.join("\n");
        let first = kubeconfig::parse(text.as_bytes()).map(|c| format!("{c:?}")).map_err(|e| e.to_string());
        let again = kubeconfig::parse(text.as_bytes()).map(|c| format!("{c:?}")).map_err(|e| e.to_string());
        prop_assert_eq!(first, again);
    }

    #[test]
    fn valid_kubeconfigs_round_trip(
        clusters in prop::collection::btree_map(name(), ("[a-z]{1,8}", 1u16..65535), 1..4),
        current in name(),
        namespace in proptest::option::of(name()),
    ) {
        let mut text = format!("apiVersion: v1\nkind: Config\ncurrent-context: {current}\nclusters:\n");
        for (cluster, (host, port)) in &clusters {
            text.push_str(&format!("- name: {cluster}\n  cluster:\n    server: https://{host}:{port}\n"));
        }
        text.push_str("contexts:\n");
        for cluster in clusters.keys() {
            text.push_str(&format!("- name: {cluster}\n  context:\n    cluster: {cluster}\n"));
            if let Some(ns) = &namespace {
                text.push_str(&format!("    namespace: {ns}\n"));
            }
        }
        let parsed = kubeconfig::parse(text.as_bytes()).unwrap();
        prop_assert_eq!(parsed.current_context.as_deref(), Some(current.as_str()));
        let parsed_clusters = parsed.clusters.unwrap_or_default();
        prop_assert_eq!(parsed_clusters.len(), clusters.len());
        for (named, (cluster, (host, port))) in parsed_clusters.iter().zip(&clusters) {
            prop_assert_eq!(&named.name, cluster);
            let expected = format!("https://{host}:{port}");
            let server = named.cluster.as_ref().and_then(|c| c.server.as_deref());
            prop_assert_eq!(server, Some(expected.as_str()));
        }
        for named in parsed.contexts.unwrap_or_default() {
            let ns = named.context.and_then(|c| c.namespace);
            prop_assert_eq!(ns.as_deref(), namespace.as_deref());
        }
    }
}

// ---------------------------------------------------------------- Status / error decoding

fn reason() -> impl Strategy<Value = String> {
    prop_oneof![
        Just("NotFound".to_string()),
        Just("Conflict".to_string()),
        Just("Expired".to_string()),
        Just("TooManyRequests".to_string()),
        Just("Invalid".to_string()),
        Just(String::new()),
        "[A-Za-z]{1,12}",
    ]
}

proptest! {
    #![proptest_config(config())]

    #[test]
    fn error_responses_of_arbitrary_bytes_keep_their_code(
        code in any::<u16>(),
        body in jsonish_bytes(),
        retry_after in proptest::option::of(prop::collection::vec(any::<u8>(), 0..8)),
    ) {
        let mut headers = HeaderMap::new();
        if let Some(value) = retry_after.and_then(|v| HeaderValue::from_bytes(&v).ok()) {
            headers.insert(http::header::RETRY_AFTER, value);
        }
        let error = ApiError::from_response(code, &headers, &body);
        prop_assert_eq!(error.code, code);
        let as_error = Error::from(error);
        prop_assert_eq!(as_error.code(), Some(code));
        prop_assert!(!as_error.to_string().is_empty());
    }

    #[test]
    fn a_status_body_round_trips_into_the_error(
        code in 400u16..600,
        message in "[ -~]{0,40}",
        reason in reason(),
        retry in proptest::option::of(0u32..3600),
    ) {
        let mut body = json!({"kind": "Status", "apiVersion": "v1", "metadata": {},
            "status": "Failure", "message": message, "reason": reason, "code": code});
        if let Some(seconds) = retry {
            body["details"] = json!({"retryAfterSeconds": seconds});
        }
        let bytes = serde_json::to_vec(&body).unwrap();
        let status: Status = serde_json::from_slice(&bytes).unwrap();
        let reencoded = serde_json::to_value(&status).unwrap();
        prop_assert_eq!(reencoded["reason"].as_str().unwrap_or(""), reason.as_str());
        let error = ApiError::from_response(code, &HeaderMap::new(), &bytes);
        prop_assert_eq!(&error.message, &message);
        prop_assert_eq!(error.reason().map(StatusReason::as_str), Some(reason.as_str()));
        prop_assert_eq!(error.retry_after.map(|d| d.as_secs()), retry.map(u64::from));
        let from_watch = ApiError::from_status(status);
        prop_assert_eq!(from_watch.code, code);
    }

    #[test]
    fn any_reason_string_survives_parse(text in ".{0,20}") {
        let reason = StatusReason::parse(&text);
        prop_assert_eq!(reason.as_str(), text.as_str());
    }
}

// ---------------------------------------------------------------- selectors

fn label_key() -> impl Strategy<Value = String> {
    prop_oneof!["[a-z][a-z0-9]{0,6}", "[a-z]{1,4}\\.io/[a-z][a-z0-9]{0,5}"]
}

fn label_value() -> impl Strategy<Value = String> {
    "[a-z0-9]{1,6}"
}

proptest! {
    #![proptest_config(config())]

    #[test]
    fn selectors_of_arbitrary_text_never_panic(text in "[ -~]{0,40}", labels in prop::collection::btree_map(label_key(), label_value(), 0..4)) {
        let labels: Map<String, Value> = labels.into_iter().map(|(k, v)| (k, Value::from(v))).collect();
        if let Ok(selector) = LabelSelector::parse(&text) {
            let _ = selector.matches(Some(&labels));
        }
        let object = json!({"metadata": {"name": "n", "namespace": "ns", "labels": labels}});
        if let Ok(selector) = FieldSelector::parse(&text) {
            let _ = selector.matches(&object);
        }
    }

    #[test]
    fn valid_label_selectors_parse_and_match_as_written(
        terms in prop::collection::btree_map(label_key(), (0u8..5, label_value(), label_value()), 1..5),
        labels in prop::collection::btree_map(label_key(), label_value(), 0..5),
    ) {
        let mut text = Vec::new();
        let mut expected = true;
        for (key, (op, a, b)) in &terms {
            let value = labels.get(key);
            let (term, holds) = match op {
                0 => (format!("{key}={a}"), value == Some(a)),
                1 => (format!("{key}!={a}"), value != Some(a)),
                2 => (format!("{key} in ({a},{b})"), value.is_some_and(|v| v == a || v == b)),
                3 => (key.clone(), value.is_some()),
                _ => (format!("!{key}"), value.is_none()),
            };
            text.push(term);
            expected &= holds;
        }
        let text = text.join(",");
        let selector = LabelSelector::parse(&text).unwrap();
        prop_assert_eq!(selector.requirements().len(), terms.len());
        prop_assert!(selector.requirements().iter().all(|r| r.operator != Operator::GreaterThan));
        let labels: Map<String, Value> = labels.into_iter().map(|(k, v)| (k, Value::from(v))).collect();
        prop_assert_eq!(selector.matches(Some(&labels)), expected, "{}", text);
    }

    #[test]
    fn valid_field_selectors_parse_and_match_as_written(name in "[a-z0-9]{1,6}", other in "[a-z0-9]{1,6}", negated in any::<bool>()) {
        let op = if negated { "!=" } else { "=" };
        let selector = FieldSelector::parse(&format!("metadata.name{op}{name}")).unwrap();
        let object = json!({"metadata": {"name": other, "namespace": "default"}});
        prop_assert_eq!(selector.matches(&object), (other == name) != negated);
    }
}

// ---------------------------------------------------------------- JSON patch

fn pointer_to(keys: &[String]) -> String {
    keys.iter()
        .map(|k| format!("/{}", k.replace('~', "~0").replace('/', "~1")))
        .collect()
}

proptest! {
    #![proptest_config(config())]

    #[test]
    fn a_failing_patch_leaves_the_target_unchanged(target in json_value(), patch in json_value()) {
        let mut patched = target.clone();
        if let Err(e) = apply_json_patch(&mut patched, &patch) {
            prop_assert_eq!(&patched, &target);
            let (code, _) = e.status();
            prop_assert!(code.is_client_error());
        }
        let mut strategic = target.clone();
        if let Err(e) = apply_strategic_merge_patch(&mut strategic, &patch) {
            prop_assert!(e.status().0.is_client_error());
        }
    }

    #[test]
    fn arbitrary_operations_are_applied_or_refused_atomically(
        target in json_value(),
        ops in prop::collection::vec(
            (prop_oneof![Just("add"), Just("remove"), Just("replace"), Just("move"), Just("copy"), Just("test"), Just("frob")],
             "(/[a-z~01-]{0,3}){0,3}", "(/[a-z~01-]{0,3}){0,3}", json_value()),
            0..5,
        ),
    ) {
        let patch = Value::Array(ops.into_iter().map(|(op, path, from, value)|
            json!({"op": op, "path": path, "from": from, "value": value})).collect());
        let mut patched = target.clone();
        match apply_json_patch(&mut patched, &patch) {
            Ok(()) => {}
            Err(PatchError::TestFailed { .. } | PatchError::PathNotFound { .. } | PatchError::Invalid(_) | PatchError::Malformed(_)) => {
                prop_assert_eq!(&patched, &target);
            }
        }
    }

    #[test]
    fn add_then_test_then_remove_round_trips(
        fields in prop::collection::btree_map("[a-z~/]{1,4}", json_value(), 0..4),
        key in "[a-z~/]{1,4}",
        value in json_value(),
    ) {
        let original = Value::Object(fields.into_iter().filter(|(k, _)| *k != key).collect());
        let path = pointer_to(std::slice::from_ref(&key));
        let mut doc = original.clone();
        apply_json_patch(&mut doc, &json!([{"op": "add", "path": path, "value": value},
            {"op": "test", "path": path, "value": value}])).unwrap();
        prop_assert_eq!(&doc[&key], &value);
        apply_json_patch(&mut doc, &json!([{"op": "remove", "path": path}])).unwrap();
        prop_assert_eq!(doc, original);
    }
}
