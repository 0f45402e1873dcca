//! The controller runtime: the machinery every controller runs on.
//!
//! - [`workqueue`]: a de-duplicating, delaying, rate-limited queue of keys that worker tasks
//!   take work from (client-go's `util/workqueue`, in async Rust).
//! - [`cache`]: the sharded, indexed object cache the reflector writes and workers read
//!   (client-go's `ThreadSafeStore` and `Indexer`).
//! - [`reflector`]: lists then watches one resource and reports what it sees to a sink
//!   (client-go's `Reflector`, kube-rs' `watcher`).
//!
//! Still to come (issue #5): the shared informer and the worker loop.

pub mod cache;
pub mod reflector;
pub mod workqueue;
