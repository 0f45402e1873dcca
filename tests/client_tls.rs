//! The client's connection and identity against the simulated API server: TLS with the
//! server's generated CA and a bearer token (and which HTTP version ALPN chose), a client
//! certificate, the refresh-and-retry-once on 401 for exec plugins and token files, and
//! impersonation headers.

mod client_support;

use std::path::Path;

use base64::Engine;
use client_support::{last_request, start_with, unthrottled};
use kube_gc::client::config::{ClientConfig, Environment, LoadOptions};
use kube_gc::client::{Api, ApiRequest, Client, Error, ListParams, ResourceRef};
use kube_gc::sim::faults::Verb;
use kube_gc::sim::{SimConfig, SimServer};
use serde_json::Value;

fn configmaps(client: &Client) -> Api<Value> {
    let cms = ResourceRef::new("", "v1", "configmaps", "ConfigMap", true);
    Api::dynamic(client.clone(), cms, Some("default"))
}

#[tokio::test]
async fn tls_with_the_generated_ca_and_a_bearer_token_negotiates_http2() {
    let config = SimConfig::default().with_tls().with_token("s3cret");
    let h = start_with(config, unthrottled()).await;
    assert_eq!(h.sim.url().scheme(), "https");

    configmaps(&h.client)
        .list(&ListParams::default())
        .await
        .unwrap();
    let request = last_request(&h.sim);
    assert_eq!(request.status, 200);
    assert_eq!(request.header("authorization"), Some("Bearer"));

    // ALPN offers h2 first and the simulated server accepts it.
    let response = h
        .client
        .send(&ApiRequest::get(h.sim.url().join("/version").unwrap()))
        .await
        .unwrap();
    assert_eq!(response.version(), http::Version::HTTP_2);
}

#[tokio::test]
async fn plain_http_stays_on_http1() {
    let h = start_with(SimConfig::default(), unthrottled()).await;
    let response = h
        .client
        .send(&ApiRequest::get(h.sim.url().join("/version").unwrap()))
        .await
        .unwrap();
    assert_eq!(response.version(), http::Version::HTTP_11);
}

#[tokio::test]
async fn a_certificate_from_another_ca_is_refused() {
    let h = start_with(SimConfig::default().with_tls(), unthrottled()).await;
    let other = SimServer::start(SimConfig::default().with_tls())
        .await
        .unwrap();
    // The kubeconfig of `h` pointed at `other`: right server software, wrong CA.
    let mut config = client_support::config_for(&h.sim, &h.dir);
    config.server = other.url().clone();
    let client = Client::new(&config, &unthrottled()).unwrap();
    let err = configmaps(&client).get("x").await.unwrap_err();
    // The handshake fails, so the server never answers: a connection error.
    assert!(matches!(err, Error::Connection { .. }), "{err:?}");
    assert!(other.journal().is_empty(), "no request got through");
}

#[tokio::test]
async fn impersonation_headers_are_sent_on_every_request() {
    let h = start_with(SimConfig::default(), unthrottled()).await;
    let mut config = client_support::config_for(&h.sim, &h.dir);
    config.impersonation.user = Some("alice".into());
    config.impersonation.groups = vec!["dev".into(), "ops".into()];
    let client = Client::new(&config, &unthrottled()).unwrap();
    configmaps(&client)
        .list(&ListParams::default())
        .await
        .unwrap();
    let request = last_request(&h.sim);
    assert_eq!(request.header("impersonate-user"), Some("alice"));
    let groups: Vec<&str> = request
        .headers
        .iter()
        .filter(|(n, _)| n == "impersonate-group")
        .map(|(_, v)| v.as_str())
        .collect();
    assert_eq!(groups, vec!["dev", "ops"]);
}

/// A kubeconfig for `sim` whose user runs the fixture exec plugin, which answers
/// `tok-<run number>` and counts its runs in `state`.
fn exec_config(sim: &SimServer, dir: &Path, state: &Path) -> ClientConfig {
    let plugin = Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/kubeconfig/exec/plugin.sh");
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
    server: {server}{ca}
users:
- name: exec
  user:
    exec:
      apiVersion: client.authentication.k8s.io/v1
      command: {plugin}
      env:
      - {{name: PLUGIN_TOKEN_PREFIX, value: tok}}
      interactiveMode: Never
contexts:
- {{name: sim, context: {{cluster: sim, user: exec}}}}
"#,
        server = sim.url(),
        plugin = plugin.display(),
    );
    let path = dir.join("exec-kubeconfig");
    std::fs::write(&path, kubeconfig).unwrap();
    let path_var = std::env::var("PATH").unwrap_or_else(|_| "/usr/bin:/bin".into());
    let env = Environment::empty()
        .with_var("PATH", path_var)
        .with_var("PLUGIN_STATE_DIR", state.display().to_string());
    let options = LoadOptions {
        kubeconfig: Some(path),
        context: None,
    };
    ClientConfig::load(&options, &env).unwrap()
}

fn plugin_runs(state: &Path) -> u32 {
    std::fs::read_to_string(state.join("count"))
        .unwrap_or_default()
        .trim()
        .parse()
        .unwrap_or(0)
}

#[tokio::test]
async fn a_401_with_an_exec_credential_reruns_the_plugin_and_retries_once() {
    // The server accepts the plugin's second token only.
    let h = start_with(
        SimConfig::default().with_tls().with_token("tok-2"),
        unthrottled(),
    )
    .await;
    let state = tempfile::tempdir().unwrap();
    let config = exec_config(&h.sim, h.dir.path(), state.path());
    let client = Client::new(&config, &unthrottled()).unwrap();

    configmaps(&client)
        .list(&ListParams::default())
        .await
        .unwrap();
    let statuses: Vec<u16> = h
        .sim
        .journal()
        .by_verb(Verb::List)
        .iter()
        .map(|e| e.status)
        .collect();
    assert_eq!(statuses, vec![401, 200]);
    assert_eq!(plugin_runs(state.path()), 2);

    // The refreshed token is cached: the next request runs nothing.
    configmaps(&client)
        .list(&ListParams::default())
        .await
        .unwrap();
    assert_eq!(plugin_runs(state.path()), 2);
}

#[tokio::test]
async fn a_second_401_is_returned_after_one_refresh() {
    let h = start_with(SimConfig::default().with_token("never"), unthrottled()).await;
    let state = tempfile::tempdir().unwrap();
    let config = exec_config(&h.sim, h.dir.path(), state.path());
    let client = Client::new(&config, &unthrottled()).unwrap();

    let err = configmaps(&client)
        .list(&ListParams::default())
        .await
        .unwrap_err();
    assert!(err.is_unauthorized(), "{err}");
    assert_eq!(h.sim.journal().len(), 2);
    assert_eq!(plugin_runs(state.path()), 2);
}

#[tokio::test]
async fn a_client_certificate_from_the_kubeconfig_authenticates_without_a_token() {
    let h = start_with(
        SimConfig::default().with_tls().with_token("not-sent"),
        unthrottled(),
    )
    .await;
    let tls = h.sim.tls().unwrap();
    let mut spec = h.sim.kubeconfig_spec();
    spec.token = None;
    spec.client_cert = Some(
        tls.generate_client_cert("kube-gc", &["system:masters"])
            .unwrap(),
    );
    let path = h.dir.path().join("cert-kubeconfig");
    spec.write_to(&path).unwrap();
    let options = LoadOptions {
        kubeconfig: Some(path),
        context: None,
    };
    let config = ClientConfig::load(&options, &Environment::empty()).unwrap();
    let client = Client::new(&config, &unthrottled()).unwrap();

    configmaps(&client)
        .list(&ListParams::default())
        .await
        .unwrap();
    let request = last_request(&h.sim);
    assert_eq!(request.status, 200);
    assert_eq!(request.header("authorization"), None);
}

#[tokio::test]
async fn a_401_rereads_a_rotated_token_file_before_its_cache_expires() {
    let h = start_with(SimConfig::default().with_token("rotated"), unthrottled()).await;
    let token_file = h.dir.path().join("token");
    std::fs::write(&token_file, "original\n").unwrap();
    let kubeconfig = format!(
        r#"apiVersion: v1
kind: Config
current-context: sim
clusters:
- {{name: sim, cluster: {{server: "{server}"}}}}
users:
- {{name: file, user: {{tokenFile: "{file}"}}}}
contexts:
- {{name: sim, context: {{cluster: sim, user: file}}}}
"#,
        server = h.sim.url(),
        file = token_file.display(),
    );
    let path = h.dir.path().join("token-kubeconfig");
    std::fs::write(&path, kubeconfig).unwrap();
    let options = LoadOptions {
        kubeconfig: Some(path),
        context: None,
    };
    let config = ClientConfig::load(&options, &Environment::empty()).unwrap();
    let client = Client::new(&config, &unthrottled()).unwrap();

    // The file's token is refused, re-read once, refused again.
    let err = configmaps(&client)
        .list(&ListParams::default())
        .await
        .unwrap_err();
    assert!(err.is_unauthorized(), "{err}");
    // The file rotates; the cached copy is still the old one, the 401 makes the client re-read.
    std::fs::write(&token_file, "rotated\n").unwrap();
    configmaps(&client)
        .list(&ListParams::default())
        .await
        .unwrap();
    let statuses: Vec<u16> = h
        .sim
        .journal()
        .by_verb(Verb::List)
        .iter()
        .map(|e| e.status)
        .collect();
    assert_eq!(statuses, vec![401, 401, 401, 200]);
}
