//! Reading and writing the `metadata` of objects held as `serde_json::Value`.
//!
//! Contract: the server never decodes objects into typed structs (it is the other side of the
//! wire from kube-gc's client and must not share its understanding of the types); these helpers
//! are the only place that knows where `metadata.name`, `metadata.finalizers`, … live in the JSON.
//! Readers return `None`/empty for anything missing or of the wrong JSON type; writers create
//! `metadata` when it is absent.

use rand::Rng;
use serde_json::{Map, Value};

/// The `metadata` object, if present.
pub fn meta(obj: &Value) -> Option<&Map<String, Value>> {
    obj.get("metadata").and_then(Value::as_object)
}

/// The `metadata` object, created (and `obj` turned into an object) if missing.
pub fn meta_mut(obj: &mut Value) -> &mut Map<String, Value> {
    if !obj.is_object() {
        *obj = Value::Object(Map::new());
    }
    let map = match obj {
        Value::Object(map) => map,
        _ => unreachable!("obj was just made an object"),
    };
    let metadata = map
        .entry("metadata")
        .or_insert_with(|| Value::Object(Map::new()));
    if !metadata.is_object() {
        *metadata = Value::Object(Map::new());
    }
    match metadata {
        Value::Object(m) => m,
        _ => unreachable!("metadata was just made an object"),
    }
}

/// A string field of `metadata` (`name`, `namespace`, `uid`, `resourceVersion`, …).
pub fn meta_str<'a>(obj: &'a Value, field: &str) -> Option<&'a str> {
    meta(obj)?.get(field)?.as_str()
}

/// Sets (or, with `None`, removes) a field of `metadata`.
pub fn set_meta(obj: &mut Value, field: &str, value: Option<Value>) {
    let metadata = meta_mut(obj);
    match value {
        Some(v) => {
            metadata.insert(field.to_string(), v);
        }
        None => {
            metadata.remove(field);
        }
    }
}

/// `metadata.name`.
pub fn name(obj: &Value) -> Option<&str> {
    meta_str(obj, "name")
}

/// `metadata.namespace`.
pub fn namespace(obj: &Value) -> Option<&str> {
    meta_str(obj, "namespace")
}

/// `metadata.uid`.
pub fn uid(obj: &Value) -> Option<&str> {
    meta_str(obj, "uid")
}

/// `metadata.resourceVersion`.
pub fn resource_version(obj: &Value) -> Option<&str> {
    meta_str(obj, "resourceVersion")
}

/// `metadata.deletionTimestamp`, when the object is being deleted.
pub fn deletion_timestamp(obj: &Value) -> Option<&str> {
    meta_str(obj, "deletionTimestamp")
}

/// `metadata.labels`.
pub fn labels(obj: &Value) -> Option<&Map<String, Value>> {
    meta(obj)?.get("labels")?.as_object()
}

/// `metadata.generation` (0 when absent).
pub fn generation(obj: &Value) -> i64 {
    meta(obj)
        .and_then(|m| m.get("generation"))
        .and_then(Value::as_i64)
        .unwrap_or(0)
}

/// `metadata.finalizers` as strings, in order (non-strings are skipped).
pub fn finalizers(obj: &Value) -> Vec<String> {
    meta(obj)
        .and_then(|m| m.get("finalizers"))
        .and_then(Value::as_array)
        .map(|list| {
            list.iter()
                .filter_map(|f| f.as_str().map(str::to_string))
                .collect()
        })
        .unwrap_or_default()
}

/// Replaces `metadata.finalizers`; an empty list removes the field, as the server omits it.
pub fn set_finalizers(obj: &mut Value, list: &[String]) {
    let value = (!list.is_empty()).then(|| Value::from(list.to_vec()));
    set_meta(obj, "finalizers", value);
}

/// The key an object is stored under: `namespace/name` for namespaced resources, `name` for
/// cluster-scoped ones. Keys sort the way etcd keys do, which fixes list order.
pub fn store_key(namespace: Option<&str>, name: &str) -> String {
    match namespace {
        Some(ns) => format!("{ns}/{name}"),
        None => name.to_string(),
    }
}

/// A random version-4 UUID in its canonical text form, like the server's `metadata.uid`.
pub fn random_uid() -> String {
    let mut bytes: [u8; 16] = rand::rng().random();
    bytes[6] = (bytes[6] & 0x0f) | 0x40;
    bytes[8] = (bytes[8] & 0x3f) | 0x80;
    let hex: String = bytes.iter().map(|b| format!("{b:02x}")).collect();
    format!(
        "{}-{}-{}-{}-{}",
        &hex[0..8],
        &hex[8..12],
        &hex[12..16],
        &hex[16..20],
        &hex[20..32]
    )
}

/// A random 5-character suffix for `generateName`, from the same alphabet as the API server
/// (no vowels, no easily confused characters).
pub fn random_name_suffix() -> String {
    const ALPHABET: &[u8] = b"bcdfghjklmnpqrstvwxz2456789";
    let mut rng = rand::rng();
    (0..5)
        .map(|_| ALPHABET[rng.random_range(0..ALPHABET.len())] as char)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn reads_metadata_fields() {
        let obj = json!({"metadata": {"name": "pi", "namespace": "capture", "generation": 2,
            "finalizers": ["orphan", 3, "x"], "labels": {"app": "a"}}});
        assert_eq!(name(&obj), Some("pi"));
        assert_eq!(namespace(&obj), Some("capture"));
        assert_eq!(uid(&obj), None);
        assert_eq!(generation(&obj), 2);
        assert_eq!(
            finalizers(&obj),
            vec!["orphan".to_string(), "x".to_string()]
        );
        assert_eq!(labels(&obj).map(|l| l.len()), Some(1));
    }

    #[test]
    fn writers_create_metadata_and_drop_empty_finalizers() {
        let mut obj = json!({"kind": "ConfigMap"});
        set_meta(&mut obj, "name", Some(json!("a")));
        set_finalizers(&mut obj, &["f".to_string()]);
        assert_eq!(obj["metadata"], json!({"name": "a", "finalizers": ["f"]}));
        set_finalizers(&mut obj, &[]);
        assert_eq!(obj["metadata"], json!({"name": "a"}));
    }

    #[test]
    fn uids_are_version_4() {
        let uid = random_uid();
        assert_eq!(uid.len(), 36);
        assert_eq!(uid.as_bytes()[14], b'4');
        assert!(matches!(uid.as_bytes()[19], b'8' | b'9' | b'a' | b'b'));
        assert_ne!(uid, random_uid());
    }

    #[test]
    fn name_suffixes_use_the_server_alphabet() {
        let suffix = random_name_suffix();
        assert_eq!(suffix.len(), 5);
        assert!(suffix
            .chars()
            .all(|c| "bcdfghjklmnpqrstvwxz2456789".contains(c)));
    }

    #[test]
    fn keys_sort_like_etcd_keys() {
        assert_eq!(store_key(Some("ns"), "a"), "ns/a");
        assert_eq!(store_key(None, "a"), "a");
        assert!(store_key(Some("a"), "z") < store_key(Some("b"), "a"));
    }
}
