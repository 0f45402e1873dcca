//! The dependency graph: every object the monitors observed, linked to its owners and
//! dependents, keyed by UID.
//!
//! Contract:
//! - Only the graph builder writes the graph (through `&mut Graph`); workers read it under a
//!   read lock and copy what they need ([`NodeView`]) before doing any I/O.
//! - A node is [`Presence::Observed`] (a monitor reported it), [`Presence::Virtual`] (named as
//!   an owner, never observed: the worker must look it up) or [`Presence::Gone`] (observed, then
//!   reported deleted). A gone node is kept only while dependents still name it, as the proof
//!   that those dependents' owner no longer exists — UIDs are never reused, so a deletion the
//!   graph saw is final, and no request is needed to confirm it.
//! - Edges are kept on both sides: a node's `owners` are its owner references, and each owner
//!   node's `dependents` holds the UIDs of the nodes that reference it.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use super::identity::{Gvk, Interner, ObjectIdentity, OwnerLink, Uid};
use kube_gc_api::PartialObjectMetadata;

/// The finalizer asking the garbage collector to orphan an object's dependents.
pub const ORPHAN_FINALIZER: &str = "orphan";
/// The finalizer asking the garbage collector to delete the dependents first.
pub const FOREGROUND_FINALIZER: &str = "foregroundDeletion";

/// What the graph knows of a node's existence.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Presence {
    /// A monitor reported the object and has not reported its deletion.
    Observed,
    /// Only named by owner references; whether it exists is unknown.
    Virtual,
    /// A monitor reported its deletion; kept while dependents still reference it.
    Gone,
}

/// One object in the graph.
#[derive(Debug)]
pub struct Node {
    /// Who it is.
    pub identity: ObjectIdentity,
    /// Existence as the graph knows it.
    pub presence: Presence,
    /// The resourceVersion last observed (empty for virtual nodes).
    pub resource_version: Box<str>,
    /// Its owner references, as last observed.
    pub owners: Box<[OwnerLink]>,
    /// The UIDs of the nodes whose owner references name this one.
    pub dependents: Dependents,
    /// `deletionTimestamp` is set.
    pub being_deleted: bool,
    /// Being deleted in the foreground: the garbage collector deletes the blocking dependents,
    /// then removes the `foregroundDeletion` finalizer.
    pub deleting_dependents: bool,
    /// Has the `orphan` finalizer.
    pub orphan_finalizer: bool,
    /// Has the `foregroundDeletion` finalizer.
    pub foreground_finalizer: bool,
}

impl Node {
    fn virtual_node(identity: ObjectIdentity) -> Node {
        Node {
            identity,
            presence: Presence::Virtual,
            resource_version: "".into(),
            owners: Box::new([]),
            dependents: Dependents::default(),
            being_deleted: false,
            deleting_dependents: false,
            orphan_finalizer: false,
            foreground_finalizer: false,
        }
    }

    /// The owner reference naming `owner`, if any.
    pub fn owner_link(&self, owner: &str) -> Option<&OwnerLink> {
        self.owners.iter().find(|o| &*o.uid == owner)
    }
}

/// The UIDs of the nodes naming one node as their owner. Most objects own nothing, so an empty
/// set costs one pointer instead of an empty hash table (48 bytes): about a tenth of a node.
// The box is the point: `None` is 8 bytes where an empty `HashSet` is 48.
#[allow(clippy::box_collection)]
#[derive(Debug, Default)]
pub struct Dependents(Option<Box<HashSet<Uid>>>);

impl Dependents {
    /// How many.
    pub fn len(&self) -> usize {
        self.0.as_ref().map_or(0, |set| set.len())
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.0.is_none()
    }

    /// Every dependent's UID, in no particular order.
    pub fn iter(&self) -> impl Iterator<Item = &Uid> {
        self.0.iter().flat_map(|set| set.iter())
    }

    /// A copy of the UIDs.
    pub fn to_vec(&self) -> Vec<Uid> {
        self.iter().cloned().collect()
    }

    fn insert(&mut self, uid: Uid) {
        self.0.get_or_insert_with(Box::default).insert(uid);
    }

    fn remove(&mut self, uid: &str) {
        if let Some(set) = &mut self.0 {
            set.remove(uid);
            if set.is_empty() {
                self.0 = None;
            }
        }
    }
}

/// An object as a monitor reported it, converted to the graph's shared strings.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Observed {
    /// Who it is.
    pub identity: ObjectIdentity,
    /// Its resourceVersion.
    pub resource_version: Box<str>,
    /// Its owner references.
    pub owners: Box<[OwnerLink]>,
    /// `deletionTimestamp` is set.
    pub being_deleted: bool,
    /// Has the `orphan` finalizer.
    pub orphan_finalizer: bool,
    /// Has the `foregroundDeletion` finalizer.
    pub foreground_finalizer: bool,
}

/// A copy of what a worker needs to know about one node, taken under the read lock.
#[derive(Clone, Debug)]
pub struct NodeView {
    /// Who it is.
    pub identity: ObjectIdentity,
    /// Existence as the graph knows it.
    pub presence: Presence,
    /// The resourceVersion last observed.
    pub resource_version: Box<str>,
    /// Its owner references.
    pub owners: Box<[OwnerLink]>,
    /// How many nodes reference it.
    pub dependent_count: usize,
    /// `deletionTimestamp` is set.
    pub being_deleted: bool,
    /// Waiting for its blocking dependents to be deleted (Foreground).
    pub deleting_dependents: bool,
    /// Has the `orphan` finalizer.
    pub orphan_finalizer: bool,
    /// Has the `foregroundDeletion` finalizer.
    pub foreground_finalizer: bool,
}

/// The graph: nodes by UID, and the interned strings they share.
#[derive(Debug, Default)]
pub struct Graph {
    nodes: HashMap<Uid, Node>,
    interner: Interner,
}

impl Graph {
    /// An empty graph.
    pub fn new() -> Graph {
        Graph::default()
    }

    /// Number of nodes of every presence.
    pub fn len(&self) -> usize {
        self.nodes.len()
    }

    /// Whether the graph is empty.
    pub fn is_empty(&self) -> bool {
        self.nodes.is_empty()
    }

    /// One node.
    pub fn node(&self, uid: &str) -> Option<&Node> {
        self.nodes.get(uid)
    }

    /// Every node, in no particular order.
    pub fn nodes(&self) -> impl Iterator<Item = &Node> {
        self.nodes.values()
    }

    /// A copy of what a worker needs about `uid`.
    pub fn view(&self, uid: &str) -> Option<NodeView> {
        let node = self.nodes.get(uid)?;
        Some(NodeView {
            identity: node.identity.clone(),
            presence: node.presence,
            resource_version: node.resource_version.clone(),
            owners: node.owners.clone(),
            dependent_count: node.dependents.len(),
            being_deleted: node.being_deleted,
            deleting_dependents: node.deleting_dependents,
            orphan_finalizer: node.orphan_finalizer,
            foreground_finalizer: node.foreground_finalizer,
        })
    }

    /// Whether some dependent of `uid` references it with `blockOwnerDeletion: true`. Stops at
    /// the first one: a Foreground owner with thousands of dependents asks this each time one
    /// of them leaves.
    pub fn has_blocking_dependents(&self, uid: &str) -> bool {
        let Some(node) = self.nodes.get(uid) else {
            return false;
        };
        node.dependents
            .iter()
            .filter_map(|d| self.nodes.get(d))
            .any(|d| {
                d.owner_link(uid)
                    .is_some_and(OwnerLink::blocks_owner_deletion)
            })
    }

    /// The dependents of `uid`, each with its owner references.
    pub fn dependents_of(&self, uid: &str) -> Vec<(ObjectIdentity, Box<[OwnerLink]>)> {
        let Some(node) = self.nodes.get(uid) else {
            return Vec::new();
        };
        node.dependents
            .iter()
            .filter_map(|d| self.nodes.get(d))
            .map(|d| (d.identity.clone(), d.owners.clone()))
            .collect()
    }

    /// The UIDs of the dependents of `uid`.
    pub fn dependent_uids(&self, uid: &str) -> Vec<Uid> {
        self.nodes
            .get(uid)
            .map(|n| n.dependents.to_vec())
            .unwrap_or_default()
    }

    /// The shared copy of `uid` if the graph holds it, else a new one.
    pub fn uid(&self, uid: &str) -> Uid {
        self.nodes
            .get_key_value(uid)
            .map_or_else(|| Arc::from(uid), |(k, _)| Arc::clone(k))
    }

    /// Converts a monitor's object of type `gvk` into the graph's form; `None` without a UID or
    /// name (the server always sets both).
    pub fn observe(&mut self, gvk: &Gvk, object: &PartialObjectMetadata) -> Option<Observed> {
        let meta = &object.metadata;
        let uid = self.uid(meta.uid.as_deref().filter(|u| !u.is_empty())?);
        let name = meta.name.as_deref()?;
        let owners = meta
            .owner_references
            .iter()
            .map(|r| OwnerLink {
                uid: self.uid(&r.uid),
                gvk: self.interner.gvk(&r.api_version, &r.kind),
                name: r.name.as_str().into(),
                controller: r.controller,
                block_owner_deletion: r.block_owner_deletion,
            })
            .collect();
        Some(Observed {
            identity: ObjectIdentity {
                gvk: self.interner.gvk(&gvk.api_version, &gvk.kind),
                namespace: meta
                    .namespace
                    .as_deref()
                    .map(|ns| self.interner.namespace(ns)),
                name: name.into(),
                uid,
            },
            resource_version: meta.resource_version.as_deref().unwrap_or("").into(),
            owners,
            being_deleted: meta.is_being_deleted(),
            orphan_finalizer: meta.has_finalizer(ORPHAN_FINALIZER),
            foreground_finalizer: meta.has_finalizer(FOREGROUND_FINALIZER),
        })
    }

    /// Inserts or refreshes an observed node; its owners and dependents are not touched.
    /// Returns the previous presence and owners.
    pub(super) fn put_observed(&mut self, o: Observed) -> (Option<Presence>, Box<[OwnerLink]>) {
        let uid = Arc::clone(&o.identity.uid);
        match self.nodes.get_mut(&uid) {
            Some(node) => {
                let before = (Some(node.presence), std::mem::take(&mut node.owners));
                node.identity = o.identity;
                node.presence = Presence::Observed;
                node.resource_version = o.resource_version;
                node.owners = o.owners;
                node.being_deleted = o.being_deleted;
                node.orphan_finalizer = o.orphan_finalizer;
                node.foreground_finalizer = o.foreground_finalizer;
                before
            }
            None => {
                let mut node = Node::virtual_node(o.identity);
                node.presence = Presence::Observed;
                node.resource_version = o.resource_version;
                node.owners = o.owners;
                node.being_deleted = o.being_deleted;
                node.orphan_finalizer = o.orphan_finalizer;
                node.foreground_finalizer = o.foreground_finalizer;
                self.nodes.insert(uid, node);
                (None, Box::new([]))
            }
        }
    }

    /// Records `dependent` on `owner`'s node, creating a virtual owner named after the
    /// reference (in the dependent's namespace) when the graph does not know it. Returns the
    /// owner's presence after the call and whether it was just created.
    pub(super) fn link(
        &mut self,
        dependent: &ObjectIdentity,
        owner: &OwnerLink,
    ) -> (Presence, bool) {
        if let Some(node) = self.nodes.get_mut(&owner.uid) {
            node.dependents.insert(Arc::clone(&dependent.uid));
            return (node.presence, false);
        }
        let mut node = Node::virtual_node(ObjectIdentity {
            gvk: Arc::clone(&owner.gvk),
            namespace: dependent.namespace.clone(),
            name: owner.name.clone(),
            uid: Arc::clone(&owner.uid),
        });
        node.dependents.insert(Arc::clone(&dependent.uid));
        self.nodes.insert(Arc::clone(&owner.uid), node);
        (Presence::Virtual, true)
    }

    /// Removes `dependent` from `owner`'s dependents; a gone or virtual owner left without
    /// dependents is dropped (nothing references it any more). Returns whether the owner is
    /// waiting for its dependents to be deleted.
    pub(super) fn unlink(&mut self, dependent: &str, owner: &str) -> bool {
        let Some(node) = self.nodes.get_mut(owner) else {
            return false;
        };
        node.dependents.remove(dependent);
        let waiting = node.deleting_dependents;
        if node.dependents.is_empty() && node.presence != Presence::Observed {
            self.nodes.remove(owner);
        }
        waiting
    }

    /// Marks a node deleted: it loses its owner edges; it is kept as [`Presence::Gone`] while
    /// dependents reference it, removed otherwise. Returns its former owners and its dependents.
    pub(super) fn mark_gone(&mut self, uid: &str) -> Option<(Box<[OwnerLink]>, Vec<Uid>)> {
        let node = self.nodes.get_mut(uid)?;
        let owners = std::mem::take(&mut node.owners);
        let dependents = node.dependents.to_vec();
        if dependents.is_empty() {
            self.nodes.remove(uid);
        } else {
            node.presence = Presence::Gone;
            node.deleting_dependents = false;
            node.being_deleted = true;
        }
        Some((owners, dependents))
    }

    /// Removes a virtual node whose owner was found absent by a live read. Returns its
    /// dependents, or `None` when the node is no longer virtual (observed meanwhile).
    pub(super) fn remove_virtual(&mut self, uid: &str) -> Option<Vec<Uid>> {
        if self.nodes.get(uid)?.presence != Presence::Virtual {
            return None;
        }
        let node = self.nodes.remove(uid)?;
        Some(node.dependents.to_vec())
    }

    /// Marks a node as deleting its dependents (Foreground).
    pub(super) fn mark_deleting_dependents(&mut self, uid: &str) {
        if let Some(node) = self.nodes.get_mut(uid) {
            node.deleting_dependents = true;
        }
    }

    /// The UIDs of the observed nodes of type `gvk`.
    pub(super) fn observed_of(&self, gvk: &Gvk) -> Vec<Uid> {
        self.nodes
            .values()
            .filter(|n| n.presence == Presence::Observed && *n.identity.gvk == *gvk)
            .map(|n| Arc::clone(&n.identity.uid))
            .collect()
    }
}
