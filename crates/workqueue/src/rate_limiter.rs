//! Rate limiters: how long a key should wait before it is retried.
//!
//! A [`RateLimiter`] answers [`when`](RateLimiter::when) — "this key failed again, how long until
//! the retry?" — and keeps whatever per-key state it needs until [`forget`](RateLimiter::forget).
//! The three limiters are client-go's:
//!
//! - [`ItemExponentialFailureRateLimiter`]: per key, `base × 2^failures`, capped at `max`.
//! - [`BucketRateLimiter`]: one [`TokenBucket`] shared by all keys; every `when` reserves a token.
//! - [`MaxOfRateLimiter`]: the longest wait of several limiters.
//!
//! [`default_controller_rate_limiter`] is the max of exponential(5 ms, 1000 s) and bucket
//! (10 qps, burst 100), the limiter every kube-controller-manager controller uses.
//!
//! Both `when` and the key-state of the exponential limiter are *reservations*: calling `when`
//! spends a token or a failure. [`peek`](RateLimiter::peek) asks the same question without
//! spending, which is what lets the queue skip the reservation when the retry would be
//! de-duplicated anyway (see the module docs of [`super`] and the README, section 6).
//!
//! The queue calls limiters while holding its own lock (lock order: queue, then limiter), so a
//! limiter must never call back into a queue.

use crate::token_bucket::TokenBucket;
use parking_lot::Mutex;
use std::collections::HashMap;
use std::hash::Hash;
use std::time::Duration;
use tokio::time::Instant;

/// Decides how long a key waits before its next retry.
pub trait RateLimiter<K>: Send + Sync {
    /// Reserves a retry of `key` and returns how long it must wait. Counts as one failure.
    fn when(&self, key: &K) -> Duration;

    /// The wait [`when`](Self::when) would return right now, without reserving anything.
    ///
    /// The default answers zero, which makes the queue always call `when` (client-go's
    /// behaviour): correct for any limiter, merely less thrifty.
    fn peek(&self, _key: &K) -> Duration {
        Duration::ZERO
    }

    /// Drops the failure history of `key` (call it when the key was processed successfully).
    fn forget(&self, key: &K);

    /// Failures of `key` since it was last forgotten.
    fn num_requeues(&self, key: &K) -> u32;

    /// Up to `n` keys with the most requeues, most first, for the queue's debug snapshot.
    /// Limiters without per-key state return nothing.
    fn most_requeued(&self, _n: usize) -> Vec<(K, u32)> {
        Vec::new()
    }
}

/// Per-key exponential back-off: the `n`-th consecutive failure waits `base × 2^(n-1)`, never more
/// than `max`. Computed in floating point, so any failure count is safe.
#[derive(Debug)]
pub struct ItemExponentialFailureRateLimiter<K> {
    base: Duration,
    max: Duration,
    failures: Mutex<HashMap<K, u32>>,
}

impl<K> ItemExponentialFailureRateLimiter<K> {
    /// Back-off starting at `base` and doubling up to `max`.
    pub fn new(base: Duration, max: Duration) -> Self {
        ItemExponentialFailureRateLimiter {
            base,
            max,
            failures: Mutex::new(HashMap::new()),
        }
    }

    /// The wait after `failures` earlier failures.
    fn backoff(&self, failures: u32) -> Duration {
        if self.base.is_zero() {
            return Duration::ZERO; // and not NaN from 0 × ∞ below
        }
        // 2^1100 is already infinite in f64; clamping keeps `powi`'s argument in range.
        let exponent = failures.min(1100) as i32;
        let seconds = self.base.as_secs_f64() * 2f64.powi(exponent);
        // `try_from` fails on infinity: that is the cap too.
        Duration::try_from_secs_f64(seconds)
            .unwrap_or(self.max)
            .min(self.max)
    }
}

impl<K: Eq + Hash + Clone + Send> RateLimiter<K> for ItemExponentialFailureRateLimiter<K> {
    fn when(&self, key: &K) -> Duration {
        let mut failures = self.failures.lock();
        let count = failures.entry(key.clone()).or_insert(0);
        let wait = self.backoff(*count);
        *count = count.saturating_add(1);
        wait
    }

    fn peek(&self, key: &K) -> Duration {
        self.backoff(self.num_requeues(key))
    }

    fn forget(&self, key: &K) {
        self.failures.lock().remove(key);
    }

    fn num_requeues(&self, key: &K) -> u32 {
        self.failures.lock().get(key).copied().unwrap_or(0)
    }

    fn most_requeued(&self, n: usize) -> Vec<(K, u32)> {
        let failures = self.failures.lock();
        let all: Vec<(K, u32)> = failures.iter().map(|(k, c)| (k.clone(), *c)).collect();
        drop(failures);
        most_first(all, n)
    }
}

/// One token bucket shared by every key: bounds the overall retry rate. Keeps no per-key state,
/// so `forget` does nothing and `num_requeues` is always zero.
#[derive(Debug)]
pub struct BucketRateLimiter {
    bucket: Mutex<TokenBucket>,
}

impl BucketRateLimiter {
    /// A bucket of `burst` tokens refilling at `qps` per second.
    pub fn new(qps: f64, burst: u32) -> Self {
        BucketRateLimiter {
            bucket: Mutex::new(TokenBucket::new(qps, burst)),
        }
    }
}

impl<K> RateLimiter<K> for BucketRateLimiter {
    fn when(&self, _key: &K) -> Duration {
        self.bucket.lock().reserve(Instant::now())
    }

    fn peek(&self, _key: &K) -> Duration {
        self.bucket.lock().peek(Instant::now())
    }

    fn forget(&self, _key: &K) {}

    fn num_requeues(&self, _key: &K) -> u32 {
        0
    }
}

/// The longest wait of several limiters. Every limiter is asked (and so reserves) on each `when`.
pub struct MaxOfRateLimiter<K> {
    limiters: Vec<Box<dyn RateLimiter<K>>>,
}

impl<K> MaxOfRateLimiter<K> {
    /// Combines `limiters`; with none, every wait is zero.
    pub fn new(limiters: Vec<Box<dyn RateLimiter<K>>>) -> Self {
        MaxOfRateLimiter { limiters }
    }
}

impl<K> std::fmt::Debug for MaxOfRateLimiter<K> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MaxOfRateLimiter")
            .field("limiters", &self.limiters.len())
            .finish()
    }
}

impl<K: Eq + Hash + Clone> RateLimiter<K> for MaxOfRateLimiter<K> {
    fn when(&self, key: &K) -> Duration {
        let waits = self.limiters.iter().map(|l| l.when(key));
        waits.max().unwrap_or(Duration::ZERO)
    }

    fn peek(&self, key: &K) -> Duration {
        let waits = self.limiters.iter().map(|l| l.peek(key));
        waits.max().unwrap_or(Duration::ZERO)
    }

    fn forget(&self, key: &K) {
        self.limiters.iter().for_each(|l| l.forget(key));
    }

    fn num_requeues(&self, key: &K) -> u32 {
        let counts = self.limiters.iter().map(|l| l.num_requeues(key));
        counts.max().unwrap_or(0)
    }

    fn most_requeued(&self, n: usize) -> Vec<(K, u32)> {
        let mut merged: HashMap<K, u32> = HashMap::new();
        for (key, count) in self.limiters.iter().flat_map(|l| l.most_requeued(n)) {
            let best = merged.entry(key).or_insert(0);
            *best = (*best).max(count);
        }
        most_first(merged.into_iter().collect(), n)
    }
}

/// The `n` entries with the highest counts, highest first.
fn most_first<K>(mut counts: Vec<(K, u32)>, n: usize) -> Vec<(K, u32)> {
    counts.sort_by_key(|(_, count)| std::cmp::Reverse(*count));
    counts.truncate(n);
    counts
}

/// Base delay of the default controller limiter's exponential back-off.
pub const DEFAULT_BASE_DELAY: Duration = Duration::from_millis(5);
/// Cap of the default controller limiter's exponential back-off.
pub const DEFAULT_MAX_DELAY: Duration = Duration::from_secs(1000);
/// Refill rate of the default controller limiter's bucket.
pub const DEFAULT_BUCKET_QPS: f64 = 10.0;
/// Size of the default controller limiter's bucket.
pub const DEFAULT_BUCKET_BURST: u32 = 100;

/// client-go's `DefaultControllerRateLimiter`: the max of exponential back-off (5 ms doubling to
/// 1000 s, per key) and a bucket of 10 qps with burst 100 (shared by all keys).
pub fn default_controller_rate_limiter<K>() -> MaxOfRateLimiter<K>
where
    K: Eq + Hash + Clone + Send + 'static,
{
    MaxOfRateLimiter::new(vec![
        Box::new(ItemExponentialFailureRateLimiter::new(
            DEFAULT_BASE_DELAY,
            DEFAULT_MAX_DELAY,
        )),
        Box::new(BucketRateLimiter::new(
            DEFAULT_BUCKET_QPS,
            DEFAULT_BUCKET_BURST,
        )),
    ])
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(n: u64) -> Duration {
        Duration::from_millis(n)
    }

    #[test]
    fn exponential_doubles_from_base_and_caps() {
        let limiter = ItemExponentialFailureRateLimiter::new(ms(5), Duration::from_secs(1000));
        let key = "a";
        let waits: Vec<Duration> = (0..5).map(|_| limiter.when(&key)).collect();
        assert_eq!(waits, vec![ms(5), ms(10), ms(20), ms(40), ms(80)]);
        assert_eq!(limiter.num_requeues(&key), 5);
        // Failures 6..=18 are still below the cap; the 19th reaches it.
        for _ in 5..18 {
            assert!(limiter.when(&key) < Duration::from_secs(1000));
        }
        assert_eq!(limiter.when(&key), Duration::from_secs(1000));
    }

    #[test]
    fn exponential_never_overflows() {
        let limiter = ItemExponentialFailureRateLimiter::new(ms(5), Duration::from_secs(1000));
        limiter.failures.lock().insert("a", u32::MAX - 1);
        assert_eq!(limiter.when(&"a"), Duration::from_secs(1000));
        assert_eq!(limiter.when(&"a"), Duration::from_secs(1000));
        assert_eq!(limiter.num_requeues(&"a"), u32::MAX);
        assert_eq!(limiter.when(&"a"), Duration::from_secs(1000));
    }

    #[test]
    fn exponential_keys_are_independent_and_forget_resets() {
        let limiter = ItemExponentialFailureRateLimiter::new(ms(1), Duration::from_secs(1));
        limiter.when(&"a");
        limiter.when(&"a");
        assert_eq!(limiter.when(&"b"), ms(1));
        assert_eq!(limiter.peek(&"a"), ms(4));
        assert_eq!(limiter.num_requeues(&"a"), 2, "peek reserves nothing");
        limiter.forget(&"a");
        assert_eq!(limiter.num_requeues(&"a"), 0);
        assert_eq!(limiter.when(&"a"), ms(1));
        let mut top = limiter.most_requeued(5);
        top.sort();
        assert_eq!(top, vec![("a", 1), ("b", 1)]);
    }

    #[test]
    fn exponential_zero_base_never_waits() {
        let limiter = ItemExponentialFailureRateLimiter::new(Duration::ZERO, ms(10));
        for _ in 0..2000 {
            assert_eq!(limiter.when(&1), Duration::ZERO);
        }
    }

    #[tokio::test(start_paused = true)]
    async fn bucket_is_shared_by_all_keys() {
        let limiter = BucketRateLimiter::new(10.0, 2);
        assert_eq!(RateLimiter::<&str>::when(&limiter, &"a"), Duration::ZERO);
        assert_eq!(RateLimiter::<&str>::when(&limiter, &"b"), Duration::ZERO);
        assert_eq!(RateLimiter::<&str>::peek(&limiter, &"c"), ms(100));
        assert_eq!(RateLimiter::<&str>::when(&limiter, &"c"), ms(100));
        assert_eq!(RateLimiter::<&str>::num_requeues(&limiter, &"c"), 0);
        tokio::time::advance(ms(200)).await;
        assert_eq!(RateLimiter::<&str>::when(&limiter, &"a"), Duration::ZERO);
    }

    #[tokio::test(start_paused = true)]
    async fn default_limiter_is_the_max_of_backoff_and_bucket() {
        let limiter = default_controller_rate_limiter::<u32>();
        // The first 100 distinct keys ride the burst: exponential's 5 ms wins.
        for key in 0..100 {
            assert_eq!(limiter.when(&key), ms(5));
        }
        // The bucket is now empty: the 101st retry waits for one refill (100 ms).
        assert_eq!(limiter.when(&100), ms(100));
        assert_eq!(limiter.num_requeues(&100), 1);
        limiter.forget(&100);
        assert_eq!(limiter.num_requeues(&100), 0);
        assert_eq!(
            limiter.peek(&7),
            ms(200),
            "bucket debt of 2 tokens dominates 10 ms"
        );
    }

    #[test]
    fn most_requeued_is_sorted_and_merged_by_max() {
        let limiter = MaxOfRateLimiter::new(vec![
            Box::new(ItemExponentialFailureRateLimiter::new(ms(1), ms(10))),
            Box::new(BucketRateLimiter::new(0.0, 1)),
        ]);
        for (key, failures) in [("a", 1), ("b", 3), ("c", 2)] {
            for _ in 0..failures {
                limiter.when(&key);
            }
        }
        assert_eq!(limiter.most_requeued(2), vec![("b", 3), ("c", 2)]);
    }
}
