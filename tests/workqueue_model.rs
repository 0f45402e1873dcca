//! Model-based property test of the workqueue.
//!
//! Random sequences of add / add_after / add_rate_limited / get / done / forget / time advance
//! (and, in the second test, one shut-down in the middle)
//! drive a real [`WorkQueue`] on tokio's paused clock and, side by side, a deliberately naive model
//! of the documented rules (per-key flags, a list of timers scanned linearly). After every step the
//! two must agree on what `get` hands out, and independently of the model:
//!
//! - no key is ever held by two workers;
//! - no key is delivered before the earliest ready time requested for it;
//! - a key is never queued twice (`len`, `depth` and `waiting` match the model);
//! - at the end, once time has run out, every key added since its last delivery is delivered.

use futures_util::FutureExt;
use kube_gc::runtime::workqueue::{ItemExponentialFailureRateLimiter, RateLimiter, WorkQueue};
use proptest::prelude::*;
use std::collections::{HashMap, HashSet, VecDeque};
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

/// The rules of `docs/workqueue.md`, written as plainly as possible. Times are ms since start.
#[derive(Default)]
struct Model {
    now: u64,
    shut: bool,
    ready: VecDeque<u8>,
    dirty: HashSet<u8>,
    processing: HashSet<u8>,
    /// Key → (ready time, timer number); timers fire in (time, number) order.
    waiting: HashMap<u8, (u64, u64)>,
    timers_made: u64,
    failures: HashMap<u8, u32>,
}

impl Model {
    fn add(&mut self, key: u8) {
        if self.shut || !self.dirty.insert(key) {
            return;
        }
        self.waiting.remove(&key);
        if !self.processing.contains(&key) {
            self.ready.push_back(key);
        }
    }

    fn add_after(&mut self, key: u8, delay: u64) {
        if self.shut {
            return;
        }
        if delay == 0 {
            return self.add(key);
        }
        if self.already_due_by(key, self.now + delay) {
            return;
        }
        self.waiting
            .insert(key, (self.now + delay, self.timers_made));
        self.timers_made += 1;
    }

    fn add_rate_limited(&mut self, key: u8) {
        if self.shut {
            return; // nothing reserved either
        }
        let failures = self.failures.get(&key).copied().unwrap_or(0);
        let backoff = (BASE_MS << failures.min(20)).min(MAX_MS);
        if self.already_due_by(key, self.now + backoff) {
            return; // de-duplicated: no failure counted
        }
        *self.failures.entry(key).or_insert(0) += 1;
        self.add_after(key, backoff);
    }

    fn already_due_by(&self, key: u8, at: u64) -> bool {
        self.dirty.contains(&key) || self.waiting.get(&key).is_some_and(|(t, _)| *t <= at)
    }

    fn get(&mut self) -> Option<u8> {
        let key = self.ready.pop_front()?;
        self.dirty.remove(&key);
        self.processing.insert(key);
        Some(key)
    }

    fn done(&mut self, key: u8) {
        self.processing.remove(&key);
        if self.dirty.contains(&key) {
            self.ready.push_back(key);
        }
    }

    /// Adds are ignored from now on and waiting keys are dropped; returns the dropped keys.
    fn shut_down(&mut self) -> Vec<u8> {
        self.shut = true;
        self.waiting.drain().map(|(key, _)| key).collect()
    }

    fn advance(&mut self, ms: u64) {
        self.now += ms;
        let mut due: Vec<(u64, u64, u8)> = self
            .waiting
            .iter()
            .filter(|(_, (t, _))| *t <= self.now)
            .map(|(k, (t, n))| (*t, *n, *k))
            .collect();
        due.sort();
        for (_, _, key) in due {
            self.add(key);
        }
    }
}

/// What the test itself observes, independent of the model.
#[derive(Default)]
struct Observed {
    held: Vec<u8>,
    /// Per key: the earliest ready time requested since its last delivery.
    due: HashMap<u8, u64>,
}

impl Observed {
    fn requested(&mut self, model: &Model, key: u8, ready_at: u64) {
        if model.shut {
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

async fn run(ops: Vec<Op>) -> Result<(), TestCaseError> {
    let limiter: Arc<dyn RateLimiter<u8>> = Arc::new(ItemExponentialFailureRateLimiter::new(
        Duration::from_millis(BASE_MS),
        Duration::from_millis(MAX_MS),
    ));
    let queue = WorkQueue::builder("model").rate_limiter(limiter).build();
    let start = Instant::now();
    let mut model = Model::default();
    let mut seen = Observed::default();

    for op in ops {
        match op {
            Op::Add(k) => {
                queue.add(k);
                model.add(k);
                seen.requested(&model, k, model.now);
            }
            Op::AddAfter(k, d) => {
                queue.add_after(k, Duration::from_millis(d));
                model.add_after(k, d);
                seen.requested(&model, k, model.now + d);
            }
            Op::AddRateLimited(k) => {
                let before = queue.num_requeues(&k);
                queue.add_rate_limited(k);
                model.add_rate_limited(k);
                if queue.num_requeues(&k) > before {
                    let backoff = (BASE_MS << before.min(20)).min(MAX_MS);
                    seen.requested(&model, k, model.now + backoff);
                }
            }
            Op::Get => {
                // `unconstrained`: a poll must not come back empty because the test task's
                // cooperative budget happens to be spent.
                let polled = unconstrained(queue.get()).now_or_never();
                let expected = match model.get() {
                    Some(k) => Some(Some(k)),
                    None if model.shut => Some(None), // after shut-down: `None` at once
                    None => None,                     // before: still waiting
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
                model.done(k);
            }
            Op::Done(_) => {}
            Op::Forget(k) => {
                queue.forget(&k);
                model.failures.remove(&k);
            }
            Op::ShutDown => {
                queue.shut_down();
                for dropped in model.shut_down() {
                    seen.due.remove(&dropped);
                }
            }
            Op::Advance(ms) => {
                tokio::time::advance(Duration::from_millis(ms)).await;
                settle().await;
                model.advance(ms);
            }
        }
        let snapshot = queue.debug_snapshot(0);
        prop_assert_eq!(queue.len(), model.ready.len());
        prop_assert_eq!(snapshot.depth, model.dirty.len());
        prop_assert_eq!(snapshot.waiting, model.waiting.len());
        prop_assert_eq!(snapshot.in_flight, seen.held.len());
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
    fn queue_matches_the_model(ops in proptest::collection::vec(op(), 1..150)) {
        run_on_paused_clock(ops)?;
    }

    #[test]
    fn queue_matches_the_model_across_shut_down(
        before in proptest::collection::vec(op(), 1..100),
        after in proptest::collection::vec(op(), 0..50),
    ) {
        let ops = before.into_iter().chain([Op::ShutDown]).chain(after).collect();
        run_on_paused_clock(ops)?;
    }
}
