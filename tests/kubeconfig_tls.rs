//! The rustls configuration a kubeconfig produces, tried against a real TLS server on
//! 127.0.0.1: server verification with the right CA, a wrong CA, `insecure-skip-tls-verify` and
//! `tls-server-name`; client certificates; ALPN; and a full reqwest request carrying the
//! `Authorization` header.

mod kubeconfig_common;

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;

use base64::Engine;
use kube_gc::client::config::{ClientConfig, LoadOptions};
use kubeconfig_common::{fixture, hermetic_env, Issued, TestCa};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, ServerName};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::task::JoinHandle;

fn provider() -> Arc<rustls::crypto::CryptoProvider> {
    Arc::new(rustls::crypto::ring::default_provider())
}

/// A TLS server on 127.0.0.1 that answers each successful handshake with "ok" (or, when
/// `http` is set, serves one HTTP/1.1 or h2 echo of the Authorization header). Aborted on drop.
struct Server {
    addr: SocketAddr,
    task: JoinHandle<()>,
}

impl Drop for Server {
    fn drop(&mut self) {
        self.task.abort();
    }
}

fn server_config(identity: &Issued, client_ca: Option<&[u8]>) -> rustls::ServerConfig {
    let chain = vec![CertificateDer::from_pem_slice(identity.cert_pem.as_bytes()).unwrap()];
    let key = PrivateKeyDer::from_pem_slice(identity.key_pem.as_bytes()).unwrap();
    let builder = rustls::ServerConfig::builder_with_provider(provider())
        .with_safe_default_protocol_versions()
        .unwrap();
    let builder = match client_ca {
        None => builder.with_no_client_auth(),
        Some(pem) => {
            let mut roots = rustls::RootCertStore::empty();
            for cert in CertificateDer::pem_slice_iter(pem) {
                roots.add(cert.unwrap()).unwrap();
            }
            let verifier = rustls::server::WebPkiClientVerifier::builder_with_provider(
                Arc::new(roots),
                provider(),
            )
            .build()
            .unwrap();
            builder.with_client_cert_verifier(verifier)
        }
    };
    let mut config = builder.with_single_cert(chain, key).unwrap();
    config.alpn_protocols = vec![b"h2".to_vec(), b"http/1.1".to_vec()];
    config
}

async fn start_server(config: rustls::ServerConfig, http: bool) -> Server {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let acceptor = tokio_rustls::TlsAcceptor::from(Arc::new(config));
    let task = tokio::spawn(async move {
        // Connections are served one after the other: each test makes only a few.
        while let Ok((tcp, _)) = listener.accept().await {
            let Ok(mut tls) = acceptor.accept(tcp).await else {
                continue;
            };
            if http {
                serve_echo(tls).await;
            } else {
                let _ = tls.write_all(b"ok").await;
                let _ = tls.shutdown().await;
            }
        }
    });
    Server { addr, task }
}

/// Answers every request with the Authorization header it carried.
async fn serve_echo(tls: tokio_rustls::server::TlsStream<TcpStream>) {
    let service = hyper::service::service_fn(|request: hyper::Request<hyper::body::Incoming>| {
        let auth = request
            .headers()
            .get(http::header::AUTHORIZATION)
            .and_then(|value| value.to_str().ok())
            .unwrap_or("none")
            .to_string();
        let version = format!("{:?}", request.version());
        async move {
            let body = http_body_util::Full::new(bytes::Bytes::from(format!("{version} {auth}")));
            Ok::<_, std::convert::Infallible>(hyper::Response::new(body))
        }
    });
    let builder =
        hyper_util::server::conn::auto::Builder::new(hyper_util::rt::TokioExecutor::new());
    let io = hyper_util::rt::TokioIo::new(tls);
    let _ = builder.serve_connection(io, service).await;
}

/// Writes a one-context kubeconfig for `server` with extra cluster and user lines.
fn kubeconfig(
    dir: &tempfile::TempDir,
    server: &str,
    cluster: &[String],
    user: &[String],
) -> PathBuf {
    let indent =
        |lines: &[String]| -> String { lines.iter().map(|line| format!("    {line}\n")).collect() };
    let user = if user.is_empty() {
        "  user: {}\n".to_string()
    } else {
        format!("  user:\n{}", indent(user))
    };
    let text = format!(
        "apiVersion: v1\nkind: Config\ncurrent-context: test\nclusters:\n- name: test\n  \
         cluster:\n    server: {server}\n{}users:\n- name: test\n{user}contexts:\n- name: test\n  \
         context: {{cluster: test, user: test}}\n",
        indent(cluster)
    );
    let path = dir.path().join("config");
    std::fs::write(&path, text).unwrap();
    path
}

fn b64(text: &str) -> String {
    base64::engine::general_purpose::STANDARD.encode(text)
}

fn load(path: PathBuf) -> ClientConfig {
    let options = LoadOptions {
        kubeconfig: Some(path),
        context: None,
    };
    ClientConfig::load(&options, &hermetic_env()).unwrap()
}

/// Handshakes with the server at `config.server` and reads its "ok". Returns the negotiated
/// ALPN protocol, or the error as text.
async fn handshake(config: &ClientConfig) -> Result<Option<Vec<u8>>, String> {
    let host = config.server.host_str().unwrap().to_string();
    let port = config.server.port().unwrap();
    let rustls_config = config.rustls_config().map_err(|err| err.to_string())?;
    let connector = tokio_rustls::TlsConnector::from(Arc::new(rustls_config));
    let tcp = TcpStream::connect(("127.0.0.1", port)).await.unwrap();
    let name = ServerName::try_from(host).unwrap();
    let mut tls = connector
        .connect(name, tcp)
        .await
        .map_err(|err| err.to_string())?;
    let alpn = tls.get_ref().1.alpn_protocol().map(<[u8]>::to_vec);
    let mut reply = Vec::new();
    tls.read_to_end(&mut reply)
        .await
        .map_err(|err| err.to_string())?;
    if reply != b"ok" {
        return Err(format!("server said {reply:?}"));
    }
    Ok(alpn)
}

#[tokio::test]
async fn verification_needs_the_right_ca_unless_insecure() {
    let ca = TestCa::new("cluster-ca");
    let server = start_server(server_config(&ca.server(&["127.0.0.1"]), None), false).await;
    let url = format!("https://{}", server.addr);
    let dir = tempfile::tempdir().unwrap();

    let right = kubeconfig(
        &dir,
        &url,
        &[format!("certificate-authority-data: {}", b64(&ca.pem))],
        &[],
    );
    let alpn = handshake(&load(right)).await.unwrap();
    assert_eq!(alpn.as_deref(), Some(&b"h2"[..]), "ALPN prefers h2");

    let other = TestCa::new("someone-else");
    let wrong = kubeconfig(
        &dir,
        &url,
        &[format!("certificate-authority-data: {}", b64(&other.pem))],
        &[],
    );
    let err = handshake(&load(wrong)).await.unwrap_err();
    assert!(err.contains("UnknownIssuer"), "{err}");

    let insecure = kubeconfig(
        &dir,
        &url,
        &["insecure-skip-tls-verify: true".to_string()],
        &[],
    );
    assert!(handshake(&load(insecure)).await.is_ok());
}

#[tokio::test]
async fn tls_server_name_replaces_the_url_host_for_verification() {
    let ca = TestCa::new("cluster-ca");
    let server = start_server(server_config(&ca.server(&["api.internal"]), None), false).await;
    let url = format!("https://{}", server.addr);
    let dir = tempfile::tempdir().unwrap();
    let ca_line = format!("certificate-authority-data: {}", b64(&ca.pem));

    let plain = kubeconfig(&dir, &url, std::slice::from_ref(&ca_line), &[]);
    let err = handshake(&load(plain)).await.unwrap_err();
    assert!(err.contains("not valid for name \"127.0.0.1\""), "{err}");

    let named = kubeconfig(
        &dir,
        &url,
        &[ca_line, "tls-server-name: api.internal".into()],
        &[],
    );
    let config = load(named);
    assert_eq!(config.tls_server_name(), Some("api.internal"));
    assert!(handshake(&config).await.is_ok());
}

#[tokio::test]
async fn client_certificates_of_every_key_format_are_accepted() {
    let ca = TestCa::new("cluster-ca");
    let client_ca = std::fs::read(fixture("pki/ca.crt")).unwrap();
    let config = server_config(&ca.server(&["127.0.0.1"]), Some(&client_ca));
    let server = start_server(config, false).await;
    let url = format!("https://{}", server.addr);
    let dir = tempfile::tempdir().unwrap();
    let ca_line = format!("certificate-authority-data: {}", b64(&ca.pem));

    for (cert, key) in [
        ("client-rsa.crt", "client-rsa.key"),
        ("client-ec.crt", "client-ec.key"),
        ("client-ec.crt", "client-ec-pkcs8.key"),
    ] {
        let user = [
            format!(
                "client-certificate: {}",
                fixture("pki").join(cert).display()
            ),
            format!("client-key: {}", fixture("pki").join(key).display()),
        ];
        let path = kubeconfig(&dir, &url, std::slice::from_ref(&ca_line), &user);
        assert!(handshake(&load(path)).await.is_ok(), "{key}");
    }

    let anonymous = kubeconfig(&dir, &url, &[ca_line], &[]);
    let err = handshake(&load(anonymous)).await.unwrap_err();
    assert!(err.to_lowercase().contains("certificate"), "{err}");
}

#[tokio::test]
async fn reqwest_uses_the_config_and_sends_the_credential() {
    let ca = TestCa::new("cluster-ca");
    let server = start_server(server_config(&ca.server(&["127.0.0.1"]), None), true).await;
    let url = format!("https://{}", server.addr);
    let dir = tempfile::tempdir().unwrap();
    let path = kubeconfig(
        &dir,
        &url,
        &[format!("certificate-authority-data: {}", b64(&ca.pem))],
        &["token: reqwest-token".to_string()],
    );
    let config = load(path);
    let client = reqwest::Client::builder()
        .use_preconfigured_tls(config.rustls_config().unwrap())
        .build()
        .unwrap();
    let mut request = client.get(config.server.join("version").unwrap());
    if let Some(header) = config.auth.authorization_header().await.unwrap() {
        request = request.header(http::header::AUTHORIZATION, header);
    }
    let body = request.send().await.unwrap().text().await.unwrap();
    assert_eq!(body, "HTTP/2.0 Bearer reqwest-token");
}
