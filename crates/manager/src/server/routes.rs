//! [`Endpoints`]: what each path answers. Pure request → response, no sockets, so every route is
//! testable without a listener.
//!
//! | path                | answer                                                           |
//! |---------------------|------------------------------------------------------------------|
//! | `/healthz`, `/livez`| `ok`                                                             |
//! | `/readyz`           | `ok`, or 500 listing the failing [`Readiness`] checks            |
//! | `/metrics`          | every registered metric, OpenMetrics text                       |
//! | `/debug/workqueue`  | JSON of every registered queue ([`Queues`])                      |
//! | registered debug routes | whatever their [`DebugPage`] says (e.g. the GC graph, Graphviz; `/debug/explain`) |
//!
//! Contract: only `GET` and `HEAD` are served (405 otherwise). Debug paths answer 404 unless
//! debug handlers are enabled, exactly as if they did not exist.

use std::collections::BTreeMap;
use std::sync::Arc;

use bytes::Bytes;
use http::{header, Method, Request, Response, StatusCode};
use http_body_util::Full;
use parking_lot::RwLock;

use super::health::Readiness;
use super::queues::Queues;
use crate::metrics::{text_format, Metrics, CONTENT_TYPE as METRICS_CONTENT_TYPE};

const TEXT: &str = "text/plain; charset=utf-8";
const JSON: &str = "application/json";

/// What a debug route answers.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DebugPage {
    /// The status: 200, or what was wrong with the request (400, 404...).
    pub status: StatusCode,
    /// The `Content-Type`, e.g. `text/vnd.graphviz`.
    pub content_type: String,
    /// The body.
    pub body: Bytes,
}

impl DebugPage {
    /// A 200 page.
    pub fn ok(content_type: &str, body: impl Into<Bytes>) -> DebugPage {
        DebugPage {
            status: StatusCode::OK,
            content_type: content_type.to_owned(),
            body: body.into(),
        }
    }

    /// An error: `status` with `message` as one line of text.
    pub fn error(status: StatusCode, message: &str) -> DebugPage {
        DebugPage {
            status,
            content_type: TEXT.to_owned(),
            body: Bytes::from(format!("{message}\n")),
        }
    }
}

/// A debug page, given the request's query string (`uid=a&uid=b`, empty when there is none).
type DebugRoute = Arc<dyn Fn(&str) -> DebugPage + Send + Sync>;

/// Everything the server answers with; cheap to clone (clones share registrations).
#[derive(Clone, Default)]
pub struct Endpoints {
    /// The metric registry `/metrics` encodes.
    pub metrics: Metrics,
    /// The checks of `/readyz`.
    pub readiness: Readiness,
    /// The queues of `/debug/workqueue` (refreshed before each scrape).
    pub queues: Queues,
    debug_enabled: bool,
    debug_routes: Arc<RwLock<BTreeMap<String, DebugRoute>>>,
}

impl std::fmt::Debug for Endpoints {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Endpoints")
            .field("readiness", &self.readiness)
            .field("queues", &self.queues)
            .field("debug_enabled", &self.debug_enabled)
            .field(
                "debug_routes",
                &self.debug_routes.read().keys().collect::<Vec<_>>(),
            )
            .finish()
    }
}

impl Endpoints {
    /// Endpoints over `metrics`, with no checks, queues or debug routes; debug handlers served
    /// only if `debug_enabled`.
    pub fn new(metrics: Metrics, debug_enabled: bool) -> Endpoints {
        Endpoints {
            metrics,
            debug_enabled,
            ..Endpoints::default()
        }
    }

    /// Serves `page()` at `path` (e.g. `/debug/controllers/garbage-collector-controller/graph`)
    /// when debug handlers are enabled. A later registration of the same path replaces it.
    pub fn add_debug_route(
        &self,
        path: &str,
        page: impl Fn() -> DebugPage + Send + Sync + 'static,
    ) {
        self.add_debug_route_with_query(path, move |_| page());
    }

    /// Like [`add_debug_route`](Self::add_debug_route), for a page that reads the request's
    /// query string (e.g. the GC graph's repeated `?uid=`).
    pub fn add_debug_route_with_query(
        &self,
        path: &str,
        page: impl Fn(&str) -> DebugPage + Send + Sync + 'static,
    ) {
        self.debug_routes
            .write()
            .insert(path.to_owned(), Arc::new(page));
    }

    /// The response to `request`.
    pub fn respond<B>(&self, request: &Request<B>) -> Response<Full<Bytes>> {
        if request.method() != Method::GET && request.method() != Method::HEAD {
            return plain(StatusCode::METHOD_NOT_ALLOWED, "method not allowed\n");
        }
        let path = request.uri().path();
        let verbose = request.uri().query().is_some_and(|q| {
            q.split('&')
                .any(|p| p == "verbose" || p.starts_with("verbose="))
        });
        match path {
            "/healthz" | "/livez" => plain(StatusCode::OK, "ok"),
            "/readyz" => {
                let report = self.readiness.report();
                let status = if report.ready() {
                    StatusCode::OK
                } else {
                    StatusCode::INTERNAL_SERVER_ERROR
                };
                plain(status, &report.body("readyz", verbose))
            }
            "/metrics" => self.metrics_page(
                request
                    .headers()
                    .get(http::header::ACCEPT)
                    .and_then(|v| v.to_str().ok()),
            ),
            _ if self.debug_enabled => self.debug_page(path, request.uri().query().unwrap_or("")),
            _ => plain(StatusCode::NOT_FOUND, "404 page not found\n"),
        }
    }

    /// OpenMetrics, or the 0.0.4 text format for a scraper that asks for `text/plain` only.
    fn metrics_page(&self, accept: Option<&str>) -> Response<Full<Bytes>> {
        self.queues.refresh_unfinished_work();
        match self.metrics.encode() {
            Ok(text) if text_format::wants_text(accept) => response(
                StatusCode::OK,
                text_format::CONTENT_TYPE,
                Bytes::from(text_format::from_openmetrics(&text)),
            ),
            Ok(text) => response(StatusCode::OK, METRICS_CONTENT_TYPE, Bytes::from(text)),
            Err(_) => plain(
                StatusCode::INTERNAL_SERVER_ERROR,
                "encoding metrics failed\n",
            ),
        }
    }

    fn debug_page(&self, path: &str, query: &str) -> Response<Full<Bytes>> {
        if path == "/debug/workqueue" {
            let body = serde_json::to_vec_pretty(&self.queues.debug_json()).unwrap_or_default();
            return response(StatusCode::OK, JSON, Bytes::from(body));
        }
        let route = self.debug_routes.read().get(path).cloned();
        match route {
            Some(route) => {
                let page = route(query);
                response(page.status, &page.content_type, page.body)
            }
            None => plain(StatusCode::NOT_FOUND, "404 page not found\n"),
        }
    }
}

fn plain(status: StatusCode, body: &str) -> Response<Full<Bytes>> {
    response(status, TEXT, Bytes::from(body.to_owned()))
}

fn response(status: StatusCode, content_type: &str, body: Bytes) -> Response<Full<Bytes>> {
    let mut response = Response::new(Full::new(body));
    *response.status_mut() = status;
    if let Ok(value) = header::HeaderValue::from_str(content_type) {
        response.headers_mut().insert(header::CONTENT_TYPE, value);
    }
    response.headers_mut().insert(
        header::X_CONTENT_TYPE_OPTIONS,
        header::HeaderValue::from_static("nosniff"),
    );
    response
}

#[cfg(test)]
mod tests {
    use super::*;

    fn get(endpoints: &Endpoints, path: &str) -> (StatusCode, String) {
        let request = Request::get(path).body(()).unwrap();
        let response = endpoints.respond(&request);
        let status = response.status();
        let content_type = response.headers()[header::CONTENT_TYPE]
            .to_str()
            .unwrap()
            .to_owned();
        (status, content_type)
    }

    #[test]
    fn debug_routes_exist_only_when_enabled() {
        for enabled in [false, true] {
            let endpoints = Endpoints::new(Metrics::new(), enabled);
            endpoints.add_debug_route("/debug/graph", || {
                DebugPage::ok("text/vnd.graphviz", Bytes::from_static(b"digraph {}"))
            });
            let expected = if enabled {
                StatusCode::OK
            } else {
                StatusCode::NOT_FOUND
            };
            assert_eq!(get(&endpoints, "/debug/graph").0, expected);
            assert_eq!(get(&endpoints, "/debug/workqueue").0, expected);
            assert_eq!(get(&endpoints, "/healthz").0, StatusCode::OK);
        }
    }

    #[test]
    fn a_debug_page_answers_with_its_own_status() {
        let endpoints = Endpoints::new(Metrics::new(), true);
        endpoints.add_debug_route_with_query("/debug/echo", |query| match query {
            "" => DebugPage::error(StatusCode::BAD_REQUEST, "say something"),
            said => DebugPage::ok(TEXT, said.to_owned()),
        });
        assert_eq!(get(&endpoints, "/debug/echo").0, StatusCode::BAD_REQUEST);
        assert_eq!(
            get(&endpoints, "/debug/echo?hi"),
            (StatusCode::OK, TEXT.to_owned())
        );
    }

    #[test]
    fn only_reads_are_served() {
        let endpoints = Endpoints::default();
        let post = Request::post("/healthz").body(()).unwrap();
        assert_eq!(
            endpoints.respond(&post).status(),
            StatusCode::METHOD_NOT_ALLOWED
        );
        assert_eq!(get(&endpoints, "/nope").0, StatusCode::NOT_FOUND);
        assert_eq!(get(&endpoints, "/metrics").1, METRICS_CONTENT_TYPE);
        let text = Request::get("/metrics")
            .header(http::header::ACCEPT, "text/plain;version=0.0.4")
            .body(())
            .unwrap();
        let answer = endpoints.respond(&text);
        assert_eq!(
            answer.headers()[http::header::CONTENT_TYPE],
            text_format::CONTENT_TYPE
        );
    }
}
