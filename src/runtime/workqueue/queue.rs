//! [`WorkQueue`]: the shareable, async face of the queue.
//!
//! All the rules live in the synchronous state machine (`state.rs`); this file adds what
//! needs a runtime:
//!
//! - one mutex around the state, held only for the few hash-map operations of one call and never
//!   across an `.await`;
//! - `get().await`: a getter that finds nothing parks on a [`Notify`] and is counted as parked
//!   in the state; after each change the queue wakes one parked getter per ready key, and none
//!   when no getter is parked (the common case when workers are busy);
//! - the timer task: one task per queue that sleeps until the earliest waiting key is due, moves
//!   the due keys to the ready FIFO, wakes parked getters for them, and sleeps again. `get` and
//!   `add_after` release due keys themselves, so on a busy queue the timer task rarely has work;
//!   `add_after` wakes it only when the new timer became the earliest one;
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
            let getters = {
                let mut state = shared.state.lock();
                match state.pop_ready(now) {
                    // Taking a key may have released further due timers: wake getters for them.
                    Some(key) => Some((key, state.getters_to_wake())),
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
            if let Some((key, getters)) = getters {
                self.wake_getters(getters);
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
        let (wake, getters, drained) = {
            let mut state = shared.state.lock();
            let wake = state.done(key, now);
            let drained = state.is_shutting_down() && state.in_flight_len() == 0;
            (wake, state.getters_to_wake(), drained)
        };
        self.wake(wake, getters);
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
        let (wake, getters) = {
            let mut state = self.shared().state.lock();
            let wake = apply(&mut state, now);
            (wake, state.getters_to_wake())
        };
        self.wake(wake, getters);
    }

    /// Wakes `getters` parked getters, and the timer task if the earliest timer changed.
    fn wake(&self, wake: Wake, getters: usize) {
        self.wake_getters(getters);
        if wake == Wake::Timer {
            self.shared().timers_changed.notify_one();
        }
    }

    fn wake_getters(&self, getters: usize) {
        wake_getters(self.shared(), getters);
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

/// The timer task: releases due keys, then sleeps until the earliest timer (punctually: see
/// [`FineTimer`]) or until a new earliest timer arrives. Stopped by abort (shut-down, or the
/// last queue handle dropped).
async fn run_timers<K>(shared: Arc<Shared<K>>, mut timer: FineTimer)
where
    K: Clone + Eq + Hash,
{
    loop {
        // Registered before reading the deadline, so an earlier timer added after we read it
        // still interrupts the sleep.
        let timers_changed = shared.timers_changed.notified();
        let (getters, next_ready_at) = {
            let mut state = shared.state.lock();
            let _released = state.release_due(Instant::now());
            (state.getters_to_wake(), state.next_ready_at())
        };
        wake_getters(&shared, getters);
        match next_ready_at {
            Some(at) => {
                tokio::select! {
                    () = timer.sleep_until(at) => {}
                    () = timers_changed => {}
                }
            }
            None => timers_changed.await,
        }
    }
}

fn wake_getters<K>(shared: &Shared<K>, getters: usize) {
    for _ in 0..getters {
        shared.key_ready.notify_one();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::runtime::workqueue::metrics::RecordingMetricsProvider;
    use tokio::time::advance;

    fn ms(n: u64) -> Duration {
        Duration::from_millis(n)
    }

    /// Lets every other task run until it blocks (the clock is paused, so nothing advances it).
    async fn settle() {
        for _ in 0..10 {
            tokio::task::yield_now().await;
        }
    }

    /// A runtime with timers but no I/O driver needs the queue's fine timers off, and then
    /// delays work on tokio's timers alone.
    #[test]
    fn without_fine_timers_a_runtime_without_io_still_delivers_delayed_keys() {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_time()
            .start_paused(true)
            .build()
            .expect("a runtime");
        runtime.block_on(async {
            let queue = WorkQueue::builder("q").fine_timers(false).build();
            let start = Instant::now();
            queue.add_after("a", ms(30));
            assert_eq!(queue.get().await, Some("a"));
            assert!(start.elapsed() >= ms(30));
        });
    }

    #[tokio::test(start_paused = true)]
    async fn get_waits_for_an_add() {
        let queue = WorkQueue::new("q");
        let getter = tokio::spawn({
            let queue = queue.clone();
            async move { queue.get().await }
        });
        settle().await;
        assert!(!getter.is_finished());
        queue.add("a");
        assert_eq!(getter.await.ok().flatten(), Some("a"));
    }

    #[tokio::test(start_paused = true)]
    async fn shut_down_releases_every_waiting_getter() {
        let queue: WorkQueue<u32> = WorkQueue::new("q");
        let getters: Vec<_> = (0..3)
            .map(|_| {
                let queue = queue.clone();
                tokio::spawn(async move { queue.get().await })
            })
            .collect();
        settle().await;
        queue.shut_down();
        for getter in getters {
            assert_eq!(getter.await.ok().flatten(), None);
        }
        assert!(queue.is_shutting_down());
    }

    #[tokio::test(start_paused = true)]
    async fn each_ready_key_wakes_one_parked_getter() {
        let queue: WorkQueue<u32> = WorkQueue::new("q");
        let getters: Vec<_> = (0..4)
            .map(|_| {
                let queue = queue.clone();
                tokio::spawn(async move { queue.get().await })
            })
            .collect();
        settle().await; // all four parked
        queue.add(1);
        queue.add(2);
        settle().await;
        let finished = getters.iter().filter(|g| g.is_finished()).count();
        assert_eq!(finished, 2, "two keys, two getters woken, two still parked");
        // A timer released by the timer task wakes one of the two still parked.
        queue.add_after(3, ms(5));
        advance(ms(5)).await;
        settle().await;
        assert_eq!(getters.iter().filter(|g| g.is_finished()).count(), 3);
        queue.shut_down();
        let mut got = Vec::new();
        for getter in getters {
            got.extend(getter.await.ok().flatten());
        }
        got.sort_unstable();
        assert_eq!(got, [1, 2, 3]);
    }

    #[tokio::test(start_paused = true)]
    async fn ready_keys_are_still_handed_out_after_shut_down() {
        let queue = WorkQueue::new("q");
        queue.add("a");
        queue.add("b");
        queue.shut_down();
        queue.add("c");
        assert_eq!(queue.get().await, Some("a"));
        assert_eq!(queue.get().await, Some("b"));
        assert_eq!(queue.get().await, None);
    }

    #[tokio::test(start_paused = true)]
    async fn drain_waits_for_work_in_progress_only() {
        let queue = WorkQueue::new("q");
        queue.add("held");
        queue.add("queued");
        assert_eq!(queue.get().await, Some("held"));
        let drain = tokio::spawn({
            let queue = queue.clone();
            async move { queue.shut_down_with_drain().await }
        });
        settle().await;
        assert!(!drain.is_finished(), "\"held\" is still being processed");
        queue.done(&"held");
        assert!(drain.await.is_ok());
        // The queued key was not waited for; it is still there to take.
        assert_eq!(queue.len(), 1);
    }

    #[tokio::test(start_paused = true)]
    async fn drain_with_nothing_in_progress_returns_at_once() {
        let queue: WorkQueue<u32> = WorkQueue::new("q");
        queue.shut_down_with_drain().await;
    }

    #[tokio::test(start_paused = true)]
    async fn add_after_delivers_at_the_ready_time_not_before() {
        let queue = WorkQueue::new("q");
        let start = Instant::now();
        queue.add_after("a", ms(250));
        assert_eq!(queue.get().await, Some("a"));
        assert_eq!(start.elapsed(), ms(250));
    }

    #[tokio::test(start_paused = true)]
    async fn an_earlier_timer_interrupts_the_timer_task_sleep() {
        let queue = WorkQueue::new("q");
        let start = Instant::now();
        queue.add_after("late", Duration::from_secs(3600));
        settle().await; // the timer task now sleeps until +1h
        advance(ms(10)).await;
        queue.add_after("early", ms(10));
        assert_eq!(queue.get().await, Some("early"));
        assert_eq!(start.elapsed(), ms(20));
        assert_eq!(queue.debug_snapshot(0).waiting, 1);
    }

    #[tokio::test(start_paused = true)]
    async fn shut_down_drops_waiting_keys() {
        let queue = WorkQueue::new("q");
        queue.add_after("a", ms(10));
        queue.shut_down();
        advance(ms(20)).await;
        settle().await;
        assert_eq!(queue.get().await, None);
        assert_eq!(queue.debug_snapshot(0).heap_entries, 0);
    }

    #[tokio::test(start_paused = true)]
    async fn rate_limited_retries_back_off_exponentially_until_forgotten() {
        let queue = WorkQueue::new("q");
        let mut waits = Vec::new();
        for _ in 0..4 {
            let start = Instant::now();
            queue.add_rate_limited("a");
            assert_eq!(queue.get().await, Some("a"));
            waits.push(start.elapsed());
            queue.done(&"a");
        }
        assert_eq!(waits, [ms(5), ms(10), ms(20), ms(40)]);
        assert_eq!(queue.num_requeues(&"a"), 4);
        assert_eq!(queue.debug_snapshot(1).most_requeued, [("a", 4)]);
        queue.forget(&"a");
        assert_eq!(queue.num_requeues(&"a"), 0);
    }

    #[tokio::test(start_paused = true)]
    async fn unfinished_work_is_computed_on_demand() {
        let provider = Arc::new(RecordingMetricsProvider::new());
        let queue = WorkQueue::builder("q").metrics(provider.clone()).build();
        queue.add("a");
        queue.add("b");
        let _ = queue.get().await;
        advance(ms(300)).await;
        let _ = queue.get().await;
        advance(ms(100)).await;
        let unfinished = queue.refresh_unfinished_work();
        assert_eq!(unfinished.total, ms(500));
        assert_eq!(unfinished.longest, ms(400));
        let metrics = provider
            .queue("q")
            .expect("the queue registered its metrics");
        assert_eq!(metrics.unfinished_work(), 0.5);
        assert_eq!(metrics.longest_running_processor(), 0.4);
    }

    #[tokio::test(start_paused = true)]
    async fn a_worker_draining_a_busy_queue_lets_other_tasks_run() {
        use std::sync::atomic::{AtomicBool, Ordering};
        let queue = WorkQueue::new("q");
        let other_task_ran = Arc::new(AtomicBool::new(false));
        let worker = tokio::spawn({
            let (queue, other_task_ran) = (queue.clone(), other_task_ran.clone());
            async move {
                queue.add(0u32);
                // The queue is never empty, so `get` never has to wait for a key.
                for round in 0..100_000u32 {
                    if other_task_ran.load(Ordering::Relaxed) {
                        return Some(round);
                    }
                    let key = queue.get().await?;
                    queue.add(key + 1);
                    queue.done(&key);
                }
                None
            }
        });
        tokio::spawn(async move { other_task_ran.store(true, Ordering::Relaxed) });
        let rounds = worker.await.ok().flatten();
        assert!(
            rounds.is_some_and(|r| r <= 256),
            "worker never yielded: {rounds:?}"
        );
    }

    #[tokio::test(start_paused = true)]
    async fn dropping_the_last_handle_stops_the_timer_task() {
        let provider = Arc::new(RecordingMetricsProvider::new());
        let queue = WorkQueue::builder("q").metrics(provider.clone()).build();
        queue.add_after(1u32, Duration::from_secs(60));
        let metrics = provider.queue("q").expect("registered");
        // Held by the provider, by the queue's state and by this test.
        assert_eq!(Arc::strong_count(&metrics), 3);
        let clone = queue.clone();
        drop(queue);
        settle().await;
        assert_eq!(
            Arc::strong_count(&metrics),
            3,
            "a clone still owns the queue"
        );
        drop(clone);
        settle().await;
        // The aborted timer task released the state, and with it the metrics object.
        assert_eq!(Arc::strong_count(&metrics), 2);
    }

    #[tokio::test(start_paused = true)]
    async fn a_custom_limiter_is_used() {
        let limiter = Arc::new(crate::runtime::workqueue::BucketRateLimiter::new(1.0, 1));
        let queue = WorkQueue::builder("q").rate_limiter(limiter).build();
        let start = Instant::now();
        queue.add_rate_limited(1);
        queue.add_rate_limited(2);
        assert_eq!(queue.get().await, Some(1));
        assert_eq!(start.elapsed(), Duration::ZERO);
        assert_eq!(queue.get().await, Some(2));
        assert_eq!(start.elapsed(), Duration::from_secs(1));
        assert_eq!(queue.name(), "q");
    }
}
