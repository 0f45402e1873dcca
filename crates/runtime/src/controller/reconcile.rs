//! [`Reconciler`]: the one function a controller writes — make the world match one key's
//! desired state — and [`Action`], what it asks the worker loop to do next.
//!
//! Contract:
//! - `reconcile` is called with one key at a time per key (the workqueue never hands a key to
//!   two workers at once), but with different keys concurrently from several workers.
//! - It must be idempotent and level-based: it reads the current state (from the cache) and
//!   acts on it, because events are coalesced and a key may be reconciled after several changes
//!   or none.
//! - `Ok` means "done for now": the key's retry back-off is forgotten. `Err` means "retry": the
//!   key comes back after the rate limiter's delay. A panic is treated like an `Err`.
//! - An `Err` that [`Reconciler::server_unavailable`] recognises (the API server could not be
//!   reached or could not serve) is not the key's fault: with a
//!   [`ServerWait`](super::ServerWait) the key waits for the server instead of backing off.

use std::fmt::Display;
use std::future::Future;
use std::time::Duration;

/// What to do with a key after a successful reconcile.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Action {
    /// Nothing more until the key is queued again by an event.
    Done,
    /// Reconcile the key again after this delay (the TTL controller's "not expired yet, look
    /// again when it is"). An event for the key in the meantime still runs it at once.
    RequeueAfter(Duration),
}

/// A controller's reconcile function, run by the worker loop for each key it takes.
pub trait Reconciler<K>: Send + Sync + 'static {
    /// Why a reconcile failed; logged with the key, then the key is retried.
    type Error: Display + Send;

    /// Brings the object behind `key` to its desired state. Implement as an `async fn`.
    fn reconcile(&self, key: &K) -> impl Future<Output = Result<Action, Self::Error>> + Send;

    /// Whether `error` says the API server was unavailable — no answer, or 429 or 5xx
    /// ([`client::Error::is_unavailable`](kube_gc_client::Error::is_unavailable)) — and nothing
    /// about the key. The default: never.
    fn server_unavailable(error: &Self::Error) -> bool {
        let _ = error;
        false
    }
}
