//! How the real server names what a `Status` is about: a resource or a kind in an API group,
//! `jobs.batch` or `Job.batch`, and the bare name for the core group.

use std::fmt;

/// A resource in an API group, e.g. `jobs` in `batch`; renders as `jobs.batch`, or just
/// `configmaps` for the core group (empty group), the way the real server names resources in
/// its messages.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct GroupResource {
    /// The API group; empty for the core (`/api/v1`) group.
    pub group: String,
    /// The plural resource name, e.g. `jobs`.
    pub resource: String,
}

impl GroupResource {
    /// A resource in the named group.
    pub fn new(group: impl Into<String>, resource: impl Into<String>) -> Self {
        GroupResource {
            group: group.into(),
            resource: resource.into(),
        }
    }
}

impl fmt::Display for GroupResource {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        qualified(f, &self.resource, &self.group)
    }
}

/// A kind in an API group, e.g. `Job` in `batch`; renders as `Job.batch`, or `ConfigMap` for
/// the core group. Some upstream errors (validation, delete preconditions) name the kind rather
/// than the resource.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct GroupKind {
    /// The API group; empty for the core group.
    pub group: String,
    /// The kind, e.g. `Job`.
    pub kind: String,
}

impl GroupKind {
    /// A kind in the named group.
    pub fn new(group: impl Into<String>, kind: impl Into<String>) -> Self {
        GroupKind {
            group: group.into(),
            kind: kind.into(),
        }
    }
}

impl fmt::Display for GroupKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        qualified(f, &self.kind, &self.group)
    }
}

fn qualified(f: &mut fmt::Formatter<'_>, name: &str, group: &str) -> fmt::Result {
    if group.is_empty() {
        f.write_str(name)
    } else {
        write!(f, "{name}.{group}")
    }
}
