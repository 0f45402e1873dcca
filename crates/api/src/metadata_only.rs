//! Metadata-only objects: [`PartialObjectMetadata`] and [`PartialObjectMetadataList`].
//!
//! The server returns these instead of full objects when a GET, LIST or WATCH asks for
//! `Accept: application/json;as=PartialObjectMetadata[List];g=meta.k8s.io;v=v1`. That works for
//! every resource, built-in or custom, which is how a garbage collector watches resources whose
//! schema it does not know.
//!
//! Contract: the body's `apiVersion`/`kind` are `meta.k8s.io/v1` / `PartialObjectMetadata`, not
//! those of the object described; callers take the object's group, version and kind from the
//! request they made.

use serde::{Deserialize, Serialize};

use super::list::List;
use super::meta::{ObjectMeta, TypeMeta};
use super::resource::HasMetadata;

/// The `Accept` header for a metadata-only GET or WATCH.
pub const ACCEPT_PARTIAL_OBJECT_METADATA: &str =
    "application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1";
/// The `Accept` header for a DELETE whose answer is wanted as metadata: the object a finalizer
/// keeps, or that a resource answers with (Pods), comes back as its `PartialObjectMetadata`;
/// a `Status` stays a `Status` (exchanges 69–71). JSON is the fallback, as in the header
/// client-go's metadata client sends on a GET. (That client's DELETE, which
/// kube-controller-manager's garbage collector deletes with, discards the answer unread and
/// takes it as protobuf; kube-gc reads protobuf for lists and watches only
/// (`client::negotiate`), so it asks for less instead.)
pub const ACCEPT_PARTIAL_OBJECT_METADATA_OR_JSON: &str =
    "application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1,application/json";
/// The `Accept` header for a metadata-only LIST.
pub const ACCEPT_PARTIAL_OBJECT_METADATA_LIST: &str =
    "application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1";

/// Any object reduced to its metadata (`metav1.PartialObjectMetadata`).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct PartialObjectMetadata {
    /// `meta.k8s.io/v1` + `PartialObjectMetadata` (not the described object's type).
    #[serde(flatten)]
    pub types: TypeMeta,
    /// The described object's metadata.
    #[serde(default)]
    pub metadata: ObjectMeta,
}

/// A metadata-only list (`metav1.PartialObjectMetadataList`).
pub type PartialObjectMetadataList = List<PartialObjectMetadata>;

impl HasMetadata for PartialObjectMetadata {
    fn metadata(&self) -> &ObjectMeta {
        &self.metadata
    }
    fn metadata_mut(&mut self) -> &mut ObjectMeta {
        &mut self.metadata
    }
}
