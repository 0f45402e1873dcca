//! Differential property test of the workqueue against its reference.
//!
//! Random sequences of add / add_after / add_rate_limited / get / done / forget / time advance
//! (and, in the second test, one shut-down in the middle) drive a real [`WorkQueue`] on tokio's
//! paused clock and, side by side, the [`ReferenceQueue`] (`src/reference.rs`),
//! the rules written in plain `std` collections. Each has its own rate limiter of the same kind.
//! After every step the two must agree on what `get` hands out, on the rate limiter's counts, and
//! on `len`, `depth`, `waiting` and `in_flight`; and independently of the reference:
//!
//! - no key is ever held by two workers;
//! - no key is delivered before the earliest ready time requested for it;
//! - a key is never queued twice (`len`, `depth` and `waiting` match the model);
//! - at the end, once time has run out, every key added since its last delivery is delivered.

use futures_util::FutureExt;
use kube_gc_workqueue::{
    ItemExponentialFailureRateLimiter, RateLimiter, ReferenceQueue, WorkQueue,
};
use proptest::prelude::*;
use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;
use tokio::task::coop::unconstrained;
use tokio::time::Instant;

const KEYS: u8 = 5;
const BASE_MS: u64 = 1;
const MAX_MS: u64 = 64;

#[derive(Debug, Clone)]
enum Op {
    Add(u8),
    AddAfter(u8, u64),
    AddRateLimited(u8),
    Get,
    Done(usize),
    Forget(u8),
    Advance(u64),
    ShutDown,
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        3 => (0..KEYS).prop_map(Op::Add),
        3 => (0..KEYS, 0..40u64).prop_map(|(k, d)| Op::AddAfter(k, d)),
        2 => (0..KEYS).prop_map(Op::AddRateLimited),
        4 => Just(Op::Get),
        3 => any::<usize>().prop_map(Op::Done),
        1 => (0..KEYS).prop_map(Op::Forget),
        3 => (0..30u64).prop_map(Op::Advance),
    ]
}

/// What the test itself observes, independent of the reference.
#[derive(Default)]
struct Observed {
    held: Vec<u8>,
    /// Per key: the earliest ready time requested since its last delivery.
    due: HashMap<u8, u64>,
}

impl Observed {
    fn requested(&mut self, reference: &ReferenceQueue<u8>, key: u8, ready_at: u64) {
        if reference.is_shutting_down() {
            return; // ignored by the queue: nothing is owed
        }
        let due = self.due.entry(key).or_insert(ready_at);
        *due = (*due).min(ready_at);
    }
}

/// Lets the timer task run after the clock moved.
async fn settle() {
    for _ in 0..5 {
        tokio::task::yield_now().await;
    }
}

fn limiter() -> ItemExponentialFailureRateLimiter<u8> {
    ItemExponentialFailureRateLimiter::new(
        Duration::from_millis(BASE_MS),
        Duration::from_millis(MAX_MS),
    )
}

async fn run(ops: Vec<Op>) -> Result<(), TestCaseError> {
    let queue_limiter: Arc<dyn RateLimiter<u8>> = Arc::new(limiter());
    let queue = WorkQueue::builder("model")
        .rate_limiter(queue_limiter)
        .build();
    let start = Instant::now();
    let mut reference = ReferenceQueue::new(Box::new(limiter()));
    // The reference's clock, in ms since `start`.
    let mut now_ms = 0;
    let at = |ms: u64| start + Duration::from_millis(ms);
    let mut seen = Observed::default();

    for op in ops {
        match op {
            Op::Add(k) => {
                queue.add(k);
                reference.add(k, at(now_ms));
                seen.requested(&reference, k, now_ms);
            }
            Op::AddAfter(k, d) => {
                queue.add_after(k, Duration::from_millis(d));
                reference.add_after(k, Duration::from_millis(d), at(now_ms));
                seen.requested(&reference, k, now_ms + d);
            }
            Op::AddRateLimited(k) => {
                let before = queue.num_requeues(&k);
                queue.add_rate_limited(k);
                reference.add_rate_limited(k, at(now_ms));
                if queue.num_requeues(&k) > before {
                    let backoff = (BASE_MS << before.min(20)).min(MAX_MS);
                    seen.requested(&reference, k, now_ms + backoff);
                }
            }
            Op::Get => {
                // `unconstrained`: a poll must not come back empty because the test task's
                // cooperative budget happens to be spent.
                let polled = unconstrained(queue.get()).now_or_never();
                let expected = match reference.get(at(now_ms)) {
                    Some(k) => Some(Some(k)),
                    None if reference.is_shutting_down() => Some(None), // after shut-down: at once
                    None => None,                                       // before: still waiting
                };
                prop_assert_eq!(polled, expected);
                let got = polled.flatten();
                if let Some(k) = got {
                    prop_assert!(!seen.held.contains(&k), "key {} held twice", k);
                    let now = start.elapsed().as_millis() as u64;
                    let due = seen.due.remove(&k);
                    prop_assert!(due.is_some_and(|t| t <= now), "{} early: {:?}", k, due);
                    seen.held.push(k);
                }
            }
            Op::Done(i) if !seen.held.is_empty() => {
                let k = seen.held.swap_remove(i % seen.held.len());
                queue.done(&k);
                reference.done(&k);
            }
            Op::Done(_) => {}
            Op::Forget(k) => {
                queue.forget(&k);
                reference.forget(&k);
            }
            Op::ShutDown => {
                queue.shut_down();
                for dropped in reference.shut_down() {
                    seen.due.remove(&dropped);
                }
            }
            Op::Advance(ms) => {
                tokio::time::advance(Duration::from_millis(ms)).await;
                settle().await;
                now_ms += ms;
                reference.advance_to(at(now_ms));
            }
        }
        let snapshot = queue.debug_snapshot(0);
        prop_assert_eq!(queue.len(), reference.len());
        prop_assert_eq!(snapshot.depth, reference.depth());
        prop_assert_eq!(snapshot.waiting, reference.waiting());
        prop_assert_eq!(snapshot.in_flight, seen.held.len());
        prop_assert_eq!(reference.in_flight(), seen.held.len());
        for k in 0..KEYS {
            prop_assert_eq!(queue.num_requeues(&k), reference.num_requeues(&k));
        }
    }

    // Finish all work, let every timer fire, and drain: all outstanding requests are served.
    for k in std::mem::take(&mut seen.held) {
        queue.done(&k);
    }
    tokio::time::advance(Duration::from_secs(3600)).await;
    settle().await;
    while let Some(k) = unconstrained(queue.get()).now_or_never().flatten() {
        seen.due.remove(&k);
        queue.done(&k);
    }
    prop_assert!(seen.due.is_empty(), "never delivered: {:?}", seen.due);
    Ok(())
}

fn run_on_paused_clock(ops: Vec<Op>) -> Result<(), TestCaseError> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .start_paused(true)
        .build()
        .map_err(|e| TestCaseError::fail(e.to_string()))?;
    runtime.block_on(run(ops))
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(300))]

    #[test]
    fn queue_matches_the_reference(ops in proptest::collection::vec(op(), 1..150)) {
        run_on_paused_clock(ops)?;
    }

    #[test]
    fn queue_matches_the_reference_across_shut_down(
        before in proptest::collection::vec(op(), 1..100),
        after in proptest::collection::vec(op(), 0..50),
    ) {
        let ops = before.into_iter().chain([Op::ShutDown]).chain(after).collect();
        run_on_paused_clock(ops)?;
    }
}
