//! One HTTP request in, one response out.
//!
//! Contract: [`handle`] is the whole request pipeline of the simulated server, in the order a
//! real server applies it: route the path, authenticate (a client certificate signed by the
//! server's CA, or `Authorization: Bearer` with the server's token or a known user's when a token
//! is configured → else 401), apply injected faults (delay, or an error / 429 with
//! `Retry-After`), refuse what a user is not granted ([`authorize`], 403), run the verb against
//! the store, write an error's `Status` in the media type the request
//! asks for, and record the exchange in the journal. Each verb lives in its own module:
//! [`read`] (get, list), [`write`](mod@write) (create, update, patch, delete), [`watch`]
//! (streaming), [`discovery`]; [`errors`] maps refusals to `Status` bodies, [`response`] builds
//! responses, [`encoding`] negotiates JSON or protobuf and [`protobuf`] writes the latter.

pub mod authorize;
pub mod discovery;
pub mod encoding;
pub mod errors;
pub mod etcd;
pub mod list_body;
pub mod openapi;
pub mod protobuf;
pub mod read;
pub mod response;
pub mod reviews;
pub mod route;
pub mod self_reviews;
pub mod stale;
pub mod watch;
mod watch_line;
pub mod write;

use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use chrono::{DateTime, Utc};
use http::header::{HeaderValue, ACCEPT, AUTHORIZATION, CONTENT_TYPE, RETRY_AFTER};
use http::{Method, Request, Response, StatusCode};
use http_body_util::BodyExt;
use serde_json::Value;

use crate::faults::{FaultInjector, Verb};
use crate::journal::{parse_query, recorded_headers, Journal, JournalEntry};
use crate::resources::Resources;
use crate::server::generations::Generations;
use crate::status;
use crate::store::Store;
use errors::HandlerError;
use response::Body;
use route::{Route, Target};

/// Everything a request handler needs, shared by all connections of one server.
pub struct Context {
    /// The object store.
    pub store: Arc<Store>,
    /// Where every request is recorded.
    pub journal: Arc<Journal>,
    /// Fault injection.
    pub faults: Arc<FaultInjector>,
    /// The bearer token clients must present, if any.
    pub token: Option<String>,
    /// How often an idle watch with `allowWatchBookmarks=true` gets a BOOKMARK.
    pub bookmark_interval: Duration,
    /// How long a list from the watch cache waits for a resourceVersion the server has not
    /// reached before it answers 504 (the real server's 3 s).
    pub too_large_wait: Duration,
    /// Whether `sendInitialEvents=true` (WatchList) is served.
    pub watch_list_enabled: bool,
    /// Which aggregated forms `/api` and `/apis` answer in when asked.
    pub aggregated_discovery: crate::config::AggregatedDiscovery,
    /// `host:port` clients reach the server at (for `/api`).
    pub server_address: String,
    /// The connections of the current generation: cutting it drops them all, as a restart.
    pub connections: Arc<Generations>,
    /// Resources declared but not served right now (a CRD not yet created, or deleted):
    /// left out of discovery, and requests to them answer 404.
    pub unserved: crate::resources::Unserved,
    /// Whether etcd answers; while it does not, requests that need it hang and fail.
    pub etcd: etcd::Etcd,
    /// How long a request may take before the server gives up on it (`--request-timeout`).
    pub request_timeout: Duration,
    /// Users known by a bearer token, for TokenReviews.
    pub users: Vec<reviews::SimUser>,
    /// Non-resource paths users and groups may `get`, for SubjectAccessReviews.
    pub grants: Vec<reviews::NonResourceGrant>,
    /// Verbs on resources users are not granted ([`authorize`]); granted at run time by
    /// [`SimServer::grant`](crate::SimServer::grant).
    pub denials: parking_lot::RwLock<Vec<authorize::ResourceDenial>>,
    /// Aggregated group versions whose server does not answer ([`stale`]).
    pub stale: stale::StaleGroups,
}

impl Context {
    /// Restarts the API server: every watch and connection ends, every watch cache is rebuilt
    /// at the current revision (objects and etcd's history are kept).
    pub fn restart(&self) {
        self.store.restart();
        self.connections.cut();
        tracing::info!(
            resource_version = self.store.resource_version(),
            "simulated API server restarted: watches and connections ended, watch caches rebuilt"
        );
    }
}

impl std::fmt::Debug for Context {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Context")
            .field("store", &self.store)
            .field("server_address", &self.server_address)
            .finish_non_exhaustive()
    }
}

/// What the server knows about the connection a request came on.
#[derive(Debug, Clone, Copy, Default)]
pub struct Peer {
    /// The client presented a certificate signed by the server's CA during the TLS handshake;
    /// like a real API server, that authenticates its requests without a token.
    pub client_certificate: bool,
}

/// A request with its body read, as the verb handlers see it. Its `Debug` lists header names
/// only: `authorization` carries the client's credential.
pub struct Incoming {
    /// The method.
    pub method: Method,
    /// The path, without query.
    pub path: String,
    /// Decoded query parameters, in order.
    pub query: Vec<(String, String)>,
    /// The headers.
    pub headers: http::HeaderMap,
    /// The body bytes (empty when there was none).
    pub body: Bytes,
}

impl std::fmt::Debug for Incoming {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let header_names: Vec<&str> = self.headers.keys().map(|name| name.as_str()).collect();
        f.debug_struct("Incoming")
            .field("method", &self.method)
            .field("path", &self.path)
            .field("query", &self.query)
            .field("header_names", &header_names)
            .field("body_len", &self.body.len())
            .finish()
    }
}

impl Incoming {
    /// The last value of a query parameter.
    pub fn query(&self, name: &str) -> Option<&str> {
        self.query
            .iter()
            .rev()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
    }

    /// A header as text.
    pub fn header(&self, name: impl http::header::AsHeaderName) -> Option<&str> {
        self.headers.get(name).and_then(|v| v.to_str().ok())
    }

    /// Whether `dryRun=All` was asked for.
    pub fn dry_run(&self) -> bool {
        self.query("dryRun") == Some("All")
    }

    /// Whether this is a watch (`watch=1` or `watch=true`).
    pub fn is_watch(&self) -> bool {
        matches!(self.query("watch"), Some("1" | "true"))
    }

    /// The body as JSON, `None` when empty.
    pub fn json_body(&self) -> Result<Option<Value>, serde_json::Error> {
        if self.body.iter().all(u8::is_ascii_whitespace) {
            return Ok(None);
        }
        serde_json::from_slice(&self.body).map(Some)
    }
}

/// Handles one request end to end (see the module documentation).
pub async fn handle<B>(ctx: &Context, peer: Peer, request: Request<B>) -> Response<Body>
where
    B: hyper::body::Body,
    B::Error: std::fmt::Display,
{
    // Stamped now, not when the answer is known: a write the test sees take effect must not
    // appear to have arrived after it.
    let arrived = ctx.store.clock().now();
    let (parts, body) = request.into_parts();
    let body = match body.collect().await {
        Ok(collected) => collected.to_bytes(),
        Err(e) => {
            let message = format!("unable to read the request body: {e}");
            return response::status(status::bad_request(&message));
        }
    };
    let incoming = Incoming {
        method: parts.method,
        path: parts.uri.path().to_string(),
        query: parse_query(parts.uri.query()),
        headers: parts.headers,
        body,
    };
    let route = served_route(
        ctx,
        &incoming.path,
        Route::parse(&incoming.path, ctx.store.resources()),
    );
    let verb = classify(&incoming, &route);
    let response = respond(ctx, peer, &incoming, &route, verb).await;
    // One place for every error: its `Status` in the media type the request asks for first.
    let response = response::status_as_accepted(response, incoming.header(ACCEPT));
    record(ctx, &incoming, verb, &response, arrived);
    response
}

/// A route to a resource that is not served right now leads nowhere; a path under a group
/// none of whose resources is served right now is [`Route::GroupNotServed`].
fn served_route(ctx: &Context, path: &str, route: Route) -> Route {
    let unserved = ctx.unserved.read();
    match route {
        // A served resource's group is served: no need to look further (every request to a
        // resource comes this way).
        Route::Resource(target) if !unserved.contains(&target.resource) => Route::Resource(target),
        route => {
            if let Some(group) = route::group_of_path(path) {
                let served = ctx
                    .store
                    .resources()
                    .iter()
                    .any(|(id, def)| def.group == group && !unserved.contains(&id));
                if !served {
                    return Route::GroupNotServed;
                }
            }
            match route {
                Route::Resource(_) => Route::NotFound,
                route => route,
            }
        }
    }
}

/// The resources served right now, for discovery.
fn served_resources(ctx: &Context) -> Resources {
    let unserved = ctx.unserved.read();
    Resources::new(
        ctx.store
            .resources()
            .iter()
            .filter(|(id, _)| !unserved.contains(id))
            .map(|(_, def)| def.clone())
            .collect(),
    )
}

fn classify(incoming: &Incoming, route: &Route) -> Verb {
    let has_name = matches!(route, Route::Resource(Target { name: Some(_), .. }));
    Verb::classify(
        &incoming.method,
        incoming.is_watch(),
        matches!(
            route,
            Route::Discovery(_) | Route::Health | Route::OpenApiV2 | Route::OpenApiV3(_)
        ),
        has_name,
    )
}

async fn respond(
    ctx: &Context,
    peer: Peer,
    incoming: &Incoming,
    route: &Route,
    verb: Verb,
) -> Response<Body> {
    if !peer.client_certificate && !token_accepted(ctx, incoming) {
        return response::status(status::unauthorized());
    }
    let decision = ctx.faults.decide(verb);
    if decision.restart {
        ctx.restart();
        // The restart cut this request's connection: what the client sees is that.
        return std::future::pending().await;
    }
    if let Some(delay) = decision.delay {
        tokio::time::sleep(delay).await;
    }
    if let Some((code, retry_after)) = decision.respond {
        return injected_failure(code, retry_after);
    }
    if let Some(review) =
        reviews::answer(ctx, incoming).or_else(|| self_reviews::answer(ctx, incoming))
    {
        return review;
    }
    match route {
        Route::NotFound => response::status(status::not_found_path()),
        Route::GroupNotServed => {
            response::plain_text(StatusCode::NOT_FOUND, "404 page not found\n")
        }
        Route::Health => etcd::health(ctx, &incoming.path),
        Route::OpenApiV2 => openapi::v2(incoming),
        Route::OpenApiV3(document) => openapi::v3(ctx, incoming, document.as_deref()),
        Route::Discovery(which) => {
            if incoming.method != Method::GET {
                return response::status(status::not_found_path());
            }
            if let route::Discovery::GroupResources(group, version) = which {
                if ctx.stale.is_stale(group, version) {
                    return stale::service_unavailable();
                }
            }
            discovery::respond(
                which,
                &served_resources(ctx),
                &ctx.server_address,
                incoming.header(ACCEPT),
                ctx.aggregated_discovery,
                &ctx.stale,
            )
        }
        Route::Resource(target) => {
            if let Some(unavailable) = ctx.stale.refusal(ctx.store.resources(), target) {
                return unavailable;
            }
            if let Some(refused) = authorize::refusal(ctx, incoming, target, verb) {
                return refused;
            }
            if let Some(timed_out) = etcd::unreachable(ctx, incoming, target).await {
                return timed_out;
            }
            let result = dispatch(ctx, incoming, target).await;
            result.unwrap_or_else(|e| response::status(e.status(ctx.store.resources())))
        }
    }
}

async fn dispatch(
    ctx: &Context,
    incoming: &Incoming,
    target: &Target,
) -> Result<Response<Body>, HandlerError> {
    let def = ctx.store.resources().def(target.resource);
    let unsupported = |action: &str| {
        Err(HandlerError::Status(status::method_not_allowed(
            &def.group_resource(),
            action,
        )))
    };
    // A namespace's `finalize` subresource is written with PUT only.
    if target.subresource.as_deref() == Some("finalize") && incoming.method != Method::PUT {
        return unsupported(incoming.method.as_str());
    }
    match (&incoming.method, &target.name) {
        (&Method::GET, Some(_)) => read::get(ctx, incoming, target),
        (&Method::GET, None) if incoming.is_watch() => watch::watch(ctx, incoming, target),
        (&Method::GET, None) => read::list(ctx, incoming, target).await,
        // Objects of a namespaced resource are created through their namespace's collection.
        (&Method::POST, None) if def.namespaced && target.namespace.is_none() => {
            unsupported("create")
        }
        (&Method::POST, None) => write::create(ctx, incoming, target),
        (&Method::PUT, Some(_)) => write::update(ctx, incoming, target),
        (&Method::PATCH, Some(_)) => write::patch(ctx, incoming, target),
        (&Method::DELETE, Some(_)) => write::delete(ctx, incoming, target),
        (&Method::DELETE, None) if def.supports("deletecollection") => {
            write::delete_collection(ctx, incoming, target)
        }
        (&Method::DELETE, None) => unsupported("deletecollection"),
        (&Method::POST, Some(_)) => unsupported("create"),
        _ => unsupported(incoming.method.as_str()),
    }
}

/// Whether the request carries the configured bearer token or a known user's (or no token is
/// configured).
fn token_accepted(ctx: &Context, incoming: &Incoming) -> bool {
    let Some(token) = &ctx.token else {
        return true;
    };
    let presented = incoming
        .header(AUTHORIZATION)
        .and_then(|v| v.strip_prefix("Bearer "));
    presented == Some(token.as_str()) || authorize::user_of(ctx, incoming).is_some()
}

/// The answer to an injected failure, as the real server gives that status: a throttled request
/// gets priority-and-fairness's plain-text 429 with `Retry-After`, any other status the generic
/// `Status` upstream builds for it.
fn injected_failure(code: StatusCode, retry_after: Option<u64>) -> Response<Body> {
    let mut response = match code {
        StatusCode::TOO_MANY_REQUESTS => {
            response::plain_text(code, status::THROTTLED_PLAIN_TEXT_BODY)
        }
        // Any other status: the Status upstream builds for a bare HTTP status.
        other => response::status(status::generic_failure(other, "injected fault")),
    };
    if let Some(seconds) = retry_after {
        if let Ok(value) = HeaderValue::from_str(&seconds.to_string()) {
            response.headers_mut().insert(RETRY_AFTER, value);
        }
    }
    response
}

fn record(
    ctx: &Context,
    incoming: &Incoming,
    verb: Verb,
    response: &Response<Body>,
    arrived: DateTime<Utc>,
) {
    let content_type = response
        .headers()
        .get(CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned);
    ctx.journal.record(JournalEntry {
        seq: 0,
        at: arrived,
        verb,
        method: incoming.method.to_string(),
        path: incoming.path.clone(),
        query: incoming.query.clone(),
        headers: recorded_headers(&incoming.headers),
        body: incoming.json_body().ok().flatten(),
        status: response.status().as_u16(),
        content_type,
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn debug_shows_header_names_but_never_their_values() {
        let mut headers = http::HeaderMap::new();
        headers.insert(
            http::header::AUTHORIZATION,
            http::HeaderValue::from_static("Bearer s3cr3t-token"),
        );
        headers.insert(
            http::header::ACCEPT,
            http::HeaderValue::from_static("application/json"),
        );
        let incoming = Incoming {
            method: Method::GET,
            path: "/api/v1/pods".into(),
            query: vec![("limit".into(), "1".into())],
            headers,
            body: Bytes::from_static(b"{}"),
        };
        let shown = format!("{incoming:?}");
        assert!(!shown.contains("s3cr3t-token"), "{shown}");
        assert!(
            shown.contains(r#"header_names: ["authorization", "accept"]"#),
            "{shown}"
        );
        assert!(
            shown.contains("/api/v1/pods") && shown.contains("body_len: 2"),
            "{shown}"
        );
    }
}
