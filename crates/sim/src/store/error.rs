//! Why a store operation was refused.
//!
//! Contract: every refusal the store can give is one [`StoreError`] variant carrying what the
//! HTTP layer needs to build the real server's `Status` body for it (see
//! `crate::handlers::errors`). The store itself knows nothing about HTTP.

use crate::resources::ResourceId;
use crate::status::Cause;

/// A refused store operation.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum StoreError {
    /// The object does not exist.
    #[error("{name} not found")]
    NotFound {
        /// The object's resource.
        resource: ResourceId,
        /// The object's name.
        name: String,
    },
    /// An object with this name exists already.
    #[error("{name} already exists")]
    AlreadyExists {
        /// The object's resource.
        resource: ResourceId,
        /// The object's name.
        name: String,
    },
    /// The write carried a resourceVersion that is no longer current.
    #[error("{name} has been modified")]
    Conflict {
        /// The object's resource.
        resource: ResourceId,
        /// The object's name.
        name: String,
    },
    /// The uid carried by an update or patch differs from the stored object's.
    #[error("uid precondition failed on {name}")]
    UidMismatch {
        /// The object's resource.
        resource: ResourceId,
        /// The object's namespace (`None` when cluster-scoped).
        namespace: Option<String>,
        /// The object's name.
        name: String,
        /// The uid the request carried.
        requested: String,
        /// The stored uid.
        actual: String,
    },
    /// A DELETE precondition (`preconditions.uid` / `preconditions.resourceVersion`) failed.
    #[error("delete precondition on {field} failed for {name}")]
    DeletePrecondition {
        /// The object's resource.
        resource: ResourceId,
        /// The object's name.
        name: String,
        /// `uid` or `resourceVersion`.
        field: &'static str,
        /// The value the request expected.
        expected: String,
        /// The stored value.
        actual: String,
    },
    /// A create in a namespace being deleted, which the `NamespaceLifecycle` admission plugin
    /// refuses (403, exchange 143).
    #[error("{name} cannot be created: namespace {namespace} is being terminated")]
    NamespaceTerminating {
        /// The object's resource.
        resource: ResourceId,
        /// The object's name.
        name: String,
        /// The namespace being deleted.
        namespace: String,
    },
    /// The object failed validation (422).
    #[error("{name} is invalid")]
    Invalid {
        /// The object's resource.
        resource: ResourceId,
        /// The object's name (may be empty).
        name: String,
        /// The rejected fields.
        errors: Vec<Cause>,
    },
    /// The request itself is malformed (400).
    #[error("bad request: {0}")]
    BadRequest(String),
    /// A list at an exact resourceVersion older than etcd's compaction point (410).
    #[error("resource version too old")]
    ListTooOld,
    /// A continue token whose resourceVersion was compacted (410 with a fresh token).
    #[error("continue token too old")]
    ContinueTooOld {
        /// A token that continues the list from the same key at the latest version.
        fresh_continue: String,
    },
    /// A watch from a resourceVersion older than the watch cache's window (ERROR event with 410).
    #[error("too old resource version: {requested} ({oldest})")]
    WatchTooOld {
        /// The requested resourceVersion.
        requested: u64,
        /// The oldest resourceVersion still covered.
        oldest: u64,
    },
    /// An exact read (from etcd) at a revision the store has not reached: etcd's own error,
    /// a 500 (exchange 63).
    #[error("etcdserver: mvcc: required revision is a future revision")]
    FutureRevision,
    /// A read at a resourceVersion the store has not reached (504 Timeout).
    #[error("too large resource version: {requested}, current: {current}")]
    TooLargeResourceVersion {
        /// The requested resourceVersion.
        requested: u64,
        /// The current resourceVersion.
        current: u64,
        /// `retryAfterSeconds`: 1 from the watch cache, none (0) from etcd.
        retry_after_seconds: u64,
    },
}
