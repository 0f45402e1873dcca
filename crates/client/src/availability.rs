//! [`ServerAvailability`]: whether the API server is answering, as the requests of every client
//! built from one configuration find it — the signal that work parked during an outage waits on.
//!
//! Contract:
//! - Every attempt a [`Client`](super::Client) makes, and every attempt of the clients derived
//!   from it with [`for_component`](super::Client::for_component), is recorded here once: when
//!   its response headers arrive or its transport fails.
//! - An attempt **finds the server unavailable** when no answer came (connection refused or
//!   reset, TLS failure, timeout), or when the answer says the server could not serve it: 429 or
//!   any 5xx ([`status_says_unavailable`]) — throttled, shutting down, its storage down or
//!   erring, a proxy in front finding no server. Any other answer, an error or not (a 404, a
//!   409, a 422), shows a server at work.
//! - The state follows the attempts: [`Availability::answering`] until one finds the server
//!   unavailable, then not until one is answered. Each return to answering counts one more
//!   [`Availability::returns`] and wakes every [`subscribe`](ServerAvailability::subscribe)r:
//!   the moment work parked for the server may resume.
//! - Recording is one uncontended lock per attempt and wakes nobody unless the state changes.
//!
//! Why a state of the whole process and not of each request: a connection refused says nothing
//! about the object a request was about. Every request fails the same way until the server is
//! back, and a controller that learns of the return from any request (a deletion, a lease
//! renewal, a reflector's list) can resume all its parked work at once.

use std::sync::Arc;
use std::time::Duration;

/// Logs a failed request at Warning — or at debug (`-v=2` and up) when `$error`
/// [`is_unavailable`](super::Error::is_unavailable): an outage is said once, by
/// [`report_outages`] and by each controller's waiting keys, not once per request that met it.
/// The arguments after the error are `tracing`'s (the caller's crate depends on `tracing`).
#[macro_export]
macro_rules! warn_unless_unavailable {
    ($error:expr, $($event:tt)+) => {
        if $error.is_unavailable() {
            tracing::debug!($($event)+)
        } else {
            tracing::warn!($($event)+)
        }
    };
}
pub use crate::warn_unless_unavailable;

use tokio::sync::watch;
use tokio::time::Instant;

use super::observer::AttemptResult;

/// The API server's availability as the process last found it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Availability {
    /// Whether the last attempt was answered.
    pub answering: bool,
    /// When the current outage began: the first attempt that found the server unavailable after
    /// one was answered. `None` while answering.
    pub unavailable_since: Option<Instant>,
    /// How many outages have ended: returns to answering since the process started.
    pub returns: u64,
    /// How long the last outage that ended lasted (zero before the first).
    pub last_outage: Duration,
    /// How the current outage's first failed attempt failed. `None` while answering.
    pub failure: Option<AttemptResult>,
}

impl Availability {
    fn new() -> Self {
        Availability {
            answering: true,
            unavailable_since: None,
            returns: 0,
            last_outage: Duration::ZERO,
            failure: None,
        }
    }

    /// How long the server has been unavailable at `now` (zero while it answers).
    pub fn unavailable_for(&self, now: Instant) -> Duration {
        self.unavailable_since
            .map_or(Duration::ZERO, |since| now.saturating_duration_since(since))
    }

    /// The state after an attempt that ended at `now` with `result`; `None` when it is
    /// unchanged.
    fn after(&self, result: AttemptResult, now: Instant) -> Option<Availability> {
        match (self.answering, attempt_says_unavailable(result)) {
            (true, true) => Some(Availability {
                answering: false,
                unavailable_since: Some(now),
                failure: Some(result),
                ..*self
            }),
            (false, false) => Some(Availability {
                answering: true,
                unavailable_since: None,
                returns: self.returns + 1,
                last_outage: self.unavailable_for(now),
                failure: None,
            }),
            _ => None,
        }
    }
}

/// Whether an answer with HTTP status `code` says the server could not serve the request now,
/// rather than anything about it: 429 (throttled) and every 5xx — 500 (an internal error, etcd
/// erring: exchange 63), 502 and 504 (a proxy or load balancer in front found no server, or the
/// request's deadline passed with etcd down: exchanges 77, 78), 503 (`apiserver is shutting
/// down`, an aggregated API down).
pub fn status_says_unavailable(code: u16) -> bool {
    code == 429 || (500..600).contains(&code)
}

/// Whether an attempt that ended with `result` found the server unavailable.
pub fn attempt_says_unavailable(result: AttemptResult) -> bool {
    match result {
        AttemptResult::TransportError => true,
        AttemptResult::Status(code) => status_says_unavailable(code),
    }
}

/// The availability every client built from one configuration records into; cheap to clone
/// (clones share it).
#[derive(Clone, Debug)]
pub struct ServerAvailability {
    state: Arc<watch::Sender<Availability>>,
}

impl Default for ServerAvailability {
    fn default() -> Self {
        ServerAvailability {
            state: Arc::new(watch::Sender::new(Availability::new())),
        }
    }
}

impl ServerAvailability {
    /// A server taken to be answering until an attempt says otherwise.
    pub fn new() -> Self {
        Self::default()
    }

    /// Records the outcome of one attempt.
    pub fn record(&self, result: AttemptResult) {
        let now = Instant::now();
        self.state
            .send_if_modified(|state| match state.after(result, now) {
                Some(next) => {
                    *state = next;
                    true
                }
                None => false,
            });
    }

    /// The state now.
    pub fn current(&self) -> Availability {
        *self.state.borrow()
    }

    /// Follows the state: `changed()` wakes on each change (a return, or an outage beginning).
    pub fn subscribe(&self) -> watch::Receiver<Availability> {
        self.state.subscribe()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn answers_that_say_nothing_about_the_server_keep_it_answering() {
        for code in [200, 201, 400, 401, 403, 404, 409, 410, 422] {
            assert!(!status_says_unavailable(code), "{code}");
        }
        for code in [429, 500, 502, 503, 504] {
            assert!(status_says_unavailable(code), "{code}");
        }
        assert!(attempt_says_unavailable(AttemptResult::TransportError));
    }

    #[tokio::test(start_paused = true)]
    async fn an_outage_begins_at_its_first_failure_and_ends_at_the_first_answer() {
        let availability = ServerAvailability::new();
        let mut changes = availability.subscribe();
        availability.record(AttemptResult::Status(404));
        assert!(!changes.has_changed().unwrap_or(true), "no change, no wake");

        let began = Instant::now();
        availability.record(AttemptResult::TransportError);
        tokio::time::advance(Duration::from_secs(3)).await;
        availability.record(AttemptResult::Status(503));
        let down = availability.current();
        assert!(!down.answering);
        assert_eq!(
            down.unavailable_since,
            Some(began),
            "the outage began at the first"
        );
        assert_eq!(down.unavailable_for(Instant::now()), Duration::from_secs(3));
        assert!(changes.has_changed().unwrap_or(false));
        changes.mark_unchanged();

        tokio::time::advance(Duration::from_secs(2)).await;
        availability.record(AttemptResult::Status(409));
        let back = availability.current();
        assert!(back.answering);
        assert_eq!(back.returns, 1);
        assert_eq!(back.last_outage, Duration::from_secs(5));
        assert_eq!(back.unavailable_for(Instant::now()), Duration::ZERO);
        assert!(changes.has_changed().unwrap_or(false), "a return wakes");
    }
}
