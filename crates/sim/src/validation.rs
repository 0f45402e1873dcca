//! The object validation the simulated server performs on writes.
//!
//! Contract: only the checks a controller can trip over are implemented, with the real server's
//! field paths, cause reasons and messages: a missing or malformed name, incomplete
//! ownerReferences (exchange 35), more than one controller reference, a changed uid on update,
//! and new finalizers on an object that is being deleted. Custom resources the sim has a CRD
//! for (kube-gc's retention policies) are also checked against its schema and CEL rules, in
//! [`crd`]. Everything else a real server validates (pod specs, label syntax, …) is accepted
//! as is.
//!
//! Before validation comes decoding: the real server decodes a request body into Go structs, so a
//! metadata field of the wrong JSON type (a number as a label value, a string as the finalizer
//! list) is refused with 400 BadRequest and a `json: cannot unmarshal …` message before any rule
//! runs. [`check_metadata_types`] does that for the metadata fields clients decode with fixed
//! types, so nothing the sim stores could fail to decode in a real client.

pub mod crd;

use serde_json::Value;

use crate::object;
use crate::resources::ResourceDef;
use crate::status::{Cause, CauseType};

fn forbidden(field: &str, detail: String) -> Cause {
    Cause {
        kind: CauseType::Forbidden,
        field: field.to_string(),
        value: Value::Null,
        detail,
    }
}

const DNS1123_SUBDOMAIN_MSG: &str = "a lowercase RFC 1123 subdomain must consist of lower case \
alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character \
(e.g. 'example.com', regex used for validation is \
'[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')";

fn is_dns1123_subdomain(name: &str) -> bool {
    name.len() <= 253
        && name.split('.').all(|label| {
            let bytes = label.as_bytes();
            !bytes.is_empty()
                && bytes
                    .iter()
                    .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || *b == b'-')
                && bytes[0] != b'-'
                && bytes[bytes.len() - 1] != b'-'
        })
}

/// RBAC objects (and a few others) only need names that are valid URL path segments.
fn is_path_segment(name: &str) -> bool {
    name != "." && name != ".." && !name.contains('/') && !name.contains('%')
}

/// The JSON type name Go's decoder uses in its error messages.
fn json_type(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "bool",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

/// The first metadata field whose JSON type a Go `ObjectMeta` could not decode, as
/// `(offending value, field path, Go type)`.
fn mistyped_metadata_field(
    meta: &serde_json::Map<String, Value>,
) -> Option<(&Value, String, &'static str)> {
    for field in ["labels", "annotations"] {
        match meta.get(field) {
            None | Some(Value::Null) => {}
            Some(Value::Object(map)) => {
                if let Some(v) = map.values().find(|v| !v.is_string()) {
                    return Some((v, format!("ObjectMeta.metadata.{field}"), "string"));
                }
            }
            Some(other) => {
                return Some((
                    other,
                    format!("ObjectMeta.metadata.{field}"),
                    "map[string]string",
                ))
            }
        }
    }
    match meta.get("finalizers") {
        None | Some(Value::Null) => {}
        Some(Value::Array(items)) => {
            if let Some(v) = items.iter().find(|v| !v.is_string()) {
                return Some((v, "ObjectMeta.metadata.finalizers".into(), "string"));
            }
        }
        Some(other) => return Some((other, "ObjectMeta.metadata.finalizers".into(), "[]string")),
    }
    match meta.get("ownerReferences") {
        None | Some(Value::Null) => None,
        Some(Value::Array(items)) => items.iter().find(|v| !v.is_object()).map(|v| {
            (
                v,
                "ObjectMeta.metadata.ownerReferences".into(),
                "v1.OwnerReference",
            )
        }),
        Some(other) => Some((
            other,
            "ObjectMeta.metadata.ownerReferences".into(),
            "[]v1.OwnerReference",
        )),
    }
}

/// Refuses a body whose metadata a real server could not decode, with the message its decoder
/// gives (`Job in version "v1" cannot be handled as a Job: json: cannot unmarshal number into Go
/// struct field ObjectMeta.metadata.labels of type string`).
pub fn check_metadata_types(def: &ResourceDef, obj: &Value) -> Result<(), String> {
    let Some(meta) = obj.get("metadata") else {
        return Ok(());
    };
    let problem = match meta {
        Value::Object(meta) => mistyped_metadata_field(meta),
        Value::Null => None,
        other => Some((other, "metadata".to_string(), "v1.ObjectMeta")),
    };
    match problem {
        None => Ok(()),
        Some((value, field, go_type)) => Err(format!(
            "{kind} in version \"{version}\" cannot be handled as a {kind}: json: cannot unmarshal \
             {found} into Go struct field {field} of type {go_type}",
            kind = def.kind,
            version = def.version,
            found = json_type(value),
        )),
    }
}

/// Checks a new object (after `generateName` has been resolved).
pub fn validate_create(def: &ResourceDef, obj: &Value) -> Vec<Cause> {
    let mut errors = Vec::new();
    match object::name(obj) {
        None | Some("") => errors.push(Cause::required(
            "metadata.name",
            "name or generateName is required",
        )),
        Some(name) if def.group.starts_with("rbac.") => {
            if !is_path_segment(name) {
                errors.push(Cause::invalid(
                    "metadata.name",
                    Value::from(name),
                    "may not contain '/' or '%' and may not be '.' or '..'",
                ));
            }
        }
        Some(name) => {
            if !is_dns1123_subdomain(name) {
                errors.push(Cause::invalid(
                    "metadata.name",
                    Value::from(name),
                    DNS1123_SUBDOMAIN_MSG,
                ));
            }
        }
    }
    errors.extend(validate_owner_references(obj));
    errors
}

/// Checks an update of `old` into `new` (both complete objects).
pub fn validate_update(old: &Value, new: &Value) -> Vec<Cause> {
    let mut errors = validate_owner_references(new);
    if let (Some(old_uid), Some(new_uid)) = (object::uid(old), object::uid(new)) {
        if old_uid != new_uid {
            errors.push(Cause::invalid(
                "metadata.uid",
                Value::from(new_uid),
                "field is immutable",
            ));
        }
    }
    if object::deletion_timestamp(old).is_some() {
        let before = object::finalizers(old);
        let added: Vec<String> = object::finalizers(new)
            .into_iter()
            .filter(|f| !before.contains(f))
            .collect();
        if !added.is_empty() {
            let listed: Vec<String> = added.iter().map(|f| format!("{f:?}")).collect();
            errors.push(forbidden(
                "metadata.finalizers",
                format!(
                    "no new finalizers can be added if the object is being deleted, found new finalizers []string{{{}}}",
                    listed.join(", ")
                ),
            ));
        }
    }
    errors
}

fn validate_owner_references(obj: &Value) -> Vec<Cause> {
    let refs = object::meta(obj)
        .and_then(|m| m.get("ownerReferences"))
        .and_then(Value::as_array);
    let Some(refs) = refs else {
        return Vec::new();
    };
    let mut errors = Vec::new();
    for reference in refs {
        let field = |name: &str| reference.get(name).and_then(Value::as_str).unwrap_or("");
        let api_version = field("apiVersion");
        if api_version.is_empty() {
            errors.push(Cause::invalid(
                "metadata.ownerReferences.apiVersion",
                Value::from(api_version),
                "version must not be empty",
            ));
        }
        if field("kind").is_empty() {
            errors.push(Cause::invalid(
                "metadata.ownerReferences.kind",
                Value::from(""),
                "kind must not be empty",
            ));
        }
        if field("name").is_empty() {
            errors.push(Cause::invalid(
                "metadata.ownerReferences.name",
                Value::from(""),
                "name must not be empty",
            ));
        }
        if field("uid").is_empty() {
            errors.push(Cause::invalid(
                "metadata.ownerReferences.uid",
                Value::from(""),
                "uid must not be empty",
            ));
        }
    }
    let controllers = refs
        .iter()
        .filter(|r| r.get("controller").and_then(Value::as_bool) == Some(true))
        .count();
    if controllers > 1 {
        errors.push(Cause::invalid(
            "metadata.ownerReferences",
            Value::from("[]v1.OwnerReference{...}"),
            "Only one reference can have Controller set to true",
        ));
    }
    errors
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::resources::ResourceDef;
    use crate::status::{invalid, GroupKind};
    use serde_json::json;

    fn configmaps() -> ResourceDef {
        ResourceDef::new("", "v1", "configmaps", "ConfigMap")
    }

    #[test]
    fn empty_owner_uid_matches_exchange_35() {
        let obj = json!({"metadata": {"name": "bad", "ownerReferences": [
            {"apiVersion": "v1", "kind": "ConfigMap", "name": "x", "uid": ""}]}});
        let causes = validate_create(&configmaps(), &obj);
        assert_eq!(causes.len(), 1);
        let (_, body) = invalid(&GroupKind::new("", "ConfigMap"), "bad", &causes);
        assert_eq!(
            body["message"],
            "ConfigMap \"bad\" is invalid: metadata.ownerReferences.uid: Invalid value: \"\": uid must not be empty"
        );
        assert_eq!(body["details"]["causes"][0]["reason"], "FieldValueInvalid");
    }

    #[test]
    fn names_are_required_and_checked() {
        let causes = validate_create(&configmaps(), &json!({"metadata": {}}));
        assert_eq!(causes[0].kind, CauseType::Required);
        let causes = validate_create(&configmaps(), &json!({"metadata": {"name": "Bad_Name"}}));
        assert_eq!(causes[0].field, "metadata.name");
        assert!(validate_create(&configmaps(), &json!({"metadata": {"name": "a.b-c"}})).is_empty());
        let roles = ResourceDef::new(
            "rbac.authorization.k8s.io",
            "v1",
            "clusterroles",
            "ClusterRole",
        );
        assert!(validate_create(&roles, &json!({"metadata": {"name": "system:x"}})).is_empty());
    }

    #[test]
    fn two_controllers_are_rejected() {
        let reference = json!({"apiVersion": "v1", "kind": "ConfigMap", "name": "o", "uid": "u",
            "controller": true});
        let obj =
            json!({"metadata": {"name": "a", "ownerReferences": [reference.clone(), reference]}});
        assert_eq!(validate_create(&configmaps(), &obj).len(), 1);
    }

    #[test]
    fn no_new_finalizers_while_deleting() {
        let old = json!({"metadata": {"uid": "u", "deletionTimestamp": "t", "finalizers": ["a"]}});
        let new =
            json!({"metadata": {"uid": "u", "deletionTimestamp": "t", "finalizers": ["a", "b"]}});
        let causes = validate_update(&old, &new);
        assert_eq!(causes[0].field, "metadata.finalizers");
        assert_eq!(
            causes[0].body(),
            "Forbidden: no new finalizers can be added if the object is being deleted, found new finalizers []string{\"b\"}"
        );
        let removed = json!({"metadata": {"uid": "u", "deletionTimestamp": "t"}});
        assert!(validate_update(&old, &removed).is_empty());
    }

    #[test]
    fn uid_is_immutable() {
        let old = json!({"metadata": {"uid": "a"}});
        let new = json!({"metadata": {"uid": "b"}});
        assert_eq!(validate_update(&old, &new)[0].field, "metadata.uid");
    }
}
