//! Protobuf object bytes → the JSON text the crate's JSON item decoders read.
//!
//! Why transcode rather than decode protobuf into each type: every reader of an object in
//! kube-gc — the typed `api` structs, the TTL projection, the retention engine's judging
//! decoder with its runtime field paths — reads JSON text. Writing that text from protobuf
//! keeps one decoder per type, and with a [`Selection`] the text holds only the members the
//! reader looks at: a field left out is skipped by its length prefix without being looked at.
//!
//! Contract:
//! - Driven by a [`Message`] table: each field the table knows becomes the JSON member the
//!   server's own JSON would have, with the same value (strings, numbers, booleans, base64
//!   bytes, `Time` as RFC 3339 or `null`, `Quantity` and `IntOrString` as in JSON, `fieldsV1`
//!   inserted as the JSON text it carries). Fields the table does not know are skipped.
//! - Members come out in the table's (the Go struct's) order, whatever order the wire has, and
//!   each at most once: a repeated field's elements are gathered into one array even when the
//!   wire interleaves them; for a singular field the last occurrence wins (protobuf's rule).
//! - The JSON agrees with the server's JSON on every member the table covers, except that a
//!   member left empty is absent where Go would write an empty value without `omitempty`
//!   (`"containers": null`) — a reader cannot tell the two apart.
//! - The output is always valid JSON text, whatever the input (a `fieldsV1` is checked before
//!   it is inserted, so its bytes cannot close the object around it); malformed input is a
//!   [`TranscodeError`] naming the message and the member path where it was found.
//! - Nesting follows the tables, which have no cycles: however the input is built, the depth
//!   of recursion is the tables' depth.
//! - `kind` and `apiVersion`, which protobuf objects do not carry, come from the envelope (or
//!   the caller) and are written first, as Go writes them.

use super::envelope::{Envelope, EnvelopeError};
use super::json_text;
use super::schema::{self, Field, Kind, Message, Presence};
use super::selection::Selection;
use super::wire::{Reader, WireError, WireType, WireValue};

/// Why protobuf bytes could not be written as JSON.
#[derive(Debug, thiserror::Error)]
pub enum TranscodeError {
    /// The envelope names a type no table describes.
    #[error("no protobuf schema for {api_version} {kind}")]
    UnknownKind {
        /// The envelope's `apiVersion`.
        api_version: String,
        /// The envelope's `kind`.
        kind: String,
    },
    /// The envelope around the object is malformed.
    #[error(transparent)]
    Envelope(#[from] EnvelopeError),
    /// The bytes are not well-formed protobuf.
    #[error("{at}: {source}")]
    Wire {
        /// The message and member path, e.g. `batch.v1.Job spec.template`.
        at: String,
        /// What is wrong.
        #[source]
        source: WireError,
    },
    /// A field's wire type contradicts its table.
    #[error("{at}: field {number} is {found} on the wire, but its schema says {expected}")]
    WireType {
        /// The message and member path.
        at: String,
        /// The field number.
        number: u32,
        /// The wire type found.
        found: WireType,
        /// The wire type the table implies.
        expected: WireType,
    },
    /// A `Time` or `MicroTime` outside what RFC 3339 can write.
    #[error("{at}: timestamp of {seconds} s and {nanos} ns has no RFC 3339 form")]
    Time {
        /// The message and member path.
        at: String,
        /// Its seconds.
        seconds: i64,
        /// Its nanoseconds.
        nanos: i32,
    },
    /// An `IntOrString` whose `type` is neither 0 (int) nor 1 (string).
    #[error("{at}: IntOrString of type {kind}, neither 0 (int) nor 1 (string)")]
    IntOrString {
        /// The message and member path.
        at: String,
        /// The type found.
        kind: u64,
    },
    /// A `fieldsV1` whose bytes are not JSON text.
    #[error("{at}: fieldsV1 does not hold JSON text: {source}")]
    RawJson {
        /// The message and member path.
        at: String,
        /// The JSON error.
        #[source]
        source: serde_json::Error,
    },
}

/// A whole protobuf body (`k8s\0` envelope and object) as JSON, with `kind` and `apiVersion`.
pub fn body_to_json(body: &[u8], selection: &Selection) -> Result<Vec<u8>, TranscodeError> {
    object_to_json(&Envelope::decode(body)?, selection)
}

/// The object in `envelope` as JSON, with the envelope's `kind` and `apiVersion`.
pub fn object_to_json(
    envelope: &Envelope<'_>,
    selection: &Selection,
) -> Result<Vec<u8>, TranscodeError> {
    let message = schema::for_kind(envelope.api_version, envelope.kind).ok_or_else(|| {
        TranscodeError::UnknownKind {
            api_version: envelope.api_version.to_owned(),
            kind: envelope.kind.to_owned(),
        }
    })?;
    let mut out = Vec::with_capacity(envelope.raw.len() * 2);
    let type_meta = Some((envelope.api_version, envelope.kind));
    write_json(&mut out, message, envelope.raw, type_meta, selection)?;
    Ok(out)
}

/// `bytes`, a `message`, as JSON; `type_meta` (`apiVersion`, `kind`) is written first if given.
pub fn to_json(
    message: &'static Message,
    bytes: &[u8],
    type_meta: Option<(&str, &str)>,
    selection: &Selection,
) -> Result<Vec<u8>, TranscodeError> {
    let mut out = Vec::with_capacity(bytes.len() * 2);
    write_json(&mut out, message, bytes, type_meta, selection)?;
    Ok(out)
}

/// Like [`to_json`], appending to `out` (a buffer reused across objects). On error, `out`
/// holds a partial text that the caller should discard.
pub fn write_json(
    out: &mut Vec<u8>,
    message: &'static Message,
    bytes: &[u8],
    type_meta: Option<(&str, &str)>,
    selection: &Selection,
) -> Result<(), TranscodeError> {
    let mut t = Transcoder {
        out,
        slots: Vec::new(),
        path: Vec::new(),
        root: message.name,
    };
    t.out.push(b'{');
    let mut first = true;
    if let Some((api_version, kind)) = type_meta {
        t.key("kind", &mut first);
        json_text::string(t.out, kind.as_bytes());
        t.key("apiVersion", &mut first);
        json_text::string(t.out, api_version.as_bytes());
    }
    t.members(message, bytes, 0, selection, &mut first)?;
    t.out.push(b'}');
    Ok(())
}

/// One field occurrence kept for writing.
#[derive(Clone, Copy)]
struct Slot<'b> {
    /// The field's position in its message's table.
    index: usize,
    value: WireValue<'b>,
    /// Where the value starts in the object's bytes (for nested error offsets).
    base: usize,
}

struct Transcoder<'o, 'b> {
    out: &'o mut Vec<u8>,
    /// The occurrences of every message being written, innermost last: one buffer for the
    /// whole object instead of one per message.
    slots: Vec<Slot<'b>>,
    /// The member path, for errors.
    path: Vec<&'static str>,
    root: &'static str,
}

impl<'b> Transcoder<'_, 'b> {
    fn at(&self) -> String {
        format!("{} {}", self.root, self.path.join("."))
            .trim_end()
            .to_owned()
    }

    fn key(&mut self, name: &str, first: &mut bool) {
        if !std::mem::replace(first, false) {
            self.out.push(b',');
        }
        json_text::string(self.out, name.as_bytes());
        self.out.push(b':');
    }

    fn message(
        &mut self,
        message: &'static Message,
        bytes: &'b [u8],
        base: usize,
        selection: &Selection,
    ) -> Result<(), TranscodeError> {
        self.out.push(b'{');
        self.members(message, bytes, base, selection, &mut true)?;
        self.out.push(b'}');
        Ok(())
    }

    /// Writes the selected members of `bytes` (a `message`), without braces: an inlined
    /// struct's members go into its parent's object.
    fn members(
        &mut self,
        message: &'static Message,
        bytes: &'b [u8],
        base: usize,
        selection: &Selection,
        first: &mut bool,
    ) -> Result<(), TranscodeError> {
        let mark = self.slots.len();
        self.gather(message, bytes, base, selection)?;
        let end = self.slots.len();
        // Stable: repeated elements keep their wire order.
        self.slots[mark..end].sort_by_key(|slot| slot.index);
        let mut from = mark;
        while from < end {
            let index = self.slots[from].index;
            let to = (from..end)
                .find(|&i| self.slots[i].index != index)
                .unwrap_or(end);
            let field = &message.fields[index];
            let inner = match field.kind {
                Kind::Inline(_) => selection,
                _ => selection.member(field.name).unwrap_or(selection),
            };
            self.path.push(field.name);
            let written = self.field(field, from, to, inner, first);
            self.path.pop();
            written?;
            from = to;
        }
        self.slots.truncate(mark);
        Ok(())
    }

    /// Pushes a slot for each occurrence of a known, selected field.
    fn gather(
        &mut self,
        message: &'static Message,
        bytes: &'b [u8],
        base: usize,
        selection: &Selection,
    ) -> Result<(), TranscodeError> {
        let everything = selection.is_all();
        let mut reader = Reader::at(bytes, base);
        loop {
            let field = match reader.next_field() {
                Ok(Some(field)) => field,
                Ok(None) => return Ok(()),
                Err(source) => return Err(self.wire(source)),
            };
            let Some(index) = message.position(field.number) else {
                continue; // Unknown to the table: skipped.
            };
            let known = &message.fields[index];
            let inline = matches!(known.kind, Kind::Inline(_));
            if !everything && !inline && selection.member(known.name).is_none() {
                continue; // Not selected: skipped by its length, never looked at.
            }
            let value_base = match field.value {
                WireValue::Len(slice) => reader.offset() - slice.len(),
                _ => field.offset,
            };
            self.slots.push(Slot {
                index,
                value: field.value,
                base: value_base,
            });
        }
    }

    fn wire(&self, source: WireError) -> TranscodeError {
        TranscodeError::Wire {
            at: self.at(),
            source,
        }
    }

    /// Writes one member from its occurrences `slots[from..to]`.
    fn field(
        &mut self,
        field: &'static Field,
        from: usize,
        to: usize,
        selection: &Selection,
        first: &mut bool,
    ) -> Result<(), TranscodeError> {
        match (&field.kind, field.repeated) {
            (Kind::Inline(message), _) => {
                let slot = self.slots[to - 1];
                let bytes = self.len(field, slot.value)?;
                self.members(message, bytes, slot.base, selection, first)
            }
            (Kind::Map(value), _) => {
                self.key(field.name, first);
                self.map(field, value, from, to)
            }
            (kind, true) => {
                self.key(field.name, first);
                self.out.push(b'[');
                let mut first_element = true;
                for i in from..to {
                    let slot = self.slots[i];
                    self.element(field, kind, slot, selection, &mut first_element)?;
                }
                self.out.push(b']');
                Ok(())
            }
            (kind, false) => {
                let slot = self.slots[to - 1];
                if field.presence == Presence::OmitEmpty && is_zero(kind, &slot.value) {
                    return Ok(());
                }
                self.key(field.name, first);
                self.value(field, kind, slot.value, slot.base, selection)
            }
        }
    }

    /// One occurrence of a repeated field: a value, or a packed run of numbers.
    fn element(
        &mut self,
        field: &'static Field,
        kind: &Kind,
        slot: Slot<'b>,
        selection: &Selection,
        first: &mut bool,
    ) -> Result<(), TranscodeError> {
        let packed = matches!(kind, Kind::Int32 | Kind::Int64 | Kind::Bool);
        if let (true, WireValue::Len(run)) = (packed, slot.value) {
            // Proto2 repeated numbers are unpacked by default, but a reader must accept both.
            let mut reader = Reader::at(run, slot.base);
            while !reader.is_empty() {
                let number = reader
                    .read_varint("packed element")
                    .map_err(|e| self.wire(e))?;
                self.comma(first);
                self.value(field, kind, WireValue::Varint(number), slot.base, selection)?;
            }
            return Ok(());
        }
        self.comma(first);
        self.value(field, kind, slot.value, slot.base, selection)
    }

    fn comma(&mut self, first: &mut bool) {
        if !std::mem::replace(first, false) {
            self.out.push(b',');
        }
    }
}

/// Whether a plain value is its type's zero, which `omitempty` leaves out of JSON. Structs
/// (messages, times, quantities) are never left out.
fn is_zero(kind: &Kind, value: &WireValue<'_>) -> bool {
    match kind {
        Kind::String | Kind::Bytes => matches!(value, WireValue::Len([])),
        Kind::Int32 | Kind::Int64 | Kind::Bool => matches!(value, WireValue::Varint(0)),
        _ => false,
    }
}

mod values;

#[cfg(test)]
mod tests;
