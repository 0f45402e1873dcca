//! Tests of [`WorkQueue`]'s async face: waiting, wake-ups, the timer task, shut-down and drain,
//! all on tokio's paused clock.

use super::*;
use crate::metrics::RecordingMetricsProvider;
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
    let limiter = Arc::new(crate::BucketRateLimiter::new(1.0, 1));
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
