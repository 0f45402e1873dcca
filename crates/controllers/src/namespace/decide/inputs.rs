//! What [`assess`](super::assess) reads: the namespace, what discovery offers, what is known
//! of each resource's content (from the cache or a LIST), what earlier passes asked and proved.

use std::collections::HashSet;
use std::time::Duration;

use chrono::{DateTime, Utc};

use kube_gc_client::ResourceRef;

/// Finalizers a Background deletion removes itself: they never hold content it deleted.
const GC_FINALIZERS: [&str; 2] = ["orphan", "foregroundDeletion"];

/// A namespaced resource namespace deletion must empty: served with `list` and `delete`.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ContentType {
    /// The resource (its preferred version).
    pub resource: ResourceRef,
    /// Whether discovery offers `deletecollection`: one request empties it. Else each object
    /// is deleted by name.
    pub delete_collection: bool,
}

impl ContentType {
    /// Whether this is core `pods`, deleted before everything else.
    pub fn is_pods(&self) -> bool {
        is_pods(&self.resource)
    }
}

/// Whether `resource` is core `pods`.
pub fn is_pods(resource: &ResourceRef) -> bool {
    resource.group.is_empty() && resource.plural == "pods"
}

/// A group version discovery could not read: whatever it serves may hold content.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FailedGroup {
    /// e.g. `metrics.k8s.io/v1beta1`.
    pub group_version: String,
    /// Why.
    pub message: String,
}

/// What one discovery says namespace deletion must empty.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Discovered {
    /// The namespaced resources with `list` and `delete`, sorted.
    pub types: Vec<ContentType>,
    /// Group versions that could not be read.
    pub failed: Vec<FailedGroup>,
    /// When the discovery started: a finalize needs one started after the safety delay.
    pub started: DateTime<Utc>,
}

/// One object in the namespace.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Object {
    /// Its name.
    pub name: String,
    /// Its UID.
    pub uid: String,
    /// Its finalizers.
    pub finalizers: Vec<String>,
    /// Whether it is marked for deletion.
    pub deleting: bool,
}

impl Object {
    /// Finalizers that keep it once a Background deletion is asked for.
    pub fn holding_finalizers(&self) -> impl Iterator<Item = &str> {
        self.finalizers
            .iter()
            .map(String::as_str)
            .filter(|f| !GC_FINALIZERS.contains(f))
    }
}

/// What is known of one resource's content in the namespace, and where it comes from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Known {
    /// The watch cache's objects (possibly none).
    Cached(Vec<Object>),
    /// A LIST of the server limited to a page: `more` when it stopped at its limit.
    Listed {
        /// The objects of the page.
        objects: Vec<Object>,
        /// Whether more matched than the page holds.
        more: bool,
    },
    /// Nothing watches the resource (Events), or its cache has not synced.
    Unknown,
}

impl Known {
    /// The objects known (none when unknown).
    pub fn objects(&self) -> &[Object] {
        match self {
            Known::Cached(objects) | Known::Listed { objects, .. } => objects,
            Known::Unknown => &[],
        }
    }
}

/// How a request on a resource failed the last time it was made for this namespace.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Failure {
    /// `deletecollection`, `list` or `delete`.
    pub verb: &'static str,
    /// Whether the server refused kube-gc the right (403).
    pub forbidden: bool,
    /// The server's message.
    pub message: String,
}

/// One resource of the namespace: what is known of it, and how its last request failed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Content {
    /// The resource.
    pub kind: ContentType,
    /// What remains of it.
    pub known: Known,
    /// The last request's failure, if it failed.
    pub failure: Option<Failure>,
}

/// The namespace being judged.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Subject {
    /// Its name.
    pub name: String,
    /// Its UID.
    pub uid: String,
    /// When its deletion was asked for.
    pub deletion_timestamp: Option<DateTime<Utc>>,
    /// `spec.finalizers`.
    pub spec_finalizers: Vec<String>,
}

/// What earlier passes on this namespace asked and proved (kept by the controller while the
/// namespace is deleted).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Progress {
    /// UIDs of objects kube-gc asked the server to delete.
    pub asked: HashSet<String>,
    /// A LIST of the server found no Pod left.
    pub pods_gone: bool,
    /// Resources a LIST made after the safety delay found empty: nothing can be created in
    /// the namespace any more, so they stay so.
    pub proven_empty: HashSet<ResourceRef>,
    /// When this controller last wrote the namespace's conditions (a write that only moves a
    /// message waits a while after it).
    pub conditions_written_at: Option<DateTime<Utc>>,
}

/// Everything [`assess`] reads.
#[derive(Clone, Copy, Debug)]
pub struct Inputs<'a> {
    /// The namespace.
    pub subject: &'a Subject,
    /// The discovery the content was gathered for.
    pub discovered: &'a Discovered,
    /// One entry per resource of `discovered.types`.
    pub content: &'a [Content],
    /// What earlier passes asked and proved.
    pub progress: &'a Progress,
    /// Now.
    pub now: DateTime<Utc>,
    /// The least time between the deletion and the finalize.
    pub finalize_delay: Duration,
}
