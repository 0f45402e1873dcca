//! A local webhook receiver for the notification tests: it records every request's JSON body
//! and answers as told — accept, answer a status (500, 404, 429 with `Retry-After`), or take
//! its time — and a port nothing listens on, for a receiver that refuses connections.
#![allow(dead_code)] // Each test crate uses a different subset.

use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use hyper::service::service_fn;
use hyper::{Request, Response};
use hyper_util::rt::TokioIo;
use parking_lot::Mutex;
use serde_json::Value;
use tokio::net::TcpListener;
use tokio::task::JoinHandle;

/// How the receiver answers.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Answer {
    /// 200.
    Accept,
    /// This status, with a `Retry-After` of so many seconds if given.
    Status(u16, Option<u64>),
    /// 200, after this long (on tokio's clock).
    Slowly(Duration),
}

/// One request received.
#[derive(Clone, Debug)]
pub struct Received {
    /// When (tokio's clock).
    pub at: tokio::time::Instant,
    /// The path it was sent to.
    pub path: String,
    /// Its `Content-Type`.
    pub content_type: String,
    /// Its body.
    pub body: Value,
}

/// A running receiver.
pub struct Receiver {
    pub addr: SocketAddr,
    answer: Arc<Mutex<Answer>>,
    received: Arc<Mutex<Vec<Received>>>,
    task: JoinHandle<()>,
}

impl Receiver {
    /// Listens on a loopback port, answering `answer`.
    pub async fn start(answer: Answer) -> Receiver {
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let addr = listener.local_addr().expect("address");
        let answer = Arc::new(Mutex::new(answer));
        let received = Arc::new(Mutex::new(Vec::new()));
        let (a, r) = (Arc::clone(&answer), Arc::clone(&received));
        let task = tokio::spawn(async move {
            loop {
                let Ok((stream, _)) = listener.accept().await else {
                    return;
                };
                let (a, r) = (Arc::clone(&a), Arc::clone(&r));
                tokio::spawn(async move {
                    let service = service_fn(move |request: Request<Incoming>| {
                        let (a, r) = (Arc::clone(&a), Arc::clone(&r));
                        async move { Ok::<_, Infallible>(respond(request, &a, &r).await) }
                    });
                    let _ = hyper::server::conn::http1::Builder::new()
                        .serve_connection(TokioIo::new(stream), service)
                        .await;
                });
            }
        });
        Receiver {
            addr,
            answer,
            received,
            task,
        }
    }

    /// The URL to send to: a Slack-like path with a secret in it.
    pub fn url(&self) -> String {
        format!("http://{}/services/T000/B000/s3cr3t", self.addr)
    }

    /// Answers `answer` from now on.
    pub fn answer(&self, answer: Answer) {
        *self.answer.lock() = answer;
    }

    /// Every request so far.
    pub fn received(&self) -> Vec<Received> {
        self.received.lock().clone()
    }
}

impl Drop for Receiver {
    fn drop(&mut self) {
        self.task.abort();
    }
}

async fn respond(
    request: Request<Incoming>,
    answer: &Mutex<Answer>,
    received: &Mutex<Vec<Received>>,
) -> Response<Full<Bytes>> {
    let path = request.uri().path().to_owned();
    let content_type = request
        .headers()
        .get("content-type")
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default()
        .to_owned();
    let bytes = request
        .into_body()
        .collect()
        .await
        .map(|b| b.to_bytes())
        .unwrap_or_default();
    let body = serde_json::from_slice(&bytes).unwrap_or(Value::Null);
    received.lock().push(Received {
        at: tokio::time::Instant::now(),
        path,
        content_type,
        body,
    });
    let answer = answer.lock().clone();
    let (status, retry_after) = match answer {
        Answer::Accept => (200, None),
        Answer::Status(status, retry_after) => (status, retry_after),
        Answer::Slowly(wait) => {
            tokio::time::sleep(wait).await;
            (200, None)
        }
    };
    let mut response = Response::builder().status(status);
    if let Some(seconds) = retry_after {
        response = response.header("Retry-After", seconds.to_string());
    }
    response
        .body(Full::new(Bytes::from_static(b"ok")))
        .expect("a response")
}

/// A loopback URL nothing listens on: connections are refused.
pub async fn refusing_url() -> String {
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let addr = listener.local_addr().expect("address");
    drop(listener);
    format!("http://{addr}/hook")
}
