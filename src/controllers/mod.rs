//! The garbage-collection controllers, built on [`crate::runtime`].
//!
//! - [`ttl`]: TTL-after-finished for batch/v1 Jobs and Volcano Jobs (issue #6).
//! - [`garbagecollector`]: the ownerReference garbage collector (issue #7): a dependency graph fed
//!   by metadata-only monitors, Background / Foreground / Orphan cascades.
//! - [`retention`]: retention policies for anything that finishes.
//! - [`podgc`]: the pod garbage collector (kube-controller-manager's), for API servers where
//!   nothing else removes Pods whose node is gone.
//! - [`protection`]: PVC and PV protection, releasing claims and volumes being deleted once
//!   nothing uses them.
//!
//! What they all report on: [`deleted`], a feed of what each deleted (or would have, under an
//! `Audit` policy), and [`pending`], what each will delete and when, read from its caches.

pub mod deleted;
pub mod garbagecollector;
pub mod namespace;
pub mod pending;
pub mod podgc;
pub mod protection;
pub mod retention;
pub mod settled;
pub mod ttl;

use std::sync::Arc;

/// A controller's progress at one moment, for progress displays.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Progress {
    /// Objects its cache has taken in so far — each once, a re-created one again: it only
    /// grows, where `cached` falls as objects are deleted.
    pub seen: u64,
    /// Objects in its cache.
    pub cached: usize,
    /// Objects it is waiting on (a TTL not expired yet).
    pub waiting: usize,
    /// Keys in its workqueue.
    pub queued: usize,
}

/// Takes a [`Progress`] snapshot; must be quick and must not block.
pub type ProgressProbe = Arc<dyn Fn() -> Progress + Send + Sync>;
