//! The client's side of the Kubernetes protobuf wire format: LIST bodies and WATCH streams
//! decoded as their chunks arrive, on the format of the `kube-gc-protobuf` crate (re-exported
//! here under its module names: [`wire`], [`envelope`], [`schema`], [`selection`],
//! [`transcode`], [`encode`]).
//!
//! | module | what |
//! |---|---|
//! | [`list`] | a LIST body decoded item by item as its chunks arrive |
//! | [`watch`] | a WATCH stream: 4-byte length-prefixed `WatchEvent` frames |
//! | `chunks` | the bytes of a body as they arrive, read across chunk boundaries |
//!
//! ```
//! use bytes::Bytes;
//! use kube_gc_client::protobuf::{encode, list::{ListEvent, ListStream}, schema, transcode, Selection};
//! use serde_json::json;
//!
//! // A JobList body as a server sends it (here written by `encode`)...
//! let job = json!({"metadata": {"name": "pi", "uid": "u1"}, "spec": {"ttlSecondsAfterFinished": 0}});
//! let body = encode::list("batch/v1", "JobList", &json!({"resourceVersion": "7"}), [&job])?;
//! // ...fed in chunks split anywhere, yields each item as it completes.
//! let mut list = ListStream::new();
//! let (a, b) = body.split_at(9);
//! let mut items = Vec::new();
//! for chunk in [a, b] {
//!     list.feed(Bytes::copy_from_slice(chunk));
//!     while let Some(event) = list.next_event()? {
//!         if let ListEvent::Item(bytes) = event {
//!             // Only the members a TTL judgement reads become JSON.
//!             let wanted = Selection::paths(["metadata.name", "spec.ttlSecondsAfterFinished"]);
//!             items.push(transcode::to_json(&schema::JOB, &bytes, None, &wanted)?);
//!         }
//!     }
//! }
//! list.finish()?;
//! assert_eq!(items, [br#"{"metadata":{"name":"pi"},"spec":{"ttlSecondsAfterFinished":0}}"#.to_vec()]);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

#![warn(missing_docs)]

mod chunks;
pub mod list;
#[cfg(test)]
mod tests;
pub mod watch;

pub use kube_gc_protobuf::{encode, envelope, schema, selection, transcode, wire};

pub use envelope::{Envelope, EnvelopeError, MAGIC, MEDIA_TYPE};
pub use list::{ListError, ListEvent, ListStream};
pub use selection::Selection;
pub use transcode::TranscodeError;
pub use watch::{WatchError, WatchFrame, WatchFrames};
