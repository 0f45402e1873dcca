//! The three PATCH flavours kube-apiserver accepts, applied to objects held as JSON values.
//!
//! Contract:
//! - [`apply_merge_patch`] is RFC 7386 JSON merge patch (`application/merge-patch+json`): it
//!   cannot fail, every document is a valid merge patch.
//! - [`apply_json_patch`] is RFC 6902 JSON patch (`application/json-patch+json`) with RFC 6901
//!   pointers. It is atomic: on any error the target is left exactly as it was.
//! - [`apply_strategic_merge_patch`] is the subset of Kubernetes' strategic merge patch
//!   (`application/strategic-merge-patch+json`) that built-in types need; see its doc for what
//!   is covered. It is atomic too. (Custom resources refuse strategic merge patch with a 415; that
//!   is the server's job, not this module's.)
//! - None of them panics, whatever the input.
//!
//! Each flavour lives in its own file (`merge.rs`, `json.rs`, `strategic.rs`);
//! [`PatchError::status`] gives the answer the real server sends for each failure.

mod json;
mod merge;
mod strategic;

pub use json::apply_json_patch;
pub use merge::apply_merge_patch;
pub use strategic::apply_strategic_merge_patch;

use http::StatusCode;
use serde_json::Value;
use thiserror::Error;

use super::status;

/// Why a patch could not be applied.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum PatchError {
    /// A JSON patch `test` operation found a different value.
    #[error("testing value {path} failed")]
    TestFailed {
        /// The pointer that was tested.
        path: String,
    },
    /// An operation names a location that does not exist.
    #[error("path not found: {path}")]
    PathNotFound {
        /// The pointer that could not be followed.
        path: String,
    },
    /// An operation or directive is invalid: unknown op, missing member, malformed pointer,
    /// list item without its merge key, unknown `$patch` directive...
    #[error("invalid patch: {0}")]
    Invalid(String),
    /// The patch document as a whole has the wrong shape (a JSON patch that is not an array, a
    /// strategic merge patch that is not an object, a `$deleteFromPrimitiveList` that is not a
    /// list).
    #[error("malformed patch document: {0}")]
    Malformed(String),
}

impl PatchError {
    /// The answer of the real server: a malformed document is a 400 `BadRequest` carrying the
    /// reason; a patch that does not apply is a 422 with upstream's generic message
    /// (exchange 37), which does not say why.
    pub fn status(&self) -> (StatusCode, Value) {
        match self {
            PatchError::Malformed(reason) => status::bad_request(reason),
            _ => status::patch_rejected(),
        }
    }
}

/// Arbitrary small JSON documents for the property tests of the three flavours: few distinct
/// keys and values (including `$`, `~` and `/`), so patches often hit existing members.
#[cfg(test)]
fn arb_json() -> impl proptest::strategy::Strategy<Value = Value> {
    use proptest::prelude::*;

    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::from),
        (-5i64..5).prop_map(Value::from),
        "[a-c~/]{0,2}".prop_map(Value::from),
    ];
    leaf.prop_recursive(4, 32, 4, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
            prop::collection::btree_map("[a-c$~/]{1,2}", inner, 0..4)
                .prop_map(|m| Value::Object(m.into_iter().collect())),
        ]
    })
}
