//! An object as a client receives it: a stored object, shared rather than copied, and the
//! metadata it is presented with where that is not its own.
//!
//! Contract: a [`Stamped`] is a stored `Arc<Value>` and at most two overrides of its metadata,
//! written over it while it is encoded and never by copying it:
//! - a **resourceVersion**: a deletion's final state is the object's last stored state at the
//!   deletion's own resourceVersion — in a watch's DELETED event, in the answer to a DELETE, in
//!   the DELETED a filtered watcher gets when an object leaves its view. The real server builds
//!   those events the same way: its watch cache takes etcd's previous value and stamps the
//!   event's revision on it.
//! - a **deletion mark**: `deletionTimestamp` and `deletionGracePeriodSeconds: 0`, the state a
//!   graceful deletion writes and removes one revision later (a Pod's MODIFIED, then DELETED:
//!   exchange 68). That state is never read from the store's map — it leaves storage under the
//!   same lock — so only the history, the watch events and the answer ever present it.
//!
//! Every other field is the stored object's. The copies these replace were the most expensive
//! part of a deletion: a ~3 KB Pod is ~24 KB of `Value` in ~240 allocations, each copy kept in
//! the history, so its memory was fresh pages every time.

use std::borrow::Cow;
use std::sync::Arc;

use serde::ser::{Serialize, SerializeMap, Serializer};
use serde_json::{Map, Value};

use crate::object;

const RESOURCE_VERSION: &str = "resourceVersion";
const DELETION_TIMESTAMP: &str = "deletionTimestamp";
const DELETION_GRACE_PERIOD: &str = "deletionGracePeriodSeconds";

/// A stored object and the metadata it is presented with where that differs from its own.
#[derive(Debug, Clone, PartialEq)]
pub struct Stamped {
    object: Arc<Value>,
    overrides: Overrides,
}

/// Metadata written over a stored object's (see the module documentation).
#[derive(Debug, Clone, Default, PartialEq)]
struct Overrides {
    /// The resourceVersion presented.
    resource_version: Option<u64>,
    /// The `deletionTimestamp` of a deletion mark, presented with a zero grace period.
    deletion_timestamp: Option<Arc<str>>,
}

/// No overrides, for metadata presented as stored.
static AS_STORED: Overrides = Overrides {
    resource_version: None,
    deletion_timestamp: None,
};

impl Overrides {
    fn is_empty(&self) -> bool {
        self.resource_version.is_none() && self.deletion_timestamp.is_none()
    }

    /// The overriding fields, in key order (the order `serde_json::Map` keeps its keys in).
    fn fields(&self) -> Vec<(&'static str, Field<'_>)> {
        let mut fields = Vec::with_capacity(3);
        if let Some(timestamp) = &self.deletion_timestamp {
            fields.push((DELETION_GRACE_PERIOD, Field::Number(0)));
            fields.push((DELETION_TIMESTAMP, Field::Text(Cow::Borrowed(timestamp))));
        }
        if let Some(rv) = self.resource_version {
            fields.push((RESOURCE_VERSION, Field::Text(Cow::Owned(rv.to_string()))));
        }
        fields
    }
}

/// The value of an overriding metadata field.
enum Field<'a> {
    Text(Cow<'a, str>),
    Number(i64),
}

impl Serialize for Field<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self {
            Field::Text(text) => serializer.serialize_str(text),
            Field::Number(n) => serializer.serialize_i64(*n),
        }
    }
}

impl From<&Field<'_>> for Value {
    fn from(field: &Field<'_>) -> Value {
        match field {
            Field::Text(text) => Value::from(text.as_ref()),
            Field::Number(n) => Value::from(*n),
        }
    }
}

impl Stamped {
    /// The object as stored, at its own resourceVersion.
    pub fn stored(object: Arc<Value>) -> Stamped {
        Stamped {
            object,
            overrides: Overrides::default(),
        }
    }

    /// The object marked for deletion at `timestamp` (with a zero grace period), as written at
    /// `rv`: a graceful deletion's state, without a copy of the object.
    pub fn marked_for_deletion(object: Arc<Value>, rv: u64, timestamp: &str) -> Stamped {
        Stamped {
            object,
            overrides: Overrides {
                resource_version: Some(rv),
                deletion_timestamp: Some(Arc::from(timestamp)),
            },
        }
    }

    /// The same state presented at `rv` (a deletion's, or a change that took the object out of
    /// a watcher's view).
    pub fn presented_at(&self, rv: u64) -> Stamped {
        let mut stamped = self.clone();
        stamped.overrides.resource_version = Some(rv);
        stamped
    }

    /// The stored object the presentation is written over. Its `metadata.resourceVersion`,
    /// `deletionTimestamp` and `deletionGracePeriodSeconds` may differ from those presented
    /// (see [`Stamped::value`]); every other field is as presented.
    pub fn object(&self) -> &Arc<Value> {
        &self.object
    }

    /// Whether this is a graceful deletion's mark (see the module documentation).
    pub fn is_deletion_mark(&self) -> bool {
        self.overrides.deletion_timestamp.is_some()
    }

    /// Whether `other` presents the same stored object with the same metadata, but for the
    /// resourceVersion: the same `Arc` (not an equal copy) and the same mark.
    pub fn differs_at_most_in_resource_version(&self, other: &Stamped) -> bool {
        Arc::ptr_eq(&self.object, &other.object)
            && self.overrides.deletion_timestamp == other.overrides.deletion_timestamp
    }

    /// Whether the stored object is presented as it is.
    pub fn is_as_stored(&self) -> bool {
        self.overrides.is_empty()
    }

    /// The resourceVersion presented to clients.
    pub fn resource_version(&self) -> Option<u64> {
        self.overrides
            .resource_version
            .or_else(|| object::resource_version(&self.object)?.parse().ok())
    }

    /// The object as presented: the stored one when nothing is written over it, else a copy
    /// (for in-process callers, tests and rare reads, not for the request path).
    pub fn value(&self) -> Cow<'_, Value> {
        if self.is_as_stored() {
            Cow::Borrowed(&self.object)
        } else {
            Cow::Owned(self.to_value())
        }
    }

    /// The object as presented, shared when nothing is written over it (see [`Stamped::value`]).
    pub fn to_arc(&self) -> Arc<Value> {
        if self.is_as_stored() {
            Arc::clone(&self.object)
        } else {
            Arc::new(self.to_value())
        }
    }

    /// The object as presented, as a value of its own (see [`Stamped::value`]).
    pub fn to_value(&self) -> Value {
        let mut value = (*self.object).clone();
        for (key, field) in self.overrides.fields() {
            object::set_meta(&mut value, key, Some(Value::from(&field)));
        }
        value
    }
}

impl Serialize for Stamped {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let Value::Object(fields) = &*self.object else {
            return self.object.serialize(serializer);
        };
        if self.overrides.is_empty() {
            return self.object.serialize(serializer);
        }
        let mut map = serializer.serialize_map(Some(fields.len()))?;
        for (key, value) in fields {
            match value {
                Value::Object(metadata) if key == "metadata" => map.serialize_entry(
                    key,
                    &MetadataWith {
                        metadata,
                        overrides: &self.overrides,
                    },
                )?,
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
    overrides: &'a Overrides,
}

impl<'a> MetadataOnly<'a> {
    /// The metadata of an object as stored.
    pub fn stored(object: &'a Value) -> MetadataOnly<'a> {
        MetadataOnly {
            object,
            overrides: &AS_STORED,
        }
    }

    /// The metadata of a stamped object, as presented.
    pub fn stamped(stamped: &'a Stamped) -> MetadataOnly<'a> {
        MetadataOnly {
            object: &stamped.object,
            overrides: &stamped.overrides,
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
        map.serialize_entry(
            "metadata",
            &MetadataWith {
                metadata,
                overrides: self.overrides,
            },
        )?;
        map.end()
    }
}

/// `metadata` with the overriding fields written in place of the stored ones, or inserted in
/// key order where the stored metadata has none.
struct MetadataWith<'a> {
    metadata: &'a Map<String, Value>,
    overrides: &'a Overrides,
}

impl Serialize for MetadataWith<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        if self.overrides.is_empty() {
            return self.metadata.serialize(serializer);
        }
        let fields = self.overrides.fields();
        let added = fields
            .iter()
            .filter(|(key, _)| !self.metadata.contains_key(*key))
            .count();
        let mut map = serializer.serialize_map(Some(self.metadata.len() + added))?;
        let mut pending = fields.iter().peekable();
        for (key, value) in self.metadata {
            while let Some((field_key, field)) = pending.next_if(|(k, _)| *k < key.as_str()) {
                map.serialize_entry(field_key, field)?;
            }
            match pending.next_if(|(k, _)| *k == key.as_str()) {
                Some((field_key, field)) => map.serialize_entry(field_key, field)?,
                None => map.serialize_entry(key, value)?,
            }
        }
        for (field_key, field) in pending {
            map.serialize_entry(field_key, field)?;
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
        let stamped = Stamped::stored(pod()).presented_at(9);
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
        let at_nine = Stamped::stored(pod()).presented_at(9);
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
        let encoded =
            serde_json::to_string(&Stamped::stored(object).presented_at(3)).unwrap_or_default();
        assert_eq!(
            encoded,
            r#"{"metadata":{"name":"p","resourceVersion":"3","uid":"u"}}"#
        );
        let last = Arc::new(json!({"metadata": {"name": "p"}}));
        let encoded =
            serde_json::to_string(&Stamped::stored(last).presented_at(4)).unwrap_or_default();
        assert_eq!(
            encoded,
            r#"{"metadata":{"name":"p","resourceVersion":"4"}}"#
        );
    }

    #[test]
    fn a_deletion_mark_is_written_in_key_order_like_the_copy_it_replaces() {
        let with_labels = Arc::new(json!({
            "apiVersion": "v1", "kind": "Pod",
            "metadata": {"creationTimestamp": "2026-11-26T00:00:00Z", "labels": {"a": "b"},
                "name": "p", "resourceVersion": "7", "uid": "u"},
            "status": {"phase": "Succeeded"}
        }));
        for object in [pod(), with_labels] {
            let marked =
                Stamped::marked_for_deletion(Arc::clone(&object), 8, "2026-11-26T01:02:03Z");
            let mut expected = (*object).clone();
            expected["metadata"]["deletionTimestamp"] = json!("2026-11-26T01:02:03Z");
            expected["metadata"]["deletionGracePeriodSeconds"] = json!(0);
            expected["metadata"]["resourceVersion"] = json!("8");
            assert_eq!(
                serde_json::to_string(&marked).ok(),
                serde_json::to_string(&expected).ok(),
                "same bytes as a marked copy"
            );
            assert_eq!(marked.to_value(), expected);
            assert_eq!(*marked.value(), expected);
            assert_eq!(*marked.to_arc(), expected);
            assert!(!marked.is_as_stored());
            assert_eq!(marked.resource_version(), Some(8));
            // Presented later (a DELETED): the mark stays, the version moves.
            let deleted = marked.presented_at(9);
            expected["metadata"]["resourceVersion"] = json!("9");
            assert_eq!(serde_json::to_value(&deleted).ok(), Some(expected.clone()));
            let metadata = serde_json::to_string(&expected["metadata"]).unwrap_or_default();
            assert_eq!(
                serde_json::to_string(&MetadataOnly::stamped(&deleted)).ok(),
                Some(format!(
                    r#"{{"kind":"PartialObjectMetadata","apiVersion":"meta.k8s.io/v1","metadata":{metadata}}}"#
                ))
            );
            // The stored object is shared, untouched.
            assert!(Arc::ptr_eq(deleted.object(), &object));
            assert!(object["metadata"].get("deletionTimestamp").is_none());
        }
    }

    #[test]
    fn a_stored_object_is_shared_not_copied() {
        let object = pod();
        let stored = Stamped::stored(Arc::clone(&object));
        assert!(stored.is_as_stored());
        assert!(Arc::ptr_eq(&stored.to_arc(), &object));
        assert!(matches!(stored.value(), Cow::Borrowed(_)));
    }
}
