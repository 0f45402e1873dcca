//! The queue's state machine: everything the queue knows, changed only through the methods here,
//! all of them synchronous. [`super::WorkQueue`] keeps one `QueueState` behind a mutex and adds
//! the waiting (async `get`), the timer task and the wake-ups around it.
//!
//! # Per-key state
//!
//! Every key the queue knows is stored once, in the [`KeyTable`], with one [`KeyState`] of two
//! independent parts:
//!
//! - `processing`: a worker holds the key (between `get` and `done`). At most one worker can:
//!   `get` only hands out keys from `ready`, and a key being processed is never put in `ready`.
//! - `pending`: what happens to the key next —
//!   - `Dirty`: it must be processed (again). client-go's "dirty set". If no worker holds it, it
//!     sits in the `ready` FIFO; if a worker holds it, `done` puts it there. Adding a dirty key is
//!     a no-op: that is the de-duplication.
//!   - `Waiting`: it has a timer in the [`DelayHeap`]; the timer makes it `Dirty` when due.
//!   - `Nothing`.
//!
//! A key is never both dirty and waiting. That is the "earlier ready time wins" rule applied
//! throughout: a dirty key is due *now*, which beats any timer, so `add_after` of a dirty key is
//! dropped and an immediate `add` of a waiting key cancels its timer. (client-go would run the
//! key now and again when the timer fires, kubernetes#112325.)
//!
//! Keys in neither part are removed from the table, so memory follows the keys in use. The
//! `ready` FIFO and the timers refer to keys by [`SlotId`]; times are nanoseconds since the
//! queue's `epoch`.
//!
//! # Due timers are released by whoever holds the lock
//!
//! `pop_ready` (behind `get`) and `add_after` already hold the lock and know the time, so they
//! first move every due timer's key to the ready FIFO themselves. A busy queue therefore delivers
//! due keys without waiting for the timer task; the timer task is needed only to wake getters
//! that are parked while nothing else happens.
//!
//! # Parked getters
//!
//! The state also counts the getters parked waiting for a key that no wake-up has been sent to
//! yet (`idle_getters`), and the keys made ready since wake-ups were last handed out
//! (`unannounced`). After each change the queue wakes one parked getter per such key, as far as
//! there are any, and no more: an add that finds every worker busy costs no wake-up at all, and
//! a key is announced once, so two changes in a row do not wake two getters for one key. A woken
//! getter that finds its key taken by a busier worker simply parks again.
//!
//! # Invariants (checked by the tests)
//!
//! - `ready` holds exactly the keys that are `Dirty` and not processing, each once, in add order.
//! - `waiting` counts the keys whose `pending` is `Waiting`; each such key has exactly one live
//!   timer in `timers` (its `seq` matches); every other timer is stale.
//! - The top of `timers`, if any, is live (stale tops are popped eagerly), so it is the next
//!   ready time.

use super::delay_heap::{DelayHeap, Timer};
use super::in_flight::{InFlight, Slot, UnfinishedWork};
use super::key_table::{KeyTable, SlotId};
use super::metrics::QueueMetrics;
use super::rate_limiter::RateLimiter;
use std::collections::VecDeque;
use std::hash::Hash;
use std::sync::Arc;
use std::time::Duration;
use tokio::time::Instant;

/// Stale timers are swept out of the heap when they exceed the live ones by this many.
const STALE_TIMER_SLACK: usize = 1024;

/// How far in the future a delay too long to represent is clamped to (about 30 years).
const FAR_FUTURE: Duration = Duration::from_secs(30 * 365 * 24 * 60 * 60);

/// Nanoseconds since the queue's epoch.
type Nanos = u64;

/// What happens to a key next.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Pending {
    Nothing,
    /// Needs processing; became due at `since` (for `queue_duration_seconds`).
    Dirty {
        since: Nanos,
    },
    /// Has the live timer `seq`, due at `ready_at`.
    Waiting {
        ready_at: Nanos,
        seq: u64,
    },
}

/// Everything the queue knows about one key.
#[derive(Debug)]
struct KeyState {
    pending: Pending,
    /// Set while a worker holds the key; the slot holds the start time.
    processing: Option<Slot>,
}

impl KeyState {
    const NEW: KeyState = KeyState {
        pending: Pending::Nothing,
        processing: None,
    };
}

/// What the caller of a state change must do after releasing the lock, besides waking
/// [`QueueState::getters_to_wake`] getters.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[must_use]
pub(super) enum Wake {
    Nobody,
    /// A key became ready: a getter may take it.
    Getter,
    /// The earliest timer changed: wake the timer task so it sleeps until the new one.
    Timer,
}

/// A point-in-time view of a queue, for debugging (served at `/debug/workqueue` later).
#[derive(Debug, Clone, PartialEq)]
pub struct DebugSnapshot<K> {
    /// The queue's name.
    pub name: String,
    /// Dirty keys not yet handed out (the `depth` metric).
    pub depth: usize,
    /// Keys in the ready FIFO (what [`len`](super::WorkQueue::len) reports).
    pub ready: usize,
    /// Keys held by workers.
    pub in_flight: usize,
    /// Keys waiting for their timer.
    pub waiting: usize,
    /// Timers in the heap, stale ones included (`waiting` ≤ this).
    pub heap_entries: usize,
    /// Time until the earliest waiting key is due, if any.
    pub next_ready_in: Option<Duration>,
    /// Total and longest age of the work in progress.
    pub unfinished: UnfinishedWork,
    /// Whether the queue is shutting down.
    pub shutting_down: bool,
    /// The keys the rate limiter has seen fail most often since they were last forgotten.
    pub most_requeued: Vec<(K, u32)>,
}

/// The queue's whole state. See the module documentation.
pub(super) struct QueueState<K> {
    keys: KeyTable<K, KeyState>,
    ready: VecDeque<SlotId>,
    timers: DelayHeap,
    in_flight: InFlight,
    /// Time zero of every [`Nanos`] in the state.
    epoch: Instant,
    dirty: usize,
    waiting: usize,
    idle_getters: usize,
    unannounced: usize,
    shutting_down: bool,
    metrics: Arc<dyn QueueMetrics>,
}

impl<K: Clone + Eq + Hash> QueueState<K> {
    /// An empty state whose clock starts at `epoch` (no instant passed to it may be earlier).
    pub(super) fn new(metrics: Arc<dyn QueueMetrics>, epoch: Instant) -> Self {
        QueueState {
            keys: KeyTable::new(),
            ready: VecDeque::new(),
            timers: DelayHeap::default(),
            in_flight: InFlight::default(),
            epoch,
            dirty: 0,
            waiting: 0,
            idle_getters: 0,
            unannounced: 0,
            shutting_down: false,
            metrics,
        }
    }

    /// Marks `key` dirty now. Ignored after shut-down and for keys already dirty; cancels the
    /// key's timer if it was waiting.
    pub(super) fn add(&mut self, key: K, now: Instant) -> Wake {
        if self.shutting_down {
            return Wake::Nobody;
        }
        let now = self.nanos(now);
        let (slot, _) = self.keys.find_or_insert(key, || KeyState::NEW);
        self.make_dirty(slot, now)
    }

    /// Schedules `key` at `now + delay`, unless it is already due no later than that.
    pub(super) fn add_after(&mut self, key: K, delay: Duration, now: Instant) -> Wake {
        if self.shutting_down {
            return Wake::Nobody;
        }
        self.metrics.inc_retries();
        let now = self.nanos(now);
        self.schedule(key, ready_time(now, delay), now)
    }

    /// Like `add_after` with the wait chosen by `limiter` — but the limiter reserves nothing
    /// (no token, no failure) when the retry would be dropped as a duplicate anyway.
    pub(super) fn add_rate_limited(
        &mut self,
        key: K,
        limiter: &dyn RateLimiter<K>,
        now: Instant,
    ) -> Wake {
        if self.shutting_down {
            return Wake::Nobody;
        }
        self.metrics.inc_retries();
        let now = self.nanos(now);
        // `peek` is a lower bound of what `when` returns, so if even the peeked time would be
        // dropped, the reserved one would be too.
        if self.already_due_by(&key, ready_time(now, limiter.peek(&key))) {
            return Wake::Nobody;
        }
        let ready_at = ready_time(now, limiter.when(&key));
        self.schedule(key, ready_at, now)
    }

    /// Releases the timers due at `now`, then hands out the oldest ready key and marks it as
    /// processing.
    pub(super) fn pop_ready(&mut self, now: Instant) -> Option<K> {
        let now_ns = self.nanos(now);
        self.release_due_at(now_ns);
        let slot = self.ready.pop_front()?;
        // The caller takes this key itself: nobody needs waking for it.
        self.unannounced = self.unannounced.saturating_sub(1);
        let state = self
            .keys
            .get_mut(slot)
            .expect("invariant: ready keys are known");
        if let Pending::Dirty { since } = state.pending {
            let waited = Duration::from_nanos(now_ns.saturating_sub(since));
            self.metrics.observe_queue_duration(waited.as_secs_f64());
        }
        state.pending = Pending::Nothing;
        state.processing = Some(self.in_flight.start(now));
        self.dirty -= 1;
        self.metrics.set_depth(self.dirty);
        self.keys.key(slot).cloned()
    }

    /// Ends the processing of `key`; re-queues it if it became dirty meanwhile. A key that is not
    /// being processed is ignored.
    pub(super) fn done(&mut self, key: &K, now: Instant) -> Wake {
        let (in_flight, ready, unannounced) =
            (&mut self.in_flight, &mut self.ready, &mut self.unannounced);
        let finished = self.keys.update(key, |slot, state| {
            let Some(started) = state.processing.take() else {
                return (None, false);
            };
            let started = in_flight.finish(started);
            let wake = match state.pending {
                Pending::Dirty { .. } => {
                    ready.push_back(slot);
                    *unannounced += 1;
                    Wake::Getter
                }
                Pending::Waiting { .. } | Pending::Nothing => Wake::Nobody,
            };
            // A key that is neither processing nor pending is forgotten.
            let forget = state.pending == Pending::Nothing;
            (Some((started, wake)), forget)
        });
        let Some((started, wake)) = finished.flatten() else {
            return Wake::Nobody;
        };
        if let Some(started) = started {
            let worked = now.saturating_duration_since(started);
            self.metrics.observe_work_duration(worked.as_secs_f64());
        }
        wake
    }

    /// Makes every key whose timer is due at `now` dirty; returns how many became ready.
    pub(super) fn release_due(&mut self, now: Instant) -> usize {
        let now = self.nanos(now);
        self.release_due_at(now)
    }

    /// When the earliest waiting key is due.
    pub(super) fn next_ready_at(&self) -> Option<Instant> {
        self.timers.peek().map(|t| self.instant(t.ready_at))
    }

    /// Counts one more getter parked for a key (see [`getters_to_wake`](Self::getters_to_wake)).
    pub(super) fn park_getter(&mut self) {
        self.idle_getters += 1;
    }

    /// How many parked getters to wake now: one per key made ready since the last call, as far
    /// as there are parked getters not yet woken. They count as woken from here on.
    pub(super) fn getters_to_wake(&mut self) -> usize {
        let wake = self.unannounced.min(self.idle_getters);
        self.idle_getters -= wake;
        self.unannounced = 0;
        wake
    }

    /// Stops accepting adds and drops every waiting key. Ready keys can still be taken.
    pub(super) fn shut_down(&mut self) {
        self.shutting_down = true;
        self.timers.clear();
        self.waiting = 0;
        self.keys.retain(|state| {
            if let Pending::Waiting { .. } = state.pending {
                state.pending = Pending::Nothing;
            }
            state.pending != Pending::Nothing || state.processing.is_some()
        });
    }

    pub(super) fn is_shutting_down(&self) -> bool {
        self.shutting_down
    }

    /// Keys in the ready FIFO.
    pub(super) fn ready_len(&self) -> usize {
        self.ready.len()
    }

    /// Keys held by workers.
    pub(super) fn in_flight_len(&self) -> usize {
        self.in_flight.len()
    }

    /// Age of the work in progress at `now`, also pushed to the two "unfinished" gauges.
    pub(super) fn refresh_unfinished_work(&self, now: Instant) -> UnfinishedWork {
        let unfinished = self.in_flight.ages(now);
        self.metrics
            .set_unfinished_work(unfinished.total.as_secs_f64());
        self.metrics
            .set_longest_running_processor(unfinished.longest.as_secs_f64());
        unfinished
    }

    /// Everything but the name and the limiter's view.
    pub(super) fn snapshot(&self, now: Instant) -> DebugSnapshot<K> {
        DebugSnapshot {
            name: String::new(),
            depth: self.dirty,
            ready: self.ready.len(),
            in_flight: self.in_flight.len(),
            waiting: self.waiting,
            heap_entries: self.timers.len(),
            next_ready_in: self
                .next_ready_at()
                .map(|at| at.saturating_duration_since(now)),
            unfinished: self.in_flight.ages(now),
            shutting_down: self.shutting_down,
            most_requeued: Vec::new(),
        }
    }

    // ----- helpers -----

    /// Makes the key in `slot` dirty as of `since`: the one path by which keys become ready.
    fn make_dirty(&mut self, slot: SlotId, since: Nanos) -> Wake {
        let state = self
            .keys
            .get_mut(slot)
            .expect("invariant: the slot is occupied");
        let was_waiting = match state.pending {
            Pending::Dirty { .. } => return Wake::Nobody, // de-duplicated
            Pending::Waiting { .. } => true,
            Pending::Nothing => false,
        };
        state.pending = Pending::Dirty { since };
        // A key being processed is queued by `done`, never now: one worker at a time.
        let idle = state.processing.is_none();
        self.dirty += 1;
        self.metrics.inc_adds();
        self.metrics.set_depth(self.dirty);
        if was_waiting {
            // Its timer is now stale: "now" is earlier than any ready time (kubernetes#112325).
            self.waiting -= 1;
            self.drop_stale_timers();
        }
        if idle {
            self.ready.push_back(slot);
            self.unannounced += 1;
            Wake::Getter
        } else {
            Wake::Nobody
        }
    }

    /// Puts `key` in the heap at `ready_at` unless it is already due by then. Due timers are
    /// released first, so the queue is up to date with `now` before the new timer goes in.
    fn schedule(&mut self, key: K, ready_at: Nanos, now: Nanos) -> Wake {
        let released = self.release_due_at(now);
        let (slot, _) = self.keys.find_or_insert(key, || KeyState::NEW);
        if ready_at <= now {
            return self.make_dirty(slot, now);
        }
        let state = self
            .keys
            .get_mut(slot)
            .expect("invariant: the slot is occupied");
        if state.pending.is_due_by(ready_at) {
            // The earlier (or equal) time wins.
            return if released > 0 {
                Wake::Getter
            } else {
                Wake::Nobody
            };
        }
        let replaced = matches!(state.pending, Pending::Waiting { .. });
        let seq = self.timers.push(slot, ready_at);
        state.pending = Pending::Waiting { ready_at, seq };
        if replaced {
            // The replaced timer is later than this one, so it is not on top; it is merely stale.
            self.sweep_stale_timers();
        } else {
            self.waiting += 1;
        }
        if self.timers.peek().is_some_and(|t| t.seq == seq) {
            Wake::Timer
        } else if released > 0 {
            Wake::Getter
        } else {
            Wake::Nobody
        }
    }

    /// Makes every key whose timer is due at `now` dirty (as of its ready time); returns how
    /// many became ready.
    fn release_due_at(&mut self, now: Nanos) -> usize {
        let mut released = 0;
        while let Some(timer) = self.timers.peek().filter(|t| t.ready_at <= now) {
            self.timers.pop();
            if self.is_live(&timer) && self.make_dirty(timer.slot, timer.ready_at) == Wake::Getter {
                released += 1;
            }
        }
        released
    }

    /// Whether `key` is dirty, or waiting with a ready time no later than `ready_at`.
    fn already_due_by(&self, key: &K, ready_at: Nanos) -> bool {
        self.keys
            .find(key)
            .and_then(|slot| self.keys.get(slot))
            .is_some_and(|state| state.pending.is_due_by(ready_at))
    }

    fn is_live(&self, timer: &Timer) -> bool {
        is_live(&self.keys, timer)
    }

    /// Pops stale timers off the top, so the top is the next ready time, then sweeps.
    fn drop_stale_timers(&mut self) {
        while self.timers.peek().is_some_and(|t| !self.is_live(&t)) {
            self.timers.pop();
        }
        self.sweep_stale_timers();
    }

    /// Sweeps the whole heap when stale timers clearly outnumber live ones, so memory stays
    /// proportional to the keys actually waiting (amortised O(1) per stale timer).
    fn sweep_stale_timers(&mut self) {
        if self.timers.len() > 2 * self.waiting + STALE_TIMER_SLACK {
            let keys = &self.keys;
            self.timers.retain(|timer| is_live(keys, timer));
        }
    }

    fn nanos(&self, at: Instant) -> Nanos {
        let since_epoch = at.saturating_duration_since(self.epoch).as_nanos();
        Nanos::try_from(since_epoch).unwrap_or(Nanos::MAX)
    }

    fn instant(&self, at: Nanos) -> Instant {
        self.epoch + Duration::from_nanos(at)
    }
}

impl Pending {
    /// Whether a key in this state will run no later than `ready_at` anyway: dirty keys run now,
    /// waiting keys at their ready time.
    fn is_due_by(self, ready_at: Nanos) -> bool {
        match self {
            Pending::Dirty { .. } => true,
            Pending::Waiting {
                ready_at: current, ..
            } => current <= ready_at,
            Pending::Nothing => false,
        }
    }
}

/// Whether `timer` is the one live timer of its key (sequence numbers are never reused, so a
/// timer of a key that was forgotten and whose slot now holds another key never matches).
fn is_live<K: Eq + Hash>(keys: &KeyTable<K, KeyState>, timer: &Timer) -> bool {
    matches!(
        keys.get(timer.slot).map(|state| state.pending),
        Some(Pending::Waiting { seq, .. }) if seq == timer.seq
    )
}

/// `now + delay`, clamped so that absurd delays cannot overflow the clock.
fn ready_time(now: Nanos, delay: Duration) -> Nanos {
    let delay = Nanos::try_from(delay.min(FAR_FUTURE).as_nanos()).unwrap_or(Nanos::MAX);
    now.saturating_add(delay)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::runtime::workqueue::metrics::{MetricsProvider, RecordingMetricsProvider};
    use crate::runtime::workqueue::rate_limiter::{
        default_controller_rate_limiter, ItemExponentialFailureRateLimiter,
    };
    use std::collections::HashSet;
    use std::sync::atomic::{AtomicU32, Ordering};

    fn ms(n: u64) -> Duration {
        Duration::from_millis(n)
    }

    /// A state whose clock starts at `epoch`.
    fn new_state(epoch: Instant) -> QueueState<&'static str> {
        QueueState::new(RecordingMetricsProvider::new().queue_metrics("test"), epoch)
    }

    impl<K: Clone + Eq + Hash + std::fmt::Debug> QueueState<K> {
        /// Asserts every invariant listed in the module documentation.
        fn check(&self) {
            let unique: HashSet<SlotId> = self.ready.iter().copied().collect();
            assert_eq!(unique.len(), self.ready.len(), "a key is in `ready` twice");
            let mut dirty = 0;
            let mut waiting = 0;
            let mut idle_dirty = 0;
            let mut processing = 0;
            for (slot, key, state) in self.keys.iter() {
                assert_eq!(self.keys.find(key), Some(slot), "{key:?} not indexed");
                processing += usize::from(state.processing.is_some());
                match state.pending {
                    Pending::Dirty { .. } => {
                        dirty += 1;
                        if state.processing.is_none() {
                            idle_dirty += 1;
                            assert!(unique.contains(&slot), "{key:?} dirty and idle, not ready");
                        }
                    }
                    Pending::Waiting { seq, .. } => {
                        waiting += 1;
                        let live = self
                            .timers
                            .iter()
                            .filter(|t| t.seq == seq && t.slot == slot);
                        assert_eq!(live.count(), 1, "{key:?} has no live timer");
                    }
                    Pending::Nothing => {
                        assert!(state.processing.is_some(), "{key:?} kept for nothing")
                    }
                }
            }
            assert_eq!(
                idle_dirty,
                self.ready.len(),
                "`ready` holds a key it should not"
            );
            assert_eq!(dirty, self.dirty);
            assert_eq!(waiting, self.waiting);
            assert_eq!(processing, self.in_flight.len());
            if let Some(top) = self.timers.peek() {
                assert!(self.is_live(&top), "stale timer on top");
            }
        }

        fn drain_ready(&mut self, now: Instant) -> Vec<K> {
            std::iter::from_fn(|| self.pop_ready(now)).collect()
        }
    }

    #[test]
    fn add_deduplicates_and_keeps_fifo_order() {
        let now = Instant::now();
        let mut q = new_state(now);
        assert_eq!(q.add("a", now), Wake::Getter);
        assert_eq!(q.add("b", now), Wake::Getter);
        assert_eq!(q.add("a", now), Wake::Nobody);
        q.check();
        assert_eq!(q.ready_len(), 2);
        assert_eq!(q.drain_ready(now), ["a", "b"]);
        q.check();
    }

    #[test]
    fn add_during_processing_is_requeued_by_done_not_handed_out_twice() {
        let now = Instant::now();
        let mut q = new_state(now);
        let _ = q.add("a", now);
        assert_eq!(q.pop_ready(now), Some("a"));
        assert_eq!(
            q.add("a", now),
            Wake::Nobody,
            "held by a worker: only marked dirty"
        );
        assert_eq!(q.add("a", now), Wake::Nobody);
        q.check();
        assert_eq!(q.pop_ready(now), None, "never handed to a second worker");
        assert_eq!(q.done(&"a", now), Wake::Getter);
        q.check();
        assert_eq!(q.drain_ready(now), ["a"]);
        assert_eq!(q.done(&"a", now), Wake::Nobody);
        q.check();
        assert!(q.keys.len() == 0, "finished keys are forgotten");
    }

    #[test]
    fn done_of_an_unknown_or_idle_key_is_ignored() {
        let now = Instant::now();
        let mut q = new_state(now);
        assert_eq!(q.done(&"x", now), Wake::Nobody);
        let _ = q.add("a", now);
        assert_eq!(q.done(&"a", now), Wake::Nobody);
        q.check();
        assert_eq!(q.drain_ready(now), ["a"]);
    }

    #[test]
    fn add_after_keeps_the_earlier_ready_time() {
        let t0 = Instant::now();
        let mut q = new_state(t0);
        assert_eq!(q.add_after("a", ms(100), t0), Wake::Timer);
        assert_eq!(
            q.add_after("a", ms(200), t0),
            Wake::Nobody,
            "later: dropped"
        );
        assert_eq!(
            q.add_after("a", ms(100), t0),
            Wake::Nobody,
            "equal: dropped"
        );
        assert_eq!(q.next_ready_at(), Some(t0 + ms(100)));
        assert_eq!(
            q.add_after("a", ms(50), t0),
            Wake::Timer,
            "earlier: replaces"
        );
        q.check();
        assert_eq!(q.next_ready_at(), Some(t0 + ms(50)));
        assert_eq!(q.release_due(t0 + ms(49)), 0);
        assert_eq!(q.release_due(t0 + ms(50)), 1);
        q.check();
        assert_eq!(q.drain_ready(t0 + ms(50)), ["a"]);
        let _ = q.done(&"a", t0 + ms(50));
        assert_eq!(
            q.release_due(t0 + ms(1000)),
            0,
            "the replaced timer is stale"
        );
        assert_eq!(q.timers.len(), 0);
        q.check();
    }

    #[test]
    fn timers_are_released_in_ready_time_order() {
        let t0 = Instant::now();
        let mut q = new_state(t0);
        let _ = q.add_after("c", ms(30), t0);
        let _ = q.add_after("a", ms(10), t0);
        let _ = q.add_after("b", ms(20), t0);
        assert_eq!(q.release_due(t0 + ms(25)), 2);
        assert_eq!(q.drain_ready(t0 + ms(25)), ["a", "b"]);
        assert_eq!(q.next_ready_at(), Some(t0 + ms(30)));
        q.check();
    }

    #[test]
    fn pop_ready_releases_due_timers_itself() {
        let provider = RecordingMetricsProvider::new();
        let t0 = Instant::now();
        let mut q = QueueState::new(provider.queue_metrics("m"), t0);
        let _ = q.add_after("a", ms(10), t0);
        let _ = q.add_after("b", ms(20), t0);
        // No timer task ran: the getter finds "a" due and takes it.
        assert_eq!(q.pop_ready(t0 + ms(15)), Some("a"));
        assert_eq!(q.pop_ready(t0 + ms(15)), None, "\"b\" is not due yet");
        q.check();
        let m = provider.queue("m").expect("created above");
        assert_eq!(
            m.queue_durations(),
            [0.005],
            "queued from its ready time, not its take"
        );
        assert_eq!(q.pop_ready(t0 + ms(20)), Some("b"));
        assert_eq!(q.waiting, 0);
        q.check();
    }

    #[test]
    fn add_after_releases_due_timers_first() {
        let t0 = Instant::now();
        let mut q = new_state(t0);
        let _ = q.add_after("a", ms(10), t0);
        let _ = q.add_after("b", ms(10), t0);
        assert_eq!(q.ready_len(), 0);
        // The producer's own insert brings the queue up to date with its clock.
        assert_eq!(q.add_after("c", ms(100), t0 + ms(10)), Wake::Timer);
        assert_eq!(q.ready_len(), 2);
        assert_eq!(q.next_ready_at(), Some(t0 + ms(110)));
        q.check();
        assert_eq!(q.drain_ready(t0 + ms(10)), ["a", "b"]);
    }

    #[test]
    fn wake_ups_go_only_to_parked_getters_one_per_ready_key() {
        let t0 = Instant::now();
        let mut q = new_state(t0);
        let _ = q.add("a", t0);
        assert_eq!(q.getters_to_wake(), 0, "nobody parked: no wake-up");
        assert_eq!(q.pop_ready(t0), Some("a"));
        q.park_getter();
        q.park_getter();
        let _ = q.add("b", t0);
        assert_eq!(q.getters_to_wake(), 1);
        assert_eq!(q.getters_to_wake(), 0, "a woken getter is not woken twice");
        let _ = q.add("c", t0);
        let _ = q.add("d", t0);
        assert_eq!(q.getters_to_wake(), 1, "one getter left parked");
        let _ = q.add("e", t0);
        assert_eq!(q.getters_to_wake(), 0);
    }

    #[test]
    fn zero_delay_adds_at_once() {
        let now = Instant::now();
        let mut q = new_state(now);
        assert_eq!(q.add_after("a", Duration::ZERO, now), Wake::Getter);
        assert_eq!(q.drain_ready(now), ["a"]);
    }

    #[test]
    fn immediate_add_of_a_waiting_key_replaces_its_timer() {
        // kubernetes#112325: client-go would deliver "a" now and again at +1h.
        let t0 = Instant::now();
        let mut q = new_state(t0);
        let _ = q.add_after("a", Duration::from_secs(3600), t0);
        assert_eq!(q.add("a", t0), Wake::Getter);
        q.check();
        assert_eq!(
            q.next_ready_at(),
            None,
            "the cancelled timer was on top and is gone"
        );
        assert_eq!(q.drain_ready(t0), ["a"]);
        let _ = q.done(&"a", t0);
        assert_eq!(q.release_due(t0 + Duration::from_secs(3600)), 0);
        assert!(q.keys.len() == 0);
    }

    #[test]
    fn add_after_of_a_queued_key_is_dropped() {
        let now = Instant::now();
        let mut q = new_state(now);
        let _ = q.add("a", now);
        assert_eq!(q.add_after("a", ms(10), now), Wake::Nobody);
        q.check();
        assert_eq!(q.timers.len(), 0);
    }

    #[test]
    fn add_after_while_processing_waits_and_then_waits_for_done() {
        let t0 = Instant::now();
        let mut q = new_state(t0);
        let _ = q.add("a", t0);
        assert_eq!(q.pop_ready(t0), Some("a"));
        // The worker re-queues its own key for later, the usual retry pattern.
        assert_eq!(q.add_after("a", ms(10), t0), Wake::Timer);
        q.check();
        // Due while the worker still holds it: it becomes dirty, but is not handed out yet.
        assert_eq!(q.release_due(t0 + ms(10)), 0);
        assert_eq!(q.pop_ready(t0 + ms(10)), None);
        q.check();
        assert_eq!(q.done(&"a", t0 + ms(11)), Wake::Getter);
        assert_eq!(q.drain_ready(t0 + ms(11)), ["a"]);
        q.check();
    }

    #[test]
    fn stale_timers_are_swept_so_memory_follows_waiting_keys() {
        let t0 = Instant::now();
        let mut q = new_state(t0);
        let _ = q.add_after("anchor", Duration::from_secs(1), t0);
        for i in 0..10_000u64 {
            let now = t0 + Duration::from_nanos(i);
            // A long timer, then an immediate add cancelling it, then the run.
            let _ = q.add_after("a", Duration::from_secs(3600), now);
            let _ = q.add("a", now);
            assert_eq!(q.pop_ready(now), Some("a"));
            let _ = q.done(&"a", now);
        }
        q.check();
        assert!(q.timers.len() <= 2 * q.waiting + STALE_TIMER_SLACK + 1);
    }

    #[test]
    fn absurd_delays_do_not_overflow() {
        let now = Instant::now();
        let mut q = new_state(now);
        let _ = q.add_after("a", Duration::MAX, now);
        assert_eq!(q.next_ready_at(), Some(now + FAR_FUTURE));
    }

    #[test]
    fn shut_down_drops_waiting_keys_ignores_adds_and_keeps_ready_ones() {
        let now = Instant::now();
        let mut q = new_state(now);
        let _ = q.add("ready", now);
        let _ = q.add("held", now);
        let _ = q.add_after("later", ms(10), now);
        assert_eq!(q.pop_ready(now), Some("ready"));
        let _ = q.add_after("ready", ms(10), now);
        q.shut_down();
        q.check();
        assert_eq!(q.next_ready_at(), None);
        assert_eq!(q.add("new", now), Wake::Nobody);
        assert_eq!(q.add_after("new", ms(1), now), Wake::Nobody);
        assert_eq!(q.drain_ready(now), ["held"]);
        assert_eq!(q.in_flight_len(), 2);
        let _ = q.done(&"ready", now);
        let _ = q.done(&"held", now);
        assert!(q.keys.len() == 0);
    }

    /// Counts reservations, to see which adds spend one.
    struct CountingLimiter {
        wait: Duration,
        reservations: AtomicU32,
    }

    impl RateLimiter<&'static str> for CountingLimiter {
        fn when(&self, _key: &&'static str) -> Duration {
            self.reservations.fetch_add(1, Ordering::Relaxed);
            self.wait
        }
        fn peek(&self, _key: &&'static str) -> Duration {
            self.wait
        }
        fn forget(&self, _key: &&'static str) {}
        fn num_requeues(&self, _key: &&'static str) -> u32 {
            0
        }
    }

    #[test]
    fn deduplicated_rate_limited_adds_reserve_nothing() {
        // kubernetes#104554: client-go reserves a bucket token for every one of these.
        let t0 = Instant::now();
        let mut q = new_state(t0);
        let limiter = CountingLimiter {
            wait: ms(100),
            reservations: AtomicU32::new(0),
        };
        assert_eq!(q.add_rate_limited("a", &limiter, t0), Wake::Timer);
        for i in 1..1000 {
            let _ = q.add_rate_limited("a", &limiter, t0 + ms(i % 50));
        }
        let _ = q.add("b", t0);
        let _ = q.add_rate_limited("b", &limiter, t0);
        assert_eq!(limiter.reservations.load(Ordering::Relaxed), 1);
        q.check();
    }

    #[test]
    fn a_rate_limited_retry_may_beat_a_long_timer() {
        // A TTL controller scheduled "a" an hour out; a failure retry must not wait that long.
        let t0 = Instant::now();
        let mut q = new_state(t0);
        let limiter = ItemExponentialFailureRateLimiter::new(ms(5), Duration::from_secs(1000));
        let _ = q.add_after("a", Duration::from_secs(3600), t0);
        assert_eq!(q.add_rate_limited("a", &limiter, t0), Wake::Timer);
        assert_eq!(q.next_ready_at(), Some(t0 + ms(5)));
        assert_eq!(limiter.num_requeues(&"a"), 1);
        // A second failure before the retry ran would come later (10 ms): dropped, not counted.
        let _ = q.add_rate_limited("a", &limiter, t0);
        assert_eq!(limiter.num_requeues(&"a"), 1);
        q.check();
    }

    #[tokio::test(start_paused = true)]
    async fn default_limiter_tokens_are_spent_only_on_distinct_waiting_keys() {
        let t0 = Instant::now();
        let mut q: QueueState<u32> =
            QueueState::new(RecordingMetricsProvider::new().queue_metrics("t"), t0);
        let limiter = default_controller_rate_limiter::<u32>();
        // 100 keys retried 100 times each: only the first retry of each key reserves a token,
        // so the burst of 100 covers them all and nothing waits longer than 5 ms.
        for _ in 0..100 {
            for key in 0..100 {
                let _ = q.add_rate_limited(key, &limiter, t0);
            }
        }
        assert_eq!(q.waiting, 100);
        assert_eq!(q.release_due(t0 + ms(5)), 100);
    }

    #[test]
    fn metrics_follow_client_go_meanings() {
        let provider = RecordingMetricsProvider::new();
        let t0 = Instant::now();
        let mut q = QueueState::new(provider.queue_metrics("m"), t0);
        let m = provider.queue("m").expect("created above");
        let _ = q.add("a", t0);
        let _ = q.add("a", t0); // de-duplicated: not an add
        let _ = q.add_after("b", ms(10), t0);
        let _ = q.add_after("b", ms(20), t0); // dropped, but still a retry
        assert_eq!((m.adds(), m.retries(), m.depth()), (1, 2, 1));
        assert_eq!(q.release_due(t0 + ms(10)), 1);
        assert_eq!((m.adds(), m.depth()), (2, 2));
        let _ = q.pop_ready(t0 + ms(30));
        assert_eq!(m.depth(), 1);
        assert_eq!(m.queue_durations(), [0.030]);
        let _ = q.pop_ready(t0 + ms(30));
        let _ = q.done(&"a", t0 + ms(32));
        assert_eq!(m.queue_durations(), [0.030, 0.020]);
        assert_eq!(m.work_durations(), [0.002]);
        let unfinished = q.refresh_unfinished_work(t0 + ms(40));
        assert_eq!(unfinished.longest, ms(10));
        assert_eq!(m.unfinished_work(), 0.010);
        assert_eq!(m.longest_running_processor(), 0.010);
    }

    #[test]
    fn snapshot_reports_the_insides() {
        let t0 = Instant::now();
        let mut q = new_state(t0);
        let _ = q.add("a", t0);
        let _ = q.add("b", t0);
        let _ = q.pop_ready(t0);
        let _ = q.add_after("c", ms(30), t0);
        let _ = q.add_after("c", ms(20), t0);
        let snapshot = q.snapshot(t0 + ms(5));
        assert_eq!(
            (
                snapshot.depth,
                snapshot.ready,
                snapshot.in_flight,
                snapshot.waiting
            ),
            (1, 1, 1, 1)
        );
        assert_eq!(
            snapshot.heap_entries, 2,
            "the replaced timer is still in the heap"
        );
        assert_eq!(snapshot.next_ready_in, Some(ms(15)));
        assert_eq!(snapshot.unfinished.longest, ms(5));
    }
}
