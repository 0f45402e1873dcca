//! Maps the error responses captured from a real kube-apiserver v1.28.7
//! (fixtures/real-apiserver/exchanges) to `kube_gc::client::Error` and checks every predicate a
//! controller relies on.

use std::time::Duration;

use http::header::{HeaderMap, HeaderName, HeaderValue};
use kube_gc::api::{Status, WatchEvent};
use kube_gc::client::{ApiError, ApiErrorKind, Error};
use serde_json::Value;

macro_rules! exchange {
    ($name:literal) => {
        serde_json::from_str::<Value>(include_str!(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/fixtures/real-apiserver/exchanges/",
            $name,
            ".json"
        )))
        .expect("fixture is JSON")
    };
}

/// The error the client builds from a captured response: code, headers and body bytes.
fn error_from(exchange: &Value) -> Error {
    let response = &exchange["response"];
    let code = response["status"]
        .as_u64()
        .and_then(|c| u16::try_from(c).ok())
        .expect("code");
    let mut headers = HeaderMap::new();
    for (name, value) in response["headers"].as_object().expect("headers") {
        let name = HeaderName::from_bytes(name.as_bytes()).expect("header name");
        let value = HeaderValue::from_str(value.as_str().expect("text")).expect("header value");
        headers.insert(name, value);
    }
    // A plain-text body (the not-found handler's) is captured as a string: its bytes as sent.
    let body = match &response["body"] {
        Value::String(text) => text.as_bytes().to_vec(),
        json => serde_json::to_vec(json).expect("body"),
    };
    ApiError::from_response(code, &headers, &body).into()
}

/// A named predicate of `Error`.
type Predicate = (&'static str, fn(&Error) -> bool);

/// Every predicate, so each case can check it answers true to exactly the right ones.
fn predicates(err: &Error) -> Vec<&'static str> {
    let all: [Predicate; 12] = [
        ("not_found", Error::is_not_found),
        ("already_exists", Error::is_already_exists),
        ("conflict", Error::is_conflict),
        ("gone", Error::is_gone),
        ("expired", Error::is_expired),
        ("too_large_rv", Error::is_too_large_resource_version),
        ("too_many_requests", Error::is_too_many_requests),
        ("unauthorized", Error::is_unauthorized),
        ("forbidden", Error::is_forbidden),
        ("invalid", Error::is_invalid),
        ("bad_request", Error::is_bad_request),
        ("unsupported_media_type", Error::is_unsupported_media_type),
    ];
    all.iter()
        .filter(|(_, p)| p(err))
        .map(|(name, _)| *name)
        .collect()
}

#[test]
fn every_captured_error_maps_to_its_kind_and_only_its_predicates() {
    let cases = [
        (
            exchange!("10-job-create-already-exists"),
            ApiErrorKind::AlreadyExists,
            vec!["already_exists"],
        ),
        (
            exchange!("13-job-get-notfound"),
            ApiErrorKind::NotFound,
            vec!["not_found"],
        ),
        (
            exchange!("16-job-list-bad-continue"),
            ApiErrorKind::BadRequest,
            vec!["bad_request"],
        ),
        (
            exchange!("24-job-delete-uid-conflict"),
            ApiErrorKind::Conflict,
            vec!["conflict"],
        ),
        (
            exchange!("31-job-delete-notfound"),
            ApiErrorKind::NotFound,
            vec!["not_found"],
        ),
        (
            exchange!("35-cm-dependent-bad-ref"),
            ApiErrorKind::Invalid,
            vec!["invalid"],
        ),
        (
            exchange!("36-cm-update-stale-rv"),
            ApiErrorKind::Conflict,
            vec!["conflict"],
        ),
        (
            exchange!("37-cm-jsonpatch-test-fails"),
            ApiErrorKind::Invalid,
            vec!["invalid"],
        ),
        (
            exchange!("41-unauthorized"),
            ApiErrorKind::Unauthorized,
            vec!["unauthorized"],
        ),
        (
            exchange!("44-lease-renew-stale"),
            ApiErrorKind::Conflict,
            vec!["conflict"],
        ),
        (
            exchange!("49-vcjob-strategic-patch"),
            ApiErrorKind::UnsupportedMediaType,
            vec!["unsupported_media_type"],
        ),
        (
            exchange!("64-discovery-group-not-served"),
            ApiErrorKind::NotFound,
            vec!["not_found"],
        ),
        (
            exchange!("65-discovery-unknown-version-of-served-group"),
            ApiErrorKind::NotFound,
            vec!["not_found"],
        ),
        (
            exchange!("66-list-of-group-not-served"),
            ApiErrorKind::NotFound,
            vec!["not_found"],
        ),
        (
            exchange!("53-job-list-continue-expired"),
            ApiErrorKind::Expired,
            vec!["gone", "expired"],
        ),
        (
            exchange!("54-job-list-rv-too-old"),
            ApiErrorKind::Expired,
            vec!["gone", "expired"],
        ),
    ];
    for (ex, kind, expected) in cases {
        let err = error_from(&ex);
        let note = ex["note"].as_str().unwrap_or_default();
        assert_eq!(err.kind(), Some(kind), "{note}");
        assert_eq!(predicates(&err), expected, "{note}");
        assert_eq!(
            err.code(),
            ex["response"]["status"].as_u64().map(|c| c as u16),
            "{note}"
        );
        // None of these goes away by sending the same request again.
        assert!(!err.is_retryable(), "{note}");
        assert_eq!(err.retry_after(), None, "{note}");
        // The message is the server's (a Status's message, or the plain text), and Display
        // shows it.
        let body = &ex["response"]["body"];
        let message = body["message"].as_str().or(body.as_str()).expect("message");
        assert!(err.to_string().contains(message.trim_end()), "{err}");
    }
}

#[test]
fn details_survive_in_the_error() {
    let err = error_from(&exchange!("13-job-get-notfound"));
    let details = err
        .status()
        .and_then(|s| s.details.as_ref())
        .expect("details");
    assert_eq!(details.name.as_deref(), Some("nope"));
    assert_eq!(details.kind.as_deref(), Some("jobs"));

    let invalid = error_from(&exchange!("35-cm-dependent-bad-ref"));
    let causes = invalid.status().map(Status::causes).unwrap_or_default();
    assert_eq!(causes.len(), 1);
    assert_eq!(
        causes[0].field.as_deref(),
        Some("metadata.ownerReferences.uid")
    );
}

#[test]
fn expired_continue_carries_a_fresh_token_and_expired_rv_does_not() {
    let ex = exchange!("53-job-list-continue-expired");
    let fresh = ex["response"]["body"]["metadata"]["continue"].as_str();
    assert!(fresh.is_some());
    assert_eq!(error_from(&ex).fresh_continue_token(), fresh);
    assert_eq!(
        error_from(&exchange!("54-job-list-rv-too-old")).fresh_continue_token(),
        None
    );
}

#[test]
fn watch_error_event_becomes_a_gone_error() {
    let ex = exchange!("55-job-watch-too-old-after-restart");
    // The watch itself answered 200; the 410 is inside the event.
    assert_eq!(ex["response"]["status"], 200);
    let event: WatchEvent<Value> =
        serde_json::from_value(ex["response"]["events"][0].clone()).expect("decodes");
    let WatchEvent::Error(status) = event else {
        panic!("expected an ERROR event")
    };
    let err = Error::from(*status);
    assert!(err.is_gone() && err.is_expired());
    assert_eq!(err.code(), Some(410));
    assert!(err
        .to_string()
        .contains("too old resource version: 300 (557)"));
}

fn synthetic(code: u16, headers: &[(&str, &str)], body: &str) -> Error {
    let mut map = HeaderMap::new();
    for (name, value) in headers {
        map.insert(
            HeaderName::from_bytes(name.as_bytes()).expect("name"),
            HeaderValue::from_str(value).expect("value"),
        );
    }
    ApiError::from_response(code, &map, body.as_bytes()).into()
}

#[test]
fn too_many_requests_with_retry_after() {
    // No capture throttled; this is the apiserver's max-in-flight rejection shape.
    let body = r#"{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"Too many requests, please try again later.","reason":"TooManyRequests","details":{"retryAfterSeconds":1},"code":429}"#;
    let err = synthetic(429, &[("retry-after", "4")], body);
    assert_eq!(predicates(&err), ["too_many_requests"]);
    assert!(err.is_retryable());
    assert_eq!(err.retry_after(), Some(Duration::from_secs(4)));
    let err = synthetic(429, &[], body);
    assert_eq!(err.retry_after(), Some(Duration::from_secs(1)));
}

#[test]
fn too_large_resource_version_is_distinguished_from_other_timeouts() {
    let too_large = r#"{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"Timeout: Too large resource version: 159128021, current: 159127032","reason":"Timeout","details":{"causes":[{"reason":"ResourceVersionTooLarge","message":"Too large resource version"}],"retryAfterSeconds":1},"code":504}"#;
    let err = synthetic(504, &[], too_large);
    assert_eq!(predicates(&err), ["too_large_rv"]);
    assert!(err.is_retryable());
    assert_eq!(err.retry_after(), Some(Duration::from_secs(1)));

    let plain = r#"{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"the request timed out","reason":"Timeout","details":{"retryAfterSeconds":2},"code":504}"#;
    let err = synthetic(504, &[], plain);
    assert_eq!(err.kind(), Some(ApiErrorKind::Timeout));
    assert!(err.is_timeout() && !err.is_too_large_resource_version());
}

#[test]
fn server_errors_are_retryable() {
    for (code, reason, kind) in [
        (500, "InternalError", ApiErrorKind::InternalError),
        (500, "ServerTimeout", ApiErrorKind::ServerTimeout),
        (503, "ServiceUnavailable", ApiErrorKind::ServiceUnavailable),
        (504, "Timeout", ApiErrorKind::Timeout),
    ] {
        let body =
            format!(r#"{{"kind":"Status","status":"Failure","reason":"{reason}","code":{code}}}"#);
        let err = synthetic(code, &[], &body);
        assert_eq!(err.kind(), Some(kind));
        assert!(err.is_retryable(), "{reason}");
    }
    let forbidden = synthetic(
        403,
        &[],
        r#"{"kind":"Status","reason":"Forbidden","code":403}"#,
    );
    assert_eq!(predicates(&forbidden), ["forbidden"]);
    assert!(!forbidden.is_retryable());
}
