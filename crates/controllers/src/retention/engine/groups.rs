//! [`GroupIndex`]: which objects of a watched resource form each history group, so that a
//! change to one member re-ranks its group without walking the cache.
//!
//! Contract: an object is in at most one group (its governing policy, namespace and group
//! value); [`GroupIndex::place`] moves it, [`GroupIndex::remove`] takes it out, and
//! [`GroupIndex::members`] lists a group. The index only says who belongs together; what
//! each member is comes from the cache when the group is reconciled.

use std::collections::{HashMap, HashSet};
use std::fmt;

use parking_lot::Mutex;

use kube_gc_runtime::cache::ObjectKey;

/// One history group.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct GroupKey {
    /// The governing policy's index in the resource's rules.
    pub policy: u16,
    /// The namespace (groups never span namespaces).
    pub namespace: Box<str>,
    /// The controlling owner's UID, `(none)`, or the label's value.
    pub value: Box<str>,
}

impl fmt::Display for GroupKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{}/{} (policy #{})",
            self.namespace, self.value, self.policy
        )
    }
}

#[derive(Default)]
struct Inner {
    members: HashMap<GroupKey, HashSet<ObjectKey>>,
    group_of: HashMap<ObjectKey, GroupKey>,
}

/// The groups of one watched resource.
#[derive(Default)]
pub struct GroupIndex {
    inner: Mutex<Inner>,
}

impl fmt::Debug for GroupIndex {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let inner = self.inner.lock();
        f.debug_struct("GroupIndex")
            .field("groups", &inner.members.len())
            .field("objects", &inner.group_of.len())
            .finish()
    }
}

impl GroupIndex {
    /// Puts `key` in `group` (or in none), leaving any group it was in.
    pub fn place(&self, key: &ObjectKey, group: Option<GroupKey>) {
        let mut inner = self.inner.lock();
        let previous = match &group {
            Some(group) => inner.group_of.insert(key.clone(), group.clone()),
            None => inner.group_of.remove(key),
        };
        if let Some(previous) = previous.filter(|p| Some(p) != group.as_ref()) {
            remove_member(&mut inner.members, &previous, key);
        }
        if let Some(group) = group {
            inner.members.entry(group).or_default().insert(key.clone());
        }
    }

    /// Takes `key` out of its group; returns the group it was in.
    pub fn remove(&self, key: &ObjectKey) -> Option<GroupKey> {
        let mut inner = self.inner.lock();
        let group = inner.group_of.remove(key)?;
        remove_member(&mut inner.members, &group, key);
        Some(group)
    }

    /// The members of `group`, in key order.
    pub fn members(&self, group: &GroupKey) -> Vec<ObjectKey> {
        let inner = self.inner.lock();
        let mut members: Vec<ObjectKey> = inner
            .members
            .get(group)
            .map(|m| m.iter().cloned().collect())
            .unwrap_or_default();
        members.sort();
        members
    }
}

fn remove_member(
    members: &mut HashMap<GroupKey, HashSet<ObjectKey>>,
    group: &GroupKey,
    key: &ObjectKey,
) {
    if let Some(set) = members.get_mut(group) {
        set.remove(key);
        if set.is_empty() {
            members.remove(group);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn group(value: &str) -> GroupKey {
        GroupKey {
            policy: 0,
            namespace: "ns".into(),
            value: value.into(),
        }
    }

    #[test]
    fn an_object_moves_between_groups_and_empty_groups_vanish() {
        let index = GroupIndex::default();
        let (a, b) = (ObjectKey::new("ns", "a"), ObjectKey::new("ns", "b"));
        index.place(&a, Some(group("x")));
        index.place(&b, Some(group("x")));
        assert_eq!(index.members(&group("x")), [a.clone(), b.clone()]);
        index.place(&a, Some(group("y")));
        assert_eq!(index.members(&group("x")), std::slice::from_ref(&b));
        assert_eq!(index.members(&group("y")), std::slice::from_ref(&a));
        index.place(&a, None);
        assert!(index.members(&group("y")).is_empty());
        assert_eq!(index.remove(&b), Some(group("x")));
        assert_eq!(index.remove(&b), None);
        assert!(index.inner.lock().members.is_empty());
    }
}
