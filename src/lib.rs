//! kube-gc: a standalone Kubernetes garbage collector on a hand-written controller runtime.
//!
//! This package is the `kube-gc` binary and its commands; everything else is a crate of the
//! workspace (`crates/`), one per layer, each depending only on the ones below it — a rule
//! Cargo enforces, since a crate cannot name one it does not depend on:
//!
//! | layer | crate | re-exported here as |
//! |---|---|---|
//! | the commands | this package: [`cli`], [`demo`] | — |
//! | what runs the controllers | `kube-gc-manager` | [`manager`], [`explain`], [`server`], [`metrics`], [`notify`], [`shutdown`] |
//! | the controllers | `kube-gc-controllers` | [`controllers`] |
//! | the controller runtime | `kube-gc-runtime` | [`runtime`], [`events`], [`leaderelection`] |
//! | the API client | `kube-gc-client` | [`client`] (with the protobuf decoders, [`client::protobuf`]) |
//! | the API object types | `kube-gc-api` | [`api`] |
//! | the protobuf wire format | `kube-gc-protobuf` | [`client::protobuf`]'s `wire`, `schema`, `transcode`, `encode` |
//! | the workqueue | `kube-gc-workqueue` | [`runtime::workqueue`], [`token_bucket`] |
//! | the foundation | `kube-gc-core` | [`clock`], [`duration`], [`labels`], [`field_errors`], [`error_chain`] |
//!
//! The simulated API server, `kube-gc-sim` ([`sim`]), stands beside them: it depends on the
//! foundation and the protobuf format only, and only this package and the tests depend on it
//! (the `sim`, `demo` and `record` commands), so no controller, runtime, client or explain code
//! can import it. [`sim::Connect`] points kube-gc's client at one.
//!
//! The re-exports keep the module names the code had when it was one crate, so
//! `kube_gc::client::Client` or `kube_gc::runtime::workqueue::WorkQueue` name what they always
//! named, as the `kube` crate fronts kube-rs' `kube-core`, `kube-client` and `kube-runtime`.
//!
//! `docs/architecture.md` walks through how data flows from the API server to a deletion;
//! `crates/workqueue/README.md` is where a reader of the runtime starts.

pub mod cli;
mod connect;
pub mod demo;

pub use kube_gc_api as api;
pub use kube_gc_client as client;
pub use kube_gc_controllers as controllers;
pub use kube_gc_core::{clock, duration, error_chain, field_errors, labels};
pub use kube_gc_manager::{explain, manager, metrics, notify, server, shutdown};
pub use kube_gc_runtime as runtime;
pub use kube_gc_runtime::{events, leaderelection};
pub use kube_gc_workqueue::token_bucket;

/// The simulated API server (the crate `kube-gc-sim`), and [`Connect`](sim::Connect): kube-gc's
/// client pointed at it.
pub mod sim {
    pub use crate::connect::{Connect, ConnectError};
    pub use kube_gc_sim::*;
}
