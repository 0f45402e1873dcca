//! WATCH: a long-lived response streaming one event at a time.
//!
//! Contract (a v1.28 server):
//! - HTTP 200, `Content-Type: application/json`, chunked; each event is one line
//!   `{"type":"ADDED|MODIFIED|DELETED|BOOKMARK|ERROR","object":…}` flushed on its own.
//! - Or, when the `Accept` header asks for protobuf first ([`encoding`]), `Content-Type:
//!   application/vnd.kubernetes.protobuf;stream=watch`, each event one length-prefixed
//!   `WatchEvent` frame whose object is a whole protobuf body (exchanges 103, 104, 106, 108).
//!   An event the tables cannot write ends the stream, as the real server's encoding failure
//!   does.
//! - `resourceVersion` unset or `0`: synthetic `ADDED` for every current object, then live
//!   changes. `resourceVersion=N` inside the history window: every change after N is replayed,
//!   then live (exchanges 22, 52). Older than the window: one `ERROR` event carrying the 410
//!   `Expired` Status, then the stream ends (exchange 55).
//! - `timeoutSeconds` ends the stream; with `allowWatchBookmarks=true` a BOOKMARK (only kind,
//!   apiVersion and `metadata.resourceVersion`, exchange 20) is sent every bookmark interval and
//!   once just before the timeout ends the stream.
//! - `sendInitialEvents=true` (WatchList) when enabled: `ADDED` for all objects then a BOOKMARK
//!   annotated `k8s.io/initial-events-end: "true"`; when disabled, 422 like a v1.28 server with
//!   the `WatchList` gate off.
//! - Injected watch cuts (after N events or a duration) end the stream early; a watcher that
//!   falls too far behind is dropped by the store and its stream ends after what it has queued.
//!
//! The stream is a future-driven state machine polled by the connection: it needs no task of
//! its own, and dropping it (client gone, server stopping) unregisters the watcher.

use std::collections::VecDeque;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use futures_util::stream;
use http::header::ACCEPT;
use http::Response;
use http_body_util::{BodyExt, StreamBody};
use hyper::body::Frame;
use serde_json::Value;
use tokio::sync::mpsc;
use tokio::time::Instant;

use super::encoding::{self, Encoding};
use super::errors::{store_error_status, HandlerError};
use super::protobuf::{self, FrameEncoder};
use super::read::request_filter;
use super::response::{self, Body};
use super::route::Target;
use super::watch_line::Encoder;
use super::{Context, Incoming};
use crate::resources::ResourceDef;
use crate::stamped::Stamped;
use crate::status::{self, Cause, CauseType, GroupKind};
use crate::store::{Store, StoreError, WatchItem, WatchStart, WatcherId};
use kube_gc_core::clock::sleep_until_some;
use kube_gc_protobuf::encode::EncodeError;

/// WATCH of a collection.
pub fn watch(
    ctx: &Context,
    incoming: &Incoming,
    target: &Target,
) -> Result<Response<Body>, HandlerError> {
    let start = watch_start(ctx, incoming)?;
    let def = ctx.store.resources().def(target.resource);
    let filter = request_filter(incoming, target, def)?;
    let encoder = Events::negotiate(def, incoming.header(ACCEPT))?;
    let registration = match ctx.store.watch(target.resource, filter, start) {
        Ok(registration) => registration,
        Err(e @ StoreError::WatchTooOld { .. }) => {
            // Too old: HTTP 200 and a single ERROR event (exchanges 55, 104).
            let (_, body) = store_error_status(&e, ctx.store.resources());
            let error = encoder.error(body);
            return Ok(encoder.responder()(response::full(error)));
        }
        Err(e) => return Err(e.into()),
    };
    let limits = Limits::of(ctx, incoming);
    let now = Instant::now();
    let state = WatchStream {
        guard: Registration {
            store: Arc::clone(&ctx.store),
            id: registration.id,
        },
        pending: registration.initial.into(),
        live: registration.live,
        encoder,
        deadline: limits.deadline.map(|d| now + d),
        final_bookmark: limits.bookmarks && limits.ends_by_timeout,
        bookmark_interval: ctx.bookmark_interval,
        next_bookmark: limits.bookmarks.then(|| now + ctx.bookmark_interval),
        events_left: limits.max_events,
        closing: false,
        done: false,
    };
    let respond = state.encoder.responder();
    let lines = stream::unfold(state, |mut state| async move {
        let line = state.next_line().await?;
        Some((Ok(Frame::data(line)), state))
    });
    Ok(respond(StreamBody::new(lines).boxed()))
}

/// The writer of a watch's events in the negotiated encoding: JSON lines, or protobuf frames.
enum Events {
    Json(Encoder),
    Protobuf(FrameEncoder),
}

impl Events {
    /// The encoding `accept` asks for (see [`encoding`]); 406 when none can be written.
    fn negotiate(def: &ResourceDef, accept: Option<&str>) -> Result<Events, HandlerError> {
        match encoding::for_resource(accept, def) {
            Encoding::Json(representation) => Ok(Events::Json(Encoder::new(def, representation))),
            Encoding::Protobuf { representation, .. } => {
                Ok(Events::Protobuf(FrameEncoder::new(def, representation)))
            }
            Encoding::NotAcceptable => Err(HandlerError::Status(status::not_acceptable())),
        }
    }

    /// An ADDED, MODIFIED or DELETED event; `None` ends the stream.
    fn event(&mut self, event_type: &str, object: &Stamped) -> Option<Bytes> {
        match self {
            Events::Json(encoder) => Some(encoder.event(event_type, object)),
            Events::Protobuf(encoder) => written(encoder.event(event_type, object)),
        }
    }

    /// A BOOKMARK; `None` ends the stream.
    fn bookmark(&self, rv: u64, initial_events_end: bool) -> Option<Bytes> {
        match self {
            Events::Json(encoder) => Some(encoder.bookmark(rv, initial_events_end)),
            Events::Protobuf(encoder) => written(encoder.bookmark(rv, initial_events_end)),
        }
    }

    /// The ERROR event carrying a `Status`.
    fn error(&self, status_body: Value) -> Bytes {
        match self {
            Events::Json(_) => {
                let event = status::watch_error_event(status_body);
                let mut line = serde_json::to_vec(&event).unwrap_or_default();
                line.push(b'\n');
                Bytes::from(line)
            }
            // Every `Status` the server builds fits the table.
            Events::Protobuf(_) => protobuf::error_frame(&status_body).unwrap_or_default(),
        }
    }

    /// What makes the response streaming a body with this encoding's `Content-Type`.
    fn responder(&self) -> fn(Body) -> Response<Body> {
        match self {
            Events::Json(_) => response::streaming,
            Events::Protobuf(_) => response::protobuf_watch,
        }
    }
}

/// A frame, or `None` for an object the tables cannot write: the real server ends the watch
/// when an event fails to encode (`watch.go`), and so does this one, saying why in the log.
fn written(frame: Result<Bytes, EncodeError>) -> Option<Bytes> {
    frame
        .map_err(
            |error| tracing::warn!(%error, "ending a protobuf watch: an event cannot be written"),
        )
        .ok()
}

/// How long a watch may run and what it may send.
struct Limits {
    /// When the stream ends: `timeoutSeconds` or an injected cut, whichever comes first.
    deadline: Option<Duration>,
    /// Whether the deadline is the client's own timeout (then a final BOOKMARK precedes it).
    ends_by_timeout: bool,
    /// `allowWatchBookmarks=true`.
    bookmarks: bool,
    /// An injected cut after this many events.
    max_events: Option<u64>,
}

impl Limits {
    fn of(ctx: &Context, incoming: &Incoming) -> Limits {
        let budget = ctx.faults.watch_budget();
        let timeout = incoming
            .query("timeoutSeconds")
            .and_then(|t| t.parse::<u64>().ok())
            .filter(|t| *t > 0)
            .map(Duration::from_secs);
        let deadline = match (timeout, budget.max_duration) {
            (Some(t), Some(cut)) => Some(t.min(cut)),
            (t, cut) => t.or(cut),
        };
        Limits {
            deadline,
            ends_by_timeout: timeout.is_some() && deadline == timeout,
            bookmarks: incoming.query("allowWatchBookmarks") == Some("true"),
            max_events: budget.max_events,
        }
    }
}

/// Where the watch starts, after the checks a v1.28 server makes on watch parameters.
fn watch_start(ctx: &Context, incoming: &Incoming) -> Result<WatchStart, HandlerError> {
    let send_initial = incoming.query("sendInitialEvents");
    let rv_match = incoming
        .query("resourceVersionMatch")
        .filter(|m| !m.is_empty());
    let mut causes = Vec::new();
    if send_initial.is_some() {
        if rv_match != Some("NotOlderThan") {
            causes.push(forbidden(
                "resourceVersionMatch",
                "sendInitialEvents requires setting resourceVersionMatch to NotOlderThan",
            ));
        }
        if !ctx.watch_list_enabled {
            causes.push(forbidden(
                "sendInitialEvents",
                "sendInitialEvents is forbidden for watch unless the WatchList feature gate is enabled",
            ));
        }
    } else if rv_match.is_some() {
        causes.push(forbidden(
            "resourceVersionMatch",
            "resourceVersionMatch is forbidden for watch unless sendInitialEvents is provided",
        ));
    }
    if !causes.is_empty() {
        let gk = GroupKind::new("meta.k8s.io", "ListOptions");
        return Err(HandlerError::Status(status::invalid(&gk, "", &causes)));
    }
    let rv = incoming
        .query("resourceVersion")
        .filter(|rv| !rv.is_empty());
    if send_initial == Some("true") {
        if let Some(rv) = rv {
            let requested = parse_rv(rv)?;
            let current = ctx.store.resource_version();
            if requested > current {
                return Err(StoreError::TooLargeResourceVersion {
                    requested,
                    current,
                    retry_after_seconds: 1,
                }
                .into());
            }
        }
        return Ok(WatchStart::InitialEventsThenBookmark);
    }
    match rv {
        // sendInitialEvents defaults to true only for an unset or "0" resourceVersion (for
        // backward compatibility); an explicit false means no synthetic ADDED events, so such a
        // watch starts at the current version.
        None | Some("0") if send_initial == Some("false") => {
            Ok(WatchStart::After(ctx.store.resource_version()))
        }
        None | Some("0") => Ok(WatchStart::Current),
        Some(rv) => Ok(WatchStart::After(parse_rv(rv)?)),
    }
}

fn parse_rv(rv: &str) -> Result<u64, HandlerError> {
    rv.parse()
        .map_err(|_| HandlerError::bad_request(format!("invalid resource version: {rv}")))
}

fn forbidden(field: &str, detail: &str) -> Cause {
    Cause {
        kind: CauseType::Forbidden,
        field: field.to_string(),
        value: Value::Null,
        detail: detail.to_string(),
    }
}

/// Unregisters the watcher when the stream is dropped.
struct Registration {
    store: Arc<Store>,
    id: WatcherId,
}

impl Drop for Registration {
    fn drop(&mut self) {
        self.store.unwatch(self.id);
    }
}

struct WatchStream {
    guard: Registration,
    /// Initial events (replay or synthetic ADDED), sent before anything live.
    pending: VecDeque<WatchItem>,
    live: mpsc::Receiver<WatchItem>,
    encoder: Events,
    /// When the stream ends (timeoutSeconds or an injected cut).
    deadline: Option<Instant>,
    /// Whether a BOOKMARK goes out just before the timeout ends the stream.
    final_bookmark: bool,
    bookmark_interval: Duration,
    next_bookmark: Option<Instant>,
    /// Events still allowed by an injected cut.
    events_left: Option<u64>,
    /// A final bookmark was requested; the stream ends once it is written.
    closing: bool,
    done: bool,
}

impl WatchStream {
    /// The next line to write, or `None` when the stream ends.
    async fn next_line(&mut self) -> Option<Bytes> {
        loop {
            if self.done {
                return None;
            }
            let item = match self.pending.pop_front() {
                Some(item) => item,
                None => self.wait_live().await?,
            };
            match item {
                WatchItem::Event { event_type, object } => {
                    if let Some(left) = self.events_left.as_mut() {
                        if *left == 0 {
                            return None;
                        }
                        *left -= 1;
                        // Cut right after the last allowed event rather than at the next one.
                        self.done = *left == 0;
                    }
                    return self.encoder.event(event_type, &object);
                }
                WatchItem::Bookmark {
                    rv,
                    initial_events_end,
                } => {
                    if self.next_bookmark.is_none() && !initial_events_end {
                        continue;
                    }
                    self.done = self.closing;
                    return self.encoder.bookmark(rv, initial_events_end);
                }
            }
        }
    }

    /// Waits for a live item, handling timers on the way; `None` ends the stream.
    async fn wait_live(&mut self) -> Option<WatchItem> {
        loop {
            let deadline = self.deadline.filter(|_| !self.closing);
            let bookmark_at = self.next_bookmark.filter(|_| !self.closing);
            // An item already queued is taken without arming the two timers: each would be put
            // in the runtime's timer wheel and taken out again, under its lock, for every
            // event of a burst. Neither timer is due (checked against the clock), so nothing
            // waits longer for it.
            let now = Instant::now();
            if deadline.is_none_or(|at| at > now) && bookmark_at.is_none_or(|at| at > now) {
                if let Ok(item) = self.live.try_recv() {
                    return Some(item);
                }
            }
            tokio::select! {
                item = self.live.recv() => return item,
                _ = sleep_until_some(deadline), if deadline.is_some() => {
                    if !self.final_bookmark {
                        return None;
                    }
                    // Queue a bookmark behind everything already delivered, end after it.
                    self.closing = true;
                    self.guard.store.request_bookmark(self.guard.id);
                }
                _ = sleep_until_some(bookmark_at), if bookmark_at.is_some() => {
                    self.next_bookmark = Some(Instant::now() + self.bookmark_interval);
                    self.guard.store.request_bookmark(self.guard.id);
                }
            }
        }
    }
}
