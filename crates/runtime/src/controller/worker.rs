//! One worker: the loop that takes a key, reconciles it and tells the queue how it went
//! (the body of client-go's `processNextWorkItem`, run as kcm's `wait.Until(worker, …)`).
//!
//! Contract, for each key taken:
//! - `Ok(Action::Done)` → `forget` (the key's back-off starts over next time);
//! - `Ok(Action::RequeueAfter(d))` → `forget`, then `add_after(key, d)`;
//! - `Err(e)` that says the API server was unavailable, with a [`ServerWait`] → the key parks
//!   there (logged at debug; its back-off untouched) until the server answers again; one that
//!   keeps failing while the server answers others backs off as below;
//! - any other `Err(e)` → logged, `add_rate_limited(key)`;
//! - a panic → caught, logged, counted, `add_rate_limited(key)`; the worker carries on with the
//!   next key (where kcm's `wait.Until` would restart the crashed goroutine);
//! - then always `done(key)`, so the queue may hand the key out again.
//!
//! The worker stops taking keys once the shutdown token is cancelled (or the queue reports it
//! is shut down); the key in hand is finished first, never abandoned.

use std::any::Any;
use std::fmt::Display;
use std::hash::Hash;
use std::panic::AssertUnwindSafe;
use std::sync::Arc;

use futures_util::FutureExt;
use tokio_util::sync::CancellationToken;
use tracing::Instrument;

use crate::workqueue::WorkQueue;

use super::counters::{Outcome, ReconcileCounters};
use super::reconcile::{Action, Reconciler};
use super::server_wait::{Park, ServerWait};

/// What every worker of one controller shares.
pub(super) struct Worker<K, R> {
    pub(super) controller: String,
    pub(super) queue: WorkQueue<K>,
    pub(super) reconciler: Arc<R>,
    pub(super) counters: Arc<ReconcileCounters>,
    /// Where keys wait while the API server is unavailable; without it they back off.
    pub(super) server_wait: Option<ServerWait<K>>,
}

impl<K, R> Worker<K, R>
where
    K: Clone + Eq + Hash + Display + Send + Sync + 'static,
    R: Reconciler<K>,
{
    /// Takes and processes keys until `shutdown` is cancelled or the queue is shut down.
    pub(super) async fn run(&self, shutdown: CancellationToken) {
        loop {
            let key = tokio::select! {
                // Shut-down first: a worker must not start new work once asked to stop, even
                // if keys are ready. `get` is cancel-safe, so no key is lost here.
                biased;
                () = shutdown.cancelled() => return,
                key = self.queue.get() => key,
            };
            let Some(key) = key else { return };
            self.process(key).await;
        }
    }

    /// Reconciles one key and reports the outcome to the queue.
    pub(super) async fn process(&self, key: K) {
        // Whatever the reconciler logs carries the controller and key.
        let span = tracing::info_span!("reconcile", controller = %self.controller, %key);
        let result = AssertUnwindSafe(self.reconciler.reconcile(&key))
            .catch_unwind()
            .instrument(span)
            .await;
        let outcome = match result {
            Ok(Ok(action)) => {
                self.settle(&key);
                self.queue.forget(&key);
                if let Action::RequeueAfter(delay) = action {
                    self.queue.add_after(key.clone(), delay);
                }
                Outcome::Success
            }
            Ok(Err(error)) => {
                if !(R::server_unavailable(&error) && self.parked(&key, &error)) {
                    self.settle(&key);
                    tracing::warn!(
                        controller = %self.controller,
                        %key,
                        err = %error,
                        retries = self.queue.num_requeues(&key),
                        "reconcile failed; retrying with back-off",
                    );
                    self.queue.add_rate_limited(key.clone());
                }
                Outcome::Error
            }
            Err(panic) => {
                self.settle(&key);
                tracing::error!(
                    controller = %self.controller,
                    %key,
                    panic = panic_message(panic.as_ref()),
                    retries = self.queue.num_requeues(&key),
                    "reconcile panicked; retrying with back-off",
                );
                self.queue.add_rate_limited(key.clone());
                Outcome::Panic
            }
        };
        self.counters.record(outcome);
        self.queue.done(&key);
    }

    /// Parks `key`, which failed because the server was unavailable, or queues it again now if
    /// the server already answers again; `false` when it must back off instead (no waiting room,
    /// or it keeps failing while the server answers others).
    fn parked(&self, key: &K, error: &R::Error) -> bool {
        let Some(wait) = &self.server_wait else {
            return false;
        };
        match wait.park(key.clone(), error) {
            Park::Parked => true,
            Park::RetryNow => {
                self.queue.add(key.clone());
                true
            }
            Park::BackOff => false,
        }
    }

    fn settle(&self, key: &K) {
        if let Some(wait) = &self.server_wait {
            wait.settle(key);
        }
    }
}

/// The text a panic was raised with, if it was a string (as `panic!` with a message makes it).
fn panic_message(payload: &(dyn Any + Send)) -> &str {
    if let Some(message) = payload.downcast_ref::<&'static str>() {
        message
    } else if let Some(message) = payload.downcast_ref::<String>() {
        message
    } else {
        "(not a string)"
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn panic_messages_are_recovered_from_either_string_type() {
        let literal = std::panic::catch_unwind(|| panic!("literal")).unwrap_err();
        assert_eq!(panic_message(literal.as_ref()), "literal");
        let formatted = std::panic::catch_unwind(|| panic!("formatted {}", 7)).unwrap_err();
        assert_eq!(panic_message(formatted.as_ref()), "formatted 7");
        let other = std::panic::catch_unwind(|| std::panic::panic_any(7_u8)).unwrap_err();
        assert_eq!(panic_message(other.as_ref()), "(not a string)");
    }
}
