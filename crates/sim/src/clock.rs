//! Where the simulated server's wall-clock time comes from: the crate's [`crate::clock`], re-exported.
//!
//! Contract: the server stamps `creationTimestamp` and `deletionTimestamp` (and journal entries)
//! with [`Clock::now`]. Production runs use [`SystemClock`]; tests that exercise time-based logic
//! (TTL-after-finished) use a [`ManualClock`] they move forward themselves, so no test has to
//! wait in real time for an object to "age".

use chrono::{DateTime, Utc};

pub use kube_gc_core::clock::{Clock, ManualClock, SystemClock, TokioClock};

/// Formats a time the way the API server writes `metav1.Time`: RFC 3339, whole seconds, `Z`.
pub fn format_time(at: DateTime<Utc>) -> String {
    at.to_rfc3339_opts(chrono::SecondsFormat::Secs, true)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

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
