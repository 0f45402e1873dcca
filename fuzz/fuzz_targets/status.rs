//! Status / error decoding: a non-success HTTP response body and a watch `ERROR` object.
//!
//! Input layout: two bytes of HTTP status code, one byte saying whether to send a
//! `Retry-After` header made from the next 8 bytes, then the body. Invariants: no panic; the
//! error keeps the HTTP code; a Status decoded from the body becomes an error through
//! `from_status`; a reason string survives `parse` / `as_str`.
#![no_main]

use http::{HeaderMap, HeaderValue};
use kube_gc::api::{Status, StatusReason};
use kube_gc::client::ApiError;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if data.len() < 3 {
        return;
    }
    let code = u16::from_be_bytes([data[0], data[1]]);
    let mut rest = &data[3..];
    let mut headers = HeaderMap::new();
    if data[2] & 1 == 1 && rest.len() >= 8 {
        if let Ok(value) = HeaderValue::from_bytes(&rest[..8]) {
            headers.insert(http::header::RETRY_AFTER, value);
        }
        rest = &rest[8..];
    }
    let error = ApiError::from_response(code, &headers, rest);
    assert_eq!(error.code, code);
    let _ = error.to_string();

    if let Ok(status) = serde_json::from_slice::<Status>(rest) {
        let _ = status.retry_after_seconds();
        let _ = ApiError::from_status(status).to_string();
    }
    if let Ok(text) = std::str::from_utf8(rest) {
        let reason = StatusReason::parse(text);
        assert_eq!(reason.as_str(), text);
    }
});
