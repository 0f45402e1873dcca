//! In-cluster configuration: what a pod uses when it has no kubeconfig.
//!
//! The API server is `https://$KUBERNETES_SERVICE_HOST:$KUBERNETES_SERVICE_PORT`; the
//! credentials are the pod's service account, mounted in one directory (normally
//! `/var/run/secrets/kubernetes.io/serviceaccount`, injectable through [`Environment`]): `token`
//! (a projected token that the kubelet rotates, so it is re-read, see
//! [`TokenFile`]), `ca.crt` (the cluster CA) and `namespace` (the pod's
//! namespace, the default for namespaced requests; `POD_NAMESPACE` overrides it, as in client-go).

use std::path::Path;

use url::Url;

use super::auth::{Auth, TokenFile};
use super::environment::Environment;
use super::error::ConfigError;
use super::impersonation::Impersonation;
use super::tls::{self, CertificateAuthority, PemSource, TlsSettings};
use super::{ClientConfig, Origin};

/// Whether in-cluster configuration applies (`KUBERNETES_SERVICE_HOST` is set).
pub fn is_possible(env: &Environment) -> bool {
    env.var("KUBERNETES_SERVICE_HOST").is_some()
}

/// Builds the in-cluster configuration. Blocking file I/O: call at start-up.
pub fn from_service_account(env: &Environment) -> Result<ClientConfig, ConfigError> {
    let host = env
        .var("KUBERNETES_SERVICE_HOST")
        .ok_or_else(|| ConfigError::InCluster("KUBERNETES_SERVICE_HOST is not set".into()))?;
    let port = env
        .var("KUBERNETES_SERVICE_PORT")
        .ok_or_else(|| ConfigError::InCluster("KUBERNETES_SERVICE_PORT is not set".into()))?;
    let server = server_url(host, port)?;
    let dir = env.service_account_dir();

    let token_path = dir.join("token");
    read(&token_path)?;
    let ca_path = dir.join("ca.crt");
    let ca_pem = read(&ca_path)?;
    let certificates = tls::parse_certificates(&ca_pem)
        .map_err(|problem| ConfigError::InCluster(format!("{}: {problem}", ca_path.display())))?;
    let default_namespace = match env.var("POD_NAMESPACE") {
        Some(namespace) => namespace.to_string(),
        None => namespace_from_file(&dir.join("namespace")),
    };

    Ok(ClientConfig {
        server,
        tls: TlsSettings {
            certificate_authority: Some(CertificateAuthority {
                certificates,
                source: PemSource::File(ca_path),
            }),
            ..TlsSettings::default()
        },
        proxy_url: None,
        disable_compression: false,
        auth: Auth::TokenFile(TokenFile::new(token_path)),
        impersonation: Impersonation::default(),
        default_namespace,
        origin: Origin::InCluster {
            service_account_dir: dir.to_path_buf(),
        },
        system_roots: env.system_roots().clone(),
    })
}

fn server_url(host: &str, port: &str) -> Result<Url, ConfigError> {
    // An IPv6 service address needs brackets in a URL.
    let host = if host.contains(':') && !host.starts_with('[') {
        format!("[{host}]")
    } else {
        host.to_string()
    };
    Url::parse(&format!("https://{host}:{port}")).map_err(|err| {
        ConfigError::InCluster(format!(
            "KUBERNETES_SERVICE_HOST/PORT do not form a URL ({host}:{port}): {err}"
        ))
    })
}

fn read(path: &Path) -> Result<Vec<u8>, ConfigError> {
    std::fs::read(path).map_err(|source| ConfigError::InClusterFile {
        path: path.to_path_buf(),
        source,
    })
}

/// The pod's namespace, or `default` when the file is missing or empty (as client-go does).
fn namespace_from_file(path: &Path) -> String {
    std::fs::read_to_string(path)
        .ok()
        .map(|text| text.trim().to_string())
        .filter(|namespace| !namespace.is_empty())
        .unwrap_or_else(|| "default".to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ipv6_hosts_are_bracketed() {
        let url = server_url("fd00::1", "443").unwrap();
        assert_eq!(url.as_str(), "https://[fd00::1]/");
        let url = server_url("10.96.0.1", "6443").unwrap();
        assert_eq!(url.as_str(), "https://10.96.0.1:6443/");
    }

    #[test]
    fn missing_variables_are_named() {
        let env = Environment::empty().with_var("KUBERNETES_SERVICE_HOST", "10.96.0.1");
        assert!(is_possible(&env));
        let err = from_service_account(&env).unwrap_err().to_string();
        assert!(err.contains("KUBERNETES_SERVICE_PORT"), "{err}");
        assert!(!is_possible(&Environment::empty()));
    }
}
