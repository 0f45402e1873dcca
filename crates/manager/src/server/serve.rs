//! [`Server`]: listening sockets, TLS, HTTP/1.1 and HTTP/2, graceful shutdown.
//!
//! Contract: [`Server::start`] binds every listener before returning (so a port in use is an
//! error at start-up, not a log line later) and serves [`Endpoints`] on each until the shutdown
//! token is cancelled. Then it stops accepting, lets open requests finish for at most
//! [`DRAIN_TIMEOUT`], and drops what is left. Every task is owned: connection tasks by their
//! listener's `JoinSet`, listeners by the server's task, which [`RunningServer`] holds.

use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use http::Request;
use hyper::body::Incoming;
use hyper::service::service_fn;
use hyper_util::rt::{TokioExecutor, TokioIo};
use hyper_util::server::conn::auto;
use hyper_util::server::graceful::{GracefulShutdown, Watcher};
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::net::{TcpListener, TcpStream};
use tokio::task::{JoinHandle, JoinSet};
use tokio_rustls::TlsAcceptor;
use tokio_util::sync::CancellationToken;

use super::auth::{refusal, DelegatedAuth};
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
    /// A listener must authenticate its requests, and nothing was given to do it with.
    #[error("{address} must authenticate its requests, but no authenticator was given")]
    NoAuthenticator {
        /// The listener's address.
        address: SocketAddr,
    },
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
    /// Binds `listeners` and serves `endpoints` on them until `shutdown` is cancelled; the
    /// listeners that authenticate ask `auth` about each request.
    pub async fn start(
        listeners: &[Listener],
        endpoints: Endpoints,
        auth: Option<Arc<DelegatedAuth>>,
        shutdown: CancellationToken,
    ) -> Result<RunningServer, ServerError> {
        let mut bound = Vec::new();
        for listener in listeners {
            let guard = match (&auth, listener.authenticate) {
                (_, false) => None,
                (Some(auth), true) => Some(Arc::clone(auth)),
                (None, true) => {
                    return Err(ServerError::NoAuthenticator {
                        address: listener.address,
                    })
                }
            };
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
            tracing::info!(%address, tls = tls.is_some(), authenticated = guard.is_some(),
                "serving health, metrics and debug endpoints");
            bound.push((socket, Served { tls, guard }, address));
        }
        let addresses = bound.iter().map(|(_, _, a)| *a).collect();
        let task = tokio::spawn(async move {
            let mut listeners = JoinSet::new();
            for (socket, served, _) in bound {
                listeners.spawn(accept_loop(
                    socket,
                    served,
                    endpoints.clone(),
                    shutdown.clone(),
                ));
            }
            while listeners.join_next().await.is_some() {}
        });
        Ok(RunningServer { addresses, task })
    }
}

/// How one listener serves: over TLS or not, asking who may or not.
#[derive(Clone)]
struct Served {
    tls: Option<TlsAcceptor>,
    guard: Option<Arc<DelegatedAuth>>,
}

/// Accepts connections until `shutdown`, then drains them.
async fn accept_loop(
    socket: TcpListener,
    served: Served,
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
            served.clone(),
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
async fn connection(stream: TcpStream, served: Served, endpoints: Endpoints, graceful: Watcher) {
    let guard = served.guard;
    match served.tls {
        None => serve_http(stream, endpoints, guard, graceful).await,
        Some(acceptor) => {
            match tokio::time::timeout(HANDSHAKE_TIMEOUT, acceptor.accept(stream)).await {
                Ok(Ok(stream)) => serve_http(stream, endpoints, guard, graceful).await,
                Ok(Err(e)) => tracing::debug!(error = %e, "TLS handshake failed"),
                Err(_) => tracing::debug!("TLS handshake timed out"),
            }
        }
    }
}

async fn serve_http<S>(
    stream: S,
    endpoints: Endpoints,
    guard: Option<Arc<DelegatedAuth>>,
    graceful: Watcher,
) where
    S: AsyncRead + AsyncWrite + Unpin + Send + 'static,
{
    let service = service_fn(move |request: Request<Incoming>| {
        let (endpoints, guard) = (endpoints.clone(), guard.clone());
        async move {
            if let Some(guard) = guard {
                let path = request.uri().path();
                let verdict = guard.check(request.method(), path, request.headers()).await;
                if let Some(refused) = refusal(&verdict) {
                    return Ok::<_, Infallible>(refused);
                }
            }
            Ok(endpoints.respond(&request))
        }
    });
    let builder = auto::Builder::new(TokioExecutor::new());
    let connection = builder.serve_connection(TokioIo::new(stream), service);
    if let Err(e) = graceful.watch(connection.into_owned()).await {
        tracing::debug!(error = %e, "connection ended with an error");
    }
}
