//! The two timestamp types of the Kubernetes API: [`Time`] and [`MicroTime`].
//!
//! Contract:
//! - Both parse every RFC 3339 form an API server emits: `Z` or a numeric offset (`+02:00`),
//!   with or without fractional seconds of any length (digits past nanoseconds are ignored).
//!   Parsed values are normalised to UTC.
//! - [`Time`] (`metav1.Time`) is serialized with second precision: `2026-11-22T03:45:32Z`.
//!   Sub-second parts are kept in memory but truncated on the wire, exactly as the server does.
//! - [`MicroTime`] (`metav1.MicroTime`, used by Leases and `Event.eventTime`) is serialized with
//!   exactly six fractional digits: `2026-11-22T00:00:02.000000Z`.
//! - A JSON `null` (the server writes one for a zero time) is represented by `Option::None` in the
//!   fields that hold these types; neither type has a "zero" value of its own.

use std::fmt;

use chrono::{DateTime, SecondsFormat, Utc};
use serde::{de, Deserialize, Deserializer, Serialize, Serializer};

/// A timestamp serialized with second precision (`metav1.Time`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Time(pub DateTime<Utc>);

/// A timestamp serialized with microsecond precision (`metav1.MicroTime`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct MicroTime(pub DateTime<Utc>);

impl Time {
    /// The current wall-clock time.
    pub fn now() -> Self {
        Time(Utc::now())
    }

    /// Parses any RFC 3339 timestamp.
    pub fn parse(s: &str) -> Result<Self, chrono::ParseError> {
        parse_rfc3339(s).map(Time)
    }

    /// The wire form: RFC 3339 in UTC with whole seconds and a `Z` suffix.
    pub fn to_wire(&self) -> String {
        self.0.to_rfc3339_opts(SecondsFormat::Secs, true)
    }
}

impl MicroTime {
    /// The current wall-clock time.
    pub fn now() -> Self {
        MicroTime(Utc::now())
    }

    /// Parses any RFC 3339 timestamp.
    pub fn parse(s: &str) -> Result<Self, chrono::ParseError> {
        parse_rfc3339(s).map(MicroTime)
    }

    /// The wire form: RFC 3339 in UTC with exactly six fractional digits and a `Z` suffix.
    pub fn to_wire(&self) -> String {
        self.0.to_rfc3339_opts(SecondsFormat::Micros, true)
    }
}

fn parse_rfc3339(s: &str) -> Result<DateTime<Utc>, chrono::ParseError> {
    DateTime::parse_from_rfc3339(s).map(|t| t.with_timezone(&Utc))
}

impl From<DateTime<Utc>> for Time {
    fn from(t: DateTime<Utc>) -> Self {
        Time(t)
    }
}

impl From<DateTime<Utc>> for MicroTime {
    fn from(t: DateTime<Utc>) -> Self {
        MicroTime(t)
    }
}

impl fmt::Display for Time {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.to_wire())
    }
}

impl fmt::Display for MicroTime {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.to_wire())
    }
}

impl Serialize for Time {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(&self.to_wire())
    }
}

impl Serialize for MicroTime {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(&self.to_wire())
    }
}

impl<'de> Deserialize<'de> for Time {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_str(Rfc3339Visitor).map(Time)
    }
}

impl<'de> Deserialize<'de> for MicroTime {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_str(Rfc3339Visitor).map(MicroTime)
    }
}

/// Parses a JSON string as RFC 3339 without first copying it into an owned `String`.
struct Rfc3339Visitor;

impl de::Visitor<'_> for Rfc3339Visitor {
    type Value = DateTime<Utc>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("an RFC 3339 timestamp")
    }

    fn visit_str<E: de::Error>(self, s: &str) -> Result<Self::Value, E> {
        parse_rfc3339(s).map_err(|e| E::custom(format_args!("invalid timestamp {s:?}: {e}")))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::TimeZone;

    fn utc(y: i32, mo: u32, d: u32, h: u32, mi: u32, s: u32, nanos: u32) -> DateTime<Utc> {
        let whole = Utc
            .with_ymd_and_hms(y, mo, d, h, mi, s)
            .single()
            .expect("valid test date");
        whole + chrono::Duration::nanoseconds(i64::from(nanos))
    }

    #[test]
    fn parses_every_form_the_server_emits() {
        let cases = [
            ("2026-11-22T03:45:32Z", utc(2026, 11, 22, 3, 45, 32, 0)),
            (
                "2026-11-22T03:45:32.5Z",
                utc(2026, 11, 22, 3, 45, 32, 500_000_000),
            ),
            (
                "2026-11-22T03:45:32.000001Z",
                utc(2026, 11, 22, 3, 45, 32, 1_000),
            ),
            (
                "2026-11-22T03:45:32.123456789Z",
                utc(2026, 11, 22, 3, 45, 32, 123_456_789),
            ),
            // More digits than nanoseconds: the excess is ignored, not rejected.
            (
                "2026-11-22T03:45:32.1234567891234Z",
                utc(2026, 11, 22, 3, 45, 32, 123_456_789),
            ),
            ("2026-11-22T05:45:32+02:00", utc(2026, 11, 22, 3, 45, 32, 0)),
            (
                "2026-11-21T22:15:32.25-05:30",
                utc(2026, 11, 22, 3, 45, 32, 250_000_000),
            ),
            ("2026-11-22T03:45:32+00:00", utc(2026, 11, 22, 3, 45, 32, 0)),
        ];
        for (text, expected) in cases {
            assert_eq!(Time::parse(text).map(|t| t.0), Ok(expected), "Time {text}");
            assert_eq!(
                MicroTime::parse(text).map(|t| t.0),
                Ok(expected),
                "MicroTime {text}"
            );
        }
    }

    #[test]
    fn rejects_what_is_not_rfc3339() {
        for text in [
            "",
            "2026-11-22",
            "2026-11-22T03:45:32",
            "yesterday",
            "1700000000",
        ] {
            assert!(Time::parse(text).is_err(), "{text:?} should not parse");
        }
    }

    #[test]
    fn time_serializes_whole_seconds_in_utc() {
        let t = Time(utc(2026, 11, 22, 3, 45, 32, 999_999_999));
        assert_eq!(
            serde_json::to_string(&t).ok(),
            Some("\"2026-11-22T03:45:32Z\"".into())
        );
        let from_offset: Time = serde_json::from_str("\"2026-11-22T05:45:32.7+02:00\"").unwrap();
        assert_eq!(from_offset.to_wire(), "2026-11-22T03:45:32Z");
    }

    #[test]
    fn micro_time_serializes_exactly_six_digits() {
        let cases = [
            (utc(2026, 11, 22, 0, 0, 2, 0), "2026-11-22T00:00:02.000000Z"),
            (
                utc(2026, 11, 22, 0, 0, 2, 1_000),
                "2026-11-22T00:00:02.000001Z",
            ),
            (
                utc(2026, 11, 22, 0, 0, 2, 123_456_789),
                "2026-11-22T00:00:02.123456Z",
            ),
        ];
        for (t, wire) in cases {
            assert_eq!(MicroTime(t).to_wire(), wire);
            assert_eq!(
                serde_json::to_string(&MicroTime(t)).ok(),
                Some(format!("\"{wire}\""))
            );
        }
    }

    #[test]
    fn null_is_none_when_optional() {
        let t: Option<Time> = serde_json::from_str("null").unwrap();
        assert_eq!(t, None);
        let t: Option<MicroTime> = serde_json::from_str("\"2026-11-22T00:00:00.000000Z\"").unwrap();
        assert_eq!(t, Some(MicroTime(utc(2026, 11, 22, 0, 0, 0, 0))));
    }

    #[test]
    fn a_bad_timestamp_names_itself_in_the_error() {
        let err = serde_json::from_str::<Time>("\"not a time\"").unwrap_err();
        assert!(err.to_string().contains("not a time"), "{err}");
    }
}
