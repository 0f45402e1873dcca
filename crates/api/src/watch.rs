//! [`WatchEvent<T>`]: one line of a watch response, `{"type": ..., "object": ...}`.
//!
//! Contract:
//! - `ADDED`, `MODIFIED` and `DELETED` carry a `T` (a typed object, a
//!   [`PartialObjectMetadata`](super::PartialObjectMetadata), or a `serde_json::Value`).
//! - `BOOKMARK` carries only a resourceVersion (and annotations), whatever `T` is: the server
//!   sends a skeleton of `T` with empty or `null` fields that a strict `T` might not accept, so
//!   it is decoded as a [`Bookmark`] instead.
//! - `ERROR` carries a [`Status`] (e.g. 410 `Expired`), never a `T`.
//!
//! So the `object` can only be decoded once `type` is known. The server always writes `type`
//! first, and then the object is decoded straight from the input with no intermediate copy; if
//! another writer puts `object` first, it is buffered as a `serde_json::Value` and decoded when
//! `type` arrives — correct for any key order, fast for the real one.
//!
//! [`WatchEvent::from_slice_with`] decodes a line whose `T` is made by a function of the
//! event's type and the object's text rather than by `Deserialize` (the client's item
//! decoders): the line is parsed once with the object kept as borrowed raw text (any key
//! order), and only the object of an `ADDED`, `MODIFIED` or `DELETED` event goes to that
//! function, with the type (a `DELETED` object is the final state of one that is gone). A line exactly as the API
//! server writes it, `{"type":"ADDED","object":…}` with nothing after the object, skips that
//! parse: its object's text is the rest of the line, handed over unscanned; the function must
//! refuse trailing text after one JSON value (as `serde_json::from_slice` does), so a line with
//! anything after its object makes it fail, and the line is then parsed as any other.

use std::collections::BTreeMap;
use std::fmt;
use std::marker::PhantomData;

use serde::de::{self, Deserializer, IgnoredAny, MapAccess, Visitor};
use serde::ser::{SerializeStruct, Serializer};
use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;

use super::defaults::null_as_default;
use super::meta::TypeMeta;
use super::status::Status;

/// The annotation the server puts on the BOOKMARK that ends the initial events of a
/// `sendInitialEvents=true` watch.
pub const INITIAL_EVENTS_END_ANNOTATION: &str = "k8s.io/initial-events-end";

/// One event of a watch.
#[derive(Clone, Debug, PartialEq)]
pub enum WatchEvent<T> {
    /// An object was created (or is part of the initial state being replayed).
    Added(T),
    /// An object changed.
    Modified(T),
    /// An object was deleted; this is its last state.
    Deleted(T),
    /// Progress marker: everything up to this resourceVersion has been sent.
    Bookmark(Bookmark),
    /// The watch failed; the server ends the stream after it. Boxed because it is rare and
    /// large, so it does not grow every event.
    Error(Box<Status>),
}

/// The `type` of a watch event, as written on the wire.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "UPPERCASE")]
pub enum EventType {
    /// `ADDED`.
    Added,
    /// `MODIFIED`.
    Modified,
    /// `DELETED`.
    Deleted,
    /// `BOOKMARK`.
    Bookmark,
    /// `ERROR`.
    Error,
}

/// The object of a BOOKMARK event: only its resourceVersion and annotations mean anything.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Bookmark {
    /// The watched type's `apiVersion` and `kind`.
    #[serde(flatten)]
    pub types: TypeMeta,
    /// The resourceVersion reached.
    pub metadata: BookmarkMeta,
}

/// The metadata of a [`Bookmark`].
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct BookmarkMeta {
    /// Resume a watch from here to miss nothing.
    pub resource_version: String,
    /// e.g. [`INITIAL_EVENTS_END_ANNOTATION`].
    #[serde(
        default,
        deserialize_with = "null_as_default",
        skip_serializing_if = "BTreeMap::is_empty"
    )]
    pub annotations: BTreeMap<String, String>,
}

impl Bookmark {
    /// Whether this bookmark ends the initial events of a `sendInitialEvents=true` watch.
    pub fn is_initial_events_end(&self) -> bool {
        self.metadata
            .annotations
            .get(INITIAL_EVENTS_END_ANNOTATION)
            .map(String::as_str)
            == Some("true")
    }
}

impl<T> WatchEvent<T> {
    /// The event's wire type.
    pub fn event_type(&self) -> EventType {
        match self {
            WatchEvent::Added(_) => EventType::Added,
            WatchEvent::Modified(_) => EventType::Modified,
            WatchEvent::Deleted(_) => EventType::Deleted,
            WatchEvent::Bookmark(_) => EventType::Bookmark,
            WatchEvent::Error(_) => EventType::Error,
        }
    }

    /// The object of an ADDED, MODIFIED or DELETED event.
    pub fn object(&self) -> Option<&T> {
        match self {
            WatchEvent::Added(o) | WatchEvent::Modified(o) | WatchEvent::Deleted(o) => Some(o),
            WatchEvent::Bookmark(_) | WatchEvent::Error(_) => None,
        }
    }
}

/// A watch line with its object still as text, for [`WatchEvent::from_slice_with`]. Unknown
/// keys are skipped and duplicates rejected, as [`WatchEvent`]'s own decoding does.
#[derive(Deserialize)]
struct RawEvent<'a> {
    #[serde(rename = "type")]
    event_type: EventType,
    #[serde(borrow)]
    object: &'a RawValue,
}

impl<T> WatchEvent<T> {
    /// Decodes one watch line, making the object of an `ADDED`, `MODIFIED` or `DELETED` event
    /// with `decode_object` from the event's type and the object's JSON text; a `BOOKMARK` or
    /// `ERROR` decodes as usual.
    pub fn from_slice_with(
        line: &[u8],
        decode_object: impl Fn(EventType, &[u8]) -> Result<T, serde_json::Error>,
    ) -> Result<Self, serde_json::Error> {
        // The server's own shape: no pass over the object to find where it ends — for a 3 KB
        // Pod that pass was a fifth of decoding its event.
        if let Some((event_type, event, object)) = split_server_line(line) {
            if let Ok(object) = decode_object(event_type, object) {
                return Ok(event(object));
            }
        }
        // A derived struct would also accept `["ADDED", {…}]`; a watch event is an object.
        if line.trim_ascii_start().starts_with(b"[") {
            let expected = "a watch event {\"type\": ..., \"object\": ...}";
            return Err(de::Error::invalid_type(de::Unexpected::Seq, &expected));
        }
        let raw: RawEvent<'_> = serde_json::from_slice(line)?;
        let object = raw.object.get().as_bytes();
        let decode = |event_type| decode_object(event_type, object);
        Ok(match raw.event_type {
            EventType::Added => WatchEvent::Added(decode(EventType::Added)?),
            EventType::Modified => WatchEvent::Modified(decode(EventType::Modified)?),
            EventType::Deleted => WatchEvent::Deleted(decode(EventType::Deleted)?),
            EventType::Bookmark => WatchEvent::Bookmark(serde_json::from_slice(object)?),
            EventType::Error => WatchEvent::Error(serde_json::from_slice(object)?),
        })
    }
}

/// The event of one type made of its object: `WatchEvent::Added`, `Modified` or `Deleted`.
type ObjectEvent<T> = fn(T) -> WatchEvent<T>;

/// A line as the API server writes one about an object — `{"type":"ADDED","object":` (or
/// `MODIFIED`, `DELETED`), the object, `}` — split into its type, the event that type makes of
/// an object, and what must be the object's text, if the line has that shape; whether the
/// object really ends at the last `}` is for its decoder to find (see the module documentation).
fn split_server_line<T>(line: &[u8]) -> Option<(EventType, ObjectEvent<T>, &[u8])> {
    let types: [(&[u8], EventType, ObjectEvent<T>); 3] = [
        (b"ADDED", EventType::Added, WatchEvent::Added),
        (b"MODIFIED", EventType::Modified, WatchEvent::Modified),
        (b"DELETED", EventType::Deleted, WatchEvent::Deleted),
    ];
    let rest = line.strip_prefix(br#"{"type":""#)?;
    let (event_type, event, rest) = types.into_iter().find_map(|(name, event_type, event)| {
        let rest = rest.strip_prefix(name)?.strip_prefix(br#"","object":"#)?;
        Some((event_type, event, rest))
    })?;
    let object = rest.trim_ascii_end().strip_suffix(b"}")?;
    Some((event_type, event, object))
}

impl<T: Serialize> Serialize for WatchEvent<T> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut event = serializer.serialize_struct("WatchEvent", 2)?;
        event.serialize_field("type", &self.event_type())?;
        match self {
            WatchEvent::Added(o) | WatchEvent::Modified(o) | WatchEvent::Deleted(o) => {
                event.serialize_field("object", o)?
            }
            WatchEvent::Bookmark(b) => event.serialize_field("object", b)?,
            WatchEvent::Error(s) => event.serialize_field("object", s)?,
        }
        event.end()
    }
}

impl<'de, T: Deserialize<'de>> Deserialize<'de> for WatchEvent<T> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_map(WatchEventVisitor(PhantomData))
    }
}

/// The keys of a watch event; anything else is skipped.
#[derive(Deserialize)]
#[serde(field_identifier, rename_all = "lowercase")]
enum Field {
    Type,
    Object,
    #[serde(other)]
    Other,
}

struct WatchEventVisitor<T>(PhantomData<fn() -> T>);

impl<'de, T: Deserialize<'de>> Visitor<'de> for WatchEventVisitor<T> {
    type Value = WatchEvent<T>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a watch event {\"type\": ..., \"object\": ...}")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        let mut event_type: Option<EventType> = None;
        let mut event: Option<WatchEvent<T>> = None;
        // Only used when `object` comes before `type`.
        let mut early_object: Option<serde_json::Value> = None;

        while let Some(field) = map.next_key::<Field>()? {
            match field {
                Field::Type if event_type.is_some() => {
                    return Err(de::Error::duplicate_field("type"))
                }
                Field::Type => event_type = Some(map.next_value()?),
                Field::Object if event.is_some() || early_object.is_some() => {
                    return Err(de::Error::duplicate_field("object"))
                }
                Field::Object => match event_type {
                    Some(event_type) => event = Some(decode_object(event_type, &mut map)?),
                    None => early_object = Some(map.next_value()?),
                },
                Field::Other => {
                    map.next_value::<IgnoredAny>()?;
                }
            }
        }

        let event_type = event_type.ok_or_else(|| de::Error::missing_field("type"))?;
        match (event, early_object) {
            (Some(event), _) => Ok(event),
            (None, Some(object)) => decode_buffered(event_type, object).map_err(de::Error::custom),
            (None, None) => Err(de::Error::missing_field("object")),
        }
    }
}

/// Decodes the `object` value straight from the input, as the type its event type calls for.
fn decode_object<'de, T, A>(event_type: EventType, map: &mut A) -> Result<WatchEvent<T>, A::Error>
where
    T: Deserialize<'de>,
    A: MapAccess<'de>,
{
    Ok(match event_type {
        EventType::Added => WatchEvent::Added(map.next_value()?),
        EventType::Modified => WatchEvent::Modified(map.next_value()?),
        EventType::Deleted => WatchEvent::Deleted(map.next_value()?),
        EventType::Bookmark => WatchEvent::Bookmark(map.next_value()?),
        EventType::Error => WatchEvent::Error(map.next_value()?),
    })
}

/// Decodes an `object` that arrived before its `type` and was buffered.
fn decode_buffered<'de, T: Deserialize<'de>>(
    event_type: EventType,
    object: serde_json::Value,
) -> Result<WatchEvent<T>, serde_json::Error> {
    Ok(match event_type {
        EventType::Added => WatchEvent::Added(T::deserialize(object)?),
        EventType::Modified => WatchEvent::Modified(T::deserialize(object)?),
        EventType::Deleted => WatchEvent::Deleted(T::deserialize(object)?),
        EventType::Bookmark => WatchEvent::Bookmark(Bookmark::deserialize(object)?),
        EventType::Error => WatchEvent::Error(Box::new(Status::deserialize(object)?)),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Job, StatusReason};

    #[test]
    fn error_line_of_a_typed_watch_decodes_as_status() {
        let line = r#"{"type":"ERROR","object":{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"too old resource version: 300 (557)","reason":"Expired","code":410}}"#;
        let event: WatchEvent<Job> = serde_json::from_str(line).unwrap();
        match event {
            WatchEvent::Error(status) => {
                assert_eq!(status.code, Some(410));
                assert_eq!(status.reason, StatusReason::Expired);
            }
            other => panic!("expected an ERROR event, got {other:?}"),
        }
    }

    #[test]
    fn bookmark_skeleton_with_nulls_decodes_for_a_strict_type() {
        // `u32` cannot decode a Job skeleton: the bookmark must not be decoded as `T`.
        let line = r#"{"type":"BOOKMARK","object":{"kind":"Job","apiVersion":"batch/v1","metadata":{"resourceVersion":"206","creationTimestamp":null},"spec":{"template":{"spec":{"containers":null}}},"status":{}}}"#;
        let event: WatchEvent<u32> = serde_json::from_str(line).unwrap();
        match event {
            WatchEvent::Bookmark(b) => {
                assert_eq!(b.metadata.resource_version, "206");
                assert!(!b.is_initial_events_end());
            }
            other => panic!("expected a BOOKMARK, got {other:?}"),
        }
    }

    #[test]
    fn object_before_type_is_buffered_and_decoded() {
        let line = r#"{"object":{"metadata":{"name":"a"}},"type":"DELETED"}"#;
        let event: WatchEvent<Job> = serde_json::from_str(line).unwrap();
        let name = event.object().and_then(|j| j.metadata.name.as_deref());
        assert_eq!(event.event_type(), EventType::Deleted);
        assert_eq!(name, Some("a"));
    }

    #[test]
    fn initial_events_end_bookmark_is_recognised() {
        let line = r#"{"type":"BOOKMARK","object":{"metadata":{"resourceVersion":"9","annotations":{"k8s.io/initial-events-end":"true"}}}}"#;
        let event: WatchEvent<Job> = serde_json::from_str(line).unwrap();
        assert!(matches!(event, WatchEvent::Bookmark(b) if b.is_initial_events_end()));
    }

    #[test]
    fn malformed_events_are_errors() {
        for line in [
            r#"{"type":"EXPLODED","object":{}}"#,
            r#"{"object":{}}"#,
            r#"{"type":"ADDED"}"#,
            r#"{"type":"ADDED","type":"ADDED","object":{}}"#,
            r#"{"type":"ERROR","object":"not a status"}"#,
            r#"[1,2]"#,
        ] {
            assert!(
                serde_json::from_str::<WatchEvent<Job>>(line).is_err(),
                "{line}"
            );
        }
    }

    /// The length of the object's text, as a decoder that needs no `Deserialize`.
    fn length(line: &str) -> Result<WatchEvent<usize>, serde_json::Error> {
        WatchEvent::from_slice_with(line.as_bytes(), |_, object| Ok(object.len()))
    }

    #[test]
    fn a_line_decodes_with_an_object_decoder_in_any_key_order() {
        let added = length(r#"{"type":"ADDED","object":{"a":1}}"#);
        assert!(matches!(added, Ok(WatchEvent::Added(7))), "{added:?}");
        let deleted = length(r#"{"object":{"a":[1,2]},"extra":0,"type":"DELETED"}"#);
        assert!(
            matches!(deleted, Ok(WatchEvent::Deleted(11))),
            "{deleted:?}"
        );
        let bookmark =
            length(r#"{"type":"BOOKMARK","object":{"metadata":{"resourceVersion":"5"}}}"#);
        assert!(
            matches!(bookmark, Ok(WatchEvent::Bookmark(b)) if b.metadata.resource_version == "5")
        );
        let error =
            length(r#"{"type":"ERROR","object":{"kind":"Status","code":410,"reason":"Expired"}}"#);
        assert!(matches!(error, Ok(WatchEvent::Error(s)) if s.code == Some(410)));
        for line in [
            r#"{"type":"EXPLODED","object":{}}"#,
            r#"{"object":{}}"#,
            r#"{"type":"ADDED"}"#,
            r#"{"type":"ADDED","type":"ADDED","object":{}}"#,
            r#"{"type":"ERROR","object":"not a status"}"#,
            r#"[1,2]"#,
            r#" ["ADDED",{}]"#,
        ] {
            assert!(length(line).is_err(), "{line}");
        }
        let refused =
            WatchEvent::<()>::from_slice_with(br#"{"type":"MODIFIED","object":{}}"#, |_, _| {
                Err(serde::de::Error::custom("not for this policy"))
            });
        assert!(refused.is_err());
    }

    #[test]
    fn the_decoder_is_told_each_objects_event_in_either_shape() {
        let typed = |line: &str| {
            WatchEvent::from_slice_with(line.as_bytes(), |event_type, _| Ok(event_type))
        };
        for (line, expected) in [
            (r#"{"type":"ADDED","object":{}}"#, EventType::Added),
            (r#"{"type":"MODIFIED","object":{}}"#, EventType::Modified),
            (r#"{"type":"DELETED","object":{}}"#, EventType::Deleted),
            (r#"{"object":{},"type":"DELETED"}"#, EventType::Deleted),
            (r#"{"object":{},"type":"MODIFIED"}"#, EventType::Modified),
        ] {
            let event = typed(line).unwrap();
            assert_eq!(event.event_type(), expected, "{line}");
            assert!(
                matches!(event, WatchEvent::Added(t) | WatchEvent::Modified(t) | WatchEvent::Deleted(t) if t == expected),
                "{line}"
            );
        }
    }

    /// The object as `serde_json::from_slice` reads it: strict about trailing text, as item
    /// decoders are.
    fn strict(line: &str) -> Result<WatchEvent<serde_json::Value>, serde_json::Error> {
        WatchEvent::from_slice_with(line.as_bytes(), |_, object| serde_json::from_slice(object))
    }

    #[test]
    fn a_line_in_the_servers_shape_gives_the_same_event_as_any_other() {
        let object = serde_json::json!({"metadata": {"name": "a"}, "b": [1, {"c": "}"}]});
        for (line, expected) in [
            (
                r#"{"type":"ADDED","object":{"metadata":{"name":"a"},"b":[1,{"c":"}"}]}}"#,
                Some(WatchEvent::Added(object.clone())),
            ),
            (
                r#"{"type":"DELETED","object":{"metadata":{"name":"a"},"b":[1,{"c":"}"}]}}  "#,
                Some(WatchEvent::Deleted(object.clone())),
            ),
            // Something after the object: the decoder refuses the split, the line is read
            // field by field — unknown keys skipped, duplicates refused, as always.
            (
                r#"{"type":"MODIFIED","object":{"metadata":{"name":"a"},"b":[1,{"c":"}"}]},"x":{}}"#,
                Some(WatchEvent::Modified(object.clone())),
            ),
            (
                r#"{"type":"MODIFIED","object":{"metadata":{"name":"a"}},"type":"DELETED"}"#,
                None,
            ),
            (r#"{"type":"ADDED","object":{"a":1}}}"#, None),
            (r#"{"type":"ADDED","object":{"a":1}"#, None),
            (r#"{"type":"ADDED","object":}"#, None),
        ] {
            assert_eq!(strict(line).ok(), expected, "{line}");
        }
        fn split(line: &[u8]) -> Option<(EventType, &[u8])> {
            split_server_line::<()>(line).map(|(event_type, event, object)| {
                // The type named and the event made agree.
                assert_eq!(event(()).event_type(), event_type);
                (event_type, object)
            })
        }
        assert_eq!(split(br#"{"type":"BOOKMARK","object":{}}"#), None);
        assert_eq!(
            split(br#"{"type":"ADDED","object":{"a":1}}"#),
            Some((EventType::Added, &br#"{"a":1}"#[..]))
        );
    }

    #[test]
    fn serializes_to_the_wire_shape() {
        let event: WatchEvent<serde_json::Value> =
            WatchEvent::Added(serde_json::json!({"metadata": {"name": "a"}}));
        assert_eq!(
            serde_json::to_string(&event).ok(),
            Some(r#"{"type":"ADDED","object":{"metadata":{"name":"a"}}}"#.into())
        );
        let back: WatchEvent<serde_json::Value> =
            serde_json::from_str(&serde_json::to_string(&event).unwrap()).unwrap();
        assert_eq!(back, event);
    }
}
