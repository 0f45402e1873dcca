//! [`ListBody`]: a LIST response encoded while it is sent, a slice of items at a time.
//!
//! Contract: the bytes are exactly those of `serde_json::to_vec(&ListDocument)` for the same
//! page (tested below), cut into chunks of about [`CHUNK_BYTES`]. Encoding happens as the
//! connection asks for the next chunk, so a `resourceVersion=0` list of 100,000 Jobs (~600 MB)
//! is never held whole: the server holds the page's `Arc`s to the stored objects and one chunk.
//! With no `Content-Length`, HTTP/1.1 sends it chunked, as a real API server sends a large list.

use std::sync::Arc;

use bytes::Bytes;
use futures_util::stream;
use http::Response;
use http_body_util::{BodyExt, StreamBody};
use hyper::body::Frame;
use serde_json::Value;

use super::response::{self, Body, ListDocument, ListItem, Representation};
use crate::resources::ResourceDef;
use crate::store::ListPage;

/// About how many bytes each chunk holds (one item more at most).
pub const CHUNK_BYTES: usize = 64 * 1024;

/// The chunks of one list response.
pub struct ListBody {
    /// `{"kind":…,"metadata":{…},"items":[` until the first chunk takes it.
    head: Option<Vec<u8>>,
    items: std::vec::IntoIter<Arc<Value>>,
    /// Whether an item was written (the next one needs a comma).
    wrote_item: bool,
    /// `]}` was written.
    done: bool,
    representation: Representation,
    keep_type_meta: bool,
}

impl ListBody {
    /// The body for `page` of the resource `def`, items as `representation` says.
    pub fn new(def: &ResourceDef, page: ListPage, representation: Representation) -> Self {
        let empty = ListPage {
            items: Vec::new(),
            resource_version: page.resource_version,
            continue_token: page.continue_token.clone(),
            remaining_item_count: page.remaining_item_count,
        };
        let mut head = serde_json::to_vec(&ListDocument {
            def,
            page: &empty,
            representation,
        })
        .unwrap_or_default();
        // `…"items":[]}` → `…"items":[`: the items and the closing `]}` follow.
        head.truncate(head.len().saturating_sub(2));
        ListBody {
            head: Some(head),
            items: page.items.into_iter(),
            wrote_item: false,
            done: false,
            representation,
            keep_type_meta: def.is_custom,
        }
    }

    /// The HTTP response streaming this body.
    pub fn into_response(self) -> Response<Body> {
        let frames = stream::iter(self.map(|chunk| Ok(Frame::data(chunk))));
        response::streaming(StreamBody::new(frames).boxed())
    }

    /// Appends items to `chunk` until it holds [`CHUNK_BYTES`] or the items run out.
    fn fill(&mut self, chunk: &mut Vec<u8>) {
        while chunk.len() < CHUNK_BYTES {
            let Some(obj) = self.items.next() else {
                chunk.extend_from_slice(b"]}");
                self.done = true;
                return;
            };
            if self.wrote_item {
                chunk.push(b',');
            }
            self.wrote_item = true;
            let item = ListItem {
                obj: &obj,
                representation: self.representation,
                keep_type_meta: self.keep_type_meta,
            };
            // Encoding a JSON value into memory cannot fail.
            let _ = serde_json::to_writer(&mut *chunk, &item);
        }
    }
}

impl Iterator for ListBody {
    type Item = Bytes;

    fn next(&mut self) -> Option<Bytes> {
        if self.done {
            return None;
        }
        let mut chunk = self
            .head
            .take()
            .unwrap_or_else(|| Vec::with_capacity(CHUNK_BYTES + 8 * 1024));
        self.fill(&mut chunk);
        Some(Bytes::from(chunk))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn page(items: usize) -> ListPage {
        ListPage {
            items: (0..items)
                .map(|i| {
                    Arc::new(json!({"kind": "Job", "apiVersion": "batch/v1",
                        "metadata": {"name": format!("job-{i}"), "namespace": "default"},
                        "spec": {"pad": "x".repeat(700)}}))
                })
                .collect(),
            resource_version: 77,
            continue_token: Some("next".into()),
            remaining_item_count: Some(3),
        }
    }

    #[test]
    fn the_chunks_join_into_the_whole_document() {
        let jobs = ResourceDef::new("batch", "v1", "jobs", "Job");
        let mut crd = ResourceDef::new("batch.volcano.sh", "v1alpha1", "jobs", "Job");
        crd.is_custom = true;
        for def in [&jobs, &crd] {
            for representation in [Representation::Full, Representation::MetadataOnly] {
                for items in [0, 1, 250] {
                    let page = page(items);
                    let whole = serde_json::to_vec(&ListDocument {
                        def,
                        page: &page,
                        representation,
                    })
                    .unwrap();
                    let chunks: Vec<Bytes> = ListBody::new(def, page, representation).collect();
                    assert_eq!(chunks.concat(), whole, "{items} items");
                    let expected_chunks = whole.len() / CHUNK_BYTES + 1;
                    assert!(chunks.len() <= expected_chunks + 1, "{}", chunks.len());
                    assert!(chunks.iter().all(|c| c.len() < CHUNK_BYTES + 2048));
                }
            }
        }
    }
}
