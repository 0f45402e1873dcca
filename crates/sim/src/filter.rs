//! Which objects a list or watch request is about.
//!
//! Contract: an [`ObjectFilter`] combines the namespace from the URL with the request's
//! `labelSelector` and `fieldSelector` (parsed by [`crate::selectors`]). Lists keep the
//! objects it matches; watches use [`ObjectFilter::event_for`] to turn a committed change into the
//! event a filtered watcher sees — including the real server's rule that an object which stops
//! matching is delivered as `DELETED`, and one which starts matching as `ADDED`.

use serde_json::Value;

use crate::history::{Change, ChangeKind};
use crate::object;
use crate::selectors::{FieldSelector, LabelSelector};
use crate::stamped::Stamped;

/// Namespace, label and field restrictions of one request (all optional).
#[derive(Debug, Default)]
pub struct ObjectFilter {
    /// Only objects in this namespace.
    pub namespace: Option<String>,
    /// Only objects whose labels match.
    pub labels: Option<LabelSelector>,
    /// Only objects whose fields match.
    pub fields: Option<FieldSelector>,
}

impl ObjectFilter {
    /// A filter on the namespace only.
    pub fn namespace(namespace: Option<&str>) -> ObjectFilter {
        ObjectFilter {
            namespace: namespace.map(str::to_string),
            ..ObjectFilter::default()
        }
    }

    /// Whether label or field selectors are set (the server then omits `remainingItemCount`).
    pub fn has_selectors(&self) -> bool {
        self.labels.is_some() || self.fields.is_some()
    }

    /// Whether an object passes every restriction.
    pub fn matches(&self, obj: &Value) -> bool {
        if let Some(ns) = &self.namespace {
            if object::namespace(obj) != Some(ns.as_str()) {
                return false;
            }
        }
        if let Some(labels) = &self.labels {
            if !labels.matches(object::labels(obj)) {
                return false;
            }
        }
        if let Some(fields) = &self.fields {
            if !fields.matches(obj) {
                return false;
            }
        }
        true
    }

    /// The event a watcher with this filter receives for `change`, if any: its type and object.
    /// The filter reads the stored objects: what a [`Stamped`] writes over them (resourceVersion,
    /// a deletion mark) is never a label, a name or a namespace.
    pub fn event_for(&self, change: &Change) -> Option<(&'static str, Stamped)> {
        let now_matches =
            change.kind != ChangeKind::Deleted && self.matches(change.object.object());
        let before_matched = change
            .previous
            .as_ref()
            .is_some_and(|previous| self.matches(previous.object()));
        match (now_matches, before_matched) {
            (true, true) => Some(("MODIFIED", change.object.clone())),
            (true, false) => Some(("ADDED", change.object.clone())),
            (false, false) => None,
            // The object's last state, at the deletion's resourceVersion.
            (false, true) if change.kind == ChangeKind::Deleted => {
                Some(("DELETED", change.object.presented_at(change.rv)))
            }
            // The object left the watcher's view: it gets the last state it could see, at the
            // change's resourceVersion so that the watcher can resume after it.
            (false, true) => {
                let last_seen = change.previous.as_ref()?;
                Some(("DELETED", last_seen.presented_at(change.rv)))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::resources::ResourceId;
    use serde_json::json;
    use std::sync::Arc;

    fn change(kind: ChangeKind, object: Value, previous: Option<Value>) -> Change {
        Change {
            rv: 9,
            at: chrono::DateTime::<chrono::Utc>::default(),
            resource: ResourceId(0),
            key: "ns/a".into(),
            kind,
            object: Stamped::stored(Arc::new(object)),
            previous: previous.map(|p| Stamped::stored(Arc::new(p))),
        }
    }

    fn labelled(app: &str) -> Value {
        json!({"metadata": {"name": "a", "namespace": "ns", "resourceVersion": "9",
            "labels": {"app": app}}})
    }

    fn app_x() -> ObjectFilter {
        ObjectFilter {
            labels: LabelSelector::parse("app=x").ok(),
            ..ObjectFilter::namespace(Some("ns"))
        }
    }

    #[test]
    fn namespace_and_labels_restrict_matches() {
        let filter = app_x();
        assert!(filter.matches(&labelled("x")));
        assert!(!filter.matches(&labelled("y")));
        let mut elsewhere = labelled("x");
        object::set_meta(&mut elsewhere, "namespace", Some(json!("other")));
        assert!(!filter.matches(&elsewhere));
        assert!(filter.has_selectors());
    }

    #[test]
    fn leaving_the_selection_is_a_deletion_at_the_change_version() {
        let mut before = labelled("x");
        object::set_meta(&mut before, "resourceVersion", Some(json!("5")));
        let event = app_x().event_for(&change(ChangeKind::Modified, labelled("y"), Some(before)));
        let (kind, stamped) = event.unwrap_or(("none", Stamped::stored(Arc::new(Value::Null))));
        assert_eq!(kind, "DELETED");
        let obj = stamped.to_value();
        assert_eq!(obj["metadata"]["labels"]["app"], "x");
        assert_eq!(obj["metadata"]["resourceVersion"], "9");
    }

    #[test]
    fn entering_the_selection_is_an_addition() {
        let event = app_x().event_for(&change(
            ChangeKind::Modified,
            labelled("x"),
            Some(labelled("y")),
        ));
        assert_eq!(event.map(|e| e.0), Some("ADDED"));
        let ignored = app_x().event_for(&change(ChangeKind::Added, labelled("y"), None));
        assert!(ignored.is_none());
        let deleted = app_x().event_for(&change(
            ChangeKind::Deleted,
            labelled("x"),
            Some(labelled("x")),
        ));
        let (kind, stamped) = deleted.unwrap_or(("none", Stamped::stored(Arc::new(Value::Null))));
        assert_eq!(kind, "DELETED");
        assert_eq!(
            stamped.resource_version(),
            Some(9),
            "at the deletion's version"
        );
    }
}
