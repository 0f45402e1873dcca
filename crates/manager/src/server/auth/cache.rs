//! [`ExpiringCache`]: answers remembered for a while — a token's owner, a user's right to a
//! path — so that a Prometheus scraping every 15 s costs the API server one review per answer's
//! lifetime, not one per scrape. Synchronous and pure: every call takes `now`.
//!
//! Contract: an entry is returned until its time is up, never after. The cache holds at most
//! `capacity` entries: when full, expired entries go first, and if none has expired the cache
//! is emptied (every answer is cheap to ask again; a bound that never grows is what matters).

use std::collections::HashMap;
use std::hash::Hash;
use std::time::Duration;

use tokio::time::Instant;

/// A bounded map whose entries expire.
#[derive(Debug)]
pub struct ExpiringCache<K, V> {
    entries: HashMap<K, (V, Instant)>,
    capacity: usize,
}

impl<K: Eq + Hash, V: Clone> ExpiringCache<K, V> {
    /// An empty cache of at most `capacity` entries (at least one).
    pub fn new(capacity: usize) -> Self {
        ExpiringCache {
            entries: HashMap::new(),
            capacity: capacity.max(1),
        }
    }

    /// The answer for `key`, if it is still good at `now`.
    pub fn get(&self, key: &K, now: Instant) -> Option<V> {
        self.entries
            .get(key)
            .filter(|(_, expires)| now < *expires)
            .map(|(value, _)| value.clone())
    }

    /// Remembers `value` for `key` until `now + ttl` (a zero `ttl` remembers nothing).
    pub fn insert(&mut self, key: K, value: V, ttl: Duration, now: Instant) {
        if ttl.is_zero() {
            return;
        }
        if self.entries.len() >= self.capacity && !self.entries.contains_key(&key) {
            self.entries.retain(|_, (_, expires)| now < *expires);
            if self.entries.len() >= self.capacity {
                self.entries.clear();
            }
        }
        self.entries.insert(key, (value, now + ttl));
    }

    /// Entries held (expired ones included until they are swept).
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// Whether it holds nothing.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test(start_paused = true)]
    async fn an_answer_is_good_until_its_time_is_up() {
        let mut cache = ExpiringCache::new(4);
        let start = Instant::now();
        cache.insert("token", "alice", Duration::from_secs(10), start);
        assert_eq!(
            cache.get(&"token", start + Duration::from_secs(9)),
            Some("alice")
        );
        assert_eq!(cache.get(&"token", start + Duration::from_secs(10)), None);
        cache.insert("other", "bob", Duration::ZERO, start);
        assert_eq!(
            cache.get(&"other", start),
            None,
            "a zero TTL remembers nothing"
        );
    }

    #[tokio::test(start_paused = true)]
    async fn a_full_cache_drops_the_expired_first_then_everything() {
        let mut cache = ExpiringCache::new(2);
        let start = Instant::now();
        cache.insert(1, "short", Duration::from_secs(1), start);
        cache.insert(2, "long", Duration::from_secs(60), start);
        let later = start + Duration::from_secs(5);
        cache.insert(3, "new", Duration::from_secs(60), later);
        assert_eq!(cache.len(), 2);
        assert_eq!(cache.get(&2, later), Some("long"), "the live one stays");
        cache.insert(4, "newer", Duration::from_secs(60), later);
        assert_eq!(
            cache.len(),
            1,
            "nothing had expired: emptied, then the new one"
        );
        assert_eq!(cache.get(&4, later), Some("newer"));
    }
}
