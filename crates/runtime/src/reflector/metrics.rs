//! What a reflector has done, counted for the metrics layer and for tests.
//!
//! Contract: every counter only grows; the reflector bumps them as it goes (relaxed atomics,
//! no lock) and [`ReflectorMetrics::snapshot`] reads them all at once into plain numbers. The
//! counters are shared behind an `Arc`, so an exporter can keep reading them while the
//! reflector runs.
//!
//! Beside the counters, [`SyncHealth`]: when the reflector last had a working list+watch.
//! It is in sync while a watch it opened has lasted a second (or delivered an event), and each
//! such moment is its last sync; a reflector whose watches keep failing — the 410 loop of an
//! API server restart, a server gone — is *stuck* once its last sync is older than twice its
//! backoff cap (60 s), which the runtime reports as a Warning, a gauge and a failing `/readyz`.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use parking_lot::Mutex;
use tokio::time::Instant;

use super::MIN_HEALTHY_WATCH;
use kube_gc_api::EventType;

/// When a reflector last had a working list+watch (tokio time, so tests run it paused).
#[derive(Debug)]
pub struct SyncHealth {
    /// Start-up, or the last moment a watch was known to work.
    last_synced: Instant,
    /// When the watch now open was opened.
    watching_since: Option<Instant>,
    /// How long without a sync makes the reflector stuck.
    stuck_after: Duration,
    /// Whether it was reported stuck and has not recovered since.
    reported_stuck: bool,
}

/// A change of a reflector's stuck state, to be logged once.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StuckChange {
    /// It has had no working list+watch for this long.
    BecameStuck(Duration),
    /// It works again.
    Recovered,
}

impl SyncHealth {
    fn new(now: Instant) -> SyncHealth {
        SyncHealth {
            last_synced: now,
            watching_since: None,
            stuck_after: Duration::from_secs(60),
            reported_stuck: false,
        }
    }

    /// How long since the reflector last had a working watch (zero while it has one).
    pub fn since_last_sync(&self, now: Instant) -> Duration {
        match self.watching_since {
            Some(opened) if now.duration_since(opened) >= MIN_HEALTHY_WATCH => Duration::ZERO,
            _ => now.duration_since(self.last_synced),
        }
    }

    /// Whether it has gone without a working watch for longer than it may.
    pub fn is_stuck(&self, now: Instant) -> bool {
        self.since_last_sync(now) > self.stuck_after
    }
}

/// Live counters of one reflector.
#[derive(Debug)]
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
    health: Mutex<SyncHealth>,
}

impl Default for ReflectorMetrics {
    fn default() -> Self {
        ReflectorMetrics {
            lists: AtomicU64::default(),
            relists: AtomicU64::default(),
            watch_lists: AtomicU64::default(),
            watch_list_fallbacks: AtomicU64::default(),
            watches: AtomicU64::default(),
            stalled_watches: AtomicU64::default(),
            backoffs: AtomicU64::default(),
            malformed_events: AtomicU64::default(),
            added: AtomicU64::default(),
            modified: AtomicU64::default(),
            deleted: AtomicU64::default(),
            bookmarks: AtomicU64::default(),
            errors: AtomicU64::default(),
            health: Mutex::new(SyncHealth::new(Instant::now())),
        }
    }
}

/// The counters at one moment.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct MetricsSnapshot {
    /// Complete lists delivered as `Replaced` (paged LISTs and streaming lists).
    pub lists: u64,
    /// Of those, the ones after the first of a reflector's run: each means a watch could not
    /// simply resume. (A shared source restarting for a late subscriber lists without relisting.)
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

    /// How long since the reflector last had a working watch (zero while it has one).
    pub fn since_last_sync(&self) -> Duration {
        self.health.lock().since_last_sync(Instant::now())
    }

    /// Whether it has had no working list+watch for longer than twice its backoff cap.
    pub fn is_stuck(&self) -> bool {
        self.health.lock().is_stuck(Instant::now())
    }

    pub(super) fn set_stuck_after(&self, after: Duration) {
        self.health.lock().stuck_after = after;
    }

    /// A watch stream was opened.
    pub(super) fn watch_opened(&self) {
        self.health.lock().watching_since = Some(Instant::now());
    }

    /// A watch delivered an event (not an error): it works.
    pub(super) fn watch_worked(&self) {
        self.health.lock().last_synced = Instant::now();
    }

    /// The open watch ended; if it had lasted long enough, it worked until now.
    pub(super) fn watch_ended(&self) {
        let now = Instant::now();
        let mut health = self.health.lock();
        if health
            .watching_since
            .take()
            .is_some_and(|opened| now.duration_since(opened) >= MIN_HEALTHY_WATCH)
        {
            health.last_synced = now;
        }
    }

    /// Whether it was reported stuck and has not been reported recovered since.
    pub(super) fn reported_stuck(&self) -> bool {
        self.health.lock().reported_stuck
    }

    /// Whether the stuck state changed since the last call: each change is reported once.
    pub(super) fn stuck_change(&self) -> Option<StuckChange> {
        let now = Instant::now();
        let mut health = self.health.lock();
        let stuck = health.is_stuck(now);
        if stuck == health.reported_stuck {
            return None;
        }
        health.reported_stuck = stuck;
        Some(if stuck {
            StuckChange::BecameStuck(health.since_last_sync(now))
        } else {
            StuckChange::Recovered
        })
    }

    /// A complete list was delivered; `relist` when its run had delivered one before.
    pub(super) fn listed(&self, relist: bool) {
        bump(&self.lists);
        if relist {
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

    #[tokio::test(start_paused = true)]
    async fn a_reflector_whose_watches_keep_failing_is_stuck_after_the_limit_and_says_so_once() {
        let m = ReflectorMetrics::default();
        m.set_stuck_after(Duration::from_secs(60));
        // A watch refused at once (the 410 loop): opened and ended within the second.
        for _ in 0..3 {
            m.watch_opened();
            m.watch_ended();
            tokio::time::advance(Duration::from_secs(25)).await;
        }
        assert!(m.is_stuck());
        assert_eq!(m.since_last_sync(), Duration::from_secs(75));
        assert_eq!(
            m.stuck_change(),
            Some(StuckChange::BecameStuck(Duration::from_secs(75)))
        );
        assert_eq!(m.stuck_change(), None, "reported once");
        // A watch that holds for a second is a sync, even with no event.
        m.watch_opened();
        tokio::time::advance(Duration::from_secs(1)).await;
        assert_eq!(m.since_last_sync(), Duration::ZERO);
        assert_eq!(m.stuck_change(), Some(StuckChange::Recovered));
        m.watch_ended();
        tokio::time::advance(Duration::from_secs(30)).await;
        assert_eq!(m.since_last_sync(), Duration::from_secs(30));
        assert!(!m.is_stuck());
    }

    #[tokio::test(start_paused = true)]
    async fn an_event_is_a_sync_even_on_a_short_watch() {
        let m = ReflectorMetrics::default();
        tokio::time::advance(Duration::from_secs(50)).await;
        m.watch_opened();
        m.watch_worked();
        m.watch_ended();
        tokio::time::advance(Duration::from_secs(20)).await;
        assert_eq!(m.since_last_sync(), Duration::from_secs(20));
    }

    #[test]
    fn only_lists_said_to_be_relists_count_as_relists() {
        let m = ReflectorMetrics::default();
        m.listed(false);
        assert_eq!(m.snapshot().relists, 0);
        m.listed(true);
        m.listed(false);
        let s = m.snapshot();
        assert_eq!((s.lists, s.relists), (3, 1));
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
