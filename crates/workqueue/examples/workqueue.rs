//! # The workqueue on its own
//!
//! ```sh
//! cargo run --example workqueue
//! ```
//!
//! Every controller in kube-gc hands work to its workers through a
//! [`WorkQueue`](kube_gc_workqueue::WorkQueue) of keys (`namespace/name` strings here).
//! This example uses one queue with no API server at all, in four scenes; read them in the order
//! `run` plays them:
//!
//! 1. `dedup`: `add` of a key already queued does nothing, and a key is never handed to two
//!    workers at once — added while a worker holds it, it comes back after `done`.
//! 2. `delays`: `add_after` holds a key until its time; the earlier of two times wins.
//! 3. `back_off`: a key whose work keeps failing is re-queued with `add_rate_limited`, waiting
//!    twice as long after each failure, until it succeeds and `forget` clears its history.
//! 4. `shutting_down`: after `shut_down`, adds are ignored, timers dropped, and `get` hands out
//!    what is still queued, then `None`.
//!
//! Each line printed starts with the milliseconds since the start, so you can see when things
//! happen. The test at the bottom plays the same scenes on tokio's paused clock — timers fire
//! as soon as nothing else can run — and checks the order and the times, in no real time.
//!
//! Next, in kube-gc's own `examples/` at the repository's top: `informer.rs` (where keys come
//! from), then `expiring_configmaps.rs` (a whole controller). The queue's design is in this
//! crate's `README.md`.

use std::sync::Arc;
use std::time::Duration;

use kube_gc_workqueue::{ItemExponentialFailureRateLimiter, WorkQueue};
use tokio::time::Instant;

/// The wait before the first retry; each further failure doubles it.
const BASE_BACKOFF: Duration = Duration::from_millis(100);
/// However many failures, a retry never waits longer than this.
const MAX_BACKOFF: Duration = Duration::from_secs(10);
/// How many times the flaky key fails before it succeeds.
const FAILURES: u32 = 3;

#[tokio::main]
async fn main() {
    let mut timeline = Timeline::new();
    run(&mut timeline).await;
}

/// Plays the four scenes on one queue.
async fn run(t: &mut Timeline) {
    let queue = new_queue();
    dedup(&queue, t).await;
    delays(&queue, t).await;
    back_off(&queue, t).await;
    shutting_down(&queue, t).await;
}

/// A queue whose retries back off per key: 100 ms, 200 ms, 400 ms... The default limiter
/// (`WorkQueue::new`) also caps the retries of all keys together at 10 per second; one per-key
/// limiter keeps the numbers easy to follow.
fn new_queue() -> WorkQueue<String> {
    let limiter = ItemExponentialFailureRateLimiter::new(BASE_BACKOFF, MAX_BACKOFF);
    WorkQueue::builder("example")
        .rate_limiter(Arc::new(limiter))
        .build()
}

/// Scene 1: de-duplication, and a key added while a worker holds it.
async fn dedup(queue: &WorkQueue<String>, t: &mut Timeline) {
    for key in ["default/a", "default/b", "default/a"] {
        queue.add(key.to_string());
    }
    t.say(format!("added a, b, a: {} keys queued", queue.len()));
    // A worker takes `a`; while it works, an event for `a` arrives. The queue must neither
    // hand `a` to a second worker now (two workers on one object race) nor forget the event.
    let Some(a) = queue.get().await else { return };
    t.say(format!("got {a}"));
    queue.add(a.clone());
    t.say(format!(
        "added {a} while a worker holds it: {} key ready (b)",
        queue.len()
    ));
    work_one(queue, t).await; // b
    queue.done(&a);
    t.say(format!(
        "done {a}: it was added meanwhile, so it is queued again"
    ));
    work_one(queue, t).await; // a, the second time
}

/// Scene 2: keys that wait for their time.
async fn delays(queue: &WorkQueue<String>, t: &mut Timeline) {
    queue.add_after("default/later".to_string(), Duration::from_millis(300));
    // A second, later time for a waiting key is dropped: the earlier one wins.
    queue.add_after("default/later".to_string(), Duration::from_secs(5));
    queue.add_after("default/sooner".to_string(), Duration::from_millis(100));
    queue.add("default/now".to_string());
    t.say("add_after later in 300 ms (then in 5 s, dropped), sooner in 100 ms; add now");
    for _ in 0..3 {
        work_one(queue, t).await;
    }
}

/// Scene 3: a key that fails `FAILURES` times, then succeeds.
async fn back_off(queue: &WorkQueue<String>, t: &mut Timeline) {
    queue.add("default/flaky".to_string());
    while let Some(key) = queue.get().await {
        let attempt = queue.num_requeues(&key) + 1;
        if attempt <= FAILURES {
            // Failed: try again later. The limiter counts the failure and picks the wait.
            queue.add_rate_limited(key.clone());
            let failures = queue.num_requeues(&key);
            t.say(format!(
                "got {key}: attempt {attempt} fails, {failures} failures, retry later"
            ));
            queue.done(&key);
        } else {
            // Succeeded: forget the failures, so the next failure starts from 100 ms again.
            queue.forget(&key);
            let failures = queue.num_requeues(&key);
            t.say(format!(
                "got {key}: attempt {attempt} succeeds, forgotten: {failures} failures"
            ));
            queue.done(&key);
            return;
        }
    }
}

/// Scene 4: shutting down with one key queued and one waiting for its timer.
async fn shutting_down(queue: &WorkQueue<String>, t: &mut Timeline) {
    queue.add("default/last".to_string());
    queue.add_after("default/never".to_string(), Duration::from_millis(50));
    queue.shut_down();
    queue.add("default/ignored".to_string());
    t.say("shut down with last queued, never waiting 50 ms; then added ignored");
    while work_one(queue, t).await.is_some() {}
    t.say("get returned None: shut down and nothing left");
}

/// One worker's turn with nothing to do: take a key, say so, mark it done. `None` once the
/// queue is shut down and empty.
async fn work_one(queue: &WorkQueue<String>, t: &mut Timeline) -> Option<String> {
    let key = queue.get().await?;
    t.say(format!("got {key}"));
    queue.done(&key);
    Some(key)
}

/// What happened and when: printed as it happens, and kept for the test.
struct Timeline {
    start: Instant,
    lines: Vec<(u128, String)>,
}

impl Timeline {
    fn new() -> Self {
        Timeline {
            start: Instant::now(),
            lines: Vec::new(),
        }
    }

    fn say(&mut self, what: impl Into<String>) {
        let ms = self.start.elapsed().as_millis();
        let what = what.into();
        println!("{ms:>5} ms  {what}");
        self.lines.push((ms, what));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// On the paused clock, time moves only when every task waits on a timer, and then straight
    /// to that timer: the times below are exact, and the test takes no real time.
    #[tokio::test(start_paused = true)]
    async fn the_scenes_hand_out_keys_in_order_and_on_time() {
        let mut timeline = Timeline::new();
        run(&mut timeline).await;
        let got: Vec<(u128, &str)> = timeline
            .lines
            .iter()
            .filter(|(_, line)| line.starts_with("got "))
            .map(|(ms, line)| (*ms, line.split(':').next().unwrap_or(line)))
            .collect();
        let expected = [
            // Scene 1: `a` only once while queued, and again after `done`.
            (0, "got default/a"),
            (0, "got default/b"),
            (0, "got default/a"),
            // Scene 2: at once, then in the order of their times.
            (0, "got default/now"),
            (100, "got default/sooner"),
            (300, "got default/later"),
            // Scene 3: retries after 100, 200 and 400 ms.
            (300, "got default/flaky"),
            (400, "got default/flaky"),
            (600, "got default/flaky"),
            (1000, "got default/flaky"),
            // Scene 4: what was queued; nothing added after shut-down, no timer.
            (1000, "got default/last"),
        ];
        assert_eq!(got, expected);
        let last = timeline.lines.last().map(|(_, line)| line.as_str());
        assert_eq!(last, Some("get returned None: shut down and nothing left"));
    }
}
