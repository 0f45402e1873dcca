//! Decoding a protobuf LIST body item by item as it streams in, never holding the whole body.
//!
//! ```text
//!  k8s\0 │ Unknown 1 typeMeta {batch/v1, JobList}
//!        │         2 raw ─┬─ JobList 1 metadata  ListMeta {2 resourceVersion, 3 continue, 4 remainingItemCount}
//!        │                ├─         2 items     Job ─▶ ListEvent::Item   (one at a time)
//!        │                └─         2 items     Job ─▶ ListEvent::Item
//!        │         3 contentEncoding "", 4 contentType ""
//! ```
//!
//! Facts: every list (`batch.v1.JobList`, `core.v1.PodList`, `meta.v1.PartialObjectMetadataList`,
//! …) is `{metadata = 1 (ListMeta), items = 2 (repeated)}` — `message JobList` in
//! `staging/src/k8s.io/api/batch/v1/generated.proto`, `message PodList` in `.../core/v1/`,
//! `message PartialObjectMetadataList` and `message ListMeta` in
//! `staging/src/k8s.io/apimachinery/pkg/apis/meta/v1/generated.proto`. The envelope: see
//! [`envelope`](super::envelope).
//!
//! Contract:
//! - [`ListStream::feed`] takes body chunks split anywhere; [`ListStream::next_event`] hands out, in
//!   body order, the envelope's type, the list's metadata and each item's protobuf bytes the
//!   moment its last byte has arrived. Drained after each feed, it holds at most one item being
//!   assembled and the unread rest of a chunk — never the body. An item inside one chunk is a
//!   zero-copy slice of it.
//! - The metadata may come before, between or after the items; fields the list message does
//!   not define are skipped without being held, whatever their wire type.
//! - The same events come out however the body is split (property-tested in
//!   `tests/protobuf_wire.rs`).
//! - [`ListStream::finish`] says whether the body ended where a list may end; every error names
//!   the byte offset and what it was inside ("item 3, 1200 of 7081 bytes received").
//! - A `Status` envelope (what the server sends instead of a list) becomes
//!   [`ListError::Status`]. No single value may exceed [`MAX_VALUE_BYTES`].

use bytes::Bytes;

use super::chunks::{Chunks, Pending, PendingVarint};
use super::envelope::{decode_type_meta, EnvelopeError, MAGIC};
use super::wire::{split_tag, WireType};
use kube_gc_api::ListMeta;

/// The largest item or envelope member accepted: far above the API server's ~3 MiB object
/// limit, so only a broken body reaches it.
pub const MAX_VALUE_BYTES: usize = 64 * 1024 * 1024;

/// What a list body yields, in body order.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ListEvent {
    /// The envelope's type: e.g. `batch/v1` + `JobList`.
    Type {
        /// `apiVersion`.
        api_version: String,
        /// `kind` of the list.
        kind: String,
    },
    /// The list's `metadata`.
    Metadata(ListMeta),
    /// One item's protobuf bytes (a `batch.v1.Job`, no envelope, no type).
    Item(Bytes),
}

/// What the next bytes are.
#[derive(Debug)]
enum State {
    /// The magic: how many of its bytes have been checked.
    Magic(usize),
    /// A field's tag.
    Tag,
    /// The varint value of a field nobody reads.
    SkipVarint,
    /// The length of a length-delimited field.
    Len { number: u32, tag_at: u64 },
    /// A length-delimited value kept whole.
    Collect { target: Target, len: usize },
    /// Bytes skipped unread.
    Skip(u64),
}

/// Which value is being collected.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Target {
    TypeMeta,
    ContentEncoding,
    StatusRaw,
    ListMeta,
    Item,
}

/// The streaming decoder of one protobuf list body.
#[derive(Debug)]
pub struct ListStream {
    chunks: Chunks,
    state: State,
    varint: PendingVarint,
    pending: Pending,
    /// Body offset where the envelope's `raw` (the list message) ends, while inside it.
    raw_end: Option<u64>,
    /// Whether the envelope's `raw` has been seen.
    seen_raw: bool,
    /// The envelope's type, once read.
    api_version: String,
    kind: String,
    items: usize,
}

impl Default for ListStream {
    fn default() -> Self {
        ListStream::new()
    }
}

impl ListStream {
    /// A decoder at the start of a body.
    pub fn new() -> Self {
        ListStream {
            chunks: Chunks::default(),
            state: State::Magic(0),
            varint: PendingVarint::default(),
            pending: Pending::default(),
            raw_end: None,
            seen_raw: false,
            api_version: String::new(),
            kind: String::new(),
            items: 0,
        }
    }

    /// Queues the next chunk of the body. Drain [`next_event`](Self::next_event) after each
    /// feed to hold no more than one item.
    pub fn feed(&mut self, chunk: Bytes) {
        self.chunks.push(chunk);
    }

    /// Items handed out so far.
    pub fn items(&self) -> usize {
        self.items
    }

    /// The next event, or `None` when the bytes fed so far hold no further complete one.
    pub fn next_event(&mut self) -> Result<Option<ListEvent>, ListError> {
        loop {
            // A value of zero bytes is complete without input.
            let ready = matches!(self.state, State::Collect { len: 0, .. } | State::Skip(0));
            if self.chunks.is_empty() && !ready {
                return Ok(None);
            }
            if let Some(event) = self.step()? {
                return Ok(Some(event));
            }
        }
    }

    /// Checks that the body, fed whole, ended where a list may end.
    pub fn finish(self) -> Result<(), ListError> {
        let offset = self.chunks.offset();
        let inside = match (&self.state, self.raw_end) {
            (State::Tag, None) if self.varint.is_started() => "inside a field tag".to_owned(),
            (State::Tag, None) if self.seen_raw => return Ok(()),
            (State::Tag, None) => "before the envelope's raw object".to_owned(),
            (State::Magic(_), _) => "inside the k8s\\0 magic".to_owned(),
            (
                State::Collect {
                    target: Target::Item,
                    len,
                },
                _,
            ) => format!(
                "inside item {} ({} of {len} bytes received)",
                self.items,
                Chunks::received(&self.pending)
            ),
            (State::Collect { target, len }, _) => format!(
                "inside the {} ({} of {len} bytes received)",
                describe(*target),
                Chunks::received(&self.pending)
            ),
            (_, Some(end)) => format!("inside the list, which ends at byte {end}"),
            (State::Len { number, .. }, None) => {
                format!("inside the length of envelope field {number}")
            }
            (_, None) => "inside an envelope field".to_owned(),
        };
        Err(ListError::Truncated { offset, inside })
    }

    /// Reads from the queued chunks until one event, or until they run out.
    fn step(&mut self) -> Result<Option<ListEvent>, ListError> {
        match self.state {
            State::Magic(checked) => {
                let Some(byte) = self.chunks.take_byte() else {
                    return Ok(None);
                };
                if byte != MAGIC[checked] {
                    let mut start = MAGIC[..checked].to_vec();
                    start.push(byte);
                    return Err(EnvelopeError::NoMagic { start }.into());
                }
                self.state = match checked + 1 {
                    4 => State::Tag,
                    n => State::Magic(n),
                };
            }
            State::Tag => {
                if let Some((tag, at)) = self.chunks.take_varint(&mut self.varint)? {
                    let (number, wire_type) =
                        split_tag(tag, usize::try_from(at).unwrap_or(usize::MAX))?;
                    if let Some(what) = self.known_field(number) {
                        // A known field read as another wire type would be lost silently.
                        if wire_type != WireType::Len {
                            return Err(ListError::WireType {
                                what,
                                offset: at,
                                found: wire_type,
                            });
                        }
                    }
                    self.state = match wire_type {
                        WireType::Varint => State::SkipVarint,
                        WireType::Fixed64 => State::Skip(8),
                        WireType::Fixed32 => State::Skip(4),
                        WireType::Len => State::Len { number, tag_at: at },
                    };
                    self.check_within_raw(self.chunks.offset())?;
                }
            }
            State::SkipVarint => {
                if self.chunks.take_varint(&mut self.varint)?.is_some() {
                    self.field_done()?;
                }
            }
            State::Skip(left) => {
                let skipped = self.chunks.skip(left);
                self.state = State::Skip(left - skipped);
                if skipped == left {
                    self.field_done()?;
                }
            }
            State::Len { number, tag_at } => {
                if let Some((len, _)) = self.chunks.take_varint(&mut self.varint)? {
                    self.start_value(number, tag_at, len)?;
                }
            }
            State::Collect { target, len } => {
                if let Some(value) = self.chunks.take_value(len, &mut self.pending) {
                    let event = self.collected(target, value)?;
                    self.field_done()?;
                    return Ok(event);
                }
            }
        }
        Ok(None)
    }

    /// What field `number` is at the current level, if the envelope or the list defines it
    /// (all of them length-delimited). `contentType` (4) is skipped: servers leave it empty.
    fn known_field(&self, number: u32) -> Option<&'static str> {
        match (self.raw_end.is_some(), number) {
            (false, 1) => Some("the envelope's typeMeta"),
            (false, 2) => Some("the envelope's raw object"),
            (false, 3) => Some("the envelope's contentEncoding"),
            (false, 4) => Some("the envelope's contentType"),
            (true, 1) => Some("the list's metadata"),
            (true, 2) => Some("an item"),
            _ => None,
        }
    }

    /// After a length: what to do with the value of field `number`.
    fn start_value(&mut self, number: u32, tag_at: u64, len: u64) -> Result<(), ListError> {
        let in_list = self.raw_end.is_some();
        let target = match (in_list, number) {
            (false, 1) => Some(Target::TypeMeta),
            (false, 2) if self.kind == "Status" => Some(Target::StatusRaw),
            (false, 2) => {
                // The list itself: its fields are read as they come, never held whole.
                self.seen_raw = true;
                // The list is streamed, not held, so its length has no limit but arithmetic's
                // (a length near 2^64 overflowed here: the fuzz target `protobuf_list`).
                let end = self
                    .chunks
                    .offset()
                    .checked_add(len)
                    .ok_or(ListError::RawTooLong {
                        offset: tag_at,
                        len,
                    })?;
                self.raw_end = Some(end);
                self.state = State::Tag;
                if len == 0 {
                    self.field_done()?;
                }
                return Ok(());
            }
            (false, 3) => Some(Target::ContentEncoding),
            (true, 1) => Some(Target::ListMeta),
            (true, 2) => Some(Target::Item),
            _ => None,
        };
        self.check_within_raw(self.chunks.offset().saturating_add(len))
            .map_err(|_| ListError::Overrun {
                offset: tag_at,
                end: self.raw_end.unwrap_or_default(),
            })?;
        self.state = match target {
            Some(target) => {
                let len = usize::try_from(len)
                    .ok()
                    .filter(|&n| n <= MAX_VALUE_BYTES)
                    .ok_or(ListError::TooLarge {
                        what: describe(target),
                        offset: tag_at,
                        len,
                    })?;
                State::Collect { target, len }
            }
            None => State::Skip(len),
        };
        Ok(())
    }

    /// A field's end: back to the envelope's level when the list's bytes are all read.
    fn field_done(&mut self) -> Result<(), ListError> {
        self.state = State::Tag;
        if let Some(end) = self.raw_end {
            let at = self.chunks.offset();
            if at == end {
                self.raw_end = None;
            } else if at > end {
                return Err(ListError::Overrun { offset: at, end });
            }
        }
        Ok(())
    }

    /// Inside the list, `offset` must not pass its end.
    fn check_within_raw(&self, offset: u64) -> Result<(), ListError> {
        match self.raw_end {
            Some(end) if offset > end => Err(ListError::Overrun { offset, end }),
            _ => Ok(()),
        }
    }

    /// The event (if any) for a value collected whole.
    fn collected(&mut self, target: Target, value: Bytes) -> Result<Option<ListEvent>, ListError> {
        let base = usize::try_from(self.chunks.offset() - value.len() as u64).unwrap_or(0);
        match target {
            Target::TypeMeta => {
                let (api_version, kind) = decode_type_meta(&value, base)?;
                self.api_version = api_version.to_owned();
                self.kind = kind.to_owned();
                Ok(Some(ListEvent::Type {
                    api_version: self.api_version.clone(),
                    kind: self.kind.clone(),
                }))
            }
            Target::ContentEncoding if value.is_empty() => Ok(None),
            Target::ContentEncoding => {
                let encoding = String::from_utf8_lossy(&value).into_owned();
                Err(EnvelopeError::ContentEncoding(encoding).into())
            }
            Target::StatusRaw => Err(self.status(&value)),
            Target::ListMeta => Ok(Some(ListEvent::Metadata(list_meta(&value, base)?))),
            Target::Item => {
                self.items += 1;
                Ok(Some(ListEvent::Item(value)))
            }
        }
    }
}

fn describe(target: Target) -> &'static str {
    match target {
        Target::TypeMeta => "envelope's typeMeta",
        Target::ContentEncoding => "envelope's contentEncoding",
        Target::StatusRaw => "Status",
        Target::ListMeta => "list's metadata",
        Target::Item => "item",
    }
}

mod error;
mod members;

pub use error::ListError;
pub use members::list_meta;

#[cfg(test)]
mod tests;
