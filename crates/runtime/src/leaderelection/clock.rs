//! [`WallClock`]: the wall-clock times written to the Lease, derived from tokio's clock.
//!
//! Contract: every decision of the elector is taken on tokio's monotonic [`Instant`] (as
//! client-go decides on its local `observedTime`, never on the times in the Lease, so clock skew
//! between replicas cannot cause two leaders). The `acquireTime`/`renewTime` written for humans
//! are the wall time at creation plus tokio time elapsed since, so on tokio's paused clock they
//! move exactly as far as the test advances time.

use chrono::{DateTime, Utc};
use tokio::time::Instant;

use kube_gc_api::MicroTime;

/// Wall-clock time anchored to a tokio instant.
#[derive(Clone, Copy, Debug)]
pub struct WallClock {
    wall_at_start: DateTime<Utc>,
    start: Instant,
}

impl WallClock {
    /// A clock reading the system time now.
    pub fn system() -> WallClock {
        WallClock::starting_at(Utc::now())
    }

    /// A clock that reads `wall_at_start` now and moves with tokio's clock.
    pub fn starting_at(wall_at_start: DateTime<Utc>) -> WallClock {
        WallClock {
            wall_at_start,
            start: Instant::now(),
        }
    }

    /// The current wall-clock time, as a Lease timestamp.
    pub fn now(&self) -> MicroTime {
        let elapsed = chrono::Duration::from_std(self.start.elapsed()).unwrap_or_default();
        MicroTime(self.wall_at_start + elapsed)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[tokio::test(start_paused = true)]
    async fn moves_with_tokios_clock() {
        let start = DateTime::parse_from_rfc3339("2026-11-22T00:00:00Z")
            .map(|t| t.with_timezone(&Utc))
            .unwrap_or_default();
        let clock = WallClock::starting_at(start);
        tokio::time::advance(Duration::from_millis(2_500)).await;
        assert_eq!(clock.now().to_wire(), "2026-11-22T00:00:02.500000Z");
    }
}
