//! What a reflector has done, counted for the metrics layer and for tests.
//!
//! Contract: every counter only grows; the reflector bumps them as it goes (relaxed atomics,
//! no lock) and [`ReflectorMetrics::snapshot`] reads them all at once into plain numbers. The
//! counters are shared behind an `Arc`, so an exporter can keep reading them while the
//! reflector runs.

use std::sync::atomic::{AtomicU64, Ordering};

use crate::api::EventType;

/// Live counters of one reflector.
#[derive(Debug, Default)]
pub struct ReflectorMetrics {
    lists: AtomicU64,
    relists: AtomicU64,
    watch_lists: AtomicU64,
    watch_list_fallbacks: AtomicU64,
    watches: AtomicU64,
    stalled_watches: AtomicU64,
    backoffs: AtomicU64,
    malformed_events: AtomicU64,
    added: AtomicU64,
    modified: AtomicU64,
    deleted: AtomicU64,
    bookmarks: AtomicU64,
    errors: AtomicU64,
}

/// The counters at one moment.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct MetricsSnapshot {
    /// Complete lists delivered as `Replaced` (paged LISTs and streaming lists).
    pub lists: u64,
    /// Of those, the ones after the first: each means a watch could not simply resume.
    pub relists: u64,
    /// Streaming lists (WatchList) started.
    pub watch_lists: u64,
    /// Streaming lists that failed or were refused, so a paged LIST was made instead.
    pub watch_list_fallbacks: u64,
    /// Watch requests made (a streaming list counts here too).
    pub watches: u64,
    /// Watches abandoned because they outlived their `timeoutSeconds` by the stall grace.
    pub stalled_watches: u64,
    /// Delays waited out after a failure.
    pub backoffs: u64,
    /// Watch lines that could not be decoded and were skipped.
    pub malformed_events: u64,
    /// `ADDED` events delivered.
    pub added: u64,
    /// `MODIFIED` events delivered.
    pub modified: u64,
    /// `DELETED` events delivered.
    pub deleted: u64,
    /// `BOOKMARK` events received.
    pub bookmarks: u64,
    /// `ERROR` events received.
    pub errors: u64,
}

impl ReflectorMetrics {
    /// All counters now.
    pub fn snapshot(&self) -> MetricsSnapshot {
        let read = |c: &AtomicU64| c.load(Ordering::Relaxed);
        MetricsSnapshot {
            lists: read(&self.lists),
            relists: read(&self.relists),
            watch_lists: read(&self.watch_lists),
            watch_list_fallbacks: read(&self.watch_list_fallbacks),
            watches: read(&self.watches),
            stalled_watches: read(&self.stalled_watches),
            backoffs: read(&self.backoffs),
            malformed_events: read(&self.malformed_events),
            added: read(&self.added),
            modified: read(&self.modified),
            deleted: read(&self.deleted),
            bookmarks: read(&self.bookmarks),
            errors: read(&self.errors),
        }
    }

    pub(super) fn listed(&self) {
        if bump(&self.lists) > 0 {
            bump(&self.relists);
        }
    }

    pub(super) fn watch_list_started(&self) {
        bump(&self.watch_lists);
    }

    pub(super) fn watch_list_fell_back(&self) {
        bump(&self.watch_list_fallbacks);
    }

    pub(super) fn watch_started(&self) {
        bump(&self.watches);
    }

    pub(super) fn stalled_watch(&self) {
        bump(&self.stalled_watches);
    }

    pub(super) fn backed_off(&self) {
        bump(&self.backoffs);
    }

    pub(super) fn malformed_event(&self) {
        bump(&self.malformed_events);
    }

    pub(super) fn event(&self, event_type: EventType) {
        bump(match event_type {
            EventType::Added => &self.added,
            EventType::Modified => &self.modified,
            EventType::Deleted => &self.deleted,
            EventType::Bookmark => &self.bookmarks,
            EventType::Error => &self.errors,
        });
    }
}

/// Adds one, answering the previous value.
fn bump(counter: &AtomicU64) -> u64 {
    counter.fetch_add(1, Ordering::Relaxed)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_lists_after_the_first_are_relists() {
        let m = ReflectorMetrics::default();
        m.listed();
        assert_eq!(m.snapshot().relists, 0);
        m.listed();
        m.listed();
        let s = m.snapshot();
        assert_eq!((s.lists, s.relists), (3, 2));
    }

    #[test]
    fn events_are_counted_by_type() {
        let m = ReflectorMetrics::default();
        for t in [
            EventType::Added,
            EventType::Added,
            EventType::Modified,
            EventType::Deleted,
            EventType::Bookmark,
            EventType::Error,
        ] {
            m.event(t);
        }
        let s = m.snapshot();
        assert_eq!(
            (s.added, s.modified, s.deleted, s.bookmarks, s.errors),
            (2, 1, 1, 1, 1)
        );
    }
}
