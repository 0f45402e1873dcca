//! Validation of kube-gc's own custom resources (`RetentionPolicy`, `ClusterRetentionPolicy`)
//! against their CRDs, driven by the YAML in `deploy/crds/` itself, the way a v1.28
//! kube-apiserver validates custom resources (`fixtures/retention/crd-validation/` 08–17, 24).
//!
//! Contract:
//! - The schema is the CRD's `openAPIV3Schema`, compiled into the binary; the write answers
//!   422 Invalid with the real server's causes for
//!   - `type` (`FieldValueTypeInvalid`, `… in body must be of type integer: "string"`),
//!   - `enum` (`FieldValueNotSupported`, `supported values: "a", "b"`),
//!   - `minimum` / `maximum`, `minLength` / `maxLength`, `maxProperties` (`FieldValueInvalid`
//!     with kube-openapi's `… in body should be …` wording),
//!   - `required` (`FieldValueRequired`),
//!   - `oneOf` (the server's `"<path>" must validate one and only one schema (oneOf)` cause at
//!     `<nil>`, then the failures of the branch that came closest — approximated as the one with
//!     the fewest failures, the first on a tie, where kube-openapi counts passed checks),
//!   - `not` (only as part of deciding which `oneOf` branch holds),
//!   - `x-kubernetes-validations` CEL rules, each evaluated with `self` bound to its node when
//!     the node is present and of its schema's type; a false rule is `Invalid value: "object":
//!     <message>` at the node's path, an evaluation failure `<error> evaluating rule: <message>`.
//! - Schema failures come before rule failures, and properties are visited in the CRD's order
//!   (the real server walks Go maps, so its order of several causes is not stable; the CRD's
//!   order is the one captured in exchange 11).
//! - A `null` member is treated as absent: the real server prunes nulls of non-nullable fields
//!   before validating.
//! - Not validated: unknown fields (the real server prunes them, or refuses them under
//!   `fieldValidation=Strict`: exchanges 18–19), `format`, `pattern`, `minItems` / `maxItems`
//!   outside `oneOf` branches, list-type uniqueness, transition rules (`oldSelf`), CEL cost
//!   limits, and `metadata` beyond its type. `maxLength` and `maxProperties` are reported as
//!   `FieldValueInvalid` where the real server says `FieldValueTooLong` / `FieldValueTooMany`.

use serde_json::Value;

use crate::resources::ResourceDef;
use crate::status::{Cause, CauseType};

mod rules;
mod schema;
#[cfg(test)]
mod tests;

pub use schema::CrdSchemaError;
use schema::{crds, Schema};

/// Checks `obj`, a complete object of `def` about to be stored, against its CRD's schema and
/// rules. Resources without an embedded CRD are not checked (no causes).
///
/// # Errors
///
/// [`CrdSchemaError`] when the embedded CRDs themselves are broken.
pub fn validate(def: &ResourceDef, obj: &Value) -> Result<Vec<Cause>, CrdSchemaError> {
    let crds = crds().map_err(Clone::clone)?;
    let Some(crd) = crds
        .iter()
        .find(|c| c.group == def.group && c.version == def.version && c.plural == def.resource)
    else {
        return Ok(Vec::new());
    };
    let mut causes = Vec::new();
    check_schema(&crd.schema, obj, "", &mut causes);
    rules::check_rules(&crd.schema, obj, "", &mut causes);
    Ok(causes)
}

/// [`validate`] for the write path: a broken embedded CRD refuses the write with one cause
/// naming the problem rather than storing an object nothing checked.
pub fn causes(def: &ResourceDef, obj: &Value) -> Vec<Cause> {
    validate(def, obj).unwrap_or_else(|e| {
        vec![cause(
            CauseType::Invalid,
            "",
            Value::from(""),
            format!("the simulated server's CRD schema is broken: {e}"),
        )]
    })
}

fn child(path: &str, name: &str) -> String {
    if path.is_empty() {
        name.to_owned()
    } else {
        format!("{path}.{name}")
    }
}

/// The field a cause names: apimachinery prints the root path as `<nil>`.
fn field(path: &str) -> String {
    if path.is_empty() {
        "<nil>".to_owned()
    } else {
        path.to_owned()
    }
}

/// The OpenAPI type name of a JSON value.
fn type_of(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(n) if n.is_i64() || n.is_u64() => "integer",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

fn has_type(kind: &str, value: &Value) -> bool {
    let actual = type_of(value);
    actual == kind || (kind == "number" && actual == "integer")
}

fn cause(kind: CauseType, path: &str, value: Value, detail: String) -> Cause {
    Cause {
        kind,
        field: field(path),
        value,
        detail,
    }
}

/// The structural checks (kube-openapi's part), appended to `causes`.
fn check_schema(schema: &Schema, value: &Value, path: &str, causes: &mut Vec<Cause>) {
    if value.is_null() {
        return;
    }
    if let Some(kind) = &schema.kind {
        if !has_type(kind, value) {
            let actual = type_of(value);
            causes.push(cause(
                CauseType::TypeInvalid,
                path,
                Value::from(actual),
                format!("{path} in body must be of type {kind}: \"{actual}\""),
            ));
            return;
        }
    }
    if let Some(allowed) = &schema.allowed {
        if !allowed.contains(value) {
            let listed: Vec<String> = allowed
                .iter()
                .map(|v| Value::from(v.as_str().map_or_else(|| v.to_string(), str::to_owned)))
                .map(|v| v.to_string())
                .collect();
            causes.push(cause(
                CauseType::NotSupported,
                path,
                value.clone(),
                format!("supported values: {}", listed.join(", ")),
            ));
        }
    }
    match value {
        Value::Number(n) => check_number(schema, n, value, path, causes),
        Value::String(s) => check_string(schema, s, value, path, causes),
        Value::Array(items) => check_array(schema, items, value, path, causes),
        Value::Object(members) => check_object(schema, members, path, causes),
        Value::Null | Value::Bool(_) => {}
    }
    if !schema.one_of.is_empty() {
        check_one_of(schema, value, path, causes);
    }
    if let Some(not) = &schema.not {
        let mut inner = Vec::new();
        check_schema(not, value, path, &mut inner);
        if inner.is_empty() {
            causes.push(cause(
                CauseType::Invalid,
                path,
                value.clone(),
                format!("{path} in body must not validate the schema (not)"),
            ));
        }
    }
}

fn check_number(
    schema: &Schema,
    n: &serde_json::Number,
    value: &Value,
    path: &str,
    causes: &mut Vec<Cause>,
) {
    let Some(x) = n.as_f64() else { return };
    if let Some(min) = schema.minimum.filter(|min| x < *min) {
        causes.push(cause(
            CauseType::Invalid,
            path,
            value.clone(),
            format!("{path} in body should be greater than or equal to {min}"),
        ));
    }
    if let Some(max) = schema.maximum.filter(|max| x > *max) {
        causes.push(cause(
            CauseType::Invalid,
            path,
            value.clone(),
            format!("{path} in body should be less than or equal to {max}"),
        ));
    }
}

fn check_string(schema: &Schema, s: &str, value: &Value, path: &str, causes: &mut Vec<Cause>) {
    // OpenAPI lengths count characters, not bytes.
    let len = s.chars().count();
    if let Some(min) = schema.min_length.filter(|min| len < *min) {
        causes.push(cause(
            CauseType::Invalid,
            path,
            value.clone(),
            format!("{path} in body should be at least {min} chars long"),
        ));
    }
    if let Some(max) = schema.max_length.filter(|max| len > *max) {
        causes.push(cause(
            CauseType::Invalid,
            path,
            value.clone(),
            format!("{path} in body should be at most {max} chars long"),
        ));
    }
}

fn check_array(
    schema: &Schema,
    items: &[Value],
    value: &Value,
    path: &str,
    causes: &mut Vec<Cause>,
) {
    if let Some(min) = schema.min_items.filter(|min| items.len() < *min) {
        causes.push(cause(
            CauseType::Invalid,
            path,
            value.clone(),
            format!("{path} in body should have at least {min} items"),
        ));
    }
    if let Some(max) = schema.max_items.filter(|max| items.len() > *max) {
        causes.push(cause(
            CauseType::Invalid,
            path,
            value.clone(),
            format!("{path} in body should have at most {max} items"),
        ));
    }
    if let Some(item_schema) = &schema.items {
        for (i, item) in items.iter().enumerate() {
            check_schema(item_schema, item, &format!("{path}[{i}]"), causes);
        }
    }
}

fn check_object(
    schema: &Schema,
    members: &serde_json::Map<String, Value>,
    path: &str,
    causes: &mut Vec<Cause>,
) {
    let present = |name: &str| members.get(name).is_some_and(|v| !v.is_null());
    if let Some(max) = schema.max_properties {
        let count = members.values().filter(|v| !v.is_null()).count();
        if count > max {
            causes.push(cause(
                CauseType::Invalid,
                path,
                Value::from(count),
                format!("{path} in body should have at most {max} properties"),
            ));
        }
    }
    for name in &schema.required {
        if !present(name) {
            causes.push(cause(
                CauseType::Required,
                &child(path, name),
                Value::Null,
                String::new(),
            ));
        }
    }
    for (name, property) in &schema.properties.0 {
        if let Some(member) = members.get(name) {
            check_schema(property, member, &child(path, name), causes);
        }
    }
    if let Some(additional) = &schema.additional_properties {
        let declared = |name: &str| schema.properties.0.iter().any(|(n, _)| n == name);
        for (name, member) in members.iter().filter(|(n, _)| !declared(n)) {
            check_schema(additional, member, &child(path, name), causes);
        }
    }
}

/// `oneOf`: exactly one branch must hold.
fn check_one_of(schema: &Schema, value: &Value, path: &str, causes: &mut Vec<Cause>) {
    let outcomes: Vec<Vec<Cause>> = schema
        .one_of
        .iter()
        .map(|branch| {
            let mut failures = Vec::new();
            check_schema(branch, value, path, &mut failures);
            failures
        })
        .collect();
    let valid = outcomes.iter().filter(|f| f.is_empty()).count();
    if valid == 1 {
        return;
    }
    let found = if valid == 0 {
        "Found none valid".to_owned()
    } else {
        format!("Found {valid} valid alternatives")
    };
    // go-openapi reports this as a plain error without a field, which apiextensions turns
    // into an Invalid cause at the root path with an empty value.
    causes.push(cause(
        CauseType::Invalid,
        "",
        Value::from(""),
        format!("\"{path}\" must validate one and only one schema (oneOf). {found}"),
    ));
    if valid == 0 {
        // min_by_key keeps the first of equal candidates: the first branch wins a tie.
        if let Some(closest) = outcomes.into_iter().min_by_key(Vec::len) {
            causes.extend(closest);
        }
    }
}
