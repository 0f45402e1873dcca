//! What the collector will delete: the objects its graph *proves* have no owner left — every
//! owner reference names an owner the graph saw deleted (or found absent and dropped), one
//! observed in another namespace, or one being deleted in the foreground — and that are not
//! being deleted already. Each is due now: the collector deletes as soon as a worker reaches
//! it, so these are the deletions queued or in progress, never a schedule.
//!
//! Contract:
//! - Pure over the graph, with [`action`](super::owners::action)'s rule: no solid owner means
//!   a deletion. An owner the graph has only heard of (virtual: the worker must look it up)
//!   leaves the object out — whether it exists takes a request, and a count must not guess.
//! - A cluster-scoped object naming a namespaced owner is never collected, so never pending.
//! - It walks the whole graph under its read lock (the builder waits meanwhile): one pass,
//!   a hash lookup per owner reference, no allocation but for the few objects listed — cheap
//!   enough for a scrape, not for a hot path.

use crate::pending::{Pending, PendingDeletion, PendingQuery, PendingTally};

use super::graph::{Graph, Node, Presence};
use super::CONTROLLER;

/// The reason of a garbage collector's deletion.
pub const OWNERS_GONE: &str = "owners_gone";

/// The deletions the graph proves are due.
pub fn pending(graph: &Graph, query: &PendingQuery) -> Pending {
    let mut tally = PendingTally::new(query, CONTROLLER, None, false);
    for node in graph.nodes() {
        if proven_ownerless(graph, node) {
            tally.add(PendingDeletion {
                kind: node.identity.gvk.kind.to_string(),
                namespace: node.identity.namespace.as_deref().map(str::to_owned),
                name: node.identity.name.to_string(),
                uid: node.identity.uid.to_string(),
                at: None,
                reason: OWNERS_GONE,
            });
        }
    }
    tally.finish()
}

/// Whether `node` exists, is not being deleted, and every owner it names is proven gone or
/// waiting for its dependents.
fn proven_ownerless(graph: &Graph, node: &Node) -> bool {
    if node.presence != Presence::Observed || node.being_deleted || node.owners.is_empty() {
        return false;
    }
    node.owners.iter().all(|link| {
        let Some(owner) = graph.node(&link.uid) else {
            // Dropped: a virtual owner a worker found absent.
            return true;
        };
        match owner.presence {
            Presence::Gone => true,
            Presence::Virtual => false,
            Presence::Observed => {
                let owner_namespace = owner.identity.namespace.as_deref();
                let dependent_namespace = node.identity.namespace.as_deref();
                if owner_namespace.is_some() && dependent_namespace.is_none() {
                    // Never collected (upstream's rule): not pending either.
                    return false;
                }
                let misplaced = owner_namespace.is_some() && owner_namespace != dependent_namespace;
                misplaced || owner.deleting_dependents
            }
        }
    })
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;
    use std::time::Duration;

    use chrono::{DateTime, Utc};

    use super::*;
    use crate::garbagecollector::builder::{apply, Effects, GraphEvent};
    use crate::garbagecollector::identity::Gvk;
    use kube_gc_api::{ObjectMeta, OwnerReference, PartialObjectMetadata};

    fn gvk(api_version: &str, kind: &str) -> Arc<Gvk> {
        Arc::new(Gvk {
            api_version: api_version.into(),
            kind: kind.into(),
        })
    }

    fn object(name: &str, uid: &str, owners: &[&str]) -> PartialObjectMetadata {
        PartialObjectMetadata {
            metadata: ObjectMeta {
                name: Some(name.into()),
                namespace: Some("default".into()),
                uid: Some(uid.into()),
                resource_version: Some("1".into()),
                owner_references: owners
                    .iter()
                    .map(|owner| OwnerReference {
                        api_version: "apps/v1".into(),
                        kind: "ReplicaSet".into(),
                        name: format!("rs-{owner}"),
                        uid: (*owner).into(),
                        ..Default::default()
                    })
                    .collect(),
                ..Default::default()
            },
            ..Default::default()
        }
    }

    fn event(graph: &mut Graph, event: GraphEvent) {
        apply(graph, event, &mut Effects::default());
    }

    fn pod(graph: &mut Graph, name: &str, owners: &[&str]) {
        let object = object(name, &format!("uid-{name}"), owners);
        event(
            graph,
            GraphEvent::Upserted {
                gvk: gvk("v1", "Pod"),
                object,
            },
        );
    }

    fn replica_set(uid: &str) -> PartialObjectMetadata {
        object(&format!("rs-{uid}"), uid, &[])
    }

    fn query() -> PendingQuery {
        PendingQuery {
            now: DateTime::<Utc>::from_timestamp(1_800_000_000, 0).unwrap_or_default(),
            horizons: vec![Duration::from_secs(3600)],
            limit: 10,
        }
    }

    fn pending_names(graph: &Graph) -> Vec<String> {
        let mut names: Vec<String> = pending(graph, &query())
            .earliest
            .into_iter()
            .map(|d| d.name)
            .collect();
        names.sort();
        names
    }

    #[test]
    fn only_what_the_graph_proves_ownerless_is_pending() {
        let mut graph = Graph::new();
        let rs = gvk("apps/v1", "ReplicaSet");
        for uid in ["live", "gone", "fg"] {
            event(
                &mut graph,
                GraphEvent::Upserted {
                    gvk: Arc::clone(&rs),
                    object: replica_set(uid),
                },
            );
        }
        pod(&mut graph, "of-live", &["live"]);
        pod(&mut graph, "of-gone", &["gone"]);
        pod(&mut graph, "of-gone-and-live", &["gone", "live"]);
        pod(&mut graph, "of-unknown", &["never-seen"]);
        pod(&mut graph, "of-foreground", &["fg"]);
        pod(&mut graph, "no-owner", &[]);
        event(
            &mut graph,
            GraphEvent::Deleted {
                gvk: Arc::clone(&rs),
                object: replica_set("gone"),
            },
        );
        let mut deleting = replica_set("fg");
        deleting.metadata.deletion_timestamp = Some(kube_gc_api::Time::now());
        deleting.metadata.finalizers = vec!["foregroundDeletion".into()];
        event(
            &mut graph,
            GraphEvent::Upserted {
                gvk: Arc::clone(&rs),
                object: deleting,
            },
        );
        assert_eq!(pending_names(&graph), ["of-foreground", "of-gone"]);
        // The worker finds the virtual owner absent: its dependent is proven ownerless.
        event(
            &mut graph,
            GraphEvent::VirtualDeleted {
                uid: "never-seen".into(),
            },
        );
        assert_eq!(
            pending_names(&graph),
            ["of-foreground", "of-gone", "of-unknown"]
        );
        let counted = pending(&graph, &query());
        assert_eq!((counted.due_now, counted.within.clone()), (3, vec![3]));
        assert!(counted
            .earliest
            .iter()
            .all(|d| d.at.is_none() && d.reason == OWNERS_GONE));
        assert_eq!(counted.controller, "garbagecollector");
        assert_eq!(counted.policy, None);
    }
}
