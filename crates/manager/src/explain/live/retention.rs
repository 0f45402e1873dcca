//! [`RetentionView`]: the retention engine's running watches ([`WatchMap`]), their rules and
//! cached [`Assessment`](kube_gc_controllers::retention::assessment::Assessment)s, read for
//! `/debug/explain`.
//!
//! Contract: the decision is the one `kube-gc explain` makes (`decide::retention_decision`),
//! on the assessment the engine made when it decoded the object and with the rules it made it
//! with; the history group is ranked from the other cached assessments of the object's
//! namespace, as explain ranks the ones it lists. The engine keeps assessments, not objects, so
//! why a policy does not apply to an ungoverned object is said to be unknown here.

use std::sync::Arc;

use chrono::{DateTime, Utc};

use crate::explain::decide::{decision, group_members, no_policy, retention_decision, Assessing};
use crate::explain::VerdictKind;
use kube_gc_controllers::retention::engine::{ResourceWatch, WatchMap, CONTROLLER};
use kube_gc_controllers::retention::policy::{CompiledPolicy, Target};
use kube_gc_runtime::cache::ObjectKey;

use super::{CacheView, LiveTarget, View};

/// The retention engine's watches.
pub struct RetentionView {
    watches: WatchMap,
}

impl RetentionView {
    /// A view of `watches` (the engine's, shared).
    pub fn new(watches: WatchMap) -> RetentionView {
        RetentionView { watches }
    }

    fn watch(&self, target: &Target) -> Option<Arc<ResourceWatch>> {
        self.watches.read().get(target).cloned()
    }
}

impl CacheView for RetentionView {
    fn controller(&self) -> &'static str {
        CONTROLLER
    }

    fn holds(&self) -> String {
        let watches = self.watches.read();
        if watches.is_empty() {
            return "watches nothing (no valid policy)".to_owned();
        }
        let each: Vec<String> = watches
            .values()
            .map(|w| {
                let synced = if w.has_synced() {
                    ""
                } else {
                    ", first list not in yet"
                };
                format!("{} ({} judged{synced})", w.target, w.store.len())
            })
            .collect();
        format!("watches {}", each.join(", "))
    }

    fn view(&self, target: &LiveTarget, now: DateTime<Utc>) -> View {
        let resource = Target {
            group: target.resource.group.clone(),
            version: target.resource.version.clone(),
            resource: target.resource.plural.clone(),
        };
        let Some(watch) = self.watch(&resource) else {
            return View {
                decision: no_policy(&resource),
                found: None,
            };
        };
        let namespace = target.namespace.as_deref().unwrap_or("");
        let Some(assessment) = watch.store.get(&ObjectKey::new(namespace, &target.name)) else {
            let why = format!("not in its cache of {} assessments", watch.store.len());
            return View {
                decision: decision(CONTROLLER, false, VerdictKind::Keep, why),
                found: None,
            };
        };
        let members = |index: u16, group: &str| {
            group_members(watch.store.list_namespace(namespace), index, group)
        };
        let why_not = |_: &CompiledPolicy| {
            "does not apply (why is not cached: the engine keeps assessments, not objects; \
             `kube-gc explain` reads the object and says)"
                .to_owned()
        };
        let assessing = Assessing {
            target: &resource,
            rules: &watch.rules,
            now,
            members: &members,
            why_not: &why_not,
        };
        let decision = retention_decision(&assessment, &assessing);
        View::of_judgement(decision, &assessment, watch.has_synced())
    }
}
