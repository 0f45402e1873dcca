//! [`ClientOptions`]: the knobs of a [`Client`](super::Client) that do not come from the
//! kubeconfig (rate limits, timeouts, user agent), and [`BuildError`], why a client could not be
//! built.
//!
//! Contract: `ClientOptions::default()` is what kube-controller-manager runs with: 20 requests
//! per second with bursts of 30, a per-request timeout, and `User-Agent: kube-gc/<version>`.

use std::sync::Arc;
use std::time::Duration;

use super::config::error::ConfigError;
use super::config::impersonation::InvalidImpersonation;
use super::observer::{ObserverSlot, RequestObserver};
use super::throttle::{DEFAULT_BURST, DEFAULT_QPS};

/// The `User-Agent` every request carries unless told otherwise.
pub const DEFAULT_USER_AGENT: &str = concat!("kube-gc/", env!("CARGO_PKG_VERSION"));

/// How long a request (not a watch) may take, body included, before it fails with
/// [`Error::Timeout`](super::Error::Timeout). Generous, because a list served from the watch
/// cache ignores `limit` and may be hundreds of megabytes.
pub const DEFAULT_REQUEST_TIMEOUT: Duration = Duration::from_secs(60);

/// How long establishing a connection (TCP and TLS) may take.
pub const DEFAULT_CONNECT_TIMEOUT: Duration = Duration::from_secs(30);

/// How long an unused pooled connection is kept open.
pub const DEFAULT_IDLE_CONNECTION_TIMEOUT: Duration = Duration::from_secs(90);

/// Options of a [`Client`](super::Client) beyond its [`ClientConfig`](super::config::ClientConfig).
#[derive(Clone, Debug, PartialEq)]
pub struct ClientOptions {
    /// Requests per second on average (`--kube-api-qps`); zero or less disables throttling.
    pub qps: f64,
    /// Requests allowed at once before throttling starts (`--kube-api-burst`).
    pub burst: u32,
    /// Timeout of each non-watch request; `None` for none.
    pub request_timeout: Option<Duration>,
    /// Timeout of establishing a connection; `None` for none.
    pub connect_timeout: Option<Duration>,
    /// How long idle pooled connections are kept; `None` keeps them until the server closes
    /// them.
    pub idle_connection_timeout: Option<Duration>,
    /// The `User-Agent` header.
    pub user_agent: String,
    /// Told about every HTTP attempt (request metrics); none by default.
    pub request_observer: ObserverSlot,
}

impl Default for ClientOptions {
    fn default() -> Self {
        ClientOptions {
            qps: DEFAULT_QPS,
            burst: DEFAULT_BURST,
            request_timeout: Some(DEFAULT_REQUEST_TIMEOUT),
            connect_timeout: Some(DEFAULT_CONNECT_TIMEOUT),
            idle_connection_timeout: Some(DEFAULT_IDLE_CONNECTION_TIMEOUT),
            user_agent: DEFAULT_USER_AGENT.to_owned(),
            request_observer: ObserverSlot::default(),
        }
    }
}

impl ClientOptions {
    /// Throttled at `qps` / `burst`.
    pub fn with_rate(mut self, qps: f64, burst: u32) -> Self {
        self.qps = qps;
        self.burst = burst;
        self
    }

    /// Reports every HTTP attempt to `observer`.
    pub fn with_observer(mut self, observer: Arc<dyn RequestObserver>) -> Self {
        self.request_observer = ObserverSlot(Some(observer));
        self
    }

    /// No client-side timers at all: no request, connect or idle timeouts. For tests on tokio's
    /// paused clock, where any pending timer would fire as soon as the test waits on a socket.
    pub fn without_timeouts(mut self) -> Self {
        self.request_timeout = None;
        self.connect_timeout = None;
        self.idle_connection_timeout = None;
        self
    }
}

/// Why a [`Client`](super::Client) could not be built.
#[derive(Debug, thiserror::Error)]
pub enum BuildError {
    /// The server URL is not `http` or `https`.
    #[error("API server URL {0} must use http or https")]
    UnsupportedScheme(String),
    /// The TLS configuration could not be built (bad CA, client certificate…).
    #[error(transparent)]
    Tls(#[from] ConfigError),
    /// rustls refused the protocol versions for its crypto provider.
    #[error("could not build the TLS configuration: {0}")]
    Rustls(#[source] rustls::Error),
    /// An impersonation value cannot be sent as a header.
    #[error(transparent)]
    Impersonation(#[from] InvalidImpersonation),
    /// The user agent cannot be sent as a header.
    #[error("user agent {0:?} cannot be sent in an HTTP header")]
    UserAgent(String),
    /// The proxy URL was refused by the HTTP client.
    #[error("proxy URL {url} is not usable: {source}")]
    Proxy {
        /// The proxy URL, its password redacted (see
        /// [`redacted_url`](crate::config::secret::redacted_url)).
        url: String,
        /// The HTTP client's reason.
        #[source]
        source: reqwest::Error,
    },
    /// The server's DNS name did not resolve, and `tls-server-name` needs its addresses (see
    /// [`SniRoute`](super::sni::SniRoute)).
    #[error("could not resolve the API server host {host} (needed to send tls-server-name as SNI): {source}")]
    ResolveServer {
        /// The server URL's host.
        host: String,
        /// The resolver's reason.
        #[source]
        source: std::io::Error,
    },
    /// The HTTP client could not be built.
    #[error("could not build the HTTP client: {0}")]
    Http(#[source] reqwest::Error),
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_are_kube_controller_managers() {
        let options = ClientOptions::default();
        assert_eq!((options.qps, options.burst), (20.0, 30));
        assert_eq!(
            options.user_agent,
            format!("kube-gc/{}", env!("CARGO_PKG_VERSION"))
        );
        let bare = ClientOptions::default().without_timeouts();
        assert_eq!(bare.request_timeout, None);
        assert_eq!(bare.idle_connection_timeout, None);
    }
}
