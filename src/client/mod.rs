//! Talking to a Kubernetes API server.
//!
//! - [`config`]: kubeconfig, in-cluster configuration, credentials and TLS.
//! - [`error`]: the client's error type; an HTTP error response or a watch `ERROR` event becomes
//!   an [`error::Error`] that controllers query with `is_not_found()`, `is_conflict()`,
//!   `is_gone()`, `retry_after()`, `is_retryable()`…
//! - [`watch_stream`]: decoding a watch response body, chunk by chunk, into
//!   [`WatchEvent`](crate::api::WatchEvent)s.

pub mod config;
pub mod error;
pub mod watch_stream;

pub use error::{ApiError, ApiErrorKind, Error};
pub use watch_stream::{WatchDecoder, WatchStream};
