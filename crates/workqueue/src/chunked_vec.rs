//! [`ChunkedVec`]: a growable array that never moves what it already holds.
//!
//! A `Vec` grows by allocating twice the room and copying everything across. Amortised that is
//! cheap, but each growth is one long step: at a million timers the queue's slab and heap copied
//! tens of megabytes (and faulted in fresh pages) in one go, 33 ms measured, with the queue's lock
//! held, so every worker and producer stalled behind it (kube-gc's `docs/performance.md`).
//!
//! `ChunkedVec` stores its elements in fixed-size chunks of [`CHUNK_LEN`] and grows by one chunk
//! at a time. No growth step costs more than one chunk's allocation, and an element never moves
//! once pushed. The price is one extra indirection per access, into a table of chunk pointers
//! that is small enough (a few KiB at a million elements) to stay in cache.
//!
//! *Over the reference* (`reference.rs`, whose collections grow as `std` grows them): the fast
//! queue's slab, free list and timer heap live in `ChunkedVec`s, which buys no pause longer than
//! one chunk's allocation while the queue's lock is held.
//!
//! Like `Vec`, it keeps the room it grew into after `pop`, so a queue that fills and drains
//! repeatedly allocates nothing after the first fill; [`clear`](ChunkedVec::clear) gives it back.

use std::ops::{Index, IndexMut};

/// Elements per chunk: small enough that allocating a chunk is quick (96 KiB of 24-byte timers),
/// large enough that the table of chunks stays tiny.
const CHUNK_BITS: u32 = 12;
/// Elements per chunk (4096).
pub(super) const CHUNK_LEN: usize = 1 << CHUNK_BITS;

/// A growable array in fixed-size chunks; see the module documentation.
#[derive(Debug)]
pub(super) struct ChunkedVec<T> {
    /// Element `i` is in chunk `i / CHUNK_LEN`: the chunks before the last element's are full,
    /// those after it are empty (room kept after `pop`). Each was allocated with room for exactly
    /// `CHUNK_LEN` elements and never holds more, so it never reallocates.
    chunks: Vec<Vec<T>>,
    len: usize,
}

impl<T> Default for ChunkedVec<T> {
    fn default() -> Self {
        ChunkedVec {
            chunks: Vec::new(),
            len: 0,
        }
    }
}

impl<T> ChunkedVec<T> {
    /// Elements held.
    pub(super) fn len(&self) -> usize {
        self.len
    }

    pub(super) fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Appends `value` and returns its index.
    pub(super) fn push(&mut self, value: T) -> usize {
        let index = self.len;
        let (chunk, _) = locate(index);
        if chunk == self.chunks.len() {
            self.chunks.push(Vec::with_capacity(CHUNK_LEN));
        }
        self.chunks[chunk].push(value);
        self.len += 1;
        index
    }

    /// Removes and returns the last element. The chunk it leaves keeps its room.
    pub(super) fn pop(&mut self) -> Option<T> {
        let last = self.len.checked_sub(1)?;
        let value = self.chunks[locate(last).0].pop();
        self.len = last;
        value
    }

    /// The element at `index`, if there is one.
    pub(super) fn get(&self, index: usize) -> Option<&T> {
        let (chunk, offset) = locate(index);
        self.chunks.get(chunk)?.get(offset)
    }

    /// The element at `index`, to change.
    pub(super) fn get_mut(&mut self, index: usize) -> Option<&mut T> {
        let (chunk, offset) = locate(index);
        self.chunks.get_mut(chunk)?.get_mut(offset)
    }

    /// Shortens the array to `len` elements (no-op if it is not longer).
    pub(super) fn truncate(&mut self, len: usize) {
        while self.len > len {
            let _ = self.pop();
        }
    }

    /// Drops every element and gives the chunks back to the allocator.
    pub(super) fn clear(&mut self) {
        self.chunks = Vec::new();
        self.len = 0;
    }

    /// Every element, in index order.
    #[cfg(test)]
    pub(super) fn iter(&self) -> impl Iterator<Item = &T> {
        self.chunks.iter().flatten()
    }
}

/// The chunk element `index` lives in, and its offset there.
fn locate(index: usize) -> (usize, usize) {
    (index >> CHUNK_BITS, index & (CHUNK_LEN - 1))
}

impl<T> Index<usize> for ChunkedVec<T> {
    type Output = T;

    /// # Panics
    ///
    /// If `index` is out of bounds, like a slice.
    fn index(&self, index: usize) -> &T {
        let (chunk, offset) = locate(index);
        &self.chunks[chunk][offset]
    }
}

impl<T> IndexMut<usize> for ChunkedVec<T> {
    fn index_mut(&mut self, index: usize) -> &mut T {
        let (chunk, offset) = locate(index);
        &mut self.chunks[chunk][offset]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn behaves_like_a_vec_across_chunk_boundaries() {
        let mut chunked = ChunkedVec::default();
        let mut plain = Vec::new();
        for i in 0..3 * CHUNK_LEN + 7 {
            assert_eq!(chunked.push(i), i);
            plain.push(i);
        }
        assert_eq!(chunked.len(), plain.len());
        assert!(chunked.iter().eq(plain.iter()));
        chunked[CHUNK_LEN] = 42;
        assert_eq!(chunked.get(CHUNK_LEN), Some(&42));
        assert_eq!(chunked.get(chunked.len()), None);
        for _ in 0..CHUNK_LEN + 8 {
            assert_eq!(chunked.pop(), plain.pop());
        }
        assert_eq!(chunked.len(), 2 * CHUNK_LEN - 1);
        // Refilling the chunks it kept.
        for i in 0..10 {
            chunked.push(i);
        }
        assert_eq!(chunked.get(2 * CHUNK_LEN + 8), Some(&9));
        chunked.truncate(1);
        assert!(chunked.iter().eq([0].iter()));
        chunked.clear();
        assert!(chunked.is_empty() && chunked.pop().is_none());
    }

    #[test]
    fn an_element_never_moves() {
        let mut chunked = ChunkedVec::default();
        chunked.push(0u64);
        let first = std::ptr::from_ref(&chunked[0]);
        for i in 1..5 * CHUNK_LEN as u64 {
            chunked.push(i);
        }
        assert_eq!(std::ptr::from_ref(&chunked[0]), first);
    }
}
