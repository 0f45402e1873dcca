//! The HTTPS listener's rustls configuration: a certificate from files, or a self-signed one.
//!
//! Contract: the configuration offers HTTP/2 and HTTP/1.1 (ALPN) and uses the crate's ring
//! provider. A self-signed certificate is valid for `localhost`, `127.0.0.1` and the host name,
//! like the one kube-controller-manager generates when given none; scrapers either skip
//! verification or are given a real certificate through the flags.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use rustls::ServerConfig;
use rustls_pki_types::pem::PemObject;
use rustls_pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer};

use super::options::CertificateSource;
use kube_gc_client::config::tls::crypto_provider;

/// Why the HTTPS configuration could not be built.
#[derive(Debug, thiserror::Error)]
pub enum TlsError {
    /// A PEM file could not be read or holds nothing usable.
    #[error("reading {what} from {path}: {reason}")]
    Pem {
        /// `certificate` or `private key`.
        what: &'static str,
        /// The file.
        path: PathBuf,
        /// Why.
        reason: String,
    },
    /// rcgen could not generate the self-signed certificate.
    #[error("generating a self-signed certificate: {0}")]
    Generate(#[from] rcgen::Error),
    /// rustls refused the certificate or key.
    #[error("the serving certificate is not usable: {0}")]
    Rustls(#[from] rustls::Error),
}

/// The rustls configuration for `source`.
pub fn server_config(source: &CertificateSource) -> Result<Arc<ServerConfig>, TlsError> {
    let (chain, key) = match source {
        CertificateSource::SelfSigned => self_signed()?,
        CertificateSource::Files { cert, key } => (read_chain(cert)?, read_key(key)?),
    };
    let mut config = ServerConfig::builder_with_provider(crypto_provider())
        .with_safe_default_protocol_versions()?
        .with_no_client_auth()
        .with_single_cert(chain, key)?;
    config.alpn_protocols = vec![b"h2".to_vec(), b"http/1.1".to_vec()];
    Ok(Arc::new(config))
}

/// A fresh key and a certificate for `localhost`, `127.0.0.1` and the host name.
fn self_signed() -> Result<(Vec<CertificateDer<'static>>, PrivateKeyDer<'static>), TlsError> {
    let mut names = vec!["localhost".to_owned(), "127.0.0.1".to_owned()];
    let host = kube_gc_runtime::leaderelection::hostname();
    if !names.contains(&host) {
        names.push(host);
    }
    let certified = rcgen::generate_simple_self_signed(names)?;
    let key = PrivatePkcs8KeyDer::from(certified.signing_key.serialize_der());
    Ok((vec![certified.cert.der().clone()], key.into()))
}

fn pem_error(what: &'static str, path: &Path, reason: impl ToString) -> TlsError {
    TlsError::Pem {
        what,
        path: path.to_owned(),
        reason: reason.to_string(),
    }
}

fn read_chain(path: &Path) -> Result<Vec<CertificateDer<'static>>, TlsError> {
    let chain = CertificateDer::pem_file_iter(path)
        .map_err(|e| pem_error("certificate", path, e))?
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| pem_error("certificate", path, e))?;
    if chain.is_empty() {
        return Err(pem_error("certificate", path, "no CERTIFICATE block"));
    }
    Ok(chain)
}

fn read_key(path: &Path) -> Result<PrivateKeyDer<'static>, TlsError> {
    PrivateKeyDer::from_pem_file(path).map_err(|e| pem_error("private key", path, e))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_self_signed_configuration_offers_h2_and_http1() {
        let config = server_config(&CertificateSource::SelfSigned).unwrap();
        assert_eq!(
            config.alpn_protocols,
            vec![b"h2".to_vec(), b"http/1.1".to_vec()]
        );
    }

    #[test]
    fn files_are_read_and_bad_files_are_named() {
        let dir = tempfile::tempdir().unwrap();
        let certified = rcgen::generate_simple_self_signed(vec!["localhost".into()]).unwrap();
        let (cert, key) = (dir.path().join("tls.crt"), dir.path().join("tls.key"));
        std::fs::write(&cert, certified.cert.pem()).unwrap();
        std::fs::write(&key, certified.signing_key.serialize_pem()).unwrap();
        let files = CertificateSource::Files {
            cert: cert.clone(),
            key: key.clone(),
        };
        assert!(server_config(&files).is_ok());
        let swapped = CertificateSource::Files {
            cert: key,
            key: cert,
        };
        let error = server_config(&swapped).unwrap_err().to_string();
        assert!(error.contains("tls.key"), "{error}");
    }
}
