//! Reading order: the example below, then `reconcile.rs` (what a controller implements),
//! `worker.rs` (one key, start to finish), `runner.rs` (start-up, sync, shut-down),
//! `server_wait/` (keys that wait out an API server outage), `counters.rs`.
//!
//! The worker loop every controller runs: start informers, wait for their caches, then run N
//! workers that take keys from a workqueue and reconcile them — with retries, requeues, caught
//! panics and a clean shut-down (the pattern of every kcm controller's `Run`, `worker` and
//! `processNextWorkItem`).
//!
//! A controller supplies two things: event handlers (on its informers) that turn changes into
//! keys on its [`WorkQueue`](crate::workqueue::WorkQueue), and a [`Reconciler`] that
//! acts on one key. [`Controller`] does the rest.
//!
//! | file | what it holds |
//! |---|---|
//! | `reconcile.rs` | [`Reconciler`], [`Action`] |
//! | `worker.rs` | one worker's loop: get → reconcile → forget / retry / requeue → done |
//! | `counters.rs` | [`ReconcileCounters`] |
//! | `runner.rs` | [`Controller`]: start-up, sync, workers, shut-down; [`ControllerError`] |
//! | `server_wait/` | [`ServerWait`]: keys that wait for the API server during an outage, and the task that resumes them when it answers |
//!
//! `docs/runtime.md` ("Worker loop") explains the design.
//!
//! # Example
//!
//! A controller that watches Jobs and reconciles each one that changes:
//!
//! ```no_run
//! use std::sync::Arc;
//!
//! use kube_gc_api::Job;
//! use kube_gc_client::{Api, Client};
//! use kube_gc_runtime::cache::{Cacheable, ObjectKey, Store};
//! use kube_gc_runtime::controller::{Action, Controller, ControllerError, Reconciler};
//! use kube_gc_runtime::informer::{HandlerFns, SharedInformer};
//! use kube_gc_runtime::reflector::ReflectorConfig;
//! use kube_gc_runtime::workqueue::WorkQueue;
//! use tokio_util::sync::CancellationToken;
//!
//! struct LogJobs {
//!     jobs: Arc<Store<Job>>,
//! }
//!
//! impl Reconciler<ObjectKey> for LogJobs {
//!     type Error = std::convert::Infallible;
//!
//!     async fn reconcile(&self, key: &ObjectKey) -> Result<Action, Self::Error> {
//!         match self.jobs.get(key) {
//!             Some(job) => println!("{key} is at version {}", job.resource_version()),
//!             None => println!("{key} is gone"),
//!         }
//!         Ok(Action::Done)
//!     }
//! }
//!
//! async fn run(client: Client, shutdown: CancellationToken) -> Result<(), ControllerError> {
//!     let queue = WorkQueue::new("log-jobs");
//!     let api = Api::<Job>::all(client);
//!     let jobs = SharedInformer::new("jobs.batch", api, ReflectorConfig::default());
//!     let (on_add, on_update, on_delete) = (queue.clone(), queue.clone(), queue.clone());
//!     jobs.add_handler(
//!         HandlerFns::new()
//!             .on_add(move |job: Arc<Job>| on_add.add(job.cache_key()))
//!             .on_update(move |_old, job: Arc<Job>| on_update.add(job.cache_key()))
//!             .on_delete(move |deleted| on_delete.add(deleted.object().cache_key())),
//!     );
//!     let reconciler = LogJobs { jobs: Arc::clone(jobs.store()) };
//!     Controller::new("log-jobs", queue, reconciler)
//!         .workers(2)
//!         .informer(&jobs)
//!         .run(shutdown)
//!         .await
//! }
//! ```

mod counters;
mod reconcile;
mod runner;
pub mod server_wait;
mod worker;

pub use counters::ReconcileCounters;
pub use reconcile::{Action, Reconciler};
pub use runner::{Controller, ControllerError};
pub use server_wait::ServerWait;
