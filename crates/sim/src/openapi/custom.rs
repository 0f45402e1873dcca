//! OpenAPI v3 schemas of custom resources, from their CustomResourceDefinitions as this
//! server stores them — kube-gc's own are `deploy/crds/`, so `kubectl explain crp` reads the
//! descriptions kube-gc wrote (exchange 273).
//!
//! Contract: [`kind_schema`] is the definition's `openAPIV3Schema` for the resource's
//! version, named `<group reversed>.<version>.<Kind>` (`io.kube-gc.v1alpha1.RetentionPolicy`)
//! as the real server names it, with `apiVersion` and `kind`, `metadata` a reference to
//! `ObjectMeta`, and `x-kubernetes-group-version-kind`. A definition without a schema for the
//! version leaves the object's members undescribed.

use std::collections::BTreeMap;

use serde_json::{json, Value};

use super::built_in::{object_meta, reference, type_members};
use crate::resources::ResourceDef;

/// The real server's name of a custom kind: the group's labels reversed.
fn kind_name(def: &ResourceDef) -> String {
    let group: Vec<&str> = def.group.split('.').rev().collect();
    format!("{}.{}.{}", group.join("."), def.version, def.kind)
}

/// Adds the schema of `def`'s kind, read from `definition` (its stored
/// CustomResourceDefinition, if any), to `schemas`; returns its name.
pub fn kind_schema(
    def: &ResourceDef,
    definition: Option<&Value>,
    schemas: &mut BTreeMap<String, Value>,
) -> String {
    let object_meta = object_meta(schemas);
    let declared = definition
        .and_then(|d| d["spec"]["versions"].as_array())
        .into_iter()
        .flatten()
        .find(|v| v["name"] == def.version.as_str())
        .map(|v| v["schema"]["openAPIV3Schema"].clone())
        .filter(Value::is_object);
    let mut schema = declared
        .unwrap_or_else(|| json!({"type": "object", "x-kubernetes-preserve-unknown-fields": true}));
    let mut properties = type_members();
    properties.insert("metadata".to_owned(), reference(&object_meta));
    if let Some(declared) = schema["properties"].as_object() {
        for (member, value) in declared {
            if !properties.contains_key(member) {
                properties.insert(member.clone(), value.clone());
            }
        }
    }
    schema["properties"] = Value::Object(properties);
    schema["x-kubernetes-group-version-kind"] =
        json!([{"group": def.group, "kind": def.kind, "version": def.version}]);
    let name = kind_name(def);
    schemas.insert(name.clone(), schema);
    name
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_policys_schema_is_its_crds_under_the_real_servers_name() {
        let def = ResourceDef::new(
            "kube-gc.io",
            "v1alpha1",
            "retentionpolicies",
            "RetentionPolicy",
        )
        .custom();
        let definition: Value =
            serde_saphyr::from_str(crate::crds::shipped_definition(&def).unwrap()).unwrap();
        let mut schemas = BTreeMap::new();
        let name = kind_schema(&def, Some(&definition), &mut schemas);
        assert_eq!(name, "io.kube-gc.v1alpha1.RetentionPolicy");
        let schema = &schemas[&name];
        assert_eq!(
            schema["properties"]["spec"]["properties"]["ttlSecondsAfterFinished"]["type"],
            "integer"
        );
        assert_eq!(
            schema["properties"]["metadata"],
            reference("io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta")
        );
        assert_eq!(
            schema["x-kubernetes-group-version-kind"][0]["kind"],
            "RetentionPolicy"
        );
        // Without a definition, the members are not described.
        let name = kind_schema(&def, None, &mut schemas);
        assert_eq!(schemas[&name]["x-kubernetes-preserve-unknown-fields"], true);
    }
}
