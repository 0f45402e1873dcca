//! Delayed keys in the fast queue's state: `add_after`, `add_rate_limited`, and the release of
//! due timers — called by the timer task (`queue/timer_task.rs`) when it wakes at a ready time,
//! and in passing by `get` and `add_after`, which hold the lock and know the time anyway.
//!
//! The rule is the reference's (`reference.rs`): a timer makes its key dirty at its ready time,
//! and the earlier ready time always wins. What this adds over the reference:
//!
//! - **Lazy deletion.** The reference removes a replaced or cancelled timer from its `BTreeMap`.
//!   Here a key's [`Pending::Waiting`] remembers the sequence number of its one live timer and
//!   every other timer of the key is *stale*: replacing or cancelling is O(1), stale timers are
//!   popped when they reach the top, and the whole heap is swept when they outnumber the live
//!   ones by [`STALE_TIMER_SLACK`], so memory stays proportional to the waiting keys.
//! - **Release in passing.** `get` and `add_after` release due timers before doing their own
//!   work, so a busy queue delivers due keys without waiting for the timer task, and the timer
//!   task is needed only to wake getters parked while nothing else happens. Either way the key
//!   becomes dirty *as of its ready time* (for `queue_duration_seconds`).
//! - **A cheap duplicate check before the limiter.** `add_rate_limited` asks the limiter's
//!   `peek` first and reserves nothing for a retry that would be dropped (kubernetes#104554).

use super::{KeyState, Nanos, Pending, QueueState, Wake};
use crate::delay_heap::Timer;
use crate::key_table::{KeyId, KeyTable};
use crate::rate_limiter::RateLimiter;
use std::hash::Hash;
use std::time::Duration;
use tokio::time::Instant;

/// Stale timers are swept out of the heap when they exceed the live ones by this many.
pub(super) const STALE_TIMER_SLACK: usize = 1024;

/// How far in the future a delay too long to represent is clamped to (about 30 years).
pub(super) const FAR_FUTURE: Duration = Duration::from_secs(30 * 365 * 24 * 60 * 60);

impl<K: Clone + Eq + Hash> QueueState<K> {
    /// Schedules `key` at `now + delay`, unless it is already due no later than that.
    pub(crate) fn add_after(&mut self, key: K, delay: Duration, now: Instant) -> Wake {
        if self.shutting_down {
            return Wake::default();
        }
        self.metrics.inc_retries();
        let now = self.nanos(now);
        self.schedule(key, ready_time(now, delay), now)
    }

    /// Like `add_after` with the wait chosen by `limiter` — but the limiter reserves nothing
    /// (no token, no failure) when the retry would be dropped as a duplicate anyway.
    pub(crate) fn add_rate_limited(
        &mut self,
        key: K,
        limiter: &dyn RateLimiter<K>,
        now: Instant,
    ) -> Wake {
        if self.shutting_down {
            return Wake::default();
        }
        self.metrics.inc_retries();
        let now = self.nanos(now);
        // `peek` is a lower bound of what `when` returns, so if even the peeked time would be
        // dropped, the reserved one would be too.
        if self.already_due_by(&key, ready_time(now, limiter.peek(&key))) {
            return Wake::default();
        }
        let ready_at = ready_time(now, limiter.when(&key));
        self.schedule(key, ready_at, now)
    }

    /// Makes every key whose timer is due at `now` dirty: the timer task's one job.
    pub(crate) fn release_due(&mut self, now: Instant) -> Wake {
        let now = self.nanos(now);
        self.release_due_at(now);
        self.wake(false)
    }

    /// When the earliest waiting key is due.
    pub(crate) fn next_ready_at(&self) -> Option<Instant> {
        self.timers.peek().map(|t| self.instant(t.ready_at))
    }

    /// Makes every key whose timer is due at `now` dirty, as of its ready time.
    #[inline]
    pub(super) fn release_due_at(&mut self, now: Nanos) {
        while let Some(timer) = self.timers.peek().filter(|t| t.ready_at <= now) {
            self.timers.pop();
            if self.is_live(&timer) {
                self.make_dirty(timer.key, timer.ready_at);
            }
        }
    }

    /// Pops stale timers off the top, so the top is the next ready time, then sweeps.
    pub(super) fn drop_stale_timers(&mut self) {
        while self.timers.peek().is_some_and(|t| !self.is_live(&t)) {
            self.timers.pop();
        }
        self.sweep_stale_timers();
    }

    /// Whether `timer` is the one live timer of its key.
    pub(super) fn is_live(&self, timer: &Timer<KeyId>) -> bool {
        is_live(&self.keys, timer)
    }

    /// Puts `key` in the heap at `ready_at` unless it is already due by then. Due timers are
    /// released first, so the queue is up to date with `now` before the new timer goes in.
    fn schedule(&mut self, key: K, ready_at: Nanos, now: Nanos) -> Wake {
        self.release_due_at(now);
        let (id, _) = self.keys.find_or_insert(key, || KeyState::NEW);
        if ready_at <= now {
            self.make_dirty(id, now);
            return self.wake(false);
        }
        let state = self.keys.get_mut(id).expect("invariant: the key is known");
        if state.pending.is_due_by(ready_at) {
            return self.wake(false); // the earlier (or equal) time wins
        }
        let replaced = matches!(state.pending, Pending::Waiting { .. });
        let seq = self.timers.push(id, ready_at);
        state.pending = Pending::Waiting { ready_at, seq };
        if replaced {
            // The replaced timer is later than this one, so it is not on top; it is merely stale.
            self.sweep_stale_timers();
        } else {
            self.waiting += 1;
        }
        let earliest = self.timers.peek().is_some_and(|t| t.seq == seq);
        self.wake(earliest)
    }

    /// Whether `key` is dirty, or waiting with a ready time no later than `ready_at`.
    fn already_due_by(&self, key: &K, ready_at: Nanos) -> bool {
        self.keys
            .get_by_key(key)
            .is_some_and(|state| state.pending.is_due_by(ready_at))
    }

    /// Sweeps the whole heap when stale timers clearly outnumber live ones, so memory stays
    /// proportional to the keys actually waiting (amortised O(1) per stale timer).
    fn sweep_stale_timers(&mut self) {
        if self.timers.len() > 2 * self.waiting + STALE_TIMER_SLACK {
            let keys = &self.keys;
            self.timers.retain(|timer| is_live(keys, timer));
        }
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
/// timer of a key that was forgotten and whose id now stands for another key never matches).
fn is_live<K: Eq + Hash>(keys: &KeyTable<K, KeyState>, timer: &Timer<KeyId>) -> bool {
    matches!(
        keys.get(timer.key).map(|state| state.pending),
        Some(Pending::Waiting { seq, .. }) if seq == timer.seq
    )
}

/// `now + delay`, clamped so that absurd delays cannot overflow the clock.
fn ready_time(now: Nanos, delay: Duration) -> Nanos {
    let delay = Nanos::try_from(delay.min(FAR_FUTURE).as_nanos()).unwrap_or(Nanos::MAX);
    now.saturating_add(delay)
}
