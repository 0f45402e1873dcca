//! Accepting connections and serving HTTP on them.
//!
//! Contract: [`accept_loop`] owns every connection task (a `JoinSet`), so stopping it — by
//! cancelling the server's token or aborting its task — stops them all. Each connection speaks
//! HTTP/1.1 or HTTP/2 (hyper-util's auto builder; over TLS the client picks with ALPN) and is
//! tied to the *connection generation* current when it was accepted: cancelling that generation
//! drops the connection abruptly, like a server restart. HTTP/2 serves each stream in a task of
//! its own; those tasks belong to their connection ([`StreamTasks`]) and end with it.
//!
//! While the API server is *down* (`Generations::set_listening` false) the loop holds no
//! listening socket, so connections are refused, as a stopped kube-apiserver's are (it closes
//! its listener at once on SIGTERM: `apiserver-restart-timeline`); listening again binds the
//! same address.

use std::convert::Infallible;
use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use hyper::service::service_fn;
use hyper_util::rt::TokioIo;
use hyper_util::server::conn::auto;
use parking_lot::Mutex;
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::net::{TcpListener, TcpStream};
use tokio::task::JoinSet;
use tokio_util::sync::CancellationToken;

use super::generations::Generations;
use crate::handlers::{self, Context, Peer};

/// Accepts connections until `generations`' root token is cancelled; while it does not listen,
/// holds no socket.
pub async fn accept_loop(
    listener: TcpListener,
    ctx: Arc<Context>,
    tls: Option<tokio_rustls::TlsAcceptor>,
    generations: Arc<Generations>,
) {
    let mut connections = JoinSet::new();
    let mut listening = generations.listening.subscribe();
    let addr = listener.local_addr().ok();
    let mut listener = Some(listener);
    loop {
        tokio::select! {
            _ = generations.root.cancelled() => break,
            changed = listening.changed() => {
                if changed.is_err() {
                    break;
                }
                let listen = *listening.borrow_and_update();
                let bound = match (listen, listener.take(), addr) {
                    (false, _, _) => Ok(None),
                    (true, Some(open), _) => Ok(Some(open)),
                    (true, None, Some(addr)) => TcpListener::bind(addr).await.map(Some),
                    (true, None, None) => Ok(None),
                };
                let published = match bound {
                    Ok(bound) => {
                        listener = bound;
                        Ok(listener.is_some())
                    }
                    Err(e) => {
                        tracing::warn!(error = %e, "simulated API server: could not listen again");
                        Err(e.to_string())
                    }
                };
                let _previous = generations.bound.send_replace(published);
            }
            accepted = accept(listener.as_ref()) => match accepted {
                Ok((stream, _)) => {
                    let cut = generations.current();
                    connections.spawn(serve(stream, Arc::clone(&ctx), tls.clone(), cut));
                }
                Err(e) => {
                    // Out of file descriptors or similar: back off instead of spinning.
                    tracing::warn!(error = %e, "simulated API server: accept failed");
                    tokio::time::sleep(Duration::from_millis(50)).await;
                }
            },
            Some(_) = connections.join_next(), if !connections.is_empty() => {}
        }
    }
    connections.shutdown().await;
}

/// The next connection on `listener`; never, without one.
async fn accept(
    listener: Option<&TcpListener>,
) -> std::io::Result<(TcpStream, std::net::SocketAddr)> {
    match listener {
        Some(listener) => listener.accept().await,
        None => std::future::pending().await,
    }
}

async fn serve(
    stream: TcpStream,
    ctx: Arc<Context>,
    tls: Option<tokio_rustls::TlsAcceptor>,
    cut: CancellationToken,
) {
    // Watches are latency-sensitive one-line writes: do not let Nagle hold them back.
    let _ = stream.set_nodelay(true);
    match tls {
        None => serve_http(stream, ctx, Peer::default(), cut).await,
        Some(acceptor) => {
            let handshake = tokio::select! {
                result = acceptor.accept(stream) => result,
                _ = cut.cancelled() => return,
            };
            match handshake {
                Ok(stream) => {
                    // rustls only hands out peer certificates it verified against the CA.
                    let certificates = stream.get_ref().1.peer_certificates();
                    let peer = Peer {
                        client_certificate: certificates.is_some_and(|c| !c.is_empty()),
                    };
                    serve_http(stream, ctx, peer, cut).await
                }
                Err(e) => tracing::debug!(error = %e, "simulated API server: TLS handshake failed"),
            }
        }
    }
}

async fn serve_http<S>(stream: S, ctx: Arc<Context>, peer: Peer, cut: CancellationToken)
where
    S: AsyncRead + AsyncWrite + Unpin + Send + 'static,
{
    let service = service_fn(move |request| {
        let ctx = Arc::clone(&ctx);
        async move { Ok::<_, Infallible>(handlers::handle(&ctx, peer, request).await) }
    });
    // The builder and the connection hold the only clones: when this function returns, the
    // streams still running are aborted.
    let builder = auto::Builder::new(StreamTasks::default());
    let connection = builder.serve_connection(TokioIo::new(stream), service);
    tokio::select! {
        result = connection => {
            if let Err(e) = result {
                tracing::debug!(error = %e, "simulated API server: connection ended with an error");
            }
        }
        // Dropping the connection future closes the socket mid-stream, like a restart.
        _ = cut.cancelled() => {}
    }
}

/// The executor hyper runs HTTP/2 streams on: a task set owned by the connection.
///
/// hyper's usual `TokioExecutor` detaches stream tasks. They do end on their own once h2 sees
/// the stream reset, but nothing owns them, so nothing could prove the server stopped them all.
/// With this set, dropping the connection aborts every stream it still has.
#[derive(Clone, Default)]
struct StreamTasks(Arc<Mutex<JoinSet<()>>>);

impl<F> hyper::rt::Executor<F> for StreamTasks
where
    F: Future<Output = ()> + Send + 'static,
{
    fn execute(&self, stream: F) {
        let mut tasks = self.0.lock();
        // Reap finished streams so a long-lived connection does not accumulate them.
        while tasks.try_join_next().is_some() {}
        tasks.spawn(stream);
    }
}
