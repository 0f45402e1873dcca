//! A token bucket: kube-gc's one implementation of "at most `qps` events per second on average,
//! with bursts of up to `burst`".
//!
//! Contract (the same as `golang.org/x/time/rate`'s `Limiter.Reserve`, which client-go builds its
//! limiters on):
//!
//! - The bucket holds up to `burst` tokens and refills continuously at `qps` tokens per second.
//!   It starts full.
//! - [`TokenBucket::reserve`] always takes one token and returns how long the caller must wait
//!   before acting. If the bucket is empty the token is taken *on credit*: the count goes negative
//!   and the returned wait is the time the refill needs to pay that debt back. A reservation is
//!   never refused, so reservations made in a row are spaced exactly `1/qps` apart once the burst
//!   is spent.
//! - [`TokenBucket::peek`] answers the same question without taking anything.
//! - `qps` of zero, a negative or non-finite `qps` means "unthrottled": every wait is zero.
//!   A `burst` of zero is treated as one (x/time/rate would refuse every reservation, which no
//!   caller here wants).
//!
//! The bucket is plain state, driven by the caller's clock (`now` is passed in), so it is trivially
//! testable and usable from any layer: the workqueue's bucket rate limiter, kube-gc's API client's
//! request throttle (`--kube-api-qps` / `--kube-api-burst`) and its event correlator all wrap it.
//! Share it behind a mutex.

use std::time::Duration;
use tokio::time::Instant;

/// A token bucket refilling at `qps` tokens per second, holding at most `burst` tokens.
#[derive(Debug, Clone)]
pub struct TokenBucket {
    /// Refill rate in tokens per second; `None` when unthrottled.
    qps: Option<f64>,
    burst: f64,
    /// Tokens available at `last`; negative when reservations were made on credit.
    tokens: f64,
    /// When `tokens` was last brought up to date; `None` before the first reservation.
    last: Option<Instant>,
}

impl TokenBucket {
    /// A full bucket refilling at `qps` tokens per second with room for `burst` tokens.
    ///
    /// `qps <= 0`, NaN or infinity make the bucket unthrottled; `burst == 0` counts as 1.
    pub fn new(qps: f64, burst: u32) -> Self {
        let throttled = qps.is_finite() && qps > 0.0;
        let burst = f64::from(burst.max(1));
        TokenBucket {
            qps: throttled.then_some(qps),
            burst,
            tokens: burst,
            last: None,
        }
    }

    /// Whether this bucket ever makes anyone wait.
    pub fn is_unthrottled(&self) -> bool {
        self.qps.is_none()
    }

    /// Takes one token at `now` and returns how long to wait until that token is really there
    /// (zero if it was already available).
    pub fn reserve(&mut self, now: Instant) -> Duration {
        let Some(qps) = self.qps else {
            return Duration::ZERO;
        };
        let tokens = self.tokens_at(now, qps) - 1.0;
        self.tokens = tokens;
        // Like x/time/rate, never move `last` backwards: a caller with an older `now` must not
        // make the bucket refill the same interval twice.
        self.last = Some(self.last.map_or(now, |last| last.max(now)));
        wait_for_debt(tokens, qps)
    }

    /// The wait [`reserve`](Self::reserve) would return at `now`, without taking a token.
    pub fn peek(&self, now: Instant) -> Duration {
        match self.qps {
            None => Duration::ZERO,
            Some(qps) => wait_for_debt(self.tokens_at(now, qps) - 1.0, qps),
        }
    }

    /// Tokens in the bucket at `now`: the stored count plus the refill since `last`, capped at
    /// `burst`. A `now` earlier than `last` adds nothing.
    fn tokens_at(&self, now: Instant, qps: f64) -> f64 {
        let elapsed = match self.last {
            Some(last) => now.saturating_duration_since(last),
            None => return self.burst,
        };
        (self.tokens + elapsed.as_secs_f64() * qps).min(self.burst)
    }
}

/// How long a refill at `qps` needs to bring `tokens` back up to zero.
fn wait_for_debt(tokens: f64, qps: f64) -> Duration {
    if tokens >= 0.0 {
        return Duration::ZERO;
    }
    // The debt grows by one token per reservation, so this cannot realistically overflow; if it
    // ever did, "wait forever" is the honest answer.
    Duration::try_from_secs_f64(-tokens / qps).unwrap_or(Duration::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(n: u64) -> Duration {
        Duration::from_millis(n)
    }

    #[test]
    fn burst_is_free_then_reservations_are_spaced_by_one_over_qps() {
        let now = Instant::now();
        let mut bucket = TokenBucket::new(10.0, 3);
        assert_eq!(bucket.reserve(now), Duration::ZERO);
        assert_eq!(bucket.reserve(now), Duration::ZERO);
        assert_eq!(bucket.reserve(now), Duration::ZERO);
        assert_eq!(bucket.reserve(now), ms(100));
        assert_eq!(bucket.reserve(now), ms(200));
        assert_eq!(bucket.reserve(now), ms(300));
    }

    #[test]
    fn debt_is_paid_back_by_the_refill() {
        let start = Instant::now();
        let mut bucket = TokenBucket::new(10.0, 1);
        assert_eq!(bucket.reserve(start), Duration::ZERO);
        assert_eq!(bucket.reserve(start), ms(100));
        // 100 ms later the debt is paid; the next token needs another 100 ms.
        assert_eq!(bucket.reserve(start + ms(100)), ms(100));
        // Long idle periods refill only up to the burst.
        assert_eq!(bucket.reserve(start + ms(10_000)), Duration::ZERO);
        assert_eq!(bucket.reserve(start + ms(10_000)), ms(100));
    }

    #[test]
    fn peek_does_not_take_a_token() {
        let now = Instant::now();
        let mut bucket = TokenBucket::new(10.0, 1);
        assert_eq!(bucket.peek(now), Duration::ZERO);
        assert_eq!(bucket.peek(now), Duration::ZERO);
        assert_eq!(bucket.reserve(now), Duration::ZERO);
        assert_eq!(bucket.peek(now), ms(100));
        assert_eq!(bucket.peek(now), ms(100));
        assert_eq!(bucket.reserve(now), ms(100));
    }

    #[test]
    fn zero_negative_and_infinite_qps_are_unthrottled() {
        let now = Instant::now();
        for qps in [0.0, -1.0, f64::INFINITY, f64::NAN] {
            let mut bucket = TokenBucket::new(qps, 1);
            assert!(bucket.is_unthrottled());
            for _ in 0..1000 {
                assert_eq!(bucket.reserve(now), Duration::ZERO);
            }
        }
    }

    #[test]
    fn zero_burst_counts_as_one() {
        let now = Instant::now();
        let mut bucket = TokenBucket::new(10.0, 0);
        assert_eq!(bucket.reserve(now), Duration::ZERO);
        assert_eq!(bucket.reserve(now), ms(100));
    }

    #[test]
    fn an_older_now_neither_refills_nor_rewinds() {
        let start = Instant::now();
        let mut bucket = TokenBucket::new(10.0, 1);
        assert_eq!(bucket.reserve(start + ms(1000)), Duration::ZERO);
        // A caller whose clock reading is older sees no refill at all.
        assert_eq!(bucket.reserve(start), ms(100));
        assert_eq!(bucket.reserve(start + ms(1000)), ms(200));
    }
}
