//! `/openapi/v2` and `/openapi/v3` over HTTP, with the caching headers kubectl's HTTP cache
//! relies on (exchanges 271–274, 287).
//!
//! Contract:
//! - `/openapi/v3`: the index of [`crate::openapi`]'s documents, `Content-Type: text/plain;
//!   charset=utf-8` (sic: the real server's), `Cache-Control: no-cache, private`,
//!   `Last-Modified` the time of the request (271, 274).
//! - `/openapi/v3/<group version>`: its document, `application/json`, `ETag` its quoted hash;
//!   with `?hash=` equal to it, `Cache-Control: public, immutable`, `Expires` a year on and
//!   `Vary: Accept` (272, 273); with another hash, a 301 to the current URL, so a client
//!   holding an old one is sent to the new document; `If-None-Match` of its ETag, a 304
//!   without a body. A group version not served: `404 page not found`.
//! - `/openapi/v2`: an empty protobuf document (see [`response::empty_openapi_v2`]) with its
//!   `ETag`, and a 304 to `If-None-Match` of it (274), which kubectl sends from its cache.

use chrono::{DateTime, Utc};
use http::header::{
    HeaderValue, CACHE_CONTROL, ETAG, EXPIRES, IF_NONE_MATCH, LAST_MODIFIED, LOCATION, VARY,
};
use http::{Response, StatusCode};
use serde_json::Value;

use super::response::{self, Body};
use super::{served_resources, Context, Incoming};
use crate::openapi::{self, sha512_hex};
use crate::resources::{definitions_resource, ResourceDef};

/// The answer to a GET of `/openapi/v3` (`document` `None`) or of a document under it.
pub fn v3(ctx: &Context, incoming: &Incoming, document: Option<&str>) -> Response<Body> {
    let now = ctx.store.clock().now();
    let documents = openapi::documents(&served_resources(ctx), |def| definition(ctx, def));
    let Some(path) = document else {
        let index = serde_json::to_vec(&openapi::index(&documents)).unwrap_or_default();
        let mut answer = Response::new(response::full(index));
        set(
            &mut answer,
            http::header::CONTENT_TYPE,
            "text/plain; charset=utf-8",
        );
        set(&mut answer, CACHE_CONTROL, "no-cache, private");
        set(&mut answer, LAST_MODIFIED, &http_date(now, "GMT"));
        return answer;
    };
    let Some(found) = documents.into_iter().find(|d| d.path == path) else {
        return response::plain_text(StatusCode::NOT_FOUND, "404 page not found\n");
    };
    let etag = format!("\"{}\"", found.hash);
    let mut answer = match incoming.query("hash") {
        Some(hash) if hash != found.hash => {
            let mut moved = Response::new(response::full(Vec::new()));
            *moved.status_mut() = StatusCode::MOVED_PERMANENTLY;
            set(&mut moved, LOCATION, &found.server_relative_url());
            return moved;
        }
        Some(_) => {
            let mut answer = not_modified_or(incoming, &etag, found.body);
            set(&mut answer, CACHE_CONTROL, "public, immutable");
            set(
                &mut answer,
                EXPIRES,
                &http_date(now + chrono::Duration::days(365), "UTC"),
            );
            answer
        }
        None => {
            let mut answer = not_modified_or(incoming, &etag, found.body);
            set(&mut answer, CACHE_CONTROL, "no-cache, private");
            answer
        }
    };
    set(&mut answer, VARY, "Accept");
    answer
}

/// The answer to a GET of `/openapi/v2`.
pub fn v2(incoming: &Incoming) -> Response<Body> {
    let etag = format!("\"{}\"", sha512_hex(&[]));
    let mut answer = if incoming.header(IF_NONE_MATCH) == Some(etag.as_str()) {
        not_modified()
    } else {
        response::empty_openapi_v2()
    };
    set(&mut answer, ETAG, &etag);
    set(&mut answer, VARY, "Accept");
    answer
}

/// The document `body` with its `etag`, or a 304 when the client holds it.
fn not_modified_or(incoming: &Incoming, etag: &str, body: Vec<u8>) -> Response<Body> {
    let mut answer = if incoming.header(IF_NONE_MATCH) == Some(etag) {
        not_modified()
    } else {
        response::json_bytes(StatusCode::OK, body)
    };
    set(&mut answer, ETAG, etag);
    answer
}

fn not_modified() -> Response<Body> {
    let mut answer = Response::new(response::full(Vec::new()));
    *answer.status_mut() = StatusCode::NOT_MODIFIED;
    answer
}

/// A custom resource's stored CustomResourceDefinition.
fn definition(ctx: &Context, def: &ResourceDef) -> Option<Value> {
    let definitions = definitions_resource();
    let id = ctx.store.resources().find(
        &definitions.group,
        &definitions.version,
        &definitions.resource,
    )?;
    let name = format!("{}.{}", def.resource, def.group);
    ctx.store
        .get(id, None, &name)
        .ok()
        .map(|stored| (*stored).clone())
}

/// An HTTP date (`Sun, 29 Nov 2026 05:27:45 GMT`); Go writes `Expires` with `UTC`.
fn http_date(at: DateTime<Utc>, zone: &str) -> String {
    format!("{} {zone}", at.format("%a, %d %b %Y %H:%M:%S"))
}

fn set(response: &mut Response<Body>, name: http::header::HeaderName, value: &str) {
    if let Ok(value) = HeaderValue::from_str(value) {
        response.headers_mut().insert(name, value);
    }
}
