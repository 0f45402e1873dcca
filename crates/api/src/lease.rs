//! coordination.k8s.io/v1 [`Lease`]: the lock object of leader election.
//!
//! Contract: all spec fields are optional and omitted when `None`; times are [`MicroTime`]
//! (six fractional digits on the wire). Leases are updated with PUT carrying the
//! `metadata.resourceVersion` that was read, so a stale writer gets 409 Conflict. Spec fields
//! newer than v1.28 (`strategy`, `preferredHolder`) are not kept, so a PUT from this type clears
//! them; kube-gc does not use them.

use serde::{Deserialize, Serialize};

use super::defaults::null_as_default;
use super::meta::{ObjectMeta, TypeMeta};
use super::resource::{HasMetadata, Resource};
use super::time::MicroTime;

/// A Lease.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Lease {
    /// `coordination.k8s.io/v1` + `Lease`.
    #[serde(flatten)]
    pub types: TypeMeta,
    /// Standard metadata; `resourceVersion` guards updates.
    #[serde(default)]
    pub metadata: ObjectMeta,
    /// Who holds the lease and until when.
    #[serde(default, deserialize_with = "null_as_default")]
    pub spec: LeaseSpec,
}

/// `LeaseSpec`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct LeaseSpec {
    /// The identity of the current holder.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub holder_identity: Option<String>,
    /// How long, after `renewTime`, others must wait before taking the lease over.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lease_duration_seconds: Option<i32>,
    /// When the current holder acquired the lease.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub acquire_time: Option<MicroTime>,
    /// When the current holder last renewed the lease.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub renew_time: Option<MicroTime>,
    /// How many times the lease changed hands.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lease_transitions: Option<i32>,
}

impl Lease {
    /// A new Lease to create, with `apiVersion` and `kind` filled in.
    pub fn new(namespace: impl Into<String>, name: impl Into<String>, spec: LeaseSpec) -> Self {
        Lease {
            types: TypeMeta::new(Self::API_VERSION, Self::KIND),
            metadata: ObjectMeta {
                name: Some(name.into()),
                namespace: Some(namespace.into()),
                ..Default::default()
            },
            spec,
        }
    }
}

impl HasMetadata for Lease {
    fn metadata(&self) -> &ObjectMeta {
        &self.metadata
    }
    fn metadata_mut(&mut self) -> &mut ObjectMeta {
        &mut self.metadata
    }
}

impl Resource for Lease {
    const GROUP: &'static str = "coordination.k8s.io";
    const VERSION: &'static str = "v1";
    const API_VERSION: &'static str = "coordination.k8s.io/v1";
    const KIND: &'static str = "Lease";
    const PLURAL: &'static str = "leases";
    const NAMESPACED: bool = true;
}
