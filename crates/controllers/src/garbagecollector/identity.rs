//! How the garbage collector names objects: [`Uid`], [`Gvk`], [`ObjectIdentity`] and the compact
//! owner reference [`OwnerLink`].
//!
//! Contract: a UID names one object for ever (the API server never reuses one), so the graph is
//! keyed by UID; the other fields say where to find the object. Strings that repeat across
//! thousands of nodes — a UID referenced by every dependent, an `apiVersion`/`kind` pair, a
//! namespace — are shared `Arc`s handed out by the [`Interner`], so each exists once in memory.

use std::collections::HashSet;
use std::fmt;
use std::sync::Arc;

use kube_gc_api::{ObjectReference, OwnerReference};

/// An object's UID, shared between the graph's key and every reference to it.
pub type Uid = Arc<str>;

/// An `apiVersion` and `kind`, e.g. `apps/v1` `ReplicaSet`.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Gvk {
    /// `group/version`, or `version` for the core group.
    pub api_version: Box<str>,
    /// The kind.
    pub kind: Box<str>,
}

impl Gvk {
    /// The API group (`""` for the core group).
    pub fn group(&self) -> &str {
        self.api_version.rsplit_once('/').map_or("", |(g, _)| g)
    }

    /// The version within the group.
    pub fn version(&self) -> &str {
        self.api_version
            .rsplit_once('/')
            .map_or(&*self.api_version, |(_, v)| v)
    }

    /// The group and kind: what stays the same across versions of one resource.
    pub fn group_kind(&self) -> GroupKind {
        GroupKind {
            group: self.group().into(),
            kind: self.kind.clone(),
        }
    }
}

/// A kind within a group, whatever its version: the key of "is this resource monitored and
/// synced?".
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct GroupKind {
    /// The API group (`""` for the core group).
    pub group: Box<str>,
    /// The kind.
    pub kind: Box<str>,
}

/// Who an object is: type, namespace, name and UID.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ObjectIdentity {
    /// `apiVersion` and `kind`.
    pub gvk: Arc<Gvk>,
    /// `None` for cluster-scoped objects.
    pub namespace: Option<Arc<str>>,
    /// The name.
    pub name: Box<str>,
    /// The UID.
    pub uid: Uid,
}

impl ObjectIdentity {
    /// The reference an Event about this object carries.
    pub fn object_reference(&self) -> ObjectReference {
        ObjectReference {
            api_version: Some(self.gvk.api_version.to_string()),
            kind: Some(self.gvk.kind.to_string()),
            namespace: self.namespace.as_deref().map(str::to_owned),
            name: Some(self.name.to_string()),
            uid: Some(self.uid.to_string()),
            ..ObjectReference::default()
        }
    }
}

impl fmt::Display for ObjectIdentity {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}, ", self.gvk.api_version, self.gvk.kind)?;
        match &self.namespace {
            Some(ns) => write!(f, "{ns}/{}", self.name)?,
            None => write!(f, "{}", self.name)?,
        }
        write!(f, " (uid {})", self.uid)
    }
}

/// One `metadata.ownerReferences` entry, with its repeated strings shared.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OwnerLink {
    /// The owner's UID.
    pub uid: Uid,
    /// The owner's `apiVersion` and `kind`.
    pub gvk: Arc<Gvk>,
    /// The owner's name.
    pub name: Box<str>,
    /// `controller`, exactly as the server sent it (absent and `false` differ on the wire).
    pub controller: Option<bool>,
    /// `blockOwnerDeletion`, exactly as the server sent it.
    pub block_owner_deletion: Option<bool>,
}

impl OwnerLink {
    /// Whether a Foreground deletion of the owner waits for this dependent.
    pub fn blocks_owner_deletion(&self) -> bool {
        self.block_owner_deletion == Some(true)
    }

    /// The reference as the API server stores it: a JSON patch `test` of the owner references
    /// compares against exactly this.
    pub fn to_reference(&self) -> OwnerReference {
        OwnerReference {
            api_version: self.gvk.api_version.to_string(),
            kind: self.kind().to_owned(),
            name: self.name.to_string(),
            uid: self.uid.to_string(),
            controller: self.controller,
            block_owner_deletion: self.block_owner_deletion,
        }
    }

    /// The owner's kind.
    pub fn kind(&self) -> &str {
        &self.gvk.kind
    }
}

/// Hands out one shared copy of each repeated string.
#[derive(Debug, Default)]
pub struct Interner {
    gvks: HashSet<Arc<Gvk>>,
    namespaces: HashSet<Arc<str>>,
}

impl Interner {
    /// The shared `apiVersion`/`kind` pair.
    pub fn gvk(&mut self, api_version: &str, kind: &str) -> Arc<Gvk> {
        let key = Gvk {
            api_version: api_version.into(),
            kind: kind.into(),
        };
        if let Some(found) = self.gvks.get(&key) {
            return Arc::clone(found);
        }
        let shared = Arc::new(key);
        self.gvks.insert(Arc::clone(&shared));
        shared
    }

    /// The shared namespace string.
    pub fn namespace(&mut self, namespace: &str) -> Arc<str> {
        if let Some(found) = self.namespaces.get(namespace) {
            return Arc::clone(found);
        }
        let shared: Arc<str> = Arc::from(namespace);
        self.namespaces.insert(Arc::clone(&shared));
        shared
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn group_and_version_split_the_api_version() {
        let mut interner = Interner::default();
        let rs = interner.gvk("apps/v1", "ReplicaSet");
        assert_eq!((rs.group(), rs.version()), ("apps", "v1"));
        let pod = interner.gvk("v1", "Pod");
        assert_eq!((pod.group(), pod.version()), ("", "v1"));
        assert!(Arc::ptr_eq(&pod, &interner.gvk("v1", "Pod")));
        assert_eq!(&*pod.group_kind().kind, "Pod");
    }

    #[test]
    fn an_owner_link_turns_back_into_the_reference_it_came_from() {
        let mut interner = Interner::default();
        let link = OwnerLink {
            uid: Arc::from("u1"),
            gvk: interner.gvk("apps/v1", "ReplicaSet"),
            name: "web".into(),
            controller: Some(true),
            block_owner_deletion: None,
        };
        let reference = link.to_reference();
        assert_eq!(reference.api_version, "apps/v1");
        assert_eq!(reference.kind, "ReplicaSet");
        assert_eq!(reference.block_owner_deletion, None);
        assert!(!link.blocks_owner_deletion());
    }
}
