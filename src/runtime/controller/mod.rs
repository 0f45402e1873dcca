//! The worker loop every controller runs: start informers, wait for their caches, then run N
//! workers that take keys from a workqueue and reconcile them — with retries, requeues, caught
//! panics and a clean shut-down (the pattern of every kcm controller's `Run`, `worker` and
//! `processNextWorkItem`).
//!
//! A controller supplies two things: event handlers (on its informers) that turn changes into
//! keys on its [`WorkQueue`](crate::runtime::workqueue::WorkQueue), and a [`Reconciler`] that
//! acts on one key. [`Controller`] does the rest.
//!
//! | file | what it holds |
//! |---|---|
//! | `reconcile.rs` | [`Reconciler`], [`Action`] |
//! | `worker.rs` | one worker's loop: get → reconcile → forget / retry / requeue → done |
//! | `counters.rs` | [`ReconcileCounters`] |
//! | `runner.rs` | [`Controller`]: start-up, sync, workers, shut-down; [`ControllerError`] |
//!
//! `docs/runtime.md` ("Worker loop") explains the design.

mod counters;
mod reconcile;
mod runner;
mod worker;

pub use counters::ReconcileCounters;
pub use reconcile::{Action, Reconciler};
pub use runner::{Controller, ControllerError};
