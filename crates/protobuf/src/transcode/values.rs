//! Writing one value of each [`Kind`] as JSON: scalars, maps, and the Kubernetes types with
//! their own JSON forms (`Time`, `Quantity`, `IntOrString`, `FieldsV1`).
//!
//! Each follows the Go type's `MarshalJSON` (`staging/src/k8s.io/apimachinery/pkg/apis/meta/v1/
//! time.go`, `micro_time.go`, `fields.go`; `pkg/api/resource/quantity.go`;
//! `pkg/util/intstr/intstr.go`), and each checks the wire type its table implies.

use super::{Selection, TranscodeError, Transcoder};
use crate::json_text;
use crate::schema::{Field, Kind};
use crate::wire::{Reader, WireType, WireValue};

impl<'b> Transcoder<'_, 'b> {
    /// A map: entries `{key = 1, value = 2}`, one per occurrence.
    pub(super) fn map(
        &mut self,
        field: &'static Field,
        value_kind: &'static Kind,
        from: usize,
        to: usize,
    ) -> Result<(), TranscodeError> {
        self.out.push(b'{');
        for i in from..to {
            let slot = self.slots[i];
            let entry = self.len(field, slot.value)?;
            let (mut key, mut value) = (&b""[..], None);
            let mut reader = Reader::at(entry, slot.base);
            while let Some(part) = reader.next_field().map_err(|e| self.wire(e))? {
                match part.number {
                    1 => key = self.len(field, part.value)?,
                    2 => value = Some(part),
                    _ => {}
                }
            }
            if i > from {
                self.out.push(b',');
            }
            json_text::string(self.out, key);
            self.out.push(b':');
            match value {
                Some(part) => {
                    let base = value_base(&part, slot.base, entry);
                    self.value(field, value_kind, part.value, base, &Selection::all())?;
                }
                // An entry without a value maps to the zero value.
                None => self.value(
                    field,
                    value_kind,
                    WireValue::Len(&[]),
                    slot.base,
                    &Selection::all(),
                )?,
            }
        }
        self.out.push(b'}');
        Ok(())
    }

    pub(super) fn len(
        &self,
        field: &Field,
        value: WireValue<'b>,
    ) -> Result<&'b [u8], TranscodeError> {
        match value {
            WireValue::Len(bytes) => Ok(bytes),
            other => Err(self.wire_type(field, other, WireType::Len)),
        }
    }

    pub(super) fn varint(
        &self,
        field: &Field,
        value: WireValue<'b>,
    ) -> Result<u64, TranscodeError> {
        match value {
            WireValue::Varint(v) => Ok(v),
            // A map's missing value: zero.
            WireValue::Len([]) => Ok(0),
            other => Err(self.wire_type(field, other, WireType::Varint)),
        }
    }

    pub(super) fn wire_type(
        &self,
        field: &Field,
        found: WireValue<'_>,
        expected: WireType,
    ) -> TranscodeError {
        TranscodeError::WireType {
            at: self.at(),
            number: field.number,
            found: found.wire_type(),
            expected,
        }
    }

    /// Writes one value of `kind`.
    pub(super) fn value(
        &mut self,
        field: &'static Field,
        kind: &Kind,
        value: WireValue<'b>,
        base: usize,
        selection: &Selection,
    ) -> Result<(), TranscodeError> {
        match kind {
            Kind::String => {
                let bytes = self.len(field, value)?;
                json_text::string(self.out, bytes);
            }
            Kind::Bytes => {
                let bytes = self.len(field, value)?;
                json_text::base64(self.out, bytes);
            }
            Kind::Int32 => {
                // int32 is sign-extended to 64 bits on the wire; Go keeps the low 32.
                let number = self.varint(field, value)? as u32 as i32;
                json_text::integer(self.out, i64::from(number));
            }
            Kind::Int64 => {
                let number = self.varint(field, value)? as i64;
                json_text::integer(self.out, number);
            }
            Kind::Bool => {
                let text: &[u8] = if self.varint(field, value)? != 0 {
                    b"true"
                } else {
                    b"false"
                };
                self.out.extend_from_slice(text);
            }
            Kind::Message(message) | Kind::Inline(message) => {
                let bytes = self.len(field, value)?;
                self.message(message, bytes, base, selection)?;
            }
            // Tables never nest a map in a map (checked by the schema tests).
            Kind::Map(_) => self.out.extend_from_slice(b"null"),
            Kind::Time | Kind::MicroTime => self.time(field, kind, value, base)?,
            Kind::Quantity => self.quantity(field, value, base)?,
            Kind::IntOrString => self.int_or_string(field, value, base)?,
            Kind::RawJson => self.raw_json(field, value, base)?,
        }
        Ok(())
    }

    pub(super) fn time(
        &mut self,
        field: &Field,
        kind: &Kind,
        value: WireValue<'b>,
        base: usize,
    ) -> Result<(), TranscodeError> {
        let bytes = self.len(field, value)?;
        if bytes.is_empty() {
            // The zero time: Go marshals it as null.
            self.out.extend_from_slice(b"null");
            return Ok(());
        }
        let (mut seconds, mut nanos) = (0i64, 0i32);
        let mut reader = Reader::at(bytes, base);
        while let Some(part) = reader.next_field().map_err(|e| self.wire(e))? {
            match part.number {
                1 => seconds = self.varint(field, part.value)? as i64,
                2 => nanos = self.varint(field, part.value)? as u32 as i32,
                _ => {}
            }
        }
        let written = match kind {
            Kind::MicroTime => json_text::micro_time(self.out, seconds, nanos),
            // Time is to the second: nanos are dropped, as the Go type drops them.
            _ => json_text::time(self.out, seconds),
        };
        written.map_err(|_| TranscodeError::Time {
            at: self.at(),
            seconds,
            nanos,
        })
    }

    pub(super) fn quantity(
        &mut self,
        field: &Field,
        value: WireValue<'b>,
        base: usize,
    ) -> Result<(), TranscodeError> {
        let mut text: &[u8] = b"0"; // The zero Quantity marshals as "0".
        let mut reader = Reader::at(self.len(field, value)?, base);
        while let Some(part) = reader.next_field().map_err(|e| self.wire(e))? {
            if part.number == 1 {
                text = self.len(field, part.value)?;
            }
        }
        json_text::string(self.out, text);
        Ok(())
    }

    pub(super) fn int_or_string(
        &mut self,
        field: &Field,
        value: WireValue<'b>,
        base: usize,
    ) -> Result<(), TranscodeError> {
        let (mut kind, mut int, mut string) = (0, 0u64, &b""[..]);
        let mut reader = Reader::at(self.len(field, value)?, base);
        while let Some(part) = reader.next_field().map_err(|e| self.wire(e))? {
            match part.number {
                1 => kind = self.varint(field, part.value)?,
                2 => int = self.varint(field, part.value)?,
                3 => string = self.len(field, part.value)?,
                _ => {}
            }
        }
        match kind {
            0 => json_text::integer(self.out, i64::from(int as u32 as i32)),
            1 => json_text::string(self.out, string),
            _ => {
                return Err(TranscodeError::IntOrString {
                    at: self.at(),
                    kind,
                })
            }
        }
        Ok(())
    }

    pub(super) fn raw_json(
        &mut self,
        field: &Field,
        value: WireValue<'b>,
        base: usize,
    ) -> Result<(), TranscodeError> {
        let mut raw: Option<&[u8]> = None;
        let mut reader = Reader::at(self.len(field, value)?, base);
        while let Some(part) = reader.next_field().map_err(|e| self.wire(e))? {
            if part.number == 1 {
                raw = Some(self.len(field, part.value)?);
            }
        }
        match raw {
            Some(text) if !text.is_empty() => {
                // Checked, so that what we write is JSON whatever the server sent.
                json_text::check(text).map_err(|source| TranscodeError::RawJson {
                    at: self.at(),
                    source,
                })?;
                self.out.extend_from_slice(text);
            }
            _ => self.out.extend_from_slice(b"null"),
        }
        Ok(())
    }
}

/// Where a map entry's value starts in the object's bytes.
fn value_base(part: &crate::wire::Field<'_>, entry_base: usize, entry: &[u8]) -> usize {
    match part.value {
        WireValue::Len(slice) => entry_base + (slice.as_ptr() as usize - entry.as_ptr() as usize),
        _ => part.offset,
    }
}
