//! The `Status` body the real server answers each refusal with.
//!
//! Contract: [`HandlerError`] is every way a request can fail after routing; [`HandlerError::status`]
//! turns it into the exact `(code, Status)` pair of a v1.28 kube-apiserver, using the builders of
//! [`crate::status`].

use http::StatusCode;
use serde_json::Value;

use crate::patch::PatchError;
use crate::resources::Resources;
use crate::status::{self, GroupKind};
use crate::store::StoreError;

/// A request that failed after routing.
#[derive(Debug, thiserror::Error)]
pub enum HandlerError {
    /// The store refused the operation.
    #[error(transparent)]
    Store(#[from] StoreError),
    /// A patch document could not be applied.
    #[error(transparent)]
    Patch(#[from] PatchError),
    /// A ready-made Status answer (bad body, unsupported media type, …).
    #[error("{}", .0.1)]
    Status((StatusCode, Value)),
}

impl HandlerError {
    /// A 400 BadRequest with this message.
    pub fn bad_request(message: impl AsRef<str>) -> HandlerError {
        HandlerError::Status(status::bad_request(message.as_ref()))
    }

    /// The real server's answer to this failure.
    pub fn status(&self, resources: &Resources) -> (StatusCode, Value) {
        match self {
            HandlerError::Store(e) => store_error_status(e, resources),
            HandlerError::Patch(e) => e.status(),
            HandlerError::Status(answer) => answer.clone(),
        }
    }
}

/// The Status for a store refusal.
pub fn store_error_status(error: &StoreError, resources: &Resources) -> (StatusCode, Value) {
    match error {
        StoreError::NotFound { resource, name } => {
            status::not_found(&resources.def(*resource).group_resource(), name)
        }
        StoreError::AlreadyExists { resource, name } => {
            status::already_exists(&resources.def(*resource).group_resource(), name)
        }
        StoreError::Conflict { resource, name } => {
            status::conflict_modified(&resources.def(*resource).group_resource(), name)
        }
        StoreError::UidMismatch {
            resource,
            namespace,
            name,
            requested,
            actual,
        } => status::conflict_precondition_uid_update(
            &resources.def(*resource).group_resource(),
            namespace.as_deref(),
            name,
            requested,
            actual,
        ),
        StoreError::DeletePrecondition {
            resource,
            name,
            field,
            expected,
            actual,
        } => {
            let def = resources.def(*resource);
            let gk = GroupKind::new(def.group.clone(), def.kind.clone());
            if *field == "uid" {
                status::precondition_failed_uid(&gk, name, expected, actual)
            } else {
                status::precondition_failed_rv(&gk, name, expected, actual)
            }
        }
        StoreError::Invalid {
            resource,
            name,
            errors,
        } => {
            let def = resources.def(*resource);
            let gk = GroupKind::new(def.group.clone(), def.kind.clone());
            status::invalid(&gk, name, errors)
        }
        StoreError::NamespaceTerminating {
            resource,
            name,
            namespace,
        } => status::namespace_terminating(
            &resources.def(*resource).group_resource(),
            name,
            namespace,
        ),
        StoreError::BadRequest(message) => status::bad_request(message),
        StoreError::FutureRevision => status::etcd_future_revision(),
        StoreError::ListTooOld => {
            status::gone_expired(status::LIST_RESOURCE_VERSION_EXPIRED_MESSAGE, None)
        }
        StoreError::ContinueTooOld { fresh_continue } => status::gone_expired(
            status::CONTINUE_EXPIRED_MESSAGE,
            Some(fresh_continue.clone()),
        ),
        StoreError::WatchTooOld { requested, oldest } => status::gone_expired(
            &status::too_old_resource_version_message(*requested, *oldest),
            None,
        ),
        StoreError::TooLargeResourceVersion {
            requested,
            current,
            retry_after_seconds,
        } => status::too_large_resource_version(*requested, *current, *retry_after_seconds),
    }
}
