//! The fields the server owns, and how a write may (not) change them.
//!
//! Contract: pure functions on JSON objects, no storage. [`prepare_new_object`] fills in what a
//! create gets from the server (kind/apiVersion, uid, creationTimestamp, generation, an empty or
//! absent status, a namespace's defaults, and what `built_in` says of Pods, Nodes, claims and
//! volumes) and drops what a client may not set. [`merge_update`]
//! builds the object an update stores from the stored one and the requested one: server-owned
//! metadata is carried over, the status subresource decides who may change `.status`, and
//! `generation` moves when anything but metadata and status changed.

use serde_json::{Map, Value};

use crate::clock::format_time;
use crate::object;
use crate::resources::ResourceDef;

/// Which part of an object an update may change.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum UpdateTarget {
    /// The main resource: everything but `.status` (when there is a status subresource).
    Main,
    /// The `status` subresource: only `.status`.
    Status,
    /// A namespace's `finalize` subresource: everything but `.status`, `spec.finalizers`
    /// included (exchange 154).
    Finalize,
}

/// Metadata fields only the server sets; an update cannot change them.
const SERVER_OWNED_METADATA: [&str; 6] = [
    "name",
    "namespace",
    "uid",
    "creationTimestamp",
    "deletionTimestamp",
    "deletionGracePeriodSeconds",
];

/// Fills in what the server owns on a new object.
pub fn prepare_new_object(
    def: &ResourceDef,
    obj: &mut Value,
    namespace: Option<&str>,
    now: chrono::DateTime<chrono::Utc>,
) {
    if !obj.is_object() {
        *obj = Value::Object(Map::new());
    }
    obj["kind"] = Value::from(def.kind.clone());
    obj["apiVersion"] = Value::from(def.api_version());
    let metadata = object::meta_mut(obj);
    for field in [
        "uid",
        "resourceVersion",
        "deletionTimestamp",
        "deletionGracePeriodSeconds",
        "generation",
        "namespace",
    ] {
        metadata.remove(field);
    }
    metadata.insert("uid".into(), Value::from(object::random_uid()));
    metadata.insert("creationTimestamp".into(), Value::from(format_time(now)));
    if let Some(ns) = namespace {
        metadata.insert("namespace".into(), Value::from(ns));
    }
    if def.tracks_generation {
        metadata.insert("generation".into(), Value::from(1));
    }
    if def.has_status {
        // Status is owned by controllers writing to /status; built-in types start with an
        // empty one (exchange 20), custom resources with none (exchange 47).
        if def.is_custom {
            if let Some(map) = obj.as_object_mut() {
                map.remove("status");
            }
        } else {
            obj["status"] = Value::Object(Map::new());
        }
    }
    if is_namespaces(def) {
        prepare_namespace(obj);
    }
    super::built_in::prepare_created(def, obj);
    drop_empty_lists(obj, def);
}

/// Namespaces get the name label, the `kubernetes` finalizer in spec and phase Active.
fn prepare_namespace(obj: &mut Value) {
    let name = object::name(obj).unwrap_or_default().to_string();
    let metadata = object::meta_mut(obj);
    let labels = metadata
        .entry("labels")
        .or_insert_with(|| Value::Object(Map::new()));
    if let Some(labels) = labels.as_object_mut() {
        labels.insert("kubernetes.io/metadata.name".into(), Value::from(name));
    }
    if obj.get("spec").and_then(|s| s.get("finalizers")).is_none() {
        obj["spec"] = serde_json::json!({"finalizers": ["kubernetes"]});
    }
    obj["status"] = serde_json::json!({"phase": "Active"});
}

/// Lists and maps the real server omits when empty (Go's `omitempty`), whether a client sent
/// them empty or null or a write emptied them: `metadata`'s `finalizers`, `ownerReferences`,
/// `labels` and `annotations` (a patch removing the last finalizer leaves no `finalizers: []`
/// behind, exchanges 182, 190), and a namespace's `spec.finalizers` (exchanges 155, 162).
fn drop_empty_lists(obj: &mut Value, def: &ResourceDef) {
    fn drop_if_empty(map: &mut Map<String, Value>, field: &str) {
        let empty = match map.get(field) {
            Some(Value::Null) => true,
            Some(Value::Array(items)) => items.is_empty(),
            Some(Value::Object(entries)) => entries.is_empty(),
            _ => false,
        };
        if empty {
            map.remove(field);
        }
    }
    if let Some(meta) = obj.get_mut("metadata").and_then(Value::as_object_mut) {
        for field in ["finalizers", "ownerReferences", "labels", "annotations"] {
            drop_if_empty(meta, field);
        }
    }
    if is_namespaces(def) {
        if let Some(spec) = obj.get_mut("spec").and_then(Value::as_object_mut) {
            drop_if_empty(spec, "finalizers");
        }
    }
}

fn is_namespaces(def: &ResourceDef) -> bool {
    super::namespace::is_namespaces(def)
}

/// Puts the stored `spec.finalizers` of a namespace back on `updated`.
fn keep_spec_finalizers(updated: &mut Value, existing: &Value) {
    let stored = existing.pointer("/spec/finalizers").cloned();
    match (
        updated.get_mut("spec").and_then(Value::as_object_mut),
        stored,
    ) {
        (Some(spec), Some(finalizers)) => {
            spec.insert("finalizers".into(), finalizers);
        }
        (Some(spec), None) => {
            spec.remove("finalizers");
        }
        (None, Some(finalizers)) => {
            if let Some(map) = updated.as_object_mut() {
                map.insert("spec".into(), serde_json::json!({"finalizers": finalizers}));
            }
        }
        (None, None) => {}
    }
}

/// Builds the object to store from the stored one and the requested one.
pub fn merge_update(
    def: &ResourceDef,
    existing: &Value,
    requested: Value,
    target: UpdateTarget,
) -> Value {
    let mut updated = match target {
        UpdateTarget::Main => {
            let mut updated = requested;
            if def.has_status {
                set_top_level(&mut updated, "status", existing.get("status").cloned());
            }
            updated
        }
        UpdateTarget::Status => {
            let mut updated = existing.clone();
            set_top_level(&mut updated, "status", requested.get("status").cloned());
            updated
        }
        UpdateTarget::Finalize => {
            let mut updated = requested;
            set_top_level(&mut updated, "status", existing.get("status").cloned());
            updated
        }
    };
    if target == UpdateTarget::Main {
        super::built_in::convert_secret(def, &mut updated);
    }
    if target == UpdateTarget::Main && is_namespaces(def) {
        // Only `/finalize` writes a namespace's `spec.finalizers` (exchange 145).
        keep_spec_finalizers(&mut updated, existing);
    }
    if !updated.is_object() {
        updated = Value::Object(Map::new());
    }
    updated["kind"] = Value::from(def.kind.clone());
    updated["apiVersion"] = Value::from(def.api_version());
    for field in SERVER_OWNED_METADATA
        .iter()
        .chain(["resourceVersion", "generation"].iter())
    {
        let value = object::meta(existing).and_then(|m| m.get(*field)).cloned();
        object::set_meta(&mut updated, field, value);
    }
    drop_empty_lists(&mut updated, def);
    if def.tracks_generation && content_changed(existing, &updated) {
        let next = object::generation(existing) + 1;
        object::set_meta(&mut updated, "generation", Some(Value::from(next)));
    }
    updated
}

fn set_top_level(obj: &mut Value, field: &str, value: Option<Value>) {
    if let Some(map) = obj.as_object_mut() {
        match value {
            Some(v) => {
                map.insert(field.to_string(), v);
            }
            None => {
                map.remove(field);
            }
        }
    }
}

/// Whether anything but `metadata` and `status` differs (what makes `generation` move).
fn content_changed(a: &Value, b: &Value) -> bool {
    let strip = |v: &Value| -> Map<String, Value> {
        v.as_object()
            .map(|m| {
                m.iter()
                    .filter(|(k, _)| !matches!(k.as_str(), "metadata" | "status"))
                    .map(|(k, v)| (k.clone(), v.clone()))
                    .collect()
            })
            .unwrap_or_default()
    };
    strip(a) != strip(b)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn jobs() -> ResourceDef {
        ResourceDef::new("batch", "v1", "jobs", "Job")
            .with_status()
            .tracking_generation()
    }

    #[test]
    fn new_objects_lose_what_clients_may_not_set() {
        let mut obj = json!({"metadata": {"name": "pi", "uid": "mine", "resourceVersion": "9",
            "generation": 7, "deletionTimestamp": "x"}, "status": {"succeeded": 1}});
        prepare_new_object(&jobs(), &mut obj, Some("ns"), chrono::DateTime::default());
        assert_ne!(obj["metadata"]["uid"], "mine");
        assert_eq!(obj["metadata"]["generation"], 1);
        assert_eq!(obj["metadata"]["namespace"], "ns");
        assert_eq!(obj["metadata"]["creationTimestamp"], "1970-01-01T00:00:00Z");
        assert!(obj["metadata"].get("resourceVersion").is_none());
        assert!(obj["metadata"].get("deletionTimestamp").is_none());
        assert_eq!(obj["status"], json!({}));
        assert_eq!(
            (obj["kind"].clone(), obj["apiVersion"].clone()),
            (json!("Job"), json!("batch/v1"))
        );
    }

    #[test]
    fn updates_keep_server_owned_metadata_and_move_generation_on_spec_changes() {
        let stored = json!({"kind": "Job", "apiVersion": "batch/v1", "metadata": {"name": "pi",
            "uid": "u", "generation": 1, "creationTimestamp": "t", "resourceVersion": "5"},
            "spec": {"x": 1}, "status": {"s": 1}});
        let relabelled = json!({"metadata": {"name": "pi", "labels": {"a": "b"}, "creationTimestamp": "forged"},
            "spec": {"x": 1}, "status": {"s": 2}});
        let updated = merge_update(&jobs(), &stored, relabelled, UpdateTarget::Main);
        assert_eq!(updated["metadata"]["creationTimestamp"], "t");
        assert_eq!(updated["metadata"]["uid"], "u");
        assert_eq!(updated["metadata"]["generation"], 1, "labels are not spec");
        assert_eq!(
            updated["status"],
            json!({"s": 1}),
            "status belongs to /status"
        );

        let respec = json!({"metadata": {"name": "pi"}, "spec": {"x": 2}});
        assert_eq!(
            merge_update(&jobs(), &stored, respec.clone(), UpdateTarget::Main)["metadata"]
                ["generation"],
            2
        );
        let status_only = merge_update(
            &jobs(),
            &stored,
            json!({"spec": {"x": 3}, "status": {"s": 3}}),
            UpdateTarget::Status,
        );
        assert_eq!(
            (status_only["spec"].clone(), status_only["status"].clone()),
            (json!({"x": 1}), json!({"s": 3}))
        );
    }
}
