//! An object kept because something about it cannot be read: logged at Warning, counted, and
//! reported as a Warning Event on the object — once while the same problem lasts, so that an
//! object re-assessment on every resync does not flood the Events.

use std::sync::Arc;

use crate::retention::assessment::Assessment;
use kube_gc_api::ObjectReference;
use kube_gc_runtime::cache::{Cacheable, ObjectKey};
use kube_gc_runtime::events::{EventRecord, EventType};

use super::super::watch::ResourceWatch;
use super::RetentionReconciler;

impl RetentionReconciler {
    /// Logs, counts and reports a problem with one object, once while it lasts; true the
    /// first time.
    pub(super) fn report(
        &self,
        watch: &ResourceWatch,
        assessment: &Assessment,
        reason: &'static str,
        message: &str,
    ) -> bool {
        let entry = (Arc::clone(&watch.target), assessment.key().clone());
        {
            let mut reported = self.reported.lock();
            if reported.get(&entry).map(String::as_str) == Some(message) {
                return false;
            }
            reported.insert(entry, message.to_owned());
        }
        self.tally.kept(reason);
        let key = assessment.key();
        tracing::warn!(controller = self.settings.controller, resource = %watch.target, %key, reason, problem = %message, "kept: it could not be judged");
        self.recorder.record(EventRecord {
            regarding: ObjectReference {
                api_version: Some(watch.resource.api_version()),
                kind: Some(watch.resource.kind.clone()),
                namespace: key.namespace().map(str::to_owned),
                name: Some(key.name().to_owned()),
                uid: Some(assessment.uid().to_owned()),
                ..ObjectReference::default()
            },
            event_type: EventType::Warning,
            reason: event_reason(reason).to_owned(),
            message: format!("kept: {message}"),
        });
        true
    }

    /// Forgets what was reported about `key`: it is gone, or assessment without a problem, so
    /// a problem it has again is reported again.
    pub(super) fn forget(&self, watch: &ResourceWatch, key: &ObjectKey) {
        let mut reported = self.reported.lock();
        // The common case, on every reconcile: nothing was ever reported.
        if !reported.is_empty() {
            reported.remove(&(Arc::clone(&watch.target), key.clone()));
        }
    }
}

fn event_reason(reason: &str) -> &'static str {
    match reason {
        "annotation" => "InvalidRetentionAnnotation",
        "finish_time_unknown" => "FinishTimeUnknown",
        "creation_time_unknown" => "CreationTimeUnknown",
        // A TTL field that is negative or not an integer (`spec.ttlSecondsAfterFinished` of a
        // Volcano Job, which no API validation guards): the object's own mistake, not a rule's.
        "own_ttl" => "InvalidTTL",
        _ => "RetentionRuleFailed",
    }
}

#[cfg(test)]
mod tests {
    use super::event_reason;

    #[test]
    fn an_objects_own_bad_ttl_has_a_reason_of_its_own() {
        assert_eq!(event_reason("own_ttl"), "InvalidTTL");
        assert_eq!(event_reason("match"), "RetentionRuleFailed");
        assert_eq!(event_reason("annotation"), "InvalidRetentionAnnotation");
    }
}
