//! Wall-clock time, injectable: where controllers and the simulated API server read "now".
//!
//! Contract: [`Clock::now`] is the only way time-based code (TTL-after-finished, the simulated
//! server's timestamps) learns the wall-clock time. Production runs use [`SystemClock`]. Tests
//! use [`ManualClock`], which moves only when told, or [`TokioClock`], which follows tokio's
//! clock: under a paused runtime (`#[tokio::test(start_paused = true)]`) one
//! `tokio::time::advance` moves both the wall time a controller reads and the timers it set, so a
//! test can let an hour pass for a TTL without sleeping and without the two drifting apart.

use std::sync::Arc;
use std::time::Duration;

use chrono::{DateTime, Utc};
use parking_lot::Mutex;

/// Sleeps until `at` on tokio's clock; forever if there is no `at` — the arm of a `select!`
/// whose deadline may be absent (the next probe, a watch's stall deadline).
pub async fn sleep_until_some(at: Option<tokio::time::Instant>) {
    match at {
        Some(at) => tokio::time::sleep_until(at).await,
        None => std::future::pending().await,
    }
}

/// A source of the current wall-clock time.
pub trait Clock: Send + Sync + std::fmt::Debug {
    /// The current time.
    fn now(&self) -> DateTime<Utc>;
}

/// A clock shared between the components that must agree on the time.
pub type SharedClock = Arc<dyn Clock>;

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

/// Wall-clock time that advances with tokio's clock: `start` plus the tokio time elapsed since
/// the clock was made. Under a paused tokio runtime it moves only with `tokio::time::advance`
/// (or auto-advance), exactly as the runtime's timers do; under a normal runtime it moves like
/// a monotonic clock.
#[derive(Debug, Clone, Copy)]
pub struct TokioClock {
    wall_at_origin: DateTime<Utc>,
    origin: tokio::time::Instant,
}

impl TokioClock {
    /// A clock reading `start` now.
    pub fn starting_at(start: DateTime<Utc>) -> TokioClock {
        TokioClock {
            wall_at_origin: start,
            origin: tokio::time::Instant::now(),
        }
    }

    /// A clock reading the system's wall time now.
    pub fn from_system() -> TokioClock {
        TokioClock::starting_at(Utc::now())
    }
}

impl Clock for TokioClock {
    fn now(&self) -> DateTime<Utc> {
        let elapsed = tokio::time::Instant::now().duration_since(self.origin);
        let elapsed = chrono::Duration::from_std(elapsed).unwrap_or(chrono::Duration::MAX);
        self.wall_at_origin
            .checked_add_signed(elapsed)
            .unwrap_or(self.wall_at_origin)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(text: &str) -> DateTime<Utc> {
        DateTime::parse_from_rfc3339(text)
            .map(|t| t.with_timezone(&Utc))
            .unwrap_or_default()
    }

    #[test]
    fn manual_clock_moves_only_when_told() {
        let start = at("2026-11-22T03:45:32Z");
        let clock = ManualClock::new(start);
        let shared = clock.clone();
        assert_eq!(clock.now(), start);
        shared.advance(Duration::from_secs(90));
        assert_eq!(clock.now(), at("2026-11-22T03:47:02Z"));
        clock.set(start);
        assert_eq!(shared.now(), start);
    }

    #[tokio::test(start_paused = true)]
    async fn tokio_clock_follows_the_paused_runtime() {
        let start = at("2026-11-22T03:45:32Z");
        let clock = TokioClock::starting_at(start);
        assert_eq!(clock.now(), start);
        tokio::time::advance(Duration::from_millis(1500)).await;
        assert_eq!(clock.now(), start + chrono::Duration::milliseconds(1500));
        let timer = tokio::time::sleep(Duration::from_secs(60));
        timer.await;
        assert_eq!(clock.now(), start + chrono::Duration::milliseconds(61_500));
    }
}
