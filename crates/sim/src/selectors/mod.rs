//! Label and field selectors, parsed and matched the way kube-apiserver does for the
//! `labelSelector` and `fieldSelector` query parameters of list and watch.
//!
//! Contract:
//! - [`LabelSelector::parse`] accepts exactly the strings apimachinery's `labels.Parse` accepts
//!   (`k=v`, `k==v`, `k!=v`, `k in (a,b)`, `k notin (a,b)`, `k`, `!k`, `k>1`, `k<1`, joined by
//!   commas, blanks allowed between tokens) and rejects the others with the same message, which
//!   the server sends back as a 400 `BadRequest`. Keys must be qualified names and values label
//!   values, validated with the upstream rules and wording.
//! - [`FieldSelector::parse`] accepts `field=value`, `field==value` and `field!=value` terms joined
//!   by commas (with `\,`, `\=` and `\\` escapes in values) on `metadata.name` and
//!   `metadata.namespace`, the fields every resource supports; any other field is refused with
//!   the upstream "is not a known field selector" message.
//! - Neither parser panics, whatever the input.
//!
//! Messages quote values the way Go's `%q` does; for the printable text that appears in
//! selectors this is JSON string quoting.
//!
//! The label selector lives in `label.rs`, the name and value rules it enforces in `names.rs`,
//! the field selector in `field.rs`.

mod field;
mod label;
mod names;

pub use field::{FieldSelector, FieldSet, FieldTerm, SelectableField};
pub use label::{LabelSelector, Operator, Requirement};

use thiserror::Error;

/// Why a selector string was refused. The `Display` text is the message the real server puts in
/// its 400 `BadRequest`.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum SelectorError {
    /// The label selector does not parse or names an invalid key or value.
    #[error("{0}")]
    Label(String),
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
