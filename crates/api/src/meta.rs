//! Object metadata: [`TypeMeta`] (`apiVersion` + `kind`) and [`ObjectMeta`] (`metadata`).
//!
//! Contract:
//! - Unknown fields are ignored on decode. In particular `managedFields` (often half of an
//!   object's bytes) is not kept; an update sent from these types leaves the server's
//!   `managedFields` unchanged, because the server keeps them when a request omits them.
//! - Scalar fields are `Option`s and are omitted when `None`; collections (labels, annotations,
//!   owner references, finalizers) are empty when absent or `null`, and omitted when empty — the
//!   same `omitempty` rule the Go types follow, so nothing sends a `null` the server would read as
//!   "clear this field".

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::defaults::null_as_default;
use super::owner::OwnerReference;
use super::time::Time;

/// The `apiVersion` and `kind` that start every top-level object.
///
/// Items inside a list usually carry neither, so both default to empty and are omitted when
/// empty. Typed objects embed this with `#[serde(flatten)]`; it is the only flattened field, so
/// decoding buffers just these two short strings.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct TypeMeta {
    /// `group/version`, or just `version` for the core group (`v1`).
    #[serde(
        rename = "apiVersion",
        default,
        skip_serializing_if = "String::is_empty"
    )]
    pub api_version: String,
    /// The object's kind, e.g. `Job`.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub kind: String,
}

impl TypeMeta {
    /// A `TypeMeta` from its two parts.
    pub fn new(api_version: impl Into<String>, kind: impl Into<String>) -> Self {
        TypeMeta {
            api_version: api_version.into(),
            kind: kind.into(),
        }
    }
}

/// The standard `metadata` of every persisted object (`metav1.ObjectMeta`), reduced to the
/// fields a garbage collector reads or writes.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ObjectMeta {
    /// Unique within a namespace (or cluster-wide for cluster-scoped objects).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// Prefix from which the server generates a name when `name` is empty.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub generate_name: Option<String>,
    /// `None` for cluster-scoped objects.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub namespace: Option<String>,
    /// Set by the server; distinguishes this object from a later one with the same name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub uid: Option<String>,
    /// Opaque version for optimistic concurrency and watches; compare only for equality.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resource_version: Option<String>,
    /// Incremented by the server on every change to the desired state (spec).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub generation: Option<i64>,
    /// When the server created the object.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub creation_timestamp: Option<Time>,
    /// Set when deletion was requested; the object lingers until its finalizers are gone.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub deletion_timestamp: Option<Time>,
    /// The grace period granted when deletion was requested.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub deletion_grace_period_seconds: Option<i64>,
    /// Identifying key/value pairs, selectable by label selectors.
    #[serde(
        default,
        deserialize_with = "null_as_default",
        skip_serializing_if = "BTreeMap::is_empty"
    )]
    pub labels: BTreeMap<String, String>,
    /// Non-identifying key/value pairs.
    #[serde(
        default,
        deserialize_with = "null_as_default",
        skip_serializing_if = "BTreeMap::is_empty"
    )]
    pub annotations: BTreeMap<String, String>,
    /// The objects this one depends on; when all are gone, the garbage collector deletes it.
    #[serde(
        default,
        deserialize_with = "null_as_default",
        skip_serializing_if = "Vec::is_empty"
    )]
    pub owner_references: Vec<OwnerReference>,
    /// Keys that must be removed before a deleted object disappears.
    #[serde(
        default,
        deserialize_with = "null_as_default",
        skip_serializing_if = "Vec::is_empty"
    )]
    pub finalizers: Vec<String>,
}

impl ObjectMeta {
    /// Whether deletion has been requested (the object may still exist because of finalizers).
    pub fn is_being_deleted(&self) -> bool {
        self.deletion_timestamp.is_some()
    }

    /// Whether `finalizer` is present.
    pub fn has_finalizer(&self, finalizer: &str) -> bool {
        self.finalizers.iter().any(|f| f == finalizer)
    }

    /// The owner reference marked `controller: true`, if any (at most one is allowed).
    pub fn controller_owner(&self) -> Option<&OwnerReference> {
        self.owner_references.iter().find(|r| r.is_controller())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn empty_metadata_serializes_to_an_empty_object() {
        assert_eq!(
            serde_json::to_string(&ObjectMeta::default()).ok(),
            Some("{}".into())
        );
    }

    #[test]
    fn null_collections_decode_as_empty() {
        let meta: ObjectMeta = serde_json::from_str(
            r#"{"name":"a","labels":null,"annotations":null,"ownerReferences":null,"finalizers":null,"creationTimestamp":null}"#,
        )
        .unwrap();
        assert_eq!(meta.name.as_deref(), Some("a"));
        assert!(meta.labels.is_empty() && meta.finalizers.is_empty());
        assert_eq!(meta.creation_timestamp, None);
    }

    #[test]
    fn unknown_fields_such_as_managed_fields_are_ignored() {
        let meta: ObjectMeta = serde_json::from_str(
            r#"{"name":"a","managedFields":[{"manager":"x"}],"selfLink":"/x","somethingNew":1}"#,
        )
        .unwrap();
        assert_eq!(meta.name.as_deref(), Some("a"));
    }

    #[test]
    fn finalizer_and_deletion_helpers() {
        let meta: ObjectMeta = serde_json::from_str(
            r#"{"deletionTimestamp":"2026-11-22T03:46:50Z","finalizers":["foregroundDeletion"]}"#,
        )
        .unwrap();
        assert!(meta.is_being_deleted());
        assert!(meta.has_finalizer("foregroundDeletion"));
        assert!(!meta.has_finalizer("orphan"));
    }

    #[test]
    fn type_meta_is_omitted_when_empty() {
        assert_eq!(
            serde_json::to_string(&TypeMeta::default()).ok(),
            Some("{}".into())
        );
        let tm = TypeMeta::new("batch/v1", "Job");
        assert_eq!(
            serde_json::to_string(&tm).ok(),
            Some(r#"{"apiVersion":"batch/v1","kind":"Job"}"#.into())
        );
    }
}
