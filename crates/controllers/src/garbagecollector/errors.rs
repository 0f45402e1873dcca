//! Why a worker gives a node back to its queue, and why the collector stopped.

use super::identity::ObjectIdentity;
use kube_gc_client::Error as ClientError;

/// Why one attempt on one node did not finish; the node is retried with backoff.
#[derive(Debug, thiserror::Error)]
pub enum WorkError {
    /// A request failed.
    #[error("{verb} {object}: {source}")]
    Api {
        /// `get`, `delete` or `patch`.
        verb: &'static str,
        /// The object the request was about.
        object: String,
        /// The client's error.
        #[source]
        source: ClientError,
    },
    /// Discovery does not know the resource serving this type (not served, or not yet seen).
    #[error("no resource serves {api_version} {kind}")]
    NoMapping {
        /// The `apiVersion` looked up.
        api_version: String,
        /// The kind looked up.
        kind: String,
    },
    /// Discovery does not know the resource serving this type because its group's discovery
    /// failed: the decision waits for the next discovery (without back-off).
    #[error("no resource known to serve {api_version} {kind}: discovery of its group failed")]
    DiscoveryIncomplete {
        /// The `apiVersion` looked up.
        api_version: String,
        /// The kind looked up.
        kind: String,
    },
    /// The object changed under the decision; the graph will catch up and it is judged again.
    #[error("{0}")]
    Changed(&'static str),
    /// A virtual owner exists, but no monitor has reported it yet (or none watches its kind).
    #[error("the owner exists but no monitor has reported it yet")]
    NotYetObserved,
}

impl WorkError {
    pub(super) fn api(verb: &'static str, object: &ObjectIdentity, source: ClientError) -> Self {
        WorkError::Api {
            verb,
            object: object.to_string(),
            source,
        }
    }

    /// Whether the API server was unavailable, which says nothing about the object: the node
    /// waits for the server instead of backing off.
    pub fn is_unavailable(&self) -> bool {
        matches!(self, WorkError::Api { source, .. } if source.is_unavailable())
    }

    /// The `operation` label of the error counter.
    pub fn label(&self) -> &'static str {
        match self {
            WorkError::Api { verb, .. } => verb,
            WorkError::NoMapping { .. } | WorkError::DiscoveryIncomplete { .. } => "mapping",
            WorkError::Changed(_) => "conflict",
            WorkError::NotYetObserved => "unobserved",
        }
    }
}

/// Why [`GarbageCollector::run`](super::GarbageCollector::run) failed.
#[derive(Debug, thiserror::Error)]
pub enum GcError {
    /// One of the collector's tasks panicked.
    #[error("garbage collector task {task} failed: {source}")]
    TaskFailed {
        /// Which task.
        task: &'static str,
        /// The join error.
        #[source]
        source: tokio::task::JoinError,
    },
}
