//! Where the API server is and how to talk to it: kubeconfig files, in-cluster service accounts,
//! credentials and TLS, resolved into one [`ClientConfig`].
//!
//! [`ClientConfig::load`] does what kubectl does: `--kubeconfig`, else `KUBECONFIG`'s list of
//! files merged, else `~/.kube/config`; `--context` or `current-context`; and, when no kubeconfig
//! exists at all but the process runs in a pod, the pod's service account. The REST client then
//! needs four things from the result:
//!
//! - [`ClientConfig::server`], the base URL, and [`ClientConfig::proxy_url`];
//! - [`ClientConfig::rustls_config`] for `reqwest::ClientBuilder::use_preconfigured_tls`;
//! - [`Auth::authorization_header`] before each request, and [`Auth::invalidate`] after a 401;
//! - [`ClientConfig::impersonation`]'s headers on each request.
//!
//! The pieces, in reading order: [`environment`] (the only door to process state), [`text`] and
//! [`kubeconfig`] (the file format), [`loader`] (finding and merging files), [`resolve`] and
//! [`in_cluster`] (building a `ClientConfig`), [`tls`], [`auth`], [`impersonation`], [`secret`]
//! (redaction), [`error`] and [`describe`] (`kube-gc config view`).

pub mod auth;
pub mod describe;
pub mod environment;
pub mod error;
pub mod impersonation;
pub mod in_cluster;
pub mod kubeconfig;
pub mod loader;
pub mod resolve;
pub mod secret;
pub mod text;
pub mod tls;

use std::path::PathBuf;

use url::Url;

pub use auth::{Auth, AuthError, EXEC_TIMEOUT};
pub use environment::{Environment, SystemRoots};
pub use error::ConfigError;
pub use impersonation::Impersonation;
pub use secret::{ProxyUrl, Secret};
pub use tls::TlsSettings;

/// What the command line says about configuration (`--kubeconfig`, `--context`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct LoadOptions {
    /// `--kubeconfig`: read this file only.
    pub kubeconfig: Option<PathBuf>,
    /// `--context`: use this context instead of `current-context`.
    pub context: Option<String>,
}

impl LoadOptions {
    /// `--kubeconfig <path>` and nothing else.
    pub fn file(path: impl Into<PathBuf>) -> LoadOptions {
        LoadOptions {
            kubeconfig: Some(path.into()),
            context: None,
        }
    }
}

/// Where a configuration came from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Origin {
    /// One or more kubeconfig files.
    Kubeconfig {
        /// The context used.
        context: String,
        /// The cluster it names.
        cluster: String,
        /// The user it names (`None`: anonymous).
        user: Option<String>,
        /// The files merged, in priority order.
        files: Vec<PathBuf>,
    },
    /// The pod's service account.
    InCluster {
        /// The directory holding `token`, `ca.crt` and `namespace`.
        service_account_dir: PathBuf,
    },
}

/// A resolved configuration: everything needed to open authenticated connections to one API
/// server. Its `Debug` output holds no secret.
#[derive(Debug, Clone)]
pub struct ClientConfig {
    /// Base URL of the API server (may carry a path prefix).
    pub server: Url,
    /// Server verification and client certificate.
    pub tls: TlsSettings,
    /// Proxy for every request (`proxy-url`); prints without its password.
    pub proxy_url: Option<ProxyUrl>,
    /// Do not ask for compressed responses (`disable-compression`).
    pub disable_compression: bool,
    /// The credential source.
    pub auth: Auth,
    /// Who to impersonate.
    pub impersonation: Impersonation,
    /// The namespace for namespaced requests that name none.
    pub default_namespace: String,
    /// Context, cluster, user and files, or in-cluster.
    pub origin: Origin,
    /// Trusted roots when no CA is configured (from the [`Environment`]).
    pub system_roots: SystemRoots,
}

impl ClientConfig {
    /// Loads the configuration kubectl would use with these flags (see the module
    /// documentation). Blocking file I/O: call at start-up.
    pub fn load(options: &LoadOptions, env: &Environment) -> Result<ClientConfig, ConfigError> {
        let search = loader::Search::new(options.kubeconfig.as_deref(), env);
        let merged = search.load()?;
        let nothing_chosen = options.kubeconfig.is_none() && options.context.is_none();
        if merged.is_empty() && nothing_chosen {
            if in_cluster::is_possible(env) {
                return in_cluster::from_service_account(env);
            }
            return Err(ConfigError::NoConfiguration {
                looked_at: search.describe(),
            });
        }
        resolve::from_kubeconfig(&merged, options.context.as_deref(), env)
    }

    /// The in-cluster configuration, whether or not a kubeconfig exists.
    pub fn in_cluster(env: &Environment) -> Result<ClientConfig, ConfigError> {
        in_cluster::from_service_account(env)
    }

    /// The rustls configuration for the HTTP client (ring provider, ALPN h2 + http/1.1).
    pub fn rustls_config(&self) -> Result<rustls::ClientConfig, ConfigError> {
        self.tls.rustls_config(&self.system_roots)
    }

    /// `tls-server-name`: the name the server certificate is verified against, and the SNI sent,
    /// when it differs from the URL host.
    pub fn tls_server_name(&self) -> Option<&str> {
        self.tls.server_name.as_deref()
    }

    /// A human-readable summary with secrets redacted (`kube-gc config view`).
    pub fn describe(&self) -> String {
        describe::describe(self)
    }

    /// Whose credentials this configuration presents, in one line (no secret in it).
    pub fn whose_credentials(&self) -> String {
        describe::whose_credentials(self)
    }
}

/// The text `kube-gc config view [--kubeconfig F] [--context C]` prints.
pub fn config_view(options: &LoadOptions, env: &Environment) -> Result<String, ConfigError> {
    ClientConfig::load(options, env).map(|config| config.describe())
}
