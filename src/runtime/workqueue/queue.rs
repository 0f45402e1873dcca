//! [`WorkQueue`]: the shareable, async face of the queue.
//!
//! All the rules live in the synchronous state machine ([`super::state`]); this file adds what
//! needs a runtime:
//!
//! - one mutex around the state, held only for the few hash-map operations of one call and never
//!   across an `.await`;
//! - `get().await`: a getter that finds nothing parks on a [`Notify`]; every state change that
//!   makes a key ready wakes one getter;
//! - the timer task: one task per queue that sleeps until the earliest waiting key is due, moves
//!   the due keys to the ready FIFO, and sleeps again. `add_after` inserts straight into the heap
//!   under the mutex and wakes the task only when the new timer became the earliest one;
//! - shut-down and drain.

use super::in_flight::UnfinishedWork;
use super::metrics::{MetricsProvider, NoopMetricsProvider};
use super::rate_limiter::{default_controller_rate_limiter, RateLimiter};
use super::state::{DebugSnapshot, QueueState, Wake};
use parking_lot::Mutex;
use std::hash::Hash;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::Notify;
use tokio::task::JoinHandle;
use tokio::time::Instant;

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
}

impl<K> WorkQueueBuilder<K>
where
    K: Clone + Eq + Hash + Send + Sync + 'static,
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

    /// Creates the queue and spawns its timer task.
    ///
    /// # Panics
    ///
    /// Outside a Tokio runtime, like `tokio::spawn`.
    pub fn build(self) -> WorkQueue<K> {
        let provider = self
            .metrics
            .unwrap_or_else(|| Arc::new(NoopMetricsProvider));
        let limiter = self
            .limiter
            .unwrap_or_else(|| Arc::new(default_controller_rate_limiter()));
        let shared = Arc::new(Shared {
            state: Mutex::new(QueueState::new(provider.queue_metrics(&self.name))),
            name: self.name,
            limiter,
            key_ready: Notify::new(),
            timers_changed: Notify::new(),
            drained: Notify::new(),
        });
        let timer_task = tokio::spawn(run_timers(Arc::clone(&shared)));
        WorkQueue {
            inner: Arc::new(Inner { shared, timer_task }),
        }
    }
}

impl<K> WorkQueue<K>
where
    K: Clone + Eq + Hash + Send + Sync + 'static,
{
    /// A queue called `name` with the default controller rate limiter and no metrics.
    ///
    /// # Panics
    ///
    /// Outside a Tokio runtime.
    pub fn new(name: impl Into<String>) -> Self {
        Self::builder(name).build()
    }

    /// Starts configuring a queue called `name` (the `name` label of its metrics).
    pub fn builder(name: impl Into<String>) -> WorkQueueBuilder<K> {
        WorkQueueBuilder {
            name: name.into(),
            limiter: None,
            metrics: None,
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
        let wake = self.shared().state.lock().add(key, Instant::now());
        self.wake(wake);
    }

    /// Queues `key` once `delay` has passed. If the key is already queued, or waiting with an
    /// earlier or equal ready time, nothing changes; if it is waiting with a later one, the earlier
    /// time replaces it. A zero delay is [`add`](Self::add). Ignored after shut-down.
    pub fn add_after(&self, key: K, delay: Duration) {
        let wake = self
            .shared()
            .state
            .lock()
            .add_after(key, delay, Instant::now());
        self.wake(wake);
    }

    /// Queues `key` after the wait its rate limiter chooses: the retry path after a failure.
    ///
    /// Unlike client-go, a retry that would be de-duplicated anyway (the key is already queued, or
    /// waiting with a ready time no later than the limiter would give) costs the limiter nothing:
    /// no bucket token, no failure counted.
    pub fn add_rate_limited(&self, key: K) {
        let shared = self.shared();
        let wake =
            shared
                .state
                .lock()
                .add_rate_limited(key, shared.limiter.as_ref(), Instant::now());
        self.wake(wake);
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
    pub async fn get(&self) -> Option<K> {
        let shared = self.shared();
        loop {
            // Registered before looking, so a key made ready in between still wakes us.
            let key_ready = shared.key_ready.notified();
            {
                let mut state = shared.state.lock();
                if let Some(key) = state.pop_ready(Instant::now()) {
                    return Some(key);
                }
                if state.is_shutting_down() {
                    return None;
                }
            }
            key_ready.await;
        }
    }

    /// Tells the queue that the worker finished with `key`. If the key was added meanwhile, it is
    /// queued again now. Keys not being processed are ignored.
    pub fn done(&self, key: &K) {
        let shared = self.shared();
        let (wake, drained) = {
            let mut state = shared.state.lock();
            let wake = state.done(key, Instant::now());
            let drained = state.is_shutting_down() && state.in_flight_len() == 0;
            (wake, drained)
        };
        self.wake(wake);
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

    fn wake(&self, wake: Wake) {
        let shared = self.shared();
        match wake {
            Wake::Nobody => {}
            Wake::Getter => shared.key_ready.notify_one(),
            Wake::Timer => shared.timers_changed.notify_one(),
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

/// The timer task: releases due keys, then sleeps until the earliest timer or until a new
/// earliest timer arrives. Stopped by abort (shut-down, or the last queue handle dropped).
async fn run_timers<K>(shared: Arc<Shared<K>>)
where
    K: Clone + Eq + Hash,
{
    loop {
        // Registered before reading the deadline, so an earlier timer added after we read it
        // still interrupts the sleep.
        let timers_changed = shared.timers_changed.notified();
        let (released, next_ready_at) = {
            let mut state = shared.state.lock();
            let released = state.release_due(Instant::now());
            (released, state.next_ready_at())
        };
        for _ in 0..released {
            shared.key_ready.notify_one();
        }
        match next_ready_at {
            Some(at) => {
                tokio::select! {
                    () = tokio::time::sleep_until(at) => {}
                    () = timers_changed => {}
                }
            }
            None => timers_changed.await,
        }
    }
}
