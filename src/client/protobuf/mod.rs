//! The Kubernetes protobuf wire format, written here as the JSON decoders were: what
//! kube-controller-manager asks for (`Accept: application/vnd.kubernetes.protobuf,
//! application/json`), because the API server serves it for a fraction of JSON's CPU and a
//! reader can skip what it does not need by length instead of scanning it.
//!
//! One concept per module, each readable on its own:
//!
//! | module | what |
//! |---|---|
//! | [`wire`] | varints, tags, length-delimited slices, skipping every wire type |
//! | [`envelope`] | the `k8s\0` magic and the `runtime.Unknown` naming the object's type |
//! | [`list`] | a LIST body decoded item by item as its chunks arrive |
//! | [`watch`] | a WATCH stream: 4-byte length-prefixed `WatchEvent` frames |
//! | [`schema`] | hand-written descriptor tables: field number → JSON member, value kind |
//! | [`selection`] | which members a reader wants (`metadata`, `spec.ttlSecondsAfterFinished`) |
//! | [`transcode`] | protobuf object bytes → the JSON text the item decoders read |
//! | [`encode`] | JSON → protobuf, envelopes, list bodies, watch frames (the simulated server) |
//!
//! ```
//! use bytes::Bytes;
//! use kube_gc::client::protobuf::{encode, list::{ListEvent, ListStream}, schema, transcode, Selection};
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
//!
//! No protobuf crate: the wire format needs a few dozen lines of varint and length handling,
//! and the descriptors are data. The tables cover the messages kube-gc reads (`meta.v1`
//! metadata, `Status`, `PartialObjectMetadata`; `batch.v1.Job`; `core.v1` Pod with the pod
//! template, Namespace, ConfigMap); custom resources are served as JSON only, except their
//! metadata-only form, which is protobuf (`PartialObjectMetadata`).

#![warn(missing_docs)]

mod chunks;
pub mod encode;
pub mod envelope;
mod json_text;
pub mod list;
pub mod schema;
pub mod selection;
pub mod transcode;
pub mod watch;
pub mod wire;

pub use envelope::{Envelope, EnvelopeError, MAGIC, MEDIA_TYPE};
pub use list::{ListError, ListEvent, ListStream};
pub use selection::Selection;
pub use transcode::TranscodeError;
pub use watch::{WatchError, WatchFrame, WatchFrames};
