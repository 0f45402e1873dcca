//! Tests of the fast queue's state machine: each rule on its own, with the invariants of
//! `state.rs` checked after the steps (the differential test against the reference is
//! `tests/workqueue_model.rs`).

use super::timers::{FAR_FUTURE, STALE_TIMER_SLACK};
use super::*;
use crate::metrics::{MetricsProvider, RecordingMetricsProvider};
use crate::rate_limiter::RateLimiter;
use crate::rate_limiter::{default_controller_rate_limiter, ItemExponentialFailureRateLimiter};
use std::collections::HashSet;
use std::sync::atomic::{AtomicU32, Ordering};

fn ms(n: u64) -> Duration {
    Duration::from_millis(n)
}

/// Getters parked in the states of these tests, more than any test makes keys ready: the
/// wake-up a change asks for then tells how many keys it made ready.
const PARKED: usize = 1_000_000;

/// What a change that made one key ready asks for.
const READY: Wake = Wake {
    getters: 1,
    timer_task: false,
};
/// What a change that made no key ready and left the earliest timer alone asks for.
const NOTHING: Wake = Wake {
    getters: 0,
    timer_task: false,
};
/// What a change that made a new earliest timer (and no key ready) asks for.
const TIMER: Wake = Wake {
    getters: 0,
    timer_task: true,
};

/// A state whose clock starts at `epoch`, with [`PARKED`] getters parked.
fn new_state(epoch: Instant) -> QueueState<&'static str> {
    QueueState::new(RecordingMetricsProvider::new().queue_metrics("test"), epoch)
        .with_parked_getters()
}

impl<K: Clone + Eq + Hash + std::fmt::Debug> QueueState<K> {
    fn with_parked_getters(mut self) -> Self {
        self.idle_getters = PARKED;
        self
    }

    /// `pop_ready`'s key.
    fn take(&mut self, now: Instant) -> Option<K> {
        self.pop_ready(now).map(|(key, _)| key)
    }

    /// Asserts every invariant listed in the module documentation.
    fn check(&self) {
        let unique: HashSet<KeyId> = self.ready.iter().copied().collect();
        assert_eq!(unique.len(), self.ready.len(), "a key is in `ready` twice");
        let mut dirty = 0;
        let mut waiting = 0;
        let mut idle_dirty = 0;
        let mut processing = 0;
        for (id, key, state) in self.keys.iter() {
            assert_eq!(self.keys.find(key), Some(id), "{key:?} not indexed");
            processing += usize::from(state.processing.is_some());
            match state.pending {
                Pending::Dirty { .. } => {
                    dirty += 1;
                    if state.processing.is_none() {
                        idle_dirty += 1;
                        assert!(unique.contains(&id), "{key:?} dirty and idle, not ready");
                    }
                }
                Pending::Waiting { seq, .. } => {
                    waiting += 1;
                    let live = self.timers.iter().filter(|t| t.seq == seq && t.key == id);
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
        assert_eq!(self.unannounced, 0, "a change left keys unannounced");
        if let Some(top) = self.timers.peek() {
            assert!(self.is_live(&top), "stale timer on top");
        }
    }

    fn drain_ready(&mut self, now: Instant) -> Vec<K> {
        std::iter::from_fn(|| self.take(now)).collect()
    }
}

#[test]
fn add_deduplicates_and_keeps_fifo_order() {
    let now = Instant::now();
    let mut q = new_state(now);
    assert_eq!(q.add("a", now), READY);
    assert_eq!(q.add("b", now), READY);
    assert_eq!(q.add("a", now), NOTHING);
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
    assert_eq!(q.take(now), Some("a"));
    assert_eq!(
        q.add("a", now),
        NOTHING,
        "held by a worker: only marked dirty"
    );
    assert_eq!(q.add("a", now), NOTHING);
    q.check();
    assert_eq!(q.take(now), None, "never handed to a second worker");
    assert_eq!(q.done(&"a", now), READY);
    q.check();
    assert_eq!(q.drain_ready(now), ["a"]);
    assert_eq!(q.done(&"a", now), NOTHING);
    q.check();
    assert!(q.keys.len() == 0, "finished keys are forgotten");
}

#[test]
fn done_of_an_unknown_or_idle_key_is_ignored() {
    let now = Instant::now();
    let mut q = new_state(now);
    assert_eq!(q.done(&"x", now), NOTHING);
    let _ = q.add("a", now);
    assert_eq!(q.done(&"a", now), NOTHING);
    q.check();
    assert_eq!(q.drain_ready(now), ["a"]);
}

#[test]
fn add_after_keeps_the_earlier_ready_time() {
    let t0 = Instant::now();
    let mut q = new_state(t0);
    assert_eq!(q.add_after("a", ms(100), t0), TIMER);
    assert_eq!(q.add_after("a", ms(200), t0), NOTHING, "later: dropped");
    assert_eq!(q.add_after("a", ms(100), t0), NOTHING, "equal: dropped");
    assert_eq!(q.next_ready_at(), Some(t0 + ms(100)));
    assert_eq!(q.add_after("a", ms(50), t0), TIMER, "earlier: replaces");
    q.check();
    assert_eq!(q.next_ready_at(), Some(t0 + ms(50)));
    assert_eq!(q.release_due(t0 + ms(49)).getters, 0);
    assert_eq!(q.release_due(t0 + ms(50)).getters, 1);
    q.check();
    assert_eq!(q.drain_ready(t0 + ms(50)), ["a"]);
    let _ = q.done(&"a", t0 + ms(50));
    assert_eq!(
        q.release_due(t0 + ms(1000)).getters,
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
    assert_eq!(q.release_due(t0 + ms(25)).getters, 2);
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
    assert_eq!(q.take(t0 + ms(15)), Some("a"));
    assert_eq!(q.take(t0 + ms(15)), None, "\"b\" is not due yet");
    q.check();
    let m = provider.queue("m").expect("created above");
    assert_eq!(
        m.queue_durations(),
        [0.005],
        "queued from its ready time, not its take"
    );
    assert_eq!(q.take(t0 + ms(20)), Some("b"));
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
    assert_eq!(
        q.add_after("c", ms(100), t0 + ms(10)),
        Wake {
            getters: 2,
            timer_task: true
        },
        "two keys released, and a new earliest timer"
    );
    assert_eq!(q.ready_len(), 2);
    assert_eq!(q.next_ready_at(), Some(t0 + ms(110)));
    q.check();
    assert_eq!(q.drain_ready(t0 + ms(10)), ["a", "b"]);
}

#[test]
fn wake_ups_go_only_to_parked_getters_one_per_ready_key() {
    let t0 = Instant::now();
    let mut q = QueueState::new(RecordingMetricsProvider::new().queue_metrics("test"), t0);
    assert_eq!(q.add("a", t0).getters, 0, "nobody parked: no wake-up");
    assert_eq!(q.take(t0), Some("a"));
    q.park_getter();
    q.park_getter();
    assert_eq!(q.add("b", t0).getters, 1);
    assert_eq!(q.add("b", t0).getters, 0, "a key is announced once");
    assert_eq!(q.add("c", t0).getters, 1, "the other parked getter");
    assert_eq!(q.add("d", t0).getters, 0, "both parked getters woken");
    assert_eq!(q.add("e", t0).getters, 0);
}

#[test]
fn zero_delay_adds_at_once() {
    let now = Instant::now();
    let mut q = new_state(now);
    assert_eq!(q.add_after("a", Duration::ZERO, now), READY);
    assert_eq!(q.drain_ready(now), ["a"]);
}

#[test]
fn immediate_add_of_a_waiting_key_replaces_its_timer() {
    // kubernetes#112325: client-go would deliver "a" now and again at +1h.
    let t0 = Instant::now();
    let mut q = new_state(t0);
    let _ = q.add_after("a", Duration::from_secs(3600), t0);
    assert_eq!(q.add("a", t0), READY);
    q.check();
    assert_eq!(
        q.next_ready_at(),
        None,
        "the cancelled timer was on top and is gone"
    );
    assert_eq!(q.drain_ready(t0), ["a"]);
    let _ = q.done(&"a", t0);
    assert_eq!(q.release_due(t0 + Duration::from_secs(3600)).getters, 0);
    assert!(q.keys.len() == 0);
}

#[test]
fn add_after_of_a_queued_key_is_dropped() {
    let now = Instant::now();
    let mut q = new_state(now);
    let _ = q.add("a", now);
    assert_eq!(q.add_after("a", ms(10), now), NOTHING);
    q.check();
    assert_eq!(q.timers.len(), 0);
}

#[test]
fn add_after_while_processing_waits_and_then_waits_for_done() {
    let t0 = Instant::now();
    let mut q = new_state(t0);
    let _ = q.add("a", t0);
    assert_eq!(q.take(t0), Some("a"));
    // The worker re-queues its own key for later, the usual retry pattern.
    assert_eq!(q.add_after("a", ms(10), t0), TIMER);
    q.check();
    // Due while the worker still holds it: it becomes dirty, but is not handed out yet.
    assert_eq!(q.release_due(t0 + ms(10)).getters, 0);
    assert_eq!(q.take(t0 + ms(10)), None);
    q.check();
    assert_eq!(q.done(&"a", t0 + ms(11)), READY);
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
        assert_eq!(q.take(now), Some("a"));
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
    assert_eq!(q.take(now), Some("ready"));
    let _ = q.add_after("ready", ms(10), now);
    q.shut_down();
    q.check();
    assert_eq!(q.next_ready_at(), None);
    assert_eq!(q.add("new", now), NOTHING);
    assert_eq!(q.add_after("new", ms(1), now), NOTHING);
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
    assert_eq!(q.add_rate_limited("a", &limiter, t0), TIMER);
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
    assert_eq!(q.add_rate_limited("a", &limiter, t0), TIMER);
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
        QueueState::new(RecordingMetricsProvider::new().queue_metrics("t"), t0)
            .with_parked_getters();
    let limiter = default_controller_rate_limiter::<u32>();
    // 100 keys retried 100 times each: only the first retry of each key reserves a token,
    // so the burst of 100 covers them all and nothing waits longer than 5 ms.
    for _ in 0..100 {
        for key in 0..100 {
            let _ = q.add_rate_limited(key, &limiter, t0);
        }
    }
    assert_eq!(q.waiting, 100);
    assert_eq!(q.release_due(t0 + ms(5)).getters, 100);
}

#[test]
fn metrics_follow_client_go_meanings() {
    let provider = RecordingMetricsProvider::new();
    let t0 = Instant::now();
    let mut q = QueueState::new(provider.queue_metrics("m"), t0).with_parked_getters();
    let m = provider.queue("m").expect("created above");
    let _ = q.add("a", t0);
    let _ = q.add("a", t0); // de-duplicated: not an add
    let _ = q.add_after("b", ms(10), t0);
    let _ = q.add_after("b", ms(20), t0); // dropped, but still a retry
    assert_eq!((m.adds(), m.retries(), m.depth()), (1, 2, 1));
    assert_eq!(q.release_due(t0 + ms(10)).getters, 1);
    assert_eq!((m.adds(), m.depth()), (2, 2));
    let _ = q.take(t0 + ms(30));
    assert_eq!(m.depth(), 1);
    assert_eq!(m.queue_durations(), [0.030]);
    let _ = q.take(t0 + ms(30));
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
    let _ = q.take(t0);
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
