//! The controller runtime: the machinery every controller runs on.
//!
//! Reading order — the way an object travels, from the wire to a worker: [`reflector`] (list,
//! then watch), [`sources`] (one reflector per resource, shared), [`cache`] (where objects
//! are kept), [`informer`] (the cache written, then handlers told), [`workqueue`] (the keys
//! handlers add), [`controller`] (the workers that take them). `docs/learn.md` walks the same
//! path file by file; `examples/` runs each piece on its own.
//!
//! - [`workqueue`]: a de-duplicating, delaying, rate-limited queue of keys that worker tasks
//!   take work from (client-go's `util/workqueue`, in async Rust). It is a crate of its own,
//!   `kube-gc-workqueue` (`crates/workqueue`), re-exported here; its README is the first page
//!   to read.
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
//!
//! Two tools every controller process needs stand beside them, as they do in client-go's
//! `tools/`:
//!
//! - [`events`]: how controllers report Kubernetes Events without waiting on them (client-go's
//!   `tools/record`, kube-rs' `runtime::events`).
//! - [`leaderelection`]: one active replica, on a Lease (client-go's `tools/leaderelection`).

pub mod cache;
pub mod controller;
pub mod events;
pub mod informer;
pub mod leaderelection;
pub mod reflector;
pub mod sources;
// The workqueue crate depends on nothing of kube-gc; re-exported, it keeps its place in the
// runtime and every `runtime::workqueue::…` path.
pub use kube_gc_workqueue as workqueue;
