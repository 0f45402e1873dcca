//! Protobuf answers read into what the client returns for JSON ones: a [`List<T>`] from a LIST
//! body, [`WatchEvent<T>`]s from a watch stream. Each object is transcoded to the JSON text of
//! the members its reader keeps ([`Selection`]) and handed to the same item decoder a JSON
//! answer's object would be, so a reader cannot tell the encodings apart.
//!
//! Contract:
//! - A list is read as its chunks arrive, holding one item at most ([`ListStream`]); its
//!   `metadata` is the list's, its `apiVersion` and `kind` the envelope's.
//! - Watch frames become events in order; a BOOKMARK's object gives its resourceVersion and
//!   annotations; an ERROR's is the `Status` (a 410 `Expired` after a restart, exchange 104).
//! - A frame or item that cannot be read is an [`Error::Protobuf`]: in a list it fails the
//!   list (as a malformed JSON list does), in a watch it is that event's error and the stream
//!   goes on with the next frame.

use bytes::Bytes;
use futures_util::{Stream, StreamExt};

use super::decode::{DecodeFn, ItemDecode, ObjectText};
use super::error::Error;
use super::protobuf::schema;
use super::protobuf::transcode::write_json;
use super::protobuf::{ListEvent, ListStream, Selection, WatchFrames};
use kube_gc_api::{Bookmark, List, TypeMeta, WatchEvent};

fn protobuf_error(
    what: &'static str,
    source: impl std::error::Error + Send + Sync + 'static,
) -> Error {
    Error::Protobuf {
        what,
        source: Box::new(source),
    }
}

/// Reads a protobuf LIST body into a list, each item decoded by `decode` from the JSON text of
/// the members in `keep`.
pub(crate) async fn read_list<T, S, E>(
    mut body: S,
    decode: &ItemDecode<T>,
    keep: &Selection,
) -> Result<List<T>, Error>
where
    S: Stream<Item = Result<Bytes, E>> + Unpin,
    Error: From<E>,
{
    let mut stream = ListStream::new();
    let mut list = List::default();
    let mut item_message = None;
    let mut text = Vec::new();
    while let Some(chunk) = body.next().await {
        stream.feed(chunk?);
        while let Some(event) = stream
            .next_event()
            .map_err(|e| protobuf_error("list body", e))?
        {
            match event {
                ListEvent::Type { api_version, kind } => {
                    item_message = schema::list_item_kind(&kind)
                        .and_then(|item| schema::for_kind(&api_version, item));
                    list.types = TypeMeta { api_version, kind };
                }
                ListEvent::Metadata(metadata) => list.metadata = metadata,
                ListEvent::Item(bytes) => {
                    let message = item_message.ok_or_else(|| Error::Protobuf {
                        what: "list item",
                        source: format!("no table for the items of a {}", list.types.kind).into(),
                    })?;
                    text.clear();
                    write_json(&mut text, message, &bytes, None, keep)
                        .map_err(|e| protobuf_error("list item", e))?;
                    let item = decode.decode(&text).map_err(|source| {
                        Error::decode("list item transcoded from protobuf", &text, source)
                    })?;
                    list.items.push(item);
                }
            }
        }
    }
    stream
        .finish()
        .map_err(|e| protobuf_error("list body", e))?;
    Ok(list)
}

/// Turns pushed bytes of a protobuf watch into events.
pub(crate) struct WatchFrameDecoder<T> {
    frames: WatchFrames,
    decode: DecodeFn<T>,
    keep: Selection,
}

impl<T> WatchFrameDecoder<T> {
    /// Events whose objects `decode` reads from the JSON text of the members in `keep`.
    pub(crate) fn new(decode: DecodeFn<T>, keep: Selection) -> Self {
        WatchFrameDecoder {
            frames: WatchFrames::new(),
            decode,
            keep,
        }
    }

    pub(crate) fn push(&mut self, chunk: Bytes) {
        self.frames.feed(chunk);
    }

    /// The next complete event, if one has arrived.
    pub(crate) fn next_event(&mut self) -> Option<Result<WatchEvent<T>, Error>> {
        let frame = match self.frames.next_frame() {
            Ok(frame) => frame?,
            Err(e) => return Some(Err(protobuf_error("watch frame", e))),
        };
        Some(self.event(&frame))
    }

    /// The end of the stream: an error if it ended inside a frame.
    pub(crate) fn finish(&mut self) -> Option<Error> {
        std::mem::take(&mut self.frames)
            .finish()
            .err()
            .map(|e| protobuf_error("watch stream", e))
    }

    fn event(&self, frame: &super::protobuf::WatchFrame) -> Result<WatchEvent<T>, Error> {
        let object = |keep: &Selection| {
            frame
                .to_json(keep)
                .map_err(|e| protobuf_error("watch event object", e))
        };
        let decode = |text: Vec<u8>, which| {
            (self.decode)(&text, which).map_err(|source| {
                Error::decode("watch event object transcoded from protobuf", &text, source)
            })
        };
        Ok(match frame.event_type.as_str() {
            "ADDED" => WatchEvent::Added(decode(object(&self.keep)?, ObjectText::Current)?),
            "MODIFIED" => WatchEvent::Modified(decode(object(&self.keep)?, ObjectText::Current)?),
            "DELETED" => WatchEvent::Deleted(decode(object(&self.keep)?, ObjectText::FinalState)?),
            "BOOKMARK" => {
                let text = object(&Selection::paths(["metadata"]))?;
                let bookmark: Bookmark = serde_json::from_slice(&text).map_err(|source| {
                    Error::decode("bookmark transcoded from protobuf", &text, source)
                })?;
                WatchEvent::Bookmark(bookmark)
            }
            "ERROR" => WatchEvent::Error(Box::new(
                frame
                    .status()
                    .map_err(|e| protobuf_error("watch ERROR event", e))?,
            )),
            other => {
                return Err(Error::Protobuf {
                    what: "watch event",
                    source: format!("unknown event type {other:?}").into(),
                })
            }
        })
    }
}

impl<T> std::fmt::Debug for WatchFrameDecoder<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WatchFrameDecoder")
            .field("frames", &self.frames)
            .finish_non_exhaustive()
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;
    use kube_gc_api::PartialObjectMetadata;
    use kube_gc_fixtures::{response_bytes, response_chunks};

    fn names(list: &List<PartialObjectMetadata>) -> Vec<String> {
        list.items
            .iter()
            .filter_map(|item| item.metadata.name.clone())
            .collect()
    }

    #[tokio::test]
    async fn a_captured_protobuf_job_list_reads_as_its_json_capture_does() {
        let body = response_bytes("100");
        let chunks: Vec<Result<Bytes, Error>> = body
            .chunks(777)
            .map(|c| Ok(Bytes::copy_from_slice(c)))
            .collect();
        let decode = ItemDecode::<PartialObjectMetadata>::serde();
        let list = read_list(
            futures_util::stream::iter(chunks),
            &decode,
            &Selection::all(),
        )
        .await
        .expect("the capture reads");
        let json: List<PartialObjectMetadata> = kube_gc_fixtures::response_body("101");
        assert_eq!(names(&list), names(&json));
        assert_eq!(list.types.kind, "JobList");
        assert!(!list
            .metadata
            .resource_version
            .clone()
            .unwrap_or_default()
            .is_empty());
        let uids = |l: &List<PartialObjectMetadata>| {
            l.items
                .iter()
                .map(|i| i.metadata.uid.clone())
                .collect::<Vec<_>>()
        };
        assert_eq!(uids(&list), uids(&json));
    }

    #[test]
    fn a_captured_streaming_list_ends_at_the_initial_events_end_bookmark() {
        // Exchange 123: a protobuf streaming list; the end bookmark's raw is a Job carrying
        // only its resourceVersion and the annotation.
        let decode: DecodeFn<PartialObjectMetadata> =
            Arc::new(|text: &[u8], _| serde_json::from_slice(text));
        let mut decoder = WatchFrameDecoder::new(decode, Selection::all());
        for chunk in response_chunks("123") {
            decoder.push(Bytes::from(chunk));
        }
        assert!(matches!(
            decoder.next_event(),
            Some(Ok(WatchEvent::Added(_)))
        ));
        match decoder.next_event() {
            Some(Ok(WatchEvent::Bookmark(b))) => {
                assert!(b.is_initial_events_end());
                assert_eq!(b.metadata.resource_version, "107468");
            }
            other => panic!("expected the end bookmark, got {other:?}"),
        }
        assert!(decoder.next_event().is_none());
    }

    #[test]
    fn a_captured_protobuf_watch_gives_its_events_and_the_410() {
        let decode: DecodeFn<PartialObjectMetadata> =
            Arc::new(|text: &[u8], _| serde_json::from_slice(text));
        let mut decoder = WatchFrameDecoder::new(decode.clone(), Selection::all());
        for chunk in response_chunks("103") {
            decoder.push(Bytes::from(chunk));
        }
        let mut kinds = Vec::new();
        while let Some(event) = decoder.next_event() {
            kinds.push(match event.expect("an event") {
                WatchEvent::Added(_) => "ADDED",
                WatchEvent::Modified(_) => "MODIFIED",
                WatchEvent::Deleted(_) => "DELETED",
                WatchEvent::Bookmark(b) => {
                    assert!(!b.metadata.resource_version.is_empty());
                    "BOOKMARK"
                }
                WatchEvent::Error(_) => "ERROR",
            });
        }
        assert!(decoder.finish().is_none());
        for expected in ["ADDED", "MODIFIED", "DELETED", "BOOKMARK"] {
            assert!(kinds.contains(&expected), "{expected} in {kinds:?}");
        }
        let mut too_old = WatchFrameDecoder::new(decode, Selection::all());
        for chunk in response_chunks("104") {
            too_old.push(Bytes::from(chunk));
        }
        match too_old.next_event() {
            Some(Ok(WatchEvent::Error(status))) => assert_eq!(status.code, Some(410)),
            other => panic!("expected the 410, got {other:?}"),
        }
    }
}
