//! Why a namespace is still `Terminating`, and who is expected to finish it: the namespace
//! controller's own `assess` on what remains, with every blocker followed to its root cause.
//!
//! | file | what it holds |
//! |---|---|
//! | `report.rs` | the namespace controller's decision and the [`NamespaceReport`] |
//! | `chain.rs` | what holds each object that remains, down to the root cause |
//! | `render.rs` | the report's lines for a terminal |
//!
//! Contract:
//! - No rule of namespace deletion is restated here: what remains, what is deleted next, what
//!   blocks the finalize and the next step are `controllers::namespace::decide::assess`'s; the
//!   Pods' fate is the pod garbage collector's `judge`, a claim's the PVC protection
//!   controller's `claim_release`, a foreground deletion's the garbage collector's chain.
//! - Each finalizer (of the namespace, `spec` and `metadata`, and of each object that remains)
//!   names who removes it ([`crate::explain::finalizers`]), for the controllers `--controllers` runs here.
//! - Both `kube-gc explain` (content listed now) and `/debug/explain` (content from the
//!   namespace controller's caches and progress) build the answer with [`explain_namespace`];
//!   what a source does not keep (owner references, Pods, claims) is said to be unknown.

mod chain;
mod render;
mod report;
#[cfg(test)]
mod tests;

use serde::Serialize;

pub(crate) use render::lines as render_lines;
pub(crate) use report::{decision as namespace_decision, explain_namespace, Explained};

use crate::explain::finalizers::FinalizerOwner;

/// At most this many objects of one resource are named.
pub const NAMED_PER_RESOURCE: usize = 5;

/// What a namespace's deletion waits for, beside the explanation's verdict and finalizers.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct NamespaceReport {
    /// `status.phase` (`Active`, `Terminating`).
    pub phase: String,
    /// Where the content was read, when it was.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub content_source: Option<String>,
    /// What remains, by resource.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub remaining: Vec<RemainingContent>,
    /// Resources whose content could not be read, and why.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub unreadable: Vec<Unreadable>,
    /// Group versions discovery could not read: whatever they serve may hold content, so the
    /// finalize waits for them.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub discovery_failures: Vec<Unreadable>,
    /// The namespace's status conditions, as written.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub conditions: Vec<ConditionLine>,
    /// Who is expected to finish the deletion, when it waits for the namespace controller.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub finished_by: Option<FinishedBy>,
}

/// What remains of one resource.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct RemainingContent {
    /// `plural` or `plural.group`, as kubectl names it.
    pub resource: String,
    /// Its kind.
    pub kind: String,
    /// How many (at least, when `more`).
    pub count: usize,
    /// The source stopped at a page: there are more.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub more: bool,
    /// How many of them are being deleted already.
    pub being_deleted: usize,
    /// The first few names.
    pub names: Vec<String>,
    /// Their finalizers: how many objects each holds, and who removes it.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub finalizers: Vec<FinalizerCount>,
}

/// One finalizer among what remains.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct FinalizerCount {
    /// The finalizer.
    pub finalizer: String,
    /// On how many objects.
    pub count: usize,
    /// Whose it is.
    pub owner: FinalizerOwner,
    /// Who removes it, in a line.
    pub removed_by: String,
}

/// Something that could not be read, and why.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Unreadable {
    /// A resource or a group version.
    pub what: String,
    /// Why.
    pub message: String,
}

/// A status condition.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ConditionLine {
    /// Its type.
    #[serde(rename = "type")]
    pub type_: String,
    /// `True`, `False`, `Unknown`.
    pub status: String,
    /// Its reason.
    pub reason: String,
    /// Its message.
    pub message: String,
}

/// Who is expected to finish a namespace's deletion, and what it waits for.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct FinishedBy {
    /// `namespace`, as `--controllers` names it.
    pub controller: String,
    /// Whether kube-gc runs it here.
    pub run_here: bool,
    /// Who, in a sentence.
    pub who: String,
    /// The controller's next step (what kube-gc's would do, when it is not run here).
    pub next: String,
    /// `deletionTimestamp` + the safety delay: never finalized before (RFC 3339).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub finalize_not_before: Option<String>,
    /// Seconds of the safety delay left (0 once passed).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub safety_delay_left_seconds: Option<i64>,
    /// What it waits for, one line each; none when it finalizes now.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub waits_for: Vec<String>,
}
