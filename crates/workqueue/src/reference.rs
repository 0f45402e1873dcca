//! The reference workqueue: **the rules of the queue, and nothing else**. Start here to learn
//! what [`WorkQueue`](super::WorkQueue) does; read `state.rs` afterwards to see how it does the
//! same thing fast.
//!
//! [`ReferenceQueue`] is a synchronous queue built from `std` collections only, written to be
//! obviously right rather than fast. It has exactly the semantics of the fast queue's core: the
//! differential property test (`tests/workqueue_model.rs`) drives both with the same random
//! operations and fails on the first difference in what they hand out or hold.
//!
//! # The rules
//!
//! Every key is in some combination of three states:
//!
//! - **dirty**: it must be processed (again). Adding a dirty key does nothing: that is the
//!   de-duplication. A dirty key that no worker holds sits in the `ready` FIFO, once.
//! - **processing**: a worker holds it, between [`get`](ReferenceQueue::get) and
//!   [`done`](ReferenceQueue::done). A key is never handed to two workers: a key added while it
//!   is processed only becomes dirty, and `done` puts it in `ready` then.
//! - **waiting**: it has a timer (from `add_after` or `add_rate_limited`). At its ready time the
//!   timer fires and the key is added as if by `add`.
//!
//! A key is never both dirty and waiting: **the earlier ready time wins.** A dirty key is due
//! *now*, before any timer, so `add_after` of a dirty key is dropped and `add` of a waiting key
//! cancels its timer (client-go would run it twice, kubernetes#112325). `add_after` of a waiting
//! key replaces the timer only if the new time is earlier. A delay of zero is `add`.
//!
//! Time is passed in as `now`. Every call that takes `now` first fires the timers due at `now`,
//! in (ready time, insertion) order, so nothing is ever delivered early and a due key is never
//! overtaken by a later one. (The fast queue fires them from its timer task at their time, and
//! `get` and `add_after` fire any it has not got to yet.)
//!
//! Rate limiting: `add_rate_limited` asks the [`RateLimiter`] how long to wait and then behaves
//! like `add_after` — except that when the key would be dropped as a duplicate even at the
//! limiter's [`peek`](RateLimiter::peek)ed wait, the limiter is not asked at all, so it counts no
//! failure and spends no token (client-go spends one, kubernetes#104554). `forget` and
//! `num_requeues` are the limiter's.
//!
//! Shut-down: adds of every kind are ignored, waiting keys are dropped, ready keys are still
//! handed out, and `get` then says `None` (the async queue returns at once instead of waiting).
//! Draining is waiting for [`in_flight`](ReferenceQueue::in_flight) to reach zero.
//!
//! # Example
//!
//! ```
//! use kube_gc_workqueue::{ItemExponentialFailureRateLimiter, ReferenceQueue};
//! use std::time::Duration;
//! use tokio::time::Instant;
//!
//! let ms = Duration::from_millis;
//! let limiter = ItemExponentialFailureRateLimiter::new(ms(5), ms(1000));
//! let mut queue = ReferenceQueue::new(Box::new(limiter));
//! let t0 = Instant::now();
//! queue.add("a", t0);
//! queue.add("a", t0); // already dirty: de-duplicated
//! assert_eq!(queue.get(t0), Some("a"));
//! queue.add("a", t0); // held by a worker: dirty, but not handed out again...
//! assert_eq!(queue.get(t0), None);
//! queue.done(&"a"); // ...until its worker is done
//! assert_eq!(queue.get(t0), Some("a"));
//! queue.done(&"a");
//!
//! queue.add_after("b", ms(10), t0);
//! queue.add_after("b", ms(20), t0); // the earlier ready time wins
//! assert_eq!(queue.get(t0 + ms(9)), None);
//! assert_eq!(queue.get(t0 + ms(10)), Some("b"));
//! ```

use super::rate_limiter::RateLimiter;
use std::collections::{BTreeMap, HashMap, HashSet, VecDeque};
use std::hash::Hash;
use std::time::Duration;
use tokio::time::Instant;

/// How far in the future a delay too long to represent is clamped to (about 30 years), as in
/// the fast queue.
const FAR_FUTURE: Duration = Duration::from_secs(30 * 365 * 24 * 60 * 60);

/// A waiting key's timer: when it fires, and its number, which orders timers of equal time.
type TimerId = (Instant, u64);

/// The workqueue's rules in plain collections. See the module documentation.
pub struct ReferenceQueue<K> {
    /// Dirty keys that no worker holds, in the order they became ready.
    ready: VecDeque<K>,
    dirty: HashSet<K>,
    processing: HashSet<K>,
    /// Each waiting key's one timer, and the timers in firing order.
    waiting: HashMap<K, TimerId>,
    timers: BTreeMap<TimerId, K>,
    timers_made: u64,
    shutting_down: bool,
    limiter: Box<dyn RateLimiter<K>>,
}

impl<K: Clone + Eq + Hash> ReferenceQueue<K> {
    /// An empty queue whose `add_rate_limited` asks `limiter`.
    pub fn new(limiter: Box<dyn RateLimiter<K>>) -> Self {
        ReferenceQueue {
            ready: VecDeque::new(),
            dirty: HashSet::new(),
            processing: HashSet::new(),
            waiting: HashMap::new(),
            timers: BTreeMap::new(),
            timers_made: 0,
            shutting_down: false,
            limiter,
        }
    }

    /// Queues `key` now: marks it dirty, cancels its timer, and puts it in `ready` unless a worker
    /// holds it.
    pub fn add(&mut self, key: K, now: Instant) {
        self.fire_due_timers(now);
        self.make_dirty(key);
    }

    /// Queues `key` at `now + delay`, unless it is already due by then.
    pub fn add_after(&mut self, key: K, delay: Duration, now: Instant) {
        self.fire_due_timers(now);
        if self.shutting_down {
            return;
        }
        let ready_at = now + delay.min(FAR_FUTURE);
        if ready_at <= now {
            return self.make_dirty(key);
        }
        if self.is_due_by(&key, ready_at) {
            return; // the earlier ready time wins
        }
        self.cancel_timer(&key);
        let timer = (ready_at, self.timers_made);
        self.timers_made += 1;
        self.timers.insert(timer, key.clone());
        self.waiting.insert(key, timer);
    }

    /// `add_after` with the wait the rate limiter chooses; a retry that would be dropped anyway
    /// costs the limiter nothing.
    pub fn add_rate_limited(&mut self, key: K, now: Instant) {
        self.fire_due_timers(now);
        if self.shutting_down || self.is_due_by(&key, now + self.limiter.peek(&key)) {
            return;
        }
        let delay = self.limiter.when(&key);
        self.add_after(key, delay, now);
    }

    /// Hands out the oldest ready key; the caller holds it until [`done`](Self::done).
    pub fn get(&mut self, now: Instant) -> Option<K> {
        self.fire_due_timers(now);
        let key = self.ready.pop_front()?;
        self.dirty.remove(&key);
        self.processing.insert(key.clone());
        Some(key)
    }

    /// The worker finished `key`: queues it again if it became dirty meanwhile. Ignored for a
    /// key that is not being processed.
    pub fn done(&mut self, key: &K) {
        if self.processing.remove(key) && self.dirty.contains(key) {
            self.ready.push_back(key.clone());
        }
    }

    /// Fires the timers due at `now` (what the fast queue's timer task does).
    pub fn advance_to(&mut self, now: Instant) {
        self.fire_due_timers(now);
    }

    /// Clears the limiter's failure history of `key`.
    pub fn forget(&mut self, key: &K) {
        self.limiter.forget(key);
    }

    /// Failures of `key` since it was last forgotten, according to the limiter.
    pub fn num_requeues(&self, key: &K) -> u32 {
        self.limiter.num_requeues(key)
    }

    /// Ignores adds from now on and drops the waiting keys, which it returns.
    pub fn shut_down(&mut self) -> Vec<K> {
        self.shutting_down = true;
        self.timers.clear();
        self.waiting.drain().map(|(key, _)| key).collect()
    }

    /// Whether [`shut_down`](Self::shut_down) was called.
    pub fn is_shutting_down(&self) -> bool {
        self.shutting_down
    }

    /// Keys ready to be handed out.
    pub fn len(&self) -> usize {
        self.ready.len()
    }

    /// Whether no key is ready to be handed out.
    pub fn is_empty(&self) -> bool {
        self.ready.is_empty()
    }

    /// Dirty keys, held by a worker or not (the `depth` metric).
    pub fn depth(&self) -> usize {
        self.dirty.len()
    }

    /// Keys waiting for their timer.
    pub fn waiting(&self) -> usize {
        self.waiting.len()
    }

    /// Keys held by workers.
    pub fn in_flight(&self) -> usize {
        self.processing.len()
    }

    /// When the earliest waiting key is due.
    pub fn next_ready_at(&self) -> Option<Instant> {
        self.timers.keys().next().map(|(at, _)| *at)
    }

    fn make_dirty(&mut self, key: K) {
        if self.shutting_down || self.dirty.contains(&key) {
            return;
        }
        self.cancel_timer(&key);
        if !self.processing.contains(&key) {
            self.ready.push_back(key.clone());
        }
        self.dirty.insert(key);
    }

    /// Whether `key` will run no later than `ready_at` anyway: dirty keys run now, waiting keys
    /// at their ready time.
    fn is_due_by(&self, key: &K, ready_at: Instant) -> bool {
        self.dirty.contains(key) || self.waiting.get(key).is_some_and(|(at, _)| *at <= ready_at)
    }

    fn cancel_timer(&mut self, key: &K) {
        if let Some(timer) = self.waiting.remove(key) {
            self.timers.remove(&timer);
        }
    }

    fn fire_due_timers(&mut self, now: Instant) {
        while let Some(entry) = self.timers.first_entry() {
            if entry.key().0 > now {
                return;
            }
            let key = entry.remove();
            self.waiting.remove(&key);
            self.make_dirty(key);
        }
    }
}
