//! The Kubernetes protobuf wire format, written by hand as kube-gc's JSON decoders are: what
//! kube-controller-manager asks an API server for (`Accept: application/vnd.kubernetes.protobuf,
//! application/json`), because the server serves it for a fraction of JSON's CPU and a reader can
//! skip what it does not need by length instead of scanning it.
//!
//! This crate is the format itself, which both sides of the wire need: kube-gc's client reads it
//! (its list and watch decoders, in `kube-gc-client`, stand on [`wire`], [`envelope`] and
//! [`transcode`]) and the simulated API server writes it ([`encode`]). Neither imports the other.
//!
//! One concept per module, each readable on its own:
//!
//! | module | what |
//! |---|---|
//! | [`wire`] | varints, tags, length-delimited slices, skipping every wire type |
//! | [`envelope`] | the `k8s\0` magic and the `runtime.Unknown` naming the object's type |
//! | [`schema`] | hand-written descriptor tables: field number → JSON member, value kind |
//! | [`selection`] | which members a reader wants (`metadata`, `spec.ttlSecondsAfterFinished`) |
//! | [`transcode`] | protobuf object bytes → the JSON text the item decoders read |
//! | [`encode`] | JSON → protobuf, envelopes, list bodies, watch frames (the simulated server) |
//!
//! ```
//! use kube_gc_protobuf::{encode, schema, transcode, Selection};
//! use serde_json::json;
//!
//! // A Job as a server writes it...
//! let job = json!({"metadata": {"name": "pi", "uid": "u1"}, "spec": {"ttlSecondsAfterFinished": 0}});
//! let bytes = encode::message_bytes(&schema::JOB, &job)?;
//! // ...becomes JSON text again, with only the members a TTL judgement reads.
//! let wanted = Selection::paths(["metadata.name", "spec.ttlSecondsAfterFinished"]);
//! let text = transcode::to_json(&schema::JOB, &bytes, None, &wanted)?;
//! assert_eq!(text, br#"{"metadata":{"name":"pi"},"spec":{"ttlSecondsAfterFinished":0}}"#.to_vec());
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! No protobuf crate: the wire format needs a few dozen lines of varint and length handling,
//! and the descriptors are data. The tables cover the messages kube-gc reads (`meta.v1`
//! metadata, `Status`, `PartialObjectMetadata`; `batch.v1.Job`; `core.v1` Pod with the pod
//! template, Namespace, ConfigMap, Event) and what client-go writes to a server that
//! kube-gc simulates (`meta.v1.DeleteOptions`, `core.v1.Event`, Pods and Job status);
//! custom resources are served as JSON only, except their
//! metadata-only form, which is protobuf (`PartialObjectMetadata`).

#![warn(missing_docs)]

pub mod encode;
pub mod envelope;
mod json_text;
pub mod schema;
pub mod selection;
pub mod transcode;
pub mod wire;

pub use envelope::{Envelope, EnvelopeError, MAGIC, MEDIA_TYPE};
pub use selection::Selection;
pub use transcode::TranscodeError;
