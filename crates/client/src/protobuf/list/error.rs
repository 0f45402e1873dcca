//! [`ListError`]: why a protobuf list body could not be decoded, with where.

use super::MAX_VALUE_BYTES;
use crate::protobuf::envelope::EnvelopeError;
use crate::protobuf::wire::{WireError, WireType};
use kube_gc_api::Status;

/// Why a list body could not be decoded.
#[derive(Debug, thiserror::Error)]
pub enum ListError {
    /// The body does not start with `k8s\0`.
    #[error("protobuf list body: {0}")]
    Envelope(#[from] EnvelopeError),
    /// Malformed protobuf at a field boundary.
    #[error("protobuf list body: {0}")]
    Wire(#[from] WireError),
    /// The body ended before the list did.
    #[error("protobuf list body ended after {offset} bytes, {inside}")]
    Truncated {
        /// The body's length.
        offset: u64,
        /// What was cut: `inside item 3 (1200 of 7081 bytes received)`.
        inside: String,
    },
    /// A value declares more bytes than allowed.
    #[error("protobuf list body: {what} at byte {offset} declares {len} bytes, above the limit of {MAX_VALUE_BYTES}")]
    TooLarge {
        /// What it is.
        what: &'static str,
        /// Where its tag starts.
        offset: u64,
        /// Its declared length.
        len: u64,
    },
    /// The envelope's `raw` declares a length no body can have: its end would lie past the
    /// largest byte offset there is.
    #[error(
        "protobuf list body: the list at byte {offset} declares {len} bytes, past any body's end"
    )]
    RawTooLong {
        /// Where its tag starts.
        offset: u64,
        /// Its declared length.
        len: u64,
    },
    /// A field of the list runs past the end of the envelope's `raw`.
    #[error("protobuf list body: the field at byte {offset} runs past the end of the list at byte {end}")]
    Overrun {
        /// Where the field starts.
        offset: u64,
        /// Where the list ends.
        end: u64,
    },
    /// An envelope or list field has a wire type its message does not allow.
    #[error("protobuf list body: {what} at byte {offset} is {found}, expected length-delimited")]
    WireType {
        /// Which field.
        what: &'static str,
        /// Where its tag starts.
        offset: u64,
        /// The wire type found.
        found: WireType,
    },
    /// The server sent a `Status` instead of a list.
    #[error("the server answered a Status instead of a list: {}", .0.message.as_deref().unwrap_or("(no message)"))]
    Status(Box<Status>),
    /// The list's metadata, or a `Status`, did not decode.
    #[error("protobuf list body: could not decode the {what}: {source}")]
    Member {
        /// Which part.
        what: &'static str,
        /// Why.
        #[source]
        source: Box<dyn std::error::Error + Send + Sync>,
    },
}
