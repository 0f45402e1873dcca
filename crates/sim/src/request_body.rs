//! What a client sent in a request body, as the JSON the handlers work on: a JSON body as it
//! is, a protobuf body (`Content-Type: application/vnd.kubernetes.protobuf`, what client-go's
//! typed clients send: exchanges 242, 253, 289–293) decoded with the `kube-gc-protobuf`
//! crate's envelope reader and descriptor tables — one reading of the wire format for the
//! client and the simulated server alike.
//!
//! Contract:
//! - [`object`] reads the body of a create or update of `expected` (`apiVersion`, `kind`);
//!   [`delete_options`] the body of a DELETE. Both are pure and total: any bytes give a value
//!   or a [`BodyError`], never a panic, and nothing is reserved from a length the body claims
//!   (the wire reader bounds every length by the bytes present).
//! - A body that cannot be decoded is refused as the real server refuses it, checked against
//!   the captures: for an object, 400 `BadRequest` `the object provided is unrecognized (must
//!   be of type K): <why> (<the body's first 30 bytes in hex, or as text when it starts with
//!   {>)` (257, 259, 261, 262) and, once the envelope names a type, `K2 in version "v" cannot
//!   be handled as a K: …` (260); for DeleteOptions, 500 with no reason and the decoder's
//!   message alone (256).
//! - DeleteOptions are taken under any group version's name (242: `batch/v1`; 265: `v1`; 269:
//!   a custom resource's): the type is registered in every group version.
//! - A protobuf object of a kind the tables do not describe — a custom resource, whose protobuf
//!   create a v1.28.7 server answers by closing the connection (270), or a built-in kind
//!   without a table — is refused with 415 `UnsupportedMediaType` naming the media types the
//!   simulated server does take for it: a clear answer where the real one is a panic or a
//!   decoding this server cannot do (both in [`crate::differences`]).
//! - A decoded object holds the members the tables describe; a member of a partial table
//!   (a pod spec's affinity, say) is dropped, as the client's reader drops it
//!   ([`crate::differences`]).

use http::StatusCode;
use serde_json::Value;

use crate::status;
use kube_gc_protobuf::envelope::{self, Envelope, EnvelopeError};
use kube_gc_protobuf::wire::WireError;
use kube_gc_protobuf::{schema, transcode, Selection, TranscodeError, MEDIA_TYPE};

/// How many bytes of an undecodable body its refusal quotes (upstream's `summarizeData`).
const SUMMARY_BYTES: usize = 30;

/// The media types the simulated server takes a whole object in when protobuf is not one.
const JSON_MEDIA_TYPES: [&str; 2] = ["application/json", "application/yaml"];

/// How a request body is encoded, from its `Content-Type`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BodyMedia {
    /// `application/vnd.kubernetes.protobuf`.
    Protobuf,
    /// Anything else is read as JSON (YAML is not decoded: see [`crate::differences`]).
    Json,
}

impl BodyMedia {
    /// The encoding a `Content-Type` header names; parameters and case do not matter.
    pub fn of(content_type: Option<&str>) -> BodyMedia {
        let essence = content_type
            .and_then(|c| c.split(';').next())
            .map(str::trim)
            .unwrap_or_default();
        if essence.eq_ignore_ascii_case(MEDIA_TYPE) {
            BodyMedia::Protobuf
        } else {
            BodyMedia::Json
        }
    }
}

/// Why a body was refused, and the answer the real server gives for it.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum BodyError {
    /// An object body that is not the expected object.
    #[error("{message}")]
    BadObject {
        /// The whole message of the 400.
        message: String,
    },
    /// A DeleteOptions body that could not be decoded: 500, reason left empty (exchange 256).
    #[error("{message}")]
    BadDeleteOptions {
        /// The decoder's message.
        message: String,
    },
    /// A protobuf body of a kind this server has no table for.
    #[error("no protobuf table for {api_version} {kind}")]
    NoTable {
        /// The envelope's `apiVersion`.
        api_version: String,
        /// The envelope's `kind`.
        kind: String,
    },
}

impl BodyError {
    /// The `(code, Status)` the server answers.
    pub fn status(&self) -> (StatusCode, Value) {
        match self {
            BodyError::BadObject { message } => status::bad_request(message),
            BodyError::BadDeleteOptions { message } => status::unknown_failure(message),
            BodyError::NoTable { .. } => status::unsupported_media_type(&JSON_MEDIA_TYPES),
        }
    }
}

/// The object a create or update of `expected` (`apiVersion`, `kind`) sent, as JSON. A JSON
/// body is parsed by the caller (its refusals are worded by the handler); this decodes a
/// protobuf one.
pub fn protobuf_object(body: &[u8], expected: (&str, &str)) -> Result<Value, BodyError> {
    let (expected_api_version, expected_kind) = expected;
    let unrecognized = |why: String| BodyError::BadObject {
        message: format!(
            "the object provided is unrecognized (must be of type {expected_kind}): {why} ({})",
            summarize(body)
        ),
    };
    let envelope = decode_envelope(body).map_err(unrecognized)?;
    let cannot_handle = |why: String| BodyError::BadObject {
        message: format!(
            "{} in version {:?} cannot be handled as a {expected_kind}: {why}",
            envelope.kind,
            version_of(envelope.api_version)
        ),
    };
    if envelope.kind != expected_kind || envelope.api_version != expected_api_version {
        // Exchange 260: the decoder reads the type the envelope names, and the handler cannot
        // convert it to the resource's internal type.
        return Err(cannot_handle(format!(
            "converting ({}.{}) to ({}.{expected_kind}): unknown conversion",
            version_of(envelope.api_version),
            envelope.kind,
            internal_package(expected_api_version),
        )));
    }
    let Some(message) = schema::for_kind(envelope.api_version, envelope.kind) else {
        return Err(BodyError::NoTable {
            api_version: envelope.api_version.to_owned(),
            kind: envelope.kind.to_owned(),
        });
    };
    let type_meta = Some((envelope.api_version, envelope.kind));
    let text = transcode::to_json(message, envelope.raw, type_meta, &Selection::all())
        .map_err(|e| cannot_handle(transcode_message(&e)))?;
    parse(&text).map_err(cannot_handle)
}

/// The DeleteOptions a protobuf DELETE body carries, as JSON; `None` for an empty body (no
/// options, as the real server reads it).
pub fn protobuf_delete_options(body: &[u8]) -> Result<Option<Value>, BodyError> {
    if body.is_empty() {
        return Ok(None);
    }
    let refused = |message: String| BodyError::BadDeleteOptions { message };
    let envelope = decode_envelope(body).map_err(refused)?;
    if envelope.kind != "DeleteOptions" {
        return Err(refused(
            "decoded object cannot be converted to DeleteOptions".to_owned(),
        ));
    }
    let text = transcode::to_json(
        &schema::DELETE_OPTIONS,
        envelope.raw,
        None,
        &Selection::all(),
    )
    .map_err(|e| refused(transcode_message(&e)))?;
    parse(&text).map(Some).map_err(refused)
}

/// The envelope, or the protobuf serializer's words for why there is none.
fn decode_envelope(body: &[u8]) -> Result<Envelope<'_>, String> {
    if body.is_empty() {
        return Err("empty data".to_owned());
    }
    if !envelope::has_magic(body) {
        // Go prints the prefix as a byte slice: `[107 56 115 0]`.
        let prefix: Vec<String> = envelope::MAGIC.iter().map(u8::to_string).collect();
        return Err(format!(
            "provided data does not appear to be a protobuf message, expected prefix [{}]",
            prefix.join(" ")
        ));
    }
    if body.len() == envelope::MAGIC.len() {
        return Err("empty body".to_owned());
    }
    Envelope::decode(body).map_err(|e| envelope_message(&e))
}

/// gogo-protobuf's words where they are known (a cut-short body is `unexpected EOF`, exchange
/// 259; an overlong varint an integer overflow), kube-gc's otherwise.
fn envelope_message(error: &EnvelopeError) -> String {
    match error {
        EnvelopeError::Wire(wire) => wire_message(wire),
        other => other.to_string(),
    }
}

fn wire_message(error: &WireError) -> String {
    match error {
        WireError::Truncated { .. } => "unexpected EOF".to_owned(),
        WireError::VarintTooLong { .. } => "proto: integer overflow".to_owned(),
        other => other.to_string(),
    }
}

fn transcode_message(error: &TranscodeError) -> String {
    match error {
        TranscodeError::Wire { source, .. } => wire_message(source),
        TranscodeError::Envelope(e) => envelope_message(e),
        other => other.to_string(),
    }
}

fn parse(text: &[u8]) -> Result<Value, String> {
    // The transcoder writes valid JSON whatever its input (its contract); this cannot fail
    // but is not trusted not to.
    serde_json::from_slice(text).map_err(|e| e.to_string())
}

/// upstream's `summarizeData`: the first 30 bytes, as text when they open a JSON object, else
/// in hex; ` ...` when there was more; `<empty>` for nothing.
fn summarize(body: &[u8]) -> String {
    let shown = &body[..body.len().min(SUMMARY_BYTES)];
    let more = if body.len() > SUMMARY_BYTES {
        " ..."
    } else {
        ""
    };
    match body.first() {
        None => "<empty>".to_owned(),
        Some(b'{') => format!("{}{more}", String::from_utf8_lossy(shown)),
        Some(_) => {
            let hex: String = shown.iter().map(|b| format!("{b:02x}")).collect();
            format!("{hex}{more}")
        }
    }
}

/// The version part of an `apiVersion`: `batch/v1` → `v1`.
fn version_of(api_version: &str) -> &str {
    api_version.rsplit('/').next().unwrap_or(api_version)
}

/// The Go package of a group's internal types, as a conversion error names it: the core group
/// is `core`, another its first label (`batch`, `apps`).
fn internal_package(api_version: &str) -> &str {
    match api_version.split_once('/') {
        None => "core",
        Some((group, _)) => group.split('.').next().unwrap_or(group),
    }
}

#[cfg(test)]
mod tests;
