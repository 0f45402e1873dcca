//! [`ServerWait`]: where one controller's keys wait while the API server cannot be reached, and
//! the task that sends them back to the workqueue the moment it answers again.
//!
//! A reconcile that fails because the server was unavailable (connection refused or broken, a
//! timeout, 429 or 5xx: [`Error::is_unavailable`](kube_gc_client::Error::is_unavailable))
//! learned nothing about its object. Backing the key off as if it had — 5 ms doubling to
//! 1000 s — would make the wait *after* an outage grow with the outage: a key that failed
//! fourteen times during a restart waits 82 s after the server is back. So such a key **parks**
//! here instead, with its back-off untouched, and comes back:
//!
//! - at once when any request of the process is answered again (a deletion, a lease renewal, a
//!   reflector's list or watch: [`ServerAvailability`] hears them all);
//! - or as a **probe**: while keys wait, the longest waiting one is sent every
//!   [`PROBE_INTERVAL`] (one at a time), so that the return is noticed within a second even
//!   when nothing else sends a request. The probe's own answer is then the return.
//!
//! The rules are pure functions of [`Parked`] (`parked.rs`); this file adds the lock, the
//! counters read by metrics and readiness, the log lines and the task.
//!
//! Contract:
//! - [`park`](ServerWait::park) and [`settle`](ServerWait::settle) are called by the worker that
//!   holds the key, before it calls `done`; `settle` after every reconcile that did not park
//!   (it costs one atomic load when nothing waits).
//! - [`run`](ServerWait::run) is the release task; its owner (the controller's runner) stops it
//!   with the workers. Released keys go back with `add`, so they are de-duplicated with keys an
//!   event queued meanwhile and never handed to two workers; their requests are paced by the
//!   client's token bucket (`--kube-api-qps`), as every request is.
//! - One Warning per outage (after the first probe interval, with the count of keys waiting)
//!   and one Info when the last key resumed; each key's failure is logged at debug (`-v=4`).

mod parked;

use std::fmt::Display;
use std::hash::Hash;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;

use parking_lot::Mutex;
use tokio::sync::Notify;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use crate::workqueue::WorkQueue;
use kube_gc_client::ServerAvailability;
use kube_gc_core::clock::sleep_until_some;

pub use parked::{
    OutageBegan, OutageEnded, Park, Parked, MAX_STRIKES, PROBE_INTERVAL, PROBE_PATIENCE,
};

/// One controller's keys that wait for the API server; cheap to clone (clones share them).
pub struct ServerWait<K> {
    shared: Arc<Shared<K>>,
}

struct Shared<K> {
    controller: String,
    availability: ServerAvailability,
    parked: Mutex<Parked<K>>,
    /// `parked.waiting()` plus the probe out, readable without the lock (metrics, readiness).
    waiting: AtomicUsize,
    /// Whether `parked` tracks any key: lets `settle` skip the lock in the common case.
    tracking: AtomicBool,
    /// A key parked: the release task re-reads when the next probe is due.
    parked_changed: Notify,
}

impl<K> Clone for ServerWait<K> {
    fn clone(&self) -> Self {
        ServerWait {
            shared: Arc::clone(&self.shared),
        }
    }
}

impl<K> std::fmt::Debug for ServerWait<K> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ServerWait")
            .field("controller", &self.shared.controller)
            .field("waiting", &self.waiting())
            .finish()
    }
}

impl<K> ServerWait<K> {
    /// Keys waiting for the API server now (the probe out included).
    pub fn waiting(&self) -> usize {
        self.shared.waiting.load(Ordering::Relaxed)
    }

    /// The controller whose keys these are.
    pub fn controller(&self) -> &str {
        &self.shared.controller
    }
}

impl<K: Clone + Eq + Hash + Display + Send + 'static> ServerWait<K> {
    /// The waiting room of `controller` (for its log lines), told of the server's returns by
    /// `availability` (the one of the client the controller's requests go through).
    pub fn new(controller: impl Into<String>, availability: ServerAvailability) -> Self {
        ServerWait {
            shared: Arc::new(Shared {
                controller: controller.into(),
                availability,
                parked: Mutex::new(Parked::default()),
                waiting: AtomicUsize::new(0),
                tracking: AtomicBool::new(false),
                parked_changed: Notify::new(),
            }),
        }
    }

    /// `key`'s reconcile failed with `error`, which says the server was unavailable: park it;
    /// or, if the server answers again already, tell the caller to queue it now; or, if it keeps
    /// failing while the server answers others, to back it off.
    pub fn park(&self, key: K, error: &dyn Display) -> Park {
        let now = self.shared.availability.current();
        let park = {
            let mut parked = self.shared.parked.lock();
            let park = parked.park(
                key.clone(),
                now.returns,
                now.answering,
                &error.to_string(),
                Instant::now(),
            );
            self.publish(&parked);
            park
        };
        match park {
            Park::Parked => {
                tracing::debug!(controller = %self.shared.controller, %key, err = %error,
                    "the API server is unavailable; the key waits for it");
                self.shared.parked_changed.notify_one();
            }
            Park::RetryNow => {
                tracing::debug!(controller = %self.shared.controller, %key, err = %error,
                    "the API server answers again already; retrying the key now");
            }
            Park::BackOff => {
                tracing::debug!(controller = %self.shared.controller, %key, err = %error,
                    strikes = MAX_STRIKES,
                    "the API server answers others but keeps failing this key; backing it off");
            }
        }
        park
    }

    /// `key`'s reconcile ended in a way that did not park it (success, or a failure of its own).
    pub fn settle(&self, key: &K) {
        if !self.shared.tracking.load(Ordering::Acquire) {
            return;
        }
        let ended = {
            let mut parked = self.shared.parked.lock();
            let ended = parked.settle(key, Instant::now());
            self.publish(&parked);
            ended
        };
        if let Some(ended) = ended {
            self.log_ended(&ended);
        }
    }

    /// Releases and probes keys into `queue` until `shutdown` is cancelled.
    pub async fn run(&self, queue: WorkQueue<K>, shutdown: CancellationToken) {
        let mut availability = self.shared.availability.subscribe();
        loop {
            let next_probe = self.shared.parked.lock().next_probe();
            tokio::select! {
                biased;
                () = shutdown.cancelled() => return,
                changed = availability.changed() => {
                    if changed.is_err() {
                        return; // Every client is gone: nothing will answer again.
                    }
                    let now = *availability.borrow_and_update();
                    if now.answering {
                        self.release(&queue, now.returns);
                    }
                }
                () = self.shared.parked_changed.notified() => {}
                () = sleep_until_some(next_probe) => self.probe(&queue),
            }
        }
    }

    /// Queues every key that parked before the server's `returns`-th return.
    fn release(&self, queue: &WorkQueue<K>, returns: u64) {
        let (released, ended) = {
            let mut parked = self.shared.parked.lock();
            let released = parked.release(returns, Instant::now());
            self.publish(&parked);
            released
        };
        for key in released {
            queue.add(key);
        }
        if let Some(ended) = ended {
            self.log_ended(&ended);
        }
    }

    /// Sends one waiting key as a probe, reporting the outage first if it is new.
    fn probe(&self, queue: &WorkQueue<K>) {
        let (began, probe) = {
            let mut parked = self.shared.parked.lock();
            let now = Instant::now();
            let began = parked.report(now);
            let probe = parked.probe(now);
            self.publish(&parked);
            (began, probe)
        };
        if let Some(began) = began {
            tracing::warn!(
                controller = %self.shared.controller,
                waiting = began.waiting,
                seconds = began.for_how_long.as_secs_f64(),
                err = %began.error,
                "the API server is unavailable; keys wait for it instead of backing off"
            );
        }
        if let Some(key) = probe {
            tracing::debug!(controller = %self.shared.controller, %key, "probing the API server with a waiting key");
            queue.add(key);
        }
    }

    /// Mirrors what readers outside the lock see.
    fn publish(&self, parked: &Parked<K>) {
        self.shared
            .waiting
            .store(parked.waiting() + parked.probes_out(), Ordering::Relaxed);
        self.shared
            .tracking
            .store(parked.is_tracking(), Ordering::Release);
    }

    fn log_ended(&self, ended: &OutageEnded) {
        tracing::info!(
            controller = %self.shared.controller,
            resumed = ended.resumed,
            seconds = ended.after.as_secs_f64(),
            "the API server answers again; the keys that waited for it are resumed"
        );
    }
}
