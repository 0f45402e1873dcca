//! An object as a client receives it: a stored object, shared rather than copied, and the
//! resourceVersion it is presented at when that is not its own.
//!
//! Contract: a deletion's final state is the object's last stored state at the deletion's own
//! resourceVersion — in a watch's DELETED event, in the answer to a DELETE, in the DELETED a
//! filtered watcher gets when an object leaves its view. The real server builds those events
//! the same way: its watch cache takes etcd's previous value and stamps the event's revision on
//! it. [`Stamped`] keeps the stored `Arc<Value>` and the revision side by side and writes the
//! revision over `metadata.resourceVersion` while it is encoded, because the copy it replaces
//! was the most expensive part of a deletion: a ~3 KB Pod is ~24 KB of `Value` in ~240
//! allocations, kept in the history, copied once for every deletion.

use std::sync::Arc;

use serde::ser::{Serialize, SerializeMap, Serializer};
use serde_json::{Map, Value};

use crate::sim::object;

const RESOURCE_VERSION: &str = "resourceVersion";

/// A stored object and, if it differs from the object's own, the resourceVersion to present.
#[derive(Debug, Clone, PartialEq)]
pub struct Stamped {
    object: Arc<Value>,
    resource_version: Option<u64>,
}

impl Stamped {
    /// The object as stored, at its own resourceVersion.
    pub fn stored(object: Arc<Value>) -> Stamped {
        Stamped {
            object,
            resource_version: None,
        }
    }

    /// The object presented at `rv` (a deletion's, or a change that took it out of view).
    pub fn at(object: Arc<Value>, rv: u64) -> Stamped {
        Stamped {
            object,
            resource_version: Some(rv),
        }
    }

    /// The stored object; its own `metadata.resourceVersion` may be older than the one
    /// presented (see [`Stamped::resource_version`]). Everything but that field is as presented.
    pub fn object(&self) -> &Arc<Value> {
        &self.object
    }

    /// The resourceVersion presented to clients.
    pub fn resource_version(&self) -> Option<u64> {
        self.resource_version
            .or_else(|| object::resource_version(&self.object)?.parse().ok())
    }

    /// The object as presented, as a value of its own (a copy when the resourceVersion differs;
    /// for in-process callers and tests, not for the request path).
    pub fn to_value(&self) -> Value {
        let mut value = (*self.object).clone();
        self.stamp(&mut value);
        value
    }

    /// Writes the presented resourceVersion over `value`'s, if it differs from the stored one
    /// (for a representation built from [`Stamped::object`], such as metadata only).
    pub fn stamp(&self, value: &mut Value) {
        if let Some(rv) = self.resource_version {
            object::set_meta(value, RESOURCE_VERSION, Some(Value::from(rv.to_string())));
        }
    }
}

impl Serialize for Stamped {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let (Some(rv), Value::Object(fields)) = (self.resource_version, &*self.object) else {
            return self.object.serialize(serializer);
        };
        let mut map = serializer.serialize_map(Some(fields.len()))?;
        for (key, value) in fields {
            match value {
                Value::Object(metadata) if key == "metadata" => {
                    map.serialize_entry(key, &MetadataAt { metadata, rv })?
                }
                _ => map.serialize_entry(key, value)?,
            }
        }
        map.end()
    }
}

/// An object's `PartialObjectMetadata` (`meta.k8s.io/v1`), as served for `Accept:
/// application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1`: `kind`, `apiVersion` and
/// `metadata`, in the real server's order, written from the stored object — never from a copy
/// of its metadata, which cost the server more than encoding the whole object. The one writer
/// of that representation: GETs, write answers, watch events and list items.
#[derive(Debug, Clone, Copy)]
pub struct MetadataOnly<'a> {
    object: &'a Value,
    resource_version: Option<u64>,
}

impl<'a> MetadataOnly<'a> {
    /// The metadata of an object as stored.
    pub fn stored(object: &'a Value) -> MetadataOnly<'a> {
        MetadataOnly {
            object,
            resource_version: None,
        }
    }

    /// The metadata of a stamped object, at its presented resourceVersion.
    pub fn stamped(stamped: &'a Stamped) -> MetadataOnly<'a> {
        MetadataOnly {
            object: &stamped.object,
            resource_version: stamped.resource_version,
        }
    }
}

impl Serialize for MetadataOnly<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let empty = Map::new();
        let metadata = match self.object.get("metadata") {
            Some(Value::Object(metadata)) => metadata,
            _ => &empty,
        };
        let mut map = serializer.serialize_map(Some(3))?;
        map.serialize_entry("kind", "PartialObjectMetadata")?;
        map.serialize_entry("apiVersion", "meta.k8s.io/v1")?;
        match self.resource_version {
            Some(rv) => map.serialize_entry("metadata", &MetadataAt { metadata, rv })?,
            None => map.serialize_entry("metadata", metadata)?,
        }
        map.end()
    }
}

/// `metadata` with `resourceVersion` replaced (or inserted, in key order, if it was missing).
struct MetadataAt<'a> {
    metadata: &'a Map<String, Value>,
    rv: u64,
}

impl Serialize for MetadataAt<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let rv = self.rv.to_string();
        let present = self.metadata.contains_key(RESOURCE_VERSION);
        let len = self.metadata.len() + usize::from(!present);
        let mut map = serializer.serialize_map(Some(len))?;
        let mut written = false;
        for (key, value) in self.metadata {
            if key == RESOURCE_VERSION {
                map.serialize_entry(key, &rv)?;
                written = true;
                continue;
            }
            if !present && !written && key.as_str() > RESOURCE_VERSION {
                map.serialize_entry(RESOURCE_VERSION, &rv)?;
                written = true;
            }
            map.serialize_entry(key, value)?;
        }
        if !written {
            map.serialize_entry(RESOURCE_VERSION, &rv)?;
        }
        map.end()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn pod() -> Arc<Value> {
        Arc::new(json!({
            "apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": "p", "namespace": "ns", "resourceVersion": "7", "uid": "u"},
            "spec": {"nodeName": "n"}, "status": {"phase": "Succeeded"}
        }))
    }

    #[test]
    fn a_stored_object_is_encoded_as_it_is() {
        let stamped = Stamped::stored(pod());
        assert_eq!(serde_json::to_value(&stamped).ok(), Some((*pod()).clone()));
        assert_eq!(stamped.resource_version(), Some(7));
        assert_eq!(stamped.to_value(), *pod());
    }

    #[test]
    fn a_stamped_object_is_encoded_with_the_new_version_and_nothing_else_changed() {
        let stamped = Stamped::at(pod(), 9);
        let mut expected = (*pod()).clone();
        expected["metadata"]["resourceVersion"] = json!("9");
        let encoded = serde_json::to_string(&stamped).unwrap_or_default();
        assert_eq!(
            serde_json::from_str::<Value>(&encoded).ok(),
            Some(expected.clone())
        );
        // Field order is the stored object's: the same bytes as the copy it replaces.
        assert_eq!(
            Some(encoded),
            serde_json::to_string(&expected).ok(),
            "same bytes as a stamped copy"
        );
        assert_eq!(stamped.to_value(), expected);
        assert_eq!(stamped.resource_version(), Some(9));
        assert_eq!(stamped.object()["metadata"]["resourceVersion"], "7");
    }

    #[test]
    fn metadata_only_is_the_metadata_at_the_presented_version() {
        let partial = |metadata: Value| {
            json!({"kind": "PartialObjectMetadata", "apiVersion": "meta.k8s.io/v1",
                "metadata": metadata})
        };
        let stored = Stamped::stored(pod());
        let encoded = serde_json::to_string(&MetadataOnly::stamped(&stored)).unwrap_or_default();
        assert!(encoded.starts_with(r#"{"kind":"PartialObjectMetadata","apiVersion":"#));
        let decoded: Value = serde_json::from_str(&encoded).unwrap_or_default();
        assert_eq!(decoded, partial(pod()["metadata"].clone()));
        let at_nine = Stamped::at(pod(), 9);
        let mut metadata = pod()["metadata"].clone();
        metadata["resourceVersion"] = json!("9");
        assert_eq!(
            serde_json::to_value(MetadataOnly::stamped(&at_nine)).ok(),
            Some(partial(metadata))
        );
        // An object without metadata (the store never holds one) gets an empty map.
        let bare = json!({"kind": "Pod", "spec": {}});
        assert_eq!(
            serde_json::to_value(MetadataOnly::stored(&bare)).ok(),
            Some(partial(json!({})))
        );
    }

    #[test]
    fn a_missing_version_is_inserted_in_key_order() {
        let object = Arc::new(json!({"metadata": {"name": "p", "uid": "u"}}));
        let encoded = serde_json::to_string(&Stamped::at(object, 3)).unwrap_or_default();
        assert_eq!(
            encoded,
            r#"{"metadata":{"name":"p","resourceVersion":"3","uid":"u"}}"#
        );
        let last = Arc::new(json!({"metadata": {"name": "p"}}));
        let encoded = serde_json::to_string(&Stamped::at(last, 4)).unwrap_or_default();
        assert_eq!(
            encoded,
            r#"{"metadata":{"name":"p","resourceVersion":"4"}}"#
        );
    }
}
