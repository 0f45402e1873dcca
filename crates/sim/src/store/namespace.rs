//! The namespace's lifecycle, as a v1.28 kube-apiserver's namespace registry and its
//! `NamespaceLifecycle` admission plugin keep it (exchanges 137–164).
//!
//! Contract:
//! - A namespace is created with `spec.finalizers: [kubernetes]` and phase `Active`
//!   (`server_fields`, exchange 137).
//! - Its first DELETE marks it — `deletionTimestamp`, phase `Terminating`, no grace period —
//!   and it stays, whatever finalizers it has (exchanges 140, 156); a DELETE of a namespace
//!   already marked answers it unchanged while `spec.finalizers` holds anything (141), else
//!   deletes it as any object, by `metadata.finalizers` (157). That rule is the delete path's
//!   (`delete/namespace.rs`); this module holds what it and the rest of the store ask of a
//!   namespace.
//! - It leaves storage when, marked, both `spec.finalizers` and `metadata.finalizers` are
//!   empty: after the write that empties the last of them (`/finalize`, a patch: 158–162).
//! - Only `/finalize` writes `spec.finalizers` (and metadata, as sent; never `status`: 154);
//!   the namespace itself ignores `spec.finalizers` and `status` (145); `/status` writes
//!   `status` only (146).
//! - Nothing may be created in a namespace that is missing (404, 138) or `Terminating`
//!   (403 `NamespaceTerminating`, 143); everything else in it is served as usual (144). The
//!   server never checks a namespace's content before it goes (162–164): that is the namespace
//!   controller's job.

use serde_json::Value;

use crate::object;
use crate::resources::ResourceDef;

/// The finalizer the namespace controller owns.
pub const KUBERNETES_FINALIZER: &str = "kubernetes";

/// Whether `def` is the core `namespaces` resource.
pub fn is_namespaces(def: &ResourceDef) -> bool {
    def.group.is_empty() && def.resource == "namespaces"
}

/// A namespace's `spec.finalizers`.
pub fn spec_finalizers(obj: &Value) -> Vec<String> {
    obj.pointer("/spec/finalizers")
        .and_then(Value::as_array)
        .map(|list| {
            list.iter()
                .filter_map(Value::as_str)
                .map(str::to_owned)
                .collect()
        })
        .unwrap_or_default()
}

/// Whether a namespace refuses new content: its phase is `Terminating` (what the admission
/// plugin reads), or it is marked for deletion.
pub fn is_terminating(obj: &Value) -> bool {
    obj.pointer("/status/phase").and_then(Value::as_str) == Some("Terminating")
        || object::deletion_timestamp(obj).is_some()
}

/// Whether a written namespace leaves storage instead of being stored: marked for deletion,
/// with no finalizer of either kind left.
pub fn is_finished(obj: &Value) -> bool {
    object::deletion_timestamp(obj).is_some()
        && object::finalizers(obj).is_empty()
        && spec_finalizers(obj).is_empty()
}
