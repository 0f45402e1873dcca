//! The waiting room of the delaying queue: a binary min-heap of `(ready time, key)` timers.
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

use std::cmp::{Ordering, Reverse};
use std::collections::BinaryHeap;
use tokio::time::Instant;

/// One scheduled delivery of `key` at `ready_at`.
#[derive(Debug)]
pub(super) struct Timer<K> {
    pub(super) ready_at: Instant,
    pub(super) seq: u64,
    pub(super) key: K,
}

// Timers are ordered by time, then by insertion; the key plays no part (it need not be `Ord`).
impl<K> Ord for Timer<K> {
    fn cmp(&self, other: &Self) -> Ordering {
        (self.ready_at, self.seq).cmp(&(other.ready_at, other.seq))
    }
}
impl<K> PartialOrd for Timer<K> {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}
impl<K> PartialEq for Timer<K> {
    fn eq(&self, other: &Self) -> bool {
        self.seq == other.seq
    }
}
impl<K> Eq for Timer<K> {}

/// A min-heap of timers, earliest first.
#[derive(Debug)]
pub(super) struct DelayHeap<K> {
    // `BinaryHeap` is a max-heap; `Reverse` turns it into the min-heap we need.
    heap: BinaryHeap<Reverse<Timer<K>>>,
    next_seq: u64,
}

impl<K> DelayHeap<K> {
    pub(super) fn new() -> Self {
        DelayHeap {
            heap: BinaryHeap::new(),
            next_seq: 0,
        }
    }

    /// Schedules `key` at `ready_at` and returns the new timer's sequence number.
    pub(super) fn push(&mut self, key: K, ready_at: Instant) -> u64 {
        let seq = self.next_seq;
        self.next_seq += 1;
        self.heap.push(Reverse(Timer { ready_at, seq, key }));
        seq
    }

    /// The earliest timer, stale or not.
    pub(super) fn peek(&self) -> Option<&Timer<K>> {
        self.heap.peek().map(|Reverse(timer)| timer)
    }

    /// Removes and returns the earliest timer.
    pub(super) fn pop(&mut self) -> Option<Timer<K>> {
        self.heap.pop().map(|Reverse(timer)| timer)
    }

    /// Timers in the heap, stale ones included.
    pub(super) fn len(&self) -> usize {
        self.heap.len()
    }

    /// Keeps only the timers `keep` approves of (O(n); used to sweep out stale timers).
    pub(super) fn retain(&mut self, mut keep: impl FnMut(&Timer<K>) -> bool) {
        self.heap.retain(|Reverse(timer)| keep(timer));
    }

    /// Every timer, in no particular order.
    #[cfg(test)]
    pub(super) fn iter(&self) -> impl Iterator<Item = &Timer<K>> {
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
    use std::time::Duration;

    #[test]
    fn pops_earliest_first_and_ties_in_insertion_order() {
        let t0 = Instant::now();
        let mut heap = DelayHeap::new();
        heap.push("late", t0 + Duration::from_secs(2));
        heap.push("tie-1", t0 + Duration::from_secs(1));
        heap.push("early", t0);
        heap.push("tie-2", t0 + Duration::from_secs(1));
        let order: Vec<&str> = std::iter::from_fn(|| heap.pop().map(|t| t.key)).collect();
        assert_eq!(order, ["early", "tie-1", "tie-2", "late"]);
    }

    #[test]
    fn retain_sweeps_and_sequence_numbers_stay_unique() {
        let t0 = Instant::now();
        let mut heap = DelayHeap::new();
        let a = heap.push("a", t0);
        let b = heap.push("b", t0);
        assert_ne!(a, b);
        heap.retain(|t| t.seq != a);
        assert_eq!(heap.len(), 1);
        assert_eq!(heap.peek().map(|t| t.key), Some("b"));
        heap.clear();
        assert!(heap.pop().is_none());
    }
}
