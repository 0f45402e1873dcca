//! What the API server answers while etcd is down (exchanges 77–84): a request that must read
//! or write etcd hangs until the request's deadline and then fails with 504 `Timeout`; what the
//! server holds in memory is served as usual — watches (which stay open, silent), LISTs the
//! watch cache answers (`resourceVersion=0`, or a version without `limit`), discovery and
//! `/version`; the health checks fail on `etcd`.
//!
//! A request waiting for etcd goes on as usual if etcd comes back before its deadline (the API
//! server's etcd client reconnects; after exchange 84's outage the first GET was answered at
//! once).
//!
//! Simplified, knowingly: the real server closes a GET's connection without an answer at the
//! deadline (exchange 79) where this answers it 504 like a LIST (78) or a DELETE (77), and its
//! deadlines differ by verb (34 s for the DELETE of 77, 60 s otherwise) where this waits one
//! [`Context::request_timeout`] for all. A client sees the same thing either way: no answer for
//! a long time, then a failure that says nothing about the object.

use http::{Method, Response, StatusCode};

use super::response::{self, Body};
use super::route::Target;
use super::{Context, Incoming};
use crate::status;
use crate::store::{ListOptions, ListSource};

/// Whether etcd answers the API server.
#[derive(Debug)]
pub struct Etcd {
    up: tokio::sync::watch::Sender<bool>,
}

impl Default for Etcd {
    fn default() -> Self {
        Etcd {
            up: tokio::sync::watch::Sender::new(true),
        }
    }
}

impl Etcd {
    /// Whether etcd is up.
    pub fn is_up(&self) -> bool {
        *self.up.borrow()
    }

    /// Stops (`false`) or starts etcd.
    pub fn set_up(&self, up: bool) {
        self.up.send_replace(up);
    }

    /// Waits until etcd is up, for at most `deadline`; whether it is.
    async fn wait_up(&self, deadline: std::time::Duration) -> bool {
        let mut up = self.up.subscribe();
        tokio::time::timeout(deadline, up.wait_for(|up| *up))
            .await
            .is_ok_and(|seen| seen.is_ok())
    }
}

/// The answer to a request for `target` while etcd is down: 504 at the request's deadline if
/// etcd is still down then; `None` when etcd is up (or came back in time) or the request is
/// served from memory.
pub async fn unreachable(
    ctx: &Context,
    incoming: &Incoming,
    target: &Target,
) -> Option<Response<Body>> {
    if ctx.etcd.is_up() || served_from_memory(incoming, target) {
        return None;
    }
    if ctx.etcd.wait_up(ctx.request_timeout).await {
        return None;
    }
    // JSON whatever was asked: the real server's timeout filter encodes the `Status` itself,
    // without negotiating (exchange 78's JSON body under `text/plain`).
    let (code, body) = status::request_deadline_exceeded();
    Some(response::json(code, &body))
}

/// A watch, or a LIST the watch cache answers.
fn served_from_memory(incoming: &Incoming, target: &Target) -> bool {
    if incoming.method != Method::GET || target.name.is_some() {
        return false;
    }
    if incoming.is_watch() {
        return true;
    }
    let options = ListOptions {
        limit: incoming.query("limit").and_then(|l| l.parse().ok()),
        continue_token: incoming.query("continue").map(str::to_string),
        resource_version: incoming.query("resourceVersion").map(str::to_string),
        resource_version_match: incoming.query("resourceVersionMatch").map(str::to_string),
        ..ListOptions::default()
    };
    matches!(ListSource::of(&options), Ok(ListSource::WatchCache { .. }))
}

/// `/healthz`, `/livez` and `/readyz`: `ok`, or while etcd is down a 500 listing the failing
/// checks as exchanges 81 (`readyz`, which has `etcd-readiness` too) and 82 (`livez`) do.
pub fn health(ctx: &Context, path: &str) -> Response<Body> {
    if ctx.etcd.is_up() {
        return response::plain_text(StatusCode::OK, "ok");
    }
    let body = match path.trim_start_matches('/') {
        "readyz" => READYZ_ETCD_DOWN,
        "livez" => LIVEZ_ETCD_DOWN,
        _ => HEALTHZ_ETCD_DOWN,
    };
    response::plain_text(StatusCode::INTERNAL_SERVER_ERROR, body)
}

/// The failing lines of exchange 81 and its last line (the passing checks left out).
pub const READYZ_ETCD_DOWN: &str = "[+]ping ok\n[+]log ok\n[-]etcd failed: reason withheld\n\
    [-]etcd-readiness failed: reason withheld\nreadyz check failed\n";
/// The same of exchange 82.
pub const LIVEZ_ETCD_DOWN: &str =
    "[+]ping ok\n[+]log ok\n[-]etcd failed: reason withheld\nlivez check failed\n";
/// `/healthz`, which runs the checks `/livez` does.
pub const HEALTHZ_ETCD_DOWN: &str =
    "[+]ping ok\n[+]log ok\n[-]etcd failed: reason withheld\nhealthz check failed\n";
