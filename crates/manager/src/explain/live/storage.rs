//! [`PodGcView`], [`PvcView`], [`PvView`]: the pod garbage collector's and the protection
//! controllers' caches, read for `/debug/explain`.
//!
//! Contract: each decision is `explain::decide`'s, on the facts the controller caches — the
//! Pod and its node, and since when that node has been in quarantine; a claim and the Pods of
//! its namespace; a volume and every claim — at the page's instant. A claim's and a volume's
//! cache keeps every finalizer (not the deletion time), so what their finalizers wait for is
//! told; a Pod's cache keeps none.

use std::sync::Arc;

use chrono::{DateTime, Utc};

use crate::explain::decide::{
    claim_decision, claim_wait, decision, deletion, not_a_pod, not_its_kind, podgc_decision,
    standing, volume_decision, volume_wait, Deleting, Dependent, DependentIndex, PodGcFacts,
};
use crate::explain::gather::is;
use crate::explain::{DeletionInProgress, VerdictKind};
use crate::selection::ControllerSelection;
use kube_gc_controllers::podgc::decide::NodeView;
use kube_gc_controllers::podgc::{
    node_resource, pod_resource, NodeFacts, PodFacts, Quarantines, CONTROLLER as PODGC,
};
use kube_gc_controllers::protection::decide::{claim_release, volume_release};
use kube_gc_controllers::protection::{
    claim_resource, volume_resource, ClaimFacts, PodClaims, VolumeFacts, PVC_CONTROLLER,
    PVC_FINALIZER, PV_CONTROLLER, PV_FINALIZER,
};
use kube_gc_runtime::cache::{ObjectKey, Store};
use kube_gc_runtime::informer::InformerSynced;

use super::{CacheView, Found, LiveTarget, View};

/// "watches v1/pods (3 cached)", with a note while the first list is not in.
fn watching(resources: &[(String, usize)], synced: &[InformerSynced]) -> String {
    let each: Vec<String> = resources
        .iter()
        .map(|(r, n)| format!("{r} ({n} cached)"))
        .collect();
    let waiting = if synced.iter().all(InformerSynced::has_synced) {
        ""
    } else {
        "; first lists not all in yet"
    };
    format!("watches {}{waiting}", each.join(" and "))
}

fn not_cached(controller: &'static str, holds: String) -> View {
    View {
        decision: decision(
            controller,
            false,
            VerdictKind::Keep,
            format!("not in its cache: it {holds}"),
        ),
        found: None,
    }
}

/// The pod garbage collector's caches.
pub struct PodGcView {
    pods: Arc<Store<PodFacts>>,
    nodes: Arc<Store<NodeFacts>>,
    quarantines: Arc<Quarantines>,
    threshold: usize,
    synced: Vec<InformerSynced>,
}

impl PodGcView {
    /// A view of the collector's caches; `threshold` is its `--terminated-pod-gc-threshold`.
    pub fn new(
        pods: Arc<Store<PodFacts>>,
        nodes: Arc<Store<NodeFacts>>,
        quarantines: Arc<Quarantines>,
        threshold: usize,
        synced: Vec<InformerSynced>,
    ) -> PodGcView {
        PodGcView {
            pods,
            nodes,
            quarantines,
            threshold,
            synced,
        }
    }
}

impl CacheView for PodGcView {
    fn controller(&self) -> &'static str {
        PODGC
    }

    fn holds(&self) -> String {
        let each = [
            (pod_resource().path_name(), self.pods.len()),
            (node_resource().path_name(), self.nodes.len()),
        ];
        watching(&each, &self.synced)
    }

    fn view(&self, target: &LiveTarget, now: DateTime<Utc>) -> View {
        if !is(&target.resource, &pod_resource()) {
            return View {
                decision: not_a_pod(),
                found: None,
            };
        }
        let key = ObjectKey::new(target.namespace.as_deref().unwrap_or(""), &target.name);
        let Some(pod) = self.pods.get(&key) else {
            return not_cached(PODGC, self.holds());
        };
        let node = self.nodes.get(&ObjectKey::cluster_scoped(&pod.node_name));
        let all = self.pods.list();
        let facts = PodGcFacts {
            pod: &pod,
            node: node.as_deref().map_or(NodeView::Missing, NodeView::Present),
            missing_since: self.quarantines.since(&pod.node_name),
            standing: standing(&pod, all.iter().map(|p| &**p), self.threshold),
            threshold: self.threshold,
        };
        View {
            decision: podgc_decision(&facts, now),
            found: Some(Found {
                uid: pod.uid.clone(),
                being_deleted: pod.deleting,
                deletion: None,
                namespace: None,
            }),
        }
    }
}

/// No dependents: these caches keep no owner references.
struct NoIndex;

impl DependentIndex for NoIndex {
    fn dependents(&self, _uid: &str) -> Vec<Dependent> {
        Vec::new()
    }
}

/// What the finalizers of an object being deleted wait for, from a cache that keeps them all
/// but not the deletion time.
fn cached_deletion(
    uid: &str,
    finalizers: &[String],
    running: &ControllerSelection,
) -> DeletionInProgress {
    let deleting = Deleting {
        since: None,
        finalizers: finalizers.to_vec(),
        unknown: None,
    };
    deletion(uid, deleting, &NoIndex, running)
}

/// The PVC protection controller's caches.
pub struct PvcView {
    claims: Arc<Store<ClaimFacts>>,
    pods: Arc<Store<PodClaims>>,
    synced: Vec<InformerSynced>,
}

impl PvcView {
    /// A view of the controller's claims and Pods.
    pub fn new(
        claims: Arc<Store<ClaimFacts>>,
        pods: Arc<Store<PodClaims>>,
        synced: Vec<InformerSynced>,
    ) -> PvcView {
        PvcView {
            claims,
            pods,
            synced,
        }
    }
}

impl CacheView for PvcView {
    fn controller(&self) -> &'static str {
        PVC_CONTROLLER
    }

    fn holds(&self) -> String {
        let each = [
            (claim_resource().path_name(), self.claims.len()),
            (pod_resource().path_name(), self.pods.len()),
        ];
        watching(&each, &self.synced)
    }

    fn view(&self, target: &LiveTarget, _now: DateTime<Utc>) -> View {
        if !is(&target.resource, &claim_resource()) {
            return View {
                decision: not_its_kind(PVC_CONTROLLER, "PersistentVolumeClaim"),
                found: None,
            };
        }
        let namespace = target.namespace.as_deref().unwrap_or("");
        let Some(claim) = self.claims.get(&ObjectKey::new(namespace, &target.name)) else {
            return not_cached(PVC_CONTROLLER, self.holds());
        };
        let pods = self.pods.list_namespace(namespace);
        let users = pods.iter().map(|p| &**p);
        let release = claim_release(&claim, PVC_FINALIZER, users.clone());
        let told = claim.deleting.then(|| {
            let mut told = cached_deletion(&claim.uid, &claim.finalizers, &target.running);
            claim_wait(&mut told, &claim, users, &target.running);
            told
        });
        View {
            decision: claim_decision(&release),
            found: Some(Found {
                uid: claim.uid.clone(),
                being_deleted: claim.deleting,
                deletion: told,
                namespace: None,
            }),
        }
    }
}

/// The PV protection controller's caches.
pub struct PvView {
    volumes: Arc<Store<VolumeFacts>>,
    claims: Arc<Store<ClaimFacts>>,
    synced: Vec<InformerSynced>,
}

impl PvView {
    /// A view of the controller's volumes and claims.
    pub fn new(
        volumes: Arc<Store<VolumeFacts>>,
        claims: Arc<Store<ClaimFacts>>,
        synced: Vec<InformerSynced>,
    ) -> PvView {
        PvView {
            volumes,
            claims,
            synced,
        }
    }
}

impl CacheView for PvView {
    fn controller(&self) -> &'static str {
        PV_CONTROLLER
    }

    fn holds(&self) -> String {
        let each = [
            (volume_resource().path_name(), self.volumes.len()),
            (claim_resource().path_name(), self.claims.len()),
        ];
        watching(&each, &self.synced)
    }

    fn view(&self, target: &LiveTarget, _now: DateTime<Utc>) -> View {
        if !is(&target.resource, &volume_resource()) {
            return View {
                decision: not_its_kind(PV_CONTROLLER, "PersistentVolume"),
                found: None,
            };
        }
        let Some(volume) = self.volumes.get(&ObjectKey::cluster_scoped(&target.name)) else {
            return not_cached(PV_CONTROLLER, self.holds());
        };
        let claims = self.claims.list();
        let release = volume_release(&volume, PV_FINALIZER, claims.iter().map(|c| &**c));
        let told = volume.deleting.then(|| {
            let mut told = cached_deletion(&volume.uid, &volume.finalizers, &target.running);
            volume_wait(
                &mut told,
                &volume,
                claims.iter().map(|c| &**c),
                &target.running,
            );
            told
        });
        View {
            decision: volume_decision(&release),
            found: Some(Found {
                uid: volume.uid.clone(),
                being_deleted: volume.deleting,
                deletion: told,
                namespace: None,
            }),
        }
    }
}
