//! [`Client`]: the one path every request to the API server takes.
//!
//! ```text
//! ApiRequest ──▶ throttle (one token) ──▶ Authorization + impersonation headers ──▶ reqwest
//!                                                                                      │
//!      typed value / WatchStream ◀── decode ◀── 2xx ◀───────────────────────────────────┤
//!      Error::Api(ApiError)      ◀── Status body ◀── 4xx/5xx ◀──────────────────────────┘
//! ```
//!
//! Contract:
//! - Every attempt takes a throttle token first, so `--kube-api-qps` bounds what the server
//!   sees, retries included. The credential is fetched after the throttle wait, so a token is
//!   as fresh as possible when it leaves.
//! - The client resends a request on its own only as [`RetryPolicy`] decides: once after a 401
//!   with a refreshable credential (exec plugin, token file), which is invalidated first; and
//!   after the wait a 429 or 5xx asks for with `Retry-After`. Any other error status becomes an
//!   [`Error::Api`] built from the body.
//! - Requests other than watches are bounded by the per-request timeout (body included). A
//!   watch has none: the server's `timeoutSeconds` ends it, and the reflector gives up on one
//!   the server fails to end. HTTP/2 connections are pinged ([`H2_PING_INTERVAL`]) and closed
//!   when a ping goes unanswered ([`H2_PING_TIMEOUT`]), so a dead connection fails its watches
//!   instead of leaving them silent (client-go's HTTP/2 health check).
//! - With a kubeconfig `tls-server-name`, requests travel by an [`SniRoute`] so that the name is
//!   also the TLS SNI, as in client-go (see [`sni`](super::sni) for how and its trade-offs).
//! - `proxy-url` (`http`, `https` or `socks5`) carries every request; without it, reqwest
//!   honours `HTTPS_PROXY`/`NO_PROXY` like kubectl.
//! - Every attempt is reported to the [`RequestObserver`](super::RequestObserver) of the options, if any, once its
//!   response headers arrived or it failed (request metrics).
//! - `Client` is cheap to clone; clones share the connection pool (HTTP/2 when the server's
//!   ALPN offers it), the credential caches and the throttle.

use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use http::header::{HeaderMap, ACCEPT, AUTHORIZATION, CONTENT_TYPE};
use serde::de::DeserializeOwned;
use url::Url;

use super::availability::ServerAvailability;
use super::config::auth::Auth;
use super::config::tls::crypto_provider;
use super::config::ClientConfig;
use super::decode::{decode_fn, ItemDecoder};
use super::error::{ApiError, Error};
use super::negotiate::answered_protobuf;
use super::observer::{Attempt, AttemptResult, ObserverSlot, BASE_CLIENT};
use super::options::{BuildError, ClientOptions};
use super::protobuf::Selection;
use super::request::{ApiRequest, ResponseKind};
use super::retry::{RetryPolicy, Step};
use super::sni::SniRoute;
use super::throttle::Throttle;
use super::watch_stream::{WatchDecoder, WatchStream};

/// How often an HTTP/2 connection is pinged, idle or not (client-go's `ReadIdleTimeout`).
pub const H2_PING_INTERVAL: Duration = Duration::from_secs(30);

/// How long an unanswered ping waits before the connection is closed (client-go's
/// `PingTimeout`).
pub const H2_PING_TIMEOUT: Duration = Duration::from_secs(15);

/// A connection to one API server, as one identity, under one rate limit.
#[derive(Clone, Debug)]
pub struct Client {
    inner: Arc<Inner>,
}

#[derive(Debug)]
struct Inner {
    http: reqwest::Client,
    server: Url,
    /// How requests reach the server when `tls-server-name` must be the SNI.
    sni_route: Option<SniRoute>,
    auth: Auth,
    /// Impersonation headers, sent on every request.
    identity_headers: HeaderMap,
    throttle: Throttle,
    /// The rate `throttle` was built with (`--kube-api-qps`, `--kube-api-burst`).
    rate: (f64, u32),
    /// The `User-Agent` the reqwest client sends by default.
    user_agent: String,
    /// This client's own `User-Agent`, when it is a component's ([`Client::for_component`]).
    component_agent: Option<http::HeaderValue>,
    /// The component, or [`BASE_CLIENT`]: the `client` label of its metrics.
    component: String,
    request_timeout: Option<Duration>,
    default_namespace: String,
    /// Told about every attempt (metrics).
    observer: ObserverSlot,
    /// Whether the server answers, as every attempt of this client and of the clients derived
    /// from it finds it.
    availability: ServerAvailability,
}

impl Client {
    /// A client for the server, credentials and TLS settings of `config`.
    pub fn new(config: &ClientConfig, options: &ClientOptions) -> Result<Client, BuildError> {
        let server = &config.server;
        if !matches!(server.scheme(), "http" | "https") {
            return Err(BuildError::UnsupportedScheme(server.to_string()));
        }
        let mut identity_headers = HeaderMap::new();
        for (name, value) in config.impersonation.headers()? {
            identity_headers.append(name, value);
        }
        let sni_route = SniRoute::plan(server, config.tls_server_name(), is_proxied(config))?;
        Ok(Client {
            inner: Arc::new(Inner {
                http: http_client(config, options, sni_route.as_ref())?,
                server: server.clone(),
                sni_route,
                auth: config.auth.clone(),
                identity_headers,
                throttle: Throttle::new(options.qps, options.burst),
                rate: (options.qps, options.burst),
                user_agent: options.user_agent.clone(),
                component_agent: None,
                component: BASE_CLIENT.to_owned(),
                request_timeout: options.request_timeout,
                default_namespace: config.default_namespace.clone(),
                observer: options.request_observer.clone(),
                availability: ServerAvailability::new(),
            }),
        })
    }

    /// The client one component of the process uses, as kube-controller-manager gives each
    /// controller its own: the same server, credentials and connections, but a token bucket
    /// of its own at `rate_factor` times this client's rate (the garbage collector's is 2, as
    /// upstream's: each deletion takes two calls), and a `User-Agent` ending in `/component`,
    /// so that the API server's audit log and priority-and-fairness can tell them apart. One
    /// component's lists, watches or retries then never delay another's deletions.
    pub fn for_component(&self, component: &str, rate_factor: f64) -> Client {
        let inner = &self.inner;
        let (qps, burst) = inner.rate;
        let rate = (
            qps * rate_factor,
            (f64::from(burst) * rate_factor).round() as u32,
        );
        let agent = format!("{}/{component}", inner.user_agent);
        Client {
            inner: Arc::new(Inner {
                http: inner.http.clone(),
                server: inner.server.clone(),
                sni_route: inner.sni_route.clone(),
                auth: inner.auth.clone(),
                identity_headers: inner.identity_headers.clone(),
                throttle: Throttle::new(rate.0, rate.1),
                rate,
                // A component name is ours and plain text; an unusable one keeps the default.
                component_agent: http::HeaderValue::from_str(&agent).ok(),
                user_agent: agent,
                component: component.to_owned(),
                request_timeout: inner.request_timeout,
                default_namespace: inner.default_namespace.clone(),
                observer: inner.observer.clone(),
                availability: inner.availability.clone(),
            }),
        }
    }

    /// The `User-Agent` this client sends.
    pub fn user_agent(&self) -> &str {
        &self.inner.user_agent
    }

    /// The token bucket every request of this client waits on.
    pub fn throttle(&self) -> &Throttle {
        &self.inner.throttle
    }

    /// Whether the API server answers, as the attempts of this client and of every client
    /// derived from it (or from the same base) find it.
    pub fn availability(&self) -> &ServerAvailability {
        &self.inner.availability
    }

    /// The API server's base URL.
    pub fn server(&self) -> &Url {
        &self.inner.server
    }

    /// The namespace of the configuration's context (`default` if it names none).
    pub fn default_namespace(&self) -> &str {
        &self.inner.default_namespace
    }

    /// Sends `request` and returns the successful response, headers read and body not yet.
    /// Resends it when [`RetryPolicy`] says so (a refreshed credential, a `Retry-After`).
    pub async fn send(&self, request: &ApiRequest) -> Result<reqwest::Response, Error> {
        let mut policy = RetryPolicy::default();
        loop {
            let response = self.send_once(request).await?;
            let status = response.status();
            match policy.next_step(status, response.headers(), self.credentials_can_refresh()) {
                Step::Accept => return Ok(response),
                Step::RefreshCredentials => {
                    tracing::debug!(url = %request.url, "401: refreshing the credential and resending once");
                    self.inner.auth.invalidate();
                }
                Step::WaitAndResend(wait) => {
                    tracing::debug!(url = %request.url, %status, ?wait, "server asked to come back later");
                    tokio::time::sleep(wait).await;
                }
                Step::Fail => return Err(error_from_response(response).await),
            }
        }
    }

    /// Sends `request` and returns the whole response body.
    pub async fn send_for_bytes(&self, request: &ApiRequest) -> Result<Bytes, Error> {
        let response = self.send(request).await?;
        Ok(response.bytes().await?)
    }

    /// Sends `request` and decodes the JSON response body as `T`.
    pub async fn send_for_json<T: DeserializeOwned>(
        &self,
        request: &ApiRequest,
    ) -> Result<T, Error> {
        let body = self.send_for_bytes(request).await?;
        serde_json::from_slice(&body).map_err(|e| Error::decode("response body", &body, e))
    }

    /// Starts a watch and returns its events as a stream. The throttle token is taken once,
    /// to start; streaming holds none.
    pub async fn watch<T: DeserializeOwned>(
        &self,
        request: &ApiRequest,
    ) -> Result<WatchStream<T>, Error> {
        let response = self.send(request).await?;
        Ok(WatchStream::new(response.bytes_stream()))
    }

    /// Like [`watch`](Self::watch), each event's object decoded by `decoder`. A protobuf
    /// answer (by its `Content-Type`) is read frame by frame, each object transcoded to the
    /// JSON text of the members in `keep`.
    pub async fn watch_with<T: 'static>(
        &self,
        request: &ApiRequest,
        decoder: ItemDecoder<T>,
        keep: Selection,
    ) -> Result<WatchStream<T>, Error> {
        let response = self.send(request).await?;
        if answered_protobuf(&response) {
            let decode = decode_fn(decoder);
            return Ok(WatchStream::protobuf(response.bytes_stream(), decode, keep));
        }
        let decoder = WatchDecoder::with_item_decoder(decoder);
        Ok(WatchStream::with_decoder(response.bytes_stream(), decoder))
    }

    /// One attempt: wait for a token, add the credentials and send.
    async fn send_once(&self, request: &ApiRequest) -> Result<reqwest::Response, Error> {
        let inner = &self.inner;
        let attempt = Attempt {
            client: &inner.component,
            method: &request.method,
            url: &request.url,
        };
        let waited = inner.throttle.acquire().await;
        if let Some(observer) = &inner.observer.0 {
            observer.waited(attempt, waited);
        }
        let url = match &inner.sni_route {
            Some(route) => route.url_for(&request.url),
            None => request.url.clone(),
        };
        let mut builder = inner
            .http
            .request(request.method.clone(), url)
            .header(ACCEPT, request.accept)
            .headers(inner.identity_headers.clone());
        if let Some(agent) = &inner.component_agent {
            builder = builder.header(http::header::USER_AGENT, agent.clone());
        }
        let credential = inner
            .auth
            .authorization_header()
            .await
            .map_err(|e| Error::Auth {
                source: Box::new(e),
            })?;
        if let Some(value) = credential {
            builder = builder.header(AUTHORIZATION, value);
        }
        if let Some(body) = &request.body {
            builder = builder
                .header(CONTENT_TYPE, body.content_type)
                .body(body.bytes.clone());
        }
        if let (ResponseKind::Whole, Some(timeout)) = (request.response, inner.request_timeout) {
            builder = builder.timeout(timeout);
        }
        let started = tokio::time::Instant::now();
        let response = builder.send().await;
        let result = match &response {
            Ok(response) => AttemptResult::Status(response.status().as_u16()),
            Err(_) => AttemptResult::TransportError,
        };
        let elapsed = started.elapsed();
        if request.records_availability {
            inner.availability.record(result);
        }
        if let Some(observer) = &inner.observer.0 {
            observer.observe(attempt, result, elapsed);
        }
        log_attempt(attempt, result, elapsed, waited);
        Ok(response?)
    }

    /// Whether a 401 may be cured by fetching the credential again.
    fn credentials_can_refresh(&self) -> bool {
        matches!(self.inner.auth, Auth::Exec(_) | Auth::TokenFile(_))
    }
}

/// The typed error of an error response, from its status, headers and (Status) body.
async fn error_from_response(response: reqwest::Response) -> Error {
    let code = response.status().as_u16();
    let headers = response.headers().clone();
    match response.bytes().await {
        Ok(body) => ApiError::from_response(code, &headers, &body).into(),
        // The status code alone still classifies the error.
        Err(_) => ApiError::from_response(code, &headers, &[]).into(),
    }
}

/// Whether a proxy carries requests to the server: `proxy-url`, or one of the proxy environment
/// variables (read the way reqwest reads them) not excluded by `NO_PROXY`.
fn is_proxied(config: &ClientConfig) -> bool {
    if config.proxy_url.is_some() {
        return true;
    }
    match config.server.as_str().parse::<http::Uri>() {
        Ok(uri) => hyper_util::client::proxy::matcher::Matcher::from_system()
            .intercept(&uri)
            .is_some(),
        // Unreachable for a parsed URL; assuming a proxy only keeps the SNI on the URL host.
        Err(_) => true,
    }
}

/// client-go's `-v=6` request line (`GET https://… 200 OK in 3 milliseconds`), at TRACE on
/// the target [`REQUEST_LOG_TARGET`], which `kube-gc -v=6` turns on; the rate limiter's wait
/// is added when there was one.
fn log_attempt(attempt: Attempt<'_>, result: AttemptResult, elapsed: Duration, waited: Duration) {
    let status = match result {
        AttemptResult::Status(code) => {
            let reason = http::StatusCode::from_u16(code)
                .ok()
                .and_then(|s| s.canonical_reason())
                .unwrap_or("");
            format!("{code} {reason}")
        }
        AttemptResult::TransportError => "(no response)".to_owned(),
    };
    let millis = elapsed.as_millis();
    if waited.is_zero() {
        tracing::trace!(target: REQUEST_LOG_TARGET, client = attempt.client,
            "{} {} {status} in {millis} milliseconds", attempt.method, attempt.url);
    } else {
        tracing::trace!(target: REQUEST_LOG_TARGET, client = attempt.client,
            rate_limiter_wait_ms = waited.as_millis() as u64,
            "{} {} {status} in {millis} milliseconds", attempt.method, attempt.url);
    }
}

/// The tracing target of the per-request log lines.
pub const REQUEST_LOG_TARGET: &str = "kube_gc::requests";

/// The reqwest client: TLS from the configuration, pool and timeouts from the options, the
/// `tls-server-name` route if there is one.
fn http_client(
    config: &ClientConfig,
    options: &ClientOptions,
    sni_route: Option<&SniRoute>,
) -> Result<reqwest::Client, BuildError> {
    let user_agent = http::HeaderValue::from_str(&options.user_agent)
        .map_err(|_| BuildError::UserAgent(options.user_agent.clone()))?;
    let mut builder = reqwest::Client::builder()
        .use_preconfigured_tls(tls_config(config)?)
        .user_agent(user_agent)
        .pool_idle_timeout(options.idle_connection_timeout)
        .http2_keep_alive_interval(H2_PING_INTERVAL)
        .http2_keep_alive_timeout(H2_PING_TIMEOUT)
        .http2_keep_alive_while_idle(true);
    if let Some(timeout) = options.connect_timeout {
        builder = builder.connect_timeout(timeout);
    }
    if let Some(route) = sni_route {
        // The route exists only when no proxy applies to the real server; the environment's
        // proxies must not be matched against `tls-server-name` instead.
        builder = route.apply(builder).no_proxy();
    }
    builder = match &config.proxy_url {
        Some(url) => {
            // The one place the password is read: reqwest needs it to authenticate to the proxy.
            let proxy =
                reqwest::Proxy::all(url.expose().as_str()).map_err(|source| BuildError::Proxy {
                    url: url.to_string(),
                    source: source.without_url(),
                })?;
            builder.proxy(proxy)
        }
        None => builder,
    };
    builder.build().map_err(BuildError::Http)
}

/// The rustls configuration. A plain-HTTP server never handshakes, so it gets one trusting
/// nothing instead of loading the system trust store for no use.
fn tls_config(config: &ClientConfig) -> Result<rustls::ClientConfig, BuildError> {
    if config.server.scheme() == "https" {
        return Ok(config.rustls_config()?);
    }
    let unused = rustls::ClientConfig::builder_with_provider(crypto_provider())
        .with_safe_default_protocol_versions()
        .map_err(BuildError::Rustls)?
        .with_root_certificates(rustls::RootCertStore::empty())
        .with_no_client_auth();
    Ok(unused)
}
