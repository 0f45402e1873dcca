//! [`Server`]: listening sockets, TLS, HTTP/1.1 and HTTP/2, graceful shutdown.
//!
//! Contract: [`Server::start`] binds every listener before returning (so a port in use is an
//! error at start-up, not a log line later) and serves [`Endpoints`] on each until the shutdown
//! token is cancelled. Then it stops accepting, lets open requests finish for at most
//! [`DRAIN_TIMEOUT`], and drops what is left. Every task is owned: connection tasks by their
//! listener's `JoinSet`, listeners by the server's task, which [`RunningServer`] holds.

use std::convert::Infallible;
use std::net::SocketAddr;
use std::time::Duration;

use hyper::service::service_fn;
use hyper_util::rt::{TokioExecutor, TokioIo};
use hyper_util::server::conn::auto;
use hyper_util::server::graceful::{GracefulShutdown, Watcher};
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::net::{TcpListener, TcpStream};
use tokio::task::{JoinHandle, JoinSet};
use tokio_rustls::TlsAcceptor;
use tokio_util::sync::CancellationToken;

use super::options::Listener;
use super::routes::Endpoints;
use super::tls::{server_config, TlsError};

/// How long open requests may take to finish once shutdown begins.
pub const DRAIN_TIMEOUT: Duration = Duration::from_secs(5);

/// How long a client may take over its TLS handshake.
const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(10);

/// Why the server could not start.
#[derive(Debug, thiserror::Error)]
pub enum ServerError {
    /// A listener could not bind.
    #[error("cannot listen on {address}: {source}")]
    Bind {
        /// The address.
        address: SocketAddr,
        /// The OS error.
        #[source]
        source: std::io::Error,
    },
    /// The HTTPS configuration could not be built.
    #[error(transparent)]
    Tls(#[from] TlsError),
}

/// The server, before it starts.
#[derive(Debug)]
pub struct Server;

/// A started server.
#[derive(Debug)]
pub struct RunningServer {
    /// The bound address of each listener, in the order given (port 0 resolved).
    pub addresses: Vec<SocketAddr>,
    task: JoinHandle<()>,
}

impl RunningServer {
    /// Waits until the server has stopped (after the shutdown token was cancelled).
    pub async fn stopped(self) {
        let _ = self.task.await;
    }
}

impl Server {
    /// Binds `listeners` and serves `endpoints` on them until `shutdown` is cancelled.
    pub async fn start(
        listeners: &[Listener],
        endpoints: Endpoints,
        shutdown: CancellationToken,
    ) -> Result<RunningServer, ServerError> {
        let mut bound = Vec::new();
        for listener in listeners {
            let tls = match &listener.tls {
                Some(source) => Some(TlsAcceptor::from(server_config(source)?)),
                None => None,
            };
            let socket = TcpListener::bind(listener.address)
                .await
                .map_err(|source| ServerError::Bind {
                    address: listener.address,
                    source,
                })?;
            let address = socket.local_addr().map_err(|source| ServerError::Bind {
                address: listener.address,
                source,
            })?;
            tracing::info!(%address, tls = tls.is_some(), "serving health, metrics and debug endpoints");
            bound.push((socket, tls, address));
        }
        let addresses = bound.iter().map(|(_, _, a)| *a).collect();
        let task = tokio::spawn(async move {
            let mut listeners = JoinSet::new();
            for (socket, tls, _) in bound {
                listeners.spawn(accept_loop(
                    socket,
                    tls,
                    endpoints.clone(),
                    shutdown.clone(),
                ));
            }
            while listeners.join_next().await.is_some() {}
        });
        Ok(RunningServer { addresses, task })
    }
}

/// Accepts connections until `shutdown`, then drains them.
async fn accept_loop(
    socket: TcpListener,
    tls: Option<TlsAcceptor>,
    endpoints: Endpoints,
    shutdown: CancellationToken,
) {
    let graceful = GracefulShutdown::new();
    let mut connections = JoinSet::new();
    loop {
        let stream = tokio::select! {
            _ = shutdown.cancelled() => break,
            accepted = socket.accept() => match accepted {
                Ok((stream, _)) => stream,
                Err(e) => {
                    tracing::debug!(error = %e, "accept failed");
                    continue;
                }
            },
        };
        // Reap finished connections so the set does not grow with the server's lifetime.
        while connections.try_join_next().is_some() {}
        connections.spawn(connection(
            stream,
            tls.clone(),
            endpoints.clone(),
            graceful.watcher(),
        ));
    }
    drop(socket);
    let drained = async {
        graceful.shutdown().await;
        while connections.join_next().await.is_some() {}
    };
    if tokio::time::timeout(DRAIN_TIMEOUT, drained).await.is_err() {
        tracing::debug!("open connections did not finish in time; closing them");
    }
}

/// One connection: TLS handshake if needed, then HTTP until it closes or shutdown ends it.
async fn connection(
    stream: TcpStream,
    tls: Option<TlsAcceptor>,
    endpoints: Endpoints,
    graceful: Watcher,
) {
    match tls {
        None => serve_http(stream, endpoints, graceful).await,
        Some(acceptor) => {
            match tokio::time::timeout(HANDSHAKE_TIMEOUT, acceptor.accept(stream)).await {
                Ok(Ok(stream)) => serve_http(stream, endpoints, graceful).await,
                Ok(Err(e)) => tracing::debug!(error = %e, "TLS handshake failed"),
                Err(_) => tracing::debug!("TLS handshake timed out"),
            }
        }
    }
}

async fn serve_http<S>(stream: S, endpoints: Endpoints, graceful: Watcher)
where
    S: AsyncRead + AsyncWrite + Unpin + Send + 'static,
{
    let service = service_fn(move |request| {
        let response = endpoints.respond(&request);
        async move { Ok::<_, Infallible>(response) }
    });
    let builder = auto::Builder::new(TokioExecutor::new());
    let connection = builder.serve_connection(TokioIo::new(stream), service);
    if let Err(e) = graceful.watch(connection.into_owned()).await {
        tracing::debug!(error = %e, "connection ended with an error");
    }
}
