//! Deleting objects: preconditions, grace periods, propagation policies and finalizers.
//!
//! Contract (the real server's generic registry, `Store.Delete`):
//! - `preconditions.uid` / `preconditions.resourceVersion` that do not match → 409.
//! - Pods are deleted gracefully (`graceful.rs`): a first deletion marks the Pod with
//!   `deletionTimestamp` = now + its grace period and `deletionGracePeriodSeconds`, and a Pod
//!   whose period is above 0 stays, left for its kubelet (no kubelet runs here: it stays until
//!   a deletion with `gracePeriodSeconds: 0`); a deletion while a period runs only shortens
//!   it, and otherwise writes nothing. A period of 0 (requested, or because the Pod is not
//!   bound to a node or has terminated) writes the mark and removes the Pod one revision
//!   later: a watch sees MODIFIED, then DELETED (exchanges 68, 174, 176).
//! - The propagation policy (explicit, else the deprecated `orphanDependents`, else the
//!   object's existing `orphan`/`foregroundDeletion` finalizer, else the resource's default)
//!   decides whether the `orphan` (Orphan) or `foregroundDeletion` (Foreground) finalizer is set;
//!   Background sets neither and removes a previous one.
//! - An object left with no finalizers (and no grace period) is removed at once
//!   ([`DeleteOutcome::Deleted`]). Otherwise it is kept with `deletionTimestamp` (set once,
//!   never moved later), `deletionGracePeriodSeconds: 0` (or its grace period) and, if it
//!   tracks generations, `generation + 1` ([`DeleteOutcome::Pending`]); a garbage collector or
//!   another controller finishes the job by removing the finalizers. Deleting an object that
//!   is already being deleted returns it, switching orphan ↔ foreground finalizers when the
//!   new request asks for that.
//! - The simulated server never deletes dependents itself: that is kube-gc's job.
//! - A `deletecollection` ([`Store::delete_collection`]) lists what its filter matches, then
//!   deletes each object as one DELETE with the same options would; it answers the objects as
//!   they were listed — before their deletion — at the list's resourceVersion (exchanges 147,
//!   149, 150). Objects a finalizer holds stay, marked; an object gone meanwhile is skipped.

mod namespace;

use std::sync::Arc;

use serde_json::Value;

use super::graceful::{self, Grace};
use super::namespace::is_namespaces;
use super::{Removal, Store, StoreError, Write};
use crate::clock::format_time;
use crate::object;
use crate::resources::{DefaultDeletion, ResourceDef, ResourceId};
use crate::stamped::Stamped;

const ORPHAN: &str = "orphan";
const FOREGROUND: &str = "foregroundDeletion";

/// `propagationPolicy` of a DeleteOptions.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Propagation {
    /// Keep dependents (strip their owner references).
    Orphan,
    /// Delete the owner now; dependents afterwards.
    Background,
    /// Delete dependents first, then the owner.
    Foreground,
}

impl Propagation {
    /// Parses the API's spelling (`Orphan`, `Background`, `Foreground`).
    pub fn parse(s: &str) -> Option<Propagation> {
        match s {
            "Orphan" => Some(Propagation::Orphan),
            "Background" => Some(Propagation::Background),
            "Foreground" => Some(Propagation::Foreground),
            _ => None,
        }
    }
}

/// The parts of a DeleteOptions the simulated server honours.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct DeleteOptions {
    /// `propagationPolicy`.
    pub propagation: Option<Propagation>,
    /// The deprecated `orphanDependents`.
    pub orphan_dependents: Option<bool>,
    /// `preconditions.uid`.
    pub precondition_uid: Option<String>,
    /// `preconditions.resourceVersion`.
    pub precondition_resource_version: Option<String>,
    /// `dryRun: ["All"]`: validate and answer, change nothing.
    pub dry_run: bool,
    /// `gracePeriodSeconds`: how long a Pod is left to its kubelet (`None`: its own
    /// `terminationGracePeriodSeconds`). Ignored by resources not deleted gracefully.
    pub grace_period_seconds: Option<i64>,
}

impl DeleteOptions {
    /// Options with just a propagation policy.
    pub fn propagation(policy: Propagation) -> DeleteOptions {
        DeleteOptions {
            propagation: Some(policy),
            ..DeleteOptions::default()
        }
    }
}

/// What a delete did.
#[derive(Debug, Clone, PartialEq)]
pub enum DeleteOutcome {
    /// The object left storage; this is its final state, at the deletion's resourceVersion
    /// (as etcd's conditional delete answers; a dry run's keeps the object's own).
    Deleted(Stamped),
    /// The object stays, marked for deletion, until its finalizers are removed.
    Pending(Arc<Value>),
}

impl Store {
    /// Deletes an object following the API server's rules (see the module documentation).
    pub fn delete(
        &self,
        resource: ResourceId,
        namespace: Option<&str>,
        name: &str,
        options: &DeleteOptions,
    ) -> Result<DeleteOutcome, StoreError> {
        let def = self.def(resource);
        let key = self.key(resource, namespace, name);
        loop {
            let now = self.clock.now();
            // Read under the lock, decide (and copy, where finalizers keep the object) outside
            // it, commit under it again only if the object is still the one read (else read
            // again), as the real server's conditional etcd transaction does. Copying a large
            // object takes tens of microseconds, and every request of the server — and the
            // runtime thread each one runs on — would wait for it.
            let existing = self.state.lock().existing(resource, &key, name)?;
            check_delete_preconditions(resource, name, &existing, options)?;
            let deletion = deletion(def, &existing, options, now);
            if options.dry_run {
                return Ok(match deletion {
                    Deletion::Mark(marked) => DeleteOutcome::Pending(Arc::new(marked)),
                    Deletion::Unchanged => DeleteOutcome::Pending(existing),
                    Deletion::WriteThenRemove(marked) => {
                        DeleteOutcome::Deleted(Stamped::stored(Arc::new(marked)))
                    }
                    _ => DeleteOutcome::Deleted(Stamped::stored(existing)),
                });
            }
            let mut state = self.state.lock();
            if !state.holds(resource, &key, &existing) {
                continue;
            }
            let removal = |last: Stamped, previous: Stamped| Removal {
                resource,
                key: key.clone(),
                last,
                previous,
            };
            let marking = |marked: Value, existing: Arc<Value>| Write {
                resource,
                key: key.clone(),
                object: marked,
                previous: Some(existing),
            };
            let outcome = match deletion {
                Deletion::Unchanged => DeleteOutcome::Pending(existing),
                Deletion::Mark(marked) => {
                    DeleteOutcome::Pending(state.commit(marking(marked, existing), now))
                }
                Deletion::Remove => {
                    let existing = Stamped::stored(existing);
                    let removal = removal(existing.clone(), existing);
                    DeleteOutcome::Deleted(state.commit_deletion(def, removal, now))
                }
                // A pending grace period cut to zero: the new mark, then the removal (exchanges
                // 174, 176: MODIFIED, then DELETED).
                Deletion::WriteThenRemove(marked) => {
                    let marked = state.commit(marking(marked, existing), now);
                    let last = Stamped::stored(marked);
                    DeleteOutcome::Deleted(state.commit_deletion(
                        def,
                        removal(last.clone(), last),
                        now,
                    ))
                }
                // A graceful deletion writes the object marked (deletionTimestamp, a zero grace
                // period), then removes it one revision later: a watch sees MODIFIED, then
                // DELETED (exchange 68), both with the stored object and the mark written over
                // it — no copy at all.
                Deletion::MarkThenRemove => {
                    let marked = state.commit_deletion_mark(resource, key.clone(), existing, now);
                    let removal = removal(marked.clone(), marked);
                    DeleteOutcome::Deleted(state.commit_deletion(def, removal, now))
                }
            };
            return Ok(outcome);
        }
    }
}

/// What a `deletecollection` answers: the objects it deleted (or marked), as they were listed.
#[derive(Debug, Clone)]
pub struct DeletedCollection {
    /// The resourceVersion the objects were listed at.
    pub resource_version: u64,
    /// The objects, in key order, as listed (before their deletion).
    pub items: Vec<Arc<Value>>,
}

impl Store {
    /// Deletes every object of `resource` that `filter` matches, each as [`Store::delete`]
    /// would with `options` (see the module documentation).
    pub fn delete_collection(
        &self,
        resource: ResourceId,
        filter: &crate::filter::ObjectFilter,
        options: &DeleteOptions,
    ) -> Result<DeletedCollection, StoreError> {
        let (resource_version, items): (u64, Vec<Arc<Value>>) = {
            let state = self.state.lock();
            let items = state.objects[resource.0]
                .values()
                .filter(|obj| filter.matches(obj))
                .cloned()
                .collect();
            (state.rv, items)
        };
        for item in &items {
            let name = object::name(item).unwrap_or_default();
            match self.delete(resource, object::namespace(item), name, options) {
                Ok(_) | Err(StoreError::NotFound { .. }) => {}
                Err(error) => return Err(error),
            }
        }
        Ok(DeletedCollection {
            resource_version,
            items,
        })
    }
}

/// What a delete request writes, decided outside the store's lock: the copies some make of a
/// large object take tens of microseconds, and every request would wait for them.
#[derive(Debug)]
pub(super) enum Deletion {
    /// Nothing to write: the object is already marked exactly so, or its graceful deletion is
    /// pending and the request does not shorten it.
    Unchanged,
    /// The object is written marked for deletion, and stays (finalizers remain, or a grace
    /// period runs).
    Mark(Value),
    /// The object leaves storage as it is stored.
    Remove,
    /// A graceful deletion with no grace period: the object is written marked (its first
    /// `deletionTimestamp`, a zero grace period), then leaves storage so — without a copy.
    MarkThenRemove,
    /// A graceful deletion whose mark changes more than that (a pending grace period cut to
    /// zero, finalizers the propagation policy removed): written, then removed.
    WriteThenRemove(Value),
}

/// What deleting `existing` writes (see the module documentation and [`Deletion`]); a
/// namespace has rules of its own ([`namespace`]).
fn deletion(
    def: &ResourceDef,
    existing: &Value,
    options: &DeleteOptions,
    now: chrono::DateTime<chrono::Utc>,
) -> Deletion {
    if is_namespaces(def) {
        return namespace::deletion(def, existing, options, now);
    }
    if def.graceful_deletion {
        match graceful::plan(existing, options.grace_period_seconds, now) {
            // The real server changes nothing, finalizers included, while a grace period runs.
            Grace::Pending => return Deletion::Unchanged,
            Grace::Mark { timestamp, period } => {
                return graceful_deletion(def, existing, options, timestamp, period)
            }
            Grace::Over => {}
        }
    }
    let finalizers = finalizers_after_delete(def, existing, options);
    if finalizers.is_empty() {
        return Deletion::Remove;
    }
    let mut marked = existing.clone();
    object::set_finalizers(&mut marked, &finalizers);
    stamp_deletion(&mut marked, now, true);
    if marked == *existing {
        Deletion::Unchanged
    } else {
        Deletion::Mark(marked)
    }
}

/// A graceful deletion writing the mark `timestamp`, `period` (module documentation): the
/// object stays while its period runs or finalizers remain, and goes otherwise.
fn graceful_deletion(
    def: &ResourceDef,
    existing: &Value,
    options: &DeleteOptions,
    timestamp: chrono::DateTime<chrono::Utc>,
    period: i64,
) -> Deletion {
    let finalizers = finalizers_after_delete(def, existing, options);
    let first = object::deletion_timestamp(existing).is_none();
    if period == 0 && finalizers.is_empty() && first && object::finalizers(existing).is_empty() {
        return Deletion::MarkThenRemove;
    }
    let mut marked = existing.clone();
    object::set_finalizers(&mut marked, &finalizers);
    let generation = object::generation(existing);
    if first && generation > 0 {
        object::set_meta(&mut marked, "generation", Some(Value::from(generation + 1)));
    }
    let stamp = Value::from(format_time(timestamp));
    object::set_meta(&mut marked, "deletionTimestamp", Some(stamp));
    object::set_meta(
        &mut marked,
        "deletionGracePeriodSeconds",
        Some(Value::from(period)),
    );
    if period == 0 && finalizers.is_empty() {
        Deletion::WriteThenRemove(marked)
    } else {
        Deletion::Mark(marked)
    }
}

/// Writes on `obj` what a deletion stamps: `deletionTimestamp` the first time (never moved
/// later) — with `generation + 1` if asked and the object tracks generations, as a deletion
/// that finalizers hold does — and a zero grace period.
fn stamp_deletion(obj: &mut Value, now: chrono::DateTime<chrono::Utc>, bump_generation: bool) {
    if object::deletion_timestamp(obj).is_none() {
        let generation = object::generation(obj);
        if bump_generation && generation > 0 {
            object::set_meta(obj, "generation", Some(Value::from(generation + 1)));
        }
        let timestamp = Value::from(format_time(now));
        object::set_meta(obj, "deletionTimestamp", Some(timestamp));
    }
    object::set_meta(obj, "deletionGracePeriodSeconds", Some(Value::from(0)));
}

fn check_delete_preconditions(
    resource: ResourceId,
    name: &str,
    existing: &Value,
    options: &DeleteOptions,
) -> Result<(), StoreError> {
    let checks = [
        ("uid", &options.precondition_uid, object::uid(existing)),
        (
            "resourceVersion",
            &options.precondition_resource_version,
            object::resource_version(existing),
        ),
    ];
    for (field, expected, actual) in checks {
        if let Some(expected) = expected {
            let actual = actual.unwrap_or_default();
            if expected != actual {
                return Err(StoreError::DeletePrecondition {
                    resource,
                    name: name.to_string(),
                    field,
                    expected: expected.clone(),
                    actual: actual.to_string(),
                });
            }
        }
    }
    Ok(())
}

/// The object's finalizers once the delete request's propagation policy is applied: other
/// finalizers are kept in order, then `orphan` or `foregroundDeletion` is appended if wanted.
pub(super) fn finalizers_after_delete(
    def: &ResourceDef,
    existing: &Value,
    options: &DeleteOptions,
) -> Vec<String> {
    let current = object::finalizers(existing);
    let mut result: Vec<String> = current
        .iter()
        .filter(|f| f.as_str() != ORPHAN && f.as_str() != FOREGROUND)
        .cloned()
        .collect();
    if should_orphan(def, &current, options) {
        result.push(ORPHAN.to_string());
    } else if should_delete_in_foreground(&current, options) {
        result.push(FOREGROUND.to_string());
    }
    let unchanged = {
        let mut a = current.clone();
        let mut b = result.clone();
        a.sort();
        b.sort();
        a == b
    };
    // The real server leaves the list untouched (order included) when the set is the same.
    if unchanged {
        current
    } else {
        result
    }
}

fn should_orphan(def: &ResourceDef, current: &[String], options: &DeleteOptions) -> bool {
    if let Some(orphan) = options.orphan_dependents {
        return orphan;
    }
    if let Some(policy) = options.propagation {
        return policy == Propagation::Orphan;
    }
    for f in current {
        match f.as_str() {
            ORPHAN => return true,
            FOREGROUND => return false,
            _ => {}
        }
    }
    def.default_deletion == DefaultDeletion::Orphan
}

fn should_delete_in_foreground(current: &[String], options: &DeleteOptions) -> bool {
    if options.orphan_dependents.is_some() {
        return false;
    }
    if let Some(policy) = options.propagation {
        return policy == Propagation::Foreground;
    }
    for f in current {
        match f.as_str() {
            FOREGROUND => return true,
            ORPHAN => return false,
            _ => {}
        }
    }
    false
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn jobs() -> ResourceDef {
        ResourceDef::new("batch", "v1", "jobs", "Job")
            .with_default_deletion(DefaultDeletion::Orphan)
    }

    fn with_finalizers(list: &[&str]) -> Value {
        json!({"metadata": {"finalizers": list}})
    }

    #[test]
    fn policies_choose_the_gc_finalizer() {
        let none = with_finalizers(&[]);
        let fg = DeleteOptions::propagation(Propagation::Foreground);
        let bg = DeleteOptions::propagation(Propagation::Background);
        let orphan = DeleteOptions::propagation(Propagation::Orphan);
        assert_eq!(
            finalizers_after_delete(&jobs(), &none, &fg),
            vec![FOREGROUND]
        );
        assert_eq!(
            finalizers_after_delete(&jobs(), &none, &orphan),
            vec![ORPHAN]
        );
        assert!(finalizers_after_delete(&jobs(), &none, &bg).is_empty());
        // batch/v1 Jobs default to orphaning (exchange 32).
        assert_eq!(
            finalizers_after_delete(&jobs(), &none, &DeleteOptions::default()),
            vec![ORPHAN]
        );
    }

    #[test]
    fn other_finalizers_are_kept_and_gc_ones_switched() {
        let obj = with_finalizers(&["example.com/x", ORPHAN]);
        let fg = DeleteOptions::propagation(Propagation::Foreground);
        assert_eq!(
            finalizers_after_delete(&jobs(), &obj, &fg),
            vec!["example.com/x", FOREGROUND]
        );
        let bg = DeleteOptions::propagation(Propagation::Background);
        assert_eq!(
            finalizers_after_delete(&jobs(), &obj, &bg),
            vec!["example.com/x"]
        );
        // No policy: the existing finalizer wins over the resource default.
        let foreground = with_finalizers(&[FOREGROUND]);
        assert_eq!(
            finalizers_after_delete(&jobs(), &foreground, &DeleteOptions::default()),
            vec![FOREGROUND]
        );
    }

    #[test]
    fn orphan_dependents_overrides_everything() {
        let options = DeleteOptions {
            orphan_dependents: Some(false),
            propagation: Some(Propagation::Orphan),
            ..DeleteOptions::default()
        };
        assert!(finalizers_after_delete(&jobs(), &with_finalizers(&[]), &options).is_empty());
    }
}
