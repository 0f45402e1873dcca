use serde_json::Value;

use super::*;
use crate::protobuf::envelope::encode as envelope;
use crate::protobuf::selection::Selection;
use crate::protobuf::transcode::to_json;
use crate::protobuf::wire::{put_len_field, put_tag, put_varint, put_varint_field};
use crate::protobuf::{encode, schema};
use kube_gc_api::StatusReason;
use kube_gc_fixtures::response_bytes;

/// Every event of `body` fed in the given pieces, or the first error.
fn events(pieces: &[&[u8]]) -> Result<Vec<ListEvent>, ListError> {
    let mut stream = ListStream::new();
    let mut out = Vec::new();
    for piece in pieces {
        stream.feed(Bytes::copy_from_slice(piece));
        while let Some(event) = stream.next_event()? {
            out.push(event);
        }
    }
    stream.finish()?;
    Ok(out)
}

fn items(events: &[ListEvent]) -> Vec<&Bytes> {
    events
        .iter()
        .filter_map(|e| match e {
            ListEvent::Item(bytes) => Some(bytes),
            _ => None,
        })
        .collect()
}

#[test]
fn a_captured_job_list_yields_type_metadata_and_each_item() {
    let body = response_bytes("100-");
    let events = events(&[&body]).expect("decodes");
    assert_eq!(
        events[0],
        ListEvent::Type {
            api_version: "batch/v1".into(),
            kind: "JobList".into()
        }
    );
    let ListEvent::Metadata(meta) = &events[1] else {
        panic!("metadata second: {:?}", events[1]);
    };
    assert!(meta.resource_version.is_some());
    assert_eq!(meta.continue_token, None);
    assert_eq!(items(&events).len(), 3);
}

#[test]
fn every_split_point_gives_the_same_events() {
    let body = response_bytes("100-");
    let whole = events(&[&body]).expect("decodes");
    for cut in 0..=body.len() {
        let (a, b) = body.split_at(cut);
        assert_eq!(events(&[a, b]).expect("decodes"), whole, "cut at {cut}");
    }
    let bytes: Vec<&[u8]> = body.chunks(1).collect();
    assert_eq!(events(&bytes).expect("decodes"), whole);
}

#[test]
fn every_truncation_is_an_error_that_says_where() {
    let body = response_bytes("102-");
    // The last four bytes are the envelope's empty contentEncoding and contentType: optional
    // fields after the list, so a body cut between them is complete.
    assert!(body.ends_with(&[0x1a, 0, 0x22, 0]));
    for cut in 0..body.len() - 4 {
        let err = events(&[&body[..cut]]).unwrap_err();
        let text = err.to_string();
        assert!(
            matches!(err, ListError::Truncated { offset, .. } if offset == cut as u64),
            "cut at {cut}: {text}"
        );
    }
    let err = events(&[&body[..body.len() - 10]]).unwrap_err();
    assert!(err.to_string().contains("inside item 1 ("), "{err}");
}

#[test]
fn a_paged_list_has_continue_and_remaining_count() {
    let events = events(&[&response_bytes("102-")]).expect("decodes");
    let meta = events
        .iter()
        .find_map(|e| match e {
            ListEvent::Metadata(m) => Some(m.clone()),
            _ => None,
        })
        .expect("metadata");
    assert!(meta.continue_token.is_some());
    assert_eq!(meta.remaining_item_count, Some(1));
    assert_eq!(items(&events).len(), 2);
}

#[test]
fn a_captured_list_is_written_back_byte_for_byte() {
    for prefix in ["100-", "105-", "107-", "113-", "116-"] {
        let body = response_bytes(prefix);
        let events = events(&[&body]).expect("decodes");
        let (api_version, kind) = match &events[0] {
            ListEvent::Type { api_version, kind } => (api_version.clone(), kind.clone()),
            other => panic!("{other:?}"),
        };
        let item_kind = schema::list_item_kind(&kind).expect("a list kind");
        let message = schema::for_kind(&api_version, item_kind).expect("a table");
        let meta = match &events[1] {
            ListEvent::Metadata(meta) => serde_json::to_value(meta).expect("JSON"),
            other => panic!("{other:?}"),
        };
        let values: Vec<Value> = items(&events)
            .into_iter()
            .map(|item| {
                let text = to_json(message, item, None, &Selection::all()).expect("transcodes");
                serde_json::from_slice(&text).expect("JSON")
            })
            .collect();
        let written = encode::list(&api_version, &kind, &meta, &values).expect("encodes");
        assert_eq!(written, body, "exchange {prefix}");
    }
}

#[test]
fn metadata_after_the_items_and_unknown_fields_of_every_wire_type_are_fine() {
    let mut raw = Vec::new();
    put_len_field(&mut raw, 2, b"\x0a\x00");
    put_varint_field(&mut raw, 9, 300);
    put_tag(&mut raw, 10, WireType::Fixed64);
    raw.extend_from_slice(&[0; 8]);
    put_tag(&mut raw, 11, WireType::Fixed32);
    raw.extend_from_slice(&[0; 4]);
    put_len_field(&mut raw, 12, b"skipped");
    put_len_field(&mut raw, 2, b""); // An empty item: a valid, all-default object.
    let mut meta = Vec::new();
    put_len_field(&mut meta, 2, b"42");
    put_len_field(&mut raw, 1, &meta);
    let mut body = envelope("v1", "PodList", &raw);
    put_varint_field(&mut body, 7, 1); // Unknown envelope field after the list.
    let events = events(&[&body]).expect("decodes");
    assert_eq!(events.len(), 4, "{events:?}");
    assert_eq!(events[1], ListEvent::Item(Bytes::from_static(b"\x0a\x00")));
    assert_eq!(events[2], ListEvent::Item(Bytes::new()));
    assert!(
        matches!(&events[3], ListEvent::Metadata(m) if m.resource_version.as_deref() == Some("42"))
    );
}

#[test]
fn a_status_instead_of_a_list_is_its_error() {
    let err = events(&[&response_bytes("111-")]).unwrap_err();
    let ListError::Status(status) = err else {
        panic!("{err}");
    };
    assert_eq!(status.reason, StatusReason::NotFound);
    assert_eq!(status.code, Some(404));
    // The 406 a custom resource answers to protobuf alone is one too.
    let err = events(&[&response_bytes("109-")]).unwrap_err();
    assert!(
        matches!(&err, ListError::Status(s) if s.code == Some(406)),
        "{err}"
    );
}

#[test]
fn broken_bodies_are_refused_with_what_broke() {
    let err = events(&[br#"{"kind":"JobList"}"#]).unwrap_err();
    assert!(
        err.to_string().contains("not a Kubernetes protobuf body"),
        "{err}"
    );

    // An item that claims to run past the end of the list.
    let mut raw = Vec::new();
    put_tag(&mut raw, 2, WireType::Len);
    put_varint(&mut raw, 50);
    raw.extend_from_slice(&[0; 50]);
    let mut body = MAGIC.to_vec();
    put_tag(&mut body, 2, WireType::Len);
    put_varint(&mut body, 10); // The list says 10 bytes; its item says 50.
    body.extend_from_slice(&raw);
    let err = events(&[&body]).unwrap_err();
    assert!(matches!(err, ListError::Overrun { end: 16, .. }), "{err}");

    let mut body = MAGIC.to_vec();
    put_tag(&mut body, 2, WireType::Len);
    put_varint(&mut body, 1 << 40);
    put_tag(&mut body, 2, WireType::Len);
    put_varint(&mut body, (MAX_VALUE_BYTES + 1) as u64);
    let err = events(&[&body]).unwrap_err();
    assert!(
        matches!(err, ListError::TooLarge { what: "item", .. }),
        "{err}"
    );

    let mut body = MAGIC.to_vec();
    body.push(0x0b); // Field 1, wire type 3: a group.
    let err = events(&[&body]).unwrap_err();
    assert!(err.to_string().contains("group"), "{err}");

    // An item as a varint: refused, not skipped (it would vanish from the list).
    let mut raw = Vec::new();
    put_varint_field(&mut raw, 2, 1);
    let body = envelope("batch/v1", "JobList", &raw);
    let err = events(&[&body]).unwrap_err();
    assert!(
        err.to_string()
            .ends_with("an item at byte 27 is varint (0), expected length-delimited"),
        "{err}"
    );

    let mut body = MAGIC.to_vec();
    put_len_field(&mut body, 3, b"gzip");
    let err = events(&[&body]).unwrap_err();
    assert!(err.to_string().contains("gzip"), "{err}");
}

/// A `raw` whose length, added to where it starts, passes 2^64 is refused, not overflowed
/// (the fuzz target `protobuf_list` found the addition panicking in a debug build and wrapping
/// in a release one; `fuzz/regressions/protobuf_list/raw-length-near-2-64.bin` keeps its
/// input).
#[test]
fn a_raw_length_past_any_offset_is_refused() {
    let mut body = MAGIC.to_vec();
    put_len_field(&mut body, 1, &encode_type_meta_for_test());
    put_tag(&mut body, 2, WireType::Len);
    put_varint(&mut body, u64::MAX - 3);
    body.extend_from_slice(b"\x0a\x00");
    for pieces in [vec![&body[..]], body.chunks(1).collect()] {
        match events(&pieces) {
            Err(ListError::RawTooLong { len, .. }) => assert_eq!(len, u64::MAX - 3),
            other => panic!("{other:?}"),
        }
    }
}

fn encode_type_meta_for_test() -> Vec<u8> {
    crate::protobuf::envelope::encode_type_meta("v1", "ConfigMapList")
}
