//! The simulated server's protobuf bodies: objects, lists, `Status` bodies and watch frames,
//! written from the stored JSON by the `kube-gc-protobuf` crate's `encode`.
//!
//! Contract:
//! - A body is what a v1.28 kube-apiserver writes: `k8s\0`, then the `runtime.Unknown`
//!   envelope naming the type — the resource's kind and list kind, or `meta.k8s.io/v1`
//!   `PartialObjectMetadata(List)` for the metadata-only form — and the object's bytes; a
//!   watch frame is a 4-byte big-endian length and a `WatchEvent` whose `object.raw` is such a
//!   whole body. Checked byte for byte against exchanges 100, 102–106, 109, 111, 113 and 116
//!   (`tests/sim_protobuf_bytes.rs`).
//! - Only the members the tables describe are written (`encode`'s contract); a member of the
//!   wrong JSON type is an [`EncodeError`] for the caller to answer (the real server would have
//!   refused such an object when it was written).
//! - Nothing is copied to be written but a deletion's presented state (a `Stamped` with
//!   overrides): its metadata only, or the object when it is written whole.
//!
//! The one place the simulated server shares code with kube-gc's client: both stand on the
//! protobuf format crate (its descriptor tables), and nothing else. The sim shares nothing with
//! the client otherwise, so that a misreading of the protocol cannot be mirrored on both sides
//! and pass unseen; a second copy of the descriptor tables would rather double the chances of
//! a wrong field number than catch one. What guards against a mirrored error is the captures:
//! the encoder writes the captured bodies back byte for byte (`kube-gc-protobuf`'s `encode`
//! tests, exchanges 112 and 115), the client's decoder agrees with the JSON captures of the
//! same lists (`tests/protobuf_wire.rs`), and `tests/sim_protobuf_bytes.rs` compares what this
//! module writes, read with the client's decoder, with the real server's bytes.

use bytes::Bytes;
use serde_json::{json, Value};

use crate::resources::ResourceDef;
use crate::stamped::{MetadataOnly, Stamped};
use crate::store::ListPage;
use kube_gc_protobuf::encode::{self, EncodeError};

use super::encoding::Representation;

const META_V1: &str = "meta.k8s.io/v1";

/// The `apiVersion` and `kind` objects of `def` are written as in `representation`.
fn written_as(def: &ResourceDef, representation: Representation) -> (String, String) {
    match representation {
        Representation::Full => (def.api_version(), def.kind.clone()),
        Representation::MetadataOnly => (META_V1.to_owned(), "PartialObjectMetadata".to_owned()),
    }
}

/// One stored object of `def`, as a whole body. The metadata-only form reads only the
/// object's `metadata` (the `PartialObjectMetadata` table has nothing else), so the stored
/// object is written as it is in both forms.
pub fn object(
    def: &ResourceDef,
    representation: Representation,
    object: &Value,
) -> Result<Vec<u8>, EncodeError> {
    let (api_version, kind) = written_as(def, representation);
    encode::object_as(&api_version, &kind, object)
}

/// An object as presented at a resourceVersion or mark of its own, as a whole body.
pub fn stamped(
    def: &ResourceDef,
    representation: Representation,
    stamped: &Stamped,
) -> Result<Vec<u8>, EncodeError> {
    if stamped.is_as_stored() {
        return object(def, representation, stamped.object());
    }
    match representation {
        Representation::Full => object(def, representation, &stamped.value()),
        Representation::MetadataOnly => {
            // A copy of the metadata only, with the overrides written in.
            let metadata = serde_json::to_value(MetadataOnly::stamped(stamped))
                .map_err(|e| type_error("metadata", &e))?;
            object(def, representation, &metadata)
        }
    }
}

/// One page of a LIST as a whole body: `<Kind>List` or `PartialObjectMetadataList`, its
/// `ListMeta` and the items, written from the stored objects.
pub fn list(
    def: &ResourceDef,
    representation: Representation,
    page: &ListPage,
) -> Result<Vec<u8>, EncodeError> {
    let (api_version, list_kind) = match representation {
        Representation::Full => (def.api_version(), def.list_kind()),
        Representation::MetadataOnly => (META_V1.to_owned(), "PartialObjectMetadataList".into()),
    };
    let mut metadata = json!({"resourceVersion": page.resource_version.to_string()});
    if let Some(token) = &page.continue_token {
        metadata["continue"] = json!(token);
    }
    if let Some(count) = page.remaining_item_count {
        metadata["remainingItemCount"] = json!(count);
    }
    let items = page.items.iter().map(|item| &**item);
    encode::list(&api_version, &list_kind, &metadata, items)
}

/// A `Status` body (built by `crate::status`) as a whole body.
pub fn status(body: &Value) -> Result<Vec<u8>, EncodeError> {
    encode::object(body)
}

/// Writes the frames of one protobuf watch.
#[derive(Debug)]
pub struct FrameEncoder {
    def: ResourceDef,
    representation: Representation,
}

impl FrameEncoder {
    /// Frames of objects of `def` in `representation`.
    pub fn new(def: &ResourceDef, representation: Representation) -> FrameEncoder {
        FrameEncoder {
            def: def.clone(),
            representation,
        }
    }

    /// An ADDED, MODIFIED or DELETED frame.
    pub fn event(&self, event_type: &str, object: &Stamped) -> Result<Bytes, EncodeError> {
        let body = stamped(&self.def, self.representation, object)?;
        Ok(Bytes::from(encode::watch_frame(event_type, &body)))
    }

    /// A BOOKMARK: an object of the watched type carrying only its resourceVersion (and the
    /// initial-events-end annotation of a streaming list), as in exchanges 103 and 106.
    pub fn bookmark(&self, rv: u64, initial_events_end: bool) -> Result<Bytes, EncodeError> {
        let mut metadata = json!({"resourceVersion": rv.to_string()});
        if initial_events_end {
            metadata["annotations"] = json!({"k8s.io/initial-events-end": "true"});
        }
        let body = object(
            &self.def,
            self.representation,
            &json!({ "metadata": metadata }),
        )?;
        Ok(Bytes::from(encode::watch_frame("BOOKMARK", &body)))
    }
}

/// The ERROR frame carrying `status_body` (a watch from too old a version: exchange 104).
pub fn error_frame(status_body: &Value) -> Result<Bytes, EncodeError> {
    Ok(Bytes::from(encode::watch_frame(
        "ERROR",
        &status(status_body)?,
    )))
}

fn type_error(at: &str, error: &serde_json::Error) -> EncodeError {
    EncodeError::Type {
        at: at.to_owned(),
        expected: "a JSON value",
        found: error.to_string(),
    }
}
