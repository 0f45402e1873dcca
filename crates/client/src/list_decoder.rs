//! Decoding a LIST response body item by item as it streams in, never holding the whole body.
//!
//! A list with `resourceVersion=0` is served from the API server's watch cache, which ignores
//! `limit`: 100,000 Jobs come as one ~600 MB body. Buffering that body and then decoding it
//! would hold the 600 MB *and* every decoded object at once. Instead, [`ListDecoder`] scans the
//! body as it arrives, finds the top-level members of the `<Kind>List` object, and hands each
//! complete element of `items` to `serde_json::from_slice::<T>` the moment its last byte
//! arrives. What it holds at any time is the decoded items so far, the one item being received,
//! and the list's small members (`kind`, `apiVersion`, `metadata`).
//!
//! ```text
//!  {"kind":"JobList","apiVersion":"batch/v1","metadata":{…},"items":[ {…}, {…}, … ]}
//!   └──────── head: kept as JSON text, decoded at the end ──┘        └┬┘  └┬┘
//!                                                    each decoded as T when complete
//! ```
//!
//! Contract:
//! - The result is the same as `serde_json::from_slice::<List<T>>` of the whole body, however
//!   the body is split into chunks: the same items and metadata for a well-formed body, an
//!   error for a malformed one (property-tested in `tests/client_list_stream.rs`).
//! - The scanner only finds where values end ([`json_extent`](super::json_extent)); every value
//!   is decoded by `serde_json`, so escapes, nesting and validation are serde's.
//! - Members other than `items` (in any order, before or after it) form the *head*, decoded as a
//!   `List<T>` with no items at the end. A head whose `kind` is `Status` is a Status the server
//!   sent instead of a list, and becomes the [`Error::Api`] it describes.
//! - Errors are typed ([`ListDecodeError`]) and say where: the byte offset in the body, and for
//!   a bad item its index and the start of its text. One item or member may not exceed
//!   [`MAX_VALUE_BYTES`], so a broken server cannot make the buffer grow without bound.
//! - [`read_list`] drives a decoder from a byte stream (an HTTP body) and is what the
//!   [`Pager`](super::Pager) uses for every list: typed, dynamic (`serde_json::Value`) and
//!   metadata-only.
//! - Items are decoded by `serde_json::from_slice::<T>` ([`ListDecoder::new`], [`read_list`]),
//!   or by a caller's [`ItemDecoder`] ([`ListDecoder::with_item_decoder`], [`read_list_with`])
//!   for a `T` computed by runtime rules; either way item by item, and a decoder's error is a
//!   [`ListDecodeError::Item`] like serde's.

use std::fmt;

use bytes::Bytes;
pub(crate) mod error;

use futures_util::{Stream, StreamExt};
use serde::de::{DeserializeOwned, IgnoredAny};

use super::decode::{ItemDecode, ItemDecoder};
use super::error::{snippet, Error};
use super::json_extent::{is_whitespace, ValueExtent};
pub use error::ListDecodeError;
use kube_gc_api::{List, Status};

/// The largest single item or list member accepted: far above the API server's ~3 MiB object
/// limit, so only a broken body reaches it.
pub const MAX_VALUE_BYTES: usize = 64 * 1024 * 1024;

/// Where the decoder is in the grammar `{ "key": value, … }` with `"items": [ item, … ]`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Expect {
    /// The `{` that opens the list.
    ObjectStart,
    /// A member's key; `first`: the object may still close (`{}`).
    Key { first: bool },
    /// The `:` after a key.
    Colon { member: Member },
    /// The first byte of a member's value.
    ValueStart { member: Member },
    /// The rest of a value being scanned.
    Value { member: Member },
    /// The first byte of an item, or `]`; `first`: the array may still close (`[]`).
    ItemStart { first: bool },
    /// The rest of an item being scanned.
    Item,
    /// `,` or `]` after an item.
    AfterItem,
    /// `,` or `}` after a member.
    AfterMember,
    /// Nothing but whitespace: the list is complete.
    End,
}

/// Scanning a member's name.
const SCANNING_KEY: Expect = Expect::Value {
    member: Member::Key,
};

/// Before the value of `items`: an array is streamed, anything else scanned whole.
const ITEMS_VALUE_START: Expect = Expect::ValueStart {
    member: Member::Items,
};

/// Which member a value belongs to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Member {
    /// A key being scanned (the "value" is the key string).
    Key,
    /// `items`: an array streamed item by item, or (when not an array) `null`.
    Items,
    /// Any other member: its text joins the head.
    Head,
}

/// Decodes one list body fed in chunks: [`feed`](Self::feed) each chunk, then
/// [`finish`](Self::finish).
pub struct ListDecoder<T> {
    expect: Expect,
    /// Finds the end of the value being scanned.
    extent: ValueExtent,
    /// The bytes of the value being scanned that arrived in earlier chunks.
    carry: Vec<u8>,
    /// Offset of the value being scanned in the body.
    value_offset: u64,
    /// Bytes of the body before the chunk being fed.
    consumed: u64,
    /// The members other than `items`, as the text of a JSON object without its braces.
    head: Vec<u8>,
    /// `items` was seen (serde rejects it twice, and so do we).
    seen_items: bool,
    /// What turns an item's text into a `T`.
    decode: ItemDecode<T>,
    items: Vec<T>,
}

impl<T> fmt::Debug for ListDecoder<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ListDecoder")
            .field("expect", &self.expect)
            .field("consumed", &self.consumed)
            .field("items", &self.items.len())
            .field("carried_bytes", &self.carry.len())
            .field("decode", &self.decode)
            .finish()
    }
}

impl<T: DeserializeOwned> Default for ListDecoder<T> {
    fn default() -> Self {
        Self::new()
    }
}

impl<T: DeserializeOwned> ListDecoder<T> {
    /// A decoder at the start of a body, decoding items with `serde_json::from_slice::<T>`.
    pub fn new() -> Self {
        Self::decoding(ItemDecode::serde())
    }
}

impl<T: 'static> ListDecoder<T> {
    /// A decoder at the start of a body, decoding each item with `decoder`.
    pub fn with_item_decoder(decoder: ItemDecoder<T>) -> Self {
        Self::decoding(ItemDecode::custom(decoder))
    }
}

impl<T> ListDecoder<T> {
    pub(crate) fn decoding(decode: ItemDecode<T>) -> Self {
        ListDecoder {
            expect: Expect::ObjectStart,
            extent: ValueExtent::new(),
            carry: Vec::new(),
            value_offset: 0,
            consumed: 0,
            head: Vec::new(),
            seen_items: false,
            decode,
            items: Vec::new(),
        }
    }

    /// How many items have been decoded so far.
    pub fn items_decoded(&self) -> usize {
        self.items.len()
    }

    /// Feeds the body's next chunk; every item it completes is decoded. After an error the
    /// decoder is unusable (the body is malformed).
    pub fn feed(&mut self, chunk: &[u8]) -> Result<(), ListDecodeError> {
        let mut pos = 0;
        while pos < chunk.len() {
            pos = match self.expect {
                Expect::Value { member } => self.scan_value(chunk, pos, member)?,
                Expect::Item => self.scan_item(chunk, pos)?,
                _ => self.structure(chunk, pos)?,
            };
        }
        self.consumed += chunk.len() as u64;
        Ok(())
    }

    /// Ends the body: the list, or why it is incomplete or not a list.
    pub fn finish(self) -> Result<List<T>, Error> {
        if self.expect != Expect::End {
            return Err(ListDecodeError::Truncated {
                offset: self.consumed,
                expected: self.expect.describe(),
            }
            .into());
        }
        let mut head = Vec::with_capacity(self.head.len() + 2);
        head.push(b'{');
        head.extend_from_slice(&self.head);
        head.push(b'}');
        let member_error = |source| ListDecodeError::Member {
            what: "metadata and type",
            snippet: snippet(&head),
            source,
        };
        let list: List<IgnoredAny> = serde_json::from_slice(&head).map_err(member_error)?;
        if list.types.kind == "Status" {
            let status: Status = serde_json::from_slice(&head).map_err(member_error)?;
            return Err(Error::from(status));
        }
        Ok(List {
            types: list.types,
            metadata: list.metadata,
            items: self.items,
        })
    }

    /// One structural byte (or whitespace) at `chunk[pos]`; answers where to go on.
    fn structure(&mut self, chunk: &[u8], pos: usize) -> Result<usize, ListDecodeError> {
        let byte = chunk[pos];
        if is_whitespace(byte) {
            return Ok(pos + 1);
        }
        let offset = self.consumed + pos as u64;
        let syntax = |expected| ListDecodeError::Syntax {
            offset,
            expected,
            found: char::from(byte),
        };
        self.expect = match (self.expect, byte) {
            (Expect::ObjectStart, b'{') => Expect::Key { first: true },
            (Expect::Key { first: true }, b'}') => Expect::End,
            (Expect::Key { .. }, b'"') => return Ok(self.start_scan(pos, SCANNING_KEY)),
            (Expect::Colon { member }, b':') => Expect::ValueStart { member },
            (ITEMS_VALUE_START, b'[') => Expect::ItemStart { first: true },
            (Expect::ValueStart { member }, _) if starts_value(byte) => {
                return Ok(self.start_scan(pos, Expect::Value { member }))
            }
            (Expect::ItemStart { first: true }, b']') | (Expect::AfterItem, b']') => {
                Expect::AfterMember
            }
            (Expect::ItemStart { .. }, _) if starts_value(byte) => {
                return Ok(self.start_scan(pos, Expect::Item))
            }
            (Expect::AfterItem, b',') => Expect::ItemStart { first: false },
            (Expect::AfterMember, b',') => Expect::Key { first: false },
            (Expect::AfterMember, b'}') => Expect::End,
            (expect, _) => return Err(syntax(expect.describe())),
        };
        Ok(pos + 1)
    }

    /// Starts scanning a value, key or item whose first byte is `chunk[pos]`, which is left for
    /// the scanner: `scanning` is `Expect::Value` or `Expect::Item`.
    fn start_scan(&mut self, pos: usize, scanning: Expect) -> usize {
        self.value_offset = self.consumed + pos as u64;
        self.extent = ValueExtent::new();
        self.expect = scanning;
        pos
    }

    /// Scans a key or a member's value from `chunk[pos]`; when it is complete, files it.
    fn scan_value(
        &mut self,
        chunk: &[u8],
        pos: usize,
        member: Member,
    ) -> Result<usize, ListDecodeError> {
        let Some(end) = self.scan(chunk, pos)? else {
            return Ok(chunk.len());
        };
        let value = self.completed(chunk, pos, end);
        match member {
            Member::Key => {
                let next = self.file_key(&value)?;
                self.expect = Expect::Colon { member: next };
            }
            Member::Items => {
                // `items` that is not an array: serde accepts `null` as empty, nothing else (an
                // array was streamed), so no item is decoded here.
                serde_json::from_slice::<Option<Vec<IgnoredAny>>>(&value).map_err(|source| {
                    ListDecodeError::Member {
                        what: "items",
                        snippet: snippet(&value),
                        source,
                    }
                })?;
                self.expect = Expect::AfterMember;
            }
            Member::Head => {
                self.head.push(b':');
                self.head.extend_from_slice(&value);
                self.expect = Expect::AfterMember;
            }
        }
        self.carry.clear();
        Ok(end)
    }

    /// Scans an element of `items` from `chunk[pos]`; when it is complete, decodes it.
    fn scan_item(&mut self, chunk: &[u8], pos: usize) -> Result<usize, ListDecodeError> {
        let Some(end) = self.scan(chunk, pos)? else {
            return Ok(chunk.len());
        };
        // The common case, an item inside one chunk, is decoded straight from the chunk.
        let decoded = if self.carry.is_empty() {
            self.decode.decode(&chunk[pos..end])
        } else {
            self.carry.extend_from_slice(&chunk[pos..end]);
            self.decode.decode(&self.carry)
        };
        match decoded {
            Ok(item) => self.items.push(item),
            Err(source) => {
                let text = if self.carry.is_empty() {
                    &chunk[pos..end]
                } else {
                    &self.carry[..]
                };
                return Err(ListDecodeError::Item {
                    index: self.items.len(),
                    offset: self.value_offset,
                    snippet: snippet(text),
                    source,
                });
            }
        }
        self.carry.clear();
        self.expect = Expect::AfterItem;
        Ok(end)
    }

    /// Runs the value scanner over `chunk[pos..]`: `Some(end)` if the value ends at
    /// `chunk[end - 1]`, `None` if it goes on (its bytes so far are carried over).
    fn scan(&mut self, chunk: &[u8], pos: usize) -> Result<Option<usize>, ListDecodeError> {
        match self.extent.scan(&chunk[pos..]) {
            Some(n) => Ok(Some(pos + n)),
            None => {
                self.carry.extend_from_slice(&chunk[pos..]);
                if self.carry.len() > MAX_VALUE_BYTES {
                    return Err(ListDecodeError::TooLarge {
                        offset: self.value_offset,
                        limit: MAX_VALUE_BYTES,
                    });
                }
                Ok(None)
            }
        }
    }

    /// The complete value `carry + chunk[pos..end]`.
    fn completed(&self, chunk: &[u8], pos: usize, end: usize) -> Vec<u8> {
        let mut value = Vec::with_capacity(self.carry.len() + end - pos);
        value.extend_from_slice(&self.carry);
        value.extend_from_slice(&chunk[pos..end]);
        value
    }

    /// Decides from a key's text which member follows; a head key joins the head.
    fn file_key(&mut self, key: &[u8]) -> Result<Member, ListDecodeError> {
        let name: String =
            serde_json::from_slice(key).map_err(|source| ListDecodeError::Member {
                what: "member name",
                snippet: snippet(key),
                source,
            })?;
        if name != "items" {
            if !self.head.is_empty() {
                self.head.push(b',');
            }
            self.head.extend_from_slice(key);
            return Ok(Member::Head);
        }
        if self.seen_items {
            return Err(ListDecodeError::Member {
                what: "items",
                snippet: snippet(key),
                source: serde::de::Error::duplicate_field("items"),
            });
        }
        self.seen_items = true;
        Ok(Member::Items)
    }
}

/// Whether `byte` may begin a JSON value (structure that closes or separates may not).
fn starts_value(byte: u8) -> bool {
    !matches!(byte, b',' | b':' | b']' | b'}')
}

impl Expect {
    /// What the grammar allows here, for error messages.
    fn describe(self) -> &'static str {
        match self {
            Expect::ObjectStart => "'{' opening the list",
            Expect::Key { first: true } => "a member name or '}'",
            Expect::Key { first: false } => "a member name",
            Expect::Colon { .. } => "':'",
            Expect::ValueStart { .. } => "a value",
            Expect::Value { .. } => "the rest of a value",
            Expect::ItemStart { first: true } => "an item or ']'",
            Expect::ItemStart { first: false } => "an item",
            Expect::Item => "the rest of an item",
            Expect::AfterItem => "',' or ']' after an item",
            Expect::AfterMember => "',' or '}' after a member",
            Expect::End => "nothing after the list",
        }
    }
}

impl From<ListDecodeError> for Error {
    fn from(e: ListDecodeError) -> Self {
        Error::ListBody(Box::new(e))
    }
}

/// Reads a whole list from `body` (a response body's chunks), decoding items as they arrive.
/// A transport error while reading is returned as it is.
pub async fn read_list<T, S, E>(body: S) -> Result<List<T>, Error>
where
    T: DeserializeOwned,
    S: Stream<Item = Result<Bytes, E>> + Unpin,
    Error: From<E>,
{
    read_list_decoding(body, ItemDecode::serde()).await
}

/// Like [`read_list`], decoding each item with `decoder`.
pub async fn read_list_with<T, S, E>(body: S, decoder: ItemDecoder<T>) -> Result<List<T>, Error>
where
    T: 'static,
    S: Stream<Item = Result<Bytes, E>> + Unpin,
    Error: From<E>,
{
    read_list_decoding(body, ItemDecode::custom(decoder)).await
}

/// Reads a whole list from `body`, decoding each item with `decode`.
pub(crate) async fn read_list_decoding<T, S, E>(
    mut body: S,
    decode: ItemDecode<T>,
) -> Result<List<T>, Error>
where
    S: Stream<Item = Result<Bytes, E>> + Unpin,
    Error: From<E>,
{
    let mut decoder = ListDecoder::decoding(decode);
    while let Some(chunk) = body.next().await {
        decoder.feed(&chunk?)?;
    }
    decoder.finish()
}

#[cfg(test)]
mod tests;
