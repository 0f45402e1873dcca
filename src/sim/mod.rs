//! The simulated Kubernetes API server that tests, benchmarks and the demo run against.
//!
//! It speaks HTTP/1.1 (and HTTP/2 over TLS) and JSON like a v1.28 kube-apiserver, stores every
//! object as `serde_json::Value`, and shares no code with [`crate::api`] or [`crate::client`]: it
//! is the other side of the wire, and sharing decoding would mirror bugs instead of catching
//! them.
//!
//! Layers, from the wire inwards:
//! - [`server`]: `SimServer` — sockets, TLS, connections, lifecycle, the in-process API.
//! - [`handlers`]: one HTTP request → one store operation → one response (router, discovery,
//!   watch streaming, Status bodies for errors).
//! - [`store`]: objects, the global resourceVersion, history, watchers; the rules of writes and
//!   deletions.
//! - Building blocks: [`resources`] (what is served), [`history`] (the change log),
//!   [`filter`] (selectors applied to objects), [`object`] (metadata access), [`validation`],
//!   [`clock`].
//!
//! Self-contained parts, each usable and tested on its own:
//! - [`status`]: the `Status` bodies the real server answers errors with.
//! - [`selectors`]: label and field selectors, parsed and matched like the real server.
//! - [`patch`]: JSON merge patch, JSON patch and strategic merge patch on JSON values.
//! - [`journal`]: a bounded log of the requests the server received, for tests to assert on.
//! - [`faults`]: seeded, reproducible fault injection (errors, 429s, latency, watch cuts).
//! - [`tls`]: a throw-away CA and server certificate, and the rustls configuration using them.
//! - [`kubeconfig`]: kubeconfig files pointing a client at a simulated server.

pub mod clock;
pub mod config;
pub mod faults;
pub mod filter;
pub mod handlers;
pub mod history;
pub mod journal;
pub mod kubeconfig;
pub mod object;
pub mod patch;
pub mod resources;
pub mod selectors;
pub mod server;
pub mod status;
pub mod store;
pub mod tls;
pub mod validation;

pub use config::SimConfig;
pub use resources::Gvr;
pub use server::{SimError, SimServer};
pub use store::{DeleteOptions, DeleteOutcome, Propagation};
