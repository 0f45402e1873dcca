//! Decoding a watch response body into [`WatchEvent`]s.
//!
//! A watch body is newline-delimited JSON: one `{"type":…,"object":…}` per line. The transport
//! splits it into chunks anywhere — in the middle of a line, or with several lines in one
//! chunk — so lines have to be reassembled before they are decoded.
//!
//! Two layers:
//! - [`WatchDecoder`], a pure decoder with no I/O: [`push`](WatchDecoder::push) bytes in, take
//!   events out with [`next_event`](WatchDecoder::next_event), and call
//!   [`finish`](WatchDecoder::finish) at end of stream.
//! - [`WatchStream`], a [`Stream`] adapter over any `Stream<Item = Result<Bytes, E>>` (such as
//!   an HTTP response body) that yields `Result<WatchEvent<T>, Error>`.
//!
//! Contract:
//! - Empty (or whitespace-only) lines are skipped; a trailing `\r` is tolerated.
//! - A malformed line yields one [`Error::Decode`] item (with the start of the line for logs)
//!   and decoding goes on with the next line: one bad event does not end the watch.
//! - Bytes left without a final newline at end of stream yield [`Error::TruncatedLine`]: the
//!   connection was cut mid-event, which must not pass silently.
//! - A line longer than the limit ([`DEFAULT_MAX_LINE_BYTES`]) yields [`Error::LineTooLong`]
//!   and is skipped up to its newline, so a broken server cannot make the buffer grow unbounded.
//! - A transport error is yielded once and ends the stream.
//! - Generic over the object type: a typed object, `serde_json::Value`, or
//!   [`PartialObjectMetadata`](kube_gc_api::PartialObjectMetadata), each line decoded by serde as
//!   a whole; or any `T` made by a caller's [`ItemDecoder`]
//!   ([`WatchDecoder::with_item_decoder`]), which gets the `object` of `ADDED`, `MODIFIED` and
//!   `DELETED` lines (`BOOKMARK` and `ERROR` still decode as a bookmark and a Status). Its error
//!   is the line's [`Error::Decode`], like serde's.
//!
//! Cost: each byte is copied once into a reusable buffer and each line is decoded in place from
//! it; the decoder itself allocates nothing per line.

use std::fmt;
use std::pin::Pin;
use std::task::{ready, Context, Poll};

use bytes::Bytes;
use futures_util::Stream;
use serde::de::DeserializeOwned;

use super::decode::{decode_fn, from_slice, DecodeFn, ItemDecoder, ObjectText};
use super::error::{snippet, Error};
use super::protobuf::Selection;
use super::protobuf_answers::WatchFrameDecoder;
use kube_gc_api::{EventType, WatchEvent};

/// The default longest line accepted: far above the API server's ~3 MiB request limit, so only
/// a broken stream reaches it.
pub const DEFAULT_MAX_LINE_BYTES: usize = 64 * 1024 * 1024;

/// Turns pushed bytes into watch events, one per complete line.
pub struct WatchDecoder<T> {
    /// Bytes received and not yet consumed; `buf[start..]` is the unconsumed part.
    buf: Vec<u8>,
    /// Where the next line starts.
    start: usize,
    /// How far past `start` is known to contain no newline, so a long line split over many
    /// chunks is scanned only once.
    scanned: usize,
    /// Set after a too-long line was reported: drop bytes until its newline.
    skipping_long_line: bool,
    max_line_bytes: usize,
    /// What turns a line into an event.
    decode: LineDecode<T>,
}

/// How a line becomes an event.
enum LineDecode<T> {
    /// The whole line as a `WatchEvent<T>` by serde, monomorphized: no trait object on the
    /// default path, and the object decoded straight from the line.
    Serde(fn(&[u8]) -> Result<WatchEvent<T>, serde_json::Error>),
    /// The object of `ADDED`, `MODIFIED` and `DELETED` through a caller's decoder.
    Custom(DecodeFn<T>),
}

impl<T> LineDecode<T> {
    fn decode(&self, line: &[u8]) -> Result<WatchEvent<T>, serde_json::Error> {
        match self {
            LineDecode::Serde(decode) => decode(line),
            LineDecode::Custom(decoder) => WatchEvent::from_slice_with(line, |event, object| {
                let text = match event {
                    EventType::Deleted => ObjectText::FinalState,
                    EventType::Added | EventType::Modified => ObjectText::Current,
                    // Never given an object to decode by the caller's decoder.
                    EventType::Bookmark | EventType::Error => ObjectText::Current,
                };
                decoder(object, text)
            }),
        }
    }
}

impl<T> fmt::Debug for WatchDecoder<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("WatchDecoder")
            .field("buffered_bytes", &(self.buf.len() - self.start))
            .field("skipping_long_line", &self.skipping_long_line)
            .field("max_line_bytes", &self.max_line_bytes)
            .field("custom", &matches!(self.decode, LineDecode::Custom(_)))
            .finish()
    }
}

impl<T: DeserializeOwned> Default for WatchDecoder<T> {
    fn default() -> Self {
        Self::new()
    }
}

impl<T: DeserializeOwned> WatchDecoder<T> {
    /// A decoder with the default line limit, decoding lines with serde.
    pub fn new() -> Self {
        Self::with_max_line_bytes(DEFAULT_MAX_LINE_BYTES)
    }

    /// A decoder that rejects lines longer than `max_line_bytes`.
    pub fn with_max_line_bytes(max_line_bytes: usize) -> Self {
        Self::decoding(LineDecode::Serde(from_slice::<WatchEvent<T>>))
            .max_line_bytes(max_line_bytes)
    }
}

impl<T: 'static> WatchDecoder<T> {
    /// A decoder with the default line limit, turning each event's object into a `T` with
    /// `decoder`.
    pub fn with_item_decoder(decoder: ItemDecoder<T>) -> Self {
        Self::decoding(LineDecode::Custom(decode_fn(decoder)))
    }
}

impl<T> WatchDecoder<T> {
    /// The same decoder, rejecting lines longer than `max_line_bytes`.
    pub fn max_line_bytes(self, max_line_bytes: usize) -> Self {
        WatchDecoder {
            max_line_bytes,
            ..self
        }
    }

    fn decoding(decode: LineDecode<T>) -> Self {
        WatchDecoder {
            buf: Vec::new(),
            start: 0,
            scanned: 0,
            skipping_long_line: false,
            max_line_bytes: DEFAULT_MAX_LINE_BYTES,
            decode,
        }
    }

    /// Appends the next chunk of the body.
    pub fn push(&mut self, chunk: &[u8]) {
        // Reclaim consumed bytes before growing, so the buffer stays about one line long.
        if self.start > 0 {
            self.buf.drain(..self.start);
            self.start = 0;
        }
        self.buf.extend_from_slice(chunk);
    }

    /// Whether bytes of an unfinished line are waiting for more input.
    pub fn has_partial_line(&self) -> bool {
        !self.skipping_long_line && !is_blank(&self.buf[self.start..])
    }

    /// Takes the next complete line out of the buffer, without its newline.
    fn next_line(&mut self) -> Option<LineOrOverflow> {
        loop {
            let Some(end) = self.find_newline() else {
                return self.on_incomplete_line();
            };
            let line = self.start..end;
            self.start = end + 1;
            self.scanned = 0;
            if std::mem::take(&mut self.skipping_long_line) {
                // The tail of a line already reported as too long.
                continue;
            }
            if line.len() > self.max_line_bytes {
                return Some(LineOrOverflow::Overflow(snippet(&self.buf[line])));
            }
            return Some(LineOrOverflow::Line(line));
        }
    }

    /// The index of the newline ending the current line, scanning only bytes not scanned
    /// before.
    fn find_newline(&mut self) -> Option<usize> {
        let from = self.start + self.scanned;
        // memchr, not `iter().position`: a byte-at-a-time loop over a 3 KB Pod's line was a
        // tenth of the informer's time in a burst of deletions.
        match memchr::memchr(b'\n', &self.buf[from..]) {
            Some(offset) => Some(from + offset),
            None => {
                self.scanned = self.buf.len() - self.start;
                None
            }
        }
    }

    /// No complete line yet: report a line that has already outgrown the limit, or drop the
    /// bytes of one already reported.
    fn on_incomplete_line(&mut self) -> Option<LineOrOverflow> {
        if self.skipping_long_line {
            self.start = self.buf.len();
            self.scanned = 0;
            return None;
        }
        if self.scanned > self.max_line_bytes {
            self.skipping_long_line = true;
            return Some(LineOrOverflow::Overflow(snippet(&self.buf[self.start..])));
        }
        None
    }

    /// At end of stream: an error if an incomplete line is left over. The decoder is empty
    /// afterwards.
    pub fn finish(&mut self) -> Option<Error> {
        let rest = &self.buf[self.start..];
        let error = self.has_partial_line().then(|| Error::TruncatedLine {
            len: rest.len(),
            snippet: snippet(rest.trim_ascii()),
        });
        self.buf.clear();
        self.start = 0;
        self.scanned = 0;
        self.skipping_long_line = false;
        error
    }

    /// The next event (or decode error) from the complete lines received so far; `None` when
    /// more input is needed.
    pub fn next_event(&mut self) -> Option<Result<WatchEvent<T>, Error>> {
        loop {
            let line = match self.next_line()? {
                LineOrOverflow::Line(range) => self.buf[range].trim_ascii(),
                LineOrOverflow::Overflow(snippet) => {
                    return Some(Err(Error::LineTooLong {
                        limit: self.max_line_bytes,
                        snippet,
                    }))
                }
            };
            if line.is_empty() {
                continue;
            }
            return Some(
                self.decode
                    .decode(line)
                    .map_err(|e| Error::decode("watch event", line, e)),
            );
        }
    }

    /// Drains every event decodable from the input received so far.
    pub fn drain(&mut self) -> impl Iterator<Item = Result<WatchEvent<T>, Error>> + '_ {
        std::iter::from_fn(move || self.next_event())
    }
}

/// A line's byte range in the buffer, or the report of a line that exceeded the limit.
enum LineOrOverflow {
    Line(std::ops::Range<usize>),
    Overflow(String),
}

fn is_blank(bytes: &[u8]) -> bool {
    bytes.iter().all(u8::is_ascii_whitespace)
}

/// A [`Stream`] of watch events decoded from a stream of body chunks.
pub struct WatchStream<T> {
    body: Pin<Box<dyn Stream<Item = Result<Bytes, Error>> + Send>>,
    decoder: Framing<T>,
    body_ended: bool,
}

/// How the stream is cut into events: JSON lines, or protobuf's length-prefixed frames.
enum Framing<T> {
    Lines(WatchDecoder<T>),
    Frames(WatchFrameDecoder<T>),
}

impl<T> Framing<T> {
    /// The chunk is handed over whole: protobuf frames keep slices of it, uncopied.
    fn push(&mut self, chunk: Bytes) {
        match self {
            Framing::Lines(d) => d.push(&chunk),
            Framing::Frames(d) => d.push(chunk),
        }
    }

    fn next_event(&mut self) -> Option<Result<WatchEvent<T>, Error>> {
        match self {
            Framing::Lines(d) => d.next_event(),
            Framing::Frames(d) => d.next_event(),
        }
    }

    fn finish(&mut self) -> Option<Error> {
        match self {
            Framing::Lines(d) => d.finish(),
            Framing::Frames(d) => d.finish(),
        }
    }
}

impl<T> fmt::Debug for Framing<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Framing::Lines(d) => d.fmt(f),
            Framing::Frames(d) => d.fmt(f),
        }
    }
}

impl<T> fmt::Debug for WatchStream<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("WatchStream")
            .field("decoder", &self.decoder)
            .field("body_ended", &self.body_ended)
            .finish()
    }
}

impl<T: DeserializeOwned> WatchStream<T> {
    /// Decodes `body`, e.g. `reqwest::Response::bytes_stream()`. Transport errors are converted
    /// into [`Error`].
    pub fn new<S, E>(body: S) -> Self
    where
        S: Stream<Item = Result<Bytes, E>> + Send + 'static,
        E: Into<Error> + 'static,
    {
        Self::with_decoder(body, WatchDecoder::new())
    }
}

impl<T> WatchStream<T> {
    /// Like [`new`](Self::new), with a configured decoder.
    pub fn with_decoder<S, E>(body: S, decoder: WatchDecoder<T>) -> Self
    where
        S: Stream<Item = Result<Bytes, E>> + Send + 'static,
        E: Into<Error> + 'static,
    {
        use futures_util::TryStreamExt;
        WatchStream {
            body: Box::pin(body.map_err(Into::into)),
            decoder: Framing::Lines(decoder),
            body_ended: false,
        }
    }

    /// A protobuf watch (`application/vnd.kubernetes.protobuf;stream=watch`), each object
    /// decoded by `decode` from the JSON text of the members in `keep`.
    pub(crate) fn protobuf<S, E>(body: S, decode: DecodeFn<T>, keep: Selection) -> Self
    where
        S: Stream<Item = Result<Bytes, E>> + Send + 'static,
        E: Into<Error> + 'static,
    {
        use futures_util::TryStreamExt;
        WatchStream {
            body: Box::pin(body.map_err(Into::into)),
            decoder: Framing::Frames(WatchFrameDecoder::new(decode, keep)),
            body_ended: false,
        }
    }
}

impl<T> Stream for WatchStream<T> {
    type Item = Result<WatchEvent<T>, Error>;

    fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        // `WatchStream` holds nothing pinned in place (the body is boxed), so it is `Unpin`.
        let this = self.get_mut();
        loop {
            if let Some(item) = this.decoder.next_event() {
                return Poll::Ready(Some(item));
            }
            if this.body_ended {
                return Poll::Ready(None);
            }
            match ready!(this.body.as_mut().poll_next(cx)) {
                Some(Ok(chunk)) => this.decoder.push(chunk),
                Some(Err(error)) => {
                    // The body is broken: report it once, then end.
                    this.body_ended = true;
                    this.decoder.finish();
                    return Poll::Ready(Some(Err(error)));
                }
                None => {
                    this.body_ended = true;
                    if let Some(error) = this.decoder.finish() {
                        return Poll::Ready(Some(Err(error)));
                    }
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::Value;

    fn decode_all(chunks: &[&[u8]]) -> Vec<Result<WatchEvent<Value>, Error>> {
        let mut decoder = WatchDecoder::new();
        let mut out = Vec::new();
        for chunk in chunks {
            decoder.push(chunk);
            out.extend(decoder.drain());
        }
        out.extend(decoder.finish().map(Err));
        out
    }

    #[test]
    fn the_stream_can_be_moved_across_tasks() {
        fn assert_send<T: Send + Unpin>() {}
        assert_send::<WatchStream<kube_gc_api::Job>>();
        assert_send::<WatchDecoder<Value>>();
    }

    #[test]
    fn split_lines_and_several_lines_per_chunk() {
        let events = decode_all(&[
            br#"{"type":"ADDED","object":{"a":1}}"#.as_slice(),
            b"\n{\"type\":\"MODI",
            b"FIED\",\"object\":{\"a\":2}}\n{\"type\":\"DELETED\",\"object\":{\"a\":3}}\n",
        ]);
        let kinds: Vec<_> = events
            .iter()
            .map(|e| e.as_ref().ok().map(|e| e.event_type()))
            .collect();
        use kube_gc_api::EventType::*;
        assert_eq!(kinds, [Some(Added), Some(Modified), Some(Deleted)]);
    }

    #[test]
    fn blank_lines_and_crlf_are_tolerated() {
        let events = decode_all(&[b"\n\r\n  \n{\"type\":\"ADDED\",\"object\":{}}\r\n\n"]);
        assert_eq!(events.len(), 1);
        assert!(events[0].is_ok());
    }

    #[test]
    fn an_overlong_line_is_reported_once_and_skipped() {
        let mut decoder = WatchDecoder::<Value>::with_max_line_bytes(32);
        decoder.push(b"{\"type\":\"ADDED\",");
        assert!(
            decoder.next_event().is_none(),
            "16 bytes are within the limit"
        );
        decoder.push(b"\"object\":{\"padding\":\"xxxxxxxxxxxxxxxx\"");
        let first: Vec<_> = decoder.drain().collect();
        assert!(matches!(
            first.as_slice(),
            [Err(Error::LineTooLong { limit: 32, .. })]
        ));
        // The rest of the long line is dropped; the short line after it decodes.
        decoder.push(b"}}\n{\"type\":\"ADDED\",\"object\":1}\n");
        let rest: Vec<_> = decoder.drain().collect();
        assert!(
            matches!(rest.as_slice(), [Ok(WatchEvent::Added(Value::Number(_)))]),
            "{rest:?}"
        );
        assert!(decoder.finish().is_none());
    }

    #[test]
    fn a_line_split_over_many_chunks_is_scanned_once() {
        let line = br#"{"type":"ADDED","object":{"k":"0123456789012345678901234567890123456789"}}"#;
        let mut decoder = WatchDecoder::<Value>::new();
        for byte in line {
            decoder.push(std::slice::from_ref(byte));
            assert!(decoder.next_event().is_none());
            assert_eq!(decoder.scanned, decoder.buf.len() - decoder.start);
        }
        decoder.push(b"\n");
        assert!(matches!(
            decoder.next_event(),
            Some(Ok(WatchEvent::Added(_)))
        ));
    }

    /// A decoder keeping only `metadata.name`.
    fn names() -> WatchDecoder<String> {
        WatchDecoder::with_item_decoder(std::sync::Arc::new(|object: &[u8]| {
            let value: Value = serde_json::from_slice(object)?;
            match value.pointer("/metadata/name").and_then(Value::as_str) {
                Some(name) => Ok(name.to_owned()),
                None => Err(serde::de::Error::missing_field("metadata.name")),
            }
        }))
    }

    #[test]
    fn an_item_decoder_gets_the_objects_and_serde_the_bookmarks_and_errors() {
        let body = concat!(
            r#"{"type":"ADDED","object":{"metadata":{"name":"a"}}}"#,
            "\n",
            r#"{"type":"BOOKMARK","object":{"kind":"Job","metadata":{"resourceVersion":"8","creationTimestamp":null}}}"#,
            "\n",
            r#"{"type":"MODIFIED","object":{"metadata":{}}}"#,
            "\n",
            r#"{"object":{"metadata":{"name":"b"}},"type":"DELETED"}"#,
            "\n",
            r#"{"type":"ERROR","object":{"kind":"Status","apiVersion":"v1","status":"Failure","reason":"Expired","code":410}}"#,
            "\n",
        );
        for piece in [1, 5, body.len()] {
            let mut decoder = names();
            let mut events = Vec::new();
            for chunk in body.as_bytes().chunks(piece) {
                decoder.push(chunk);
                events.extend(decoder.drain());
            }
            assert!(decoder.finish().is_none());
            assert!(matches!(&events[0], Ok(WatchEvent::Added(name)) if name == "a"));
            assert!(
                matches!(&events[1], Ok(WatchEvent::Bookmark(b)) if b.metadata.resource_version == "8")
            );
            // The decoder's error is the line's, and decoding goes on.
            match &events[2] {
                Err(Error::Decode { what, snippet, .. }) => {
                    assert_eq!(*what, "watch event");
                    assert!(snippet.starts_with(r#"{"type":"MODIFIED""#), "{snippet}");
                }
                other => panic!("expected a decode error, got {other:?}"),
            }
            assert!(matches!(&events[3], Ok(WatchEvent::Deleted(name)) if name == "b"));
            assert!(matches!(&events[4], Ok(WatchEvent::Error(s)) if s.code == Some(410)));
            assert_eq!(events.len(), 5, "pieces of {piece}");
        }
    }

    #[test]
    fn a_custom_stream_can_be_moved_across_tasks_and_limits_lines() {
        fn assert_send<T: Send + Unpin>(_: &T) {}
        let mut decoder = names().max_line_bytes(8);
        assert_send(&decoder);
        decoder.push(b"{\"type\":\"ADDED\",\"object\":{}}\n");
        assert!(matches!(
            decoder.next_event(),
            Some(Err(Error::LineTooLong { limit: 8, .. }))
        ));
    }
}
