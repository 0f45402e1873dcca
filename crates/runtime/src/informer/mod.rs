//! Reading order: this contract, then `handler.rs` (what a handler is told), `shared.rs`
//! (`apply`: write the cache, then queue a notification per handler), `listener.rs` (one
//! handler's buffer and task), `synced.rs` (waiting for the initial list).
//!
//! The shared informer: one cache of one resource, kept current by a reflector, and any number
//! of event handlers told about every change (client-go's `SharedIndexInformer`).
//!
//! ```text
//!  reflector ──ReflectorEvent──▶ SharedInformer::apply ──▶ Store        (1: write the cache)
//!                                      │
//!                                      ├─▶ buffer ─▶ task ─▶ handler 1  (2: queue a notification
//!                                      └─▶ buffer ─▶ task ─▶ handler 2      to every handler)
//! ```
//!
//! Contract:
//! - Every event is written to the cache before any handler hears of it.
//! - Each handler sees each object's changes once, in order; a handler registered late first
//!   receives the cached objects as adds.
//! - Handlers never slow the reflector: each has its own unbounded buffer drained by its own
//!   task. A slow handler only grows its own backlog ([`HandlerRegistration::pending`]).
//! - Deletions found by a relist (not seen on the watch) reach handlers as
//!   [`Deleted::FinalStateUnknown`](crate::cache::Deleted) with the last cached state.
//! - Optional resync re-delivers every cached object as an update with old = new.
//! - [`wait_for_cache_sync`] waits for the initial lists, and gives up when cancelled;
//!   [`HandlerRegistration::synced`] tells when one handler has handled its initial list.
//! - Every task the informer starts stops when [`SharedInformer::run`]'s token is cancelled.
//!
//! | file | what it holds |
//! |---|---|
//! | `handler.rs` | [`EventHandler`], [`HandlerFns`], the notification type |
//! | `listener.rs` | one handler's buffer and task; [`HandlerRegistration`] |
//! | `shared.rs` | [`SharedInformer`], [`SharedInformerBuilder`]; the sink, dispatch, resync |
//! | `synced.rs` | [`InformerSynced`], [`wait_for_cache_sync`], [`WaitForSyncError`] |
//!
//! `docs/runtime.md` ("Informer") explains the design.

mod handler;
mod listener;
mod shared;
mod synced;

pub use handler::{EventHandler, HandlerFns};
pub use listener::HandlerRegistration;
pub use shared::{SharedInformer, SharedInformerBuilder};
pub use synced::{wait_for_cache_sync, InformerSynced, WaitForSyncError};
