//! The workers' side: one key at a time, judged again from the caches — and, where a safety
//! rule asks, from the server — then force-deleted ([`force`](super::force)).
//!
//! Contract:
//! - `Pod(key)`: the cached Pod is judged against the cached node. A Pod on an out-of-service
//!   node goes only after a GET of the node confirms it still is not ready and is tainted
//!   out-of-service (kube-controller-manager trusts its cache). An unscheduled terminating Pod
//!   goes on its cached state alone, which the guarded requests prove.
//! - `Node(name)`: a node still in the cache, or with no Pod bound to it, ends its quarantine.
//!   Otherwise, before the quarantine is over the key comes back when it is; after, a GET of the
//!   node decides: found → nothing (the cache lags), not found → every cached Pod bound to it
//!   is force-deleted as orphaned.
//! - `Terminated`: the terminated Pods above the threshold are force-deleted, in
//!   [`excess_terminated`]'s order.
//! - A force deletion that meets a changed Pod (409) reads it once: gone, re-created (another
//!   uid) or no longer due → nothing; still due → one more attempt at its new version. A Pod
//!   re-created under the same name is never deleted on its predecessor's judgement.
//! - A Pod force-deleted is not sent anything again while it lingers in the cache (its last
//!   events, or a finalizer holding it): its uid is remembered until its deletion is seen.
//! - A Pod the server is removing by itself (no grace period left, no finalizer: the state a
//!   real server writes one revision before the Pod's DELETED) is sent nothing for
//!   [`SERVER_REMOVAL`](super::decide::SERVER_REMOVAL) after its mark; the handler brings its
//!   key back then, and a Pod still there is judged as any other.
//! - Errors: counted per Pod (`pod_gc_collector_force_delete_pod_errors_total`), reported as a
//!   Warning event on the Pod, and returned, so the key is retried with back-off; a request the
//!   API server could not answer parks the key until it answers.

use std::fmt;
use std::sync::Arc;

use super::decide::{
    excess_terminated, judge, left_to_server, quarantine_left, NodeView, Reason, Verdict,
};
use super::facts::{NodeFacts, PodFacts};
use super::force::{force_delete, Forced};
use super::handlers::Watching;
use super::metrics::PodGcMetrics;
use super::{PodGcKey, CONTROLLER};
use crate::deleted::DeletionRecord;
use kube_gc_api::{ObjectReference, PartialObjectMetadata};
use kube_gc_client::{Api, Error};
use kube_gc_runtime::cache::ObjectKey;
use kube_gc_runtime::controller::{Action, Reconciler};
use kube_gc_runtime::events::{EventRecord, EventType, SharedRecorder};

/// Why a key failed; the worker loop retries it.
#[derive(Debug, thiserror::Error)]
pub enum PodGcError {
    /// The node could not be read.
    #[error("reading node {node}: {source}")]
    Node {
        /// Its name.
        node: String,
        /// Why.
        #[source]
        source: Error,
    },
    /// Force deletions failed.
    #[error("{failed} force deletion(s) failed; the first, of pod {pod} ({reason}): {source}")]
    Force {
        /// How many.
        failed: usize,
        /// The first Pod that failed.
        pod: ObjectKey,
        /// Why it was to go.
        reason: &'static str,
        /// Why it did not.
        #[source]
        source: Error,
    },
}

impl PodGcError {
    fn request(&self) -> &Error {
        match self {
            PodGcError::Node { source, .. } | PodGcError::Force { source, .. } => source,
        }
    }
}

/// The reconciler of [`PodGcKey`]s.
pub struct PodGcReconciler {
    pub(super) watching: Arc<Watching>,
    /// Pods in every namespace, answers read as metadata (the status patch, the DELETE).
    pub(super) pods: Api<PartialObjectMetadata>,
    /// Pods in every namespace, read as facts (the fresh read after a conflict).
    pub(super) pod_facts: Api<PodFacts>,
    pub(super) nodes: Api<NodeFacts>,
    pub(super) metrics: Arc<PodGcMetrics>,
    pub(super) recorder: SharedRecorder,
    pub(super) dry_run: bool,
}

impl Reconciler<PodGcKey> for PodGcReconciler {
    type Error = PodGcError;

    async fn reconcile(&self, key: &PodGcKey) -> Result<Action, PodGcError> {
        match key {
            PodGcKey::Pod(key) => self.pod(key).await,
            PodGcKey::Node(name) => self.node(name).await,
            PodGcKey::Terminated => self.terminated().await,
        }
    }

    fn server_unavailable(error: &PodGcError) -> bool {
        error.request().is_unavailable()
    }
}

impl PodGcReconciler {
    async fn pod(&self, key: &ObjectKey) -> Result<Action, PodGcError> {
        let Some(pod) = self.watching.pods.get(key) else {
            return Ok(Action::Done);
        };
        if self.watching.forced.contains(&pod.uid) {
            return Ok(Action::Done);
        }
        let cached = self.watching.cached_node(&pod.node_name);
        let view = cached
            .as_deref()
            .map_or(NodeView::Missing, NodeView::Present);
        match judge(&pod, view) {
            Verdict::Keep(_) => Ok(Action::Done),
            Verdict::Quarantine { node } => {
                self.watching.quarantine(&node);
                Ok(Action::Done)
            }
            Verdict::ForceDelete(Reason::OutOfService) => self.out_of_service(&pod).await,
            Verdict::ForceDelete(reason) => {
                let due = |p: &PodFacts| judge(p, view) == Verdict::ForceDelete(reason);
                let mut failures = Failures::default();
                failures.note(&pod, reason, self.force(&pod, reason, due).await);
                failures.into_result()
            }
        }
    }

    /// A terminating Pod on a node the cache says is shut down: the node is read first.
    async fn out_of_service(&self, pod: &PodFacts) -> Result<Action, PodGcError> {
        let node = &pod.node_name;
        let live = match self.nodes.get_opt(node).await {
            Ok(Some(live)) => live,
            Ok(None) => {
                self.watching.quarantine(node);
                return Ok(Action::Done);
            }
            Err(source) => {
                let node = node.clone();
                return Err(PodGcError::Node { node, source });
            }
        };
        let due = |p: &PodFacts| {
            judge(p, NodeView::Present(&live)) == Verdict::ForceDelete(Reason::OutOfService)
        };
        if !due(pod) {
            tracing::debug!(controller = CONTROLLER, pod = %pod.key, %node,
                "the node is ready or no longer out of service; keeping the pod");
            return Ok(Action::Done);
        }
        let mut failures = Failures::default();
        let result = self.force(pod, Reason::OutOfService, due).await;
        failures.note(pod, Reason::OutOfService, result);
        failures.into_result()
    }

    async fn node(&self, name: &str) -> Result<Action, PodGcError> {
        let quarantines = &self.watching.quarantines;
        if self.watching.cached_node(name).is_some() || self.watching.pods_on(name).is_empty() {
            quarantines.end(name);
            return Ok(Action::Done);
        }
        let now = self.watching.clock.now();
        let since = quarantines.begin(name, now);
        if let Some(left) = quarantine_left(since, now, self.watching.quarantine) {
            return Ok(Action::RequeueAfter(left));
        }
        match self.nodes.get_opt(name).await {
            Ok(Some(_)) => {
                tracing::debug!(
                    controller = CONTROLLER,
                    node = name,
                    "the node exists but is not cached yet; keeping its pods"
                );
                quarantines.end(name);
                return Ok(Action::Done);
            }
            Ok(None) => {}
            Err(source) => {
                let node = name.to_owned();
                return Err(PodGcError::Node { node, source });
            }
        }
        let mut failures = Failures::default();
        for pod in self.watching.pods_on(name) {
            let orphaned = |p: &PodFacts| {
                judge(p, NodeView::ConfirmedGone) == Verdict::ForceDelete(Reason::Orphaned)
                    && p.node_name == name
            };
            if orphaned(&pod) {
                let result = self.force(&pod, Reason::Orphaned, orphaned).await;
                failures.note(&pod, Reason::Orphaned, result);
            }
        }
        if failures.is_empty() {
            quarantines.end(name);
        }
        failures.into_result()
    }

    async fn terminated(&self) -> Result<Action, PodGcError> {
        let pods = self.watching.pods.list();
        let threshold = self.watching.threshold;
        let excess = excess_terminated(pods.iter().map(Arc::as_ref), threshold);
        if !excess.is_empty() {
            tracing::info!(
                controller = CONTROLLER,
                count = excess.len(),
                threshold,
                "deleting the oldest terminated pods above the threshold"
            );
        }
        let mut failures = Failures::default();
        for pod in excess {
            let terminated = |p: &PodFacts| p.phase.is_terminated();
            let result = self.force(pod, Reason::Terminated, terminated).await;
            failures.note(pod, Reason::Terminated, result);
        }
        failures.into_result()
    }

    /// Force-deletes `pod` for `reason`; after a conflict, reads it once and tries again if it
    /// is the same Pod and `due` still holds.
    async fn force(
        &self,
        pod: &PodFacts,
        reason: Reason,
        due: impl Fn(&PodFacts) -> bool,
    ) -> Result<(), Error> {
        let namespace = pod.key.namespace().unwrap_or_default();
        if self.watching.forced.contains(&pod.uid) {
            return Ok(());
        }
        let now = self.watching.clock.now();
        if let Some(left) = left_to_server(pod, now) {
            // The server is removing it; its handler brings it back if it is still there then.
            tracing::debug!(controller = CONTROLLER, pod = %pod.key, ?left,
                "the server is removing the pod by itself; leaving it to it");
            return Ok(());
        }
        if !self.dry_run {
            self.metrics.attempted(namespace, reason);
            tracing::info!(controller = CONTROLLER, pod = %pod.key, uid = %pod.uid,
                node = %pod.node_name, reason = reason.label(), "force-deleting pod");
        }
        let api = self.pods.within(namespace);
        let first = force_delete(&api, pod, reason, now, self.dry_run).await;
        let outcome = match first {
            Ok(Forced::Conflict) => self.again(pod, reason, &due).await,
            other => other,
        };
        match outcome {
            Ok(Forced::Deleted) => {
                self.watching.forced.insert(&pod.uid);
                tracing::debug!(controller = CONTROLLER, pod = %pod.key, "force-deleted");
                self.watching.feed.record(DeletionRecord {
                    controller: CONTROLLER,
                    policy: None,
                    audit: false,
                    kind: "Pod".to_owned(),
                    namespace: pod.key.namespace().map(str::to_owned),
                    name: pod.key.name().to_owned(),
                    uid: pod.uid.clone(),
                    reason: reason.label(),
                    at: self.watching.clock.now(),
                });
                Ok(())
            }
            Ok(forced) => {
                tracing::debug!(controller = CONTROLLER, pod = %pod.key, ?forced, "force deletion done");
                Ok(())
            }
            Err(error) => {
                self.metrics.failed(namespace, reason);
                self.warn(pod, reason, &error);
                Err(error)
            }
        }
    }

    async fn again(
        &self,
        pod: &PodFacts,
        reason: Reason,
        due: &impl Fn(&PodFacts) -> bool,
    ) -> Result<Forced, Error> {
        let namespace = pod.key.namespace().unwrap_or_default();
        let fresh = self
            .pod_facts
            .within(namespace)
            .get_opt(pod.key.name())
            .await?;
        match fresh {
            Some(fresh) if fresh.uid == pod.uid && due(&fresh) => {
                let api = self.pods.within(namespace);
                let now = self.watching.clock.now();
                force_delete(&api, &fresh, reason, now, self.dry_run).await
            }
            Some(_) => Ok(Forced::Conflict),
            None => Ok(Forced::Gone),
        }
    }

    fn warn(&self, pod: &PodFacts, reason: Reason, error: &Error) {
        tracing::warn!(controller = CONTROLLER, pod = %pod.key, reason = reason.label(), %error,
            "force deletion failed; retrying");
        self.recorder.record(EventRecord {
            regarding: ObjectReference {
                api_version: Some("v1".into()),
                kind: Some("Pod".into()),
                namespace: pod.key.namespace().map(str::to_owned),
                name: Some(pod.key.name().to_owned()),
                uid: Some(pod.uid.clone()),
                ..ObjectReference::default()
            },
            event_type: EventType::Warning,
            reason: "PodGCFailed".into(),
            message: format!(
                "pod garbage collector could not force-delete ({}): {error}",
                reason.label()
            ),
        });
    }
}

/// The failures of one key's force deletions.
#[derive(Default)]
struct Failures {
    first: Option<(ObjectKey, Reason, Error)>,
    count: usize,
}

impl Failures {
    fn note(&mut self, pod: &PodFacts, reason: Reason, result: Result<(), Error>) {
        if let Err(error) = result {
            self.count += 1;
            self.first.get_or_insert((pod.key.clone(), reason, error));
        }
    }

    fn is_empty(&self) -> bool {
        self.count == 0
    }

    fn into_result(self) -> Result<Action, PodGcError> {
        match self.first {
            None => Ok(Action::Done),
            Some((pod, reason, source)) => Err(PodGcError::Force {
                failed: self.count,
                pod,
                reason: reason.label(),
                source,
            }),
        }
    }
}

impl fmt::Display for PodGcKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            PodGcKey::Pod(key) => write!(f, "pod {key}"),
            PodGcKey::Node(name) => write!(f, "node {name}"),
            PodGcKey::Terminated => f.write_str("terminated pods"),
        }
    }
}
