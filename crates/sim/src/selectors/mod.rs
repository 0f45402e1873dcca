//! Label and field selectors, parsed and matched the way kube-apiserver does for the
//! `labelSelector` and `fieldSelector` query parameters of list and watch.
//!
//! Contract:
//! - [`LabelSelector`] is the workspace's one label selector (`kube_gc_core::labels::Selector`),
//!   re-exported under the name a server's query parameter gives it: it accepts exactly the
//!   strings apimachinery's `labels.Parse` accepts and refuses the others with the same
//!   message, which the server sends back as a 400 `BadRequest`.
//! - [`FieldSelector::parse`] accepts `field=value`, `field==value` and `field!=value` terms joined
//!   by commas (with `\,`, `\=` and `\\` escapes in values) on `metadata.name` and
//!   `metadata.namespace`, the fields every resource supports; any other field is refused with
//!   the upstream "is not a known field selector" message.
//! - The parser never panics, whatever the input.
//!
//! Messages quote values the way Go's `%q` does; for the printable text that appears in
//! selectors this is JSON string quoting.
//!
//! The field selector lives in `field.rs`.

mod field;

pub use field::{FieldSelector, FieldSet, FieldTerm, SelectableField};
pub use kube_gc_core::labels::{Operator, Requirement, Selector as LabelSelector};

use thiserror::Error;

/// Why a field selector string was refused (a label selector's refusal is
/// `kube_gc_core::labels::ParseError`). The `Display` text is the message the real server puts in
/// its 400 `BadRequest`.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum SelectorError {
    /// The field selector does not parse.
    #[error("{0}")]
    FieldSyntax(String),
    /// The field selector names a field the server cannot select on.
    #[error(
        "{label:?} is not a known field selector: only \"metadata.name\", \"metadata.namespace\""
    )]
    UnknownField {
        /// The field as written in the selector.
        label: String,
    },
    /// The field selector names a field a kind with a conversion of its own (Events) cannot
    /// select on.
    #[error("field label not supported: {label}")]
    UnsupportedFieldLabel {
        /// The field as written in the selector.
        label: String,
    },
}
