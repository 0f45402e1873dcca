//! Writing JSON text by hand: strings, numbers and the time formats Kubernetes uses.
//!
//! The transcoder writes JSON straight into a byte buffer instead of building a
//! `serde_json::Value` first: a value tree would cost an allocation per member, and the text is
//! what the JSON item decoders read anyway.
//!
//! Contract:
//! - [`string`] writes a valid JSON string for any bytes. Bytes that are not UTF-8 become
//!   U+FFFD, as Go's `encoding/json` does, so a broken label spoils that label, not the object.
//! - [`check`] says whether bytes are JSON text a strict reader accepts — UTF-8 throughout, no
//!   lone surrogate in a `\u` escape — before they are inserted as they are (`fieldsV1`).
//!   serde's `IgnoredAny` is not enough: it skips strings without decoding them, so a
//!   `fieldsV1` with a broken byte passed it and the object written around it was not JSON
//!   (found by the fuzz target `protobuf_list`).
//! - [`time`] and [`micro_time`] write what `meta.v1.Time` / `MicroTime` marshal to in
//!   `staging/src/k8s.io/apimachinery/pkg/apis/meta/v1/time.go` / `micro_time.go`: RFC 3339 in
//!   UTC, to the second (`2006-01-02T15:04:05Z`) or with six fraction digits. Years outside
//!   0–9999 are refused (they have no RFC 3339 form).

use base64::Engine as _;
use chrono::{DateTime, Datelike, SecondsFormat};

/// Writes `bytes` as a JSON string (quotes included).
pub fn string(out: &mut Vec<u8>, bytes: &[u8]) {
    match std::str::from_utf8(bytes) {
        Ok(text) => escaped(out, text),
        Err(_) => escaped(out, &String::from_utf8_lossy(bytes)),
    }
}

/// Writes `text` as a JSON string, copying runs that need no escape in one go.
fn escaped(out: &mut Vec<u8>, text: &str) {
    out.reserve(text.len() + 2);
    out.push(b'"');
    let bytes = text.as_bytes();
    let mut start = 0;
    for (i, &byte) in bytes.iter().enumerate() {
        let escape: &[u8] = match byte {
            b'"' => b"\\\"",
            b'\\' => b"\\\\",
            b'\n' => b"\\n",
            b'\r' => b"\\r",
            b'\t' => b"\\t",
            0x00..=0x1f => b"",
            _ => continue,
        };
        out.extend_from_slice(&bytes[start..i]);
        if escape.is_empty() {
            // Other control characters: \u00XX.
            const HEX: &[u8; 16] = b"0123456789abcdef";
            out.extend_from_slice(b"\\u00");
            out.push(HEX[usize::from(byte >> 4)]);
            out.push(HEX[usize::from(byte & 0xf)]);
        } else {
            out.extend_from_slice(escape);
        }
        start = i + 1;
    }
    out.extend_from_slice(&bytes[start..]);
    out.push(b'"');
}

/// Whether `text` is one JSON value that `serde_json::from_slice::<Value>` (or any strict
/// reader) accepts; without building it: strings are decoded, to be checked, and dropped.
pub fn check(text: &[u8]) -> Result<(), serde_json::Error> {
    use serde::de::{Deserialize, Deserializer, MapAccess, SeqAccess, Visitor};

    struct Checked;
    struct CheckedVisitor;

    impl<'de> Visitor<'de> for CheckedVisitor {
        type Value = Checked;
        fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            f.write_str("any JSON value")
        }
        fn visit_bool<E>(self, _: bool) -> Result<Checked, E> {
            Ok(Checked)
        }
        fn visit_i64<E>(self, _: i64) -> Result<Checked, E> {
            Ok(Checked)
        }
        fn visit_u64<E>(self, _: u64) -> Result<Checked, E> {
            Ok(Checked)
        }
        fn visit_f64<E>(self, _: f64) -> Result<Checked, E> {
            Ok(Checked)
        }
        fn visit_str<E>(self, _: &str) -> Result<Checked, E> {
            Ok(Checked)
        }
        fn visit_unit<E>(self) -> Result<Checked, E> {
            Ok(Checked)
        }
        fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Checked, A::Error> {
            while seq.next_element::<Checked>()?.is_some() {}
            Ok(Checked)
        }
        fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Checked, A::Error> {
            while map.next_entry::<Checked, Checked>()?.is_some() {}
            Ok(Checked)
        }
    }

    impl<'de> Deserialize<'de> for Checked {
        fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Checked, D::Error> {
            deserializer.deserialize_any(CheckedVisitor)
        }
    }

    serde_json::from_slice::<Checked>(text).map(|_| ())
}

/// Writes an integer.
pub fn integer(out: &mut Vec<u8>, value: i64) {
    // `itoa`-style formatting through `fmt` is fast enough next to the rest of the object.
    use std::io::Write as _;
    let _ = write!(out, "{value}"); // Writing to a Vec cannot fail.
}

/// Writes `bytes` as a JSON string of their standard base64, as Go marshals `[]byte`.
pub fn base64(out: &mut Vec<u8>, bytes: &[u8]) {
    out.push(b'"');
    let encoded = base64::engine::general_purpose::STANDARD.encode(bytes);
    out.extend_from_slice(encoded.as_bytes());
    out.push(b'"');
}

/// A timestamp RFC 3339 cannot express.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct OutOfRange;

fn utc(seconds: i64, nanos: u32) -> Result<DateTime<chrono::Utc>, OutOfRange> {
    let t = DateTime::from_timestamp(seconds, nanos).ok_or(OutOfRange)?;
    if (0..=9999).contains(&t.year()) {
        Ok(t)
    } else {
        Err(OutOfRange)
    }
}

/// Writes a `meta.v1.Time` of `seconds` since the epoch: `"2026-11-22T03:45:32Z"`.
pub fn time(out: &mut Vec<u8>, seconds: i64) -> Result<(), OutOfRange> {
    let text = utc(seconds, 0)?.to_rfc3339_opts(SecondsFormat::Secs, true);
    out.push(b'"');
    out.extend_from_slice(text.as_bytes());
    out.push(b'"');
    Ok(())
}

/// Writes a `meta.v1.MicroTime`: `"2026-11-22T03:45:32.123456Z"` (nanoseconds truncated).
/// `nanos` outside 0..1e9 is refused, as Go's `Timestamp` validation does.
pub fn micro_time(out: &mut Vec<u8>, seconds: i64, nanos: i32) -> Result<(), OutOfRange> {
    let nanos = u32::try_from(nanos)
        .ok()
        .filter(|n| *n < 1_000_000_000)
        .ok_or(OutOfRange)?;
    let text = utc(seconds, nanos / 1000 * 1000)?.to_rfc3339_opts(SecondsFormat::Micros, true);
    out.push(b'"');
    out.extend_from_slice(text.as_bytes());
    out.push(b'"');
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn text(write: impl FnOnce(&mut Vec<u8>)) -> String {
        let mut out = Vec::new();
        write(&mut out);
        String::from_utf8(out).expect("JSON text is UTF-8")
    }

    #[test]
    fn strings_are_escaped_as_json() {
        let s = "a\"b\\c\nd\u{1}é😀";
        let written = text(|o| string(o, s.as_bytes()));
        assert_eq!(written, r#""a\"b\\c\nd\u0001é😀""#);
        let back: String = serde_json::from_str(&written).expect("valid JSON");
        assert_eq!(back, s);
        // Not UTF-8: replaced, still valid JSON.
        let written = text(|o| string(o, b"x\xffy"));
        assert_eq!(
            serde_json::from_str::<String>(&written).ok().as_deref(),
            Some("x\u{fffd}y")
        );
    }

    #[test]
    fn times_are_rfc3339_in_utc() {
        assert_eq!(
            text(|o| time(o, 1_795_319_132).expect("in range")),
            "\"2026-11-22T03:45:32Z\""
        );
        assert_eq!(
            text(|o| time(o, 0).expect("in range")),
            "\"1970-01-01T00:00:00Z\""
        );
        assert_eq!(
            text(|o| micro_time(o, 1_795_319_132, 123_456_789).expect("in range")),
            "\"2026-11-22T03:45:32.123456Z\""
        );
        assert_eq!(time(&mut Vec::new(), i64::MAX), Err(OutOfRange));
        assert_eq!(time(&mut Vec::new(), 400_000_000_000), Err(OutOfRange));
        assert_eq!(
            micro_time(&mut Vec::new(), 0, 1_000_000_000),
            Err(OutOfRange)
        );
        assert_eq!(micro_time(&mut Vec::new(), 0, -1), Err(OutOfRange));
    }

    #[test]
    fn numbers_and_bytes() {
        assert_eq!(text(|o| integer(o, -42)), "-42");
        assert_eq!(text(|o| base64(o, b"hi\x00")), "\"aGkA\"");
    }
}

#[cfg(test)]
mod check_tests {
    use super::check;

    /// What a strict reader refuses is refused, and what it takes is taken (the fuzz target
    /// `protobuf_list` found a `fieldsV1` with a non-UTF-8 byte inside a string let through).
    #[test]
    fn check_agrees_with_a_strict_reader() {
        let cases: [&[u8]; 9] = [
            br#"{"f:metadata":{"f:labels":{".":{}}}}"#,
            b"{\"f:a\xe2\x28\":{}}",
            br#""\ud800""#,
            br#"{"a":"\udc00x"}"#,
            br#""\ud83d\ude00""#,
            br#"[1, 2.5, true, null, "\u00e9"]"#,
            b"{} {}",
            b"",
            b"\"caf\xc3\xa9\"",
        ];
        for text in cases {
            assert_eq!(
                check(text).is_ok(),
                serde_json::from_slice::<serde_json::Value>(text).is_ok(),
                "{}",
                String::from_utf8_lossy(text)
            );
        }
    }
}
