//! The garbage-collection controllers, built on [`kube_gc_runtime`].
//!
//! - [`ttl`]: TTL-after-finished for batch/v1 Jobs and Volcano Jobs.
//! - [`garbagecollector`]: the ownerReference garbage collector: a dependency graph fed
//!   by metadata-only monitors, Background / Foreground / Orphan cascades.
//! - [`retention`]: retention policies for anything that finishes.
//! - [`namespace`]: namespace deletion (kube-controller-manager's): a deleted namespace's
//!   content removed, Pods first, then its `kubernetes` finalizer once a LIST of every resource
//!   proves it empty.
//! - [`podgc`]: the pod garbage collector (kube-controller-manager's), for API servers where
//!   nothing else removes Pods whose node is gone.
//! - [`protection`]: PVC and PV protection, releasing claims and volumes being deleted once
//!   nothing uses them.
//!
//! [`settled`] remembers the UIDs of objects a controller has finished with (force-deleted,
//! released) until its cache sees them go, so their last events are not judged again.
//!
//! What they all report on: [`deleted`], a feed of what each deleted (or would have, under an
//! `Audit` policy), and [`pending`], what each will delete and when, read from its caches.
//! What they all take from the process — sources, clock, Event recorder, queue metrics, the
//! deletion feed — is one [`Wiring`], built once by whoever runs them.

pub mod deleted;
pub mod garbagecollector;
pub mod namespace;
pub mod pending;
pub mod podgc;
pub mod protection;
pub mod retention;
pub mod settled;
pub mod ttl;
pub mod wiring;

pub use wiring::Wiring;

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

/// `informer`'s reflector counters (its own, or its source's) under `resource`, as a controller
/// lists its reflectors for `/metrics`; `None` if it has no reflector.
pub(crate) fn reflector_of<T>(
    resource: kube_gc_client::ResourceRef,
    informer: &kube_gc_runtime::informer::SharedInformer<T>,
) -> Option<(
    kube_gc_client::ResourceRef,
    Arc<kube_gc_runtime::reflector::ReflectorMetrics>,
)>
where
    T: kube_gc_runtime::cache::Cacheable + Send + Sync + 'static,
{
    informer
        .reflector_metrics()
        .map(|metrics| (resource, Arc::clone(metrics)))
}
