//! The namespace's lifecycle, as a v1.28 kube-apiserver's namespace registry and its
//! `NamespaceLifecycle` admission plugin keep it (exchanges 137–164).
//!
//! Contract:
//! - A namespace is created with `spec.finalizers: [kubernetes]` and phase `Active`
//!   (`server_fields`, exchange 137).
//! - Its first DELETE marks it — `deletionTimestamp`, phase `Terminating`, no grace period —
//!   and it stays, whatever finalizers it has (exchanges 140, 156); a DELETE of a namespace
//!   already marked answers it unchanged while `spec.finalizers` holds anything (141), else
//!   deletes it as any object, by `metadata.finalizers` (157).
//! - It leaves storage when, marked, both `spec.finalizers` and `metadata.finalizers` are
//!   empty: after the write that empties the last of them (`/finalize`, a patch: 158–162).
//! - Only `/finalize` writes `spec.finalizers` (and metadata, as sent; never `status`: 154);
//!   the namespace itself ignores `spec.finalizers` and `status` (145); `/status` writes
//!   `status` only (146).
//! - Nothing may be created in a namespace that is missing (404, 138) or `Terminating`
//!   (403 `NamespaceTerminating`, 143); everything else in it is served as usual (144). The
//!   server never checks a namespace's content before it goes (162–164): that is the namespace
//!   controller's job.

use serde_json::Value;

use super::delete::{finalizers_after_delete, DeleteOptions, Deletion};
use crate::sim::clock::format_time;
use crate::sim::object;
use crate::sim::resources::ResourceDef;

/// The finalizer the namespace controller owns.
pub const KUBERNETES_FINALIZER: &str = "kubernetes";

/// Whether `def` is the core `namespaces` resource.
pub fn is_namespaces(def: &ResourceDef) -> bool {
    def.group.is_empty() && def.resource == "namespaces"
}

/// A namespace's `spec.finalizers`.
pub fn spec_finalizers(obj: &Value) -> Vec<String> {
    obj.pointer("/spec/finalizers")
        .and_then(Value::as_array)
        .map(|list| {
            list.iter()
                .filter_map(Value::as_str)
                .map(str::to_owned)
                .collect()
        })
        .unwrap_or_default()
}

/// Whether a namespace refuses new content: its phase is `Terminating` (what the admission
/// plugin reads), or it is marked for deletion.
pub fn is_terminating(obj: &Value) -> bool {
    obj.pointer("/status/phase").and_then(Value::as_str) == Some("Terminating")
        || object::deletion_timestamp(obj).is_some()
}

/// Whether a written namespace leaves storage instead of being stored: marked for deletion,
/// with no finalizer of either kind left.
pub fn is_finished(obj: &Value) -> bool {
    object::deletion_timestamp(obj).is_some()
        && object::finalizers(obj).is_empty()
        && spec_finalizers(obj).is_empty()
}

/// What a DELETE of the namespace `existing` writes (see the module documentation).
pub(super) fn deletion(
    def: &ResourceDef,
    existing: &Value,
    options: &DeleteOptions,
    now: chrono::DateTime<chrono::Utc>,
) -> Deletion {
    let finalizers = finalizers_after_delete(def, existing, options);
    if object::deletion_timestamp(existing).is_none() {
        let mut marked = existing.clone();
        object::set_meta(
            &mut marked,
            "deletionTimestamp",
            Some(Value::from(format_time(now))),
        );
        object::set_finalizers(&mut marked, &finalizers);
        if let Some(status) = marked.get_mut("status").and_then(Value::as_object_mut) {
            status.insert("phase".into(), Value::from("Terminating"));
        } else {
            marked["status"] = serde_json::json!({"phase": "Terminating"});
        }
        return Deletion::Mark(marked);
    }
    if !spec_finalizers(existing).is_empty() {
        return Deletion::Unchanged;
    }
    if finalizers.is_empty() {
        return Deletion::Remove;
    }
    let mut marked = existing.clone();
    object::set_finalizers(&mut marked, &finalizers);
    if marked == *existing {
        Deletion::Unchanged
    } else {
        Deletion::Mark(marked)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn namespaces() -> ResourceDef {
        ResourceDef::new("", "v1", "namespaces", "Namespace").cluster_scoped()
    }

    fn now() -> chrono::DateTime<chrono::Utc> {
        chrono::DateTime::parse_from_rfc3339("2026-11-29T02:55:29Z")
            .map(|t| t.to_utc())
            .unwrap_or_default()
    }

    fn active(spec: &[&str]) -> Value {
        json!({"metadata": {"name": "a"}, "spec": {"finalizers": spec}, "status": {"phase": "Active"}})
    }

    #[test]
    fn the_first_delete_marks_whatever_the_finalizers() {
        for spec in [&["kubernetes"][..], &[]] {
            let Deletion::Mark(marked) = deletion(
                &namespaces(),
                &active(spec),
                &DeleteOptions::default(),
                now(),
            ) else {
                panic!("not marked");
            };
            assert_eq!(
                marked["metadata"]["deletionTimestamp"],
                "2026-11-29T02:55:29Z"
            );
            assert_eq!(marked["status"]["phase"], "Terminating");
            // No grace period on a namespace (exchange 140).
            assert!(marked["metadata"]
                .get("deletionGracePeriodSeconds")
                .is_none());
            assert_eq!(spec_finalizers(&marked), spec);
        }
    }

    #[test]
    fn a_marked_namespace_goes_only_when_no_finalizer_is_left() {
        let mut marked = active(&["kubernetes"]);
        marked["metadata"]["deletionTimestamp"] = json!("2026-11-29T02:55:29Z");
        let options = DeleteOptions::default();
        assert!(matches!(
            deletion(&namespaces(), &marked, &options, now()),
            Deletion::Unchanged
        ));
        assert!(!is_finished(&marked));
        marked["spec"]["finalizers"] = json!([]);
        assert!(is_finished(&marked));
        assert!(matches!(
            deletion(&namespaces(), &marked, &options, now()),
            Deletion::Remove
        ));
        marked["metadata"]["finalizers"] = json!(["example.com/hold"]);
        assert!(!is_finished(&marked));
        assert!(matches!(
            deletion(&namespaces(), &marked, &options, now()),
            Deletion::Unchanged
        ));
        assert!(is_terminating(&marked));
        assert!(!is_terminating(&active(&[])));
    }
}
