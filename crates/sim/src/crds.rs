//! The `apiextensions.k8s.io/v1` CustomResourceDefinitions of the custom resources the server
//! declares, so `kubectl apply -k deploy/crds/`, `kubectl get crd` and
//! `kubectl wait --for condition=established` work against `kube-gc sim` as against a cluster.
//!
//! Contract (as a v1.28 kube-apiserver; `fixtures/real-apiserver/exchanges/130`–`136`):
//! - Every declared custom resource that is served has a definition: kube-gc's own as
//!   `deploy/crds/` ships them, any other built from its [`ResourceDef`] (one served storage
//!   version, a schema that keeps unknown fields, a status subresource where it has one), each
//!   with the status an established definition carries (130, 132): `NamesAccepted` and
//!   `Established` true, `acceptedNames` its names, `storedVersions` its storage version.
//! - Creating a definition stores it with the status the registry writes at creation
//!   (`conditions: null`, empty `acceptedNames`; 131) — what the POST answers — then serves its
//!   resource and writes the established status, as the apiextensions controllers do moments
//!   later. A name other than `<plural>.<group>` is 422 (134); a second one 409 (133).
//! - The server's catalogue of resources is fixed when it starts, so a definition of a resource
//!   it does not declare is refused (422, naming what it serves) where a real server would serve
//!   it: a refusal the user sees, not a definition that looks established while its resource
//!   answers 404.
//! - Deleting a definition answers with it `Terminating` (its cleanup finalizer,
//!   `deletionTimestamp` and a `Terminating` condition; 135); its resource stops being served,
//!   every object of it is deleted — a DELETED event each to the watches open on it — those
//!   watches end (74–76), and the definition leaves storage (136).
//! - An update or patch of a definition is stored; the resource keeps being served, and kube-gc's
//!   policies validated, as declared.

use std::sync::Arc;

use serde_json::{json, Value};

use crate::clock::format_time;
use crate::object;
pub use crate::resources::{definitions_resource, is_definitions};
use crate::resources::{ResourceDef, ResourceId, Unserved};
use crate::status::Cause;
use crate::store::{DeleteOptions, DeleteOutcome, Store, StoreError, UpdateTarget};

/// The finalizer the registry puts on a definition being deleted, removed once its objects are.
const CLEANUP_FINALIZER: &str = "customresourcecleanup.apiextensions.k8s.io";

/// `value` as Go's `json.Marshal` writes it (serde_json's map keys are sorted, as Go's are):
/// the HTML-sensitive characters and the JavaScript line separators escaped, a final newline
/// as `kubectl apply` leaves one. They can only occur inside strings, so replacing them in the
/// text is exact.
fn go_json(value: &Value) -> String {
    let mut text = value.to_string();
    for (from, to) in [
        ('&', "\\u0026"),
        ('<', "\\u003c"),
        ('>', "\\u003e"),
        ('\u{2028}', "\\u2028"),
        ('\u{2029}', "\\u2029"),
    ] {
        text = text.replace(from, to);
    }
    text.push('\n');
    text
}

/// The CRD a cluster installs for one of kube-gc's own resources, as `deploy/crds/` holds it.
pub fn shipped_definition(def: &ResourceDef) -> Option<&'static str> {
    match (def.group.as_str(), def.resource.as_str()) {
        ("kube-gc.io", "retentionpolicies") => Some(include_str!(
            "../../../deploy/crds/kube-gc.io_retentionpolicies.yaml"
        )),
        ("kube-gc.io", "clusterretentionpolicies") => Some(include_str!(
            "../../../deploy/crds/kube-gc.io_clusterretentionpolicies.yaml"
        )),
        _ => None,
    }
}

/// `<plural>.<group>`, the only name a definition may have.
fn definition_name(def: &ResourceDef) -> String {
    format!("{}.{}", def.resource, def.group)
}

/// The definition of a declared custom resource: kube-gc's own as `kubectl apply -k
/// deploy/crds/` leaves them ([`as_applied`]), else one built from what the catalogue says.
fn definition_of(def: &ResourceDef) -> Value {
    let shipped = shipped_definition(def).and_then(|text| serde_saphyr::from_str(text).ok());
    shipped
        .map(as_applied)
        .unwrap_or_else(|| built_definition(def))
}

/// The annotation in which `kubectl apply` keeps what it applied.
const LAST_APPLIED: &str = "kubectl.kubernetes.io/last-applied-configuration";

/// A manifest as `kubectl apply` stores it: annotated with itself as Go's `encoding/json`
/// writes it — compact, keys sorted, an empty `annotations`, `&`, `<` and `>` escaped, a final
/// newline — byte for byte what exchange 130 carries, so applying the same file again is
/// `unchanged`, not a warning that the annotation is missing and a patch.
fn as_applied(mut manifest: Value) -> Value {
    if manifest["metadata"]["annotations"].is_null() {
        manifest["metadata"]["annotations"] = json!({});
    }
    let applied = go_json(&manifest);
    manifest["metadata"]["annotations"][LAST_APPLIED] = Value::from(applied);
    manifest
}

fn built_definition(def: &ResourceDef) -> Value {
    let mut names = json!({
        "plural": def.resource,
        "singular": def.singular,
        "kind": def.kind,
        "listKind": format!("{}List", def.kind),
    });
    if !def.short_names.is_empty() {
        names["shortNames"] = json!(def.short_names);
    }
    if !def.categories.is_empty() {
        names["categories"] = json!(def.categories);
    }
    let mut version = json!({
        "name": def.version,
        "served": true,
        "storage": true,
        "schema": {"openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}},
    });
    if def.has_status {
        version["subresources"] = json!({"status": {}});
    }
    json!({
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": definition_name(def)},
        "spec": {
            "group": def.group,
            "names": names,
            "scope": if def.namespaced { "Namespaced" } else { "Cluster" },
            "versions": [version],
        },
    })
}

/// The names of the version the definition stores (`storage: true`).
fn storage_versions(definition: &Value) -> Vec<Value> {
    let versions = definition["spec"]["versions"].as_array();
    versions
        .into_iter()
        .flatten()
        .filter(|v| v["storage"] == true)
        .map(|v| v["name"].clone())
        .collect()
}

/// The status the registry writes when a definition is created (131).
fn created_status(definition: &Value) -> Value {
    json!({
        "conditions": null,
        "acceptedNames": {"plural": "", "kind": ""},
        "storedVersions": storage_versions(definition),
    })
}

/// The status of an established definition (130, 132), its conditions stamped `now`.
fn established_status(definition: &Value, now: &str) -> Value {
    let condition = |kind: &str, reason: &str, message: &str| {
        json!({"type": kind, "status": "True", "lastTransitionTime": now,
               "reason": reason, "message": message})
    };
    json!({
        "conditions": [
            condition("NamesAccepted", "NoConflicts", "no conflicts found"),
            condition("Established", "InitialNamesAccepted", "the initial names have been accepted"),
        ],
        "acceptedNames": definition["spec"]["names"],
        "storedVersions": storage_versions(definition),
    })
}

/// The definition with the defaults the registry fills in (`conversion.strategy: None`) and
/// `status` as given.
fn with_defaults(mut definition: Value, status: Value) -> Value {
    if definition["spec"]["conversion"].is_null() {
        definition["spec"]["conversion"] = json!({"strategy": "None"});
    }
    definition["status"] = status;
    definition
}

fn now(store: &Store) -> String {
    format_time(store.clock().now())
}

fn definitions_id(store: &Store) -> Option<ResourceId> {
    store
        .resources()
        .iter()
        .find(|(_, def)| is_definitions(def))
        .map(|(id, _)| id)
}

/// Stores the established definition of `resource` (a declared custom resource) unless one is
/// stored already or the server does not serve definitions.
pub fn ensure_definition(store: &Store, resource: ResourceId) -> Result<(), StoreError> {
    let def = store.resources().def(resource);
    let Some(definitions) = definitions_id(store).filter(|_| def.is_custom) else {
        return Ok(());
    };
    let definition = definition_of(def);
    let name = definition_name(def);
    let status = established_status(&definition, &now(store));
    match store.create(
        definitions,
        None,
        with_defaults(definition, Value::Null),
        false,
    ) {
        Ok(_) => write_status(store, definitions, &name, status).map(drop),
        Err(StoreError::AlreadyExists { .. }) => Ok(()),
        Err(e) => Err(e),
    }
}

/// Replaces a definition's status (the main resource ignores `.status`, as on the real server).
fn write_status(
    store: &Store,
    definitions: ResourceId,
    name: &str,
    status: Value,
) -> Result<Arc<Value>, StoreError> {
    store.patch::<StoreError>(definitions, None, name, UpdateTarget::Status, false, |d| {
        d["status"] = status;
        Ok(())
    })
}

/// Stores the definitions of every declared custom resource not in `unserved`: what a server
/// starts with.
pub fn ensure_definitions(
    store: &Store,
    unserved: &std::collections::HashSet<ResourceId>,
) -> Result<(), StoreError> {
    let ids: Vec<ResourceId> = store.resources().iter().map(|(id, _)| id).collect();
    ids.into_iter()
        .filter(|id| !unserved.contains(id))
        .try_for_each(|id| ensure_definition(store, id))
}

/// The declared custom resource a definition defines: its group and plural, in one of its
/// versions.
fn declared_resource(store: &Store, definition: &Value) -> Option<ResourceId> {
    let spec = &definition["spec"];
    let group = spec["group"].as_str()?;
    let plural = spec["names"]["plural"].as_str()?;
    let versions = spec["versions"].as_array()?;
    let resources = store.resources();
    versions
        .iter()
        .filter_map(|v| v["name"].as_str())
        .filter_map(|version| resources.find(group, version, plural))
        .find(|id| resources.def(*id).is_custom)
}

/// Why a definition cannot be created, before the store sees it: a name that is not
/// `<plural>.<group>` (134), or a resource this server does not declare.
fn creation_causes(store: &Store, definition: &Value) -> Vec<Cause> {
    let spec = &definition["spec"];
    let group = spec["group"].as_str().unwrap_or_default();
    let plural = spec["names"]["plural"].as_str().unwrap_or_default();
    let name = object::name(definition).unwrap_or_default();
    if name != format!("{plural}.{group}") {
        return vec![Cause::invalid(
            "metadata.name",
            Value::from(name),
            "must be spec.names.plural+\".\"+spec.group",
        )];
    }
    if declared_resource(store, definition).is_some() {
        return Vec::new();
    }
    let declared: Vec<String> = store
        .resources()
        .iter()
        .filter(|(_, def)| def.is_custom)
        .map(|(_, def)| format!("{} ({})", definition_name(def), def.version))
        .collect();
    vec![Cause::invalid(
        "spec.names.plural",
        Value::from(plural),
        format!(
            "kube-gc sim serves a catalogue of resources fixed when it starts, and this is not in it; \
             its custom resources are {}; `kube-gc sim --workload-crds` adds those of Argo, \
             Tekton, Kubeflow, Spark and Ray",
            declared.join(", ")
        ),
    )]
}

/// POST of a definition (131–134): stored as created, then its resource served and the
/// definition established. Answers the definition as created.
pub fn create(
    store: &Store,
    unserved: &Unserved,
    definitions: ResourceId,
    definition: Value,
    dry_run: bool,
) -> Result<Arc<Value>, StoreError> {
    let causes = creation_causes(store, &definition);
    if !causes.is_empty() {
        let name = object::name(&definition).unwrap_or_default().to_owned();
        return Err(StoreError::Invalid {
            resource: definitions,
            name,
            errors: causes,
        });
    }
    let status = created_status(&definition);
    let stored = store.create(
        definitions,
        None,
        with_defaults(definition, Value::Null),
        dry_run,
    )?;
    let name = object::name(&stored).unwrap_or_default().to_owned();
    if dry_run {
        let mut created = (*stored).clone();
        created["status"] = status;
        return Ok(Arc::new(created));
    }
    // The registry stores the definition with this status; the sim's store keeps `.status` out
    // of a create on a resource with a status subresource, so it is a write of its own.
    let created = write_status(store, definitions, &name, status)?;
    if let Some(resource) = declared_resource(store, &created) {
        unserved.write().remove(&resource);
    }
    let established = established_status(&created, &now(store));
    write_status(store, definitions, &name, established)?;
    Ok(created)
}

/// DELETE of a definition (135, 136; 74–76): marked `Terminating`, its resource unserved and
/// emptied, its watches ended, then gone. Answers the definition as marked.
pub fn delete(
    store: &Store,
    unserved: &Unserved,
    definitions: ResourceId,
    name: &str,
    options: &DeleteOptions,
) -> Result<DeleteOutcome, StoreError> {
    let stored = store.get(definitions, None, name)?;
    if options.dry_run {
        return store.delete(definitions, None, name, options);
    }
    add_cleanup_finalizer(store, definitions, name)?;
    let marked = match store.delete(definitions, None, name, options)? {
        DeleteOutcome::Pending(marked) => marked,
        gone @ DeleteOutcome::Deleted(_) => return Ok(gone),
    };
    let mut status = marked["status"].clone();
    push_terminating_condition(&mut status, &now(store));
    let terminating = write_status(store, definitions, name, status)?;
    if let Some(resource) = declared_resource(store, &stored) {
        unserved.write().insert(resource);
        delete_objects(store, resource)?;
    }
    remove_cleanup_finalizer(store, definitions, name)?;
    Ok(DeleteOutcome::Pending(terminating))
}

/// What deleting the definition of `resource` does, for the in-process API: [`delete`] where
/// the definition is stored, else the same cleanup without it.
pub fn delete_definition_of(
    store: &Store,
    unserved: &Unserved,
    resource: ResourceId,
) -> Result<(), StoreError> {
    let def = store.resources().def(resource);
    if let Some(definitions) = definitions_id(store) {
        let name = definition_name(def);
        match delete(
            store,
            unserved,
            definitions,
            &name,
            &DeleteOptions::default(),
        ) {
            // The definition's cleanup has unserved and emptied the resource already.
            Ok(_) => return Ok(()),
            Err(StoreError::NotFound { .. }) => {}
            Err(e) => return Err(e),
        }
    }
    unserved.write().insert(resource);
    delete_objects(store, resource)
}

/// Removes the definition of `resource` at once, as if it had never been created (for a server
/// that starts with a resource unserved).
pub fn forget_definition_of(store: &Store, resource: ResourceId) -> Result<(), StoreError> {
    let def = store.resources().def(resource);
    let Some(definitions) = definitions_id(store).filter(|_| def.is_custom) else {
        return Ok(());
    };
    let name = definition_name(def);
    match store.delete(definitions, None, &name, &DeleteOptions::default()) {
        Ok(_) | Err(StoreError::NotFound { .. }) => Ok(()),
        Err(e) => Err(e),
    }
}

/// Deletes every object of `resource` and ends the watches on it: the definition's cleanup.
fn delete_objects(store: &Store, resource: ResourceId) -> Result<(), StoreError> {
    for object in store.snapshot(resource, None) {
        let (Some(name), namespace) = (object::name(&object), object::namespace(&object)) else {
            continue;
        };
        match store.delete(resource, namespace, name, &DeleteOptions::default()) {
            Ok(_) | Err(StoreError::NotFound { .. }) => {}
            Err(e) => return Err(e),
        }
    }
    store.close_watches_of(resource);
    Ok(())
}

fn add_cleanup_finalizer(
    store: &Store,
    definitions: ResourceId,
    name: &str,
) -> Result<(), StoreError> {
    store.patch::<StoreError>(definitions, None, name, UpdateTarget::Main, false, |d| {
        let finalizers = &mut d["metadata"]["finalizers"];
        if !finalizers.is_array() {
            *finalizers = json!([]);
        }
        if let Some(list) = finalizers.as_array_mut() {
            if !list.iter().any(|f| f == CLEANUP_FINALIZER) {
                list.push(Value::from(CLEANUP_FINALIZER));
            }
        }
        Ok(())
    })?;
    Ok(())
}

fn remove_cleanup_finalizer(
    store: &Store,
    definitions: ResourceId,
    name: &str,
) -> Result<(), StoreError> {
    let removed =
        store.patch::<StoreError>(definitions, None, name, UpdateTarget::Main, false, |d| {
            if let Some(list) = d["metadata"]["finalizers"].as_array_mut() {
                list.retain(|f| f != CLEANUP_FINALIZER);
            }
            Ok(())
        });
    match removed {
        Ok(_) | Err(StoreError::NotFound { .. }) => Ok(()),
        Err(e) => Err(e),
    }
}

/// The condition a definition being deleted carries while its objects go (135), added to its
/// status.
fn push_terminating_condition(status: &mut Value, now: &str) {
    let condition = json!({
        "type": "Terminating", "status": "True", "lastTransitionTime": now,
        "reason": "InstanceDeletionPending",
        "message": "CustomResourceDefinition marked for deletion; CustomResource deletion will begin soon",
    });
    let conditions = &mut status["conditions"];
    if !conditions.is_array() {
        *conditions = json!([]);
    }
    if let Some(list) = conditions.as_array_mut() {
        list.push(condition);
    }
}
