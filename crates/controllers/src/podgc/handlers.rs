//! The event handlers: Pod and Node changes turned into work keys, at the moment they are due —
//! where kube-controller-manager looks at every Pod every 20 s.
//!
//! Contract:
//! - A Pod is judged ([`decide::judge`]) against the node cache when it is added or changes:
//!   to be force-deleted → its key now; bound to a node absent from the cache → the node's
//!   key after the quarantine, counted from when the node was first seen missing
//!   ([`Quarantines`]).
//! - A Node that appears ends its quarantine; one that changes or appears has its Pods judged
//!   again (a node turning not-ready and out-of-service); one that is deleted starts the
//!   quarantine of its name, if Pods are bound to it.
//! - The handlers count the cached terminated Pods, and queue the threshold's key whenever a
//!   terminated Pod arrives while the count is above `--terminated-pod-gc-threshold`.

use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use chrono::{DateTime, Utc};
use parking_lot::Mutex;

use super::decide::{self, NodeView, Verdict};
use super::facts::{NodeFacts, PodFacts};
use super::{PodGcKey, BY_NODE};
use crate::deleted::SharedFeed;
use crate::settled::Settled;
use kube_gc_core::clock::SharedClock;
use kube_gc_runtime::cache::{Deleted, ObjectKey, Store};
use kube_gc_runtime::informer::EventHandler;
use kube_gc_runtime::workqueue::WorkQueue;

/// Since when each node missing from the cache has been missing.
#[derive(Debug, Default)]
pub struct Quarantines {
    since: Mutex<HashMap<String, DateTime<Utc>>>,
}

impl Quarantines {
    /// When `node` was first seen missing, recording `now` if it was not yet.
    pub fn begin(&self, node: &str, now: DateTime<Utc>) -> DateTime<Utc> {
        *self.since.lock().entry(node.to_owned()).or_insert(now)
    }

    /// Since when `node` has been missing, if it is.
    pub fn since(&self, node: &str) -> Option<DateTime<Utc>> {
        self.since.lock().get(node).copied()
    }

    /// `node` is no longer in quarantine (it appeared, or its Pods were handled).
    pub fn end(&self, node: &str) {
        self.since.lock().remove(node);
    }
}

/// What the handlers share with the workers.
pub(super) struct Watching {
    pub(super) pods: Arc<Store<PodFacts>>,
    pub(super) nodes: Arc<Store<NodeFacts>>,
    pub(super) queue: WorkQueue<PodGcKey>,
    pub(super) clock: SharedClock,
    pub(super) quarantines: Arc<Quarantines>,
    /// How long a missing node is waited for before it is read.
    pub(super) quarantine: Duration,
    pub(super) terminated: Arc<AtomicUsize>,
    pub(super) threshold: usize,
    /// The Pods force-deleted whose deletion the cache has not seen yet.
    pub(super) forced: Settled,
    /// Where each force deletion is told (notifications).
    pub(super) feed: SharedFeed,
}

impl Watching {
    /// `node` as cached, if it is.
    pub(super) fn cached_node(&self, node: &str) -> Option<Arc<NodeFacts>> {
        self.nodes.get(&ObjectKey::cluster_scoped(node))
    }

    /// Judges `pod` against the node cache and queues what is due.
    pub(super) fn schedule(&self, pod: &PodFacts) {
        if self.forced.contains(&pod.uid) {
            return;
        }
        let node = self.cached_node(&pod.node_name);
        let view = node.as_deref().map_or(NodeView::Missing, NodeView::Present);
        match decide::judge(pod, view) {
            Verdict::Keep(_) => {}
            // Being removed by the server (its DELETED is on the way): looked at again once it
            // should be gone, when the cache will say so — no request for it.
            Verdict::ForceDelete(_) => match decide::left_to_server(pod, self.clock.now()) {
                Some(left) => self.queue.add_after(PodGcKey::Pod(pod.key.clone()), left),
                None => self.queue.add(PodGcKey::Pod(pod.key.clone())),
            },
            Verdict::Quarantine { node } => self.quarantine(&node),
        }
    }

    /// Queues `node`'s key for the end of its quarantine.
    pub(super) fn quarantine(&self, node: &str) {
        let now = self.clock.now();
        let since = self.quarantines.begin(node, now);
        let left = decide::quarantine_left(since, now, self.quarantine).unwrap_or_default();
        self.queue.add_after(PodGcKey::Node(node.to_owned()), left);
    }

    /// The cached Pods bound to `node`.
    pub(super) fn pods_on(&self, node: &str) -> Vec<Arc<PodFacts>> {
        self.pods.by_index(BY_NODE, node).unwrap_or_default()
    }

    fn count(&self, before: Option<&PodFacts>, after: Option<&PodFacts>) {
        let was = before.is_some_and(|p| p.phase.is_terminated());
        let is = after.is_some_and(|p| p.phase.is_terminated());
        match (was, is) {
            (false, true) => {
                let count = self.terminated.fetch_add(1, Ordering::Relaxed) + 1;
                if self.threshold > 0 && count > self.threshold {
                    self.queue.add(PodGcKey::Terminated);
                }
            }
            (true, false) => {
                self.terminated.fetch_sub(1, Ordering::Relaxed);
            }
            _ => {}
        }
    }
}

/// The Pod informer's handler.
pub(super) struct OnPods(pub(super) Arc<Watching>);

impl EventHandler<PodFacts> for OnPods {
    async fn on_add(&mut self, pod: Arc<PodFacts>) {
        self.0.count(None, Some(&pod));
        self.0.schedule(&pod);
    }

    async fn on_update(&mut self, old: Arc<PodFacts>, pod: Arc<PodFacts>) {
        self.0.count(Some(&old), Some(&pod));
        self.0.schedule(&pod);
    }

    async fn on_delete(&mut self, deleted: Deleted<PodFacts>) {
        self.0.count(Some(deleted.object()), None);
        self.0.forced.forget(&deleted.object().uid);
    }
}

/// The Node informer's handler.
pub(super) struct OnNodes(pub(super) Arc<Watching>);

impl EventHandler<NodeFacts> for OnNodes {
    async fn on_add(&mut self, node: Arc<NodeFacts>) {
        self.0.quarantines.end(&node.name);
        self.rejudge(&node.name);
    }

    async fn on_update(&mut self, old: Arc<NodeFacts>, node: Arc<NodeFacts>) {
        if old.ready != node.ready || old.out_of_service != node.out_of_service {
            self.rejudge(&node.name);
        }
    }

    async fn on_delete(&mut self, deleted: Deleted<NodeFacts>) {
        let name = &deleted.object().name;
        if !self.0.pods_on(name).is_empty() {
            self.0.quarantine(name);
        }
    }
}

impl OnNodes {
    fn rejudge(&self, node: &str) {
        for pod in self.0.pods_on(node) {
            self.0.schedule(&pod);
        }
    }
}
