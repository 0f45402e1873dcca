//! [`Throttle`]: client-side rate limiting of requests to the API server, as client-go's
//! `flowcontrol.NewTokenBucketRateLimiter` does it (`--kube-api-qps`, `--kube-api-burst`).
//!
//! Contract:
//! - Every request, including each retry and the start of each watch, takes one token from the
//!   crate's [`TokenBucket`] before it is sent; when the bucket is empty the caller sleeps until
//!   its token is due. A watch does not hold a token while it streams: tokens are a rate, not a
//!   concurrency limit.
//! - Waiting uses tokio's clock, so tests drive it with a paused clock.
//! - A token is reserved before the sleep. If the request future is dropped while it sleeps,
//!   the token stays spent (client-go's limiter behaves the same), which only errs on the side
//!   of sending less.
//! - Clones share one bucket: one budget per [`Client`](super::Client), however many handles
//!   and tasks use it.

use std::sync::Arc;
use std::time::Duration;

use parking_lot::Mutex;
use tokio::time::Instant;

use kube_gc_workqueue::token_bucket::TokenBucket;

/// `--kube-api-qps` default (kube-controller-manager's; client-go's own is 5).
pub const DEFAULT_QPS: f64 = 20.0;
/// `--kube-api-burst` default (kube-controller-manager's; client-go's own is 10).
pub const DEFAULT_BURST: u32 = 30;

/// A shared token bucket that requests wait on.
#[derive(Clone, Debug)]
pub struct Throttle {
    bucket: Arc<Mutex<TokenBucket>>,
}

impl Throttle {
    /// At most `qps` requests per second on average, `burst` at once. A `qps` of zero or less
    /// disables throttling.
    pub fn new(qps: f64, burst: u32) -> Self {
        Throttle {
            bucket: Arc::new(Mutex::new(TokenBucket::new(qps, burst))),
        }
    }

    /// No throttling at all.
    pub fn unthrottled() -> Self {
        Self::new(0.0, 1)
    }

    /// Waits until the next request may be sent, and returns how long that was.
    pub async fn acquire(&self) -> Duration {
        // The lock is released before sleeping: the reservation is all the state we need.
        let wait = self.bucket.lock().reserve(Instant::now());
        if !wait.is_zero() {
            tokio::time::sleep(wait).await;
        }
        wait
    }
}

impl Default for Throttle {
    fn default() -> Self {
        Self::new(DEFAULT_QPS, DEFAULT_BURST)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test(start_paused = true)]
    async fn the_burst_is_free_then_requests_are_spaced_by_one_over_qps() {
        let throttle = Throttle::new(10.0, 3);
        let start = Instant::now();
        for _ in 0..3 {
            assert_eq!(throttle.acquire().await, Duration::ZERO);
        }
        assert_eq!(start.elapsed(), Duration::ZERO);
        for _ in 0..5 {
            throttle.acquire().await;
        }
        assert_eq!(start.elapsed(), Duration::from_millis(500));
    }

    #[tokio::test(start_paused = true)]
    async fn clones_share_one_budget_across_tasks() {
        let throttle = Throttle::new(20.0, 30);
        let start = Instant::now();
        let tasks: Vec<_> = (0..50)
            .map(|_| {
                let t = throttle.clone();
                tokio::spawn(async move { t.acquire().await })
            })
            .collect();
        for task in tasks {
            task.await.unwrap();
        }
        // 30 free, then 20 more at 20 per second.
        assert_eq!(start.elapsed(), Duration::from_secs(1));
    }

    #[tokio::test(start_paused = true)]
    async fn zero_qps_never_waits() {
        let throttle = Throttle::unthrottled();
        let start = Instant::now();
        for _ in 0..1000 {
            throttle.acquire().await;
        }
        assert_eq!(start.elapsed(), Duration::ZERO);
    }
}
