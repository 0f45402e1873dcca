//! [`Cacheable`]: what the cache needs to know about an object it stores.
//!
//! Contract: the cache is generic over any `T: Cacheable`, not over full API objects, so a
//! controller can cache a compact projection (say key, uid, resourceVersion and two
//! timestamps) decoded straight from the wire. Every [`HasMetadata`] type is `Cacheable` through
//! the blanket impl below; a projection struct implements the trait by hand.

use crate::HasMetadata;

use crate::key::ObjectKey;

/// An object the cache can store.
pub trait Cacheable {
    /// Where the object is stored: `namespace/name`, or `name` if cluster-scoped.
    fn cache_key(&self) -> ObjectKey;
    /// The server's opaque version of this object; the cache compares it only for equality, to
    /// skip unchanged objects when a relist is diffed against the cached state.
    fn resource_version(&self) -> &str;
    /// The server-assigned unique id, which tells a recreated object from the one it replaced.
    fn uid(&self) -> &str;
}

impl<T: HasMetadata> Cacheable for T {
    fn cache_key(&self) -> ObjectKey {
        let meta = self.metadata();
        ObjectKey::new(
            meta.namespace.as_deref().unwrap_or_default(),
            meta.name.as_deref().unwrap_or_default(),
        )
    }

    fn resource_version(&self) -> &str {
        self.metadata()
            .resource_version
            .as_deref()
            .unwrap_or_default()
    }

    fn uid(&self) -> &str {
        self.metadata().uid.as_deref().unwrap_or_default()
    }
}

/// A dynamic object (any resource, decoded as plain JSON) is keyed and versioned by the same
/// `metadata` fields; missing fields read as empty, like a typed object's.
impl Cacheable for serde_json::Value {
    fn cache_key(&self) -> ObjectKey {
        ObjectKey::new(
            json_str(self, "/metadata/namespace"),
            json_str(self, "/metadata/name"),
        )
    }

    fn resource_version(&self) -> &str {
        json_str(self, "/metadata/resourceVersion")
    }

    fn uid(&self) -> &str {
        json_str(self, "/metadata/uid")
    }
}

fn json_str<'a>(value: &'a serde_json::Value, pointer: &str) -> &'a str {
    value
        .pointer(pointer)
        .and_then(serde_json::Value::as_str)
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Job, ObjectMeta, PartialObjectMetadata};

    #[test]
    fn a_namespaced_object_is_keyed_by_namespace_and_name() {
        let job = Job {
            metadata: ObjectMeta {
                name: Some("pi".into()),
                namespace: Some("batch".into()),
                uid: Some("u-1".into()),
                resource_version: Some("42".into()),
                ..ObjectMeta::default()
            },
            ..Job::default()
        };
        assert_eq!(job.cache_key().to_string(), "batch/pi");
        assert_eq!(job.resource_version(), "42");
        assert_eq!(job.uid(), "u-1");
    }

    #[test]
    fn a_cluster_scoped_object_is_keyed_by_name_alone() {
        let node = PartialObjectMetadata {
            metadata: ObjectMeta {
                name: Some("node-1".into()),
                ..ObjectMeta::default()
            },
            ..PartialObjectMetadata::default()
        };
        let key = node.cache_key();
        assert_eq!(key.to_string(), "node-1");
        assert_eq!(key.namespace(), None);
        assert_eq!(node.resource_version(), "");
    }

    #[test]
    fn a_dynamic_object_is_keyed_from_its_metadata() {
        let job = serde_json::json!({"metadata": {
            "name": "pi", "namespace": "batch", "uid": "u-2", "resourceVersion": "7"}});
        assert_eq!(job.cache_key().to_string(), "batch/pi");
        assert_eq!(job.resource_version(), "7");
        assert_eq!(job.uid(), "u-2");
        let bare = serde_json::json!({"metadata": {"name": "node-1"}});
        assert_eq!(bare.cache_key().to_string(), "node-1");
        assert_eq!(bare.resource_version(), "");
    }
}
