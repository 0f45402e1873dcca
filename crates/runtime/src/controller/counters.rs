//! [`ReconcileCounters`]: how often a controller's workers reconciled, failed and panicked,
//! kept as plain atomics for the metrics layer to export.
//!
//! Contract: counters only grow; each reconcile increments `reconciles` once and at most one of
//! `errors` or `panics`. Reads are individually atomic, not a consistent snapshot of all three.

use std::sync::atomic::{AtomicU64, Ordering};

/// Counts of one controller's reconciles by outcome; shared as `Arc<ReconcileCounters>`.
#[derive(Debug, Default)]
pub struct ReconcileCounters {
    reconciles: AtomicU64,
    errors: AtomicU64,
    panics: AtomicU64,
}

/// How one reconcile ended, for counting.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Outcome {
    Success,
    Error,
    Panic,
}

impl ReconcileCounters {
    /// Reconciles finished, whatever their outcome.
    pub fn reconciles(&self) -> u64 {
        self.reconciles.load(Ordering::Relaxed)
    }

    /// Reconciles that returned an error.
    pub fn errors(&self) -> u64 {
        self.errors.load(Ordering::Relaxed)
    }

    /// Reconciles that panicked.
    pub fn panics(&self) -> u64 {
        self.panics.load(Ordering::Relaxed)
    }

    pub(super) fn record(&self, outcome: Outcome) {
        self.reconciles.fetch_add(1, Ordering::Relaxed);
        match outcome {
            Outcome::Success => {}
            Outcome::Error => {
                self.errors.fetch_add(1, Ordering::Relaxed);
            }
            Outcome::Panic => {
                self.panics.fetch_add(1, Ordering::Relaxed);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_outcome_counts_one_reconcile() {
        let counters = ReconcileCounters::default();
        counters.record(Outcome::Success);
        counters.record(Outcome::Error);
        counters.record(Outcome::Panic);
        counters.record(Outcome::Error);
        assert_eq!(counters.reconciles(), 4);
        assert_eq!(counters.errors(), 2);
        assert_eq!(counters.panics(), 1);
    }
}
