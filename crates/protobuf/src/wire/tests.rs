use super::*;

fn encoded(value: u64) -> Vec<u8> {
    let mut out = Vec::new();
    put_varint(&mut out, value);
    out
}

#[test]
fn varints_round_trip_at_every_length() {
    for value in [
        0,
        1,
        127,
        128,
        300,
        16_383,
        16_384,
        u64::from(u32::MAX),
        u64::MAX,
    ] {
        let bytes = encoded(value);
        assert_eq!(bytes.len(), varint_len(value), "{value}");
        assert_eq!(
            decode_varint(&bytes, 0),
            Ok(Varint::Done(value, bytes.len()))
        );
        // Every strict prefix is incomplete, not an error.
        for cut in 0..bytes.len() {
            assert_eq!(decode_varint(&bytes[..cut], 0), Ok(Varint::Incomplete));
        }
    }
    assert_eq!(encoded(300), [0xac, 0x02]);
}

#[test]
fn an_eleven_byte_varint_is_refused() {
    let bytes = [0xff; 11];
    assert_eq!(
        decode_varint(&bytes, 7),
        Err(WireError::VarintTooLong { offset: 7 })
    );
}

#[test]
fn every_wire_type_is_read_and_skipped() {
    let mut msg = Vec::new();
    put_varint_field(&mut msg, 1, 150);
    put_tag(&mut msg, 2, WireType::Fixed64);
    msg.extend_from_slice(&7u64.to_le_bytes());
    put_len_field(&mut msg, 3, b"abc");
    put_tag(&mut msg, 4, WireType::Fixed32);
    msg.extend_from_slice(&9u32.to_le_bytes());
    let mut reader = Reader::new(&msg);
    let mut seen = Vec::new();
    while let Some(field) = reader.next_field().expect("well formed") {
        seen.push((field.number, field.value));
    }
    assert_eq!(
        seen,
        [
            (1, WireValue::Varint(150)),
            (2, WireValue::Fixed64(7)),
            (3, WireValue::Len(b"abc")),
            (4, WireValue::Fixed32(9)),
        ]
    );
}

#[test]
fn groups_and_impossible_wire_types_are_refused() {
    // Field 5, wire type 3 (start group).
    let err = Reader::new(&[0x2b]).next_field().unwrap_err();
    assert_eq!(
        err,
        WireError::Group {
            field: 5,
            wire_type: 3,
            offset: 0
        }
    );
    assert!(err.to_string().contains("group"), "{err}");
    let err = Reader::new(&[0x2c]).next_field().unwrap_err();
    assert!(matches!(err, WireError::Group { wire_type: 4, .. }));
    let err = Reader::new(&[0x2e]).next_field().unwrap_err();
    assert!(matches!(
        err,
        WireError::UnknownWireType { wire_type: 6, .. }
    ));
    // Field number 0.
    let err = Reader::new(&[0x02, 0x00]).next_field().unwrap_err();
    assert!(matches!(err, WireError::BadFieldNumber { field: 0, .. }));
}

#[test]
fn truncation_names_what_was_cut_and_where() {
    let mut msg = Vec::new();
    put_len_field(&mut msg, 2, b"hello world");
    let cut = &msg[..msg.len() - 3];
    // As if the message sat at byte 100 of the body.
    let err = Reader::at(cut, 100).next_field().unwrap_err();
    assert_eq!(
        err,
        WireError::Truncated {
            what: "field 2 (length-delimited (2))".into(),
            offset: 102,
            needed: 11,
            available: 8,
        }
    );
    assert_eq!(
        err.to_string(),
        "truncated field 2 (length-delimited (2)) at byte 102: it needs 11 bytes, 8 remain"
    );
    let err = Reader::new(&[0x08, 0x80]).next_field().unwrap_err();
    assert!(err.to_string().contains("field 1 (varint (0))"), "{err}");
    let err = Reader::new(&[0x09, 1, 2]).next_field().unwrap_err();
    assert!(err.to_string().contains("needs 8 bytes, 2 remain"), "{err}");
    let err = Reader::new(&[0x80]).next_field().unwrap_err();
    assert!(
        err.to_string().starts_with("truncated tag at byte 0"),
        "{err}"
    );
}

#[test]
fn a_huge_length_is_a_truncation_not_an_overflow() {
    let mut msg = vec![0x12];
    put_varint(&mut msg, u64::MAX);
    let err = Reader::new(&msg).next_field().unwrap_err();
    assert!(matches!(err, WireError::Truncated { .. }), "{err}");
}
