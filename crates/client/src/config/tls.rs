//! The TLS side of a cluster connection: which server certificates to trust and which client
//! certificate to present, turned into a [`rustls::ClientConfig`].
//!
//! Everything uses the ring crypto provider, passed explicitly; the process-wide default
//! provider is never installed or consulted. Server verification is on unless the kubeconfig
//! says `insecure-skip-tls-verify: true`, which logs a warning each time a configuration is built.
//! `tls-server-name` changes the name the certificate is verified against, whatever host the
//! connection was made to; the client also sends it as SNI by routing requests through that name
//! ([`SniRoute`](crate::sni::SniRoute)). ALPN offers `h2` then `http/1.1`.
//!
//! The client certificate lives in a [`ClientCertSlot`] that rustls asks at every handshake, so an
//! exec plugin that returns a fresh certificate can replace it without rebuilding the HTTP client.

use std::fmt;
use std::sync::Arc;

use parking_lot::RwLock;
use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::client::{ResolvesClientCert, WebPkiServerVerifier};
use rustls::crypto::CryptoProvider;
use rustls::sign::CertifiedKey;
use rustls::{DigitallySignedStruct, RootCertStore, SignatureScheme};
use rustls_pki_types::pem::PemObject;
use rustls_pki_types::{CertificateDer, PrivateKeyDer, ServerName, UnixTime};

use super::environment::SystemRoots;
use super::error::{ConfigError, FieldProblem};

/// The crypto provider every kube-gc TLS configuration uses.
pub fn crypto_provider() -> Arc<CryptoProvider> {
    Arc::new(rustls::crypto::ring::default_provider())
}

/// Where PEM material came from (for `describe`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PemSource {
    /// A `-data` field of the kubeconfig.
    Inline,
    /// A file: a kubeconfig path field or the service account's `ca.crt`.
    File(std::path::PathBuf),
}

/// CA certificates to trust instead of the system roots.
#[derive(Clone)]
pub struct CertificateAuthority {
    /// The certificates, DER.
    pub certificates: Vec<CertificateDer<'static>>,
    /// Where they came from.
    pub source: PemSource,
}

/// How to trust the server and what to present to it.
#[derive(Debug, Clone, Default)]
pub struct TlsSettings {
    /// Trust these instead of the system roots.
    pub certificate_authority: Option<CertificateAuthority>,
    /// Accept any server certificate (`insecure-skip-tls-verify`).
    pub insecure_skip_verify: bool,
    /// Verify the server certificate against this name instead of the URL host (and send it as
    /// SNI: see [`SniRoute`](crate::sni::SniRoute)).
    pub server_name: Option<String>,
    /// The client certificate slot (filled from the kubeconfig or by an exec plugin).
    pub client_certificate: ClientCertSlot,
    /// Where the kubeconfig's client certificate came from, if it names one.
    pub client_certificate_source: Option<PemSource>,
}

impl TlsSettings {
    /// Builds the rustls configuration the HTTP client uses
    /// (`reqwest::ClientBuilder::use_preconfigured_tls`).
    pub fn rustls_config(&self, roots: &SystemRoots) -> Result<rustls::ClientConfig, ConfigError> {
        let provider = crypto_provider();
        let verifier = self.server_verifier(&provider, roots)?;
        let mut config = rustls::ClientConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()?
            .dangerous()
            .with_custom_certificate_verifier(verifier)
            .with_client_cert_resolver(Arc::new(self.client_certificate.clone()));
        config.alpn_protocols = vec![b"h2".to_vec(), b"http/1.1".to_vec()];
        Ok(config)
    }

    fn server_verifier(
        &self,
        provider: &Arc<CryptoProvider>,
        roots: &SystemRoots,
    ) -> Result<Arc<dyn ServerCertVerifier>, ConfigError> {
        if self.insecure_skip_verify {
            tracing::warn!(
                "insecure-skip-tls-verify is set: the API server's certificate is NOT verified, \
                 anyone on the network path can impersonate it and read the credentials sent"
            );
            return Ok(Arc::new(AcceptAnyServerCert {
                provider: provider.clone(),
            }));
        }
        let store = self.root_store(roots)?;
        let webpki = WebPkiServerVerifier::builder_with_provider(Arc::new(store), provider.clone())
            .build()?;
        match &self.server_name {
            None => Ok(webpki),
            Some(name) => {
                let name = ServerName::try_from(name.clone())
                    .map_err(|_| ConfigError::InvalidServerName(name.clone()))?;
                Ok(Arc::new(VerifyAgainstName {
                    inner: webpki,
                    name,
                }))
            }
        }
    }

    fn root_store(&self, roots: &SystemRoots) -> Result<RootCertStore, ConfigError> {
        let mut store = RootCertStore::empty();
        match (&self.certificate_authority, roots) {
            (Some(ca), _) => {
                let (added, _) = store.add_parsable_certificates(ca.certificates.iter().cloned());
                if added == 0 {
                    return Err(ConfigError::UnusableCertificateAuthority);
                }
            }
            (None, SystemRoots::Fixed(certificates)) => {
                store.add_parsable_certificates(certificates.iter().cloned());
            }
            (None, SystemRoots::Native) => {
                let native = rustls_native_certs::load_native_certs();
                let (added, _) = store.add_parsable_certificates(native.certs);
                if added == 0 {
                    let errors: Vec<String> = native.errors.iter().map(|e| e.to_string()).collect();
                    return Err(ConfigError::NoTrustRoots(errors.join("; ")));
                }
            }
        }
        Ok(store)
    }
}

impl fmt::Debug for CertificateAuthority {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CertificateAuthority")
            .field("certificates", &self.certificates.len())
            .field("source", &self.source)
            .finish()
    }
}

/// Parses PEM certificates; at least one is required.
pub fn parse_certificates(pem: &[u8]) -> Result<Vec<CertificateDer<'static>>, FieldProblem> {
    let certificates = CertificateDer::pem_slice_iter(pem).collect::<Result<Vec<_>, _>>()?;
    if certificates.is_empty() {
        return Err(FieldProblem::NoCertificate);
    }
    Ok(certificates)
}

/// Parses a PEM private key: PKCS#1 RSA, SEC1 EC or PKCS#8.
pub fn parse_private_key(pem: &[u8]) -> Result<PrivateKeyDer<'static>, FieldProblem> {
    PrivateKeyDer::from_pem_slice(pem).map_err(|err| match err {
        rustls_pki_types::pem::Error::NoItemsFound => FieldProblem::NoPrivateKey,
        other => FieldProblem::Pem(other),
    })
}

/// Pairs a certificate chain with its key, checking that they belong together.
pub fn certified_key(
    chain: Vec<CertificateDer<'static>>,
    key: PrivateKeyDer<'static>,
) -> Result<Arc<CertifiedKey>, rustls::Error> {
    CertifiedKey::from_der(chain, key, &crypto_provider()).map(Arc::new)
}

/// The client certificate presented at the next handshake; shared by clones.
#[derive(Clone, Default)]
pub struct ClientCertSlot {
    current: Arc<RwLock<Option<Arc<CertifiedKey>>>>,
}

impl ClientCertSlot {
    /// A slot holding `key` from the start.
    pub fn with(key: Arc<CertifiedKey>) -> Self {
        let slot = ClientCertSlot::default();
        slot.set(key);
        slot
    }

    /// Presents `key` from the next handshake on.
    pub fn set(&self, key: Arc<CertifiedKey>) {
        *self.current.write() = Some(key);
    }

    /// Whether a certificate is present.
    pub fn is_set(&self) -> bool {
        self.current.read().is_some()
    }
}

impl fmt::Debug for ClientCertSlot {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let state = if self.is_set() {
            "<certificate>"
        } else {
            "<none>"
        };
        f.debug_tuple("ClientCertSlot").field(&state).finish()
    }
}

impl ResolvesClientCert for ClientCertSlot {
    fn resolve(&self, _hints: &[&[u8]], _schemes: &[SignatureScheme]) -> Option<Arc<CertifiedKey>> {
        self.current.read().clone()
    }

    fn has_certs(&self) -> bool {
        self.is_set()
    }
}

/// `insecure-skip-tls-verify`: any certificate is accepted, but handshake signatures are still
/// checked so the session is at least bound to the certificate the server sent.
#[derive(Debug)]
struct AcceptAnyServerCert {
    provider: Arc<CryptoProvider>,
}

impl ServerCertVerifier for AcceptAnyServerCert {
    fn verify_server_cert(
        &self,
        _end_entity: &CertificateDer<'_>,
        _intermediates: &[CertificateDer<'_>],
        _server_name: &ServerName<'_>,
        _ocsp_response: &[u8],
        _now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        Ok(ServerCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        let algorithms = &self.provider.signature_verification_algorithms;
        rustls::crypto::verify_tls12_signature(message, cert, dss, algorithms)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        let algorithms = &self.provider.signature_verification_algorithms;
        rustls::crypto::verify_tls13_signature(message, cert, dss, algorithms)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.provider
            .signature_verification_algorithms
            .supported_schemes()
    }
}

/// `tls-server-name`: full verification, against the configured name instead of the URL host.
#[derive(Debug)]
struct VerifyAgainstName {
    inner: Arc<WebPkiServerVerifier>,
    name: ServerName<'static>,
}

impl ServerCertVerifier for VerifyAgainstName {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        _server_name: &ServerName<'_>,
        ocsp_response: &[u8],
        now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        self.inner
            .verify_server_cert(end_entity, intermediates, &self.name, ocsp_response, now)
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.inner.verify_tls12_signature(message, cert, dss)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.inner.verify_tls13_signature(message, cert, dss)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.inner.supported_verify_schemes()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn self_signed() -> (String, String) {
        let cert = rcgen::generate_simple_self_signed(vec!["localhost".into()]).unwrap();
        (cert.cert.pem(), cert.signing_key.serialize_pem())
    }

    #[test]
    fn pem_certificates_and_keys_parse() {
        let (cert, key) = self_signed();
        assert_eq!(parse_certificates(cert.as_bytes()).unwrap().len(), 1);
        let key = parse_private_key(key.as_bytes()).unwrap();
        let chain = parse_certificates(cert.as_bytes()).unwrap();
        assert!(certified_key(chain, key).is_ok());
    }

    #[test]
    fn missing_pem_items_are_named() {
        assert!(matches!(
            parse_certificates(b"nothing"),
            Err(FieldProblem::NoCertificate)
        ));
        assert!(matches!(
            parse_private_key(b"nothing"),
            Err(FieldProblem::NoPrivateKey)
        ));
    }

    #[test]
    fn a_key_from_another_certificate_is_refused() {
        let (cert, _) = self_signed();
        let (_, other_key) = self_signed();
        let chain = parse_certificates(cert.as_bytes()).unwrap();
        let key = parse_private_key(other_key.as_bytes()).unwrap();
        assert!(certified_key(chain, key).is_err());
    }

    #[test]
    fn config_offers_h2_and_http11() {
        let (cert, _) = self_signed();
        let settings = TlsSettings {
            certificate_authority: Some(CertificateAuthority {
                certificates: parse_certificates(cert.as_bytes()).unwrap(),
                source: PemSource::Inline,
            }),
            ..TlsSettings::default()
        };
        let config = settings
            .rustls_config(&SystemRoots::Fixed(Vec::new()))
            .unwrap();
        assert_eq!(
            config.alpn_protocols,
            [b"h2".to_vec(), b"http/1.1".to_vec()]
        );
    }

    #[test]
    fn an_empty_trust_store_is_refused_up_front() {
        let settings = TlsSettings::default();
        let result = settings.rustls_config(&SystemRoots::Fixed(Vec::new()));
        assert!(matches!(result, Err(ConfigError::Verifier(_))));
    }
}
