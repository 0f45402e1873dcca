//! Talking to a Kubernetes API server.
//!
//! What exists so far:
//! - [`config`]: where to connect and as whom — kubeconfig files loaded and merged as kubectl
//!   does, in-cluster service-account configuration, every credential kind (tokens, token files,
//!   client certificates, basic auth, exec plugins), impersonation, and the rustls configuration.
//! - [`error`]: the client's error type; an HTTP error response or a watch `ERROR` event becomes
//!   an [`error::Error`] that controllers query with `is_not_found()`, `is_conflict()`,
//!   `is_gone()`, `retry_after()`, `is_retryable()`…
//! - [`watch_stream`]: decoding a watch response body, chunk by chunk, into
//!   [`WatchEvent`](crate::api::WatchEvent)s.
//!
//! Not built yet (issue #4): the REST verbs, discovery and client-side throttling. Until then
//! nothing in kube-gc sends a request to a real cluster.

pub mod config;
pub mod error;
pub mod watch_stream;

pub use error::{ApiError, ApiErrorKind, Error};
pub use watch_stream::{WatchDecoder, WatchStream};
