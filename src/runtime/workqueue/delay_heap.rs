//! The waiting room of the delaying queue: a binary min-heap of timers, each a
//! `(ready time, sequence number, key slot)` triple of 24 bytes.
//!
//! Times are nanoseconds since the queue's epoch (a `u64` covers 584 years) and keys are their
//! [`SlotId`] in the key table, so a timer owns nothing: pushing one allocates nothing beyond the
//! heap's own amortised growth, and comparing two compares integers.
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

use super::key_table::SlotId;
use std::cmp::Reverse;
use std::collections::BinaryHeap;

/// One scheduled delivery of the key in `slot` at `ready_at`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(super) struct Timer {
    // Field order is the ordering: time, then insertion.
    /// Nanoseconds since the queue's epoch.
    pub(super) ready_at: u64,
    pub(super) seq: u64,
    pub(super) slot: SlotId,
}

/// A min-heap of timers, earliest first.
#[derive(Debug, Default)]
pub(super) struct DelayHeap {
    // `BinaryHeap` is a max-heap; `Reverse` turns it into the min-heap we need.
    heap: BinaryHeap<Reverse<Timer>>,
    next_seq: u64,
}

impl DelayHeap {
    /// Schedules `slot` at `ready_at` and returns the new timer's sequence number.
    pub(super) fn push(&mut self, slot: SlotId, ready_at: u64) -> u64 {
        let seq = self.next_seq;
        self.next_seq += 1;
        self.heap.push(Reverse(Timer {
            ready_at,
            seq,
            slot,
        }));
        seq
    }

    /// The earliest timer, stale or not.
    pub(super) fn peek(&self) -> Option<Timer> {
        self.heap.peek().map(|Reverse(timer)| *timer)
    }

    /// Removes and returns the earliest timer.
    pub(super) fn pop(&mut self) -> Option<Timer> {
        self.heap.pop().map(|Reverse(timer)| timer)
    }

    /// Timers in the heap, stale ones included.
    pub(super) fn len(&self) -> usize {
        self.heap.len()
    }

    /// Keeps only the timers `keep` approves of (O(n); used to sweep out stale timers).
    pub(super) fn retain(&mut self, mut keep: impl FnMut(&Timer) -> bool) {
        self.heap.retain(|Reverse(timer)| keep(timer));
    }

    /// Every timer, in no particular order.
    #[cfg(test)]
    pub(super) fn iter(&self) -> impl Iterator<Item = &Timer> {
        self.heap.iter().map(|Reverse(timer)| timer)
    }

    /// Drops every timer.
    pub(super) fn clear(&mut self) {
        self.heap.clear();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pops_earliest_first_and_ties_in_insertion_order() {
        let mut heap = DelayHeap::default();
        heap.push(0, 2_000); // "late"
        heap.push(1, 1_000); // "tie-1"
        heap.push(2, 0); // "early"
        heap.push(3, 1_000); // "tie-2"
        let order: Vec<SlotId> = std::iter::from_fn(|| heap.pop().map(|t| t.slot)).collect();
        assert_eq!(order, [2, 1, 3, 0]);
    }

    #[test]
    fn retain_sweeps_and_sequence_numbers_stay_unique() {
        let mut heap = DelayHeap::default();
        let a = heap.push(0, 5);
        let b = heap.push(1, 5);
        assert_ne!(a, b);
        heap.retain(|t| t.seq != a);
        assert_eq!(heap.len(), 1);
        assert_eq!(heap.peek().map(|t| t.slot), Some(1));
        heap.clear();
        assert!(heap.pop().is_none());
    }

    #[test]
    fn a_timer_is_24_bytes() {
        assert_eq!(std::mem::size_of::<Timer>(), 24);
    }
}
