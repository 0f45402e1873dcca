//! The queue's timer task: one task per queue that sleeps until the earliest waiting key is
//! due, has the state release the due keys (`state/timers.rs`), wakes parked getters for them,
//! and sleeps again.
//!
//! The reference (`reference.rs`) has no task: its caller passes `now`, and every call first
//! fires the timers due by then. Here time passes on its own, so something must fire timers
//! while nobody calls: this task. `get` and `add_after` release due keys in passing too, so on a
//! busy queue the task rarely has work; `add_after` wakes it only when the new timer became the
//! earliest one. It sleeps on a [`FineTimer`], punctual to tens of microseconds.
//!
//! Owner: the queue's `Inner`, which aborts it on shut-down and when the last handle is dropped.

use super::Shared;
use crate::fine_timer::FineTimer;
use std::hash::Hash;
use std::sync::Arc;
use tokio::time::Instant;

/// The timer task: releases due keys, then sleeps until the earliest timer (punctually: see
/// [`FineTimer`]) or until a new earliest timer arrives. Stopped by abort (shut-down, or the
/// last queue handle dropped).
pub(super) async fn run_timers<K>(shared: Arc<Shared<K>>, mut timer: FineTimer)
where
    K: Clone + Eq + Hash,
{
    loop {
        // Registered before reading the deadline, so an earlier timer added after we read it
        // still interrupts the sleep.
        let timers_changed = shared.timers_changed.notified();
        let (wake, next_ready_at) = {
            let mut state = shared.state.lock();
            let wake = state.release_due(Instant::now());
            (wake, state.next_ready_at())
        };
        shared.wake(wake);
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
