//! OpenAPI v3 schemas of the built-in kinds, built from what this server knows of them: the
//! protobuf tables of `kube_gc_protobuf::schema` (their field names, and how each value is
//! laid out) — no text from elsewhere, and no descriptions but a few of this project's own.
//!
//! Contract:
//! - [`kind_schemas`] adds to `schemas` the schema of `def`'s kind and of every message it
//!   reaches, named as the real server names them (`io.k8s.api.batch.v1.JobSpec`,
//!   `io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta`), and returns the kind's name.
//! - A kind the tables know gets its whole field tree; any other, its `apiVersion`, `kind`,
//!   `metadata` and — as objects whose members are not described — `spec` and `status`.
//! - A nested message is `allOf: [{$ref}]`, a list `type: array`, a map `type: object` with
//!   `additionalProperties`; times are `string` `date-time`, quantities `string`,
//!   int-or-string `string` `int-or-string`, as the real server writes those types.
//! - The kind's schema carries `x-kubernetes-group-version-kind`, which `kubectl explain`
//!   finds it by.

use std::collections::BTreeMap;

use kube_gc_protobuf::schema::{self, Field, Kind, Message, LIST_META, OBJECT_META};
use serde_json::{json, Map, Value};

use crate::resources::ResourceDef;

/// `#/components/schemas/<name>`.
pub fn reference(name: &str) -> Value {
    json!({"allOf": [{"$ref": format!("#/components/schemas/{name}")}]})
}

/// The real server's name of a protobuf message: its Go package, then its name.
fn message_name(message: &Message) -> String {
    match message.name.strip_prefix("meta.") {
        Some(rest) => format!("io.k8s.apimachinery.pkg.apis.meta.{rest}"),
        None => format!("io.k8s.api.{}", message.name),
    }
}

/// The real server's name of a kind no table describes.
fn kind_name(def: &ResourceDef) -> String {
    if crate::resources::is_definitions(def) {
        return format!(
            "io.k8s.apiextensions-apiserver.pkg.apis.apiextensions.{}.{}",
            def.version, def.kind
        );
    }
    let package = match def.group.split('.').next() {
        Some("") | None => "core",
        Some(first) => first,
    };
    format!("io.k8s.api.{package}.{}.{}", def.version, def.kind)
}

/// Adds `ObjectMeta`'s schema (and what it reaches) to `schemas`; returns its name.
pub fn object_meta(schemas: &mut BTreeMap<String, Value>) -> String {
    message_schemas(&OBJECT_META, schemas)
}

/// Adds the schema of `def`'s kind, and what it reaches, to `schemas`; returns its name.
pub fn kind_schemas(def: &ResourceDef, schemas: &mut BTreeMap<String, Value>) -> String {
    let object_meta = object_meta(schemas);
    let (name, mut properties) = match schema::for_kind(&def.api_version(), &def.kind) {
        Some(message) => {
            let name = message_name(message);
            (name, properties_of(message, schemas))
        }
        None => {
            let mut properties = Map::new();
            properties.insert("metadata".to_owned(), reference(&object_meta));
            for part in ["spec", "status"] {
                properties.insert(
                    part.to_owned(),
                    json!({"type": "object", "x-kubernetes-preserve-unknown-fields": true}),
                );
            }
            (kind_name(def), properties)
        }
    };
    let mut all = type_members();
    all.append(&mut properties);
    let description = format!(
        "A {} of {}, as kube-gc's simulated API server knows it.",
        def.kind,
        def.api_version()
    );
    schemas.insert(
        name.clone(),
        json!({"description": description, "type": "object", "properties": all,
            "x-kubernetes-group-version-kind": [
                {"group": def.group, "kind": def.kind, "version": def.version}]}),
    );
    name
}

/// Adds the schema of `def`'s list kind, whose items are `kind`, to `schemas`; returns its
/// name (the kind's name with `List`).
pub fn list_schema(def: &ResourceDef, kind: &str, schemas: &mut BTreeMap<String, Value>) -> String {
    let list_meta = message_schemas(&LIST_META, schemas);
    let mut properties = type_members();
    properties.insert(
        "items".to_owned(),
        json!({"type": "array", "items": {"$ref": format!("#/components/schemas/{kind}")}}),
    );
    properties.insert("metadata".to_owned(), reference(&list_meta));
    let name = format!("{kind}List");
    schemas.insert(
        name.clone(),
        json!({"type": "object", "required": ["items"], "properties": properties,
            "x-kubernetes-group-version-kind": [
                {"group": def.group, "kind": def.list_kind(), "version": def.version}]}),
    );
    name
}

/// `apiVersion` and `kind`, which every kind's object has (the envelope's, in protobuf).
pub fn type_members() -> Map<String, Value> {
    let mut members = Map::new();
    members.insert(
        "apiVersion".to_owned(),
        json!({"description": "The version of the schema this object is written in.",
            "type": "string"}),
    );
    members.insert(
        "kind".to_owned(),
        json!({"description": "The kind of object this is.", "type": "string"}),
    );
    members
}

/// Adds `message` and every message it reaches to `schemas`; returns its name.
fn message_schemas(message: &'static Message, schemas: &mut BTreeMap<String, Value>) -> String {
    let name = message_name(message);
    if !schemas.contains_key(&name) {
        // Placed first, so that a message reaching itself (none today) ends the walk.
        schemas.insert(name.clone(), Value::Null);
        let properties = properties_of(message, schemas);
        schemas.insert(
            name.clone(),
            json!({"type": "object", "properties": properties}),
        );
    }
    name
}

/// The members of `message`'s JSON object, inlined messages' members in place.
fn properties_of(
    message: &'static Message,
    schemas: &mut BTreeMap<String, Value>,
) -> Map<String, Value> {
    let mut properties = Map::new();
    for field in message.fields {
        if let Kind::Inline(inner) = field.kind {
            properties.append(&mut properties_of(inner, schemas));
            continue;
        }
        properties.insert(field.name.to_owned(), field_schema(field, schemas));
    }
    properties
}

fn field_schema(field: &Field, schemas: &mut BTreeMap<String, Value>) -> Value {
    let value = value_schema(&field.kind, schemas);
    match field.kind {
        // A map is repeated entries on the wire, one object in JSON.
        Kind::Map(_) => value,
        _ if field.repeated => json!({"type": "array", "items": value}),
        _ => value,
    }
}

fn value_schema(kind: &Kind, schemas: &mut BTreeMap<String, Value>) -> Value {
    match kind {
        Kind::String => json!({"type": "string"}),
        Kind::Bytes => json!({"type": "string", "format": "byte"}),
        Kind::Int32 => json!({"type": "integer", "format": "int32"}),
        Kind::Int64 => json!({"type": "integer", "format": "int64"}),
        Kind::Bool => json!({"type": "boolean"}),
        Kind::Message(message) | Kind::Inline(message) => {
            reference(&message_schemas(message, schemas))
        }
        Kind::Map(value) => {
            json!({"type": "object", "additionalProperties": value_schema(value, schemas)})
        }
        Kind::Time | Kind::MicroTime => json!({"type": "string", "format": "date-time"}),
        Kind::Quantity => json!({"type": "string"}),
        Kind::IntOrString => json!({"type": "string", "format": "int-or-string"}),
        Kind::RawJson => json!({"type": "object"}),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn jobs() -> ResourceDef {
        ResourceDef::new("batch", "v1", "jobs", "Job")
    }

    #[test]
    fn a_job_has_its_field_tree_under_the_real_servers_names() {
        let mut schemas = BTreeMap::new();
        let name = kind_schemas(&jobs(), &mut schemas);
        assert_eq!(name, "io.k8s.api.batch.v1.Job");
        let job = &schemas[&name];
        assert_eq!(
            job["x-kubernetes-group-version-kind"],
            json!([{"group": "batch", "kind": "Job", "version": "v1"}])
        );
        assert_eq!(
            job["properties"]["spec"],
            reference("io.k8s.api.batch.v1.JobSpec")
        );
        let spec = &schemas["io.k8s.api.batch.v1.JobSpec"];
        assert_eq!(
            spec["properties"]["ttlSecondsAfterFinished"],
            json!({"type": "integer", "format": "int32"})
        );
        let status = &schemas["io.k8s.api.batch.v1.JobStatus"];
        assert_eq!(status["properties"]["conditions"]["type"], "array");
        assert_eq!(
            status["properties"]["startTime"],
            json!({"type": "string", "format": "date-time"})
        );
        let meta = &schemas["io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"];
        assert_eq!(meta["properties"]["labels"]["type"], "object");
        assert!(!schemas.values().any(Value::is_null));
    }

    #[test]
    fn a_kind_no_table_knows_has_its_top_level() {
        let mut schemas = BTreeMap::new();
        let secrets = ResourceDef::new("", "v1", "secrets", "Secret");
        let name = kind_schemas(&secrets, &mut schemas);
        assert_eq!(name, "io.k8s.api.core.v1.Secret");
        let properties = schemas[&name]["properties"].as_object().unwrap();
        let members: Vec<&str> = properties.keys().map(String::as_str).collect();
        assert_eq!(
            members,
            ["apiVersion", "kind", "metadata", "spec", "status"]
        );
        let leases = ResourceDef::new("coordination.k8s.io", "v1", "leases", "Lease");
        assert_eq!(
            kind_schemas(&leases, &mut schemas),
            "io.k8s.api.coordination.v1.Lease"
        );
    }
}
