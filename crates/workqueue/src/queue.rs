//! [`WorkQueue`]: the shareable, async face of the queue.
//!
//! All the rules live in the synchronous state machine (`state.rs`), which follows the reference
//! (`reference.rs`); this module adds what needs a runtime, where the reference has the caller
//! pass `now` and poll `get`:
//!
//! - one mutex around the state, held only for the few hash-map operations of one call and never
//!   across an `.await`; the clock is read before locking;
//! - `get().await`: a getter that finds nothing parks on a [`Notify`] and is counted as parked
//!   in the state. Every state change returns one `Wake`: how many parked getters to wake (one
//!   per key it made ready, none when no getter is parked — the common case when workers are
//!   busy) and whether the timer task must re-read the earliest timer;
//! - the timer task (`timer_task.rs`), which releases due keys at their time;
//! - shut-down and drain.

use super::fine_timer::FineTimer;
use super::in_flight::UnfinishedWork;
use super::metrics::{MetricsProvider, NoopMetricsProvider};
use super::rate_limiter::{default_controller_rate_limiter, RateLimiter};
use super::state::{DebugSnapshot, QueueState, Wake};
use parking_lot::Mutex;
use std::hash::Hash;
use std::sync::Arc;
use std::time::Duration;
use timer_task::run_timers;
use tokio::sync::Notify;
use tokio::task::JoinHandle;
use tokio::time::Instant;

mod timer_task;

#[cfg(test)]
mod tests;

/// A de-duplicating, delaying, rate-limited work queue of keys, shared by cloning.
///
/// See the [module documentation](super) for the rules. Create it inside a Tokio runtime: it
/// spawns its timer task at once.
pub struct WorkQueue<K> {
    inner: Arc<Inner<K>>,
}

/// Owns the timer task: dropping the last [`WorkQueue`] clone stops it.
struct Inner<K> {
    shared: Arc<Shared<K>>,
    timer_task: JoinHandle<()>,
}

/// What the queue handles and the timer task share.
struct Shared<K> {
    name: String,
    state: Mutex<QueueState<K>>,
    limiter: Arc<dyn RateLimiter<K>>,
    /// A key became ready (or the queue shut down): getters re-check.
    key_ready: Notify,
    /// The earliest timer changed: the timer task re-computes its deadline.
    timers_changed: Notify,
    /// The last work in progress finished during shut-down.
    drained: Notify,
}

/// Configures a [`WorkQueue`]; start with [`WorkQueue::builder`].
pub struct WorkQueueBuilder<K> {
    name: String,
    limiter: Option<Arc<dyn RateLimiter<K>>>,
    metrics: Option<Arc<dyn MetricsProvider>>,
    fine_timers: bool,
}

impl<K> WorkQueueBuilder<K>
where
    K: Clone + Eq + Hash + Send + 'static,
{
    /// Uses `limiter` for `add_rate_limited` (default: [`default_controller_rate_limiter`]).
    pub fn rate_limiter(mut self, limiter: Arc<dyn RateLimiter<K>>) -> Self {
        self.limiter = Some(limiter);
        self
    }

    /// Reports metrics to `provider` (default: [`NoopMetricsProvider`]).
    pub fn metrics(mut self, provider: Arc<dyn MetricsProvider>) -> Self {
        self.metrics = Some(provider);
        self
    }

    /// Whether delayed keys are released within tens of microseconds of their ready time, using
    /// a Linux `timerfd` through tokio's I/O driver for the last 2 ms of each wait (default: on).
    /// Off, the queue is as punctual as tokio's timer wheel, up to about 2 ms late. Turn it off
    /// on a runtime built without the I/O driver (`enable_io`; `#[tokio::main]`,
    /// `#[tokio::test]` and `enable_all` include it). Without Linux it has no effect.
    pub fn fine_timers(mut self, on: bool) -> Self {
        self.fine_timers = on;
        self
    }

    /// Creates the queue and spawns its timer task.
    ///
    /// # Panics
    ///
    /// Outside a Tokio runtime, like `tokio::spawn`; and with [fine timers](Self::fine_timers)
    /// on, on Linux, if the runtime has no I/O driver (tokio's message says `enable_io`).
    pub fn build(self) -> WorkQueue<K> {
        let provider = self
            .metrics
            .unwrap_or_else(|| Arc::new(NoopMetricsProvider));
        let limiter = self
            .limiter
            .unwrap_or_else(|| Arc::new(default_controller_rate_limiter()));
        let shared = Arc::new(Shared {
            state: Mutex::new(QueueState::new(
                provider.queue_metrics(&self.name),
                Instant::now(),
            )),
            name: self.name,
            limiter,
            key_ready: Notify::new(),
            timers_changed: Notify::new(),
            drained: Notify::new(),
        });
        // Made here rather than in the task, so that a runtime without an I/O driver fails
        // loudly at the caller instead of silently killing the timer task.
        let timer = if self.fine_timers {
            FineTimer::new()
        } else {
            FineTimer::coarse()
        };
        let timer_task = tokio::spawn(run_timers(Arc::clone(&shared), timer));
        WorkQueue {
            inner: Arc::new(Inner { shared, timer_task }),
        }
    }
}

impl<K> WorkQueue<K>
where
    K: Clone + Eq + Hash + Send + 'static,
{
    /// A queue called `name` with the default controller rate limiter and no metrics.
    ///
    /// # Panics
    ///
    /// Outside a Tokio runtime, and on Linux on a runtime without its I/O driver (see
    /// [`WorkQueueBuilder::fine_timers`]).
    pub fn new(name: impl Into<String>) -> Self {
        Self::builder(name).build()
    }

    /// Starts configuring a queue called `name` (the `name` label of its metrics).
    pub fn builder(name: impl Into<String>) -> WorkQueueBuilder<K> {
        WorkQueueBuilder {
            name: name.into(),
            limiter: None,
            metrics: None,
            fine_timers: true,
        }
    }

    /// The queue's name.
    pub fn name(&self) -> &str {
        &self.shared().name
    }

    /// Queues `key` for processing now. A key already queued is not queued twice; a key being
    /// processed is queued again when its worker calls [`done`](Self::done); a key waiting for a
    /// timer runs now instead (its timer is cancelled). Ignored after shut-down.
    pub fn add(&self, key: K) {
        self.change(|state, now| state.add(key, now));
    }

    /// Queues `key` once `delay` has passed. If the key is already queued, or waiting with an
    /// earlier or equal ready time, nothing changes; if it is waiting with a later one, the earlier
    /// time replaces it. A zero delay is [`add`](Self::add). Ignored after shut-down.
    pub fn add_after(&self, key: K, delay: Duration) {
        self.change(|state, now| state.add_after(key, delay, now));
    }

    /// Queues `key` after the wait its rate limiter chooses: the retry path after a failure.
    ///
    /// Unlike client-go, a retry that would be de-duplicated anyway (the key is already queued, or
    /// waiting with a ready time no later than the limiter would give) costs the limiter nothing:
    /// no bucket token, no failure counted.
    pub fn add_rate_limited(&self, key: K) {
        let limiter = self.shared().limiter.as_ref();
        self.change(|state, now| state.add_rate_limited(key, limiter, now));
    }

    /// Clears the rate limiter's failure history of `key` (call after a success).
    pub fn forget(&self, key: &K) {
        self.shared().limiter.forget(key);
    }

    /// Failures of `key` since it was last forgotten.
    pub fn num_requeues(&self, key: &K) -> u32 {
        self.shared().limiter.num_requeues(key)
    }

    /// Waits for the next key and hands it to the caller, who must call [`done`](Self::done) with
    /// it when finished. Returns `None` once the queue is shut down and no key is left ready.
    ///
    /// Cancel-safe: a key is taken only in the same step that returns it, so dropping the future
    /// (in a `select!`, say) never loses one.
    pub async fn get(&self) -> Option<K> {
        // A worker draining a long queue would otherwise never yield (a ready key is returned
        // without awaiting anything), starving the timer task and the I/O driver on its thread.
        // This makes `get` a yield point once the task's cooperative budget is spent.
        tokio::task::coop::consume_budget().await;
        let shared = self.shared();
        loop {
            // Created before looking, so that a shut-down in between still wakes us.
            let mut key_ready = std::pin::pin!(shared.key_ready.notified());
            // The clock is read before locking, to keep the time under the lock short: a timer
            // falling due in between is released by the next call or the timer task, never lost.
            let now = Instant::now();
            let taken = {
                let mut state = shared.state.lock();
                match state.pop_ready(now) {
                    // Taking a key may have released further due timers: the wake-up is for them.
                    Some(taken) => Some(taken),
                    None if state.is_shutting_down() => return None,
                    None => {
                        // Registered as a waiter *before* being counted as parked, so every
                        // wake-up sent for this count reaches a waiter (a wake-up sent while
                        // nobody is registered would be stored as one permit, and two would
                        // merge into one).
                        key_ready.as_mut().enable();
                        state.park_getter();
                        None
                    }
                }
            };
            if let Some((key, wake)) = taken {
                shared.wake(wake);
                return Some(key);
            }
            // If this future is dropped here, the parked count is one too high until the next
            // wake-up: that costs one spurious wake, never a lost one.
            key_ready.await;
        }
    }

    /// Tells the queue that the worker finished with `key`. If the key was added meanwhile, it is
    /// queued again now. Keys not being processed are ignored.
    pub fn done(&self, key: &K) {
        let shared = self.shared();
        let now = Instant::now();
        let (wake, drained) = {
            let mut state = shared.state.lock();
            let wake = state.done(key, now);
            (wake, state.is_shutting_down() && state.in_flight_len() == 0)
        };
        shared.wake(wake);
        if drained {
            shared.drained.notify_waiters();
        }
    }

    /// Keys ready to be handed out (not counting keys being processed or waiting for a timer).
    pub fn len(&self) -> usize {
        self.shared().state.lock().ready_len()
    }

    /// Whether no key is ready to be handed out.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Shuts the queue down: adds are ignored from now on, keys waiting for a timer are dropped,
    /// the timer task stops, and getters take what is still ready, then get `None` at once.
    pub fn shut_down(&self) {
        let shared = self.shared();
        shared.state.lock().shut_down();
        self.inner.timer_task.abort();
        shared.key_ready.notify_waiters();
        shared.drained.notify_waiters();
    }

    /// [`shut_down`](Self::shut_down), then waits until every key handed out has been
    /// [`done`](Self::done). Like client-go, it waits forever if a worker never calls `done`.
    pub async fn shut_down_with_drain(&self) {
        self.shut_down();
        let shared = self.shared();
        loop {
            let drained = shared.drained.notified();
            if shared.state.lock().in_flight_len() == 0 {
                return;
            }
            drained.await;
        }
    }

    /// Whether [`shut_down`](Self::shut_down) was called.
    pub fn is_shutting_down(&self) -> bool {
        self.shared().state.lock().is_shutting_down()
    }

    /// Computes the age of the work in progress now and sets the `unfinished_work_seconds` and
    /// `longest_running_processor_seconds` gauges from it. The metrics exporter calls this when it
    /// is scraped; it costs O(keys being processed).
    pub fn refresh_unfinished_work(&self) -> UnfinishedWork {
        self.shared()
            .state
            .lock()
            .refresh_unfinished_work(Instant::now())
    }

    /// A point-in-time view for debugging, with up to `top` of the most requeued keys.
    pub fn debug_snapshot(&self, top: usize) -> DebugSnapshot<K> {
        let shared = self.shared();
        let mut snapshot = shared.state.lock().snapshot(Instant::now());
        snapshot.name = shared.name.clone();
        snapshot.most_requeued = shared.limiter.most_requeued(top);
        snapshot
    }

    fn shared(&self) -> &Shared<K> {
        &self.inner.shared
    }

    /// Applies one state change under the lock, then sends the wake-ups it calls for.
    fn change(&self, apply: impl FnOnce(&mut QueueState<K>, Instant) -> Wake) {
        // Read before locking (shorter time under the lock); a delay then counts from a moment
        // no earlier than the call, so it is never cut short.
        let now = Instant::now();
        let wake = apply(&mut self.shared().state.lock(), now);
        self.shared().wake(wake);
    }
}

impl<K> Shared<K> {
    /// Sends the wake-ups a state change asked for (after the lock is released).
    fn wake(&self, wake: Wake) {
        for _ in 0..wake.getters {
            self.key_ready.notify_one();
        }
        if wake.timer_task {
            self.timers_changed.notify_one();
        }
    }
}

impl<K> Clone for WorkQueue<K> {
    fn clone(&self) -> Self {
        WorkQueue {
            inner: Arc::clone(&self.inner),
        }
    }
}

impl<K> std::fmt::Debug for WorkQueue<K> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WorkQueue")
            .field("name", &self.inner.shared.name)
            .finish_non_exhaustive()
    }
}

impl<K> Drop for Inner<K> {
    fn drop(&mut self) {
        self.timer_task.abort();
    }
}
