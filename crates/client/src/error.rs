//! The client's error type: [`Error`], and [`ApiError`] for an error the server answered with.
//!
//! Contract:
//! - An HTTP error response becomes an [`ApiError`] via [`ApiError::from_response`], from the
//!   status code, the headers and the body. The body is read as a [`Status`] when it is one; a
//!   body that is not (a proxy's HTML page) still yields an error classified by its status code,
//!   with the body's start as the message.
//! - The [`ApiErrorKind`] is taken from the Status `reason` when the server gave a known one, and
//!   from the HTTP code otherwise — the rule client-go's `IsNotFound` & co. follow.
//! - A watch `ERROR` event's Status converts into the same error (`Error::from(status)`), so a
//!   410 on a watch and a 410 on a list are handled by the same `is_gone()`.
//! - An error from below (the transport, a credential plugin) prints its whole chain of causes
//!   ([`chain`]): "error sending request" alone tells an operator nothing, "… tcp connect
//!   error: Connection refused" does. Every log line and message built from an [`Error`] then
//!   carries the cause.
//! - Controllers ask questions instead of matching variants: `err.is_not_found()`,
//!   `err.is_conflict()`, `err.is_gone()`, `err.retry_after()`, `err.is_retryable()`,
//!   `err.is_unavailable()`.

use std::fmt;
use std::time::Duration;

use http::header::{HeaderMap, RETRY_AFTER};

use super::availability::status_says_unavailable;
use kube_gc_api::{Status, StatusReason, CAUSE_RESOURCE_VERSION_TOO_LARGE};
use kube_gc_core::error_chain::chain;

/// A boxed error from a lower layer (HTTP client, I/O, timer).
pub type BoxError = Box<dyn std::error::Error + Send + Sync + 'static>;

/// How many bytes of a body or line are kept in an error message.
const SNIPPET_BYTES: usize = 200;

/// Everything that can go wrong talking to the API server.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The server answered with an error status (or a watch `ERROR` event).
    #[error(transparent)]
    Api(Box<ApiError>),
    /// No answer in time.
    #[error("request to the API server timed out: {}", chain(source.as_ref()))]
    Timeout {
        /// What timed out.
        #[source]
        source: BoxError,
    },
    /// The connection could not be made, or broke while the response was being read.
    #[error("connection to the API server failed: {}", chain(source.as_ref()))]
    Connection {
        /// The transport's error.
        #[source]
        source: BoxError,
    },
    /// The request could not be built or sent, for a reason retrying will not fix (a bad URL,
    /// a redirect loop).
    #[error("request could not be sent: {}", chain(source.as_ref()))]
    Request {
        /// The HTTP client's error.
        #[source]
        source: BoxError,
    },
    /// A response body or watch line is not the JSON we expected.
    #[error("could not decode {what}: {source}; input starts with: {snippet}")]
    Decode {
        /// What was being decoded, e.g. `watch event`.
        what: &'static str,
        /// The start of the offending input, for logs.
        snippet: String,
        /// The JSON error.
        #[source]
        source: serde_json::Error,
    },
    /// A protobuf answer could not be read (a broken frame or envelope, a kind without
    /// tables).
    #[error("could not decode protobuf {what}: {source}")]
    Protobuf {
        /// What was being decoded, e.g. `watch frame`.
        what: &'static str,
        /// What was wrong.
        #[source]
        source: BoxError,
    },
    /// A LIST response body is not a well-formed list (see
    /// the list decoder's `ListDecodeError` for where and why).
    #[error(transparent)]
    ListBody(Box<super::list_decoder::error::ListDecodeError>),
    /// A request body could not be serialized.
    #[error("could not encode {what}: {source}")]
    Encode {
        /// What was being encoded, e.g. `patch body`.
        what: &'static str,
        /// The JSON error.
        #[source]
        source: serde_json::Error,
    },
    /// No credential could be produced for the request (token file unreadable, exec plugin
    /// failed).
    #[error("no credentials for the request: {}", chain(source.as_ref()))]
    Auth {
        /// The credential source's error.
        #[source]
        source: BoxError,
    },
    /// A watch stream ended in the middle of a line: the connection was cut.
    #[error("watch stream ended inside a line of {len} bytes: {snippet}")]
    TruncatedLine {
        /// How many bytes the incomplete line had.
        len: usize,
        /// Its start, for logs.
        snippet: String,
    },
    /// A watch line grew past the decoder's limit without a newline.
    #[error("watch line exceeds {limit} bytes without a newline; starts with: {snippet}")]
    LineTooLong {
        /// The limit that was exceeded.
        limit: usize,
        /// The line's start, for logs.
        snippet: String,
    },
}

/// The class of an error the server answered with.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ApiErrorKind {
    /// 400: the request is malformed (e.g. a bad continue token).
    BadRequest,
    /// 401: no valid credentials.
    Unauthorized,
    /// 403: not allowed.
    Forbidden,
    /// 404: no such object or resource.
    NotFound,
    /// 405: verb not supported on this resource.
    MethodNotAllowed,
    /// 409 `AlreadyExists`: a create found the name taken.
    AlreadyExists,
    /// 409 `Conflict`: stale resourceVersion or failed precondition; re-read and retry.
    Conflict,
    /// 410 `Gone`.
    Gone,
    /// 410 `Expired`: the resourceVersion or continue token was compacted; relist.
    Expired,
    /// 415: content type not supported (strategic merge patch on a custom resource).
    UnsupportedMediaType,
    /// 422: validation failed; the Status lists the causes.
    Invalid,
    /// 429: throttled; retry after [`ApiError::retry_after`].
    TooManyRequests,
    /// 500: unexpected server error.
    InternalError,
    /// 500 `ServerTimeout`: the server gave up, the request may be retried.
    ServerTimeout,
    /// 503: the server (or an aggregated API behind it) is unavailable.
    ServiceUnavailable,
    /// 504: the request timed out on the server.
    Timeout,
    /// 504 whose cause is `ResourceVersionTooLarge`: the server has not yet seen the requested
    /// resourceVersion (it lags behind another server); retry shortly or relist without one.
    ResourceVersionTooLarge,
    /// Any other error status.
    Other,
}

/// An error response from the API server.
#[derive(Clone, Debug, PartialEq)]
pub struct ApiError {
    /// The HTTP status code (for a watch `ERROR` event, the Status's `code`).
    pub code: u16,
    /// What kind of failure it is.
    pub kind: ApiErrorKind,
    /// The server's explanation: the Status `message`, or the start of a non-Status body.
    pub message: String,
    /// The Status body, when the server sent one.
    pub status: Option<Status>,
    /// How long the server asked us to wait: the `Retry-After` header, else
    /// `details.retryAfterSeconds`.
    pub retry_after: Option<Duration>,
}

impl ApiError {
    /// Builds the error for a non-success HTTP response.
    pub fn from_response(code: u16, headers: &HeaderMap, body: &[u8]) -> Self {
        // Asked protobuf first, the server answers errors with a protobuf Status too
        // (exchanges 109, 111): read as its JSON form.
        let transcoded = super::protobuf::envelope::has_magic(body)
            .then(|| super::protobuf::transcode::body_to_json(body, &Default::default()).ok())
            .flatten();
        let body = transcoded.as_deref().unwrap_or(body);
        let status = serde_json::from_slice::<Status>(body)
            .ok()
            .filter(|s| s.types.kind == "Status" || s.code.is_some() || !s.reason.is_unknown());
        let message = match status.as_ref().and_then(|s| s.message.clone()) {
            Some(message) => message,
            None if body.is_empty() => canonical_reason(code).to_owned(),
            None => snippet(body),
        };
        let retry_after =
            retry_after_header(headers).or_else(|| status.as_ref().and_then(retry_after_details));
        ApiError {
            code,
            kind: classify(code, status.as_ref()),
            message,
            status,
            retry_after,
        }
    }

    /// Builds the error a Status stands for, e.g. the object of a watch `ERROR` event. A
    /// Status without a code is taken as a 500, as client-go does.
    pub fn from_status(status: Status) -> Self {
        let code = status.code.unwrap_or(500);
        let message = status
            .message
            .clone()
            .unwrap_or_else(|| canonical_reason(code).to_owned());
        ApiError {
            code,
            kind: classify(code, Some(&status)),
            message,
            retry_after: retry_after_details(&status),
            status: Some(status),
        }
    }

    /// The Status `reason`, if the server sent a Status.
    pub fn reason(&self) -> Option<&StatusReason> {
        self.status.as_ref().map(|s| &s.reason)
    }
}

impl fmt::Display for ApiError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "API server answered {} {:?}: {}",
            self.code, self.kind, self.message
        )
    }
}

impl std::error::Error for ApiError {}

/// The kind of a response: the Status reason if known, else the HTTP code.
fn classify(code: u16, status: Option<&Status>) -> ApiErrorKind {
    let reason = status.map_or(&StatusReason::Unknown, |s| &s.reason);
    if is_too_large_resource_version(code, status) {
        return ApiErrorKind::ResourceVersionTooLarge;
    }
    match reason {
        StatusReason::BadRequest => ApiErrorKind::BadRequest,
        StatusReason::Unauthorized => ApiErrorKind::Unauthorized,
        StatusReason::Forbidden => ApiErrorKind::Forbidden,
        StatusReason::NotFound => ApiErrorKind::NotFound,
        StatusReason::MethodNotAllowed => ApiErrorKind::MethodNotAllowed,
        StatusReason::AlreadyExists => ApiErrorKind::AlreadyExists,
        StatusReason::Conflict => ApiErrorKind::Conflict,
        StatusReason::Gone => ApiErrorKind::Gone,
        StatusReason::Expired => ApiErrorKind::Expired,
        StatusReason::UnsupportedMediaType => ApiErrorKind::UnsupportedMediaType,
        StatusReason::Invalid => ApiErrorKind::Invalid,
        StatusReason::TooManyRequests => ApiErrorKind::TooManyRequests,
        StatusReason::InternalError => ApiErrorKind::InternalError,
        StatusReason::ServerTimeout => ApiErrorKind::ServerTimeout,
        StatusReason::ServiceUnavailable => ApiErrorKind::ServiceUnavailable,
        StatusReason::Timeout => ApiErrorKind::Timeout,
        _ => classify_code(code),
    }
}

fn classify_code(code: u16) -> ApiErrorKind {
    match code {
        400 => ApiErrorKind::BadRequest,
        401 => ApiErrorKind::Unauthorized,
        403 => ApiErrorKind::Forbidden,
        404 => ApiErrorKind::NotFound,
        405 => ApiErrorKind::MethodNotAllowed,
        409 => ApiErrorKind::Conflict,
        410 => ApiErrorKind::Gone,
        415 => ApiErrorKind::UnsupportedMediaType,
        422 => ApiErrorKind::Invalid,
        429 => ApiErrorKind::TooManyRequests,
        500 => ApiErrorKind::InternalError,
        503 => ApiErrorKind::ServiceUnavailable,
        504 => ApiErrorKind::Timeout,
        _ => ApiErrorKind::Other,
    }
}

/// A 504 `Timeout` whose cause is `ResourceVersionTooLarge`. Servers before that cause existed
/// said so only in the message, which client-go also accepts.
fn is_too_large_resource_version(code: u16, status: Option<&Status>) -> bool {
    let Some(status) = status else { return false };
    let timeout = status.reason == StatusReason::Timeout || code == 504;
    let said_so = status.has_cause(CAUSE_RESOURCE_VERSION_TOO_LARGE)
        || status
            .message
            .as_deref()
            .is_some_and(|m| m.contains("Too large resource version"));
    timeout && said_so
}

/// `Retry-After` in seconds. HTTP also allows a date there; the API server never sends one,
/// so a date is ignored rather than guessed at.
fn retry_after_header(headers: &HeaderMap) -> Option<Duration> {
    let value = headers.get(RETRY_AFTER)?.to_str().ok()?;
    value.trim().parse::<u64>().ok().map(Duration::from_secs)
}

fn retry_after_details(status: &Status) -> Option<Duration> {
    status
        .retry_after_seconds()
        .map(|s| Duration::from_secs(u64::from(s)))
}

fn canonical_reason(code: u16) -> &'static str {
    http::StatusCode::from_u16(code)
        .ok()
        .and_then(|c| c.canonical_reason())
        .unwrap_or("unknown status")
}

/// The start of `bytes` as text for a log line: at most [`SNIPPET_BYTES`] bytes (cut on a
/// character boundary), with a note of the full length when cut.
pub(crate) fn snippet(bytes: &[u8]) -> String {
    let text = String::from_utf8_lossy(&bytes[..bytes.len().min(SNIPPET_BYTES)]);
    // A cut inside a multi-byte character shows up as a trailing replacement character.
    let text = text.trim_end_matches('\u{FFFD}');
    if bytes.len() > SNIPPET_BYTES {
        format!("{text}… ({} bytes)", bytes.len())
    } else {
        text.to_owned()
    }
}

impl Error {
    /// The API error, if the server answered with one.
    pub fn api(&self) -> Option<&ApiError> {
        match self {
            Error::Api(e) => Some(e),
            _ => None,
        }
    }

    /// The kind of API error, if the server answered with one.
    pub fn kind(&self) -> Option<ApiErrorKind> {
        self.api().map(|e| e.kind)
    }

    /// The Status body the server sent, if any.
    pub fn status(&self) -> Option<&Status> {
        self.api().and_then(|e| e.status.as_ref())
    }

    /// The HTTP status code, if the server answered.
    pub fn code(&self) -> Option<u16> {
        self.api().map(|e| e.code)
    }

    /// 404: the object does not exist (any more).
    pub fn is_not_found(&self) -> bool {
        self.kind() == Some(ApiErrorKind::NotFound)
    }

    /// 409 `AlreadyExists`.
    pub fn is_already_exists(&self) -> bool {
        self.kind() == Some(ApiErrorKind::AlreadyExists)
    }

    /// 409 `Conflict`: the object changed since it was read, or a precondition failed.
    pub fn is_conflict(&self) -> bool {
        self.kind() == Some(ApiErrorKind::Conflict)
    }

    /// 410, `Gone` or `Expired`: the resourceVersion or continue token is too old; relist.
    pub fn is_gone(&self) -> bool {
        matches!(
            self.kind(),
            Some(ApiErrorKind::Gone | ApiErrorKind::Expired)
        )
    }

    /// 410 `Expired` specifically.
    pub fn is_expired(&self) -> bool {
        self.kind() == Some(ApiErrorKind::Expired)
    }

    /// The fresh continue token a 410 for an expired continue token carries: using it
    /// continues the list, inconsistently, instead of starting over.
    pub fn fresh_continue_token(&self) -> Option<&str> {
        let token = self.status()?.metadata.continue_token.as_deref()?;
        Some(token).filter(|t| self.is_gone() && !t.is_empty())
    }

    /// 504 "Too large resource version": the server lags behind the resourceVersion asked for.
    pub fn is_too_large_resource_version(&self) -> bool {
        self.kind() == Some(ApiErrorKind::ResourceVersionTooLarge)
    }

    /// 429 Too Many Requests.
    pub fn is_too_many_requests(&self) -> bool {
        self.kind() == Some(ApiErrorKind::TooManyRequests)
    }

    /// 401 Unauthorized: credentials missing, wrong or expired.
    pub fn is_unauthorized(&self) -> bool {
        self.kind() == Some(ApiErrorKind::Unauthorized)
    }

    /// 403 Forbidden.
    pub fn is_forbidden(&self) -> bool {
        self.kind() == Some(ApiErrorKind::Forbidden)
    }

    /// 422 Invalid; see [`Status::causes`].
    pub fn is_invalid(&self) -> bool {
        self.kind() == Some(ApiErrorKind::Invalid)
    }

    /// 400 Bad Request.
    pub fn is_bad_request(&self) -> bool {
        self.kind() == Some(ApiErrorKind::BadRequest)
    }

    /// 415: the patch type is not supported here (fall back to a JSON merge patch).
    pub fn is_unsupported_media_type(&self) -> bool {
        self.kind() == Some(ApiErrorKind::UnsupportedMediaType)
    }

    /// A timeout on either side: the client's, or the server's 504 / `ServerTimeout`.
    pub fn is_timeout(&self) -> bool {
        matches!(self, Error::Timeout { .. })
            || matches!(
                self.kind(),
                Some(ApiErrorKind::Timeout | ApiErrorKind::ServerTimeout)
            )
    }

    /// How long the server asked us to wait before retrying, if it said.
    pub fn retry_after(&self) -> Option<Duration> {
        self.api().and_then(|e| e.retry_after)
    }

    /// Whether the same request may succeed if simply sent again later: throttling, server
    /// overload or timeouts, and broken connections. Conflicts and 410s are not retryable as
    /// they are — the caller must re-read or relist first.
    pub fn is_retryable(&self) -> bool {
        match self {
            Error::Timeout { .. } | Error::Connection { .. } | Error::TruncatedLine { .. } => true,
            Error::Api(e) => matches!(
                e.kind,
                ApiErrorKind::TooManyRequests
                    | ApiErrorKind::InternalError
                    | ApiErrorKind::ServerTimeout
                    | ApiErrorKind::ServiceUnavailable
                    | ApiErrorKind::Timeout
                    | ApiErrorKind::ResourceVersionTooLarge
            ),
            Error::Request { .. }
            | Error::Decode { .. }
            | Error::Protobuf { .. }
            | Error::ListBody(_)
            | Error::Encode { .. }
            | Error::Auth { .. }
            | Error::LineTooLong { .. } => false,
        }
    }

    /// Whether the failure says the server could not be reached or could not serve now, and
    /// nothing about the request: no answer (connection refused or broken, timeout), or an
    /// answer of 429 or 5xx ([`status_says_unavailable`]). Every request fails the
    /// same way until the server is back, so a controller parks the work until it answers
    /// ([`ServerAvailability`](super::ServerAvailability)) instead of backing off per object.
    pub fn is_unavailable(&self) -> bool {
        match self {
            Error::Timeout { .. } | Error::Connection { .. } | Error::TruncatedLine { .. } => true,
            Error::Api(e) => status_says_unavailable(e.code),
            Error::Request { .. }
            | Error::Decode { .. }
            | Error::Protobuf { .. }
            | Error::ListBody(_)
            | Error::Encode { .. }
            | Error::Auth { .. }
            | Error::LineTooLong { .. } => false,
        }
    }

    /// A decode error for `what`, keeping the start of `input` for logs.
    pub fn decode(what: &'static str, input: &[u8], source: serde_json::Error) -> Self {
        Error::Decode {
            what,
            snippet: snippet(input),
            source,
        }
    }
}

impl From<ApiError> for Error {
    fn from(e: ApiError) -> Self {
        Error::Api(Box::new(e))
    }
}

/// The Status of a watch `ERROR` event, as an error.
impl From<Status> for Error {
    fn from(status: Status) -> Self {
        ApiError::from_status(status).into()
    }
}

impl From<reqwest::Error> for Error {
    fn from(e: reqwest::Error) -> Self {
        if e.is_timeout() {
            Error::Timeout {
                source: Box::new(e),
            }
        } else if e.is_builder() || e.is_redirect() {
            Error::Request {
                source: Box::new(e),
            }
        } else {
            Error::Connection {
                source: Box::new(e),
            }
        }
    }
}

/// An I/O error on the connection to the API server.
impl From<std::io::Error> for Error {
    fn from(e: std::io::Error) -> Self {
        if e.kind() == std::io::ErrorKind::TimedOut {
            Error::Timeout {
                source: Box::new(e),
            }
        } else {
            Error::Connection {
                source: Box::new(e),
            }
        }
    }
}

/// A client-side deadline (`tokio::time::timeout`) that expired.
impl From<tokio::time::error::Elapsed> for Error {
    fn from(e: tokio::time::error::Elapsed) -> Self {
        Error::Timeout {
            source: Box::new(e),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_protobuf_status_is_read_as_its_json_form() {
        let body = kube_gc_fixtures::response_bytes("111");
        let error = ApiError::from_response(404, &HeaderMap::new(), &body);
        assert_eq!(error.kind, ApiErrorKind::NotFound);
        let status = error.status.expect("the Status");
        assert_eq!(status.code, Some(404));
        assert!(error.message.contains("not found"), "{}", error.message);
    }
    use http::HeaderValue;

    fn error(code: u16, headers: &HeaderMap, body: &str) -> Error {
        ApiError::from_response(code, headers, body.as_bytes()).into()
    }

    #[test]
    fn errors_can_cross_tasks_and_stay_small() {
        fn assert_send_sync<T: Send + Sync + 'static>() {}
        assert_send_sync::<Error>();
        // The rare, large API error is boxed so every `Result<_, Error>` stays small.
        assert!(
            std::mem::size_of::<Error>() <= 64,
            "{}",
            std::mem::size_of::<Error>()
        );
    }

    #[test]
    fn a_non_status_body_is_classified_by_code() {
        let err = error(502, &HeaderMap::new(), "<html>Bad Gateway</html>");
        assert_eq!(err.kind(), Some(ApiErrorKind::Other));
        assert_eq!(err.status(), None);
        assert_eq!(
            err.api().map(|e| e.message.as_str()),
            Some("<html>Bad Gateway</html>")
        );
        let err = error(503, &HeaderMap::new(), "");
        assert_eq!(err.kind(), Some(ApiErrorKind::ServiceUnavailable));
        assert_eq!(
            err.api().map(|e| e.message.as_str()),
            Some("Service Unavailable")
        );
        assert!(err.is_retryable());
    }

    #[test]
    fn a_known_reason_wins_over_the_code_and_an_unknown_one_does_not() {
        let err = error(
            500,
            &HeaderMap::new(),
            r#"{"kind":"Status","reason":"NotFound","code":500}"#,
        );
        assert!(err.is_not_found());
        let err = error(
            404,
            &HeaderMap::new(),
            r#"{"kind":"Status","reason":"Mystery","code":404}"#,
        );
        assert!(err.is_not_found());
    }

    #[test]
    fn retry_after_header_wins_over_details() {
        let body = r#"{"kind":"Status","reason":"TooManyRequests","code":429,"details":{"retryAfterSeconds":7}}"#;
        let mut headers = HeaderMap::new();
        assert_eq!(
            error(429, &headers, body).retry_after(),
            Some(Duration::from_secs(7))
        );
        headers.insert(RETRY_AFTER, HeaderValue::from_static("3"));
        let err = error(429, &headers, body);
        assert!(err.is_too_many_requests() && err.is_retryable());
        assert_eq!(err.retry_after(), Some(Duration::from_secs(3)));
        // A date is ignored rather than misread; details still apply.
        headers.insert(
            RETRY_AFTER,
            HeaderValue::from_static("Wed, 21 Oct 2026 07:28:00 GMT"),
        );
        assert_eq!(
            error(429, &headers, body).retry_after(),
            Some(Duration::from_secs(7))
        );
    }

    #[test]
    fn snippets_are_cut_on_character_boundaries() {
        let long = "é".repeat(300);
        let s = snippet(long.as_bytes());
        assert!(s.ends_with("… (600 bytes)"), "{s}");
        assert!(s.chars().all(|c| c != '\u{FFFD}'));
        assert_eq!(snippet(b"short"), "short");
    }

    #[test]
    fn a_transport_error_says_its_cause() {
        #[derive(Debug, thiserror::Error)]
        #[error("error sending request for url (https://127.0.0.1:1/api)")]
        struct Sending(#[source] std::io::Error);
        let refused = std::io::Error::new(
            std::io::ErrorKind::ConnectionRefused,
            "tcp connect error: Connection refused (os error 111)",
        );
        let error = Error::Connection {
            source: Box::new(Sending(refused)),
        };
        assert_eq!(
            error.to_string(),
            "connection to the API server failed: error sending request for url \
             (https://127.0.0.1:1/api): tcp connect error: Connection refused (os error 111)"
        );
        // Printed as a chain again (the CLI's last line), the cause is not repeated.
        assert_eq!(kube_gc_core::error_chain::chain(&error), error.to_string());
    }

    #[test]
    fn transport_errors_are_retryable_and_not_api_errors() {
        let io = std::io::Error::new(std::io::ErrorKind::ConnectionReset, "reset");
        let err = Error::from(io);
        assert!(matches!(err, Error::Connection { .. }));
        assert!(err.is_retryable() && !err.is_not_found() && err.code().is_none());
        let timed_out = Error::from(std::io::Error::from(std::io::ErrorKind::TimedOut));
        assert!(timed_out.is_timeout() && timed_out.is_retryable());
    }
}
