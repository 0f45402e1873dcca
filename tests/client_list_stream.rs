//! The streaming list decoder against `serde_json` on the whole body.
//!
//! [`ListDecoder`] promises the same answer as `serde_json::from_slice::<List<T>>` of the
//! whole body, however the body is cut into chunks. The properties below check that on
//! generated lists (arbitrary JSON items, members in any order, whitespace anywhere JSON
//! allows, strings full of quotes, backslashes, brackets and non-ASCII), on the same lists with
//! one byte damaged, and on the lists the real API server sent (fixtures/real-apiserver).

use bytes::Bytes;
use futures_util::stream;
use kube_gc::api::{Job, List, PartialObjectMetadata};
use kube_gc::client::{read_list, Error, ListDecoder};
use proptest::prelude::*;
use serde::de::DeserializeOwned;
use serde_json::Value;

macro_rules! exchange_body {
    ($name:literal) => {{
        let exchange: Value = serde_json::from_str(include_str!(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/fixtures/real-apiserver/exchanges/",
            $name,
            ".json"
        )))
        .expect("fixture is JSON");
        serde_json::to_vec(&exchange["response"]["body"]).expect("a body re-encodes")
    }};
}

/// Decodes `body` cut at the given positions (any order, any repeats).
fn decode_in_chunks<T: DeserializeOwned>(body: &[u8], cuts: &[usize]) -> Result<List<T>, Error> {
    let mut cuts: Vec<usize> = cuts.iter().map(|c| c % (body.len() + 1)).collect();
    cuts.push(body.len());
    cuts.sort_unstable();
    let mut decoder = ListDecoder::new();
    let mut start = 0;
    for cut in cuts {
        decoder.feed(&body[start..cut])?;
        start = cut;
    }
    decoder.finish()
}

/// Strings that stress the scanner: quotes, escapes, brackets, commas, non-ASCII.
fn tricky_string() -> impl Strategy<Value = String> {
    prop::collection::vec(
        prop::sample::select(vec![
            "a", "\"", "\\", "{", "}", "[", "]", ",", ":", " ", "é", "日", "\n", "\u{1}", "\\u",
        ]),
        0..8,
    )
    .prop_map(|parts| parts.concat())
}

fn json_value() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(Value::from),
        (-1e9f64..1e9).prop_map(Value::from),
        tricky_string().prop_map(Value::String),
    ];
    leaf.prop_recursive(4, 24, 5, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..5).prop_map(Value::Array),
            prop::collection::btree_map(tricky_string(), inner, 0..5)
                .prop_map(|m| Value::Object(m.into_iter().collect())),
        ]
    })
}

/// A list body: the members in a shuffled order, compact or pretty-printed.
fn list_body() -> impl Strategy<Value = Vec<u8>> {
    (
        prop::collection::vec(json_value(), 0..6),
        tricky_string(),
        prop::option::of(tricky_string()),
        json_value(),
        any::<prop::sample::Index>(),
        any::<bool>(),
    )
        .prop_map(|(items, rv, token, extra, order, pretty)| {
            let mut metadata = serde_json::Map::new();
            metadata.insert("resourceVersion".into(), rv.into());
            if let Some(token) = token {
                metadata.insert("continue".into(), token.into());
            }
            let mut members = [
                ("kind", Value::from("JobList")),
                ("apiVersion", Value::from("batch/v1")),
                ("metadata", Value::Object(metadata)),
                ("items", Value::Array(items)),
                ("x-extra", extra),
            ];
            let shift = order.index(members.len());
            members.rotate_left(shift);
            // Written by hand: a serde_json map would sort the members.
            let (open, colon, comma, close) = if pretty {
                ("{\n  ", " : ", " ,\n\t", "\r\n}\n")
            } else {
                ("{", ":", ",", "}")
            };
            let encode = |v: &Value| {
                if pretty {
                    serde_json::to_string_pretty(v)
                } else {
                    serde_json::to_string(v)
                }
                .expect("a value encodes")
            };
            let members: Vec<String> = members
                .iter()
                .map(|(k, v)| format!("{}{colon}{}", encode(&Value::from(*k)), encode(v)))
                .collect();
            format!("{open}{}{close}", members.join(comma)).into_bytes()
        })
}

/// Both decoders agree: the same list, or both an error.
fn assert_same<T>(body: &[u8], cuts: &[usize]) -> Result<(), TestCaseError>
where
    T: DeserializeOwned + PartialEq + std::fmt::Debug,
{
    let whole = serde_json::from_slice::<List<T>>(body);
    let streamed = decode_in_chunks::<T>(body, cuts);
    match (whole, streamed) {
        (Ok(whole), Ok(streamed)) => prop_assert_eq!(whole, streamed),
        (Err(_), Err(_)) => {}
        (whole, streamed) => prop_assert!(
            false,
            "serde_json: {:?}\nstreamed: {:?}\nbody: {}",
            whole.map(|l| l.items.len()),
            streamed.map(|l| l.items.len()),
            String::from_utf8_lossy(body)
        ),
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn any_chunking_of_a_list_decodes_as_serde_decodes_the_whole(
        body in list_body(),
        cuts in prop::collection::vec(any::<usize>(), 0..30),
    ) {
        assert_same::<Value>(&body, &cuts)?;
        let list = decode_in_chunks::<Value>(&body, &cuts);
        prop_assert!(list.is_ok(), "{:?}", list.err());
    }

    #[test]
    fn a_damaged_list_fails_exactly_when_serde_fails(
        body in list_body(),
        at in any::<prop::sample::Index>(),
        byte in prop::sample::select(b"{}[]\",:\\ 0a-".to_vec()),
        truncate in any::<bool>(),
        cuts in prop::collection::vec(any::<usize>(), 0..30),
    ) {
        let mut body = body;
        let at = at.index(body.len());
        if truncate {
            body.truncate(at);
        } else {
            body[at] = byte;
        }
        assert_same::<Value>(&body, &cuts)?;
    }

    #[test]
    fn real_lists_decode_the_same_in_any_chunking(
        which in 0usize..4,
        cuts in prop::collection::vec(any::<usize>(), 0..40),
    ) {
        match which {
            0 => assert_same::<Job>(&exchange_body!("14-job-list-page1"), &cuts)?,
            1 => assert_same::<Value>(&exchange_body!("17-job-list-rv0"), &cuts)?,
            2 => assert_same::<PartialObjectMetadata>(&exchange_body!("18-job-list-meta"), &cuts)?,
            _ => assert_same::<PartialObjectMetadata>(&exchange_body!("50-vcjob-list-meta"), &cuts)?,
        }
    }
}

#[test]
fn a_real_rv0_list_keeps_its_items_and_version() {
    let body = exchange_body!("17-job-list-rv0");
    let list = decode_in_chunks::<Job>(&body, &[1, 100, 4000]).expect("the list decodes");
    let whole: Value = serde_json::from_slice(&body).expect("JSON");
    assert_eq!(
        list.items.len(),
        whole["items"].as_array().map_or(0, Vec::len)
    );
    assert_eq!(
        list.metadata.resource_version.as_deref(),
        whole["metadata"]["resourceVersion"].as_str()
    );
    assert_eq!(list.types.kind, "JobList");
}

#[tokio::test]
async fn a_body_cut_by_the_transport_is_the_transport_error() {
    let body = exchange_body!("17-job-list-rv0");
    let chunks: Vec<Result<Bytes, std::io::Error>> = vec![
        Ok(Bytes::copy_from_slice(&body[..body.len() / 2])),
        Err(std::io::Error::new(
            std::io::ErrorKind::ConnectionReset,
            "reset",
        )),
    ];
    let result = read_list::<Job, _, _>(stream::iter(chunks)).await;
    assert!(
        matches!(result, Err(Error::Connection { .. })),
        "{result:?}"
    );
    // A body that simply stops early is a malformed list, not an empty one.
    let chunks: Vec<Result<Bytes, std::io::Error>> =
        vec![Ok(Bytes::copy_from_slice(&body[..body.len() / 2]))];
    let result = read_list::<Job, _, _>(stream::iter(chunks)).await;
    assert!(matches!(result, Err(Error::ListBody(_))), "{result:?}");
}
