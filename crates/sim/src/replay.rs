//! A replay server: answers a client's LISTs and WATCHes from a recorded script, byte for byte,
//! so a test can put a reflector through a stream the simulated server would never produce
//! (a malformed line, a duplicate event, a disconnect in the middle of a stream).
//!
//! The script format (`fixtures/watch/*.jsonl`, documented in `fixtures/README.md`) has one JSON
//! object per line, each with one key:
//! - `{"list": {"query": {…}, "status": 200, "body": {…}}}` answers the next request, which
//!   must be a LIST;
//! - `{"watch": {"query": {…}, "status": 200, "body": …}}` answers the next request, which must
//!   be a WATCH; its body is made of the lines after it, up to the next `list` or `watch`:
//!   - `{"event": {"type": "ADDED", "object": {…}}}` — one watch event, written as one line;
//!   - `{"raw": "text"}` — a line written verbatim (e.g. malformed JSON);
//!   - `{"cut": true}` — the connection is dropped here, without ending the body cleanly;
//! - `{"expect": {"events": […], "objects": {…}}}` — what a reflector fed this script must
//!   deliver; ignored by the server, read by tests;
//! - `{"note": "…"}` — a comment.
//!
//! Contract:
//! - Responses are served strictly in script order, one per request. In `query`, every listed
//!   parameter must be sent with that value (`null`: must not be sent); a request that does not
//!   match is answered 500 and recorded in [`ReplayServer::mismatches`].
//! - A watch body ends cleanly after its last line, like a server-side timeout, unless a `cut`
//!   drops the connection.
//! - Once the script is used up, every further request is held open with no answer: the
//!   client is left waiting, as on a quiet watch, and [`ReplayServer::exhausted`] resolves.
//! - The server runs on one task owned by the [`ReplayServer`]; [`ReplayServer::shutdown`] (or
//!   dropping it) stops it and every connection.

use std::collections::BTreeMap;
use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::Arc;

use bytes::Bytes;
use futures_util::stream;
use http::{Request, Response, StatusCode};
use http_body_util::combinators::BoxBody;
use http_body_util::{BodyExt, StreamBody};
use hyper::body::{Frame, Incoming};
use hyper::service::service_fn;
use hyper_util::rt::TokioIo;
use parking_lot::Mutex;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::watch;
use tokio::task::{JoinHandle, JoinSet};
use tokio_util::sync::CancellationToken;
use url::Url;

/// Why a script could not be read or the server could not start.
#[derive(Debug, thiserror::Error)]
pub enum ReplayError {
    /// A line is not one of the documented forms.
    #[error("script line {line}: {source}")]
    Parse {
        /// 1-based line number.
        line: usize,
        /// The JSON error.
        source: serde_json::Error,
    },
    /// An `event`, `raw` or `cut` line comes before any `watch` line.
    #[error("script line {line}: a watch body line outside a watch response")]
    Orphan {
        /// 1-based line number.
        line: usize,
    },
    /// The socket could not be bound.
    #[error("binding the replay server: {0}")]
    Bind(#[source] std::io::Error),
    /// The server's URL could not be formed.
    #[error("forming the replay server's URL: {0}")]
    Url(#[from] url::ParseError),
}

/// One line of a script file.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ScriptLine {
    /// The answer to a LIST.
    List(Answer),
    /// The start of the answer to a WATCH.
    Watch(Answer),
    /// One event of the current watch body.
    Event(Value),
    /// One verbatim line of the current watch body.
    Raw(String),
    /// Drop the connection here.
    Cut(bool),
    /// What a reflector must deliver.
    Expect(Expectation),
    /// A comment.
    Note(String),
}

/// A response and the request it answers.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Answer {
    /// Query parameters the request must carry (`null`: must not carry).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub query: BTreeMap<String, Option<String>>,
    /// Text the request's `Accept` header must contain, e.g. `as=PartialObjectMetadataList`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub accept: Option<String>,
    /// The HTTP status.
    #[serde(default = "ok", skip_serializing_if = "is_ok")]
    pub status: u16,
    /// The body: the list, or the Status of an error. A successful watch's body is its lines.
    #[serde(default, skip_serializing_if = "Value::is_null")]
    pub body: Value,
}

fn ok() -> u16 {
    200
}

fn is_ok(status: &u16) -> bool {
    *status == 200
}

/// What a reflector fed a script must deliver, in a compact text form: `replaced@RV key,key`,
/// `added KEY@RV`, `modified KEY@RV`, `deleted KEY@RV`, `bookmark@RV`; and the objects it must
/// end up holding, key → resourceVersion.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Expectation {
    /// Every sink event, in order.
    #[serde(default)]
    pub events: Vec<String>,
    /// The final objects.
    #[serde(default)]
    pub objects: BTreeMap<String, String>,
    /// How many watch lines must be skipped as malformed.
    #[serde(default)]
    pub malformed_events: u64,
}

/// A watch body line as served.
#[derive(Clone, Debug, PartialEq)]
enum BodyLine {
    Text(String),
    Cut,
}

/// One scripted response.
#[derive(Clone, Debug, PartialEq)]
struct Step {
    watch: bool,
    answer: Answer,
    lines: Vec<BodyLine>,
}

/// A parsed script: the responses in order, and the expectation if it states one.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Script {
    steps: Vec<Step>,
    /// What a reflector fed this script must deliver.
    pub expect: Option<Expectation>,
}

impl Script {
    /// Reads a script from its JSON-lines text (blank lines are skipped).
    pub fn parse(text: &str) -> Result<Script, ReplayError> {
        let mut script = Script::default();
        for (index, line) in text.lines().enumerate() {
            let number = index + 1;
            if line.trim().is_empty() {
                continue;
            }
            let parsed = serde_json::from_str(line).map_err(|source| ReplayError::Parse {
                line: number,
                source,
            })?;
            script.push(parsed, number)?;
        }
        Ok(script)
    }

    fn push(&mut self, line: ScriptLine, number: usize) -> Result<(), ReplayError> {
        let body_line = match line {
            ScriptLine::Event(event) => BodyLine::Text(event.to_string()),
            ScriptLine::Raw(text) => BodyLine::Text(text),
            ScriptLine::Cut(_) => BodyLine::Cut,
            ScriptLine::List(answer) => {
                self.start(false, answer);
                return Ok(());
            }
            ScriptLine::Watch(answer) => {
                self.start(true, answer);
                return Ok(());
            }
            ScriptLine::Expect(expect) => {
                self.expect = Some(expect);
                return Ok(());
            }
            ScriptLine::Note(_) => return Ok(()),
        };
        match self.steps.last_mut() {
            Some(step) if step.watch => {
                step.lines.push(body_line);
                Ok(())
            }
            _ => Err(ReplayError::Orphan { line: number }),
        }
    }

    fn start(&mut self, watch: bool, answer: Answer) {
        self.steps.push(Step {
            watch,
            answer,
            lines: Vec::new(),
        });
    }

    /// How many responses the script holds.
    pub fn len(&self) -> usize {
        self.steps.len()
    }

    /// Whether the script holds no response.
    pub fn is_empty(&self) -> bool {
        self.steps.is_empty()
    }
}

/// What the server has done so far.
#[derive(Debug, Default)]
struct Progress {
    next: usize,
    mismatches: Vec<String>,
}

struct Shared {
    steps: Vec<Step>,
    progress: Mutex<Progress>,
    /// Set once a request arrives after the last response.
    exhausted: watch::Sender<bool>,
}

/// A running replay server.
pub struct ReplayServer {
    url: Url,
    shared: Arc<Shared>,
    cancel: CancellationToken,
    task: Option<JoinHandle<()>>,
}

impl std::fmt::Debug for ReplayServer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ReplayServer")
            .field("url", &self.url.as_str())
            .finish_non_exhaustive()
    }
}

impl ReplayServer {
    /// Serves `script` on `127.0.0.1:<free port>` over plain HTTP/1.1.
    pub async fn start(script: Script) -> Result<ReplayServer, ReplayError> {
        let listener = TcpListener::bind(SocketAddr::from(([127, 0, 0, 1], 0)))
            .await
            .map_err(ReplayError::Bind)?;
        let addr = listener.local_addr().map_err(ReplayError::Bind)?;
        let url = Url::parse(&format!("http://{addr}"))?;
        let shared = Arc::new(Shared {
            steps: script.steps,
            progress: Mutex::default(),
            exhausted: watch::channel(false).0,
        });
        let cancel = CancellationToken::new();
        let task = tokio::spawn(accept_loop(listener, Arc::clone(&shared), cancel.clone()));
        Ok(ReplayServer {
            url,
            shared,
            cancel,
            task: Some(task),
        })
    }

    /// The base URL.
    pub fn url(&self) -> &Url {
        &self.url
    }

    /// How many responses have been served.
    pub fn served(&self) -> usize {
        self.shared
            .progress
            .lock()
            .next
            .min(self.shared.steps.len())
    }

    /// The requests that did not match the script, described.
    pub fn mismatches(&self) -> Vec<String> {
        self.shared.progress.lock().mismatches.clone()
    }

    /// Resolves once every response has been served and another request has arrived: the
    /// client has acted on everything the script said.
    pub async fn exhausted(&self) {
        let mut exhausted = self.shared.exhausted.subscribe();
        // The sender lives as long as `self`, so waiting cannot fail.
        let _ = exhausted.wait_for(|done| *done).await;
    }

    /// Stops accepting, drops every connection and waits for the server task.
    pub async fn shutdown(mut self) {
        self.cancel.cancel();
        if let Some(task) = self.task.take() {
            // The task ends on cancellation; a panic in it is already reported.
            let _ = task.await;
        }
    }
}

impl Drop for ReplayServer {
    fn drop(&mut self) {
        self.cancel.cancel();
        if let Some(task) = self.task.take() {
            task.abort();
        }
    }
}

async fn accept_loop(listener: TcpListener, shared: Arc<Shared>, cancel: CancellationToken) {
    let mut connections = JoinSet::new();
    loop {
        tokio::select! {
            () = cancel.cancelled() => break,
            accepted = listener.accept() => match accepted {
                Ok((stream, _)) => {
                    connections.spawn(serve(stream, Arc::clone(&shared), cancel.clone()));
                }
                Err(e) => tracing::warn!(error = %e, "replay server: accept failed"),
            },
            Some(_) = connections.join_next(), if !connections.is_empty() => {}
        }
    }
    connections.shutdown().await;
}

type Body = BoxBody<Bytes, std::io::Error>;

async fn serve(stream: TcpStream, shared: Arc<Shared>, cancel: CancellationToken) {
    let service = service_fn(move |request: Request<Incoming>| {
        let shared = Arc::clone(&shared);
        async move { Ok::<_, Infallible>(answer(&shared, &request).await) }
    });
    let connection =
        hyper::server::conn::http1::Builder::new().serve_connection(TokioIo::new(stream), service);
    tokio::select! {
        result = connection => {
            if let Err(e) = result {
                tracing::debug!(error = %e, "replay server: connection ended with an error");
            }
        }
        () = cancel.cancelled() => {}
    }
}

/// Takes the next scripted response for `request`.
async fn answer(shared: &Shared, request: &Request<Incoming>) -> Response<Body> {
    let query = query_pairs(request.uri().query());
    let is_watch = matches!(query.get("watch").map(String::as_str), Some("1" | "true"));
    let accept = request
        .headers()
        .get(http::header::ACCEPT)
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default();
    let step = {
        let mut progress = shared.progress.lock();
        let index = progress.next;
        progress.next += 1;
        match shared.steps.get(index) {
            Some(step) => match mismatch(step, is_watch, &query, accept) {
                None => Some(step.clone()),
                Some(why) => {
                    let text = format!("request {} ({}): {why}", index + 1, request.uri());
                    progress.mismatches.push(text.clone());
                    return respond(500, text.into_bytes());
                }
            },
            None => None,
        }
    };
    let Some(step) = step else {
        shared.exhausted.send_replace(true);
        return std::future::pending().await;
    };
    if step.watch && step.answer.status == 200 {
        return watch_response(step.lines);
    }
    let body = serde_json::to_vec(&step.answer.body).unwrap_or_default();
    respond(step.answer.status, body)
}

/// Why `request` does not match `step`, if it does not.
fn mismatch(
    step: &Step,
    is_watch: bool,
    query: &BTreeMap<String, String>,
    accept: &str,
) -> Option<String> {
    if step.watch != is_watch {
        let wanted = if step.watch { "a WATCH" } else { "a LIST" };
        return Some(format!("the script expects {wanted}"));
    }
    if let Some(wanted) = step.answer.accept.as_deref() {
        if !accept.contains(wanted) {
            return Some(format!(
                "Accept is {accept:?}, the script expects {wanted:?} in it"
            ));
        }
    }
    step.answer
        .query
        .iter()
        .find(|(name, wanted)| query.get(*name) != wanted.as_ref())
        .map(|(name, wanted)| {
            format!(
                "{name} is {:?}, the script expects {wanted:?}",
                query.get(name)
            )
        })
}

fn query_pairs(query: Option<&str>) -> BTreeMap<String, String> {
    url::form_urlencoded::parse(query.unwrap_or_default().as_bytes())
        .into_owned()
        .collect()
}

fn respond(status: u16, body: Vec<u8>) -> Response<Body> {
    let status = StatusCode::from_u16(status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    let body = http_body_util::Full::new(Bytes::from(body))
        .map_err(|never| match never {})
        .boxed();
    let mut response = Response::new(body);
    *response.status_mut() = status;
    response.headers_mut().insert(
        http::header::CONTENT_TYPE,
        http::HeaderValue::from_static("application/json"),
    );
    response
}

/// A streamed watch body: each line is its own chunk, and a cut ends the body with an error,
/// which makes the server drop the connection without the final chunk.
fn watch_response(lines: Vec<BodyLine>) -> Response<Body> {
    let frames = stream::unfold(lines.into_iter(), |mut lines| async move {
        let frame = match lines.next()? {
            BodyLine::Text(mut text) => {
                text.push('\n');
                Ok(Frame::data(Bytes::from(text)))
            }
            BodyLine::Cut => {
                // Let the connection write out what came before, then break it.
                tokio::task::yield_now().await;
                Err(std::io::Error::new(
                    std::io::ErrorKind::ConnectionReset,
                    "scripted cut",
                ))
            }
        };
        Some((frame, lines))
    });
    let mut response = Response::new(StreamBody::new(frames).boxed());
    response.headers_mut().insert(
        http::header::CONTENT_TYPE,
        http::HeaderValue::from_static("application/json"),
    );
    response
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_script_groups_body_lines_under_their_watch() {
        let text = r#"
{"note": "a comment"}
{"list": {"query": {"resourceVersion": "0"}, "body": {"metadata": {"resourceVersion": "5"}, "items": []}}}
{"watch": {"query": {"resourceVersion": "5", "sendInitialEvents": null}}}
{"event": {"type": "BOOKMARK", "object": {"metadata": {"resourceVersion": "6"}}}}
{"raw": "{not json"}
{"cut": true}
{"watch": {"status": 410, "body": {"kind": "Status", "code": 410}}}
{"expect": {"events": ["replaced@5 "], "objects": {}}}
"#;
        let script = Script::parse(text).unwrap();
        assert_eq!(script.len(), 3);
        let watch = &script.steps[1];
        assert!(watch.watch);
        assert_eq!(watch.answer.query["sendInitialEvents"], None);
        assert_eq!(watch.lines.len(), 3);
        assert_eq!(watch.lines[1], BodyLine::Text("{not json".into()));
        assert_eq!(watch.lines[2], BodyLine::Cut);
        assert_eq!(script.steps[2].answer.status, 410);
        assert_eq!(script.expect.unwrap().events, ["replaced@5 "]);
    }

    #[test]
    fn body_lines_need_a_watch_and_bad_lines_name_their_number() {
        let orphan = Script::parse(r#"{"event": {"type": "ADDED", "object": {}}}"#);
        assert!(matches!(orphan, Err(ReplayError::Orphan { line: 1 })));
        let bad = Script::parse("{\"note\": \"x\"}\n{\"lisst\": {}}");
        assert!(matches!(bad, Err(ReplayError::Parse { line: 2, .. })));
    }

    #[test]
    fn a_request_must_be_of_the_scripted_kind_and_carry_the_scripted_parameters() {
        let step = Step {
            watch: true,
            answer: Answer {
                query: BTreeMap::from([
                    ("resourceVersion".into(), Some("5".into())),
                    ("sendInitialEvents".into(), None),
                ]),
                ..Answer::default()
            },
            lines: Vec::new(),
        };
        let query = |pairs: &[(&str, &str)]| {
            pairs
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect::<BTreeMap<_, _>>()
        };
        let json = "application/json";
        let rv5 = query(&[("resourceVersion", "5")]);
        assert_eq!(mismatch(&step, true, &rv5, json), None);
        assert!(mismatch(&step, false, &rv5, json).is_some());
        assert!(mismatch(&step, true, &query(&[("resourceVersion", "4")]), json).is_some());
        let sent_initial = query(&[("resourceVersion", "5"), ("sendInitialEvents", "true")]);
        assert!(mismatch(&step, true, &sent_initial, json).is_some());
        let metadata_only = Step {
            answer: Answer {
                accept: Some("as=PartialObjectMetadata;".into()),
                ..step.answer.clone()
            },
            ..step.clone()
        };
        assert!(mismatch(&metadata_only, true, &rv5, json).is_some());
        let partial = "application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1";
        assert_eq!(mismatch(&metadata_only, true, &rv5, partial), None);
    }
}
