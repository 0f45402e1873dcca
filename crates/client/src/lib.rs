//! Talking to a Kubernetes API server: configuration, the request path, the verbs, watches and
//! discovery — written on reqwest, with no kube-rs or k8s-openapi underneath.
//!
//! ```no_run
//! use kube_gc_api::{DeleteOptions, Job};
//! use kube_gc_client::config::{ClientConfig, Environment, LoadOptions};
//! use kube_gc_client::{Api, Client, ClientOptions, ListParams};
//!
//! # async fn example() -> Result<(), Box<dyn std::error::Error>> {
//! // What kubectl would use: --kubeconfig, KUBECONFIG, ~/.kube/config, or in-cluster.
//! let config = ClientConfig::load(&LoadOptions::default(), &Environment::from_process())?;
//! // 20 requests per second, bursts of 30, User-Agent kube-gc/<version>.
//! let client = Client::new(&config, &ClientOptions::default())?;
//!
//! let jobs: Api<Job> = Api::namespaced(client, "default");
//! for job in jobs.list(&ListParams::default().with_limit(500)).await?.items {
//!     println!("{:?}", job.metadata.name);
//! }
//! match jobs.delete("pi", &DeleteOptions::background()).await {
//!     Err(e) if e.is_not_found() => {} // already gone: what we wanted
//!     other => drop(other?),
//! }
//! # Ok(())
//! # }
//! ```
//!
//! How a request travels (each step is one module, readable on its own):
//!
//! 1. [`config`] resolves *where and who*: server URL, TLS (rustls, ring), the credential
//!    source, impersonation — from a kubeconfig or the pod's service account.
//! 2. [`Api<K>`](handle::Api) ([`handle`]) turns a verb into an [`ApiRequest`] ([`request`]):
//!    method, URL from a [`ResourceRef`] ([`resource_ref`]), query from the verb's options
//!    ([`params`]), `Accept` (full object or metadata-only) and body. Plain data, no I/O.
//! 3. [`Client`] ([`transport`]) sends it: one token from the [`Throttle`] ([`throttle`], on
//!    the crate's [`TokenBucket`](kube_gc_workqueue::token_bucket::TokenBucket)), then the
//!    `Authorization` and impersonation headers, then reqwest (HTTP/2 when ALPN offers it,
//!    pooled connections, per-request timeout except for watches). A 401 with a refreshable
//!    credential is retried once; a 429/5xx with `Retry-After` is retried after that wait
//!    ([`retry`]).
//! 4. The answer: an error status becomes an [`Error::Api`] from its Status body
//!    ([`error`]); a success is decoded from JSON, or streamed into
//!    [`WatchEvent`](kube_gc_api::WatchEvent)s ([`watch_stream`]). Lists are paged and
//!    restarted on an expired continue token by the [`Pager`] ([`pager`]), and each page is
//!    decoded item by item as its body streams in ([`list_decoder`]), never buffered whole.
//!    Lists and watches ask for protobuf where the reader can read it ([`negotiate`]); a
//!    protobuf answer, told by its `Content-Type`, is read by [`protobuf`] and each object
//!    transcoded to the JSON text the same item decoders read (`protobuf_answers`).
//!
//! [`discovery`] reads what the server serves: the deletable resources the garbage collector
//! monitors, and the kind → resource mapping it needs to look owners up.
//!
//! Every attempt also tells the client's [`ServerAvailability`] ([`availability`]) whether the
//! server answered: no answer, 429 or 5xx makes it unavailable, any other answer answering
//! again, and each return wakes what waits for it. [`outage::watch_outages`] says once per
//! outage that the server is away and back, and asks `/readyz` meanwhile.
//!
//! A kubeconfig's `tls-server-name` is sent as the TLS SNI through an [`SniRoute`](sni::SniRoute)
//! ([`sni`]), as client-go sends it.
//!
//! Options that do not come from the kubeconfig (rate, timeouts, user agent) are
//! [`ClientOptions`] ([`options`]); among them an optional [`RequestObserver`] ([`observer`])
//! told about every HTTP attempt, which is how request metrics are kept.

pub mod availability;
pub mod config;
pub mod decode;
pub mod discovery;
pub mod error;
pub mod handle;
mod json_extent;
pub mod list_decoder;
pub mod negotiate;
pub mod observer;
pub mod options;
pub mod outage;
pub mod pager;
pub mod params;
pub mod protobuf;
mod protobuf_answers;
pub mod request;
pub mod resource_ref;
pub mod retry;
pub mod sni;
pub mod throttle;
pub mod transport;
pub mod watch_stream;

pub use availability::{Availability, ServerAvailability};
pub use decode::{DecodeItem, ItemDecoder};
pub use discovery::{DiscoveredResource, Discovery, DiscoveryFailure};
pub use error::{ApiError, ApiErrorKind, Error};
pub use handle::{Api, DeleteResponse, DynamicApi};
pub use list_decoder::{read_list, read_list_with, ListDecodeError, ListDecoder};
pub use observer::{Attempt, AttemptResult, RequestObserver, BASE_CLIENT};
pub use options::{BuildError, ClientOptions};
pub use pager::{Page, Pager};
pub use params::{ListParams, Patch, PostParams, VersionMatch, WatchParams};
pub use request::ApiRequest;
pub use resource_ref::ResourceRef;
pub use throttle::Throttle;
pub use transport::{Client, REQUEST_LOG_TARGET};
pub use watch_stream::{WatchDecoder, WatchStream};
