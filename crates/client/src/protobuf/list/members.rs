//! The list's small members, decoded whole: its `ListMeta`, and the `Status` a server sends in a
//! list's place.
//!
//! Facts: `message ListMeta {selfLink = 1, resourceVersion = 2, continue = 3,
//! remainingItemCount = 4}` and `message Status` in
//! `staging/src/k8s.io/apimachinery/pkg/apis/meta/v1/generated.proto`.

use super::{ListError, ListStream};
use crate::protobuf::schema;
use crate::protobuf::selection::Selection;
use crate::protobuf::transcode::to_json;
use crate::protobuf::wire::{Reader, WireValue};
use kube_gc_api::{ListMeta, Status};

impl ListStream {
    /// The error for a `Status` in place of the list.
    pub(super) fn status(&self, raw: &[u8]) -> ListError {
        let what = "Status the server sent";
        let type_meta = Some((self.api_version.as_str(), self.kind.as_str()));
        let json = match to_json(&schema::STATUS, raw, type_meta, &Selection::all()) {
            Ok(json) => json,
            Err(e) => return member(what, e),
        };
        match serde_json::from_slice::<Status>(&json) {
            Ok(status) => ListError::Status(Box::new(status)),
            Err(e) => member(what, e),
        }
    }
}

fn member(what: &'static str, e: impl std::error::Error + Send + Sync + 'static) -> ListError {
    ListError::Member {
        what,
        source: Box::new(e),
    }
}

/// Decodes a `meta.v1.ListMeta` (`resourceVersion` = 2, `continue` = 3,
/// `remainingItemCount` = 4; `selfLink` = 1 is no longer set).
pub fn list_meta(bytes: &[u8], base: usize) -> Result<ListMeta, ListError> {
    let mut meta = ListMeta::default();
    let mut reader = Reader::at(bytes, base);
    while let Some(field) = reader.next_field()? {
        let text = |value: WireValue<'_>| match value {
            WireValue::Len(b) => Ok(String::from_utf8_lossy(b).into_owned()),
            other => Err(ListError::WireType {
                what: "a ListMeta string",
                offset: field.offset as u64,
                found: other.wire_type(),
            }),
        };
        match (field.number, field.value) {
            (2, value) => meta.resource_version = Some(text(value)?).filter(|s| !s.is_empty()),
            (3, value) => meta.continue_token = Some(text(value)?).filter(|s| !s.is_empty()),
            (4, WireValue::Varint(n)) => meta.remaining_item_count = Some(n as i64),
            _ => {}
        }
    }
    Ok(meta)
}
