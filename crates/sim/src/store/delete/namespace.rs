//! What a DELETE of a namespace writes: the namespace registry's rule (exchanges 140, 141, 156,
//! 157; the lifecycle as a whole is described in `store/namespace.rs`).

use serde_json::Value;

use super::{finalizers_after_delete, DeleteOptions, Deletion};
use crate::clock::format_time;
use crate::object;
use crate::resources::ResourceDef;
use crate::store::namespace::spec_finalizers;

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
    use crate::store::namespace::{is_finished, is_terminating};
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
