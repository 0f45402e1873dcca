//! Start times of the work in progress, kept apart from the per-key map so that questions about
//! *all* work in progress (`unfinished_work_seconds`, `longest_running_processor_seconds`, the
//! debug snapshot) cost O(workers), not O(keys known to the queue).
//!
//! A tiny slab: `start` hands out a slot holding the start time, `finish` frees it for reuse.
//! The slab never grows beyond the highest number of keys processed at once.
//!
//! *Over the reference* (`reference.rs`, which has only its `processing` set and no metrics): the
//! start times the work-in-progress metrics need, kept where they cost O(workers) to read.

use std::time::Duration;
use tokio::time::Instant;

/// Handle to one piece of work in progress (a `u32` keeps the per-key state small; four billion
/// keys in progress at once is not a real limit).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Slot(u32);

/// Start times of the work in progress.
#[derive(Debug, Default)]
pub(super) struct InFlight {
    starts: Vec<Option<Instant>>,
    free: Vec<u32>,
    count: usize,
}

/// The age of the work in progress.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct UnfinishedWork {
    /// Sum of the ages of all work in progress (`unfinished_work_seconds`).
    pub total: Duration,
    /// Age of the oldest work in progress (`longest_running_processor_seconds`).
    pub longest: Duration,
}

impl InFlight {
    /// Records work starting at `now`.
    pub(super) fn start(&mut self, now: Instant) -> Slot {
        self.count += 1;
        match self.free.pop() {
            Some(index) => {
                self.starts[index as usize] = Some(now);
                Slot(index)
            }
            None => {
                let index = self.starts.len() as u32;
                self.starts.push(Some(now));
                Slot(index)
            }
        }
    }

    /// Records that the work in `slot` finished; returns when it started.
    pub(super) fn finish(&mut self, slot: Slot) -> Option<Instant> {
        let started = self.starts.get_mut(slot.0 as usize)?.take()?;
        self.free.push(slot.0);
        self.count -= 1;
        Some(started)
    }

    /// Pieces of work in progress.
    pub(super) fn len(&self) -> usize {
        self.count
    }

    /// Total and longest age of the work in progress at `now`.
    pub(super) fn ages(&self, now: Instant) -> UnfinishedWork {
        let ages = self
            .starts
            .iter()
            .flatten()
            .map(|start| now.saturating_duration_since(*start));
        ages.fold(UnfinishedWork::default(), |acc, age| UnfinishedWork {
            total: acc.total + age,
            longest: acc.longest.max(age),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slots_are_reused_and_ages_cover_only_live_work() {
        let t0 = Instant::now();
        let s = Duration::from_secs;
        let mut in_flight = InFlight::default();
        let a = in_flight.start(t0);
        let b = in_flight.start(t0 + s(1));
        assert_eq!(in_flight.len(), 2);
        assert_eq!(
            in_flight.ages(t0 + s(3)),
            UnfinishedWork {
                total: s(5),
                longest: s(3)
            }
        );
        assert_eq!(in_flight.finish(a), Some(t0));
        assert_eq!(in_flight.finish(a), None, "a slot finishes once");
        let c = in_flight.start(t0 + s(2));
        assert_eq!(c, a, "freed slot reused");
        assert_eq!(in_flight.finish(b), Some(t0 + s(1)));
        assert_eq!(in_flight.len(), 1);
        assert_eq!(
            in_flight.ages(t0 + s(3)),
            UnfinishedWork {
                total: s(1),
                longest: s(1)
            }
        );
    }
}
