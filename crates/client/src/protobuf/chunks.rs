//! Bytes arriving in chunks split anywhere: the cursor the streaming list and watch decoders
//! read through.
//!
//! Contract:
//! - [`Chunks`] queues the chunks fed to it and hands bytes out from the front, counting the
//!   body offset of the next unread byte (for errors).
//! - [`Chunks::take_value`] assembles a value of known length. When the whole value lies in
//!   one chunk it is a zero-copy slice of that chunk (the common case: a 7 KB Job in a 16 KB
//!   HTTP/2 frame); only a value split across chunks is copied, once, into a buffer of its
//!   exact size. So assembling never copies quadratically, however small the chunks.
//! - [`Chunks::take_varint`] assembles a varint that may be split across chunks.
//! - Nothing here allocates more than the value being assembled asks for (callers bound that
//!   length before asking), and no more than [`MAX_UPFRONT_RESERVE`] of it before its bytes
//!   arrive: a length prefix is only a claim, and a body of a few bytes claiming the 64 MiB
//!   limit must not make the client reserve 64 MiB (a fuzz run under a malloc limit fails on
//!   that; the fuzz targets `protobuf_list` and `protobuf_watch` run under one). Beyond that the buffer grows as the bytes come, by doubling, so assembling
//!   stays linear.

use std::collections::VecDeque;

use bytes::{Bytes, BytesMut};

use super::wire::{decode_varint, Varint, WireError, MAX_VARINT_LEN};

/// The most reserved for a value split across chunks before more of it has arrived: a whole
/// Job or Pod (a few KiB to a few hundred) is assembled without regrowing, while a length
/// prefix claiming more costs what arrives, not what it claims.
pub(crate) const MAX_UPFRONT_RESERVE: usize = 256 * 1024;

/// The chunks received and not yet read.
#[derive(Debug, Default)]
pub(crate) struct Chunks {
    queue: VecDeque<Bytes>,
    /// Body offset of the next unread byte.
    offset: u64,
}

/// A value of known length being assembled.
#[derive(Debug, Default)]
pub(crate) struct Pending {
    /// What has arrived of a value split across chunks.
    buf: BytesMut,
}

/// A varint being assembled.
#[derive(Debug, Default)]
pub(crate) struct PendingVarint {
    bytes: Vec<u8>,
}

impl PendingVarint {
    /// Whether some of a varint has arrived.
    pub(crate) fn is_started(&self) -> bool {
        !self.bytes.is_empty()
    }
}

impl Chunks {
    /// Queues a chunk (an empty one is dropped).
    pub(crate) fn push(&mut self, chunk: Bytes) {
        if !chunk.is_empty() {
            self.queue.push_back(chunk);
        }
    }

    /// Whether no unread byte is queued.
    pub(crate) fn is_empty(&self) -> bool {
        self.queue.is_empty()
    }

    /// Body offset of the next unread byte.
    pub(crate) fn offset(&self) -> u64 {
        self.offset
    }

    /// Up to `n` bytes from the front chunk, without copying; `None` if nothing is queued.
    fn take_front(&mut self, n: usize) -> Option<Bytes> {
        let front = self.queue.front_mut()?;
        let taken = if n >= front.len() {
            self.queue.pop_front()?
        } else {
            front.split_to(n)
        };
        self.offset += taken.len() as u64;
        Some(taken)
    }

    /// Skips up to `n` bytes; answers how many were skipped.
    pub(crate) fn skip(&mut self, n: u64) -> u64 {
        let mut skipped = 0;
        while skipped < n {
            let want = usize::try_from(n - skipped).unwrap_or(usize::MAX);
            match self.take_front(want) {
                Some(part) => skipped += part.len() as u64,
                None => break,
            }
        }
        skipped
    }

    /// The next byte, if one is queued.
    pub(crate) fn take_byte(&mut self) -> Option<u8> {
        self.take_front(1).and_then(|b| b.first().copied())
    }

    /// The value of `len` bytes once all of it has arrived; `None` while it has not (what
    /// arrived is kept in `pending`).
    pub(crate) fn take_value(&mut self, len: usize, pending: &mut Pending) -> Option<Bytes> {
        if pending.buf.is_empty() {
            if let Some(front) = self.queue.front() {
                if front.len() >= len {
                    return self.take_front(len); // Whole in one chunk: no copy.
                }
            }
            pending.buf.reserve(len.min(MAX_UPFRONT_RESERVE));
        }
        while pending.buf.len() < len {
            let part = self.take_front(len - pending.buf.len())?;
            pending.buf.extend_from_slice(&part);
        }
        Some(pending.buf.split().freeze())
    }

    /// How much of a value being assembled has arrived.
    pub(crate) fn received(pending: &Pending) -> usize {
        pending.buf.len()
    }

    /// The varint at the front once all of it has arrived: its value and body offset.
    pub(crate) fn take_varint(
        &mut self,
        pending: &mut PendingVarint,
    ) -> Result<Option<(u64, u64)>, WireError> {
        loop {
            let start = self.offset - pending.bytes.len() as u64;
            let Some(byte) = self.take_byte() else {
                return Ok(None);
            };
            pending.bytes.push(byte);
            // The error offset is informative only; a body beyond usize is not addressable.
            let at = usize::try_from(start).unwrap_or(usize::MAX);
            match decode_varint(&pending.bytes, at)? {
                Varint::Done(value, _) => {
                    pending.bytes.clear();
                    return Ok(Some((value, start)));
                }
                Varint::Incomplete if pending.bytes.len() >= MAX_VARINT_LEN => {
                    return Err(WireError::VarintTooLong { offset: at });
                }
                Varint::Incomplete => {}
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fed(parts: &[&'static [u8]]) -> Chunks {
        let mut chunks = Chunks::default();
        for part in parts {
            chunks.push(Bytes::from_static(part));
        }
        chunks
    }

    /// A length prefix is a claim: a few bytes of a value said to be 60 MiB reserve no more
    /// than the upfront cap (before the cap, the whole claim was reserved at once).
    #[test]
    fn a_claimed_length_reserves_at_most_the_upfront_cap() {
        let mut chunks = fed(&[b"0123456789"]);
        let mut pending = Pending::default();
        assert!(chunks.take_value(60 << 20, &mut pending).is_none());
        assert_eq!(Chunks::received(&pending), 10);
        assert!(
            pending.buf.capacity() <= MAX_UPFRONT_RESERVE,
            "{}",
            pending.buf.capacity()
        );
        // The value still assembles when its bytes do come, however they are split.
        let mut chunks = fed(&[b"ab", b"cdef", b"g"]);
        let mut pending = Pending::default();
        assert!(chunks
            .take_value(7, &mut pending)
            .is_some_and(|v| v == "abcdefg"));
    }

    #[test]
    fn a_value_in_one_chunk_is_not_copied() {
        let source = Bytes::from_static(b"abcdef");
        let mut chunks = Chunks::default();
        chunks.push(source.clone());
        let value = chunks
            .take_value(4, &mut Pending::default())
            .expect("whole");
        assert_eq!(&value[..], b"abcd");
        assert_eq!(value.as_ptr(), source.as_ptr(), "a slice of the chunk");
        assert_eq!(chunks.offset(), 4);
    }

    #[test]
    fn a_split_value_is_assembled_across_feeds() {
        let mut chunks = fed(&[b"ab"]);
        let mut pending = Pending::default();
        assert_eq!(chunks.take_value(5, &mut pending), None);
        assert_eq!(Chunks::received(&pending), 2);
        chunks.push(Bytes::from_static(b"c"));
        chunks.push(Bytes::from_static(b"def"));
        let value = chunks.take_value(5, &mut pending).expect("complete");
        assert_eq!(&value[..], b"abcde");
        assert_eq!(chunks.offset(), 5);
        assert_eq!(chunks.take_byte(), Some(b'f'));
        assert!(chunks.is_empty());
    }

    #[test]
    fn varints_and_skips_cross_chunks() {
        let mut chunks = fed(&[b"\x01\xac", b"", b"\x02zz"]);
        let mut pending = PendingVarint::default();
        assert_eq!(chunks.take_varint(&mut pending), Ok(Some((1, 0))));
        assert_eq!(chunks.take_varint(&mut pending), Ok(Some((300, 1))));
        assert_eq!(chunks.skip(5), 2);
        assert_eq!(chunks.offset(), 5);
        let mut long = fed(&[&[0xff; 6], &[0xff; 6]]);
        assert_eq!(
            long.take_varint(&mut pending),
            Err(WireError::VarintTooLong { offset: 0 })
        );
    }
}
