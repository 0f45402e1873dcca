//! [`ApiRequest`]: one request to the API server as plain data, before it is throttled,
//! authenticated and sent.
//!
//! Contract: building a request does no I/O and cannot fail except when serializing a body, so
//! the exact method, URL, `Accept` and `Content-Type` of every verb can be checked without a
//! server. Authentication, impersonation and `User-Agent` headers are not part of it: the
//! [`Client`](super::Client) adds them when sending, because they belong to the connection's
//! identity, not to the request.

use http::Method;
use serde::Serialize;
use url::Url;

use super::error::Error;
use super::params::Query;

/// `Accept` for a full object, list or watch.
pub const ACCEPT_JSON: &str = "application/json";

/// `Content-Type` of a JSON object body (create, update, delete options).
pub const CONTENT_TYPE_JSON: &str = "application/json";

/// A request body with its media type.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Body {
    /// `Content-Type`, e.g. `application/merge-patch+json`.
    pub content_type: &'static str,
    /// The encoded document.
    pub bytes: Vec<u8>,
}

/// Whether the response is read whole or streamed for as long as the server keeps it open.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ResponseKind {
    /// Read the whole body, within the client's per-request timeout.
    Whole,
    /// A watch: no client-side timeout (the server's `timeoutSeconds` ends it), and the body is
    /// consumed as a stream.
    Watch,
}

/// One request, fully described.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ApiRequest {
    /// The HTTP method.
    pub method: Method,
    /// The absolute URL, query included.
    pub url: Url,
    /// The `Accept` header.
    pub accept: &'static str,
    /// The body, for writes.
    pub body: Option<Body>,
    /// How the response is consumed.
    pub response: ResponseKind,
    /// Whether its outcome tells the client's [`ServerAvailability`](super::ServerAvailability)
    /// whether the server answers (every request but a health probe, whose 500 means "not
    /// ready", not "answering").
    pub records_availability: bool,
}

impl ApiRequest {
    /// A bodiless request accepting JSON.
    pub fn new(method: Method, url: Url) -> Self {
        ApiRequest {
            method,
            url,
            accept: ACCEPT_JSON,
            body: None,
            response: ResponseKind::Whole,
            records_availability: true,
        }
    }

    /// A GET of `url`.
    pub fn get(url: Url) -> Self {
        Self::new(Method::GET, url)
    }

    /// Appends query parameters (percent-encoded).
    pub fn with_query(mut self, query: &Query) -> Self {
        if !query.is_empty() {
            self.url
                .query_pairs_mut()
                .extend_pairs(query.iter().map(|(k, v)| (*k, v.as_str())));
        }
        self
    }

    /// Replaces the `Accept` header (e.g. with a metadata-only media type).
    pub fn with_accept(mut self, accept: &'static str) -> Self {
        self.accept = accept;
        self
    }

    /// Sets a JSON body of the given media type; `what` names it in the error if it cannot be
    /// encoded.
    pub fn with_json<B: Serialize + ?Sized>(
        mut self,
        content_type: &'static str,
        body: &B,
        what: &'static str,
    ) -> Result<Self, Error> {
        let bytes = serde_json::to_vec(body).map_err(|source| Error::Encode { what, source })?;
        self.body = Some(Body {
            content_type,
            bytes,
        });
        Ok(self)
    }

    /// Marks the request as a health probe, whose outcome the client does not record as the
    /// server's availability: the caller reads the answer itself.
    pub fn health_probe(mut self) -> Self {
        self.records_availability = false;
        self
    }

    /// Marks the request as a watch.
    pub fn streaming(mut self) -> Self {
        self.response = ResponseKind::Watch;
        self
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn query_values_are_percent_encoded() {
        let url = Url::parse("http://127.0.0.1:1/api/v1/pods").unwrap();
        let request = ApiRequest::get(url).with_query(&vec![
            ("labelSelector", "app in (a,b),!x".to_owned()),
            ("limit", "5".to_owned()),
        ]);
        assert_eq!(
            request.url.query(),
            Some("labelSelector=app+in+%28a%2Cb%29%2C%21x&limit=5")
        );
        let back: Vec<(String, String)> = request.url.query_pairs().into_owned().collect();
        assert_eq!(back[0].1, "app in (a,b),!x");
    }

    #[test]
    fn a_json_body_keeps_its_media_type() {
        let url = Url::parse("http://127.0.0.1:1/api/v1/pods/p").unwrap();
        let request = ApiRequest::new(Method::PATCH, url)
            .with_json(
                "application/merge-patch+json",
                &serde_json::json!({"a": 1}),
                "patch",
            )
            .unwrap();
        let body = request.body.unwrap();
        assert_eq!(body.content_type, "application/merge-patch+json");
        assert_eq!(body.bytes, br#"{"a":1}"#);
        assert_eq!(request.accept, ACCEPT_JSON);
        assert_eq!(request.response, ResponseKind::Whole);
    }
}
