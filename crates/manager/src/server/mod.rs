//! The HTTP server operators and Prometheus talk to: health, readiness, metrics and debug pages.
//!
//! - [`options`]: [`ServerOptions`], the flags (`--secure-port`, `--port`, `--bind-address`,
//!   `--tls-cert-file`, `--tls-private-key-file`, `--enable-debug-handlers`).
//! - [`routes`]: [`Endpoints`], path → response, socket-free.
//! - [`auth`]: [`DelegatedAuth`], who may read the secure port: the API server's TokenReview and
//!   SubjectAccessReview, cached.
//! - [`health`]: [`Readiness`], the checks behind `/readyz`.
//! - [`queues`]: [`Queues`], the workqueues shown at `/debug/workqueue` and refreshed before
//!   each scrape.
//! - [`tls`]: the HTTPS certificate, from files or self-signed.
//! - [`serve`]: [`Server`], sockets, TLS, HTTP/1.1 + HTTP/2 (hyper-util's auto builder) and
//!   graceful shutdown.
//!
//! Wiring, in `kube-gc run`:
//!
//! ```no_run
//! # async fn wire(options: kube_gc_manager::server::ServerOptions, client: kube_gc_client::Client, shutdown: tokio_util::sync::CancellationToken) -> Result<(), kube_gc_manager::server::ServerError> {
//! use std::sync::Arc;
//! use kube_gc_manager::metrics::Metrics;
//! use kube_gc_manager::server::{DelegatedAuth, Endpoints, Server};
//!
//! let metrics = Metrics::new();
//! let endpoints = Endpoints::new(metrics.clone(), options.enable_debug_handlers);
//! endpoints.readiness.add("informer-sync", || true /* all caches synced */);
//! // The secure port asks the API server who may read it (TokenReview, SubjectAccessReview).
//! let auth = DelegatedAuth::new(client, options.auth_options());
//! let server = Server::start(&options.listeners(), endpoints, Some(Arc::new(auth)), shutdown).await?;
//! server.stopped().await;
//! # Ok(()) }
//! ```

pub mod auth;
pub mod health;
pub mod options;
pub mod queues;
pub mod routes;
pub mod serve;
pub mod tls;

pub use auth::{AuthOptions, DelegatedAuth, Verdict};
pub use health::{Readiness, Report};
pub use options::{CertificateSource, Listener, ServerOptions, DEFAULT_SECURE_PORT};
pub use queues::{InspectableQueue, Queues};
pub use routes::{DebugPage, Endpoints};
pub use serve::{RunningServer, Server, ServerError};
