//! Helpers shared by the `tests/sim_*.rs` suites: starting a server, talking to it with
//! reqwest, reading watch streams line by line, and loading the real API server captures.
#![allow(dead_code)]

use std::path::Path;

use kube_gc::sim::{Gvr, SimConfig, SimServer};
use serde_json::{json, Value};

/// A plain-HTTP server with the `capture` namespace the captures use.
pub async fn start(config: SimConfig) -> SimServer {
    let mut config = config;
    config.namespaces.push("capture".to_string());
    match SimServer::start(config).await {
        Ok(server) => server,
        Err(e) => panic!("starting the simulated server: {e}"),
    }
}

/// A reqwest client for plain HTTP.
pub fn client() -> reqwest::Client {
    client_trusting(None)
}

/// A reqwest client using the ring provider explicitly (reqwest is built without a default
/// provider), trusting `ca_pem` when given.
pub fn client_trusting(ca_pem: Option<&str>) -> reqwest::Client {
    client_with_identity(ca_pem, None)
}

/// Like [`client_trusting`], presenting a client certificate `(cert_pem, key_pem)` when given.
pub fn client_with_identity(
    ca_pem: Option<&str>,
    identity: Option<(&str, &str)>,
) -> reqwest::Client {
    use rustls_pki_types::pem::PemObject;
    use rustls_pki_types::CertificateDer;
    let mut roots = rustls::RootCertStore::empty();
    if let Some(pem) = ca_pem {
        for cert in CertificateDer::pem_slice_iter(pem.as_bytes()).flatten() {
            let _ = roots.add(cert);
        }
    }
    let provider = std::sync::Arc::new(rustls::crypto::ring::default_provider());
    let builder = match rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
    {
        Ok(builder) => builder.with_root_certificates(roots),
        Err(e) => panic!("rustls client config: {e}"),
    };
    let mut tls = match identity {
        None => builder.with_no_client_auth(),
        Some((cert_pem, key_pem)) => {
            let cert = CertificateDer::from_pem_slice(cert_pem.as_bytes());
            let key = rustls_pki_types::PrivateKeyDer::from_pem_slice(key_pem.as_bytes());
            let config = match (cert, key) {
                (Ok(cert), Ok(key)) => builder.with_client_auth_cert(vec![cert], key),
                _ => panic!("client identity PEM does not parse"),
            };
            match config {
                Ok(config) => config,
                Err(e) => panic!("client identity: {e}"),
            }
        }
    };
    tls.alpn_protocols = vec![b"h2".to_vec(), b"http/1.1".to_vec()];
    match reqwest::Client::builder()
        .tls_backend_preconfigured(tls)
        .build()
    {
        Ok(client) => client,
        Err(e) => panic!("building the reqwest client: {e}"),
    }
}

/// `url` joined with `path_and_query`.
pub fn url(server: &SimServer, path_and_query: &str) -> String {
    format!(
        "{}{}",
        server.url().as_str().trim_end_matches('/'),
        path_and_query
    )
}

/// The batch/v1 jobs resource.
pub fn jobs() -> Gvr {
    Gvr::new("batch", "v1", "jobs")
}

/// The core/v1 configmaps resource.
pub fn configmaps() -> Gvr {
    Gvr::new("", "v1", "configmaps")
}

/// A minimal Job in namespace `capture`.
pub fn job(name: &str) -> Value {
    json!({"apiVersion": "batch/v1", "kind": "Job",
        "metadata": {"name": name, "namespace": "capture", "labels": {"app": "capture"}},
        "spec": {"template": {"spec": {"restartPolicy": "Never",
            "containers": [{"name": "main", "image": "busybox:1.36"}]}}}})
}

/// Creates a Job in `capture` through the in-process API.
pub fn create_job(server: &SimServer, name: &str) -> Value {
    match server.create(&jobs(), job(name)) {
        Ok(obj) => obj,
        Err(e) => panic!("creating job {name}: {e}"),
    }
}

/// `metadata.resourceVersion` as a number.
pub fn rv(obj: &Value) -> u64 {
    obj["metadata"]["resourceVersion"]
        .as_str()
        .and_then(|rv| rv.parse().ok())
        .unwrap_or(0)
}

/// The captured exchange whose file name starts with `prefix` (e.g. `"13-"`).
pub fn exchange(prefix: &str) -> Value {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/real-apiserver/exchanges");
    let entries = match std::fs::read_dir(&dir) {
        Ok(entries) => entries,
        Err(e) => panic!("reading {}: {e}", dir.display()),
    };
    for entry in entries.flatten() {
        if entry.file_name().to_string_lossy().starts_with(prefix) {
            let text = std::fs::read_to_string(entry.path()).unwrap_or_default();
            return serde_json::from_str(&text).unwrap_or(Value::Null);
        }
    }
    panic!("no captured exchange {prefix}");
}

/// The response body of a captured exchange.
pub fn captured_body(prefix: &str) -> Value {
    exchange(prefix)["response"]["body"].clone()
}

/// The binary (protobuf) response body of a captured exchange (`response.body_base64`).
pub fn captured_bytes(prefix: &str) -> Vec<u8> {
    from_base64(&exchange(prefix)["response"]["body_base64"])
}

/// The chunks of a captured binary (protobuf) watch, split as they arrived
/// (`response.chunks_base64`).
pub fn captured_chunks(prefix: &str) -> Vec<Vec<u8>> {
    let exchange = exchange(prefix);
    let chunks = exchange["response"]["chunks_base64"].as_array().cloned();
    chunks
        .unwrap_or_else(|| panic!("exchange {prefix} has no chunks_base64"))
        .iter()
        .map(from_base64)
        .collect()
}

fn from_base64(text: &Value) -> Vec<u8> {
    use base64::Engine as _;
    let text = text.as_str().expect("base64 text");
    base64::engine::general_purpose::STANDARD
        .decode(text)
        .expect("base64")
}

/// Status code and JSON body of a response.
pub async fn status_and_json(response: reqwest::Response) -> (u16, Value) {
    let code = response.status().as_u16();
    let body = response.bytes().await.unwrap_or_default();
    let json = serde_json::from_slice(&body).unwrap_or(Value::Null);
    (code, json)
}

/// Sends a request and returns its status and JSON body.
pub async fn send(request: reqwest::RequestBuilder) -> (u16, Value) {
    match request.send().await {
        Ok(response) => status_and_json(response).await,
        Err(e) => panic!("request failed: {e}"),
    }
}

/// Reads a watch response one JSON line at a time, however the transport splits it.
pub struct Lines {
    response: reqwest::Response,
    buffer: Vec<u8>,
}

impl Lines {
    /// Wraps a watch response.
    pub fn new(response: reqwest::Response) -> Lines {
        Lines {
            response,
            buffer: Vec::new(),
        }
    }

    /// The next event, or `None` when the stream ended.
    pub async fn next(&mut self) -> Option<Value> {
        loop {
            if let Some(end) = self.buffer.iter().position(|b| *b == b'\n') {
                let line: Vec<u8> = self.buffer.drain(..=end).collect();
                return serde_json::from_slice(&line).ok();
            }
            match self.response.chunk().await {
                Ok(Some(chunk)) => self.buffer.extend_from_slice(&chunk),
                _ => return None,
            }
        }
    }

    /// Reads `n` events (fewer if the stream ends first).
    pub async fn take(&mut self, n: usize) -> Vec<Value> {
        let mut events = Vec::new();
        while events.len() < n {
            match self.next().await {
                Some(event) => events.push(event),
                None => break,
            }
        }
        events
    }

    /// Reads every event until the stream ends.
    pub async fn rest(&mut self) -> Vec<Value> {
        let mut events = Vec::new();
        while let Some(event) = self.next().await {
            events.push(event);
        }
        events
    }
}

/// `(type, metadata.name)` of each event (the resourceVersion for bookmarks).
pub fn summary(events: &[Value]) -> Vec<(String, String)> {
    events
        .iter()
        .map(|e| {
            let kind = e["type"].as_str().unwrap_or_default().to_string();
            let meta = &e["object"]["metadata"];
            let what = if kind == "BOOKMARK" {
                meta["resourceVersion"].as_str().unwrap_or_default()
            } else {
                meta["name"].as_str().unwrap_or_default()
            };
            (kind, what.to_string())
        })
        .collect()
}

/// Replaces every string value at `key` (anywhere in `value`) with `"<key>"`, so bodies that
/// differ only in names, uids or timestamps compare equal.
pub fn redact(value: &mut Value, keys: &[&str]) {
    match value {
        Value::Object(map) => {
            for (k, v) in map.iter_mut() {
                if keys.contains(&k.as_str()) && v.is_string() {
                    *v = Value::from(format!("<{k}>"));
                } else {
                    redact(v, keys);
                }
            }
        }
        Value::Array(items) => items.iter_mut().for_each(|v| redact(v, keys)),
        _ => {}
    }
}
