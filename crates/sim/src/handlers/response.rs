//! Building HTTP responses: bodies, JSON encoding, and the representation a client asked for.
//!
//! Contract: every response the server sends is built here, with `Content-Type:
//! application/json` (or, where [`encoding`](super::encoding) chose it, the protobuf media
//! type) and `Cache-Control: no-cache, private` like the real server. Objects are encoded in
//! one of two representations chosen from the `Accept` header ([`Representation`]): the full
//! object, or the metadata-only `PartialObjectMetadata(List)` of `meta.k8s.io/v1`. JSON lists
//! are written straight from the stored objects without copying them, and streamed a chunk at
//! a time by [`ListBody`](super::list_body::ListBody). A `Status` answer keeps its value beside
//! its JSON ([`StatusBody`]), so that an error is written in protobuf when the client asked so
//! first ([`status_as_accepted`]).

use std::convert::Infallible;
use std::sync::Arc;

use bytes::Bytes;
use http::header::{HeaderValue, CACHE_CONTROL, CONTENT_TYPE};
use http::{Response, StatusCode};
use http_body_util::combinators::BoxBody;
use http_body_util::{BodyExt, Full};
use serde::ser::{Serialize, SerializeMap, Serializer};
use serde_json::Value;

pub use super::encoding::Representation;
use super::encoding::{self, Media};
use super::protobuf;
use crate::resources::ResourceDef;
use crate::stamped::{MetadataOnly, Stamped};
use crate::store::ListPage;

/// The body type of every response.
pub type Body = BoxBody<Bytes, Infallible>;

/// A whole body from bytes.
pub fn full(bytes: impl Into<Bytes>) -> Body {
    Full::new(bytes.into()).boxed()
}

impl Representation {
    /// One stored object in this representation. Neither representation copies it.
    pub fn object(self, obj: &Value) -> Presented<'_> {
        match self {
            Representation::Full => Presented::Whole(obj),
            Representation::MetadataOnly => Presented::Metadata(MetadataOnly::stored(obj)),
        }
    }

    /// A stored object presented at a resourceVersion of its own (a deletion's final state),
    /// in this representation, without copying it either.
    pub fn stamped(self, stamped: &Stamped) -> Presented<'_> {
        match self {
            Representation::Full => Presented::Stamped(stamped),
            Representation::MetadataOnly => Presented::Metadata(MetadataOnly::stamped(stamped)),
        }
    }
}

/// What [`Representation::object`] and [`Representation::stamped`] encode.
#[derive(Debug)]
pub enum Presented<'a> {
    /// The whole object, as stored.
    Whole(&'a Value),
    /// The whole object, at its stamped resourceVersion.
    Stamped(&'a Stamped),
    /// Its `PartialObjectMetadata`.
    Metadata(MetadataOnly<'a>),
}

impl Serialize for Presented<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self {
            Presented::Whole(object) => object.serialize(serializer),
            Presented::Stamped(stamped) => stamped.serialize(serializer),
            Presented::Metadata(metadata) => metadata.serialize(serializer),
        }
    }
}

fn with_json_headers(response: Response<Body>) -> Response<Body> {
    with_content_type(response, "application/json")
}

fn with_content_type(mut response: Response<Body>, content_type: &'static str) -> Response<Body> {
    let headers = response.headers_mut();
    headers.insert(CONTENT_TYPE, HeaderValue::from_static(content_type));
    headers.insert(CACHE_CONTROL, HeaderValue::from_static("no-cache, private"));
    response
}

/// A JSON response from encoded bytes.
pub fn json_bytes(status: StatusCode, bytes: Vec<u8>) -> Response<Body> {
    let mut response = Response::new(full(bytes));
    *response.status_mut() = status;
    with_json_headers(response)
}

/// A JSON response.
pub fn json<T: Serialize + ?Sized>(status: StatusCode, value: &T) -> Response<Body> {
    json_bytes(status, serde_json::to_vec(value).unwrap_or_default())
}

/// The `Status` an answer carries, kept beside its JSON body (in the response's extensions,
/// never sent) so that [`status_as_accepted`] can write it in protobuf instead.
#[derive(Clone, Debug)]
pub struct StatusBody(pub Value);

/// A response carrying a `Status` body built by [`crate::status`].
pub fn status((code, body): (StatusCode, Value)) -> Response<Body> {
    let mut response = json(code, &body);
    response.extensions_mut().insert(StatusBody(body));
    response
}

/// `response` with its error `Status` (a 4xx or 5xx built by [`status`]) written in protobuf
/// when the request's `Accept` asks for that first (exchanges 109, 111); any other response,
/// or a JSON `Accept`, as it is.
pub fn status_as_accepted(response: Response<Body>, accept: Option<&str>) -> Response<Body> {
    let is_error = response.status().is_client_error() || response.status().is_server_error();
    if !is_error || encoding::status_media(accept) != Media::Protobuf {
        return response;
    }
    let Some(StatusBody(body)) = response.extensions().get::<StatusBody>() else {
        return response;
    };
    // Every `Status` the server builds fits the table; if one did not, JSON still says it.
    let Ok(bytes) = protobuf::status(body) else {
        return response;
    };
    let (mut parts, _) = response.into_parts();
    parts.headers.insert(
        CONTENT_TYPE,
        HeaderValue::from_static(encoding::PROTOBUF_CONTENT_TYPE),
    );
    Response::from_parts(parts, full(bytes))
}

/// A protobuf response from a whole body.
pub fn protobuf_bytes(status: StatusCode, bytes: Vec<u8>) -> Response<Body> {
    let mut response = Response::new(full(bytes));
    *response.status_mut() = status;
    with_content_type(response, encoding::PROTOBUF_CONTENT_TYPE)
}

/// `/openapi/v2` as an OpenAPI document with no definitions. kubectl (v1.28) reads it, in
/// protobuf only, before `create -f` and `apply -f` to validate the file on the client; the
/// real server sends its whole schema (1.6 MB on v1.28.7) with this `Content-Type`. An empty
/// protobuf message is a valid, empty document: kubectl finds no schema for the kind, skips
/// the client-side validation, and sends the object; the server's own checks
/// (`sim::validation`) still apply. kubectl's probe for server-side field validation finds no
/// `patch` in `/openapi/v3` (`sim::openapi`) and falls back to this document.
pub fn empty_openapi_v2() -> Response<Body> {
    let response = Response::new(full(Vec::new()));
    with_content_type(
        response,
        "application/com.github.proto-openapi.spec.v2.v1.0+protobuf",
    )
}

/// A streaming protobuf watch: length-prefixed frames, sent chunked.
pub fn protobuf_watch(body: Body) -> Response<Body> {
    with_content_type(Response::new(body), encoding::PROTOBUF_WATCH_CONTENT_TYPE)
}

/// A plain-text response, as Go's `http.Error` writes it (the real server's throttling filters
/// answer 429 this way, not with a `Status`).
pub fn plain_text(status: StatusCode, text: &'static str) -> Response<Body> {
    let mut response = Response::new(full(text));
    *response.status_mut() = status;
    let headers = response.headers_mut();
    headers.insert(
        CONTENT_TYPE,
        HeaderValue::from_static("text/plain; charset=utf-8"),
    );
    headers.insert(
        "x-content-type-options",
        HeaderValue::from_static("nosniff"),
    );
    response
}

/// A streaming JSON response (a watch): no length, so HTTP/1.1 sends it chunked.
pub fn streaming(body: Body) -> Response<Body> {
    with_json_headers(Response::new(body))
}

/// The list document for one page, written without copying the items.
pub struct ListDocument<'a> {
    /// The listed resource.
    pub def: &'a ResourceDef,
    /// The page.
    pub page: &'a ListPage,
    /// How items are represented.
    pub representation: Representation,
}

struct ListMeta<'a>(&'a ListPage);

impl Serialize for ListMeta<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let page = self.0;
        let mut map = serializer.serialize_map(None)?;
        map.serialize_entry("resourceVersion", &page.resource_version.to_string())?;
        if let Some(token) = &page.continue_token {
            map.serialize_entry("continue", token)?;
        }
        if let Some(count) = page.remaining_item_count {
            map.serialize_entry("remainingItemCount", &count)?;
        }
        map.end()
    }
}

/// One list item: built-in lists omit each item's `kind`/`apiVersion` (the real server's typed
/// lists do), custom resource lists keep them, metadata-only lists carry their own.
pub(crate) struct ListItem<'a> {
    /// The stored object.
    pub(crate) obj: &'a Arc<Value>,
    /// Full or metadata-only.
    pub(crate) representation: Representation,
    /// Keep the item's own `kind` and `apiVersion` (custom resources).
    pub(crate) keep_type_meta: bool,
}

impl Serialize for ListItem<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        if self.representation == Representation::MetadataOnly {
            return MetadataOnly::stored(self.obj).serialize(serializer);
        }
        let Some(fields) = self.obj.as_object() else {
            return self.obj.serialize(serializer);
        };
        let mut map = serializer.serialize_map(None)?;
        for (key, value) in fields {
            if !self.keep_type_meta && (key == "kind" || key == "apiVersion") {
                continue;
            }
            map.serialize_entry(key, value)?;
        }
        map.end()
    }
}

struct Items<'a>(&'a ListDocument<'a>);

impl Serialize for Items<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let doc = self.0;
        serializer.collect_seq(doc.page.items.iter().map(|obj| ListItem {
            obj,
            representation: doc.representation,
            keep_type_meta: doc.def.is_custom,
        }))
    }
}

impl Serialize for ListDocument<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let (kind, api_version) = match self.representation {
            Representation::Full => (self.def.list_kind(), self.def.api_version()),
            Representation::MetadataOnly => (
                "PartialObjectMetadataList".to_string(),
                "meta.k8s.io/v1".to_string(),
            ),
        };
        let mut map = serializer.serialize_map(Some(4))?;
        map.serialize_entry("kind", &kind)?;
        map.serialize_entry("apiVersion", &api_version)?;
        map.serialize_entry("metadata", &ListMeta(self.page))?;
        map.serialize_entry("items", &Items(self))?;
        map.end()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn accept_headers_choose_the_representation() {
        let meta = Some("application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1");
        assert_eq!(
            Representation::from_accept(meta),
            Representation::MetadataOnly
        );
        let kubectl = Some("application/json;as=Table;v=v1;g=meta.k8s.io,application/json;as=Table;v=v1beta1;g=meta.k8s.io,application/json");
        assert_eq!(Representation::from_accept(kubectl), Representation::Full);
        let client_go = Some("application/vnd.kubernetes.protobuf;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1,application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1,application/json");
        assert_eq!(
            Representation::from_accept(client_go),
            Representation::MetadataOnly
        );
        assert_eq!(Representation::from_accept(None), Representation::Full);
    }

    #[test]
    fn built_in_list_items_drop_type_meta() {
        let def = ResourceDef::new("batch", "v1", "jobs", "Job");
        let page = ListPage {
            items: vec![Arc::new(
                json!({"kind": "Job", "apiVersion": "batch/v1", "metadata": {"name": "a"}, "spec": {}}),
            )],
            resource_version: 203,
            continue_token: Some("t".into()),
            remaining_item_count: Some(2),
        };
        let doc = ListDocument {
            def: &def,
            page: &page,
            representation: Representation::Full,
        };
        assert_eq!(
            serde_json::to_value(&doc).unwrap_or_default(),
            json!({"kind": "JobList", "apiVersion": "batch/v1",
                "metadata": {"resourceVersion": "203", "continue": "t", "remainingItemCount": 2},
                "items": [{"metadata": {"name": "a"}, "spec": {}}]})
        );
        let meta = ListDocument {
            def: &def,
            page: &page,
            representation: Representation::MetadataOnly,
        };
        assert_eq!(
            serde_json::to_value(&meta).unwrap_or_default()["items"][0],
            json!({"kind": "PartialObjectMetadata", "apiVersion": "meta.k8s.io/v1", "metadata": {"name": "a"}})
        );
    }
}
