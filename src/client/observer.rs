//! [`RequestObserver`]: a hook told about every HTTP attempt the [`Client`](super::Client)
//! makes, so metrics (client-go's `rest_client_*`) can be kept without the client knowing about
//! Prometheus.
//!
//! Contract: [`RequestObserver::observe`] is called exactly once per attempt — retries are
//! separate attempts — after the throttle wait, when the response headers arrived or the
//! transport failed. `elapsed` covers that span only (not the throttle wait, not the body of a
//! watch). It runs on the request path: keep it cheap and never block.

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use http::Method;
use url::Url;

/// What became of one attempt.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AttemptResult {
    /// The server answered with this status.
    Status(u16),
    /// No answer: connection refused, TLS failure, timeout...
    TransportError,
}

/// Told about every HTTP attempt.
pub trait RequestObserver: Send + Sync {
    /// One attempt of `method` to `url` ended with `result` after `elapsed`.
    fn observe(&self, method: &Method, url: &Url, result: AttemptResult, elapsed: Duration);
}

/// An optional shared observer, as [`ClientOptions`](super::ClientOptions) holds it. Two slots
/// are equal when they hold the same observer (or none).
#[derive(Clone, Default)]
pub struct ObserverSlot(pub Option<Arc<dyn RequestObserver>>);

impl fmt::Debug for ObserverSlot {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(if self.0.is_some() { "Some(..)" } else { "None" })
    }
}

impl PartialEq for ObserverSlot {
    fn eq(&self, other: &Self) -> bool {
        match (&self.0, &other.0) {
            (Some(a), Some(b)) => Arc::ptr_eq(a, b),
            (None, None) => true,
            _ => false,
        }
    }
}
