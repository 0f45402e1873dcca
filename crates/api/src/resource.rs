//! The [`Resource`] trait: what the client needs to know about a typed object to build its URL,
//! and [`HasMetadata`], access to any object's [`ObjectMeta`].
//!
//! Contract: the constants describe the REST resource, not a particular object, so they are
//! associated constants. `API_VERSION` must equal `GROUP/VERSION` (or `VERSION` when `GROUP` is
//! empty, the core group); `api_version_of` computes that form for tests to check against.

use super::meta::ObjectMeta;

/// Anything that carries standard object metadata.
pub trait HasMetadata {
    /// The object's metadata.
    fn metadata(&self) -> &ObjectMeta;
    /// The object's metadata, for changes before an update.
    fn metadata_mut(&mut self) -> &mut ObjectMeta;
}

/// A typed Kubernetes object served at a fixed REST resource.
///
/// The path of a namespaced object is
/// `/apis/{GROUP}/{VERSION}/namespaces/{ns}/{PLURAL}/{name}` (`/api/{VERSION}/...` for the core
/// group); a cluster-scoped one has no `namespaces/{ns}` segment.
pub trait Resource: HasMetadata {
    /// The API group; empty for the core group.
    const GROUP: &'static str;
    /// The API version within the group, e.g. `v1`.
    const VERSION: &'static str;
    /// The `apiVersion` field value: `GROUP/VERSION`, or `VERSION` for the core group.
    const API_VERSION: &'static str;
    /// The `kind` field value, e.g. `Job`.
    const KIND: &'static str;
    /// The lower-case plural used in URLs, e.g. `jobs`.
    const PLURAL: &'static str;
    /// Whether objects live in a namespace.
    const NAMESPACED: bool;
}

/// The `apiVersion` string for a group and version: `group/version`, or `version` for the core
/// group.
pub fn api_version_of(group: &str, version: &str) -> String {
    if group.is_empty() {
        version.to_owned()
    } else {
        format!("{group}/{version}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn core_group_has_no_group_prefix() {
        assert_eq!(api_version_of("", "v1"), "v1");
        assert_eq!(api_version_of("batch", "v1"), "batch/v1");
    }
}
