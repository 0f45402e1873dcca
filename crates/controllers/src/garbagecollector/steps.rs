//! The collector's worker steps, one at a time, for tests outside this crate (the `test-util`
//! feature; no shipped build enables it).
//!
//! Contract: [`Steps::new`] is a collector's shared state pointed at a client — discovery done,
//! graph empty, no task running. A test puts objects in the graph as a monitor reports them,
//! changes the server's copy behind the graph's back, then sends one guarded request or judges
//! one object's owners. Each method calls the workers' own function; nothing here decides or
//! writes on its own. This is how the guards are proven against a server that enforces
//! preconditions — a server this crate cannot depend on, so the proofs live in the workspace's
//! `tests/`.

use std::collections::HashSet;
use std::sync::Arc;

use super::graph::{NodeView, Observed};
use super::identity::{GroupKind, Gvk, ObjectIdentity, OwnerLink, Uid};
use super::{owners, requests, GarbageCollector, GcOptions, Shared, WorkError};
use kube_gc_api::{OwnerReference, PartialObjectMetadata, PropagationPolicy};
use kube_gc_client::{Client, Discovery};

pub use super::owners::{Classification, Verdicts};

/// A collector's state, stepped by hand.
pub struct Steps {
    shared: Arc<Shared>,
}

impl Steps {
    /// A collector over `client` with one discovery done (empty if it failed) and nothing
    /// running. Must be called inside a Tokio runtime.
    pub async fn new(client: Client) -> Steps {
        let discovery = Discovery::run(&client).await.unwrap_or_default();
        let gc = GarbageCollector::new(client, GcOptions::default());
        *gc.shared.discovery.write() = Arc::new(discovery);
        Steps { shared: gc.shared }
    }

    /// What the graph makes of `object`, of type `api_version` `kind`, as a monitor reports it
    /// (not stored); `None` without a UID or name.
    pub fn observe(
        &self,
        api_version: &str,
        kind: &str,
        object: &PartialObjectMetadata,
    ) -> Option<Observed> {
        self.shared
            .graph
            .write()
            .observe(&gvk(api_version, kind), object)
    }

    /// Stores `object` as observed; answers its node as a worker reads it.
    pub fn put(
        &self,
        api_version: &str,
        kind: &str,
        object: &PartialObjectMetadata,
    ) -> Option<NodeView> {
        let mut graph = self.shared.graph.write();
        let observed = graph.observe(&gvk(api_version, kind), object)?;
        let uid = Arc::clone(&observed.identity.uid);
        graph.put_observed(observed);
        graph.view(&uid)
    }

    /// The attempt-to-delete worker's verdicts on `item`'s owners.
    pub async fn classify(&self, item: &NodeView) -> Result<Classification, WorkError> {
        owners::classify(&self.shared, item).await
    }

    /// The guarded DELETE of `item`, judged at `resource_version` with `judged` owners.
    pub async fn delete(
        &self,
        item: &ObjectIdentity,
        policy: PropagationPolicy,
        resource_version: &str,
        judged: &[OwnerReference],
    ) -> Result<(), WorkError> {
        requests::delete(&self.shared, item, policy, resource_version, judged, "test").await
    }

    /// The guarded patch dropping `item`'s references to `gone` from the `current` ones.
    pub async fn remove_owners(
        &self,
        item: &ObjectIdentity,
        current: &[OwnerLink],
        gone: &HashSet<Uid>,
    ) -> Result<Option<PartialObjectMetadata>, WorkError> {
        requests::patch_owners(&self.shared, item, current, requests::without(gone)).await
    }

    /// The guarded removal of `finalizer` from `item`.
    pub async fn remove_finalizer(
        &self,
        item: &ObjectIdentity,
        finalizer: &str,
    ) -> Result<(), WorkError> {
        requests::remove_finalizer(&self.shared, item, finalizer).await
    }

    /// A monitor for `group_kind` has started; its first list is not in the graph yet.
    pub fn monitor_started(&self, group_kind: GroupKind) {
        self.shared.sync.started(group_kind);
    }

    /// The first list of `group_kind`'s monitor is in the graph.
    pub fn monitor_synced(&self, group_kind: &GroupKind) {
        self.shared.sync.mark_synced(group_kind);
    }
}

fn gvk(api_version: &str, kind: &str) -> Gvk {
    Gvk {
        api_version: api_version.into(),
        kind: kind.into(),
    }
}
