//! Creating and updating objects: the server-side rules every write obeys.
//!
//! Contract (as a v1.28 kube-apiserver):
//! - create assigns uid, creationTimestamp, resourceVersion, `generation: 1` where the resource
//!   tracks generations, and resolves `generateName`; it refuses duplicates (409), invalid
//!   objects (422) and objects in a namespace that does not exist (404).
//! - update (PUT, and PATCH after the patch is applied) is conditional on `metadata.resourceVersion`
//!   when the body carries one (409 when stale); a PUT's `metadata.uid` is a precondition too
//!   (409), while a PATCH's that differs is a change of an immutable field (422); server-owned
//!   metadata cannot be changed; on resources with a status subresource the main resource ignores
//!   `.status` and `/status` changes only `.status`; `generation` is bumped when anything but
//!   metadata and status changes.
//! - a write that changes nothing is not committed: no new resourceVersion, no watch event.
//! - an object being deleted with no grace period left whose last finalizer is removed leaves
//!   storage at once (a namespace: its last finalizer of either kind, `namespace.rs`): the
//!   write answers the object as written at the resourceVersion it had, and the watch's DELETED
//!   event carries the last stored state at the deletion's (exchanges 159–162, 27, 181, 189).
//! - nothing is created in a namespace that is missing (404) or being deleted (403); nothing is
//!   updated in one that is missing (404, exchange 164).

use std::sync::Arc;

use serde_json::Value;

use super::namespace;
use super::server_fields::{merge_update, prepare_new_object, UpdateTarget};
use super::{Removal, State, Store, StoreError, Write};
use crate::object;
use crate::resources::{ResourceDef, ResourceId};
use crate::stamped::Stamped;
use crate::status::Cause;
use crate::validation;

/// What an update asks for besides the object: the part it may change, whether it is a dry run,
/// and how a uid in the object is judged.
#[derive(Debug, Clone, Copy)]
struct Request {
    target: UpdateTarget,
    dry_run: bool,
    uid_rule: UidRule,
}

impl Store {
    /// Creates an object of `resource` in `namespace` (ignored for cluster-scoped resources).
    /// With `dry_run` the object is validated and returned but not stored.
    pub fn create(
        &self,
        resource: ResourceId,
        namespace: Option<&str>,
        mut obj: Value,
        dry_run: bool,
    ) -> Result<Arc<Value>, StoreError> {
        let def = self.def(resource);
        validation::check_metadata_types(def, &obj).map_err(StoreError::BadRequest)?;
        let namespace = if def.namespaced {
            Some(self.request_namespace(namespace, &obj)?)
        } else {
            None
        };
        let now = self.clock.now();
        prepare_new_object(def, &mut obj, namespace.as_deref(), now);
        let mut state = self.state.lock();
        if let Some(ns) = &namespace {
            self.require_namespace(&state, ns)?;
            self.refuse_if_terminating(&state, resource, ns, &obj)?;
        }
        let name = self.resolve_name(&state, resource, namespace.as_deref(), &mut obj);
        let mut errors = validation::validate_create(def, &obj);
        // Custom resources the sim has a CRD for are checked against its schema and rules.
        errors.extend(validation::crd::causes(def, &obj));
        if !errors.is_empty() {
            return Err(StoreError::Invalid {
                resource,
                name,
                errors,
            });
        }
        let key = object::store_key(namespace.as_deref(), &name);
        if state.objects[resource.0].contains_key(&key) {
            return Err(StoreError::AlreadyExists { resource, name });
        }
        if dry_run {
            return Ok(Arc::new(obj));
        }
        Ok(state.commit(
            Write {
                resource,
                key,
                object: obj,
                previous: None,
            },
            now,
        ))
    }

    /// Replaces an object (PUT). `obj` is the complete new object.
    pub fn update(
        &self,
        resource: ResourceId,
        namespace: Option<&str>,
        name: &str,
        obj: Value,
        target: UpdateTarget,
        dry_run: bool,
    ) -> Result<Arc<Value>, StoreError> {
        self.check_body_identity(resource, namespace, name, &obj)?;
        let request = Request {
            target,
            dry_run,
            uid_rule: UidRule::Precondition,
        };
        self.modify(resource, namespace, name, request, |_| Ok(obj))
    }

    /// Changes an object by applying `apply` to a copy of its stored state (PATCH). A
    /// `metadata.resourceVersion` or `metadata.uid` the patch puts into the object acts as a
    /// precondition, as on the real server.
    pub fn patch<E: From<StoreError>>(
        &self,
        resource: ResourceId,
        namespace: Option<&str>,
        name: &str,
        target: UpdateTarget,
        dry_run: bool,
        apply: impl FnOnce(&mut Value) -> Result<(), E>,
    ) -> Result<Arc<Value>, E> {
        let request = Request {
            target,
            dry_run,
            uid_rule: UidRule::Immutable,
        };
        self.modify(resource, namespace, name, request, |existing| {
            let mut patched = existing.clone();
            apply(&mut patched)?;
            Ok(patched)
        })
    }

    /// The shared update path: `incoming` builds the requested object from the stored one
    /// while the lock is held, so read-modify-write is atomic.
    fn modify<E: From<StoreError>>(
        &self,
        resource: ResourceId,
        namespace: Option<&str>,
        name: &str,
        request: Request,
        incoming: impl FnOnce(&Value) -> Result<Value, E>,
    ) -> Result<Arc<Value>, E> {
        let Request {
            target,
            dry_run,
            uid_rule,
        } = request;
        let def = self.def(resource);
        let key = self.key(resource, namespace, name);
        let now = self.clock.now();
        let mut state = self.state.lock();
        let existing = state.existing(resource, &key, name)?;
        if def.namespaced {
            // The `NamespaceLifecycle` admission plugin: an object whose namespace is gone
            // cannot be written (exchange 164), only read and deleted.
            let namespace = object::namespace(&existing).unwrap_or_default();
            self.require_namespace(&state, namespace)?;
        }
        let requested = incoming(&existing)?;
        validation::check_metadata_types(def, &requested).map_err(StoreError::BadRequest)?;
        check_preconditions(resource, name, &existing, &requested, uid_rule)?;
        let updated = merge_update(def, &existing, requested, target);
        let mut errors = validation::validate_update(&existing, &updated);
        errors.extend(validation::crd::causes(def, &updated));
        if !errors.is_empty() {
            return Err(StoreError::Invalid {
                resource,
                name: name.to_string(),
                errors,
            }
            .into());
        }
        if dry_run {
            return Ok(Arc::new(updated));
        }
        if updated == *existing {
            // A write that changes nothing is not committed: no new version, no event.
            return Ok(existing);
        }
        Ok(commit_update(
            &mut state,
            def,
            Write {
                resource,
                key,
                object: updated,
                previous: Some(existing),
            },
            now,
        ))
    }

    /// The namespace a namespaced create goes to: the URL's, which a namespace in the body must
    /// agree with.
    fn request_namespace(
        &self,
        namespace: Option<&str>,
        obj: &Value,
    ) -> Result<String, StoreError> {
        let body_ns = object::namespace(obj).filter(|ns| !ns.is_empty());
        match (namespace, body_ns) {
            (Some(url), Some(body)) if url != body => Err(namespace_mismatch()),
            (Some(url), _) => Ok(url.to_string()),
            (None, Some(body)) => Ok(body.to_string()),
            (None, None) => Err(StoreError::BadRequest(
                "a namespace is required to create an object of a namespaced resource".to_string(),
            )),
        }
    }

    fn require_namespace(&self, state: &State, namespace: &str) -> Result<(), StoreError> {
        let Some(namespaces) = self.resources.namespaces() else {
            return Ok(());
        };
        if state.objects[namespaces.0].contains_key(namespace) {
            Ok(())
        } else {
            Err(StoreError::NotFound {
                resource: namespaces,
                name: namespace.to_string(),
            })
        }
    }

    /// The `NamespaceLifecycle` admission plugin's refusal of a create in a namespace being
    /// deleted (exchange 143). It runs before a `generateName` is resolved: such an object is
    /// refused with an empty name.
    fn refuse_if_terminating(
        &self,
        state: &State,
        resource: ResourceId,
        namespace: &str,
        obj: &Value,
    ) -> Result<(), StoreError> {
        let Some(namespaces) = self.resources.namespaces() else {
            return Ok(());
        };
        let terminating = state.objects[namespaces.0]
            .get(namespace)
            .is_some_and(|ns| namespace::is_terminating(ns));
        if !terminating {
            return Ok(());
        }
        Err(StoreError::NamespaceTerminating {
            resource,
            name: object::name(obj).unwrap_or_default().to_string(),
            namespace: namespace.to_string(),
        })
    }

    /// Resolves `generateName` (retrying a few suffixes on collision) and returns the name.
    fn resolve_name(
        &self,
        state: &State,
        resource: ResourceId,
        namespace: Option<&str>,
        obj: &mut Value,
    ) -> String {
        if let Some(name) = object::name(obj).filter(|n| !n.is_empty()) {
            return name.to_string();
        }
        let Some(prefix) = object::meta_str(obj, "generateName").map(str::to_string) else {
            return String::new();
        };
        let mut name = format!("{prefix}{}", object::random_name_suffix());
        for _ in 0..8 {
            let key = object::store_key(namespace, &name);
            if !state.objects[resource.0].contains_key(&key) {
                break;
            }
            name = format!("{prefix}{}", object::random_name_suffix());
        }
        object::set_meta(obj, "name", Some(Value::from(name.clone())));
        name
    }

    fn check_body_identity(
        &self,
        resource: ResourceId,
        namespace: Option<&str>,
        name: &str,
        obj: &Value,
    ) -> Result<(), StoreError> {
        if let Some(body_name) = object::name(obj).filter(|n| !n.is_empty()) {
            if body_name != name {
                return Err(StoreError::BadRequest(format!(
                    "the name of the object ({body_name}) does not match the name on the URL ({name})"
                )));
            }
        }
        let body_ns = object::namespace(obj).filter(|ns| !ns.is_empty());
        if self.def(resource).namespaced && body_ns.is_some() && body_ns != namespace {
            return Err(namespace_mismatch());
        }
        Ok(())
    }
}

fn namespace_mismatch() -> StoreError {
    StoreError::BadRequest(
        "the namespace of the provided object does not match the namespace sent on the request"
            .to_string(),
    )
}

/// Commits an update — or, when it removed the last finalizer of an object being deleted, the
/// deletion. The answer is then the object as written, at the resourceVersion it had (the update
/// was never stored); the DELETED event carries the last stored state, at the deletion's own
/// resourceVersion, as etcd's delete does (exchanges 159–162).
fn commit_update(
    state: &mut State,
    def: &ResourceDef,
    write: Write,
    now: chrono::DateTime<chrono::Utc>,
) -> Arc<Value> {
    let finished_deleting = match &write.previous {
        Some(_) if namespace::is_namespaces(def) => namespace::is_finished(&write.object),
        Some(previous) => finishes_deletion(previous, &write.object),
        None => false,
    };
    let previous = match (&write.previous, finished_deleting) {
        (Some(previous), true) => Arc::clone(previous),
        _ => return state.commit(write, now),
    };
    let Write {
        resource,
        key,
        object: mut answer,
        ..
    } = write;
    let stored_rv = object::resource_version(&previous).map(Value::from);
    object::set_meta(&mut answer, "resourceVersion", stored_rv);
    let removal = Removal {
        resource,
        key,
        last: Stamped::stored(Arc::clone(&previous)),
        previous: Stamped::stored(previous),
    };
    state.commit_deletion(def, removal, now);
    Arc::new(answer)
}

/// Whether an update of `previous` to `updated` ends its deletion (upstream's
/// `ShouldDeleteDuringUpdate`): it was being deleted with no grace period left (0, or none),
/// and its last finalizer is gone. A Pod whose grace period still runs stays without
/// finalizers (exchange 182) until a deletion ends it; one with none left goes (181).
fn finishes_deletion(previous: &Value, updated: &Value) -> bool {
    let grace = object::meta(previous)
        .and_then(|m| m.get("deletionGracePeriodSeconds"))
        .and_then(Value::as_i64);
    object::deletion_timestamp(previous).is_some()
        && matches!(grace, None | Some(0))
        && object::finalizers(updated).is_empty()
}

/// How a uid the requested object carries is judged.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum UidRule {
    /// A PUT: a precondition, 409 when it differs (the storage precondition).
    Precondition,
    /// A PATCH: an attempt to change an immutable field, 422 (exchanges 179, 183).
    Immutable,
}

/// A resourceVersion or uid carried by the requested object must match the stored one.
fn check_preconditions(
    resource: ResourceId,
    name: &str,
    existing: &Value,
    requested: &Value,
    uid_rule: UidRule,
) -> Result<(), StoreError> {
    if let Some(rv) = object::resource_version(requested).filter(|rv| !rv.is_empty()) {
        if Some(rv) != object::resource_version(existing) {
            return Err(StoreError::Conflict {
                resource,
                name: name.to_string(),
            });
        }
    }
    if let Some(uid) = object::uid(requested).filter(|uid| !uid.is_empty()) {
        let actual = object::uid(existing).unwrap_or_default();
        if uid != actual && uid_rule == UidRule::Immutable {
            // Listed twice, as the real server does: the generic update path and the type's
            // own validation both check the metadata.
            let immutable = Cause::invalid("metadata.uid", Value::from(uid), "field is immutable");
            return Err(StoreError::Invalid {
                resource,
                name: name.to_string(),
                errors: vec![immutable.clone(), immutable],
            });
        }
        if uid != actual {
            return Err(StoreError::UidMismatch {
                resource,
                namespace: object::namespace(existing).map(str::to_string),
                name: name.to_string(),
                requested: uid.to_string(),
                actual: actual.to_string(),
            });
        }
    }
    Ok(())
}
