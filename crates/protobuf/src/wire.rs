//! Protobuf wire primitives: varints, tags, length-delimited slices, and skipping whatever a
//! reader does not know.
//!
//! Contract:
//! - [`Reader`] walks one message held whole in memory. [`Reader::next_field`] reads a tag and
//!   its value; a length-delimited value comes back as a borrowed slice, so skipping a field of
//!   any size costs the same few instructions — the reason protobuf is cheaper than JSON for
//!   a reader that wants a few fields of a big object.
//! - Every wire type Kubernetes can send is read: varint (0), 64-bit (1), length-delimited (2)
//!   and 32-bit (5). Groups (3, 4) are refused with [`WireError::Group`]: proto2 groups are
//!   deprecated, no Kubernetes message uses them, and skipping one needs a nested scan that a
//!   hostile body could make deep.
//! - Nothing panics on any input. Every read is bounds-checked and an error says what was
//!   being read and at which byte of the body (a reader made with [`Reader::at`] counts from
//!   where its slice sits in the body), so "truncated" always names what was cut.
//! - [`decode_varint`] works on a prefix that may end mid-varint, for the streaming decoders
//!   that see a body in chunks; it tells "not yet" ([`Varint::Incomplete`]) from "never"
//!   ([`WireError::VarintTooLong`]).
//! - The writers (`put_*`) emit the canonical encoding: minimal varints, tags as
//!   `field << 3 | wire type`, as the Go encoder (gogo-protobuf, which Kubernetes uses) does.

use std::fmt;

/// The largest field number protobuf allows (2^29 − 1).
pub const MAX_FIELD_NUMBER: u32 = (1 << 29) - 1;

/// A varint is at most 10 bytes (64 bits in 7-bit groups).
pub const MAX_VARINT_LEN: usize = 10;

/// How a field's value is laid out on the wire (the low three bits of its tag).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WireType {
    /// 0: a varint (int32, int64, uint*, bool, enum).
    Varint,
    /// 1: eight little-endian bytes (fixed64, sfixed64, double).
    Fixed64,
    /// 2: a varint length, then that many bytes (string, bytes, messages, packed repeated).
    Len,
    /// 5: four little-endian bytes (fixed32, sfixed32, float).
    Fixed32,
}

impl WireType {
    /// The number written in a tag.
    pub fn number(self) -> u8 {
        match self {
            WireType::Varint => 0,
            WireType::Fixed64 => 1,
            WireType::Len => 2,
            WireType::Fixed32 => 5,
        }
    }
}

impl fmt::Display for WireType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let name = match self {
            WireType::Varint => "varint",
            WireType::Fixed64 => "64-bit",
            WireType::Len => "length-delimited",
            WireType::Fixed32 => "32-bit",
        };
        write!(f, "{name} ({})", self.number())
    }
}

/// Why bytes are not a well-formed protobuf message.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum WireError {
    /// The input ended inside something.
    #[error("truncated {what} at byte {offset}: it needs {needed} bytes, {available} remain")]
    Truncated {
        /// What was being read: `varint`, `tag`, `field 2 (length-delimited)`, …
        what: String,
        /// Where it starts in the body.
        offset: usize,
        /// Bytes it needs (for a varint: at least one more than remain).
        needed: usize,
        /// Bytes that remain.
        available: usize,
    },
    /// More than ten bytes with the continuation bit set.
    #[error("varint at byte {offset} runs longer than {MAX_VARINT_LEN} bytes")]
    VarintTooLong {
        /// Where it starts.
        offset: usize,
    },
    /// A start-group or end-group tag.
    #[error("field {field} at byte {offset} is a group (wire type {wire_type}), which Kubernetes never sends")]
    Group {
        /// The field number.
        field: u32,
        /// 3 or 4.
        wire_type: u8,
        /// Where the tag starts.
        offset: usize,
    },
    /// Wire types 6 and 7 do not exist.
    #[error("field {field} at byte {offset} has wire type {wire_type}, which does not exist")]
    UnknownWireType {
        /// The field number.
        field: u32,
        /// 6 or 7.
        wire_type: u8,
        /// Where the tag starts.
        offset: usize,
    },
    /// Field number 0, or one above [`MAX_FIELD_NUMBER`].
    #[error("tag at byte {offset} names field {field}, outside 1..={MAX_FIELD_NUMBER}")]
    BadFieldNumber {
        /// The number found.
        field: u64,
        /// Where the tag starts.
        offset: usize,
    },
}

/// A value as it sits on the wire, before any schema says what it means.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WireValue<'a> {
    /// Wire type 0.
    Varint(u64),
    /// Wire type 1.
    Fixed64(u64),
    /// Wire type 2: the bytes after the length.
    Len(&'a [u8]),
    /// Wire type 5.
    Fixed32(u32),
}

impl WireValue<'_> {
    /// The wire type this value was read with.
    pub fn wire_type(&self) -> WireType {
        match self {
            WireValue::Varint(_) => WireType::Varint,
            WireValue::Fixed64(_) => WireType::Fixed64,
            WireValue::Len(_) => WireType::Len,
            WireValue::Fixed32(_) => WireType::Fixed32,
        }
    }
}

/// One field read by [`Reader::next_field`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Field<'a> {
    /// The field number.
    pub number: u32,
    /// Its value.
    pub value: WireValue<'a>,
    /// Where its tag starts in the body.
    pub offset: usize,
}

/// The result of decoding a varint from a prefix of a stream.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Varint {
    /// The value and how many bytes it took.
    Done(u64, usize),
    /// Every byte so far had the continuation bit: more bytes are needed.
    Incomplete,
}

/// Decodes the varint at the start of `bytes`, which may be a prefix of the stream.
/// `offset` is where `bytes` starts in the body, for the error.
pub fn decode_varint(bytes: &[u8], offset: usize) -> Result<Varint, WireError> {
    let mut value: u64 = 0;
    for (i, &byte) in bytes.iter().take(MAX_VARINT_LEN).enumerate() {
        // The tenth byte carries only the 64th bit; higher bits are dropped, as Go's decoder
        // does (it would be a non-canonical encoding, not a different number).
        value |= u64::from(byte & 0x7f) << (7 * i);
        if byte & 0x80 == 0 {
            return Ok(Varint::Done(value, i + 1));
        }
    }
    if bytes.len() >= MAX_VARINT_LEN {
        Err(WireError::VarintTooLong { offset })
    } else {
        Ok(Varint::Incomplete)
    }
}

/// Splits a tag into field number and wire type, refusing groups and impossible values.
pub fn split_tag(tag: u64, offset: usize) -> Result<(u32, WireType), WireError> {
    let number = tag >> 3;
    if number == 0 || number > u64::from(MAX_FIELD_NUMBER) {
        return Err(WireError::BadFieldNumber {
            field: number,
            offset,
        });
    }
    // In range just above, so this cast keeps every bit.
    let field = number as u32;
    let wire_type = (tag & 7) as u8;
    match wire_type {
        0 => Ok((field, WireType::Varint)),
        1 => Ok((field, WireType::Fixed64)),
        2 => Ok((field, WireType::Len)),
        5 => Ok((field, WireType::Fixed32)),
        3 | 4 => Err(WireError::Group {
            field,
            wire_type,
            offset,
        }),
        _ => Err(WireError::UnknownWireType {
            field,
            wire_type,
            offset,
        }),
    }
}

/// A cursor over one message held whole in memory.
#[derive(Clone, Debug)]
pub struct Reader<'a> {
    bytes: &'a [u8],
    pos: usize,
    /// Where `bytes` starts in the body, so errors name body offsets.
    base: usize,
}

impl<'a> Reader<'a> {
    /// A reader over a whole body.
    pub fn new(bytes: &'a [u8]) -> Self {
        Self::at(bytes, 0)
    }

    /// A reader over `bytes`, which start at byte `base` of the body.
    pub fn at(bytes: &'a [u8], base: usize) -> Self {
        Reader {
            bytes,
            pos: 0,
            base,
        }
    }

    /// Whether every byte has been read.
    pub fn is_empty(&self) -> bool {
        self.pos >= self.bytes.len()
    }

    /// The body offset of the next byte to read.
    pub fn offset(&self) -> usize {
        self.base + self.pos
    }

    fn remaining(&self) -> &'a [u8] {
        self.bytes.get(self.pos..).unwrap_or_default()
    }

    fn truncated(&self, what: impl Into<String>, needed: usize) -> WireError {
        WireError::Truncated {
            what: what.into(),
            offset: self.offset(),
            needed,
            available: self.remaining().len(),
        }
    }

    /// Reads a varint; `what` names it in a truncation error.
    pub fn read_varint(&mut self, what: &str) -> Result<u64, WireError> {
        match decode_varint(self.remaining(), self.offset())? {
            Varint::Done(value, len) => {
                self.pos += len;
                Ok(value)
            }
            Varint::Incomplete => Err(self.truncated(what, self.remaining().len() + 1)),
        }
    }

    /// Reads `n` bytes; `what` names them in a truncation error.
    pub fn read_bytes(&mut self, n: usize, what: &str) -> Result<&'a [u8], WireError> {
        let rest = self.remaining();
        match rest.get(..n) {
            Some(slice) => {
                self.pos += n;
                Ok(slice)
            }
            None => Err(self.truncated(what, n)),
        }
    }

    /// Reads the next field's tag and value, or `None` at the end of the message. A
    /// length-delimited value is borrowed, not copied: skipping it is O(1).
    pub fn next_field(&mut self) -> Result<Option<Field<'a>>, WireError> {
        if self.is_empty() {
            return Ok(None);
        }
        let offset = self.offset();
        let tag = self.read_varint("tag")?;
        let (number, wire_type) = split_tag(tag, offset)?;
        let value = self.read_value(number, wire_type)?;
        Ok(Some(Field {
            number,
            value,
            offset,
        }))
    }

    /// Reads the value of field `number` laid out as `wire_type`.
    fn read_value(&mut self, number: u32, wire_type: WireType) -> Result<WireValue<'a>, WireError> {
        // The description is built only on the error path: `format!` per field would cost
        // more than the read itself.
        let what = || format!("field {number} ({wire_type})");
        Ok(match wire_type {
            WireType::Varint => {
                let at = self.offset();
                match decode_varint(self.remaining(), at)? {
                    Varint::Done(v, len) => {
                        self.pos += len;
                        WireValue::Varint(v)
                    }
                    Varint::Incomplete => {
                        return Err(self.truncated(what(), self.remaining().len() + 1))
                    }
                }
            }
            WireType::Fixed64 => {
                let b = self
                    .read_fixed::<8>()
                    .ok_or_else(|| self.truncated(what(), 8))?;
                WireValue::Fixed64(u64::from_le_bytes(b))
            }
            WireType::Fixed32 => {
                let b = self
                    .read_fixed::<4>()
                    .ok_or_else(|| self.truncated(what(), 4))?;
                WireValue::Fixed32(u32::from_le_bytes(b))
            }
            WireType::Len => {
                let len = self.read_varint("length")?;
                let n = usize::try_from(len).unwrap_or(usize::MAX);
                let rest = self.remaining();
                match rest.get(..n) {
                    Some(slice) => {
                        self.pos += n;
                        WireValue::Len(slice)
                    }
                    None => return Err(self.truncated(what(), n)),
                }
            }
        })
    }

    fn read_fixed<const N: usize>(&mut self) -> Option<[u8; N]> {
        let slice = self.remaining().get(..N)?;
        let mut out = [0; N];
        out.copy_from_slice(slice);
        self.pos += N;
        Some(out)
    }
}

// ---------------------------------------------------------------- writers

/// How many bytes `value` takes as a varint.
pub fn varint_len(value: u64) -> usize {
    // One byte per started group of 7 bits; zero still takes one byte.
    let bits = 64 - (value | 1).leading_zeros() as usize;
    bits.div_ceil(7)
}

/// Appends `value` as a varint.
pub fn put_varint(out: &mut Vec<u8>, mut value: u64) {
    while value >= 0x80 {
        out.push((value as u8 & 0x7f) | 0x80);
        value >>= 7;
    }
    out.push(value as u8);
}

/// Appends the tag of field `number` with `wire_type`.
pub fn put_tag(out: &mut Vec<u8>, number: u32, wire_type: WireType) {
    put_varint(
        out,
        (u64::from(number) << 3) | u64::from(wire_type.number()),
    );
}

/// Appends field `number` as a varint (int32, int64, bool). A negative int32 is written as
/// its sign-extended 64-bit value (ten bytes), as protobuf requires.
pub fn put_varint_field(out: &mut Vec<u8>, number: u32, value: u64) {
    put_tag(out, number, WireType::Varint);
    put_varint(out, value);
}

/// Appends field `number` as length-delimited `bytes` (string, bytes, an encoded message).
pub fn put_len_field(out: &mut Vec<u8>, number: u32, bytes: &[u8]) {
    put_tag(out, number, WireType::Len);
    put_varint(out, bytes.len() as u64);
    out.extend_from_slice(bytes);
}

#[cfg(test)]
mod tests;
