//! The kubeconfig's `proxy-url` with a `socks5://` URL: the client connects to the proxy, asks
//! it for the API server, and speaks HTTP (or TLS) through the tunnel. The proxy here is a
//! minimal SOCKS5 server (CONNECT only, RFC 1928; no authentication, or username/password per
//! RFC 1929) that records each CONNECT target and relays the bytes to the simulated API server.

mod client_support;

use std::net::SocketAddr;
use std::path::Path;
use std::sync::Arc;

use client_support::{custom_config, unthrottled};
use kube_gc::client::config::{ClientConfig, Environment};
use kube_gc::client::{Api, Client, Error, ListParams, ResourceRef};
use kube_gc::sim::{SimConfig, SimServer};
use parking_lot::Mutex;
use serde_json::Value;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::task::{JoinHandle, JoinSet};

/// A username and password the proxy demands.
type Login = Option<(String, String)>;

/// A SOCKS5 proxy on 127.0.0.1 that records the `host:port` of every CONNECT.
struct Socks5Proxy {
    addr: SocketAddr,
    login: Login,
    targets: Arc<Mutex<Vec<String>>>,
    task: JoinHandle<()>,
}

impl Drop for Socks5Proxy {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl Socks5Proxy {
    async fn start() -> Socks5Proxy {
        Socks5Proxy::start_with(None).await
    }

    async fn start_with(login: Login) -> Socks5Proxy {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let targets = Arc::new(Mutex::new(Vec::new()));
        let record = targets.clone();
        let expected = login.clone();
        let task = tokio::spawn(async move {
            // Owned here, so aborting the accept loop aborts every tunnel too.
            let mut tunnels = JoinSet::new();
            while let Ok((client, _)) = listener.accept().await {
                tunnels.spawn(tunnel(client, expected.clone(), record.clone()));
            }
        });
        Socks5Proxy {
            addr,
            login,
            targets,
            task,
        }
    }

    fn url(&self) -> String {
        match &self.login {
            Some((user, password)) => format!("socks5://{user}:{password}@{}", self.addr),
            None => format!("socks5://{}", self.addr),
        }
    }

    fn targets(&self) -> Vec<String> {
        self.targets.lock().clone()
    }
}

/// One SOCKS5 session: greeting, CONNECT, then relay until either side closes.
async fn tunnel(
    mut client: TcpStream,
    login: Login,
    targets: Arc<Mutex<Vec<String>>>,
) -> std::io::Result<()> {
    // Greeting: VER=5, NMETHODS, METHODS. We pick "no authentication" (0) or, with a login,
    // "username/password" (2).
    let mut head = [0u8; 2];
    client.read_exact(&mut head).await?;
    let mut methods = vec![0u8; usize::from(head[1])];
    client.read_exact(&mut methods).await?;
    assert_eq!(head[0], 5, "SOCKS version");
    match &login {
        None => {
            assert!(methods.contains(&0), "client offers no-auth");
            client.write_all(&[5, 0]).await?;
        }
        Some((user, password)) => {
            assert!(methods.contains(&2), "client offers username/password");
            client.write_all(&[5, 2]).await?;
            // RFC 1929: VER=1, ULEN, UNAME, PLEN, PASSWD; answered VER=1, STATUS (0 = accepted).
            assert_eq!(client.read_u8().await?, 1, "username/password version");
            let given_user = read_short_string(&mut client).await?;
            let given_password = read_short_string(&mut client).await?;
            assert_eq!((&given_user, &given_password), (user, password));
            client.write_all(&[1, 0]).await?;
        }
    }

    // Request: VER=5, CMD=1 (CONNECT), RSV, ATYP, address, port.
    let mut request = [0u8; 4];
    client.read_exact(&mut request).await?;
    assert_eq!(request[..2], [5, 1], "a CONNECT request");
    let host = match request[3] {
        1 => {
            let mut ip = [0u8; 4];
            client.read_exact(&mut ip).await?;
            std::net::Ipv4Addr::from(ip).to_string()
        }
        3 => {
            let len = client.read_u8().await?;
            let mut name = vec![0u8; usize::from(len)];
            client.read_exact(&mut name).await?;
            String::from_utf8_lossy(&name).into_owned()
        }
        4 => {
            let mut ip = [0u8; 16];
            client.read_exact(&mut ip).await?;
            format!("[{}]", std::net::Ipv6Addr::from(ip))
        }
        other => panic!("unknown address type {other}"),
    };
    let port = client.read_u16().await?;
    let target = format!("{host}:{port}");
    targets.lock().push(target.clone());

    let mut upstream = TcpStream::connect(target.as_str()).await?;
    // Succeeded; the bound address is not used by clients, so 0.0.0.0:0.
    client.write_all(&[5, 0, 0, 1, 0, 0, 0, 0, 0, 0]).await?;
    tokio::io::copy_bidirectional(&mut client, &mut upstream).await?;
    Ok(())
}

/// A length-prefixed string, as RFC 1929 sends the username and password.
async fn read_short_string(client: &mut TcpStream) -> std::io::Result<String> {
    let len = client.read_u8().await?;
    let mut bytes = vec![0u8; usize::from(len)];
    client.read_exact(&mut bytes).await?;
    Ok(String::from_utf8_lossy(&bytes).into_owned())
}

/// A kubeconfig for `sim` (trusting its CA if it has one) with `proxy-url: <proxy>`, loaded as
/// a user's would be.
fn config_through(sim: &SimServer, proxy: &str, dir: &Path) -> ClientConfig {
    let proxy_line = format!("\n    proxy-url: {proxy}");
    custom_config(
        sim,
        dir,
        "proxied-kubeconfig",
        &proxy_line,
        "anonymous",
        "{}",
        &Environment::empty(),
    )
}

fn configmaps(client: &Client) -> Api<Value> {
    let cms = ResourceRef::new("", "v1", "configmaps", "ConfigMap", true);
    Api::dynamic(client.clone(), cms, Some("default"))
}

/// `host:port` of the simulated server, as a SOCKS5 CONNECT names it.
fn sim_target(sim: &SimServer) -> String {
    let url = sim.url();
    format!("{}:{}", url.host_str().unwrap(), url.port().unwrap())
}

#[tokio::test]
async fn a_socks5_proxy_url_carries_plain_http_requests() {
    let sim = SimServer::start(SimConfig::default()).await.unwrap();
    let proxy = Socks5Proxy::start().await;
    let dir = tempfile::tempdir().unwrap();
    let config = config_through(&sim, &proxy.url(), dir.path());
    assert_eq!(config.proxy_url.as_ref().unwrap().scheme(), "socks5");
    let client = Client::new(&config, &unthrottled()).unwrap();

    configmaps(&client)
        .list(&ListParams::default())
        .await
        .unwrap();
    assert_eq!(proxy.targets(), vec![sim_target(&sim)]);
    assert_eq!(sim.journal().len(), 1, "the request reached the server");
}

#[tokio::test]
async fn a_socks5_proxy_url_with_a_login_authenticates_to_the_proxy() {
    let sim = SimServer::start(SimConfig::default()).await.unwrap();
    let login = Some(("alice".to_string(), "s3cr3tpw".to_string()));
    let proxy = Socks5Proxy::start_with(login).await;
    let dir = tempfile::tempdir().unwrap();
    let config = config_through(&sim, &proxy.url(), dir.path());
    assert!(!format!("{config:?}").contains("s3cr3tpw"));
    let client = Client::new(&config, &unthrottled()).unwrap();

    configmaps(&client)
        .list(&ListParams::default())
        .await
        .unwrap();
    assert_eq!(proxy.targets(), vec![sim_target(&sim)]);
    assert_eq!(sim.journal().len(), 1, "the request reached the server");
}

#[tokio::test]
async fn a_socks5_proxy_url_tunnels_tls() {
    let sim = SimServer::start(SimConfig::default().with_tls())
        .await
        .unwrap();
    let proxy = Socks5Proxy::start().await;
    let dir = tempfile::tempdir().unwrap();
    let config = config_through(&sim, &proxy.url(), dir.path());
    let client = Client::new(&config, &unthrottled()).unwrap();

    configmaps(&client)
        .list(&ListParams::default())
        .await
        .unwrap();
    assert_eq!(proxy.targets(), vec![sim_target(&sim)]);
    assert_eq!(sim.journal().len(), 1);
}

#[tokio::test]
async fn a_dead_socks5_proxy_fails_the_request_instead_of_going_direct() {
    let sim = SimServer::start(SimConfig::default()).await.unwrap();
    // A port that was just free: nothing listens there.
    let dead = TcpListener::bind("127.0.0.1:0")
        .await
        .unwrap()
        .local_addr()
        .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let config = config_through(&sim, &format!("socks5://{dead}"), dir.path());
    let client = Client::new(&config, &unthrottled()).unwrap();

    let err = configmaps(&client)
        .list(&ListParams::default())
        .await
        .unwrap_err();
    assert!(matches!(err, Error::Connection { .. }), "{err:?}");
    assert!(sim.journal().is_empty(), "nothing bypassed the proxy");
}
