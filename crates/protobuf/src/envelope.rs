//! The envelope every protobuf body from a Kubernetes API server comes in: the four magic bytes
//! `k8s\0`, then a `runtime.Unknown` message naming the object's type and carrying its bytes.
//!
//! ```text
//!  6b 38 73 00 │ runtime.Unknown
//!   "k8s\0"    │  1 typeMeta        { 1 apiVersion, 2 kind }
//!              │  2 raw             the object itself (a batch.v1.Job, a JobList, …)
//!              │  3 contentEncoding "" (nothing else is ever written)
//!              │  4 contentType     "" (meaning: raw is protobuf)
//! ```
//!
//! Facts, from kubernetes/kubernetes: the prefix is `protoEncodingPrefix` in
//! `staging/src/k8s.io/apimachinery/pkg/runtime/serializer/protobuf/protobuf.go`
//! (`Serializer.doEncode` writes it, then the `Unknown` with `TypeMeta{Kind, APIVersion}` and the
//! object as `Raw`); the field numbers are `message Unknown` and `message TypeMeta` in
//! `staging/src/k8s.io/apimachinery/pkg/runtime/generated.proto`. The objects themselves carry
//! no type: `batch.v1.Job` has no `kind` field, so the envelope is the only place it is said.
//!
//! Contract:
//! - [`Envelope::decode`] borrows: `raw` is a slice of the body, never a copy.
//! - A body without the magic is refused with what it starts with (a JSON body sent by
//!   mistake, a truncated one) rather than misread.
//! - An envelope without `raw` (a body cut right after its type) is refused: the server always
//!   sends one, and an object's absence must not read as an empty object.
//! - A `contentEncoding` other than empty is refused: the server never sets one, and `raw`
//!   would then not be protobuf.
//! - [`encode`] writes exactly what the Go serializer writes (empty `contentEncoding` and
//!   `contentType` included), so the simulated server's bodies are byte-comparable with
//!   captures.

use super::wire::{self, put_len_field, Reader, WireError, WireValue};

/// `k8s\0`: the first four bytes of every protobuf body.
pub const MAGIC: [u8; 4] = [0x6b, 0x38, 0x73, 0x00];

/// The media type a client asks for (and the server names in `Content-Type`).
pub const MEDIA_TYPE: &str = "application/vnd.kubernetes.protobuf";

/// Why a body is not a Kubernetes protobuf envelope.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum EnvelopeError {
    /// The body does not start with `k8s\0`.
    #[error("not a Kubernetes protobuf body: it starts with {start:02x?}, not k8s\\0")]
    NoMagic {
        /// Its first bytes (up to four).
        start: Vec<u8>,
    },
    /// The `runtime.Unknown` after the magic is malformed.
    #[error("malformed runtime.Unknown envelope: {0}")]
    Wire(#[from] WireError),
    /// A string field of the envelope is not UTF-8.
    #[error("the envelope's {field} is not UTF-8")]
    NotUtf8 {
        /// `apiVersion`, `kind`, `contentEncoding` or `contentType`.
        field: &'static str,
    },
    /// A field had a wire type its schema does not allow.
    #[error("the envelope's field {field} has wire type {found}, expected length-delimited")]
    WireType {
        /// Its number.
        field: u32,
        /// The wire type found.
        found: wire::WireType,
    },
    /// The `runtime.Unknown` has no `raw`: no object at all (a body cut after its type).
    #[error("the envelope ({api_version} {kind}) carries no object: its raw field is missing")]
    MissingRaw {
        /// Its `apiVersion`, possibly empty.
        api_version: String,
        /// Its `kind`, possibly empty.
        kind: String,
    },
    /// `raw` is encoded (compressed) in a way this decoder does not undo.
    #[error("the envelope's contentEncoding is {0:?}; only unencoded raw bytes are supported")]
    ContentEncoding(String),
}

/// A decoded envelope, borrowing from the body.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Envelope<'a> {
    /// `typeMeta.apiVersion`: `batch/v1`, `v1`, `meta.k8s.io/v1`, …
    pub api_version: &'a str,
    /// `typeMeta.kind`: `Job`, `JobList`, `Status`, …
    pub kind: &'a str,
    /// The object's own protobuf bytes.
    pub raw: &'a [u8],
    /// `contentType`; empty (protobuf) in everything a server sends.
    pub content_type: &'a str,
}

impl<'a> Envelope<'a> {
    /// Decodes a whole body: the magic, then the `runtime.Unknown`.
    pub fn decode(body: &'a [u8]) -> Result<Self, EnvelopeError> {
        let rest = strip_magic(body)?;
        Self::decode_unknown(rest, MAGIC.len())
    }

    /// Decodes a `runtime.Unknown` without the magic; `base` is where it starts in the body.
    pub fn decode_unknown(bytes: &'a [u8], base: usize) -> Result<Self, EnvelopeError> {
        let mut envelope = Envelope::default();
        let mut has_raw = false;
        let mut reader = Reader::at(bytes, base);
        while let Some(field) = reader.next_field()? {
            match field.number {
                1 => {
                    let (api_version, kind) = decode_type_meta(len_value(&field)?, field.offset)?;
                    envelope.api_version = api_version;
                    envelope.kind = kind;
                }
                2 => {
                    envelope.raw = len_value(&field)?;
                    has_raw = true;
                }
                3 => {
                    let encoding = utf8(len_value(&field)?, "contentEncoding")?;
                    if !encoding.is_empty() {
                        return Err(EnvelopeError::ContentEncoding(encoding.to_owned()));
                    }
                }
                4 => envelope.content_type = utf8(len_value(&field)?, "contentType")?,
                _ => {} // Unknown fields are skipped, as protobuf requires.
            }
        }
        if !has_raw {
            // The server always writes it; without it there is nothing to decode.
            return Err(EnvelopeError::MissingRaw {
                api_version: envelope.api_version.to_owned(),
                kind: envelope.kind.to_owned(),
            });
        }
        Ok(envelope)
    }

    /// Whether this is a `Status` (the server's answer instead of the object asked for).
    pub fn is_status(&self) -> bool {
        self.kind == "Status"
    }
}

/// Whether `body` starts with the magic: a protobuf body rather than JSON.
pub fn has_magic(body: &[u8]) -> bool {
    body.starts_with(&MAGIC)
}

/// The body after the magic, or the error saying what it starts with.
pub fn strip_magic(body: &[u8]) -> Result<&[u8], EnvelopeError> {
    body.strip_prefix(&MAGIC[..])
        .ok_or_else(|| EnvelopeError::NoMagic {
            start: body.iter().take(MAGIC.len()).copied().collect(),
        })
}

/// Decodes a `runtime.TypeMeta` (`apiVersion` = 1, `kind` = 2) at body offset `base`.
pub fn decode_type_meta(bytes: &[u8], base: usize) -> Result<(&str, &str), EnvelopeError> {
    let (mut api_version, mut kind) = ("", "");
    let mut reader = Reader::at(bytes, base);
    while let Some(field) = reader.next_field()? {
        match field.number {
            1 => api_version = utf8(len_value(&field)?, "apiVersion")?,
            2 => kind = utf8(len_value(&field)?, "kind")?,
            _ => {}
        }
    }
    Ok((api_version, kind))
}

fn len_value<'a>(field: &wire::Field<'a>) -> Result<&'a [u8], EnvelopeError> {
    match field.value {
        WireValue::Len(bytes) => Ok(bytes),
        other => Err(EnvelopeError::WireType {
            field: field.number,
            found: other.wire_type(),
        }),
    }
}

fn utf8<'a>(bytes: &'a [u8], field: &'static str) -> Result<&'a str, EnvelopeError> {
    std::str::from_utf8(bytes).map_err(|_| EnvelopeError::NotUtf8 { field })
}

/// The encoded `runtime.TypeMeta`.
pub fn encode_type_meta(api_version: &str, kind: &str) -> Vec<u8> {
    let mut out = Vec::with_capacity(api_version.len() + kind.len() + 4);
    put_len_field(&mut out, 1, api_version.as_bytes());
    put_len_field(&mut out, 2, kind.as_bytes());
    out
}

/// A whole body: the magic and a `runtime.Unknown` around `raw`, as the Go serializer writes
/// it (both content fields present and empty).
pub fn encode(api_version: &str, kind: &str, raw: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(raw.len() + api_version.len() + kind.len() + 24);
    out.extend_from_slice(&MAGIC);
    put_len_field(&mut out, 1, &encode_type_meta(api_version, kind));
    put_len_field(&mut out, 2, raw);
    put_len_field(&mut out, 3, b"");
    put_len_field(&mut out, 4, b"");
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_envelope_round_trips() {
        let body = encode("batch/v1", "Job", b"\x0a\x00");
        assert!(has_magic(&body));
        let envelope = Envelope::decode(&body).expect("decodes");
        assert_eq!(envelope.api_version, "batch/v1");
        assert_eq!(envelope.kind, "Job");
        assert_eq!(envelope.raw, b"\x0a\x00");
        assert_eq!(envelope.content_type, "");
        assert!(!envelope.is_status());
    }

    #[test]
    fn a_json_body_is_refused_with_its_start() {
        let err = Envelope::decode(b"{\"kind\":\"Status\"}").unwrap_err();
        assert_eq!(
            err,
            EnvelopeError::NoMagic {
                start: b"{\"ki".to_vec()
            }
        );
        assert!(err.to_string().contains("7b, 22, 6b, 69"), "{err}");
        assert!(matches!(
            Envelope::decode(b"k8"),
            Err(EnvelopeError::NoMagic { .. })
        ));
    }

    #[test]
    fn a_truncated_envelope_says_where() {
        let body = encode("v1", "Pod", &[0x0a; 40]);
        let err = Envelope::decode(&body[..body.len() - 10]).unwrap_err();
        assert!(
            matches!(err, EnvelopeError::Wire(WireError::Truncated { .. })),
            "{err}"
        );
        assert!(err.to_string().contains("field 2"), "{err}");
    }

    #[test]
    fn an_envelope_without_an_object_is_refused() {
        let mut body = MAGIC.to_vec();
        put_len_field(&mut body, 1, &encode_type_meta("v1", "Pod"));
        let err = Envelope::decode(&body).unwrap_err();
        assert_eq!(
            err.to_string(),
            "the envelope (v1 Pod) carries no object: its raw field is missing"
        );
    }

    #[test]
    fn a_content_encoding_is_refused() {
        let mut body = MAGIC.to_vec();
        put_len_field(&mut body, 2, b"");
        put_len_field(&mut body, 3, b"gzip");
        let err = Envelope::decode(&body).unwrap_err();
        assert_eq!(err, EnvelopeError::ContentEncoding("gzip".into()));
    }

    #[test]
    fn a_varint_where_a_message_belongs_is_refused() {
        let mut body = MAGIC.to_vec();
        wire::put_varint_field(&mut body, 1, 3);
        let err = Envelope::decode(&body).unwrap_err();
        assert!(
            matches!(err, EnvelopeError::WireType { field: 1, .. }),
            "{err}"
        );
    }
}
