//! The simulated Kubernetes API server that tests, benchmarks and the demo run against.
//!
//! It speaks HTTP/1.1 (and HTTP/2 over TLS), JSON and protobuf like a v1.28 kube-apiserver,
//! stores every object as `serde_json::Value`, and shares no code with kube-gc's API types or
//! its client (`kube-gc-api`, `kube-gc-client`, which it does not depend on): it is the other
//! side of the wire, and sharing decoding would mirror bugs instead of catching them. Nor can
//! any of kube-gc's layers import it: only the `kube-gc` binary (`sim`, `demo`, `record`) and
//! tests depend on it.
//!
//! What it shares lies below both sides: the clock and the label selector (`kube-gc-core`) and
//! the protobuf format (`kube-gc-protobuf`), whose encoder writes its protobuf bodies
//! ([`handlers::protobuf`]) from the same descriptor tables the client reads with — a second
//! copy of those tables would double the chances of a wrong field number rather than catch
//! one. What guards against a misreading mirrored on both sides is the real server's bytes: the
//! encoder writes the captured bodies back byte for byte (`kube-gc-protobuf`'s tests), and the
//! sim's lists, watch frames and `Status` bodies are compared byte for byte with exchanges
//! 100–111 (`handlers::protobuf`'s tests) and over HTTP by `tests/sim_protobuf.rs`.
//!
//! Layers, from the wire inwards:
//! - [`server`]: `SimServer` — sockets, TLS, connections, lifecycle, the in-process API;
//!   configured by [`config`]'s `SimConfig`.
//! - [`handlers`]: one HTTP request → one store operation → one response (router, discovery,
//!   watch streaming, Status bodies for errors).
//! - [`store`]: objects, the global resourceVersion, etcd's history, the watch caches, watchers;
//!   the rules of writes and deletions and the LIST table.
//! - Building blocks: [`resources`] (what is served), [`crds`] (the CustomResourceDefinitions
//!   of the custom resources served, created and deleted as on a real server), [`history`] (the change log),
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
//!
//! # Starting one
//!
//! ```no_run
//! # async fn demo() -> Result<(), kube_gc_sim::SimError> {
//! use kube_gc_sim::{Gvr, SimConfig, SimServer};
//! let server = SimServer::start(SimConfig::default().with_tls().with_token("t")).await?;
//! server.write_kubeconfig(std::path::Path::new("sim-kubeconfig"))?;
//! let job = serde_json::json!({"metadata": {"name": "pi", "namespace": "default"}, "spec": {}});
//! server.create(&Gvr::new("batch", "v1", "jobs"), job)?;
//! server.shutdown().await;
//! # Ok(()) }
//! ```
//!
//! # Known differences from a real kube-apiserver
//!
//! One list, in [`differences`]: `kube-gc sim --help` prints it, the README carries it, and the
//! tests that compare the sim with the real server's captures name the entry behind each
//! difference they allow.

pub mod clock;
pub mod config;
pub mod crds;
pub mod differences;
pub mod faults;
pub mod filter;
pub mod handlers;
pub mod history;
pub mod journal;
pub mod kubeconfig;
pub mod object;
pub mod openapi;
pub mod patch;
pub mod replay;
pub mod request_body;
pub mod resources;
pub mod selectors;
pub mod server;
pub mod stamped;
pub mod status;
pub mod store;
pub mod table;
pub mod tls;
pub mod validation;

pub use config::{AggregatedDiscovery, SimConfig};
pub use resources::Gvr;
pub use server::{SimError, SimServer};
pub use store::{DeleteOptions, DeleteOutcome, Propagation};
