//! Helpers shared by the `tests/client_*.rs` suites: a simulated API server and a [`Client`]
//! configured for it the way a user would be — through a kubeconfig file the server writes.
#![allow(dead_code)] // Each test crate uses a different subset.

use std::path::Path;

use base64::Engine;
use kube_gc::client::config::{ClientConfig, Environment, LoadOptions};
use kube_gc::client::{Client, ClientOptions};
use kube_gc::sim::journal::JournalEntry;
use kube_gc::sim::Connect as _;
use kube_gc::sim::{Gvr, SimConfig, SimServer};
use serde_json::{json, Value};

/// A running simulated server and a client pointed at it.
pub struct Harness {
    /// The server.
    pub sim: SimServer,
    /// A client configured from the server's kubeconfig.
    pub client: Client,
    /// Holds the kubeconfig file.
    pub dir: tempfile::TempDir,
}

/// A plain-HTTP server with default resources and an unthrottled client.
pub async fn start() -> Harness {
    start_with(SimConfig::default(), unthrottled()).await
}

/// A server with `config` and a client with `options`.
pub async fn start_with(config: SimConfig, options: ClientOptions) -> Harness {
    let sim = match SimServer::start(config).await {
        Ok(sim) => sim,
        Err(e) => panic!("starting the simulated server: {e}"),
    };
    let dir = tempfile::tempdir().unwrap();
    let client = client_for(&sim, &dir, &options);
    Harness { sim, client, dir }
}

/// Client options without throttling, so tests that are not about it run at full speed.
pub fn unthrottled() -> ClientOptions {
    ClientOptions::default().with_rate(0.0, 1)
}

/// The configuration a user would get from the server's kubeconfig.
pub fn config_for(sim: &SimServer, dir: &tempfile::TempDir) -> ClientConfig {
    sim.client_config(&dir.path().join("kubeconfig")).unwrap()
}

/// A hand-written kubeconfig for `sim` (trusting its CA if it has one), for what the server's own
/// kubeconfig cannot express: `cluster_extra` is appended to the cluster entry (e.g.
/// `"\n    proxy-url: socks5://…"`), and the one user is `user_name` with `user_yaml` as the value
/// of its `user:` key (`"{}"`, or an indented block). Written to `dir/file_name` and loaded with
/// `env`, as a user's kubeconfig would be.
pub fn custom_config(
    sim: &SimServer,
    dir: &Path,
    file_name: &str,
    cluster_extra: &str,
    user_name: &str,
    user_yaml: &str,
    env: &Environment,
) -> ClientConfig {
    let ca = sim
        .ca_pem()
        .map(|pem| base64::engine::general_purpose::STANDARD.encode(pem))
        .map(|data| format!("\n    certificate-authority-data: {data}"))
        .unwrap_or_default();
    let kubeconfig = format!(
        r#"apiVersion: v1
kind: Config
current-context: sim
clusters:
- name: sim
  cluster:
    server: {server}{cluster_extra}{ca}
users:
- name: {user_name}
  user: {user_yaml}
contexts:
- {{name: sim, context: {{cluster: sim, user: {user_name}}}}}
"#,
        server = sim.url(),
    );
    let path = dir.join(file_name);
    std::fs::write(&path, kubeconfig).unwrap();
    ClientConfig::load(&LoadOptions::file(path), env).unwrap()
}

/// A client built from the server's kubeconfig.
pub fn client_for(sim: &SimServer, dir: &tempfile::TempDir, options: &ClientOptions) -> Client {
    Client::new(&config_for(sim, dir), options).unwrap()
}

/// The batch/v1 jobs resource, as the simulator names it.
pub fn jobs() -> Gvr {
    Gvr::new("batch", "v1", "jobs")
}

/// The core/v1 configmaps resource, as the simulator names it.
pub fn configmaps() -> Gvr {
    Gvr::new("", "v1", "configmaps")
}

/// A minimal Job.
pub fn job(namespace: &str, name: &str) -> Value {
    json!({"apiVersion": "batch/v1", "kind": "Job",
        "metadata": {"name": name, "namespace": namespace, "labels": {"app": "test"}},
        "spec": {"template": {"spec": {"restartPolicy": "Never",
            "containers": [{"name": "main", "image": "busybox:1.36"}]}}}})
}

/// A ConfigMap with one data key.
pub fn configmap(namespace: &str, name: &str) -> Value {
    json!({"apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": name, "namespace": namespace},
        "data": {"k": "v"}})
}

/// Creates `object` of `gvr` directly in the simulator's store.
pub fn seed(sim: &SimServer, gvr: &Gvr, object: Value) -> Value {
    match sim.create(gvr, object) {
        Ok(created) => created,
        Err(e) => panic!("seeding the simulated server: {e}"),
    }
}

/// The journal entries whose path starts with `prefix`.
pub fn requests_to(sim: &SimServer, prefix: &str) -> Vec<JournalEntry> {
    sim.journal().entries_for_path_prefix(prefix)
}

/// The last request the server received.
pub fn last_request(sim: &SimServer) -> JournalEntry {
    match sim.journal().entries().pop() {
        Some(entry) => entry,
        None => panic!("the server received no request"),
    }
}
