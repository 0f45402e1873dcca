//! `kube-gc record`: capture a live list+watch of one resource as a replay script
//! (`fixtures/watch/*.jsonl`, format in `fixtures/README.md`), written to standard output.
//!
//! A real [`Reflector`] drives the capture, so the requests are exactly those kube-gc makes
//! (first list `resourceVersion=0` in pages, watches from the last version, relists after a
//! 410, backoff): replaying the script to a reflector asks the same questions in the same order.
//! What the reflector reads goes through a [`Recorder`], which writes every list page, error
//! response and watch line as it passes — raw lines that are not JSON included — and a `cut`
//! where a connection broke. The server's own `Retry-After` resends are not in the script: the
//! client absorbs them.
//!
//! Secrets never reach the file: for `v1/secrets`, and for any object whose `kind` is `Secret`,
//! every value of `data` and `stringData` is replaced.
//!
//! The script has no `expect` line; add one by hand to make it a test fixture.

use std::io::Write;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use clap::Args;
use futures_util::{Stream, StreamExt, TryStreamExt};
use parking_lot::Mutex;
use serde_json::{json, Value};
use tokio_util::codec::{FramedRead, LinesCodec};
use tokio_util::io::StreamReader;
use tokio_util::sync::CancellationToken;
use url::Url;

use super::config::ConnectionArgs;
use crate::api::{List, WatchEvent};
use crate::client::config::{ClientConfig, ConfigError, Environment, LoadOptions};
use crate::client::{
    ApiRequest, BuildError, Client, ClientOptions, Discovery, Error, ListParams, ResourceRef,
    WatchParams,
};
use crate::duration::parse_duration;
use crate::runtime::reflector::{
    EventStream, ListWatch, Listed, Reflector, ReflectorConfig, ReflectorEvent, ReflectorSink,
};

/// What replaces each value of a Secret's `data` (base64 of `redacted`, so it still decodes).
const REDACTED_DATA: &str = "cmVkYWN0ZWQ=";

/// Flags of `kube-gc record`.
#[derive(Debug, Clone, Args)]
pub struct RecordArgs {
    /// The resource: a type as kubectl takes it (jobs, vcjob, jobs.batch; resolved by
    /// discovery), GROUP/VERSION/PLURAL (batch/v1/jobs), or VERSION/PLURAL for the core group
    /// (v1/pods).
    #[arg(long, value_name = "TYPE")]
    pub resource: String,

    /// Record one namespace; default: all namespaces.
    #[arg(short = 'n', long, value_name = "NS")]
    pub namespace: Option<String>,

    /// How long to record (Go duration syntax: 30s, 5m).
    #[arg(long, value_name = "DURATION", default_value = "30s", value_parser = parse_duration)]
    pub duration: Duration,

    #[command(flatten)]
    pub connection: ConnectionArgs,
}

/// Why `kube-gc record` failed.
#[derive(Debug, thiserror::Error)]
pub enum RecordError {
    /// `--resource` is not GROUP/VERSION/PLURAL or VERSION/PLURAL.
    #[error("--resource {0:?}: expected a type as kubectl takes it (jobs, vcjob, jobs.batch), GROUP/VERSION/PLURAL (batch/v1/jobs) or VERSION/PLURAL (v1/pods)")]
    Resource(String),
    /// A type (`jobs`) needs discovery, which failed.
    #[error("cannot read what the server serves to resolve --resource: {0}")]
    Discovery(#[source] crate::client::Error),
    /// Discovery does not know the type.
    #[error("--resource: {0}")]
    UnknownType(#[from] crate::explain::resolve::UnknownType),
    /// The connection configuration could not be loaded.
    #[error(transparent)]
    Config(#[from] ConfigError),
    /// The client could not be built from it.
    #[error("cannot build the API client: {0}")]
    Client(#[from] BuildError),
    /// The script could not be written.
    #[error("cannot write the recording: {0}")]
    Write(#[from] std::io::Error),
}

/// Runs `kube-gc record`.
pub async fn run(args: RecordArgs) -> Result<(), RecordError> {
    let options = LoadOptions {
        kubeconfig: args.connection.kubeconfig.clone(),
        context: args.connection.context.clone(),
    };
    let config = ClientConfig::load(&options, &Environment::from_process())?;
    let client = Client::new(&config, &ClientOptions::default())?;
    // A type as kubectl takes it (`jobs`, `vcjob`) is resolved by discovery, as `explain` does.
    let resource = if args.resource.contains('/') {
        parse_resource(&args.resource, args.namespace.is_some())?
    } else {
        let discovery = Discovery::run(&client)
            .await
            .map_err(RecordError::Discovery)?;
        crate::explain::resolve::resolve(&discovery, &args.resource)?
    };
    let url = resource.collection_url(client.server(), args.namespace.as_deref());
    let redact = resource.group.is_empty() && resource.plural == "secrets";
    let out = std::io::LineWriter::new(std::io::stdout());
    let summary = record(client, url, redact, args.duration, out).await?;
    super::output::eprint(&format!("kube-gc: recorded {summary}\n"));
    Ok(())
}

/// `batch/v1/jobs` or `v1/pods`. The kind is not needed to list or watch.
fn parse_resource(text: &str, namespaced: bool) -> Result<ResourceRef, RecordError> {
    let parts: Vec<&str> = text.split('/').collect();
    let (group, version, plural) = match parts.as_slice() {
        [version, plural] => ("", *version, *plural),
        [group, version, plural] => (*group, *version, *plural),
        _ => return Err(RecordError::Resource(text.to_owned())),
    };
    if version.is_empty() || plural.is_empty() {
        return Err(RecordError::Resource(text.to_owned()));
    }
    Ok(ResourceRef::new(group, version, plural, "", namespaced))
}

/// Records a reflector's list+watch of the collection at `url` for `duration` into `out`, and
/// answers a one-line summary.
pub async fn record<W: Write + Send + 'static>(
    client: Client,
    url: Url,
    redact: bool,
    duration: Duration,
    out: W,
) -> Result<String, RecordError> {
    let recorder = Recorder::new(out, redact);
    recorder.write(&json!({"note": format!("recorded by kube-gc record from {url}")}));
    let source = RecordingSource {
        client,
        url,
        recorder: recorder.clone(),
    };
    let reflector = Reflector::new(source, ReflectorConfig::default());
    let metrics = reflector.metrics();
    let cancel = CancellationToken::new();
    let stop = cancel.clone();
    let timer = tokio::spawn(async move {
        tokio::time::sleep(duration).await;
        stop.cancel();
    });
    reflector.run(Arc::new(Discard), cancel).await;
    timer.abort();
    recorder.finish()?;
    let m = metrics.snapshot();
    Ok(format!(
        "{} lists, {} watches, {} events ({} bookmarks), {} malformed lines",
        m.lists,
        m.watches,
        m.added + m.modified + m.deleted + m.bookmarks + m.errors,
        m.bookmarks,
        m.malformed_events
    ))
}

/// The reflector's sink while recording: the script is what matters, not the objects.
struct Discard;

impl ReflectorSink<Value> for Discard {
    fn apply(&self, _: ReflectorEvent<Value>) {}
}

/// Writes script lines, shared by the list and watch paths; keeps the first write error.
#[derive(Clone)]
struct Recorder {
    inner: Arc<Mutex<RecorderState>>,
    redact: bool,
}

struct RecorderState {
    out: Box<dyn Write + Send>,
    error: Option<std::io::Error>,
}

impl Recorder {
    fn new<W: Write + Send + 'static>(out: W, redact: bool) -> Self {
        Recorder {
            inner: Arc::new(Mutex::new(RecorderState {
                out: Box::new(out),
                error: None,
            })),
            redact,
        }
    }

    fn write(&self, line: &Value) {
        let mut state = self.inner.lock();
        if state.error.is_some() {
            return;
        }
        let mut text = line.to_string();
        text.push('\n');
        if let Err(e) = state.out.write_all(text.as_bytes()) {
            state.error = Some(e);
        }
    }

    /// Hides Secret values in `object` (an object, a list, or a watch event's object).
    fn redact(&self, object: &mut Value) {
        if let Some(items) = object.get_mut("items").and_then(Value::as_array_mut) {
            items.iter_mut().for_each(|item| self.redact(item));
        }
        let is_secret = self.redact || object.get("kind").and_then(Value::as_str) == Some("Secret");
        if !is_secret {
            return;
        }
        for (field, replacement) in [("data", REDACTED_DATA), ("stringData", "redacted")] {
            if let Some(values) = object.get_mut(field).and_then(Value::as_object_mut) {
                values
                    .values_mut()
                    .for_each(|v| *v = Value::from(replacement));
            }
        }
    }

    fn finish(&self) -> Result<(), std::io::Error> {
        let mut state = self.inner.lock();
        match state.error.take() {
            Some(e) => Err(e),
            None => state.out.flush(),
        }
    }
}

/// Lists and watches with raw requests, writing what it reads to the recorder.
struct RecordingSource {
    client: Client,
    url: Url,
    recorder: Recorder,
}

/// How often a list restarts after its continue token expired (as the client's pager).
const MAX_RESTARTS: u32 = crate::client::pager::MAX_RESTARTS;

impl RecordingSource {
    /// One page: recorded, then decoded.
    async fn page(&self, params: &ListParams) -> Result<List<Value>, Error> {
        let query = json!({
            "resourceVersion": params.resource_version,
            "limit": params.limit.map(|l| l.to_string()),
            "continue": params.continue_token,
        });
        let request = ApiRequest::get(self.url.clone()).with_query(&params.query());
        match self.client.send_for_bytes(&request).await {
            Ok(body) => {
                let mut page: Value = serde_json::from_slice(&body)
                    .map_err(|e| Error::decode("list page", &body, e))?;
                self.recorder.redact(&mut page);
                self.recorder
                    .write(&json!({"list": {"query": query, "body": page}}));
                serde_json::from_value(page).map_err(|e| Error::decode("list page", &body, e))
            }
            Err(e) => {
                self.recorder.write(&error_line("list", query, &e));
                Err(e)
            }
        }
    }
}

/// The script line for an error answer (a transport error has no status: recorded as a 503).
fn error_line(verb: &str, query: Value, error: &Error) -> Value {
    let status = error.code().unwrap_or(503);
    let body = error
        .status()
        .and_then(|s| serde_json::to_value(s).ok())
        .unwrap_or(Value::Null);
    json!({verb: {"query": query, "status": status, "body": body}})
}

impl ListWatch for RecordingSource {
    type Object = Value;

    async fn list(&self, params: &ListParams) -> Result<Listed<Value>, Error> {
        let mut all: Option<List<Value>> = None;
        let mut pages = 0;
        let mut restarts = 0;
        let mut next = params.clone();
        loop {
            let page = match self.page(&next).await {
                Ok(page) => page,
                Err(e)
                    if next.continue_token.is_some() && e.is_gone() && restarts < MAX_RESTARTS =>
                {
                    // As the client's pager: start the list over from its first page.
                    restarts += 1;
                    all = None;
                    pages = 0;
                    next = params.clone();
                    continue;
                }
                Err(e) => return Err(e),
            };
            next.continue_token = page.next_page().map(str::to_owned);
            let done = next.continue_token.is_none();
            pages += 1;
            match &mut all {
                Some(all) => {
                    all.items.extend(page.items);
                    all.metadata = page.metadata;
                }
                None => all = Some(page),
            }
            if done {
                return Ok(Listed {
                    list: all.unwrap_or_default(),
                    paged: pages > 1,
                });
            }
        }
    }

    async fn watch(&self, params: &WatchParams) -> Result<EventStream<Value>, Error> {
        let query = json!({
            "resourceVersion": params.resource_version,
            "allowWatchBookmarks": params.allow_bookmarks.then_some("true"),
            "sendInitialEvents": params.send_initial_events.then_some("true"),
        });
        let request = ApiRequest::get(self.url.clone())
            .with_query(&params.query())
            .streaming();
        let response = match self.client.send(&request).await {
            Ok(response) => response,
            Err(e) => {
                self.recorder.write(&error_line("watch", query, &e));
                return Err(e);
            }
        };
        self.recorder.write(&json!({"watch": {"query": query}}));
        let body = response.bytes_stream().map_err(std::io::Error::other);
        Ok(recorded_lines(body, self.recorder.clone()).boxed())
    }
}

/// Splits a watch body into lines, records each one, and decodes it as the client would.
fn recorded_lines<S>(
    body: S,
    recorder: Recorder,
) -> impl Stream<Item = Result<WatchEvent<Value>, Error>> + Send
where
    S: Stream<Item = Result<Bytes, std::io::Error>> + Send + 'static,
{
    FramedRead::new(StreamReader::new(body), LinesCodec::new()).filter_map(move |line| {
        let item = match line {
            Ok(line) if line.trim().is_empty() => None,
            Ok(line) => Some(record_line(&recorder, &line)),
            Err(e) => {
                recorder.write(&json!({"cut": true}));
                Some(Err(Error::Connection {
                    source: Box::new(e),
                }))
            }
        };
        std::future::ready(item)
    })
}

fn record_line(recorder: &Recorder, line: &str) -> Result<WatchEvent<Value>, Error> {
    let mut event: Value = match serde_json::from_str(line) {
        Ok(event) => event,
        Err(e) => {
            recorder.write(&json!({"raw": line}));
            return Err(Error::decode("watch event", line.as_bytes(), e));
        }
    };
    if let Some(object) = event.get_mut("object") {
        recorder.redact(object);
    }
    recorder.write(&json!({"event": event}));
    serde_json::from_value(event).map_err(|e| Error::decode("watch event", line.as_bytes(), e))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::api::Job;
    use crate::client::Api;
    use crate::sim::kubeconfig::KubeconfigSpec;
    use crate::sim::replay::{ReplayServer, Script};
    use crate::sim::{Connect, Gvr, SimConfig, SimServer};

    #[test]
    fn resources_are_group_version_plural_or_core_version_plural() {
        let jobs = parse_resource("batch/v1/jobs", true).unwrap();
        assert_eq!(
            (jobs.group.as_str(), jobs.version.as_str()),
            ("batch", "v1")
        );
        assert_eq!(jobs.plural, "jobs");
        let pods = parse_resource("v1/pods", false).unwrap();
        assert_eq!((pods.group.as_str(), pods.plural.as_str()), ("", "pods"));
        for bad in ["jobs", "a/b/c/d", "batch//jobs", ""] {
            assert!(parse_resource(bad, false).is_err(), "{bad}");
        }
    }

    #[test]
    fn secret_values_are_redacted_in_objects_and_lists() {
        let recorder = Recorder::new(std::io::sink(), false);
        let mut secret = json!({"kind": "Secret", "data": {"password": "aHVudGVyMg=="},
            "stringData": {"token": "t"}});
        recorder.redact(&mut secret);
        assert_eq!(secret["data"]["password"], REDACTED_DATA);
        assert_eq!(secret["stringData"]["token"], "redacted");
        // List items carry no kind: the resource decides.
        let mut list = json!({"items": [{"data": {"k": "dg=="}}]});
        Recorder::new(std::io::sink(), true).redact(&mut list);
        assert_eq!(list["items"][0]["data"]["k"], REDACTED_DATA);
        let mut config_map = json!({"kind": "ConfigMap", "data": {"k": "v"}});
        recorder.redact(&mut config_map);
        assert_eq!(config_map["data"]["k"], "v");
    }

    /// A `Write` the test can read back after the recorder is done with it.
    #[derive(Clone, Default)]
    struct Shared(Arc<Mutex<Vec<u8>>>);

    impl Write for Shared {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            self.0.lock().extend_from_slice(buf);
            Ok(buf.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    #[tokio::test(start_paused = true)]
    async fn a_recording_of_the_sim_is_a_script_that_replays() {
        let sim = SimServer::start(SimConfig::default()).await.unwrap();
        let jobs = Gvr::new("batch", "v1", "jobs");
        let job =
            |name: &str| json!({"metadata": {"name": name, "namespace": "default"}, "spec": {}});
        sim.create(&jobs, job("before")).unwrap();
        let dir = tempfile::tempdir().unwrap();
        let config = sim.client_config(&dir.path().join("kubeconfig")).unwrap();
        let client = Client::new(&config, &ClientOptions::default().without_timeouts()).unwrap();
        let url = parse_resource("batch/v1/jobs", true)
            .unwrap()
            .collection_url(client.server(), Some("default"));

        let out = Shared::default();
        let recording = tokio::spawn(record(
            client,
            url,
            false,
            Duration::from_secs(30),
            out.clone(),
        ));
        // Let the list and the watch start, then change something.
        tokio::time::sleep(Duration::from_secs(1)).await;
        sim.create(&jobs, job("during")).unwrap();
        let summary = recording.await.unwrap().unwrap();
        assert!(summary.starts_with("1 lists"), "{summary}");

        let text = String::from_utf8(out.0.lock().clone()).unwrap();
        let script = Script::parse(&text).unwrap();
        assert!(script.len() >= 2, "{text}");
        let lines: Vec<Value> = text
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        assert_eq!(lines[1]["list"]["query"]["resourceVersion"], "0");
        assert_eq!(
            lines[1]["list"]["body"]["items"][0]["metadata"]["name"],
            "before"
        );
        assert!(lines[2]["watch"]["query"]["resourceVersion"].is_string());
        let added = lines
            .iter()
            .find(|l| l["event"]["type"] == "ADDED")
            .expect("the ADDED event was recorded");
        assert_eq!(added["event"]["object"]["metadata"]["name"], "during");

        // Replayed to a reflector, the script asks the same questions and ends in the same state.
        let server = ReplayServer::start(script).await.unwrap();
        let spec = KubeconfigSpec {
            server: server.url().clone(),
            ca_pem: None,
            token: None,
            client_cert: None,
            namespace: None,
            context_name: "replay".into(),
        };
        let config = spec
            .client_config(&dir.path().join("replay-kubeconfig"))
            .unwrap();
        let client = Client::new(&config, &ClientOptions::default().without_timeouts()).unwrap();
        let api: Api<Value> = Api::dynamic(client, ResourceRef::of::<Job>(), Some("default"));
        let sink = Arc::new(Keys::default());
        let cancel = CancellationToken::new();
        let replaying = tokio::spawn(
            Reflector::new(api, ReflectorConfig::default()).run(Arc::clone(&sink), cancel.clone()),
        );
        server.exhausted().await;
        cancel.cancel();
        replaying.await.unwrap();
        assert_eq!(server.mismatches(), Vec::<String>::new());
        assert_eq!(
            *sink.0.lock(),
            ["before", "during"].map(String::from).into()
        );
        server.shutdown().await;
        sim.shutdown().await;
    }

    /// The names a reflector's events leave in a cache.
    #[derive(Default)]
    struct Keys(Mutex<std::collections::BTreeSet<String>>);

    impl ReflectorSink<Value> for Keys {
        fn apply(&self, event: ReflectorEvent<Value>) {
            let name = |o: &Value| {
                o["metadata"]["name"]
                    .as_str()
                    .unwrap_or_default()
                    .to_owned()
            };
            let mut keys = self.0.lock();
            match event {
                ReflectorEvent::Replaced { objects, .. } => {
                    *keys = objects.iter().map(name).collect();
                }
                ReflectorEvent::Added(o) | ReflectorEvent::Modified(o) => {
                    keys.insert(name(&o));
                }
                ReflectorEvent::Deleted(o) => {
                    keys.remove(&name(&o));
                }
                ReflectorEvent::Bookmark { .. } => {}
            }
        }
    }
}
