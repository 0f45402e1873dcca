//! kube-gc: a standalone Kubernetes garbage collector on a hand-written controller runtime.
//!
//! The crate is the root of a Cargo workspace whose other crates are layers that stand alone:
//! so far the workqueue, `kube-gc-workqueue` (`crates/workqueue`, whose README is where a reader
//! of the runtime starts), re-exported here as [`runtime::workqueue`] and [`token_bucket`].
//!
//! The crate is layered; each layer only uses the ones above it in this list:
//!
//! - [`api`]: the Kubernetes object types kube-gc reads and writes (serde, written here).
//! - [`client`]: talking to an API server: kubeconfig, authentication, REST verbs, watch streams.
//! - [`runtime`]: the controller runtime: workqueue (the workqueue crate), reflector, cache,
//!   informer and worker loop.
//! - [`events`]: how controllers report Kubernetes Events without waiting on them.
//! - [`controllers`]: the garbage-collection logic (TTL-after-finished, ownerReference GC,
//!   retention policies).
//! - [`explain`]: `kube-gc explain` and `kube-gc plan`, read-only, on the controllers' decisions.
//! - [`manager`]: runs the enabled controllers together, as kube-controller-manager does.
//! - [`demo`]: the `kube-gc demo` workload, run against the simulated API server.
//! - Running for real: [`leaderelection`] (one active replica, on a Lease), [`metrics`]
//!   (Prometheus, client-go's names), [`server`] (health, readiness, metrics and debug
//!   endpoints), [`shutdown`] (signals and the bounded drain), [`notify`] (webhooks told what
//!   was deleted and what comes, in batches).
//! - [`sim`]: an in-process simulated API server that tests, benchmarks and the demo run against.
//!   It speaks HTTP and JSON like a real kube-apiserver and shares no decoding code with
//!   [`client`], so a misunderstanding on one side is not silently mirrored on the other.
//! - [`cli`]: the `kube-gc` command line.
//! - [`clock`]: injectable wall-clock time.
//! - [`duration`]: Go-style duration strings (`1m30s`), as kube-controller-manager's flags take
//!   them.
//! - [`token_bucket`]: the one token bucket, layer-neutral, from the workqueue crate: the
//!   workqueue's rate limiter, the client's request throttling and the event correlator all draw
//!   from it.
//!
//! `docs/architecture.md` walks through how data flows from the API server to a deletion.

pub mod api;
pub mod cli;
pub mod client;
pub mod clock;
pub mod controllers;
pub mod demo;
pub mod duration;
pub mod error_chain;
pub mod events;
pub mod explain;
pub mod leaderelection;
pub mod manager;
pub mod metrics;
pub mod notify;
pub mod runtime;
pub mod server;
pub mod shutdown;
pub mod sim;
pub use kube_gc_workqueue::token_bucket;

#[cfg(test)]
mod test_fixtures;
