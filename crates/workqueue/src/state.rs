//! The fast queue's state machine: everything [`super::WorkQueue`] knows, changed only through
//! the methods here, all of them synchronous. `WorkQueue` keeps one `QueueState` behind a mutex
//! and adds the waiting (async `get`), the timer task and the wake-ups around it.
//!
//! The rules are those of the reference queue (`reference.rs`, where to learn them); the
//! differential test `tests/workqueue_model.rs` holds this state to them. What this module adds
//! over the reference is the representation, and each part of it is there for speed or memory
//! (the figures are in kube-gc's `docs/performance.md`):
//!
//! - **One record per key** ([`KeyState`]) in the [`KeyTable`] instead of membership in a dirty
//!   set, a processing set and a timer map: `add` and `done` hash the key once. The ready FIFO
//!   and the timers hold 4-byte [`KeyId`]s instead of clones of the key.
//! - **Lazy timer deletion** (`timers.rs`): replacing or cancelling a timer forgets its sequence
//!   number instead of searching the heap.
//! - **Release in passing** (`timers.rs`): `get` and `add_after` already hold the lock and know
//!   the time, so they release due timers themselves, and a busy queue delivers due keys
//!   without a trip through the timer task.
//! - **Wake-ups counted** (below): a change wakes parked getters only as far as it made keys
//!   ready for them, so an add that finds every worker busy costs no wake-up at all.
//! - **Work in progress kept apart** (`in_flight.rs`), so metrics about it cost O(workers).
//!
//! The methods on the add → get → done path, and the key table's under them, are `#[inline]`:
//! split into modules they were no longer inlined into [`super::WorkQueue`]'s methods, which cost
//! 3 % more instructions per cycle and 5–8 % of one-thread throughput (kube-gc's
//! `docs/performance.md`).
//!
//! # Per-key state
//!
//! Every key the queue knows is stored once with one [`KeyState`] of two independent parts:
//!
//! - `processing`: a worker holds the key (between `get` and `done`).
//! - `pending`: what happens to the key next — `Dirty` (the reference's dirty set; if no worker
//!   holds it, it sits in the `ready` FIFO, else `done` puts it there), `Waiting` (it has a live
//!   timer in the heap) or `Nothing`. A key is never both dirty and waiting: the earlier ready
//!   time wins.
//!
//! Keys in neither part are forgotten, so memory follows the keys in use. Times are nanoseconds
//! since the queue's `epoch`.
//!
//! # One wake-up signal
//!
//! Every change returns a [`Wake`]: how many parked getters to wake, and whether the timer task
//! must look at the earliest timer again. The state counts the getters parked and not yet woken
//! (`idle_getters`) and the keys the current change made ready (`unannounced`); a change wakes
//! one parked getter per such key, as far as there are any, and no more. A woken getter that
//! finds its key taken by a busier worker simply parks again.
//!
//! # Invariants (checked by the tests)
//!
//! - `ready` holds exactly the keys that are `Dirty` and not processing, each once, in add order.
//! - `waiting` counts the keys whose `pending` is `Waiting`; each such key has exactly one live
//!   timer in `timers` (its `seq` matches); every other timer is stale.
//! - The top of `timers`, if any, is live (stale tops are popped eagerly), so it is the next
//!   ready time.
//! - `unannounced` is zero between calls.

mod timers;

#[cfg(test)]
mod tests;

use super::delay_heap::DelayHeap;
use super::in_flight::{InFlight, Slot, UnfinishedWork};
use super::key_table::{KeyId, KeyTable};
use super::metrics::QueueMetrics;
use std::collections::VecDeque;
use std::hash::Hash;
use std::sync::Arc;
use std::time::Duration;
use tokio::time::Instant;

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

/// The wake-ups a state change calls for, to be sent after releasing the lock.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[must_use]
pub(super) struct Wake {
    /// Parked getters to wake: one per key made ready, as far as getters are parked.
    pub(super) getters: usize,
    /// The earliest timer changed: the timer task must sleep until the new one.
    pub(super) timer_task: bool,
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
    ready: VecDeque<KeyId>,
    timers: DelayHeap<KeyId>,
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
    #[inline]
    pub(super) fn add(&mut self, key: K, now: Instant) -> Wake {
        if !self.shutting_down {
            let now = self.nanos(now);
            let (id, _) = self.keys.find_or_insert(key, || KeyState::NEW);
            self.make_dirty(id, now);
        }
        self.wake(false)
    }

    /// Releases the timers due at `now`, then hands out the oldest ready key and marks it as
    /// processing. `None` when no key is ready (nothing changed then, so nobody needs waking).
    #[inline]
    pub(super) fn pop_ready(&mut self, now: Instant) -> Option<(K, Wake)> {
        let now_ns = self.nanos(now);
        self.release_due_at(now_ns);
        let id = self.ready.pop_front()?;
        // The caller takes this key itself: nobody needs waking for it.
        self.unannounced = self.unannounced.saturating_sub(1);
        let state = self
            .keys
            .get_mut(id)
            .expect("invariant: ready keys are known");
        if let Pending::Dirty { since } = state.pending {
            let waited = Duration::from_nanos(now_ns.saturating_sub(since));
            self.metrics.observe_queue_duration(waited.as_secs_f64());
        }
        state.pending = Pending::Nothing;
        state.processing = Some(self.in_flight.start(now));
        self.dirty -= 1;
        self.metrics.set_depth(self.dirty);
        let key = self
            .keys
            .key(id)
            .cloned()
            .expect("invariant: ready keys are known");
        Some((key, self.wake(false)))
    }

    /// Ends the processing of `key`: queues it again if it became dirty meanwhile, forgets it if
    /// nothing is pending for it. A key that is not being processed is ignored.
    #[inline]
    pub(super) fn done(&mut self, key: &K, now: Instant) -> Wake {
        let Some((id, work, pending)) = self.finish_processing(key) else {
            return Wake::default();
        };
        if let Some(started) = self.in_flight.finish(work) {
            let worked = now.saturating_duration_since(started);
            self.metrics.observe_work_duration(worked.as_secs_f64());
        }
        if let Pending::Dirty { .. } = pending {
            self.push_ready(id);
        }
        self.wake(false)
    }

    /// Counts one more getter parked for a key, to be woken by a change that makes one ready.
    pub(super) fn park_getter(&mut self) {
        self.idle_getters += 1;
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

    /// Makes the key `id` dirty as of `since`: the one path by which keys become ready. A key
    /// being processed is queued by `done`, never here: one worker at a time.
    #[inline]
    fn make_dirty(&mut self, id: KeyId, since: Nanos) {
        let state = self.keys.get_mut(id).expect("invariant: the key is known");
        let was_waiting = match state.pending {
            Pending::Dirty { .. } => return, // de-duplicated
            Pending::Waiting { .. } => true,
            Pending::Nothing => false,
        };
        state.pending = Pending::Dirty { since };
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
            self.push_ready(id);
        }
    }

    /// Clears the processing mark of `key`, forgetting the key if nothing is pending for it.
    /// Returns its id, its work-in-progress slot and what is pending; `None` if no worker holds
    /// it. Found and forgotten through one lookup: `done` hashes the key once.
    #[inline]
    fn finish_processing(&mut self, key: &K) -> Option<(KeyId, Slot, Pending)> {
        let mut entry = self.keys.find_mut(key)?;
        let state = entry.record();
        let work = state.processing.take()?;
        let pending = state.pending;
        let id = entry.id();
        if pending == Pending::Nothing {
            entry.forget();
        }
        Some((id, work, pending))
    }

    /// Puts a dirty, idle key at the back of the FIFO, to be announced to a parked getter.
    #[inline]
    fn push_ready(&mut self, id: KeyId) {
        self.ready.push_back(id);
        self.unannounced += 1;
    }

    /// Ends a change: one parked getter per key it made ready, as far as there are any; they
    /// count as woken from here on.
    #[inline]
    fn wake(&mut self, timer_task: bool) -> Wake {
        let getters = self.unannounced.min(self.idle_getters);
        self.idle_getters -= getters;
        self.unannounced = 0;
        Wake {
            getters,
            timer_task,
        }
    }

    #[inline]
    fn nanos(&self, at: Instant) -> Nanos {
        let since_epoch = at.saturating_duration_since(self.epoch).as_nanos();
        Nanos::try_from(since_epoch).unwrap_or(Nanos::MAX)
    }

    fn instant(&self, at: Nanos) -> Instant {
        self.epoch + Duration::from_nanos(at)
    }
}
