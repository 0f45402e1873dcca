//! Decoding a protobuf WATCH stream frame by frame as its chunks arrive.
//!
//! ```text
//!  ┌ 4 bytes, big-endian: n ┐┌──────── n bytes: meta.v1.WatchEvent ──────────────────────┐
//!  │ 00 00 06 a7            ││ 1 type "ADDED"   2 object RawExtension { 1 raw }         │ …
//!  └────────────────────────┘└──────────────────────────────────────────┬──────────────┘
//!                                   raw = k8s\0 + runtime.Unknown {batch/v1 Job, raw = Job}
//! ```
//!
//! Facts, from kubernetes/kubernetes: the framing is `LengthDelimitedFramer`
//! (`staging/src/k8s.io/apimachinery/pkg/runtime/serializer/protobuf/protobuf.go`), which writes
//! each frame as a 4-byte big-endian length and the frame
//! (`staging/src/k8s.io/apimachinery/pkg/util/framer/framer.go`); the event is `message
//! WatchEvent {type = 1, object = 2}` and `message RawExtension {raw = 1}`
//! (`.../apis/meta/v1/generated.proto`, `.../runtime/generated.proto`). What `raw` holds was
//! captured from a real v1.28.7 server (`fixtures/real-apiserver/exchanges/103`–`108`): a whole
//! protobuf body, `k8s\0` magic and `runtime.Unknown` envelope included, for every event type
//! (ADDED, MODIFIED, DELETED, BOOKMARK, and ERROR with a `v1 Status`) — the watch handler
//! encodes the object with the same serializer as a GET (`EmbeddedEncoder`,
//! `staging/src/k8s.io/apiserver/pkg/endpoints/handlers/watch.go`). So each event names its own
//! type, and a metadata-only watch's objects are `meta.k8s.io/v1 PartialObjectMetadata`.
//!
//! Contract:
//! - [`WatchFrames::feed`] takes chunks split anywhere; [`WatchFrames::next_frame`] hands out each
//!   event once its last byte has arrived, holding at most one frame being assembled. A frame
//!   inside one chunk is not copied, and neither is its object (a slice of the frame).
//! - [`WatchFrames::finish`] says whether the stream ended between frames; errors name the
//!   byte offset and the frame.
//! - [`WatchFrame::envelope`] reads the object's envelope; a `raw` without the magic (not seen
//!   from a real server) is refused, since without it nothing says what type the object is.

use bytes::Bytes;

use super::chunks::{Chunks, Pending};
use super::envelope::{Envelope, EnvelopeError};
use super::selection::Selection;
use super::transcode::{object_to_json, TranscodeError};
use super::wire::{Reader, WireError, WireValue};
use kube_gc_api::Status;

/// The largest frame accepted: far above the server's ~3 MiB object limit.
pub const MAX_FRAME_BYTES: usize = 64 * 1024 * 1024;

/// Why a watch stream could not be decoded.
#[derive(Debug, thiserror::Error)]
pub enum WatchError {
    /// The stream ended inside a frame.
    #[error("protobuf watch stream ended after {offset} bytes, inside frame {frame} ({received} of {expected} bytes received)")]
    Truncated {
        /// The stream's length.
        offset: u64,
        /// The frame's index, from 0.
        frame: usize,
        /// Bytes of it received (the length prefix included while it is incomplete).
        received: usize,
        /// Bytes expected.
        expected: usize,
    },
    /// A frame declares more bytes than allowed.
    #[error("protobuf watch frame {frame} at byte {offset} declares {len} bytes, above the limit of {MAX_FRAME_BYTES}")]
    TooLarge {
        /// The frame's index.
        frame: usize,
        /// Where its length prefix starts.
        offset: u64,
        /// Its declared length.
        len: u32,
    },
    /// A frame is not a well-formed `WatchEvent`.
    #[error("protobuf watch frame {frame}: malformed WatchEvent: {source}")]
    Event {
        /// The frame's index.
        frame: usize,
        /// What is wrong (offsets within the stream).
        #[source]
        source: WireError,
    },
    /// A `WatchEvent` field of the wrong wire type, or a type that is not UTF-8.
    #[error("protobuf watch frame {frame}: the WatchEvent's {what} is malformed")]
    Field {
        /// The frame's index.
        frame: usize,
        /// Which field.
        what: &'static str,
    },
    /// An `ERROR` event's object is not a `Status`.
    #[error("protobuf watch ERROR event: {0}")]
    Status(String),
}

/// One event of a protobuf watch.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct WatchFrame {
    /// `ADDED`, `MODIFIED`, `DELETED`, `BOOKMARK` or `ERROR`.
    pub event_type: String,
    /// The object's bytes as sent: `k8s\0` + `runtime.Unknown`.
    pub object: Bytes,
}

impl WatchFrame {
    /// The object's envelope: its `apiVersion`, `kind` and protobuf bytes.
    pub fn envelope(&self) -> Result<Envelope<'_>, EnvelopeError> {
        Envelope::decode(&self.object)
    }

    /// The object as JSON text, with `kind` and `apiVersion`, keeping `selection`.
    pub fn to_json(&self, selection: &Selection) -> Result<Vec<u8>, TranscodeError> {
        object_to_json(&self.envelope()?, selection)
    }

    /// An `ERROR` event's `Status` (e.g. the 410 `Expired` of a too-old resourceVersion).
    pub fn status(&self) -> Result<Status, WatchError> {
        let envelope = self
            .envelope()
            .map_err(|e| WatchError::Status(e.to_string()))?;
        if !envelope.is_status() {
            return Err(WatchError::Status(format!(
                "the object is {} {}, not a Status",
                envelope.api_version, envelope.kind
            )));
        }
        let json = object_to_json(&envelope, &Selection::all())
            .map_err(|e| WatchError::Status(e.to_string()))?;
        serde_json::from_slice(&json).map_err(|e| WatchError::Status(e.to_string()))
    }
}

/// Where the decoder is.
#[derive(Debug)]
enum State {
    /// The 4-byte length: the bytes received so far.
    Length { bytes: [u8; 4], have: usize },
    /// The frame's body.
    Body { len: usize },
}

/// The streaming decoder of one protobuf watch stream.
#[derive(Debug)]
pub struct WatchFrames {
    chunks: Chunks,
    state: State,
    pending: Pending,
    /// Frames handed out so far.
    frames: usize,
    /// Stream offset where the current frame's length prefix starts.
    frame_start: u64,
}

impl Default for WatchFrames {
    fn default() -> Self {
        WatchFrames::new()
    }
}

impl WatchFrames {
    /// A decoder at the start of a stream.
    pub fn new() -> Self {
        WatchFrames {
            chunks: Chunks::default(),
            state: State::Length {
                bytes: [0; 4],
                have: 0,
            },
            pending: Pending::default(),
            frames: 0,
            frame_start: 0,
        }
    }

    /// Queues the next chunk. Drain [`next_frame`](Self::next_frame) after each feed.
    pub fn feed(&mut self, chunk: Bytes) {
        self.chunks.push(chunk);
    }

    /// Frames handed out so far.
    pub fn frames(&self) -> usize {
        self.frames
    }

    /// The next event, or `None` when the bytes fed so far hold no further complete one.
    pub fn next_frame(&mut self) -> Result<Option<WatchFrame>, WatchError> {
        loop {
            match &mut self.state {
                State::Length { bytes, have } => {
                    if *have == 0 {
                        self.frame_start = self.chunks.offset();
                    }
                    let Some(byte) = self.chunks.take_byte() else {
                        return Ok(None);
                    };
                    bytes[*have] = byte;
                    *have += 1;
                    if *have == 4 {
                        let len = u32::from_be_bytes(*bytes);
                        let len = usize::try_from(len)
                            .ok()
                            .filter(|&n| n <= MAX_FRAME_BYTES)
                            .ok_or(WatchError::TooLarge {
                                frame: self.frames,
                                offset: self.frame_start,
                                len,
                            })?;
                        self.state = State::Body { len };
                    }
                }
                State::Body { len } => {
                    let len = *len;
                    // A zero-length frame (an empty WatchEvent) completes without input.
                    let Some(frame) = self.chunks.take_value(len, &mut self.pending) else {
                        return Ok(None);
                    };
                    self.state = State::Length {
                        bytes: [0; 4],
                        have: 0,
                    };
                    let event = self.event(frame)?;
                    self.frames += 1;
                    return Ok(Some(event));
                }
            }
        }
    }

    /// Checks that the stream, fed whole, ended between frames.
    pub fn finish(self) -> Result<(), WatchError> {
        let (received, expected) = match self.state {
            State::Length { have: 0, .. } => return Ok(()),
            State::Length { have, .. } => (have, 4),
            State::Body { len } => (Chunks::received(&self.pending), len),
        };
        Err(WatchError::Truncated {
            offset: self.chunks.offset(),
            frame: self.frames,
            received,
            expected,
        })
    }

    /// Decodes a frame's `WatchEvent`.
    fn event(&self, frame: Bytes) -> Result<WatchFrame, WatchError> {
        let index = self.frames;
        let base = usize::try_from(self.frame_start + 4).unwrap_or(usize::MAX);
        let wire = |source| WatchError::Event {
            frame: index,
            source,
        };
        let field = |what| WatchError::Field { frame: index, what };
        let mut event_type = String::new();
        let mut object = Bytes::new();
        let mut reader = Reader::at(&frame, base);
        while let Some(f) = reader.next_field().map_err(wire)? {
            match (f.number, f.value) {
                (1, WireValue::Len(text)) => {
                    event_type = std::str::from_utf8(text)
                        .map_err(|_| field("type"))?
                        .to_owned();
                }
                (2, WireValue::Len(extension)) => {
                    object = raw_of(&frame, extension, base).map_err(wire)?;
                }
                (1, _) => return Err(field("type")),
                (2, _) => return Err(field("object")),
                _ => {} // Unknown fields are skipped.
            }
        }
        Ok(WatchFrame { event_type, object })
    }
}

/// The `raw` (field 1) of a `RawExtension` lying inside `frame`, as a slice of it.
fn raw_of(frame: &Bytes, extension: &[u8], frame_base: usize) -> Result<Bytes, WireError> {
    let start = extension.as_ptr() as usize - frame.as_ptr() as usize;
    let mut raw = Bytes::new();
    let mut reader = Reader::at(extension, frame_base + start);
    while let Some(f) = reader.next_field()? {
        if let (1, WireValue::Len(bytes)) = (f.number, f.value) {
            raw = frame.slice_ref(bytes);
        }
    }
    Ok(raw)
}

#[cfg(test)]
mod tests;
