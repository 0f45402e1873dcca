//! `kube-gc explain` and `kube-gc plan`: why an object is still there, and what
//! will be deleted when — answered with the same decision functions the controllers run.
//!
//! From the bottom up — each row uses only rows above it, and the face (this file: the answer's
//! types) —
//!
//! | file | what it holds |
//! |---|---|
//! | `controllers.rs` | the controllers both commands speak for, one variant each, and what `--controllers` assumes |
//! | `resolve.rs` | `TYPE` → resource, as kubectl resolves it |
//! | `finalizers.rs` | who removes a finalizer: kube-gc, Kubernetes, a known operator, or nobody known |
//! | `gather/` | the read-only requests and what they read: the object, its owners, policies, dependents, Events; a Pod's node, a claim's Pods, a volume's claims; a namespace and its content |
//! | `wording.rs` | the words every answer shares: times, a bare decision |
//! | `decide/` | the verdict of every controller, pure: the TTL controllers' `judge`, the retention engine's `assess` / `decide` / `rank`, the garbage collector's `action`, the pod garbage collector's `judge`, the protection controllers' `claim_release` / `volume_release`, and why a namespace is still `Terminating` (`decide/namespace/`: the namespace controller's `assess`, every blocker to its root cause, who finishes it) |
//! | `render.rs` | the screen an operator reads |
//! | `plan/` | `kube-gc plan`: every deletion to come, sorted, totalled, charted |
//! | `live/` | `/debug/explain` on a running kube-gc: the same decisions, from its caches |
//!
//! Contract: nothing here writes to the cluster — only GET and LIST, and `live` not even those —
//! and no decision is made here that a controller does not make the same way: `decide/` calls
//! the controllers' own pure functions, `tests/explain.rs` drives the same objects through
//! both, and `tests/explain_live.rs` checks the live answer against the CLI's.

pub mod controllers;
pub mod decide;
pub mod finalizers;
pub mod gather;
pub mod live;
pub mod plan;
pub mod render;
pub mod resolve;
mod wording;

use std::time::Duration;

use serde::Serialize;

pub use controllers::{Assumed, NotRunHere};
pub use decide::namespace::NamespaceReport;
pub use decide::{decide, decide_assuming, explanation, overall};
pub use finalizers::FinalizerOwner;
pub use gather::{gather, gather_with, GatherError, Gathered, OwnerState, Target as ExplainTarget};
pub use resolve::{resolve, UnknownType};

/// What `run`'s flags set that some decisions read; `explain` and `plan` take the same flags, so
/// that they assume what the install runs with.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Settings {
    /// `--namespace-deletion-grace-period`: the least time between a namespace's deletion and
    /// its finalize.
    pub namespace_deletion_grace_period: Duration,
    /// `--terminated-pod-gc-threshold`: terminated Pods kept before the oldest go (0: all).
    pub terminated_pod_gc_threshold: usize,
}

impl Default for Settings {
    /// kube-controller-manager's defaults, as `run`'s.
    fn default() -> Self {
        Settings {
            namespace_deletion_grace_period: kube_gc_controllers::namespace::DEFAULT_FINALIZE_DELAY,
            terminated_pod_gc_threshold:
                kube_gc_controllers::podgc::DEFAULT_TERMINATED_POD_THRESHOLD,
        }
    }
}

/// The answer in one word.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum VerdictKind {
    /// Due now: the next reconcile deletes it.
    DeleteNow,
    /// Deleted at `deleteAt`, unless something changes.
    DeleteAt,
    /// Blocked: being deleted, waiting for finalizers.
    Blocked,
    /// Something could not be read: kube-gc keeps it and says why.
    Unknown,
    /// Nothing will delete it.
    Keep,
}

impl VerdictKind {
    /// The word as printed.
    pub fn as_str(self) -> &'static str {
        match self {
            VerdictKind::DeleteNow => "delete-now",
            VerdictKind::DeleteAt => "delete-at",
            VerdictKind::Blocked => "blocked",
            VerdictKind::Unknown => "unknown",
            VerdictKind::Keep => "keep",
        }
    }
}

/// Which object.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ObjectId {
    /// `group/version`.
    pub api_version: String,
    /// Kind.
    pub kind: String,
    /// Namespace, for namespaced objects.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub namespace: Option<String>,
    /// Name.
    pub name: String,
    /// UID.
    pub uid: String,
}

/// What one controller makes of the object.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Decision {
    /// `ttl-after-finished`, `volcano-job-ttl`, `retention`, `garbagecollector`.
    pub controller: String,
    /// Whether it governs the object at all.
    pub governs: bool,
    /// Its verdict.
    pub verdict: VerdictKind,
    /// With `delete-at`: when (RFC 3339).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub delete_at: Option<String>,
    /// One line.
    pub summary: String,
    /// The facts behind it, one per line.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub details: Vec<String>,
}

/// An object that keeps another from being deleted, and what keeps *it*.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Blocker {
    /// `Kind namespace/name`.
    pub object: String,
    /// Why it blocks.
    pub why: String,
    /// Its own blockers, recursively.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub blockers: Vec<Blocker>,
}

/// One finalizer of an object being deleted, and what it waits for.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct FinalizerWait {
    /// The finalizer.
    pub finalizer: String,
    /// Where it is, when not `metadata.finalizers` (a namespace's `spec.finalizers`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub field: Option<&'static str>,
    /// Whose it is.
    pub owner: FinalizerOwner,
    /// What it waits for, in a sentence.
    pub waits_for: String,
    /// The objects it waits on.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub blockers: Vec<Blocker>,
}

/// An object with a `deletionTimestamp`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct DeletionInProgress {
    /// `metadata.deletionTimestamp` (RFC 3339); absent when answered from caches that do not
    /// keep it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub since: Option<String>,
    /// Each finalizer known.
    pub finalizers: Vec<FinalizerWait>,
    /// What could not be told about its deletion (from caches that keep only some
    /// finalizers); absent when every finalizer is listed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub unknown: Option<String>,
    /// For a Pod deleted gracefully: its grace period, and what removes it then.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub grace: Option<GracePeriod>,
}

/// The grace period of a Pod being deleted: the server removes it only once its kubelet — or a
/// force deletion — says it has stopped.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct GracePeriod {
    /// `deletionGracePeriodSeconds`.
    pub seconds: i64,
    /// When it ends (`deletionTimestamp`, RFC 3339).
    pub ends_at: String,
    /// What removes the Pod then, in a sentence.
    pub removed_by: String,
}

/// An Event about the object.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct EventLine {
    /// When it last happened.
    pub time: String,
    /// `Normal` or `Warning`.
    #[serde(rename = "type")]
    pub type_: String,
    /// Its reason.
    pub reason: String,
    /// Its message.
    pub message: String,
    /// Who reported it.
    pub source: String,
}

/// Everything `kube-gc explain` says about one object.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Explanation {
    /// The object.
    pub object: ObjectId,
    /// The answer.
    pub verdict: VerdictKind,
    /// With `delete-at`: when (RFC 3339).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub delete_at: Option<String>,
    /// Why, one line per reason.
    pub reasons: Vec<String>,
    /// Every controller's view.
    pub decisions: Vec<Decision>,
    /// For an object being deleted.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub deletion: Option<DeletionInProgress>,
    /// The Events about it.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub events: Vec<EventLine>,
    /// For a namespace: what its deletion waits for, and who finishes it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub namespace: Option<NamespaceReport>,
    /// Where the answer came from and what that source cannot tell (`/debug/explain`).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<String>,
}

/// An object related to the one explained (a dependent, or a dependent's dependent).
#[derive(Clone, Debug)]
pub struct Related {
    /// Its resource.
    pub resource: kube_gc_client::ResourceRef,
    /// Its metadata.
    pub meta: kube_gc_api::ObjectMeta,
}
