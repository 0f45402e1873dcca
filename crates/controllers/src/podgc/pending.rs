//! What the pod garbage collector will force-delete, and when, read from its caches with its own
//! rules ([`judge`], [`excess_terminated`]): a Pod the rules force-delete is due now; a Pod on a
//! node missing from the cache is due when the node's quarantine ends (if a read then finds the
//! node gone — a node that comes back keeps its Pods); the terminated Pods above the threshold
//! are due now. Each Pod once, at its earliest.
//!
//! Contract: pure over the caches (no request), every Pod judged once; the caller passes the
//! quarantine of each missing node as the handlers recorded it (a node not recorded yet counts
//! from now).

use std::collections::HashMap;
use std::sync::Arc;

use chrono::{DateTime, Utc};

use crate::pending::{Pending, PendingDeletion, PendingQuery, PendingTally};
use kube_gc_runtime::cache::{ObjectKey, Store};

use super::decide::{excess_terminated, judge, NodeView, Verdict, QUARANTINE};
use super::facts::{NodeFacts, PodFacts};
use super::CONTROLLER;

/// The pod garbage collector's deletions to come.
pub fn pending(
    pods: &[Arc<PodFacts>],
    nodes: &Store<NodeFacts>,
    quarantined_since: impl Fn(&str) -> Option<DateTime<Utc>>,
    threshold: usize,
    query: &PendingQuery,
) -> Pending {
    let now = query.now;
    let mut due: HashMap<&str, (Option<DateTime<Utc>>, &'static str, &PodFacts)> = HashMap::new();
    for pod in pods {
        let node = nodes.get(&ObjectKey::cluster_scoped(&pod.node_name));
        let view = match &node {
            Some(node) => NodeView::Present(node),
            None => NodeView::Missing,
        };
        let at = match judge(pod, view) {
            Verdict::Keep(_) => continue,
            Verdict::ForceDelete(reason) => (None, reason.label()),
            Verdict::Quarantine { node } => {
                let since = quarantined_since(&node).unwrap_or(now);
                let over = since + chrono::Duration::from_std(QUARANTINE).unwrap_or_default();
                (Some(over), super::Reason::Orphaned.label())
            }
        };
        due.insert(&pod.uid, (at.0, at.1, pod));
    }
    for pod in excess_terminated(pods.iter().map(|p| &**p), threshold) {
        due.insert(&pod.uid, (None, super::Reason::Terminated.label(), pod));
    }
    let mut tally = PendingTally::new(query, CONTROLLER, None, false);
    for (at, reason, pod) in due.into_values() {
        tally.add(PendingDeletion {
            kind: "Pod".to_owned(),
            namespace: pod.key.namespace().map(str::to_owned),
            name: pod.key.name().to_owned(),
            uid: pod.uid.clone(),
            at,
            reason,
        });
    }
    tally.finish()
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use serde_json::json;

    use super::*;
    use crate::podgc::facts::PodPhase;

    fn pod(
        name: &str,
        node: &str,
        phase: PodPhase,
        deleting: bool,
        created_minute: i64,
    ) -> Arc<PodFacts> {
        Arc::new(PodFacts {
            key: ObjectKey::new("ci", name),
            uid: format!("uid-{name}"),
            resource_version: "1".into(),
            created: DateTime::from_timestamp(1_800_000_000 + created_minute * 60, 0),
            deleting,
            node_name: node.into(),
            phase,
            evicted: false,
            disruption_target: None,
            removed_by_server: None,
        })
    }

    fn nodes() -> Store<NodeFacts> {
        let store = Store::new();
        let ready: NodeFacts = serde_json::from_value(json!({"metadata": {"name": "ready", "uid": "n1",
            "resourceVersion": "1"}, "status": {"conditions": [{"type": "Ready", "status": "True"}]}}))
        .expect("a node");
        store.apply_added(ready);
        store
    }

    #[test]
    fn force_deletions_are_due_now_and_a_missing_nodes_pods_when_its_quarantine_ends() {
        let now = DateTime::from_timestamp(1_800_000_000, 0).unwrap_or_default();
        let pods = vec![
            pod("running", "ready", PodPhase::Running, false, 0),
            pod("never-scheduled", "", PodPhase::Pending, true, 1),
            pod("orphan", "gone", PodPhase::Running, false, 2),
            pod("old-done", "ready", PodPhase::Succeeded, false, 3),
            pod("new-done", "ready", PodPhase::Succeeded, false, 4),
        ];
        let query = PendingQuery {
            now,
            horizons: vec![Duration::from_secs(30), Duration::from_secs(60)],
            limit: 10,
        };
        let since = now - chrono::Duration::seconds(5);
        let pending = pending(&pods, &nodes(), |_| Some(since), 1, &query);
        assert_eq!(pending.controller, "podgc");
        assert_eq!(pending.due_now, 2, "{pending:#?}");
        assert_eq!(pending.within, [2, 3], "the orphan goes 35 s from now");
        let names: Vec<&str> = pending.earliest.iter().map(|d| d.name.as_str()).collect();
        assert_eq!(names, ["never-scheduled", "old-done", "orphan"]);
        assert_eq!(pending.earliest[1].reason, "terminated");
        assert_eq!(pending.earliest[2].reason, "orphaned");
    }
}
