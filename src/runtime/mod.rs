//! The controller runtime: the machinery every controller runs on.
//!
//! - [`workqueue`]: a de-duplicating, delaying, rate-limited queue of keys that worker tasks
//!   take work from (client-go's `util/workqueue`, in async Rust).
//! - [`cache`]: the sharded, indexed object cache the reflector writes and workers read
//!   (client-go's `ThreadSafeStore` and `Indexer`).
//! - [`reflector`]: lists then watches one resource and reports what it sees to a sink
//!   (client-go's `Reflector`, kube-rs' `watcher`).
//! - [`sources`]: one reflector per resource per process, each object decoded once per
//!   controller that reads it (client-go's `SharedInformerFactory`).
//! - [`informer`]: the shared informer — a reflector's events written to a cache and fanned out
//!   to event handlers, each on its own task (client-go's `SharedIndexInformer`).
//! - [`controller`]: the worker loop every controller runs — wait for caches, then N workers
//!   taking keys from a workqueue and reconciling them, with retries and clean shut-down.

pub mod cache;
pub mod controller;
pub mod informer;
pub mod reflector;
pub mod sources;
pub mod workqueue;
