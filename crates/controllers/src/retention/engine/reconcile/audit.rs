//! A deletion a policy in `Audit` mode would have made: reported exactly where `Enforce`
//! reports its deletions — a log line, `kube_gc_retention_would_delete_total`, a Normal Event
//! `WouldDelete` on the object, the deletion feed (notifications) — and not sent.
//!
//! Contract: each object is reported once (by UID), however often it is judged again — its
//! group re-ranked, its watch restarted by a policy change, its key queued again — so the
//! counter counts objects, not reconciles. What was reported is forgotten once the object is
//! deleted (after a switch to `Enforce`: then its wait is not counted as a deletion delay) or no
//! longer cached (deleted by someone else, or re-created under a new UID); the memory is bounded
//! by the objects due under `Audit` policies, pruned as it grows ([`Audited`]).

use std::collections::HashMap;
use std::sync::Arc;

use parking_lot::Mutex;

use crate::deleted::DeletionRecord;
use crate::retention::assessment::Assessment;
use crate::retention::policy::{CompiledPolicy, Target};
use kube_gc_api::ObjectReference;
use kube_gc_runtime::cache::{Cacheable, ObjectKey};
use kube_gc_runtime::events::{EventRecord, EventType};

use super::super::watch::ResourceWatch;
use super::super::WatchMap;
use super::delete::{reported_policy, retention_policy, Reason};
use super::RetentionReconciler;

/// The Event reason of a deletion an `Audit` policy would have made.
pub const WOULD_DELETE: &str = "WouldDelete";

/// The objects whose would-be deletion was reported, by resource and key, with their UID.
#[derive(Default)]
pub(super) struct Audited {
    inner: Mutex<Inner>,
}

#[derive(Default)]
struct Inner {
    reported: HashMap<(Arc<Target>, ObjectKey), Box<str>>,
    /// How many were kept at the last pruning: the next one comes when twice as many are held.
    after_pruning: usize,
}

impl Audited {
    /// Whether `assessment` of `target` is reported for the first time; remembers it.
    fn first(&self, target: &Arc<Target>, assessment: &Assessment, watches: &WatchMap) -> bool {
        let mut inner = self.inner.lock();
        let entry = (Arc::clone(target), assessment.key().clone());
        if inner.reported.get(&entry).map(AsRef::as_ref) == Some(assessment.uid()) {
            return false;
        }
        if inner.reported.len() >= 2 * inner.after_pruning + 64 {
            let watches = watches.read();
            inner.reported.retain(|(target, key), uid| {
                watches
                    .get(target)
                    .and_then(|watch| watch.store.get(key))
                    .is_some_and(|cached| cached.uid() == &**uid)
            });
            inner.after_pruning = inner.reported.len();
        }
        inner.reported.insert(entry, assessment.uid().into());
        true
    }

    /// Forgets `assessment` (deleted); whether its would-be deletion had been reported.
    pub(super) fn forget(&self, target: &Arc<Target>, assessment: &Assessment) -> bool {
        let mut inner = self.inner.lock();
        let entry = (Arc::clone(target), assessment.key().clone());
        match inner.reported.get(&entry) {
            Some(uid) if **uid == *assessment.uid() => {
                inner.reported.remove(&entry);
                true
            }
            _ => false,
        }
    }

    #[cfg(test)]
    fn len(&self) -> usize {
        self.inner.lock().reported.len()
    }
}

impl RetentionReconciler {
    /// Reports, once per object, the deletion `policy` (in `Audit` mode) would have made.
    pub(super) fn would_delete(
        &self,
        watch: &ResourceWatch,
        assessment: &Assessment,
        policy: &CompiledPolicy,
        reason: Reason,
    ) {
        if !self.audited.first(&watch.target, assessment, &self.watches) {
            return;
        }
        self.tally.would_delete(policy, reason.label());
        let key = assessment.key();
        tracing::info!(
            controller = self.settings.controller,
            retention_policy = retention_policy(policy),
            resource = %watch.target,
            namespace = key.namespace().unwrap_or(""),
            name = key.name(),
            uid = assessment.uid(),
            reason = reason.label(),
            "audit: would delete"
        );
        let why = match reason {
            Reason::Ttl(expired_at) => format!("its TTL ran out at {}", expired_at.to_rfc3339()),
            Reason::HistoryLimit => "it is beyond the policy's history limit".to_owned(),
        };
        self.recorder.record(EventRecord {
            regarding: ObjectReference {
                api_version: Some(watch.resource.api_version()),
                kind: Some(watch.resource.kind.clone()),
                namespace: key.namespace().map(str::to_owned),
                name: Some(key.name().to_owned()),
                uid: Some(assessment.uid().to_owned()),
                ..ObjectReference::default()
            },
            event_type: EventType::Normal,
            reason: WOULD_DELETE.to_owned(),
            message: format!(
                "{} (mode: Audit) would delete it: {why}; it is kept",
                policy.label()
            ),
        });
        self.feed.record(DeletionRecord {
            controller: self.settings.controller,
            policy: reported_policy(policy),
            audit: true,
            kind: watch.resource.kind.clone(),
            namespace: key.namespace().map(str::to_owned),
            name: key.name().to_owned(),
            uid: assessment.uid().to_owned(),
            reason: reason.label(),
            at: self.clock.now(),
        });
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use parking_lot::RwLock;
    use serde_json::json;

    use super::*;
    use crate::retention::assessment::{assess, ResourcePolicies};

    fn assessment(name: &str, uid: &str) -> Assessment {
        let object = json!({"metadata": {"name": name, "namespace": "ci", "uid": uid,
            "resourceVersion": "1"}});
        assess(&object, &ResourcePolicies::default(), chrono::Utc::now())
    }

    #[test]
    fn an_object_is_reported_once_per_uid_and_forgotten_when_no_longer_cached() {
        let audited = Audited::default();
        let watches: WatchMap = Arc::new(RwLock::new(BTreeMap::new()));
        let target = Arc::new(Target {
            group: String::new(),
            version: "v1".into(),
            resource: "pods".into(),
        });
        assert!(audited.first(&target, &assessment("a", "1"), &watches));
        assert!(!audited.first(&target, &assessment("a", "1"), &watches));
        assert!(
            audited.first(&target, &assessment("a", "2"), &watches),
            "re-created"
        );
        // Nothing is cached (no watch): a pruning forgets everything but the newest.
        for i in 0..100 {
            audited.first(&target, &assessment(&format!("p{i}"), "x"), &watches);
        }
        assert!(audited.len() < 100, "pruned: {}", audited.len());
    }
}
