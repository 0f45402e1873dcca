//! [`Status`]: the body the server returns for every failed request, for some successful
//! deletions, and as the object of a watch `ERROR` event.
//!
//! Contract:
//! - Every field is optional; a body with none of them still decodes.
//! - `reason` decodes into [`StatusReason`]; a reason this crate does not know is kept verbatim
//!   in [`StatusReason::Other`] rather than failing the decode, so newer servers stay readable.
//! - `metadata` is a [`ListMeta`]: a 410 `Expired` for a paged list carries a fresh `continue`
//!   token there (exchange 53).

use std::fmt;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

use super::defaults::null_as_default;
use super::list::ListMeta;
use super::meta::TypeMeta;

/// `metav1.Status`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Status {
    /// `v1` + `Status`.
    #[serde(flatten)]
    pub types: TypeMeta,
    /// Usually empty; a 410 for an expired continue token carries a fresh one here.
    #[serde(default)]
    pub metadata: ListMeta,
    /// `Success` or `Failure`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<String>,
    /// Human-readable description.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
    /// Machine-readable reason; [`StatusReason::Unknown`] when the server gave none.
    #[serde(default, skip_serializing_if = "StatusReason::is_unknown")]
    pub reason: StatusReason,
    /// Extra data about the reason: the object concerned, causes, retry delay.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub details: Option<StatusDetails>,
    /// The HTTP status code of the response (also set in watch `ERROR` events).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub code: Option<u16>,
}

/// `metav1.StatusDetails`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct StatusDetails {
    /// The name of the object concerned.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// Its API group (absent for the core group).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub group: Option<String>,
    /// Its kind — often the plural resource name instead (`jobs`), as the server fills it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kind: Option<String>,
    /// Its UID (set on a successful deletion).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub uid: Option<String>,
    /// The individual problems, e.g. each invalid field of a 422.
    #[serde(
        default,
        deserialize_with = "null_as_default",
        skip_serializing_if = "Vec::is_empty"
    )]
    pub causes: Vec<StatusCause>,
    /// How long the client should wait before retrying.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub retry_after_seconds: Option<u32>,
}

/// `metav1.StatusCause`: one problem behind a failure.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct StatusCause {
    /// The cause type, e.g. `FieldValueInvalid` or `ResourceVersionTooLarge` (Go calls it `Type`,
    /// the wire calls it `reason`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// Human-readable description.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
    /// The field concerned, e.g. `metadata.ownerReferences.uid`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub field: Option<String>,
}

/// The cause type the server gives a "resource version too large" timeout (504).
pub const CAUSE_RESOURCE_VERSION_TOO_LARGE: &str = "ResourceVersionTooLarge";

impl Status {
    /// `status: Success`.
    pub fn is_success(&self) -> bool {
        self.status.as_deref() == Some("Success")
    }

    /// The causes listed in `details`, or none.
    pub fn causes(&self) -> &[StatusCause] {
        self.details.as_ref().map_or(&[], |d| d.causes.as_slice())
    }

    /// Whether any cause has the given type (`reason` on the wire).
    pub fn has_cause(&self, cause: &str) -> bool {
        self.causes()
            .iter()
            .any(|c| c.reason.as_deref() == Some(cause))
    }

    /// `details.retryAfterSeconds`.
    pub fn retry_after_seconds(&self) -> Option<u32> {
        self.details.as_ref().and_then(|d| d.retry_after_seconds)
    }
}

/// `metav1.StatusReason`: why a request failed.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub enum StatusReason {
    /// No reason given (the empty string on the wire).
    #[default]
    Unknown,
    /// 401: the request carried no valid credentials.
    Unauthorized,
    /// 403: authenticated but not allowed.
    Forbidden,
    /// 404: the object or resource does not exist.
    NotFound,
    /// 409: a create found an object with the same name.
    AlreadyExists,
    /// 409: an update or delete raced with another change (stale resourceVersion, UID
    /// precondition).
    Conflict,
    /// 410: the resource is gone.
    Gone,
    /// 422: the object failed validation; `details.causes` lists the fields.
    Invalid,
    /// 500: the server could not finish in time and the request may be retried.
    ServerTimeout,
    /// 500: the storage layer failed to read the object.
    StoreReadError,
    /// 504: the request timed out (also "Too large resource version").
    Timeout,
    /// 429: throttled; see `details.retryAfterSeconds` and the `Retry-After` header.
    TooManyRequests,
    /// 400: the request itself is malformed.
    BadRequest,
    /// 405: the verb is not supported on this resource.
    MethodNotAllowed,
    /// 406: no acceptable response content type.
    NotAcceptable,
    /// 413: the request body is too large.
    RequestEntityTooLarge,
    /// 415: the request content type is not supported (strategic merge on a custom resource).
    UnsupportedMediaType,
    /// 500: an unexpected server error.
    InternalError,
    /// 410: the requested resourceVersion or continue token has been compacted away.
    Expired,
    /// 503: the server is unavailable.
    ServiceUnavailable,
    /// A reason this crate does not know, kept as the server wrote it.
    Other(String),
}

impl StatusReason {
    /// The wire form.
    pub fn as_str(&self) -> &str {
        match self {
            StatusReason::Unknown => "",
            StatusReason::Unauthorized => "Unauthorized",
            StatusReason::Forbidden => "Forbidden",
            StatusReason::NotFound => "NotFound",
            StatusReason::AlreadyExists => "AlreadyExists",
            StatusReason::Conflict => "Conflict",
            StatusReason::Gone => "Gone",
            StatusReason::Invalid => "Invalid",
            StatusReason::ServerTimeout => "ServerTimeout",
            StatusReason::StoreReadError => "StoreReadError",
            StatusReason::Timeout => "Timeout",
            StatusReason::TooManyRequests => "TooManyRequests",
            StatusReason::BadRequest => "BadRequest",
            StatusReason::MethodNotAllowed => "MethodNotAllowed",
            StatusReason::NotAcceptable => "NotAcceptable",
            StatusReason::RequestEntityTooLarge => "RequestEntityTooLarge",
            StatusReason::UnsupportedMediaType => "UnsupportedMediaType",
            StatusReason::InternalError => "InternalError",
            StatusReason::Expired => "Expired",
            StatusReason::ServiceUnavailable => "ServiceUnavailable",
            StatusReason::Other(s) => s,
        }
    }

    /// Parses the wire form; never fails (unknown text becomes [`StatusReason::Other`]).
    pub fn parse(s: &str) -> Self {
        match s {
            "" => StatusReason::Unknown,
            "Unauthorized" => StatusReason::Unauthorized,
            "Forbidden" => StatusReason::Forbidden,
            "NotFound" => StatusReason::NotFound,
            "AlreadyExists" => StatusReason::AlreadyExists,
            "Conflict" => StatusReason::Conflict,
            "Gone" => StatusReason::Gone,
            "Invalid" => StatusReason::Invalid,
            "ServerTimeout" => StatusReason::ServerTimeout,
            "StoreReadError" => StatusReason::StoreReadError,
            "Timeout" => StatusReason::Timeout,
            "TooManyRequests" => StatusReason::TooManyRequests,
            "BadRequest" => StatusReason::BadRequest,
            "MethodNotAllowed" => StatusReason::MethodNotAllowed,
            "NotAcceptable" => StatusReason::NotAcceptable,
            "RequestEntityTooLarge" => StatusReason::RequestEntityTooLarge,
            "UnsupportedMediaType" => StatusReason::UnsupportedMediaType,
            "InternalError" => StatusReason::InternalError,
            "Expired" => StatusReason::Expired,
            "ServiceUnavailable" => StatusReason::ServiceUnavailable,
            other => StatusReason::Other(other.to_owned()),
        }
    }

    /// No reason was given.
    pub fn is_unknown(&self) -> bool {
        *self == StatusReason::Unknown
    }
}

impl fmt::Display for StatusReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl Serialize for StatusReason {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.as_str())
    }
}

impl<'de> Deserialize<'de> for StatusReason {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        // `null` is treated like a missing reason, as Go does.
        let text: Option<String> = Deserialize::deserialize(deserializer)?;
        Ok(text.map_or(StatusReason::Unknown, |t| StatusReason::parse(&t)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const ALL_KNOWN: [StatusReason; 20] = [
        StatusReason::Unknown,
        StatusReason::Unauthorized,
        StatusReason::Forbidden,
        StatusReason::NotFound,
        StatusReason::AlreadyExists,
        StatusReason::Conflict,
        StatusReason::Gone,
        StatusReason::Invalid,
        StatusReason::ServerTimeout,
        StatusReason::StoreReadError,
        StatusReason::Timeout,
        StatusReason::TooManyRequests,
        StatusReason::BadRequest,
        StatusReason::MethodNotAllowed,
        StatusReason::NotAcceptable,
        StatusReason::RequestEntityTooLarge,
        StatusReason::UnsupportedMediaType,
        StatusReason::InternalError,
        StatusReason::Expired,
        StatusReason::ServiceUnavailable,
    ];

    #[test]
    fn every_known_reason_round_trips_through_its_wire_form() {
        for reason in ALL_KNOWN {
            assert_eq!(StatusReason::parse(reason.as_str()), reason);
        }
    }

    #[test]
    fn an_unknown_reason_is_kept_verbatim() {
        let status: Status = serde_json::from_str(r#"{"reason":"BrandNew","code":418}"#).unwrap();
        assert_eq!(status.reason, StatusReason::Other("BrandNew".into()));
        assert_eq!(serde_json::to_value(&status).unwrap()["reason"], "BrandNew");
    }

    #[test]
    fn missing_or_null_reason_is_unknown_and_not_serialized() {
        for body in ["{}", r#"{"reason":null}"#, r#"{"reason":""}"#] {
            let status: Status = serde_json::from_str(body).unwrap();
            assert!(status.reason.is_unknown(), "{body}");
            assert!(serde_json::to_value(&status)
                .unwrap()
                .get("reason")
                .is_none());
        }
    }

    #[test]
    fn too_large_resource_version_is_recognised_by_its_cause() {
        let status: Status = serde_json::from_str(
            r#"{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure",
                "message":"Too large resource version: 10, current: 5","reason":"Timeout",
                "details":{"causes":[{"reason":"ResourceVersionTooLarge","message":"Too large resource version"}],
                "retryAfterSeconds":1},"code":504}"#,
        )
        .unwrap();
        assert_eq!(status.reason, StatusReason::Timeout);
        assert!(status.has_cause(CAUSE_RESOURCE_VERSION_TOO_LARGE));
        assert_eq!(status.retry_after_seconds(), Some(1));
        assert!(!status.is_success());
    }
}
