//! [`RequestObserver`]: a hook told about every HTTP attempt the [`Client`](super::Client)
//! makes, so metrics (client-go's `rest_client_*`) can be kept without the client knowing about
//! Prometheus.
//!
//! Contract: [`RequestObserver::observe`] is called exactly once per attempt — retries are
//! separate attempts — after the throttle wait, when the response headers arrived or the
//! transport failed. `elapsed` covers that span only (not the throttle wait, not the body of a
//! watch); [`RequestObserver::waited`] reports the throttle wait of the same attempt, just
//! before it is sent. Both name the client that made the attempt (its component, see
//! [`Client::for_component`](super::Client::for_component)). They run on the request path:
//! keep them cheap and never block.

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

/// One HTTP attempt, as an observer is told of it.
#[derive(Clone, Copy, Debug)]
pub struct Attempt<'a> {
    /// The client that made it: its component (`ttl-after-finished`, `shared-informers`…), or
    /// [`BASE_CLIENT`].
    pub client: &'a str,
    /// The HTTP method.
    pub method: &'a Method,
    /// The URL.
    pub url: &'a Url,
}

/// The name of a client that is no component's: the one built from the options.
pub const BASE_CLIENT: &str = "kube-gc";

/// Told about every HTTP attempt.
pub trait RequestObserver: Send + Sync {
    /// `attempt` ended with `result` after `elapsed`.
    fn observe(&self, attempt: Attempt<'_>, result: AttemptResult, elapsed: Duration);

    /// `attempt` waited `waited` for its client's rate limiter (zero when a token was there).
    fn waited(&self, attempt: Attempt<'_>, waited: Duration) {
        let _ = (attempt, waited);
    }
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
