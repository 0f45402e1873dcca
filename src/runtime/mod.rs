//! The controller runtime: the machinery every controller runs on.
//!
//! - [`workqueue`]: a de-duplicating, delaying, rate-limited queue of keys that worker tasks
//!   take work from (client-go's `util/workqueue`, in async Rust).
//!
//! Still to come (issue #5): the reflector (list-then-watch state machine), the sharded cache,
//! the shared informer and the worker loop.

pub mod workqueue;
