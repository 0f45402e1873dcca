//! The list decoder's unit tests: chunking, grammar errors, and item decoders.

use super::*;
use serde_json::{json, Value};

/// Decodes `body` fed in pieces of `piece` bytes.
fn decode(body: &str, piece: usize) -> Result<List<Value>, Error> {
    let mut decoder = ListDecoder::new();
    for chunk in body.as_bytes().chunks(piece) {
        decoder.feed(chunk)?;
    }
    decoder.finish()
}

#[test]
fn a_list_decodes_the_same_in_any_chunking() {
    let body = r#" {"kind":"JobList","apiVersion":"batch/v1",
        "metadata":{"resourceVersion":"42","continue":"c"},
        "items":[{"metadata":{"name":"a"},"s":"]}\"{["}, {"metadata":{"name":"b"}} ,3]} "#;
    let whole: List<Value> = serde_json::from_str(body).unwrap();
    for piece in 1..=body.len() {
        let list = decode(body, piece).unwrap();
        assert_eq!(list, whole, "pieces of {piece}");
    }
    assert_eq!(whole.items.len(), 3);
    assert_eq!(whole.next_page(), Some("c"));
}

#[test]
fn items_before_metadata_and_null_or_empty_items_work() {
    let list = decode(r#"{"items":[1],"metadata":{"resourceVersion":"7"}}"#, 3).unwrap();
    assert_eq!(list.items, vec![json!(1)]);
    assert_eq!(list.metadata.resource_version.as_deref(), Some("7"));
    for body in [
        r#"{"items":null}"#,
        r#"{"items":[]}"#,
        "{}",
        r#"{"items" : [ ] }"#,
    ] {
        assert!(decode(body, 1).unwrap().items.is_empty(), "{body}");
    }
}

#[test]
fn syntax_errors_say_where() {
    let err = decode(r#"{"items":[1 2]}"#, 4).unwrap_err();
    let Error::ListBody(e) = err else {
        panic!("{err:?}")
    };
    assert!(
        matches!(
            *e,
            ListDecodeError::Syntax {
                offset: 12,
                found: '2',
                ..
            }
        ),
        "{e}"
    );
    for body in [r#"{"items":[1,]}"#, r#"{"a":1,}"#, r#"{"a":1} x"#, "[]", ""] {
        assert!(decode(body, 2).is_err(), "{body}");
    }
}

#[test]
fn a_bad_item_names_its_index_and_offset() {
    let body = r#"{"items":[{"a":1},{"a":tru}]}"#;
    let Err(Error::ListBody(e)) = decode(body, 5) else {
        panic!("expected a list body error")
    };
    match *e {
        ListDecodeError::Item {
            index,
            offset,
            ref snippet,
            ..
        } => {
            assert_eq!((index, offset), (1, 18));
            assert_eq!(snippet, r#"{"a":tru}"#);
        }
        ref other => panic!("{other}"),
    }
}

#[test]
fn a_truncated_body_is_an_error() {
    let err = decode(r#"{"items":[{"a":1}"#, 4).unwrap_err();
    assert!(err.to_string().contains("ended after 17 bytes"), "{err}");
}

#[test]
fn a_status_instead_of_a_list_is_the_error_it_describes() {
    let body = r#"{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"gone","reason":"Expired","code":410}"#;
    let err = decode(body, 7).unwrap_err();
    assert!(err.is_gone(), "{err:?}");
}

#[test]
fn a_duplicate_items_member_is_rejected_like_serde_does() {
    let body = r#"{"items":[],"items":[]}"#;
    assert!(serde_json::from_str::<List<Value>>(body).is_err());
    assert!(decode(body, 3).is_err());
}

#[test]
fn an_escaped_key_is_read_as_serde_reads_it() {
    let body = r#"{"it\u0065ms":[1,2],"m\u0065tadata":{"resourceVersion":"3"}}"#;
    let list = decode(body, 2).unwrap();
    assert_eq!(list.items.len(), 2);
    assert_eq!(list.metadata.resource_version.as_deref(), Some("3"));
}

/// A decoder keeping only `metadata.name`, as a retention judgement keeps only its verdict.
fn names() -> ItemDecoder<String> {
    #[derive(serde::Deserialize)]
    struct Named {
        metadata: NameOnly,
    }
    #[derive(serde::Deserialize)]
    struct NameOnly {
        name: String,
    }
    std::sync::Arc::new(|bytes: &[u8]| {
        serde_json::from_slice::<Named>(bytes).map(|named| named.metadata.name)
    })
}

/// Decodes `body` with [`names`], fed in pieces of `piece` bytes.
fn decode_names(body: &str, piece: usize) -> Result<List<String>, Error> {
    let mut decoder = ListDecoder::with_item_decoder(names());
    for chunk in body.as_bytes().chunks(piece) {
        decoder.feed(chunk)?;
    }
    decoder.finish()
}

#[test]
fn an_item_decoder_gives_the_same_items_in_any_chunking() {
    let body = r#" {"kind":"JobList","apiVersion":"batch/v1",
        "metadata":{"resourceVersion":"42","continue":"c"},
        "items":[{"metadata":{"name":"a"},"s":"]}\"{["}, {"spec":{},"metadata":{"name":"b"}}]} "#;
    for piece in 1..=body.len() {
        let list = decode_names(body, piece).unwrap();
        assert_eq!(list.items, ["a", "b"], "pieces of {piece}");
        assert_eq!(list.metadata.resource_version.as_deref(), Some("42"));
        assert_eq!(list.next_page(), Some("c"));
    }
    assert!(decode_names(r#"{"items":null}"#, 2)
        .unwrap()
        .items
        .is_empty());
    assert!(decode_names(r#"{"items":7}"#, 2).is_err());
}

#[test]
fn an_item_decoders_error_names_the_item() {
    let body = r#"{"items":[{"metadata":{"name":"a"}},{"metadata":{}}]}"#;
    for piece in [1, 7, body.len()] {
        let Err(Error::ListBody(e)) = decode_names(body, piece) else {
            panic!("expected a list body error")
        };
        match *e {
            ListDecodeError::Item {
                index,
                offset,
                ref snippet,
                ref source,
            } => {
                assert_eq!((index, offset), (1, 36));
                assert_eq!(snippet, r#"{"metadata":{}}"#);
                assert!(
                    source.to_string().contains("missing field `name`"),
                    "{source}"
                );
            }
            ref other => panic!("{other}"),
        }
    }
}

#[tokio::test]
async fn read_list_with_streams_through_the_decoder() {
    let chunks = [r#"{"items":[{"metadata":{"na"#, r#"me":"x"}}]}"#]
        .map(|c| Ok::<_, Error>(Bytes::from_static(c.as_bytes())));
    let list = read_list_with(futures_util::stream::iter(chunks), names())
        .await
        .unwrap();
    assert_eq!(list.items, ["x"]);
}
