//! Sleeping until an instant with sub-millisecond precision, for the timer task.
//!
//! tokio's timer wheel counts whole milliseconds: a `sleep_until` deadline is rounded *up* to the
//! next 1 ms tick, and the driver parks for whole milliseconds, so a sleep ends 0–2 ms after its
//! deadline. For the workqueue that is the floor of delivery lateness.
//!
//! [`sleep_until`] does better without busy-waiting: it asks tokio to wake it [`EARLY`] before
//! the deadline, then sleeps the remaining sub-millisecond on a blocking-pool thread with the
//! operating system's sleep, which ends within tens of microseconds of the deadline (sleeps
//! shorter than [`MIN_THREAD_SLEEP`] are lengthened to it). It never wakes before the deadline.
//!
//! Under tokio's paused clock (tests with `start_paused = true`) a thread sleep would take real
//! time that the paused clock never sees, so there it finishes with tokio's own sleep instead.
//! tokio has no public "is the clock paused?", so it looks: the paused clock does not move while
//! the task yields once, the real one always does (by at least the cost of the yield). A clock
//! too coarse to see a yield would be taken for paused, which only means tokio's precision.

use std::time::Duration;
use tokio::time::Instant;

/// How long before the deadline tokio's timer is asked to wake us: its worst-case lateness.
pub(super) const EARLY: Duration = Duration::from_millis(2);

/// The shortest thread sleep worth its cost. Handing a sleep to the blocking pool costs a few
/// microseconds of CPU on two threads; when timers are due every few microseconds (a million
/// timers spread over seconds) sleeping to each one would keep a core busy with hand-offs. A
/// sleep of at least this long delivers everything due within it together, a little later.
const MIN_THREAD_SLEEP: Duration = Duration::from_micros(100);

/// Sleeps until `deadline`, ending within tens of microseconds after it on a running clock.
pub(super) async fn sleep_until(deadline: Instant) {
    let coarse = deadline.checked_sub(EARLY).unwrap_or(deadline);
    tokio::time::sleep_until(coarse).await;
    let now = Instant::now();
    if now >= deadline {
        return;
    }
    if clock_is_paused(now).await {
        tokio::time::sleep_until(deadline).await;
        return;
    }
    let remaining = deadline
        .saturating_duration_since(Instant::now())
        .max(MIN_THREAD_SLEEP);
    // If the runtime is shutting down and cannot run the blocking sleep, fall back to tokio's.
    if tokio::task::spawn_blocking(move || std::thread::sleep(remaining))
        .await
        .is_err()
    {
        tokio::time::sleep_until(deadline).await;
    }
}

/// Whether the clock stood still while this task yielded once.
async fn clock_is_paused(before: Instant) -> bool {
    tokio::task::yield_now().await;
    Instant::now() == before
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test(start_paused = true)]
    async fn on_the_paused_clock_it_ends_at_the_deadline_like_tokio() {
        // Whole milliseconds: exactly at the deadline.
        let deadline = Instant::now() + Duration::from_millis(7);
        sleep_until(deadline).await;
        assert_eq!(Instant::now(), deadline);
        // Sub-millisecond: tokio's paused clock jumps to the next 1 ms tick, never earlier.
        let deadline = Instant::now() + Duration::from_micros(300);
        sleep_until(deadline).await;
        let late = Instant::now().duration_since(deadline);
        assert!(late < Duration::from_millis(1), "{late:?}");
    }

    #[tokio::test(start_paused = true)]
    async fn a_past_deadline_returns_at_once() {
        let now = Instant::now();
        sleep_until(now - Duration::from_millis(1)).await;
        assert_eq!(Instant::now(), now);
    }
}
