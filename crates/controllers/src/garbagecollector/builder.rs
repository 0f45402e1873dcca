//! The graph builder: the one task that writes the graph, from the monitors' events and the
//! workers' virtual deletions, and that decides what the workers look at next.
//!
//! Contract:
//! - [`apply`] is the whole of the graph's update rules, synchronous and pure apart from the
//!   graph it mutates; what the workers must look at is returned as [`Effects`]. The task
//!   ([`run`]) only takes events from the channel, applies them under the write lock, and
//!   queues the effects.
//! - Added or updated object: insert or refresh its node; owners it newly references gain it as
//!   a dependent (an owner the graph does not know becomes a virtual node and is queued for
//!   verification; an owner the graph saw deleted makes the object garbage at once, so it is
//!   queued); owners it no longer references lose it, and are queued if they were waiting for
//!   their dependents (Foreground) — as are owners whose `blockOwnerDeletion` was turned off.
//!   Transitions: newly asking to orphan (deletionTimestamp + `orphan`) → attempt-to-orphan;
//!   newly asking for Foreground (deletionTimestamp + `foregroundDeletion`) → marked
//!   deleting-dependents, itself and all its dependents queued to attempt-to-delete.
//! - Deleted object: its owners lose it (waiting owners are queued); its dependents are
//!   queued; the node stays as a *gone* node while dependents reference it.
//! - A complete list (initial or relist) is a set of adds/updates, then a deletion for every
//!   observed node of that type the list no longer holds, then the type counts as synced.
//! - Virtual deletion (a worker found a virtual owner absent): the virtual node is removed and
//!   its dependents queued.

use std::collections::HashSet;
use std::sync::Arc;

use tokio::sync::mpsc::UnboundedReceiver;
use tokio_util::sync::CancellationToken;

use super::graph::{Graph, Observed, Presence};
use super::identity::{GroupKind, Gvk, OwnerLink, Uid};
use super::Shared;
use kube_gc_api::PartialObjectMetadata;

/// Most events applied under one write lock, so workers are never starved of the read lock.
const BATCH: usize = 256;

/// A change for the graph builder.
#[derive(Debug)]
pub enum GraphEvent {
    /// A complete list of one type (initial list or relist).
    Replaced {
        /// The type listed.
        gvk: Arc<Gvk>,
        /// Every object of it.
        objects: Vec<PartialObjectMetadata>,
    },
    /// An object was added or modified.
    Upserted {
        /// Its type.
        gvk: Arc<Gvk>,
        /// Its metadata.
        object: PartialObjectMetadata,
    },
    /// An object was deleted.
    Deleted {
        /// Its type.
        gvk: Arc<Gvk>,
        /// Its final metadata.
        object: PartialObjectMetadata,
    },
    /// A worker found a virtual owner absent (not found, or another UID under its name).
    VirtualDeleted {
        /// The virtual node's UID.
        uid: Uid,
    },
}

/// What the workers must look at after some events.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Effects {
    /// Nodes to queue on attempt-to-delete.
    pub attempt_to_delete: Vec<Uid>,
    /// Nodes to queue on attempt-to-orphan.
    pub attempt_to_orphan: Vec<Uid>,
    /// Types whose complete list was applied.
    pub synced: Vec<GroupKind>,
}

/// Applies one event to the graph.
pub fn apply(graph: &mut Graph, event: GraphEvent, effects: &mut Effects) {
    match event {
        GraphEvent::Replaced { gvk, objects } => {
            let mut listed = HashSet::with_capacity(objects.len());
            for object in &objects {
                if let Some(observed) = graph.observe(&gvk, object) {
                    listed.insert(Arc::clone(&observed.identity.uid));
                    upsert(graph, observed, effects);
                }
            }
            for uid in graph.observed_of(&gvk) {
                if !listed.contains(&uid) {
                    delete(graph, &uid, effects);
                }
            }
            effects.synced.push(gvk.group_kind());
        }
        GraphEvent::Upserted { gvk, object } => {
            if let Some(observed) = graph.observe(&gvk, &object) {
                upsert(graph, observed, effects);
            }
        }
        GraphEvent::Deleted { gvk, object } => {
            if let Some(observed) = graph.observe(&gvk, &object) {
                delete(graph, &observed.identity.uid, effects);
            }
        }
        GraphEvent::VirtualDeleted { uid } => {
            if let Some(dependents) = graph.remove_virtual(&uid) {
                effects.attempt_to_delete.extend(dependents);
            }
        }
    }
}

fn upsert(graph: &mut Graph, observed: Observed, effects: &mut Effects) {
    let identity = observed.identity.clone();
    let uid = Arc::clone(&identity.uid);
    let (was_orphaning, was_foreground) = match graph.node(&uid) {
        // A UID is never reused: an event about an object already seen deleted is stale.
        Some(node) if node.presence == Presence::Gone => return,
        Some(node) => (
            node.being_deleted && node.orphan_finalizer,
            node.being_deleted && node.foreground_finalizer,
        ),
        None => (false, false),
    };
    let orphaning = observed.being_deleted && observed.orphan_finalizer;
    let foreground = observed.being_deleted && observed.foreground_finalizer;
    let new_owners = observed.owners.clone();
    let (before, old_owners) = graph.put_observed(observed);
    if before == Some(Presence::Virtual) {
        // Dependents that named this owner before it was seen may name it from a namespace it
        // cannot own them from: they must be judged.
        for dependent in graph.dependent_uids(&uid) {
            if graph.node(&dependent).is_some_and(|d| {
                misplaced(
                    identity.namespace.as_deref(),
                    d.identity.namespace.as_deref(),
                )
            }) {
                effects.attempt_to_delete.push(dependent);
            }
        }
    }

    for owner in new_owners.iter() {
        match find(&old_owners, owner) {
            None => match graph.link(&identity, owner) {
                (Presence::Virtual, true) => effects.attempt_to_delete.push(Arc::clone(&owner.uid)),
                (Presence::Virtual, false) => {}
                // Garbage at once: the owner is gone, waits for its dependents to go, or lives
                // in a namespace this object cannot be owned from.
                _ if judge_now(graph, &identity, &owner.uid) => {
                    effects.attempt_to_delete.push(Arc::clone(&uid))
                }
                _ => {}
            },
            Some(old) if old.blocks_owner_deletion() && !owner.blocks_owner_deletion() => {
                queue_if_waiting(graph, &owner.uid, effects);
            }
            Some(_) => {}
        }
    }
    for owner in old_owners.iter() {
        if find(&new_owners, owner).is_none() && graph.unlink(&uid, &owner.uid) {
            effects.attempt_to_delete.push(Arc::clone(&owner.uid));
        }
    }

    if orphaning && !was_orphaning {
        effects.attempt_to_orphan.push(Arc::clone(&uid));
    }
    if foreground && !was_foreground {
        graph.mark_deleting_dependents(&uid);
        effects.attempt_to_delete.push(Arc::clone(&uid));
        effects.attempt_to_delete.extend(graph.dependent_uids(&uid));
    }
}

fn delete(graph: &mut Graph, uid: &str, effects: &mut Effects) {
    let Some((owners, dependents)) = graph.mark_gone(uid) else {
        return;
    };
    for owner in owners.iter() {
        if graph.unlink(uid, &owner.uid) {
            effects.attempt_to_delete.push(Arc::clone(&owner.uid));
        }
    }
    effects.attempt_to_delete.extend(dependents);
}

/// Whether a dependent newly linked to `owner` must be judged now.
fn judge_now(graph: &Graph, dependent: &super::identity::ObjectIdentity, owner: &str) -> bool {
    graph.node(owner).is_some_and(|o| {
        o.presence == Presence::Gone
            || o.deleting_dependents
            || misplaced(
                o.identity.namespace.as_deref(),
                dependent.namespace.as_deref(),
            )
    })
}

/// A namespaced owner can only own objects of its own namespace.
fn misplaced(owner_namespace: Option<&str>, dependent_namespace: Option<&str>) -> bool {
    owner_namespace.is_some() && owner_namespace != dependent_namespace
}

fn find<'a>(links: &'a [OwnerLink], wanted: &OwnerLink) -> Option<&'a OwnerLink> {
    links.iter().find(|l| l.uid == wanted.uid)
}

fn queue_if_waiting(graph: &Graph, owner: &Uid, effects: &mut Effects) {
    if graph.node(owner).is_some_and(|n| n.deleting_dependents) {
        effects.attempt_to_delete.push(Arc::clone(owner));
    }
}

/// The graph builder task: applies events until `shutdown` fires or every sender is gone.
pub(super) async fn run(
    shared: Arc<Shared>,
    mut events: UnboundedReceiver<GraphEvent>,
    shutdown: CancellationToken,
) {
    let mut batch = Vec::with_capacity(BATCH);
    loop {
        let received = tokio::select! {
            () = shutdown.cancelled() => return,
            n = events.recv_many(&mut batch, BATCH) => n,
        };
        if received == 0 {
            return;
        }
        let mut effects = Effects::default();
        let nodes = {
            let mut graph = shared.graph.write();
            for event in batch.drain(..) {
                apply(&mut graph, event, &mut effects);
            }
            graph.len()
        };
        shared.metrics.set_graph_nodes(nodes);
        for uid in effects.attempt_to_delete {
            shared.attempt_to_delete.add(uid);
        }
        for uid in effects.attempt_to_orphan {
            shared.attempt_to_orphan.add(uid);
        }
        if !effects.synced.is_empty() {
            for group_kind in &effects.synced {
                shared.sync.mark_synced(group_kind);
            }
            shared.synced_changed.notify_waiters();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use kube_gc_api::{ObjectMeta, OwnerReference};

    fn gvk(api_version: &str, kind: &str) -> Arc<Gvk> {
        Arc::new(Gvk {
            api_version: api_version.into(),
            kind: kind.into(),
        })
    }

    fn object(name: &str, uid: &str, owners: &[(&str, bool)]) -> PartialObjectMetadata {
        PartialObjectMetadata {
            metadata: ObjectMeta {
                name: Some(name.into()),
                namespace: Some("default".into()),
                uid: Some(uid.into()),
                resource_version: Some("1".into()),
                owner_references: owners
                    .iter()
                    .map(|(owner, block)| OwnerReference {
                        api_version: "apps/v1".into(),
                        kind: "ReplicaSet".into(),
                        name: format!("rs-{owner}"),
                        uid: (*owner).into(),
                        block_owner_deletion: Some(*block),
                        ..Default::default()
                    })
                    .collect(),
                ..Default::default()
            },
            ..Default::default()
        }
    }

    fn upserted(kind: &str, object: PartialObjectMetadata) -> GraphEvent {
        let gvk = if kind == "Pod" {
            gvk("v1", "Pod")
        } else {
            gvk("apps/v1", "ReplicaSet")
        };
        GraphEvent::Upserted { gvk, object }
    }

    fn run_events(graph: &mut Graph, events: Vec<GraphEvent>) -> Effects {
        let mut effects = Effects::default();
        for event in events {
            apply(graph, event, &mut effects);
        }
        effects
    }

    fn uids(list: &[Uid]) -> Vec<&str> {
        list.iter().map(|u| &**u).collect()
    }

    #[test]
    fn an_unknown_owner_becomes_a_virtual_node_queued_for_verification() {
        let mut graph = Graph::new();
        let effects = run_events(
            &mut graph,
            vec![upserted("Pod", object("p", "pod-1", &[("rs-1", true)]))],
        );
        assert_eq!(uids(&effects.attempt_to_delete), ["rs-1"]);
        let owner = graph.node("rs-1").map(|n| n.presence);
        assert_eq!(owner, Some(Presence::Virtual));
        // The owner shows up: the virtual node becomes real and keeps its dependent.
        run_events(
            &mut graph,
            vec![upserted("RS", object("rs-rs-1", "rs-1", &[]))],
        );
        let owner = graph.node("rs-1");
        assert_eq!(owner.map(|n| n.presence), Some(Presence::Observed));
        assert_eq!(owner.map(|n| n.dependents.len()), Some(1));
    }

    #[test]
    fn a_deleted_owner_is_kept_as_proof_until_its_dependents_are_gone() {
        let mut graph = Graph::new();
        run_events(
            &mut graph,
            vec![
                upserted("RS", object("rs-rs-1", "rs-1", &[])),
                upserted("Pod", object("a", "pod-a", &[("rs-1", true)])),
                upserted("Pod", object("b", "pod-b", &[("rs-1", true)])),
            ],
        );
        let effects = run_events(
            &mut graph,
            vec![GraphEvent::Deleted {
                gvk: gvk("apps/v1", "ReplicaSet"),
                object: object("rs-rs-1", "rs-1", &[]),
            }],
        );
        let mut queued = uids(&effects.attempt_to_delete);
        queued.sort();
        assert_eq!(queued, ["pod-a", "pod-b"]);
        assert_eq!(graph.node("rs-1").map(|n| n.presence), Some(Presence::Gone));
        // A dependent seen after its owner's deletion is garbage at once.
        let effects = run_events(
            &mut graph,
            vec![upserted("Pod", object("c", "pod-c", &[("rs-1", true)]))],
        );
        assert_eq!(uids(&effects.attempt_to_delete), ["pod-c"]);
        for (name, uid) in [("a", "pod-a"), ("b", "pod-b"), ("c", "pod-c")] {
            run_events(
                &mut graph,
                vec![GraphEvent::Deleted {
                    gvk: gvk("v1", "Pod"),
                    object: object(name, uid, &[("rs-1", true)]),
                }],
            );
        }
        assert!(
            graph.is_empty(),
            "the gone owner leaves with its last dependent"
        );
    }

    #[test]
    fn foreground_marks_the_owner_and_queues_it_with_its_dependents() {
        let mut graph = Graph::new();
        run_events(
            &mut graph,
            vec![
                upserted("RS", object("rs-rs-1", "rs-1", &[])),
                upserted("Pod", object("a", "pod-a", &[("rs-1", true)])),
            ],
        );
        let mut owner = object("rs-rs-1", "rs-1", &[]);
        owner.metadata.deletion_timestamp = serde_json::from_str("\"2024-01-01T00:00:00Z\"").ok();
        owner.metadata.finalizers = vec!["foregroundDeletion".into()];
        let effects = run_events(&mut graph, vec![upserted("RS", owner.clone())]);
        assert_eq!(uids(&effects.attempt_to_delete), ["rs-1", "pod-a"]);
        assert!(graph.node("rs-1").is_some_and(|n| n.deleting_dependents));
        // The same state again is no new transition.
        let effects = run_events(&mut graph, vec![upserted("RS", owner)]);
        assert!(effects.attempt_to_delete.is_empty());
        // The dependent drops its block: the waiting owner is looked at again.
        let effects = run_events(
            &mut graph,
            vec![upserted("Pod", object("a", "pod-a", &[("rs-1", false)]))],
        );
        assert_eq!(uids(&effects.attempt_to_delete), ["rs-1"]);
        assert!(!graph.has_blocking_dependents("rs-1"));
    }

    #[test]
    fn orphan_transition_queues_attempt_to_orphan_once() {
        let mut graph = Graph::new();
        let mut owner = object("rs-rs-1", "rs-1", &[]);
        owner.metadata.deletion_timestamp = serde_json::from_str("\"2024-01-01T00:00:00Z\"").ok();
        owner.metadata.finalizers = vec!["orphan".into()];
        let effects = run_events(
            &mut graph,
            vec![upserted("RS", owner.clone()), upserted("RS", owner)],
        );
        assert_eq!(uids(&effects.attempt_to_orphan), ["rs-1"]);
    }

    #[test]
    fn a_relist_deletes_what_it_no_longer_holds_and_marks_the_type_synced() {
        let mut graph = Graph::new();
        let rs = gvk("apps/v1", "ReplicaSet");
        let effects = run_events(
            &mut graph,
            vec![
                GraphEvent::Replaced {
                    gvk: Arc::clone(&rs),
                    objects: vec![object("x", "rs-x", &[]), object("y", "rs-y", &[])],
                },
                GraphEvent::Replaced {
                    gvk: Arc::clone(&rs),
                    objects: vec![object("x", "rs-x", &[])],
                },
            ],
        );
        assert!(graph.node("rs-y").is_none());
        assert_eq!(effects.synced.len(), 2);
        assert_eq!(&*effects.synced[0].kind, "ReplicaSet");
    }

    #[test]
    fn a_virtual_deletion_queues_the_dependents_and_drops_the_node() {
        let mut graph = Graph::new();
        run_events(
            &mut graph,
            vec![upserted("Pod", object("p", "pod-1", &[("rs-1", true)]))],
        );
        let effects = run_events(
            &mut graph,
            vec![GraphEvent::VirtualDeleted {
                uid: Arc::from("rs-1"),
            }],
        );
        assert_eq!(uids(&effects.attempt_to_delete), ["pod-1"]);
        assert!(graph.node("rs-1").is_none());
    }
}
