//! One watch line: `{"type":…,"object":…}` and a newline, the object in the representation the
//! client asked for.
//!
//! Contract:
//! - Every line is exactly what encoding `{"type": event_type, "object": presented}` with
//!   serde gives, plus `\n` (the tests compare each line with that encoding).
//! - A graceful deletion writes two events about one stored object: its deletion mark
//!   (MODIFIED) and, one revision later, its final state (DELETED, exchange 68). The two differ
//!   only in `metadata.resourceVersion`, so the encoder keeps the mark's line and writes the
//!   DELETED one from it with the resourceVersion replaced, instead of encoding the object a
//!   second time — a ~3 KB Pod's encoding was a third of the simulated server's time in a burst
//!   of deletions. It does so only when the mark's text holds `"resourceVersion":"<rv>"`
//!   exactly once (so that one is the metadata's); otherwise it encodes, as for any event.

use std::ops::Range;

use bytes::Bytes;
use serde::Serialize;
use serde_json::json;

use super::response::Representation;
use crate::resources::ResourceDef;
use crate::stamped::Stamped;

/// Writes events in the representation the client asked for.
pub(super) struct Encoder {
    representation: Representation,
    kind: String,
    api_version: String,
    /// The last deletion mark's line, for the DELETED that follows it.
    mark: Option<Mark>,
}

/// A deletion mark as encoded.
struct Mark {
    stamped: Stamped,
    /// The line as sent: shared with the response body, not copied.
    line: Bytes,
    /// Where in `line` the object's text starts (after `{"type":"MODIFIED","object":`).
    object_at: usize,
    /// The digits of `metadata.resourceVersion` in `line`.
    rv: Range<usize>,
}

#[derive(Serialize)]
struct Line<'a, T: Serialize> {
    #[serde(rename = "type")]
    event_type: &'a str,
    object: &'a T,
}

impl Encoder {
    pub(super) fn new(def: &ResourceDef, representation: Representation) -> Encoder {
        let (kind, api_version) = match representation {
            Representation::Full => (def.kind.clone(), def.api_version()),
            Representation::MetadataOnly => (
                "PartialObjectMetadata".to_string(),
                "meta.k8s.io/v1".to_string(),
            ),
        };
        Encoder {
            representation,
            kind,
            api_version,
            mark: None,
        }
    }

    fn line<T: Serialize>(event_type: &str, object: &T) -> Vec<u8> {
        let mut bytes = serde_json::to_vec(&Line { event_type, object }).unwrap_or_default();
        bytes.push(b'\n');
        bytes
    }

    /// What serde writes of [`Line`] before the object: `{"type":"<event_type>","object":`.
    fn prefix(event_type: &str) -> [&[u8]; 3] {
        [br#"{"type":""#, event_type.as_bytes(), br#"","object":"#]
    }

    /// The line of an ADDED, MODIFIED or DELETED event.
    pub(super) fn event(&mut self, event_type: &str, object: &Stamped) -> Bytes {
        if let Some(line) = self.reuse_mark(event_type, object) {
            return Bytes::from(line);
        }
        let line = Bytes::from(Encoder::line(
            event_type,
            &self.representation.stamped(object),
        ));
        self.mark = object
            .is_deletion_mark()
            .then(|| Mark::find(object, &line, event_type))
            .flatten();
        line
    }

    /// The line of `object` written from the kept mark's, if it presents the same state at
    /// another resourceVersion. The mark is used once.
    fn reuse_mark(&mut self, event_type: &str, object: &Stamped) -> Option<Vec<u8>> {
        let mark = self.mark.take()?;
        if !mark.stamped.differs_at_most_in_resource_version(object) {
            return None;
        }
        let rv = object.resource_version()?.to_string();
        let (before, after) = (
            &mark.line[mark.object_at..mark.rv.start],
            &mark.line[mark.rv.end..],
        );
        let mut line = Vec::with_capacity(mark.line.len() + 16);
        for part in Encoder::prefix(event_type) {
            line.extend_from_slice(part);
        }
        line.extend_from_slice(before);
        line.extend_from_slice(rv.as_bytes());
        line.extend_from_slice(after);
        Some(line)
    }

    /// A BOOKMARK: an empty object of the watched kind carrying only the resourceVersion
    /// (and the initial-events-end annotation of a streaming list).
    pub(super) fn bookmark(&self, rv: u64, initial_events_end: bool) -> Bytes {
        let mut metadata = json!({"resourceVersion": rv.to_string(), "creationTimestamp": null});
        if initial_events_end {
            metadata["annotations"] = json!({"k8s.io/initial-events-end": "true"});
        }
        let object =
            json!({"kind": self.kind, "apiVersion": self.api_version, "metadata": metadata});
        Bytes::from(Encoder::line("BOOKMARK", &object))
    }
}

impl Mark {
    /// The mark's line kept for reuse, if its resourceVersion appears in it exactly once.
    fn find(stamped: &Stamped, line: &Bytes, event_type: &str) -> Option<Mark> {
        const KEY: &str = r#""resourceVersion":""#;
        let object_at = Encoder::prefix(event_type).iter().map(|p| p.len()).sum();
        let rv = stamped.resource_version()?.to_string();
        let needle = format!(r#"{KEY}{rv}""#);
        let mut found = memchr::memmem::find_iter(line.get(object_at..)?, needle.as_bytes());
        let at = found.next()?;
        if found.next().is_some() {
            return None;
        }
        let digits = object_at + at + KEY.len();
        Some(Mark {
            stamped: stamped.clone(),
            line: line.clone(),
            object_at,
            rv: digits..digits + rv.len(),
        })
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use serde_json::Value;

    use super::*;

    fn pods() -> ResourceDef {
        ResourceDef::new("", "v1", "pods", "Pod").deleted_gracefully()
    }

    /// What serde makes of the event, as every line must be.
    fn expected(representation: Representation, event_type: &str, object: &Stamped) -> Vec<u8> {
        Encoder::line(event_type, &representation.stamped(object))
    }

    fn pod(extra: Value) -> Arc<Value> {
        let mut pod = serde_json::json!({
            "apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": "a", "namespace": "n", "uid": "u", "resourceVersion": "7"},
            "spec": {"nodeName": "x"}, "status": {"phase": "Succeeded"}
        });
        if let (Some(spec), Value::Object(extra)) = (pod["spec"].as_object_mut(), extra) {
            spec.extend(extra);
        }
        Arc::new(pod)
    }

    #[test]
    fn a_deletions_two_lines_are_serdes_in_either_representation() {
        for representation in [Representation::Full, Representation::MetadataOnly] {
            let mut encoder = Encoder::new(&pods(), representation);
            let marked = Stamped::marked_for_deletion(pod(json!({})), 10, "2026-11-26T08:00:00Z");
            let deleted = marked.presented_at(11);
            let modified_line = encoder.event("MODIFIED", &marked);
            assert_eq!(modified_line, expected(representation, "MODIFIED", &marked));
            assert!(encoder.mark.is_some(), "the mark is kept");
            let deleted_line = encoder.event("DELETED", &deleted);
            assert_eq!(deleted_line, expected(representation, "DELETED", &deleted));
            assert!(encoder.mark.is_none(), "the mark is used once");
        }
    }

    #[test]
    fn a_mark_is_not_reused_for_another_object_or_state_or_an_ambiguous_version() {
        let mut encoder = Encoder::new(&pods(), Representation::Full);
        let at = "2026-11-26T08:00:00Z";
        let marked = Stamped::marked_for_deletion(pod(json!({})), 10, at);
        // Another stored object, even an equal one.
        let other = Stamped::marked_for_deletion(pod(json!({})), 10, at).presented_at(11);
        // The same object with another mark.
        let later =
            Stamped::marked_for_deletion(Arc::clone(marked.object()), 12, "2026-11-26T09:00:00Z");
        // The same object as stored.
        let stored = Stamped::stored(Arc::clone(marked.object()));
        for next in [&other, &later, &stored] {
            encoder.event("MODIFIED", &marked);
            assert_eq!(
                encoder.event("DELETED", next),
                expected(Representation::Full, "DELETED", next)
            );
        }
        // `"resourceVersion":"10"` twice (a reference in the spec): not kept, still right.
        let twice =
            Stamped::marked_for_deletion(pod(json!({"ref": {"resourceVersion": "10"}})), 10, at);
        assert_eq!(
            encoder.event("MODIFIED", &twice),
            expected(Representation::Full, "MODIFIED", &twice)
        );
        assert!(encoder.mark.is_none());
        let gone = twice.presented_at(11);
        assert_eq!(
            encoder.event("DELETED", &gone),
            expected(Representation::Full, "DELETED", &gone)
        );
        // Events that are no mark keep nothing.
        encoder.event("ADDED", &stored);
        assert!(encoder.mark.is_none());
    }
}
