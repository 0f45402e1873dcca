//! The waiting room of the delaying queue: a binary min-heap of timers, each a
//! `(ready time, sequence number, key)` triple — 24 bytes with the queue's 4-byte key handles.
//!
//! *What it adds over the reference* (`reference.rs` keeps its timers in a `BTreeMap` of
//! `(time, number) → key` beside a per-key map of each key's timer, and removes a replaced timer
//! at once): a flat heap of small `Copy` triples. Times are nanoseconds since the queue's epoch
//! (a `u64` covers 584 years) and keys are the key table's [`KeyId`](super::key_table::KeyId)s,
//! so a timer owns nothing: pushing one allocates nothing but, now and then, the heap's next
//! chunk, and comparing two compares integers. The heap is generic over the key handle only so
//! that it knows nothing of the key table.
//!
//! The heap knows nothing about which timers still matter. Each timer carries a sequence number;
//! the queue remembers, per key, the sequence number of the one timer it still wants, and treats
//! every other timer for that key as *stale*. Replacing or cancelling a timer is therefore O(1)
//! (forget its number) instead of an O(n) search through the heap — "lazy deletion". Stale timers
//! are discarded when they reach the top, or all at once by [`DelayHeap::retain`] when they start
//! to outnumber the live ones.
//!
//! Timers with equal ready times pop in insertion order (the sequence number breaks the tie), so
//! keys added with the same delay are delivered FIFO like everything else in the queue.
//!
//! The heap is written out here (sift up, sift down) rather than taken from `std`'s `BinaryHeap`
//! because it lives in a [`ChunkedVec`]: a `Vec` under the heap doubled in one step at a million
//! timers, copying 24 MB with the queue's lock held; chunks grow 96 KiB at a time.

use super::chunked_vec::ChunkedVec;
/// One scheduled delivery of `key` at `ready_at`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(super) struct Timer<T> {
    // Field order is the ordering: time, then insertion.
    /// Nanoseconds since the queue's epoch.
    pub(super) ready_at: u64,
    pub(super) seq: u64,
    pub(super) key: T,
}

/// A min-heap of timers, earliest first: every timer is no later than its two children, the
/// children of position `i` being `2i + 1` and `2i + 2`.
#[derive(Debug)]
pub(super) struct DelayHeap<T> {
    timers: ChunkedVec<Timer<T>>,
    next_seq: u64,
}

impl<T> Default for DelayHeap<T> {
    fn default() -> Self {
        DelayHeap {
            timers: ChunkedVec::default(),
            next_seq: 0,
        }
    }
}

impl<T: Copy + Ord> DelayHeap<T> {
    /// Schedules `key` at `ready_at` and returns the new timer's sequence number.
    pub(super) fn push(&mut self, key: T, ready_at: u64) -> u64 {
        let seq = self.next_seq;
        self.next_seq += 1;
        let position = self.timers.push(Timer { ready_at, seq, key });
        self.sift_up(position);
        seq
    }

    /// The earliest timer, stale or not.
    pub(super) fn peek(&self) -> Option<Timer<T>> {
        self.timers.get(0).copied()
    }

    /// Removes and returns the earliest timer.
    pub(super) fn pop(&mut self) -> Option<Timer<T>> {
        let last = self.timers.pop()?;
        if self.timers.is_empty() {
            return Some(last);
        }
        // The last timer fills the hole the earliest leaves at the top, then sinks into place.
        let earliest = std::mem::replace(&mut self.timers[0], last);
        self.sift_down(0);
        Some(earliest)
    }

    /// Timers in the heap, stale ones included.
    pub(super) fn len(&self) -> usize {
        self.timers.len()
    }

    /// Keeps only the timers `keep` approves of, then rebuilds the heap (O(n); used to sweep out
    /// stale timers).
    pub(super) fn retain(&mut self, mut keep: impl FnMut(&Timer<T>) -> bool) {
        let mut kept = 0;
        for position in 0..self.timers.len() {
            let timer = self.timers[position];
            if keep(&timer) {
                self.timers[kept] = timer;
                kept += 1;
            }
        }
        self.timers.truncate(kept);
        // Floyd's construction: sift down every parent, the deepest first.
        for position in (0..kept / 2).rev() {
            self.sift_down(position);
        }
    }

    /// Every timer, in no particular order.
    #[cfg(test)]
    pub(super) fn iter(&self) -> impl Iterator<Item = &Timer<T>> {
        self.timers.iter()
    }

    /// Drops every timer and the room they took.
    pub(super) fn clear(&mut self) {
        self.timers.clear();
    }

    /// Moves the timer at `position` up until its parent is no later than it.
    fn sift_up(&mut self, mut position: usize) {
        let timer = self.timers[position];
        while position > 0 {
            let parent = (position - 1) / 2;
            let above = self.timers[parent];
            if above <= timer {
                break;
            }
            self.timers[position] = above;
            position = parent;
        }
        self.timers[position] = timer;
    }

    /// Moves the timer at `position` down until both its children are no earlier than it.
    fn sift_down(&mut self, mut position: usize) {
        let len = self.timers.len();
        let timer = self.timers[position];
        loop {
            let left = 2 * position + 1;
            if left >= len {
                break;
            }
            let right = left + 1;
            let child = if right < len && self.timers[right] < self.timers[left] {
                right
            } else {
                left
            };
            let below = self.timers[child];
            if timer <= below {
                break;
            }
            self.timers[position] = below;
            position = child;
        }
        self.timers[position] = timer;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pops_earliest_first_and_ties_in_insertion_order() {
        let mut heap = DelayHeap::<u32>::default();
        heap.push(0, 2_000); // "late"
        heap.push(1, 1_000); // "tie-1"
        heap.push(2, 0); // "early"
        heap.push(3, 1_000); // "tie-2"
        let order: Vec<u32> = std::iter::from_fn(|| heap.pop().map(|t| t.key)).collect();
        assert_eq!(order, [2, 1, 3, 0]);
    }

    #[test]
    fn retain_sweeps_and_sequence_numbers_stay_unique() {
        let mut heap = DelayHeap::<u32>::default();
        let a = heap.push(0, 5);
        let b = heap.push(1, 5);
        assert_ne!(a, b);
        heap.retain(|t| t.seq != a);
        assert_eq!(heap.len(), 1);
        assert_eq!(heap.peek().map(|t| t.key), Some(1));
        heap.clear();
        assert!(heap.pop().is_none());
    }

    #[test]
    fn pops_in_order_whatever_the_pushes_and_sweeps() {
        let mut heap = DelayHeap::<u32>::default();
        let mut expected = Vec::new();
        // Enough timers to span several chunks; ready times scrambled, with repeats.
        for i in 0..10_000u32 {
            let ready_at = u64::from(i.wrapping_mul(2_654_435_761) % 5_000);
            let seq = heap.push(i, ready_at);
            expected.push(Timer {
                ready_at,
                seq,
                key: i,
            });
        }
        heap.retain(|t| t.key % 3 != 0);
        expected.retain(|t| t.key % 3 != 0);
        for _ in 0..1_000 {
            let _ = heap.pop();
        }
        expected.sort();
        let rest: Vec<Timer<u32>> = std::iter::from_fn(|| heap.pop()).collect();
        assert_eq!(rest, expected[1_000..]);
    }

    #[test]
    fn a_timer_is_24_bytes() {
        assert_eq!(std::mem::size_of::<Timer<u32>>(), 24);
    }
}
