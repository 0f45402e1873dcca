//! `SimServer`: a running simulated API server.
//!
//! Contract: [`SimServer::start`] binds the configured address, creates the initial namespaces,
//! and spawns one accept task that owns every connection; [`SimServer::shutdown`] stops accepting,
//! ends every watch and connection and joins that task (dropping a `SimServer` without calling it
//! aborts the task instead). The server hands out what a client needs — [`SimServer::url`],
//! [`SimServer::ca_pem`], a kubeconfig — and what a test needs to look inside: the request
//! [`Journal`], the [`FaultInjector`], and the in-process API of `direct.rs`, which goes through
//! the same store rules as HTTP requests.

mod accept;
mod direct;
pub(crate) mod generations;

use std::path::Path;
use std::sync::Arc;

use tokio::net::TcpListener;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;
use url::Url;

use crate::config::SimConfig;
use crate::faults::FaultInjector;
use crate::handlers::Context;
use crate::journal::Journal;
use crate::kubeconfig::{KubeconfigError, KubeconfigSpec};
use crate::resources::Resources;
use crate::store::{Store, StoreConfig, StoreError};
use crate::tls::{self, SimTls, TlsError};

/// The user of the client certificate a kubeconfig of a TLS server without a token carries.
const ADMIN_USER: &str = "kube-gc-sim-admin";
pub use generations::Generations;

/// Why the simulated server could not start or an in-process call failed.
#[derive(Debug, thiserror::Error)]
pub enum SimError {
    /// The listening socket could not be bound.
    #[error("binding the simulated API server to {addr}: {source}")]
    Bind {
        /// The address asked for.
        addr: std::net::SocketAddr,
        /// The OS error.
        source: std::io::Error,
    },
    /// TLS material could not be generated.
    #[error(transparent)]
    Tls(#[from] TlsError),
    /// The kubeconfig could not be rendered or written.
    #[error(transparent)]
    Kubeconfig(#[from] KubeconfigError),
    /// The server's own URL could not be formed from its address.
    #[error("forming the server URL: {0}")]
    Url(#[from] url::ParseError),
    /// An in-process call named a resource the server does not serve.
    #[error("the simulated API server does not serve {0}")]
    UnknownResource(String),
    /// An in-process call named no object (missing `metadata.name`).
    #[error("the object has no metadata.name")]
    MissingName,
    /// The store refused an in-process call.
    #[error(transparent)]
    Store(#[from] StoreError),
    /// The server could not listen on its address again after being stopped.
    #[error("listening again on the simulated API server's address: {0}")]
    Rebind(String),
}

/// A running simulated API server.
pub struct SimServer {
    ctx: Arc<Context>,
    url: Url,
    tls: Option<SimTls>,
    token: Option<String>,
    generations: Arc<Generations>,
    accept_task: Option<JoinHandle<()>>,
    /// Compacts etcd's history every interval; ends with the server.
    compactor: Option<JoinHandle<()>>,
}

impl std::fmt::Debug for SimServer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SimServer")
            .field("url", &self.url.as_str())
            .field("tls", &self.tls.is_some())
            .finish_non_exhaustive()
    }
}

impl SimServer {
    /// Starts a server with `config`.
    pub async fn start(config: SimConfig) -> Result<SimServer, SimError> {
        let listener = TcpListener::bind(config.bind)
            .await
            .map_err(|source| SimError::Bind {
                addr: config.bind,
                source,
            })?;
        let addr = listener.local_addr().map_err(|source| SimError::Bind {
            addr: config.bind,
            source,
        })?;
        let tls = if config.tls {
            Some(tls::generate(&[])?)
        } else {
            None
        };
        let store = Arc::new(Store::new(
            Arc::new(Resources::new(config.resources.clone())),
            Arc::clone(&config.clock),
            StoreConfig {
                history_limit: config.history_limit,
                watch_cache: config.watch_cache,
                watch_buffer: config.watch_buffer,
                ..StoreConfig::default()
            },
        ));
        create_namespaces(&store, &config.namespaces)?;
        crate::crds::ensure_definitions(&store, &Default::default())?;
        let root = CancellationToken::new();
        let generations = Arc::new(Generations::new(root.clone()));
        let ctx = Arc::new(Context {
            connections: Arc::clone(&generations),
            too_large_wait: config.too_large_wait,
            store,
            journal: Arc::new(Journal::new(config.journal_capacity)),
            faults: Arc::new(FaultInjector::new(config.fault_plan.clone())),
            token: config.token.clone(),
            bookmark_interval: config.bookmark_interval,
            watch_list_enabled: config.watch_list_enabled,
            aggregated_discovery: config.aggregated_discovery,
            server_address: addr.to_string(),
            unserved: Default::default(),
            stale: Default::default(),
            etcd: Default::default(),
            request_timeout: config.request_timeout,
            users: config.users.clone(),
            grants: config.grants.clone(),
            denials: parking_lot::RwLock::new(config.denials.clone()),
        });
        let scheme = if tls.is_some() { "https" } else { "http" };
        let url = Url::parse(&format!("{scheme}://{addr}"))?;
        let compactor = config.compaction_interval.map(|interval| {
            tokio::spawn(compactor(Arc::clone(&ctx.store), interval, root.clone()))
        });
        let accept_task = tokio::spawn(accept::accept_loop(
            listener,
            Arc::clone(&ctx),
            tls.as_ref().map(SimTls::acceptor),
            Arc::clone(&generations),
        ));
        Ok(SimServer {
            ctx,
            url,
            tls,
            token: config.token,
            generations,
            accept_task: Some(accept_task),
            compactor,
        })
    }

    /// The base URL (`http://127.0.0.1:<port>` or `https://…`).
    pub fn url(&self) -> &Url {
        &self.url
    }

    /// The CA certificate clients must trust, when serving TLS.
    pub fn ca_pem(&self) -> Option<&str> {
        self.tls.as_ref().map(|t| t.ca_pem.as_str())
    }

    /// The TLS material (for client certificates signed by the server's CA), when serving TLS.
    pub fn tls(&self) -> Option<&SimTls> {
        self.tls.as_ref()
    }

    /// A kubeconfig pointing at this server (CA and token included). Serving TLS with no
    /// token, it carries a client certificate of an administrator (`system:masters`) signed by
    /// the server's CA, as a cluster's admin kubeconfig does: with no credentials at all, kubectl
    /// asks for a user name and password on an `https` server, and fails without a terminal.
    pub fn kubeconfig_spec(&self) -> KubeconfigSpec {
        let client_cert = match (&self.tls, &self.token) {
            (Some(tls), None) => tls
                .generate_client_cert(ADMIN_USER, &["system:masters"])
                .map_err(|error| {
                    tracing::warn!(%error, "no client certificate for the kubeconfig");
                })
                .ok(),
            _ => None,
        };
        KubeconfigSpec {
            server: self.url.clone(),
            ca_pem: self.ca_pem().map(str::to_string),
            token: self.token.clone(),
            client_cert,
            namespace: None,
            context_name: "kube-gc-sim".to_string(),
        }
    }

    /// The kubeconfig YAML for this server.
    pub fn kubeconfig_yaml(&self) -> Result<String, SimError> {
        Ok(self.kubeconfig_spec().render()?)
    }

    /// Writes the kubeconfig to `path` (mode 0600).
    pub fn write_kubeconfig(&self, path: &Path) -> Result<(), SimError> {
        Ok(self.kubeconfig_spec().write_to(path)?)
    }

    /// Every request received, with the status it got.
    pub fn journal(&self) -> &Journal {
        &self.ctx.journal
    }

    /// Fault injection, to change the plan mid-run or read what was injected.
    pub fn faults(&self) -> &FaultInjector {
        &self.ctx.faults
    }

    /// The store behind the server, for checks the in-process API does not cover.
    pub fn store(&self) -> &Arc<Store> {
        &self.ctx.store
    }

    /// Ends every open watch and drops every open connection — a network cut, or a load
    /// balancer moving clients — with the API server's watch caches left as they were, so
    /// watches resume where they stopped.
    pub fn drop_connections(&self) {
        self.ctx.store.close_watches();
        self.generations.cut();
    }

    /// Restarts the API server, as after a control-plane upgrade: every watch and connection
    /// ends and every resource's watch cache is rebuilt at the current revision, so a watch
    /// from any earlier version gets 410 (exchanges 55, 59) while objects and etcd's history
    /// stay (exact reads work until compaction, exchange 56).
    pub fn restart(&self) {
        self.ctx.restart();
    }

    /// Stops the API server, as SIGTERM stops kube-apiserver (exchange 85): it closes its
    /// listening socket at once, so every new connection is refused until
    /// [`start_apiserver`](Self::start_apiserver); requests in flight lose their connection
    /// without an answer; open watches end cleanly. (The real server holds a watch open,
    /// silent, for up to a minute before ending it; a client sees the same end either way.)
    pub async fn stop_apiserver(&self) {
        self.ctx.store.close_watches();
        self.generations.cut();
        // Closing a listener cannot fail; only a server shut down for good stops the wait.
        let _ = self.generations.set_listening(false).await;
        tracing::info!("simulated API server stopped: connections refused");
    }

    /// Starts the API server again on the same address, as a restarted kube-apiserver: its
    /// watch caches are rebuilt at the current revision (a watch from an earlier version gets
    /// 410, exchanges 55 and 59), and it answers as soon as it listens (exchange 85). Returns
    /// once it listens.
    ///
    /// # Errors
    ///
    /// [`SimError::Rebind`] if the address is no longer free.
    pub async fn start_apiserver(&self) -> Result<(), SimError> {
        self.ctx.store.restart();
        self.generations
            .set_listening(true)
            .await
            .map_err(SimError::Rebind)?;
        tracing::info!("simulated API server started again");
        Ok(())
    }

    /// Whether the API server listens (not between [`stop_apiserver`](Self::stop_apiserver)
    /// and [`start_apiserver`](Self::start_apiserver)).
    pub fn is_listening(&self) -> bool {
        self.generations.is_listening()
    }

    /// Stops (`false`) or starts etcd behind the API server (exchanges 77–84): while it is
    /// down, every request that reads or writes etcd hangs for the request timeout and then
    /// fails with 504; watches stay open and silent; lists the watch cache answers, discovery
    /// and `/version` are served; `/readyz` and `/livez` fail.
    pub fn set_etcd_up(&self, up: bool) {
        self.ctx.etcd.set_up(up);
        tracing::info!(up, "simulated etcd");
    }

    /// Stops accepting, ends every watch and connection and waits for the server's tasks.
    pub async fn shutdown(mut self) {
        self.stop();
        // Both exit on cancellation; a panic in either is already reported.
        if let Some(task) = self.accept_task.take() {
            let _ = task.await;
        }
        if let Some(task) = self.compactor.take() {
            let _ = task.await;
        }
    }

    fn stop(&self) {
        self.ctx.store.close_watches();
        self.generations.cut();
        self.generations.shutdown();
    }
}

impl Drop for SimServer {
    fn drop(&mut self) {
        if let Some(task) = self.accept_task.take() {
            self.stop();
            task.abort();
        }
        if let Some(task) = self.compactor.take() {
            task.abort();
        }
    }
}

/// kube-apiserver's compactor: every `interval`, compacts etcd to the revision it saw at the
/// previous round, so at least one interval of history stays readable.
async fn compactor(store: Arc<Store>, interval: std::time::Duration, stop: CancellationToken) {
    let mut seen = None;
    loop {
        tokio::select! {
            () = stop.cancelled() => return,
            () = tokio::time::sleep(interval) => {}
        }
        if let Some(rv) = seen {
            store.compact_to(rv);
            tracing::debug!(rv, "simulated etcd compacted");
        }
        seen = Some(store.resource_version());
    }
}

fn create_namespaces(store: &Store, names: &[String]) -> Result<(), SimError> {
    let Some(namespaces) = store.resources().namespaces() else {
        return Ok(());
    };
    for name in names {
        let ns = serde_json::json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}});
        store.create(namespaces, None, ns, false)?;
    }
    Ok(())
}
