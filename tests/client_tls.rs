//! The client's connection and identity against the simulated API server: TLS with the
//! server's generated CA and a bearer token (and which HTTP version ALPN chose), a client
//! certificate, the refresh-and-retry-once on 401 for exec plugins and token files,
//! impersonation headers, and `tls-server-name` sent as SNI (against a small TLS server of its
//! own that records the SNI each ClientHello carries).

mod client_support;

use std::path::Path;

use base64::Engine;
use client_support::{custom_config, last_request, start_with, unthrottled};
use kube_gc::client::config::{ClientConfig, Environment, LoadOptions};
use kube_gc::client::{Api, ApiRequest, Client, Error, ListParams, ResourceRef};
use kube_gc::sim::faults::Verb;
use kube_gc::sim::Connect as _;
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
    let user = format!(
        r#"
    exec:
      apiVersion: client.authentication.k8s.io/v1
      command: {plugin}
      env:
      - {{name: PLUGIN_TOKEN_PREFIX, value: tok}}
      interactiveMode: Never"#,
        plugin = plugin.display(),
    );
    let path_var = std::env::var("PATH").unwrap_or_else(|_| "/usr/bin:/bin".into());
    let env = Environment::empty()
        .with_var("PATH", path_var)
        .with_var("PLUGIN_STATE_DIR", state.display().to_string());
    custom_config(sim, dir, "exec-kubeconfig", "", "exec", &user, &env)
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
    let config = spec
        .client_config(&h.dir.path().join("cert-kubeconfig"))
        .unwrap();
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
    let config = ClientConfig::load(&LoadOptions::file(path), &Environment::empty()).unwrap();
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

/// What one connection to a [`NamedServer`] showed.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Seen {
    /// The SNI of the ClientHello (`None`: the client sent none).
    sni: Option<String>,
    /// The `Host` header of the request, if the handshake succeeded and one arrived.
    host: Option<String>,
}

/// An HTTPS server (HTTP/1.1) whose certificate, from a CA of its own, names `name` only. It
/// answers every request `200 {}` and records the SNI and `Host` of each connection.
struct NamedServer {
    addr: std::net::SocketAddr,
    ca_pem: String,
    seen: std::sync::Arc<parking_lot::Mutex<Vec<Seen>>>,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for NamedServer {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl NamedServer {
    async fn start(name: &str) -> NamedServer {
        use rcgen::{BasicConstraints, CertificateParams, IsCa, Issuer, KeyPair};
        let ca_key = KeyPair::generate().unwrap();
        let mut ca_params = CertificateParams::default();
        ca_params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        let ca_cert = ca_params.self_signed(&ca_key).unwrap();
        let issuer = Issuer::new(ca_params, ca_key);
        let key = KeyPair::generate().unwrap();
        let cert = CertificateParams::new(vec![name.to_owned()])
            .unwrap()
            .signed_by(&key, &issuer)
            .unwrap();
        let private_key = rustls_pki_types::PrivateKeyDer::Pkcs8(key.serialize_der().into());
        let provider = std::sync::Arc::new(rustls::crypto::ring::default_provider());
        let mut config = rustls::ServerConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .unwrap()
            .with_no_client_auth()
            .with_single_cert(vec![cert.der().clone()], private_key)
            .unwrap();
        config.alpn_protocols = vec![b"http/1.1".to_vec()];
        let config = std::sync::Arc::new(config);

        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let seen = std::sync::Arc::new(parking_lot::Mutex::new(Vec::new()));
        let record = seen.clone();
        let task = tokio::spawn(async move {
            // Owned here, so aborting the accept loop aborts every connection too.
            let mut connections = tokio::task::JoinSet::new();
            while let Ok((tcp, _)) = listener.accept().await {
                connections.spawn(serve_one(tcp, config.clone(), record.clone()));
            }
        });
        NamedServer {
            addr,
            ca_pem: ca_cert.pem(),
            seen,
            task,
        }
    }

    /// A kubeconfig for this server at `https://127.0.0.1:<port>`, trusting its CA, with
    /// `tls-server-name` if given.
    fn config(&self, dir: &Path, tls_server_name: Option<&str>) -> ClientConfig {
        let ca = base64::engine::general_purpose::STANDARD.encode(&self.ca_pem);
        let server_name = tls_server_name
            .map(|name| format!("\n    tls-server-name: {name}"))
            .unwrap_or_default();
        let kubeconfig = format!(
            r#"apiVersion: v1
kind: Config
current-context: named
clusters:
- name: named
  cluster:
    server: https://{addr}
    certificate-authority-data: {ca}{server_name}
users:
- {{name: anonymous, user: {{}}}}
contexts:
- {{name: named, context: {{cluster: named, user: anonymous}}}}
"#,
            addr = self.addr,
        );
        let path = dir.join("named-kubeconfig");
        std::fs::write(&path, kubeconfig).unwrap();
        ClientConfig::load(&LoadOptions::file(path), &Environment::empty()).unwrap()
    }

    fn seen(&self) -> Vec<Seen> {
        self.seen.lock().clone()
    }
}

/// One connection: record the ClientHello's SNI, finish the handshake, read one request head,
/// answer `{}` and close.
async fn serve_one(
    tcp: tokio::net::TcpStream,
    config: std::sync::Arc<rustls::ServerConfig>,
    seen: std::sync::Arc<parking_lot::Mutex<Vec<Seen>>>,
) {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let acceptor = rustls::server::Acceptor::default();
    let Ok(start) = tokio_rustls::LazyConfigAcceptor::new(acceptor, tcp).await else {
        return;
    };
    let sni = start.client_hello().server_name().map(str::to_owned);
    let index = {
        let mut seen = seen.lock();
        seen.push(Seen { sni, host: None });
        seen.len() - 1
    };
    let Ok(mut tls) = start.into_stream(config).await else {
        return;
    };
    let mut head = Vec::new();
    let mut buf = [0u8; 1024];
    while !head.windows(4).any(|w| w == b"\r\n\r\n") {
        match tls.read(&mut buf).await {
            Ok(0) | Err(_) => return,
            Ok(n) => head.extend_from_slice(&buf[..n]),
        }
    }
    let head = String::from_utf8_lossy(&head);
    let host = head.lines().find_map(|line| {
        let (name, value) = line.split_once(':')?;
        name.eq_ignore_ascii_case("host")
            .then(|| value.trim().to_owned())
    });
    seen.lock()[index].host = host;
    let response = "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: 2\r\n\
                    connection: close\r\n\r\n{}";
    let _ = tls.write_all(response.as_bytes()).await;
    let _ = tls.shutdown().await;
}

const SNI_NAME: &str = "api.sni.kube-gc.test";

#[tokio::test]
async fn tls_server_name_is_sent_as_sni_and_verified() {
    let server = NamedServer::start(SNI_NAME).await;
    let dir = tempfile::tempdir().unwrap();
    let config = server.config(dir.path(), Some(SNI_NAME));
    let client = Client::new(&config, &unthrottled()).unwrap();

    let url = client.server().join("/version").unwrap();
    let response = client.send(&ApiRequest::get(url)).await.unwrap();
    assert_eq!(response.status(), 200);

    // The ClientHello named the server as tls-server-name, not as the URL's IP (which would
    // have sent no SNI at all); Host follows the request URL, i.e. the same name (see
    // `kube_gc::client::sni` for why).
    let port = server.addr.port();
    let expected = Seen {
        sni: Some(SNI_NAME.to_owned()),
        host: Some(format!("{SNI_NAME}:{port}")),
    };
    assert_eq!(server.seen(), vec![expected]);
    // The client's own view of the server is unchanged.
    assert_eq!(client.server().host_str(), Some("127.0.0.1"));
}

#[tokio::test]
async fn without_tls_server_name_the_named_certificate_fails_verification() {
    let server = NamedServer::start(SNI_NAME).await;
    let dir = tempfile::tempdir().unwrap();
    let config = server.config(dir.path(), None);
    let client = Client::new(&config, &unthrottled()).unwrap();

    let url = client.server().join("/version").unwrap();
    let err = client.send(&ApiRequest::get(url)).await.unwrap_err();
    assert!(matches!(err, Error::Connection { .. }), "{err:?}");
    // The handshake started (no SNI for an IP host) and no request followed.
    let seen = server.seen();
    assert_eq!(
        seen,
        vec![Seen {
            sni: None,
            host: None
        }]
    );
}

#[tokio::test]
async fn tls_server_name_with_a_dns_server_host_resolves_it_at_build_time() {
    let server = NamedServer::start(SNI_NAME).await;
    let dir = tempfile::tempdir().unwrap();
    let mut config = server.config(dir.path(), Some(SNI_NAME));
    config.server = url::Url::parse(&format!("https://localhost:{}", server.addr.port())).unwrap();
    let client = Client::new(&config, &unthrottled()).unwrap();

    let url = client.server().join("/version").unwrap();
    client.send(&ApiRequest::get(url)).await.unwrap();
    let seen = server.seen();
    // `localhost` may resolve to ::1 first, where nothing listens: only 127.0.0.1 is seen.
    assert_eq!(seen.len(), 1, "{seen:?}");
    assert_eq!(seen[0].sni.as_deref(), Some(SNI_NAME));
}
