//! Reading order: `tests/cache_walkthrough.rs` (the store used as an informer uses it), then
//! [`ObjectKey`] and [`Cacheable`] (in the API crate, `key.rs` and `cacheable.rs`), `store.rs` (the API and its lock discipline), `shard.rs`, `index.rs`, `diff.rs`
//! (what a relist changed).
//!
//! The informer's object cache: a sharded, indexed, thread-safe map from [`ObjectKey`] to
//! `Arc<T>` (client-go's `ThreadSafeStore` + `Indexer`), written by the reflector and read by
//! workers.
//!
//! Contract:
//! - Generic over any [`Cacheable`] `T`: full API objects (every `HasMetadata` type) or a
//!   compact projection a controller decodes straight from the wire.
//! - Objects are stored as immutable `Arc<T>`; a write replaces the `Arc`, never mutates it.
//! - The store is synchronous; no method holds a lock when it returns, and none holds two locks
//!   at once (see `store.rs` for the lock discipline).
//! - A relist ([`Store::replace`]) reports what changed as a [`ReplaceDiff`], with
//!   [`Tombstone`]s for objects that vanished unseen.
//!
//! `docs/runtime.md` ("Cache") explains the design for readers new to informers;
//! `tests/cache_walkthrough.rs` shows the store used as an informer uses it, step by step.
//!
//! | file | what it holds |
//! |---|---|
//! | `kube-gc-api`'s `key.rs` | [`ObjectKey`], [`ParseKeyError`] |
//! | `kube-gc-api`'s `cacheable.rs` | [`Cacheable`], implemented for every `HasMetadata` type and for a dynamic object (`serde_json::Value`): Rust's coherence rules allow that pair only in the crate that owns `HasMetadata` |
//! | `index.rs` | [`IndexFn`] and the per-shard `(value, key)` index entries |
//! | `shard.rs` | one shard's objects and index entries, without locking |
//! | `diff.rs` | [`ReplaceDiff`], [`Updated`], [`Tombstone`], [`Deleted`]; the relist merge |
//! | `store.rs` | [`Store`], [`StoreBuilder`], [`Applied`], [`UnknownIndex`] |

mod diff;
mod index;
mod shard;
mod store;

pub use diff::{Deleted, ReplaceDiff, Tombstone, Updated};
pub use index::IndexFn;
pub use kube_gc_api::{Cacheable, ObjectKey, ParseKeyError};
pub use store::{
    default_shard_count, Applied, Store, StoreBuilder, TransformFn, UnknownIndex, MAX_SHARDS,
};
