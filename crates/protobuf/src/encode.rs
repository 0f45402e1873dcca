//! JSON values → protobuf bytes, for the simulated API server's protobuf answers: objects,
//! lists, and watch frames.
//!
//! Contract:
//! - Driven by the same [`Message`] tables as the transcoder, and written as the Go encoder
//!   (gogo-protobuf's generated `MarshalToSizedBuffer` in each `generated.pb.go`) writes:
//!   fields in field-number order; plain values always, zeros included; pointers only when
//!   set; map entries sorted by key; repeated numbers unpacked (proto2's default); a `Time` as
//!   `{seconds, nanos = 0}`, the zero time as an empty message.
//! - So `transcode(encode(v))` gives back `v` on every member the tables know, up to what JSON
//!   cannot tell apart (an absent plain value and its zero), and members the tables do not know
//!   are dropped: a simulated protobuf answer carries only what the tables describe.
//! - A JSON value of the wrong type for its field is an [`EncodeError`] naming the member path;
//!   `null` is taken as "not set" everywhere, as Go's JSON decoder takes it.
//! - [`object`] wraps in the `k8s\0` envelope; [`list`] writes a whole list body;
//!   [`watch_frame`] one length-prefixed frame of a protobuf watch stream.

use base64::Engine as _;
use chrono::DateTime;
use serde_json::{Map, Value};

use super::envelope;
use super::schema::{self, Field, Kind, Message, Presence};
use super::wire::{put_len_field, put_tag, put_varint, put_varint_field, WireType};

/// Why a JSON value could not be written as protobuf.
#[derive(Debug, thiserror::Error)]
pub enum EncodeError {
    /// No table for this type.
    #[error("no protobuf schema for {api_version} {kind}")]
    UnknownKind {
        /// The object's `apiVersion`.
        api_version: String,
        /// The object's `kind`.
        kind: String,
    },
    /// A member has the wrong JSON type.
    #[error("{at}: expected {expected}, found {found}")]
    Type {
        /// The message and member path.
        at: String,
        /// What the table wants.
        expected: &'static str,
        /// The JSON found, shortened.
        found: String,
    },
    /// A time that is not RFC 3339.
    #[error("{at}: {text:?} is not an RFC 3339 time")]
    Time {
        /// The message and member path.
        at: String,
        /// The text found.
        text: String,
    },
}

/// `value` (an object with `apiVersion` and `kind`) as a whole protobuf body.
pub fn object(value: &Value) -> Result<Vec<u8>, EncodeError> {
    let api_version = value
        .get("apiVersion")
        .and_then(Value::as_str)
        .unwrap_or("");
    let kind = value.get("kind").and_then(Value::as_str).unwrap_or("");
    object_as(api_version, kind, value)
}

/// `value` as a whole protobuf body of type `api_version` `kind` (list items carry no type).
pub fn object_as(api_version: &str, kind: &str, value: &Value) -> Result<Vec<u8>, EncodeError> {
    let message = table(api_version, kind)?;
    Ok(envelope::encode(
        api_version,
        kind,
        &message_bytes(message, value)?,
    ))
}

/// A whole list body: `list_kind` (`JobList`) with `metadata` (a `ListMeta` as JSON) and
/// `items` (objects of the list's item kind).
pub fn list<'v>(
    api_version: &str,
    list_kind: &str,
    metadata: &Value,
    items: impl IntoIterator<Item = &'v Value>,
) -> Result<Vec<u8>, EncodeError> {
    let item_kind = schema::list_item_kind(list_kind).unwrap_or("");
    let item_message = table(api_version, item_kind)?;
    let mut raw = Vec::new();
    put_len_field(&mut raw, 1, &message_bytes(&schema::LIST_META, metadata)?);
    for item in items {
        put_len_field(&mut raw, 2, &message_bytes(item_message, item)?);
    }
    Ok(envelope::encode(api_version, list_kind, &raw))
}

/// One frame of a protobuf watch stream: the 4-byte big-endian length, then a
/// `meta.v1.WatchEvent` whose `object.raw` is `object`, a whole protobuf body (envelope
/// included, as the real server sends it).
pub fn watch_frame(event_type: &str, object: &[u8]) -> Vec<u8> {
    let mut raw_extension = Vec::with_capacity(object.len() + 6);
    put_len_field(&mut raw_extension, 1, object);
    let mut event = Vec::with_capacity(raw_extension.len() + event_type.len() + 8);
    put_len_field(&mut event, 1, event_type.as_bytes());
    put_len_field(&mut event, 2, &raw_extension);
    // A frame longer than 4 GiB cannot be framed; no object comes near (the server's limit
    // is ~3 MiB), so saturating only guards against a caller's mistake.
    let len = u32::try_from(event.len()).unwrap_or(u32::MAX);
    let mut frame = Vec::with_capacity(event.len() + 4);
    frame.extend_from_slice(&len.to_be_bytes());
    frame.extend_from_slice(&event);
    frame
}

fn table(api_version: &str, kind: &str) -> Result<&'static Message, EncodeError> {
    schema::for_kind(api_version, kind).ok_or_else(|| EncodeError::UnknownKind {
        api_version: api_version.to_owned(),
        kind: kind.to_owned(),
    })
}

/// `value` as the bytes of `message` (no envelope).
pub fn message_bytes(message: &'static Message, value: &Value) -> Result<Vec<u8>, EncodeError> {
    let mut encoder = Encoder {
        path: vec![message.name],
    };
    let mut out = Vec::new();
    encoder.message(message, value, &mut out)?;
    Ok(out)
}

struct Encoder {
    /// The message name and member path, for errors.
    path: Vec<&'static str>,
}

impl Encoder {
    fn at(&self) -> String {
        match self.path.split_first() {
            Some((root, members)) => format!("{root} {}", members.join("."))
                .trim_end()
                .to_owned(),
            None => String::new(),
        }
    }

    fn mismatch(&self, expected: &'static str, found: &Value) -> EncodeError {
        let mut found = found.to_string();
        if found.len() > 40 {
            let cut = (0..=40)
                .rev()
                .find(|&i| found.is_char_boundary(i))
                .unwrap_or(0);
            found.truncate(cut);
            found.push('…');
        }
        EncodeError::Type {
            at: self.at(),
            expected,
            found,
        }
    }

    fn message(
        &mut self,
        message: &'static Message,
        value: &Value,
        out: &mut Vec<u8>,
    ) -> Result<(), EncodeError> {
        match value {
            Value::Object(object) => self.members(message, object, out),
            // No allocation: an empty map owns nothing.
            Value::Null => self.members(message, &Map::new(), out),
            other => Err(self.mismatch("an object", other)),
        }
    }

    /// Writes `message`'s fields from `object`, in field-number order.
    fn members(
        &mut self,
        message: &'static Message,
        object: &Map<String, Value>,
        out: &mut Vec<u8>,
    ) -> Result<(), EncodeError> {
        let mut fields: Vec<&'static Field> = message.fields.iter().collect();
        fields.sort_by_key(|f| f.number);
        for field in fields {
            self.path.push(field.name);
            let written = self.field(field, object, out);
            self.path.pop();
            written?;
        }
        Ok(())
    }

    fn field(
        &mut self,
        field: &'static Field,
        object: &Map<String, Value>,
        out: &mut Vec<u8>,
    ) -> Result<(), EncodeError> {
        if let Kind::Inline(inner) = field.kind {
            // The embedded struct's members sit in this same object.
            let mut bytes = Vec::new();
            self.members(inner, object, &mut bytes)?;
            put_len_field(out, field.number, &bytes);
            return Ok(());
        }
        let value = object.get(field.name).unwrap_or(&Value::Null);
        match (&field.kind, field.repeated) {
            (Kind::Map(value_kind), _) => self.map(field, value_kind, value, out),
            (kind, true) => match value {
                Value::Null => Ok(()),
                Value::Array(elements) => {
                    for element in elements {
                        self.value(field.number, kind, element, out)?;
                    }
                    Ok(())
                }
                other => Err(self.mismatch("an array", other)),
            },
            (_, false) if value.is_null() && field.presence == Presence::Pointer => Ok(()),
            (kind, false) => self.value(field.number, kind, value, out),
        }
    }

    fn map(
        &mut self,
        field: &Field,
        kind: &Kind,
        value: &Value,
        out: &mut Vec<u8>,
    ) -> Result<(), EncodeError> {
        let entries = match value {
            Value::Null => return Ok(()),
            Value::Object(entries) => entries,
            other => return Err(self.mismatch("an object", other)),
        };
        // Go's generated code sorts map keys, so its bytes are deterministic; so are ours.
        let mut keys: Vec<&String> = entries.keys().collect();
        keys.sort();
        for key in keys {
            let mut entry = Vec::new();
            put_len_field(&mut entry, 1, key.as_bytes());
            self.value(2, kind, &entries[key], &mut entry)?;
            put_len_field(out, field.number, &entry);
        }
        Ok(())
    }

    /// Writes `value` as field `number` of `kind`; `null` writes the kind's zero.
    fn value(
        &mut self,
        number: u32,
        kind: &Kind,
        value: &Value,
        out: &mut Vec<u8>,
    ) -> Result<(), EncodeError> {
        match kind {
            Kind::String => put_len_field(out, number, self.string(value)?.as_bytes()),
            Kind::Bytes => {
                let text = self.string(value)?;
                let bytes = base64::engine::general_purpose::STANDARD
                    .decode(text)
                    .map_err(|_| self.mismatch("base64 text", value))?;
                put_len_field(out, number, &bytes);
            }
            Kind::Int32 => {
                let n = self.integer(value)?;
                let n = i32::try_from(n).map_err(|_| self.mismatch("a 32-bit integer", value))?;
                // Sign-extended, as protobuf writes a negative int32.
                put_varint_field(out, number, i64::from(n) as u64);
            }
            Kind::Int64 => put_varint_field(out, number, self.integer(value)? as u64),
            Kind::Bool => match value {
                Value::Bool(b) => put_varint_field(out, number, u64::from(*b)),
                Value::Null => put_varint_field(out, number, 0),
                other => return Err(self.mismatch("a boolean", other)),
            },
            Kind::Message(message) | Kind::Inline(message) => {
                let mut bytes = Vec::new();
                self.message(message, value, &mut bytes)?;
                put_len_field(out, number, &bytes);
            }
            Kind::Map(_) => return Err(self.mismatch("no map inside a map", value)),
            Kind::Time | Kind::MicroTime => {
                let bytes = self.time(kind, value)?;
                put_len_field(out, number, &bytes);
            }
            Kind::Quantity => {
                let text = match value {
                    Value::Number(n) => n.to_string(),
                    Value::Null => "0".to_owned(),
                    other => self.string(other)?.to_owned(),
                };
                let mut bytes = Vec::new();
                put_len_field(&mut bytes, 1, text.as_bytes());
                put_len_field(out, number, &bytes);
            }
            Kind::IntOrString => {
                let mut bytes = Vec::new();
                let (kind, int, string) = match value {
                    Value::String(s) => (1, 0, s.as_str()),
                    other => (0, self.integer(other)?, ""),
                };
                let int =
                    i32::try_from(int).map_err(|_| self.mismatch("a 32-bit integer", value))?;
                put_varint_field(&mut bytes, 1, kind);
                put_varint_field(&mut bytes, 2, i64::from(int) as u64);
                put_len_field(&mut bytes, 3, string.as_bytes());
                put_len_field(out, number, &bytes);
            }
            Kind::RawJson => {
                let mut bytes = Vec::new();
                if !value.is_null() {
                    put_len_field(&mut bytes, 1, value.to_string().as_bytes());
                }
                put_len_field(out, number, &bytes);
            }
        }
        Ok(())
    }

    fn string<'v>(&self, value: &'v Value) -> Result<&'v str, EncodeError> {
        match value {
            Value::String(s) => Ok(s),
            Value::Null => Ok(""),
            other => Err(self.mismatch("a string", other)),
        }
    }

    fn integer(&self, value: &Value) -> Result<i64, EncodeError> {
        match value {
            Value::Null => Ok(0),
            other => other
                .as_i64()
                .ok_or_else(|| self.mismatch("an integer", other)),
        }
    }

    /// A `Timestamp` message: `{seconds = 1, nanos = 2}`, both always written (as Go does);
    /// the zero time (`null`) is the empty message.
    fn time(&self, kind: &Kind, value: &Value) -> Result<Vec<u8>, EncodeError> {
        let text = match value {
            Value::Null => return Ok(Vec::new()),
            Value::String(text) => text,
            other => return Err(self.mismatch("an RFC 3339 time", other)),
        };
        let t = DateTime::parse_from_rfc3339(text).map_err(|_| EncodeError::Time {
            at: self.at(),
            text: text.clone(),
        })?;
        let nanos = match kind {
            // Microseconds kept, as `ProtoMicroTime` truncates.
            Kind::MicroTime => t.timestamp_subsec_nanos() / 1000 * 1000,
            // `Time` is to the second: `ProtoTime` writes no nanos.
            _ => 0,
        };
        let mut bytes = Vec::with_capacity(12);
        put_tag(&mut bytes, 1, WireType::Varint);
        put_varint(&mut bytes, t.timestamp() as u64);
        put_varint_field(&mut bytes, 2, u64::from(nanos));
        Ok(bytes)
    }
}

#[cfg(test)]
mod tests;
