//! Where the simulated server's wall-clock time comes from.
//!
//! Contract: the server stamps `creationTimestamp` and `deletionTimestamp` (and journal entries)
//! with [`Clock::now`]. Production runs use [`SystemClock`]; tests that exercise time-based logic
//! (TTL-after-finished) use a [`ManualClock`] they move forward themselves, so no test has to
//! wait in real time for an object to "age".

use std::sync::Arc;
use std::time::Duration;

use chrono::{DateTime, Utc};
use parking_lot::Mutex;

/// A source of the current wall-clock time.
pub trait Clock: Send + Sync + std::fmt::Debug {
    /// The current time.
    fn now(&self) -> DateTime<Utc>;
}

/// The real system clock.
#[derive(Debug, Default, Clone, Copy)]
pub struct SystemClock;

impl Clock for SystemClock {
    fn now(&self) -> DateTime<Utc> {
        Utc::now()
    }
}

/// A clock that only moves when told to; cheap to clone (clones share the same time).
#[derive(Debug, Clone)]
pub struct ManualClock {
    now: Arc<Mutex<DateTime<Utc>>>,
}

impl ManualClock {
    /// A clock frozen at `start`.
    pub fn new(start: DateTime<Utc>) -> ManualClock {
        ManualClock {
            now: Arc::new(Mutex::new(start)),
        }
    }

    /// Moves the clock forward.
    pub fn advance(&self, by: Duration) {
        let by = chrono::Duration::from_std(by).unwrap_or(chrono::Duration::MAX);
        let mut now = self.now.lock();
        *now = now.checked_add_signed(by).unwrap_or(*now);
    }

    /// Sets the clock to an exact time.
    pub fn set(&self, to: DateTime<Utc>) {
        *self.now.lock() = to;
    }
}

impl Clock for ManualClock {
    fn now(&self) -> DateTime<Utc> {
        *self.now.lock()
    }
}

/// Formats a time the way the API server writes `metav1.Time`: RFC 3339, whole seconds, `Z`.
pub fn format_time(at: DateTime<Utc>) -> String {
    at.to_rfc3339_opts(chrono::SecondsFormat::Secs, true)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn manual_clock_moves_only_when_told() {
        let start = DateTime::parse_from_rfc3339("2026-11-22T03:45:32Z")
            .map(|t| t.with_timezone(&Utc))
            .unwrap_or_default();
        let clock = ManualClock::new(start);
        let shared = clock.clone();
        assert_eq!(clock.now(), start);
        shared.advance(Duration::from_secs(90));
        assert_eq!(format_time(clock.now()), "2026-11-22T03:47:02Z");
    }

    #[test]
    fn formats_whole_seconds_in_utc() {
        let at = DateTime::parse_from_rfc3339("2026-11-22T03:45:32.987654Z")
            .map(|t| t.with_timezone(&Utc))
            .unwrap_or_default();
        assert_eq!(format_time(at), "2026-11-22T03:45:32Z");
    }
}
