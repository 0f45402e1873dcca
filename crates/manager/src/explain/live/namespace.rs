//! [`NamespaceView`]: the namespace controller's caches — the namespaces, the content index, the
//! latest discovery and each namespace's progress — read for `/debug/explain`.
//!
//! Contract: the answer is `explain::decide::namespace`'s on exactly what the controller's next
//! pass would judge (its `assess` on the cached content and the progress it recorded), at the
//! page's instant. The index keeps each object's name, UID, finalizers and deletion mark, not its
//! owner references nor a Pod's node or grace period: those links of a chain are said to be
//! unknown here (`kube-gc explain` reads them).

use std::sync::Arc;

use chrono::{DateTime, Utc};

use crate::explain::decide::namespace::explain_namespace;
use crate::explain::decide::{decision, deletion, not_its_kind, rfc3339, Deleting, DependentIndex};
use crate::explain::gather::is;
use crate::explain::gather::{NamespaceContent, NamespaceFacts};
use crate::explain::{Settings, VerdictKind};
use kube_gc_api::Namespace;
use kube_gc_client::ResourceRef;
use kube_gc_controllers::namespace::decide::Content;
use kube_gc_controllers::namespace::{NamespaceHandle, CONTROLLER};
use kube_gc_runtime::cache::ObjectKey;

use super::{CacheView, Found, LiveTarget, View};

/// The namespace controller's caches.
pub struct NamespaceView {
    handle: NamespaceHandle,
}

impl NamespaceView {
    /// A view of the controller behind `handle`.
    pub fn new(handle: NamespaceHandle) -> NamespaceView {
        NamespaceView { handle }
    }
}

/// No dependents: the index keeps no owner references.
struct NoIndex;

impl DependentIndex for NoIndex {
    fn dependents(&self, _uid: &str) -> Vec<crate::explain::decide::Dependent> {
        Vec::new()
    }
}

impl CacheView for NamespaceView {
    fn controller(&self) -> &'static str {
        CONTROLLER
    }

    fn holds(&self) -> String {
        let shared = self.handle.shared();
        let synced = if self.handle.is_synced() {
            ""
        } else {
            ", first list not in yet"
        };
        format!(
            "watches v1/namespaces ({} cached{synced}; {} namespaced objects indexed)",
            shared.namespaces.len(),
            shared.index.len()
        )
    }

    fn view(&self, target: &LiveTarget, now: DateTime<Utc>) -> View {
        let namespaces = ResourceRef::new("", "v1", "namespaces", "Namespace", false);
        if !is(&target.resource, &namespaces) {
            return View {
                decision: not_its_kind(CONTROLLER, "Namespace"),
                found: None,
            };
        }
        let shared = self.handle.shared();
        let Some(cached) = shared
            .namespaces
            .get(&ObjectKey::cluster_scoped(&target.name))
        else {
            let why = format!("not in its cache: it {}", self.holds());
            return View {
                decision: decision(CONTROLLER, false, VerdictKind::Keep, why),
                found: None,
            };
        };
        let facts = facts_of(&cached.namespace, cached.subject(), shared);
        let settings = Settings {
            namespace_deletion_grace_period: shared.finalize_delay,
            ..Settings::default()
        };
        let running = &target.running;
        let explained = explain_namespace(&facts, &settings, running, now);
        let meta = &cached.namespace.metadata;
        let uid = meta.uid.clone().unwrap_or_default();
        let mut told = meta.deletion_timestamp.map(|since| {
            let deleting = Deleting {
                since: Some(rfc3339(since.0)),
                finalizers: meta.finalizers.clone(),
                unknown: None,
            };
            deletion(&uid, deleting, &NoIndex, running)
        });
        if let Some(told) = told.as_mut() {
            let mut spec = explained.spec.clone();
            spec.append(&mut told.finalizers);
            told.finalizers = spec;
        }
        View {
            decision: explained.decision,
            found: Some(Found {
                uid,
                being_deleted: meta.deletion_timestamp.is_some(),
                deletion: told,
                namespace: Some(Box::new(explained.report)),
            }),
        }
    }
}

/// What the controller's next pass would judge of `namespace`.
fn facts_of(
    namespace: &Namespace,
    subject: kube_gc_controllers::namespace::decide::Subject,
    shared: &Arc<kube_gc_controllers::namespace::Shared>,
) -> NamespaceFacts {
    let ours = kube_gc_controllers::namespace::decide::is_ours(&subject);
    let latest = shared.latest_discovery();
    let content = ours.then(|| NamespaceContent {
        types: latest.discovered.types.clone(),
        failed: latest.discovered.failed.clone(),
        content: latest
            .discovered
            .types
            .iter()
            .map(|kind| Content {
                known: shared.index.known(&kind.resource, &subject.name),
                kind: kind.clone(),
                failure: None,
            })
            .collect(),
        progress: shared
            .progress_of(&subject.name, &subject.uid)
            .unwrap_or_default(),
        source: "kube-gc's caches: the namespace controller's content index".to_owned(),
        ..NamespaceContent::default()
    });
    NamespaceFacts {
        finalizers: namespace.metadata.finalizers.clone(),
        phase: namespace.status.phase.clone(),
        conditions: namespace.status.conditions.clone(),
        content,
        discovered_at: Some(latest.discovered.started),
        subject,
    }
}
