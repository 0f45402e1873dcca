//! [`GcView`]: the garbage collector's dependency graph, read for `/debug/explain`.
//!
//! Contract:
//! - The object is the graph's observed node of the asked type, namespace and name (found by
//!   the UID another cache gave, else by a scan of the graph).
//! - Each owner gets the verdict the collector's graph gives it (`owners.rs`): observed and
//!   present → exists (waiting, if it deletes its dependents first); observed deleted, or
//!   observed in another namespace → absent; another observed object under its name → deleted
//!   and re-created. An owner the graph never observed is absent when its type is monitored and
//!   synced (the collector confirms with a GET before acting, which this page does not make),
//!   and unknown when its type is not monitored or not synced yet.
//! - The decision and the chain of blockers are `decide`'s, over the graph. The graph keeps of
//!   an object's deletion only that it has started and the `foregroundDeletion` and `orphan`
//!   finalizers: its time and any other finalizer are said to be unknown.
//! - Everything is read under one graph read lock, released before the page is printed.

use std::collections::HashMap;
use std::sync::Arc;

use chrono::{DateTime, Utc};

use crate::explain::decide::{
    decision, deletion, gc_decision, Deleting, Dependent, DependentIndex, GcFacts,
    GARBAGE_COLLECTOR,
};
use crate::explain::gather::OwnerState;
use crate::explain::VerdictKind;
use crate::selection::ControllerSelection;
use kube_gc_client::Discovery;
use kube_gc_controllers::garbagecollector::graph::{
    Graph, Node, Presence, FOREGROUND_FINALIZER, ORPHAN_FINALIZER,
};
use kube_gc_controllers::garbagecollector::identity::{GroupKind, OwnerLink};
use kube_gc_controllers::garbagecollector::GcHandle;

use super::{CacheView, Found, LiveTarget, View};

/// The garbage collector's graph.
pub struct GcView {
    handle: GcHandle,
}

impl GcView {
    /// A view of the collector behind `handle`.
    pub fn new(handle: GcHandle) -> GcView {
        GcView { handle }
    }
}

/// What the owners' verdicts are read with, beside the graph — read before the graph is
/// locked, so that no other lock is taken under it.
struct Context {
    discovery: Arc<Discovery>,
    monitored: HashMap<GroupKind, bool>,
}

impl Context {
    fn of(handle: &GcHandle) -> Context {
        Context {
            discovery: handle.discovery(),
            monitored: handle.monitored().into_iter().collect(),
        }
    }

    /// What the collector holds, with `objects` in its graph.
    fn holds(&self, objects: usize) -> String {
        let synced = self.monitored.values().filter(|synced| **synced).count();
        format!(
            "watches every deletable resource ({objects} objects in its graph; {synced} of {} types synced)",
            self.monitored.len()
        )
    }
}

impl CacheView for GcView {
    fn controller(&self) -> &'static str {
        GARBAGE_COLLECTOR
    }

    fn holds(&self) -> String {
        Context::of(&self.handle).holds(self.handle.graph_len())
    }

    fn view(&self, target: &LiveTarget, _now: DateTime<Utc>) -> View {
        let context = Context::of(&self.handle);
        self.handle.read_graph(|graph| match find(graph, target) {
            Some(node) => node_view(graph, node, &context, &target.running),
            None => {
                let why = format!("not in its graph: it {}", context.holds(graph.len()));
                View {
                    decision: decision(GARBAGE_COLLECTOR, false, VerdictKind::Keep, why),
                    found: None,
                }
            }
        })
    }
}

/// The observed node of `target`.
fn find<'g>(graph: &'g Graph, target: &LiveTarget) -> Option<&'g Node> {
    let is_it = |node: &&Node| {
        let id = &node.identity;
        node.presence == Presence::Observed
            && id.gvk.group() == target.resource.group
            && *id.gvk.kind == *target.resource.kind
            && id.namespace.as_deref() == target.namespace.as_deref()
            && *id.name == *target.name
    };
    let by_uid = target.uid.as_deref().and_then(|uid| graph.node(uid));
    by_uid
        .filter(is_it)
        .or_else(|| graph.nodes().find(|node| is_it(node)))
}

fn node_view(graph: &Graph, node: &Node, context: &Context, running: &ControllerSelection) -> View {
    let owners: Vec<OwnerState> = node
        .owners
        .iter()
        .map(|link| owner_state(graph, node, link, context))
        .collect();
    let mut decision = gc_decision(&GcFacts {
        owners: &owners,
        being_deleted: node.being_deleted,
        dependents: node.dependents.len(),
        orphan_finalizer: node.orphan_finalizer,
        foreground_finalizer: node.foreground_finalizer,
    });
    let never_observed = node.owners.iter().any(|link| {
        graph
            .node(&link.uid)
            .is_none_or(|owner| owner.presence == Presence::Virtual)
    });
    if never_observed {
        decision.details.push(
            "from its graph: an owner it never observed counts as absent here (the collector GETs it before acting)"
                .to_owned(),
        );
    }
    let uid = node.identity.uid.to_string();
    let deletion = node
        .being_deleted
        .then(|| deletion(&uid, deleting(node), &GraphIndex(graph), running));
    View {
        decision,
        found: Some(Found {
            uid,
            being_deleted: node.being_deleted,
            deletion,
            namespace: None,
        }),
    }
}

/// What the graph keeps of a node's deletion.
fn deleting(node: &Node) -> Deleting {
    Deleting {
        since: None,
        finalizers: finalizers(node),
        unknown: Some(
            "its deletion time and any finalizer other than foregroundDeletion and orphan are \
             not in kube-gc's caches (the collector's graph keeps only those two)"
                .to_owned(),
        ),
    }
}

fn finalizers(node: &Node) -> Vec<String> {
    let flags = [
        (node.foreground_finalizer, FOREGROUND_FINALIZER),
        (node.orphan_finalizer, ORPHAN_FINALIZER),
    ];
    flags
        .into_iter()
        .filter(|(set, _)| *set)
        .map(|(_, name)| name.to_owned())
        .collect()
}

/// The verdict the graph gives one owner of `dependent`.
fn owner_state(graph: &Graph, dependent: &Node, link: &OwnerLink, context: &Context) -> OwnerState {
    let reference = link.to_reference();
    let Some(found) = context
        .discovery
        .resource_for_kind(&link.gvk.api_version, link.kind())
    else {
        return OwnerState::NotServed { reference };
    };
    let namespaced = found.resource.namespaced;
    let dependent_namespace = dependent.identity.namespace.as_deref();
    if dependent_namespace.is_none() && namespaced {
        return OwnerState::InvalidClusterScoped { reference };
    }
    let expected = dependent_namespace.filter(|_| namespaced);
    let owner = graph
        .node(&link.uid)
        .filter(|o| o.presence != Presence::Virtual);
    match owner {
        Some(o)
            if o.presence == Presence::Observed && o.identity.namespace.as_deref() == expected =>
        {
            OwnerState::Exists {
                deleting_dependents: o.deleting_dependents,
                reference,
            }
        }
        Some(_) => absent(graph, link, expected, reference),
        None => unobserved(graph, link, expected, reference, context),
    }
}

/// An owner the graph never observed: absent if its type is monitored and synced.
fn unobserved(
    graph: &Graph,
    link: &OwnerLink,
    expected: Option<&str>,
    reference: kube_gc_api::OwnerReference,
    context: &Context,
) -> OwnerState {
    let why = match context.monitored.get(&link.gvk.group_kind()) {
        Some(true) => return absent(graph, link, expected, reference),
        Some(false) => "its kind is not listed into the collector's graph yet: the collector decides once it is",
        None => "its kind is not watched by the collector: only a GET can tell whether it exists (the collector makes one; this page does not)",
    };
    OwnerState::NotCached {
        reference,
        why: why.to_owned(),
    }
}

/// Absent, or re-created when another observed object holds its name.
fn absent(
    graph: &Graph,
    link: &OwnerLink,
    expected: Option<&str>,
    reference: kube_gc_api::OwnerReference,
) -> OwnerState {
    let same_name = graph.nodes().find(|n| {
        let id = &n.identity;
        n.presence == Presence::Observed
            && id.uid != link.uid
            && id.gvk.group_kind() == link.gvk.group_kind()
            && id.namespace.as_deref() == expected
            && id.name == link.name
    });
    match same_name {
        Some(n) => OwnerState::Recreated {
            uid: n.identity.uid.to_string(),
            reference,
        },
        None => OwnerState::Absent { reference },
    }
}

/// The graph as a source of dependents: it knows of each finalizer only the collector's two.
struct GraphIndex<'g>(&'g Graph);

impl DependentIndex for GraphIndex<'_> {
    fn dependents(&self, uid: &str) -> Vec<Dependent> {
        let graph = self.0;
        let Some(owner) = graph.node(uid) else {
            return Vec::new();
        };
        let mut found: Vec<Dependent> = owner
            .dependents
            .iter()
            .filter_map(|d| graph.node(d))
            .filter(|d| d.presence == Presence::Observed)
            .map(|d| dependent(d, uid))
            .collect();
        found.sort_by(|a, b| a.object.cmp(&b.object));
        found
    }
}

fn dependent(node: &Node, owner: &str) -> Dependent {
    let id = &node.identity;
    let object = match &id.namespace {
        Some(ns) => format!("{} {ns}/{}", id.gvk.kind, id.name),
        None => format!("{} {}", id.gvk.kind, id.name),
    };
    Dependent {
        uid: id.uid.to_string(),
        object,
        blocks: node
            .owner_link(owner)
            .is_some_and(OwnerLink::blocks_owner_deletion),
        being_deleted: node.being_deleted,
        finalizers: finalizers(node),
        all_finalizers_known: false,
    }
}
