//! [`ServerOptions`]: where the HTTP server listens and with which certificate, as
//! kube-controller-manager's flags say it.
//!
//! Contract: `--secure-port` (default 10257) serves HTTPS, `0` turns it off; `--port` (default
//! 0 = off) serves plain HTTP; both on `--bind-address` (default `0.0.0.0`). Without
//! `--tls-cert-file`/`--tls-private-key-file` the HTTPS listener uses a self-signed certificate
//! made at start-up. Debug endpoints exist only with `--enable-debug-handlers`.
//!
//! The secure port asks the API server who each request is and what it may read
//! ([`DelegatedAuth`](super::auth::DelegatedAuth)), but for `--authorization-always-allow-paths`;
//! the plain `--port` asks nothing — it is for a loopback address or a test, never for a
//! network.

use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::path::PathBuf;
use std::time::Duration;

use super::auth::{AuthOptions, DEFAULT_ALWAYS_ALLOW_PATHS, DEFAULT_CACHE_TTL};
use kube_gc_core::duration::parse_duration;

/// kube-controller-manager's secure port.
pub const DEFAULT_SECURE_PORT: u16 = 10257;

/// The HTTP server's flags, to flatten into a command.
#[derive(Clone, Debug, PartialEq, Eq, clap::Args)]
pub struct ServerOptions {
    /// Address to serve on (all interfaces by default).
    #[arg(long = "bind-address", value_name = "IP", default_value_t = IpAddr::V4(Ipv4Addr::UNSPECIFIED))]
    pub bind_address: IpAddr,
    /// HTTPS port for health, metrics and debug endpoints; 0 disables HTTPS serving.
    #[arg(long = "secure-port", value_name = "PORT", default_value_t = DEFAULT_SECURE_PORT)]
    pub secure_port: u16,
    /// Plain HTTP port for the same endpoints; 0 (the default) disables it.
    #[arg(long = "port", value_name = "PORT", default_value_t = 0)]
    pub port: u16,
    /// PEM certificate (chain) for HTTPS; a self-signed one is generated when absent.
    #[arg(
        long = "tls-cert-file",
        value_name = "FILE",
        requires = "tls_private_key_file"
    )]
    pub tls_cert_file: Option<PathBuf>,
    /// PEM private key matching `--tls-cert-file`.
    #[arg(
        long = "tls-private-key-file",
        value_name = "FILE",
        requires = "tls_cert_file"
    )]
    pub tls_private_key_file: Option<PathBuf>,
    /// Serve /debug/workqueue and the controllers' debug pages.
    #[arg(long = "enable-debug-handlers", default_value_t = false)]
    pub enable_debug_handlers: bool,
    /// Paths the secure port serves without authentication or authorization (a trailing `*`
    /// matches everything under it).
    #[arg(
        long = "authorization-always-allow-paths",
        value_name = "PATHS",
        value_delimiter = ',',
        default_values_t = DEFAULT_ALWAYS_ALLOW_PATHS.map(str::to_owned)
    )]
    pub always_allow_paths: Vec<String>,
    /// How long the API server's review of a bearer token is remembered.
    #[arg(long = "authentication-token-webhook-cache-ttl", value_name = "DURATION", default_value = "10s", value_parser = parse_duration)]
    pub token_cache_ttl: Duration,
    /// How long an allowed access to the secure port is remembered.
    #[arg(long = "authorization-webhook-cache-authorized-ttl", value_name = "DURATION", default_value = "10s", value_parser = parse_duration)]
    pub authorized_cache_ttl: Duration,
    /// How long a denied access to the secure port is remembered.
    #[arg(long = "authorization-webhook-cache-unauthorized-ttl", value_name = "DURATION", default_value = "10s", value_parser = parse_duration)]
    pub unauthorized_cache_ttl: Duration,
}

impl Default for ServerOptions {
    fn default() -> Self {
        ServerOptions {
            bind_address: IpAddr::V4(Ipv4Addr::UNSPECIFIED),
            secure_port: DEFAULT_SECURE_PORT,
            port: 0,
            tls_cert_file: None,
            tls_private_key_file: None,
            enable_debug_handlers: false,
            always_allow_paths: DEFAULT_ALWAYS_ALLOW_PATHS.map(str::to_owned).to_vec(),
            token_cache_ttl: DEFAULT_CACHE_TTL,
            authorized_cache_ttl: DEFAULT_CACHE_TTL,
            unauthorized_cache_ttl: DEFAULT_CACHE_TTL,
        }
    }
}

/// Where the HTTPS certificate comes from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum CertificateSource {
    /// Generated at start-up, valid for `localhost` and the host name.
    SelfSigned,
    /// Read from PEM files.
    Files {
        /// The certificate chain.
        cert: PathBuf,
        /// The private key.
        key: PathBuf,
    },
}

/// One socket to listen on.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Listener {
    /// The address (port 0 picks a free port, for tests).
    pub address: SocketAddr,
    /// HTTPS with this certificate, or plain HTTP.
    pub tls: Option<CertificateSource>,
    /// Whether each request is authenticated and authorized ([`DelegatedAuth`]).
    ///
    /// [`DelegatedAuth`]: super::auth::DelegatedAuth
    pub authenticate: bool,
}

impl ServerOptions {
    /// How the secure port authenticates and authorizes.
    pub fn auth_options(&self) -> AuthOptions {
        AuthOptions {
            always_allow_paths: self.always_allow_paths.clone(),
            token_ttl: self.token_cache_ttl,
            authorized_ttl: self.authorized_cache_ttl,
            unauthorized_ttl: self.unauthorized_cache_ttl,
        }
    }

    /// The listeners these options ask for (none when both ports are 0).
    pub fn listeners(&self) -> Vec<Listener> {
        let mut listeners = Vec::new();
        if self.secure_port != 0 {
            let source = match (&self.tls_cert_file, &self.tls_private_key_file) {
                (Some(cert), Some(key)) => CertificateSource::Files {
                    cert: cert.clone(),
                    key: key.clone(),
                },
                _ => CertificateSource::SelfSigned,
            };
            listeners.push(Listener {
                address: SocketAddr::new(self.bind_address, self.secure_port),
                tls: Some(source),
                authenticate: true,
            });
        }
        if self.port != 0 {
            listeners.push(Listener {
                address: SocketAddr::new(self.bind_address, self.port),
                tls: None,
                authenticate: false,
            });
        }
        listeners
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    #[derive(clap::Parser)]
    struct Command {
        #[command(flatten)]
        server: ServerOptions,
    }

    #[test]
    fn defaults_serve_https_on_10257_only() {
        let options = Command::parse_from(["kube-gc"]).server;
        assert_eq!(options, ServerOptions::default());
        assert_eq!(
            options.listeners(),
            vec![Listener {
                address: "0.0.0.0:10257".parse().unwrap(),
                tls: Some(CertificateSource::SelfSigned),
                authenticate: true,
            }]
        );
    }

    #[test]
    fn ports_and_files_are_honoured() {
        let options = Command::parse_from([
            "kube-gc",
            "--secure-port=0",
            "--port=8080",
            "--bind-address=127.0.0.1",
        ])
        .server;
        assert_eq!(
            options.listeners(),
            vec![Listener {
                address: "127.0.0.1:8080".parse().unwrap(),
                tls: None,
                authenticate: false,
            }]
        );
        let files = Command::parse_from([
            "kube-gc",
            "--tls-cert-file=/c.pem",
            "--tls-private-key-file=/k.pem",
        ])
        .server;
        assert!(matches!(
            files.listeners()[0].tls,
            Some(CertificateSource::Files { .. })
        ));
        assert!(Command::try_parse_from(["kube-gc", "--tls-cert-file=/c.pem"]).is_err());
    }
}
