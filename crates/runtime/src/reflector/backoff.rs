//! How long the reflector waits after a failure: client-go's reflector backoff.
//!
//! Contract:
//! - The first delay is drawn from `[initial, 2 × initial)`; each later one doubles the base,
//!   whose growth stops at `cap`, and is drawn from `[base, 2 × base)` (jitter factor 1.0). With
//!   client-go's numbers (800 ms, ×2, cap 30 s) the delays run 0.8–1.6 s, 1.6–3.2 s, … and
//!   settle in 30–60 s: the cap bounds the base, the jitter then spreads clients apart, exactly
//!   as `wait.Backoff.Step` does.
//! - If no delay was handed out for `reset_after` (2 min), the loop has been healthy and the
//!   next failure starts again from `initial`.
//! - [`Backoff::reset`] starts it again at once, and the first failure after a reset is retried
//!   without delay. The reflector resets it when a watch has worked (a failure then is a new
//!   incident: a restart's 410 is relisted at once, not after whatever an earlier incident
//!   grew the backoff to) and when the API server answers again after an outage — its return
//!   announced, or one of the loop's own requests answered — since failures that only met the
//!   outage said nothing about the loop. A loop that keeps failing — a relist
//!   whose watch gets 410 at once, again and again — never resets it, and backs off as before.
//! - A delay the server asked for (`Retry-After`) is honoured up to `cap`: the wait is the
//!   longer of the two, but a server asking for more than `cap` waits only `cap`, so one bad
//!   header cannot stop an informer for hours.
//! - Time is tokio's (so tests run it on the paused clock) and the jitter comes from an
//!   injectable seeded RNG, so a test can predict every delay.

use std::time::Duration;

use rand::rngs::StdRng;
use rand::Rng;
use tokio::time::Instant;

/// The numbers of a [`Backoff`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BackoffConfig {
    /// The base of the first delay (client-go: 800 ms).
    pub initial: Duration,
    /// The largest base; later delays are drawn from `[cap, 2 × cap)` (client-go: 30 s).
    pub cap: Duration,
    /// A loop that handed out no delay for this long starts again from `initial` (client-go:
    /// 2 min).
    pub reset_after: Duration,
}

impl Default for BackoffConfig {
    fn default() -> Self {
        BackoffConfig {
            initial: Duration::from_millis(800),
            cap: Duration::from_secs(30),
            reset_after: Duration::from_secs(120),
        }
    }
}

/// Exponential backoff with jitter, reset after a healthy spell.
#[derive(Debug)]
pub struct Backoff {
    config: BackoffConfig,
    /// The base of the next delay.
    base: Duration,
    /// When the last delay was handed out.
    last: Option<Instant>,
    /// The next failure is the first since a reset: retry at once.
    fresh: bool,
    rng: StdRng,
}

impl Backoff {
    /// A backoff drawing its jitter from `rng`.
    pub fn new(config: BackoffConfig, rng: StdRng) -> Self {
        Backoff {
            config,
            base: config.initial,
            last: None,
            fresh: false,
            rng,
        }
    }

    /// Starts the sequence again: the next failure is retried at once (unless the server asked
    /// for a wait), the one after it waits `[initial, 2 × initial)`, and so on.
    pub fn reset(&mut self) {
        self.base = self.config.initial;
        self.fresh = true;
    }

    /// The delay before the next attempt, at least `retry_after` (clamped to the cap) when the
    /// server asked for one.
    pub fn next_delay(&mut self, retry_after: Option<Duration>) -> Duration {
        let now = Instant::now();
        if self
            .last
            .is_some_and(|last| now.duration_since(last) > self.config.reset_after)
        {
            self.base = self.config.initial;
        }
        self.last = Some(now);
        let asked = retry_after.unwrap_or_default().min(self.config.cap);
        if std::mem::take(&mut self.fresh) {
            return asked;
        }
        let base = self.base;
        self.base = (base * 2).min(self.config.cap);
        let jittered = base.mul_f64(1.0 + self.rng.random::<f64>());
        jittered.max(asked)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;

    fn backoff() -> Backoff {
        Backoff::new(BackoffConfig::default(), StdRng::seed_from_u64(7))
    }

    fn within(delay: Duration, base_ms: u64) -> bool {
        let base = Duration::from_millis(base_ms);
        delay >= base && delay < base * 2
    }

    #[tokio::test(start_paused = true)]
    async fn delays_double_from_800ms_with_jitter_and_stop_growing_at_the_cap() {
        let mut b = backoff();
        for base_ms in [800, 1_600, 3_200, 6_400, 12_800, 25_600, 30_000, 30_000] {
            let delay = b.next_delay(None);
            assert!(within(delay, base_ms), "{delay:?} for base {base_ms} ms");
        }
    }

    #[tokio::test(start_paused = true)]
    async fn two_healthy_minutes_start_the_sequence_again() {
        let mut b = backoff();
        b.next_delay(None);
        b.next_delay(None);
        tokio::time::advance(Duration::from_secs(119)).await;
        assert!(within(b.next_delay(None), 3_200), "not yet reset");
        tokio::time::advance(Duration::from_secs(121)).await;
        assert!(within(b.next_delay(None), 800), "reset");
    }

    #[tokio::test(start_paused = true)]
    async fn after_a_reset_the_first_failure_is_retried_at_once_and_the_sequence_starts_over() {
        let mut b = backoff();
        for _ in 0..6 {
            b.next_delay(None);
        }
        b.reset();
        assert_eq!(b.next_delay(None), Duration::ZERO);
        assert!(within(b.next_delay(None), 800));
        assert!(within(b.next_delay(None), 1_600));
        b.reset();
        let asked = Duration::from_secs(2);
        assert_eq!(
            b.next_delay(Some(asked)),
            asked,
            "a wait the server asked for stands"
        );
    }

    #[tokio::test(start_paused = true)]
    async fn retry_after_wins_when_longer() {
        let mut b = backoff();
        assert_eq!(
            b.next_delay(Some(Duration::from_secs(5))),
            Duration::from_secs(5)
        );
        // The base still advanced: the server's wait does not hide a failure.
        assert!(within(b.next_delay(Some(Duration::from_millis(1))), 1_600));
    }

    #[tokio::test(start_paused = true)]
    async fn a_retry_after_beyond_the_cap_is_clamped_to_it() {
        let mut b = backoff();
        assert_eq!(
            b.next_delay(Some(Duration::from_secs(86_400))),
            BackoffConfig::default().cap
        );
    }

    #[tokio::test(start_paused = true)]
    async fn the_same_seed_gives_the_same_delays() {
        let (mut a, mut b) = (backoff(), backoff());
        for _ in 0..10 {
            assert_eq!(a.next_delay(None), b.next_delay(None));
        }
    }
}
