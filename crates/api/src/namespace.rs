//! core/v1 [`Namespace`]: its `spec.finalizers` (what must finish before it goes) and its status
//! (the phase, and the conditions the namespace controller writes while it deletes).
//!
//! Contract: a read-side projection, as the other types here. A write that takes the whole
//! object (`/finalize`) must send back what the server sent, fields this type does not model
//! included: send the object as read (`serde_json::Value`), not this projection.

use serde::{Deserialize, Serialize};

use super::defaults::null_as_default;
use super::meta::{ObjectMeta, TypeMeta};
use super::resource::{HasMetadata, Resource};
use super::time::Time;

/// A Namespace.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Namespace {
    /// `v1` + `Namespace`.
    #[serde(flatten)]
    pub types: TypeMeta,
    /// Standard metadata.
    #[serde(default)]
    pub metadata: ObjectMeta,
    /// What must finish before the namespace goes.
    #[serde(default, deserialize_with = "null_as_default")]
    pub spec: NamespaceSpec,
    /// Phase and conditions.
    #[serde(default, deserialize_with = "null_as_default")]
    pub status: NamespaceStatus,
}

/// `NamespaceSpec`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct NamespaceSpec {
    /// Removed only through `/finalize`; the namespace goes once this and
    /// `metadata.finalizers` are empty (`kubernetes` is the namespace controller's).
    #[serde(
        default,
        deserialize_with = "null_as_default",
        skip_serializing_if = "Vec::is_empty"
    )]
    pub finalizers: Vec<String>,
}

/// `NamespaceStatus`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct NamespaceStatus {
    /// `Active`, or `Terminating` once deleted.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub phase: Option<String>,
    /// What the namespace controller reports while it deletes the content.
    #[serde(
        default,
        deserialize_with = "null_as_default",
        skip_serializing_if = "Vec::is_empty"
    )]
    pub conditions: Vec<NamespaceCondition>,
}

/// `NamespaceCondition`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct NamespaceCondition {
    /// e.g. `NamespaceContentRemaining`.
    #[serde(rename = "type", default)]
    pub type_: String,
    /// `True`, `False` or `Unknown`.
    #[serde(default)]
    pub status: String,
    /// When `status` last changed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_transition_time: Option<Time>,
    /// Machine-readable, e.g. `SomeResourcesRemain`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// Human-readable.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
}

impl Namespace {
    /// The finalizer the namespace controller removes once the content is gone.
    pub const KUBERNETES_FINALIZER: &'static str = "kubernetes";
    /// The phase of a namespace being deleted.
    pub const TERMINATING: &'static str = "Terminating";
}

impl HasMetadata for Namespace {
    fn metadata(&self) -> &ObjectMeta {
        &self.metadata
    }
    fn metadata_mut(&mut self) -> &mut ObjectMeta {
        &mut self.metadata
    }
}

impl Resource for Namespace {
    const GROUP: &'static str = "";
    const VERSION: &'static str = "v1";
    const API_VERSION: &'static str = "v1";
    const KIND: &'static str = "Namespace";
    const PLURAL: &'static str = "namespaces";
    const NAMESPACED: bool = false;
}

#[cfg(test)]
mod tests {
    use super::*;
    use kube_gc_fixtures::response_body as captured;

    #[test]
    fn a_terminating_namespace_with_conditions_decodes_as_captured() {
        let namespace: Namespace = captured("146-namespace-status-conditions");
        assert_eq!(namespace.metadata.name.as_deref(), Some("ns-capture-a"));
        assert!(namespace.metadata.deletion_timestamp.is_some());
        assert_eq!(namespace.spec.finalizers, ["kubernetes"]);
        assert_eq!(
            namespace.status.phase.as_deref(),
            Some(Namespace::TERMINATING)
        );
        let remaining = &namespace.status.conditions[1];
        assert_eq!(remaining.type_, "NamespaceContentRemaining");
        assert_eq!(remaining.status, "True");
        assert_eq!(remaining.reason.as_deref(), Some("SomeResourcesRemain"));
        // A finalized namespace's spec is `{}` (exchange 162).
        let finalized: Namespace = captured("162-namespace-finalize-with-content-left");
        assert!(finalized.spec.finalizers.is_empty());
    }
}
