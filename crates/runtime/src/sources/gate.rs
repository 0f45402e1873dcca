//! [`Gate`] and [`Hold`]: sources wait to list while a controller still has subscriptions to
//! make at start-up.
//!
//! Why: a subscriber joining a source that already lists makes it list again (its projections
//! need the objects' text, which is gone), and a large first list is the most expensive request
//! a controller makes. At start-up the TTL controller subscribes at once, but the garbage
//! collector learns what to monitor only from discovery; holding the sources until it has
//! subscribed makes each resource's first list serve both.
//!
//! Contract:
//! - The gate is open while no [`Hold`] is alive; [`Gate::hold`] closes it until every hold is
//!   dropped.
//! - [`Gate::opened`] waits for that, but never longer than the limit the gate was built with:
//!   a controller that fails to release its hold delays the lists, never stops them (the wait
//!   that ran out is logged at Warning).

use std::sync::Arc;
use std::time::Duration;

use parking_lot::Mutex;
use tokio::sync::watch;

/// Whether sources may list.
#[derive(Clone, Debug)]
pub(super) struct Gate {
    inner: Arc<GateInner>,
}

#[derive(Debug)]
struct GateInner {
    holds: Mutex<usize>,
    open: watch::Sender<bool>,
    limit: Duration,
}

/// Keeps the sources from listing until dropped (or until the gate's limit runs out).
#[must_use = "the sources wait only while the hold is alive"]
#[derive(Debug)]
pub struct Hold {
    gate: Arc<GateInner>,
}

impl Gate {
    /// An open gate whose holds delay a list by at most `limit`.
    pub(super) fn new(limit: Duration) -> Gate {
        Gate {
            inner: Arc::new(GateInner {
                holds: Mutex::new(0),
                open: watch::Sender::new(true),
                limit,
            }),
        }
    }

    /// Closes the gate until the hold (and every other) is dropped.
    pub(super) fn hold(&self) -> Hold {
        let mut holds = self.inner.holds.lock();
        *holds += 1;
        self.inner.open.send_replace(false);
        Hold {
            gate: Arc::clone(&self.inner),
        }
    }

    /// Returns once the gate is open, or once it has been closed for the limit (what is listed
    /// for is named in the Warning).
    pub(super) async fn opened(&self, waiting: &str) {
        let mut open = self.inner.open.subscribe();
        let wait = open.wait_for(|open| *open);
        if tokio::time::timeout(self.inner.limit, wait).await.is_err() {
            tracing::warn!(
                source = waiting,
                limit = ?self.inner.limit,
                "a controller has not finished subscribing; listing without waiting longer"
            );
        }
    }
}

impl Drop for Hold {
    fn drop(&mut self) {
        let mut holds = self.gate.holds.lock();
        *holds -= 1;
        if *holds == 0 {
            self.gate.open.send_replace(true);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test(start_paused = true)]
    async fn the_gate_opens_when_the_last_hold_is_dropped() {
        let gate = Gate::new(Duration::from_secs(5));
        let (first, second) = (gate.hold(), gate.hold());
        let waiter = tokio::spawn({
            let gate = gate.clone();
            async move {
                let start = tokio::time::Instant::now();
                gate.opened("test").await;
                start.elapsed()
            }
        });
        tokio::time::sleep(Duration::from_secs(1)).await;
        drop(first);
        tokio::time::sleep(Duration::from_secs(1)).await;
        assert!(!waiter.is_finished());
        drop(second);
        assert_eq!(waiter.await.unwrap(), Duration::from_secs(2));
    }

    #[tokio::test(start_paused = true)]
    async fn a_hold_never_released_delays_by_the_limit_only() {
        let gate = Gate::new(Duration::from_secs(5));
        let _forgotten = gate.hold();
        let start = tokio::time::Instant::now();
        gate.opened("test").await;
        assert_eq!(start.elapsed(), Duration::from_secs(5));
    }

    #[tokio::test(start_paused = true)]
    async fn an_open_gate_does_not_wait() {
        let gate = Gate::new(Duration::from_secs(5));
        drop(gate.hold());
        let start = tokio::time::Instant::now();
        gate.opened("test").await;
        assert_eq!(start.elapsed(), Duration::ZERO);
    }
}
