//! TLS for the simulated API server: a throw-away certificate authority and a server
//! certificate it signed, generated in memory for each server.
//!
//! Contract: [`generate`] creates a fresh CA (rcgen) and a server certificate valid for
//! `localhost`, `127.0.0.1`, `::1` and any extra hosts given, and a rustls server configuration
//! using it that offers ALPN `h2` and `http/1.1`, like kube-apiserver. Clients trust the server by
//! trusting [`SimTls::ca_pem`] (it goes into the kubeconfig). Client certificates are optional: a
//! client that presents one must present one signed by the same CA (see
//! [`SimTls::generate_client_cert`]), and the server can read it from the connection to
//! authenticate the request; a client without one is let through to authenticate otherwise
//! (bearer token).
//!
//! Cryptography always comes from rustls' ring provider, passed explicitly; nothing here
//! installs or reads a process-wide default provider.

use std::sync::Arc;

use rcgen::{
    BasicConstraints, CertificateParams, DnType, ExtendedKeyUsagePurpose, IsCa, Issuer, KeyPair,
    KeyUsagePurpose,
};
use rustls::crypto::CryptoProvider;
use rustls::server::WebPkiClientVerifier;
use rustls::{RootCertStore, ServerConfig};
use rustls_pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer};
use thiserror::Error;

/// The hosts every server certificate is valid for.
pub const DEFAULT_HOSTS: [&str; 3] = ["localhost", "127.0.0.1", "::1"];

/// Why TLS material could not be generated.
#[derive(Debug, Error)]
pub enum TlsError {
    /// rcgen refused the parameters or failed to sign.
    #[error("generating a certificate: {0}")]
    Certificate(#[from] rcgen::Error),
    /// rustls refused the certificate, key or protocol settings.
    #[error("configuring TLS: {0}")]
    Rustls(#[from] rustls::Error),
    /// The client-certificate verifier could not be built.
    #[error("configuring client certificate verification: {0}")]
    ClientVerifier(#[from] rustls::server::VerifierBuilderError),
    /// Kubernetes reads each group from its own `O` attribute, and rcgen holds one value per
    /// attribute type, so a client certificate can carry at most one group.
    #[error("a client certificate can carry at most one group, {0} were asked for")]
    TooManyGroups(usize),
}

/// A CA and the server configuration of one simulated API server.
pub struct SimTls {
    /// The CA certificate, PEM encoded, for clients to trust.
    pub ca_pem: String,
    /// The CA certificate, DER encoded.
    pub ca_der: Vec<u8>,
    server_config: Arc<ServerConfig>,
    issuer: Issuer<'static, KeyPair>,
}

impl std::fmt::Debug for SimTls {
    /// Shows the CA, never the keys.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SimTls")
            .field("ca_pem", &self.ca_pem)
            .finish_non_exhaustive()
    }
}

/// The ring provider, explicitly (never the process default).
fn provider() -> Arc<CryptoProvider> {
    Arc::new(rustls::crypto::ring::default_provider())
}

fn pkcs8(key: &KeyPair) -> PrivateKeyDer<'static> {
    PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(key.serialize_der()))
}

/// Generates a fresh CA and a server certificate for [`DEFAULT_HOSTS`] plus `hosts` (DNS names
/// or IP addresses).
pub fn generate(hosts: &[&str]) -> Result<SimTls, TlsError> {
    let ca_key = KeyPair::generate()?;
    let mut ca_params = CertificateParams::default();
    ca_params
        .distinguished_name
        .push(DnType::CommonName, "kube-gc simulated API server CA");
    ca_params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    ca_params.key_usages = vec![
        KeyUsagePurpose::KeyCertSign,
        KeyUsagePurpose::CrlSign,
        KeyUsagePurpose::DigitalSignature,
    ];
    let ca_cert = ca_params.self_signed(&ca_key)?;
    let issuer = Issuer::new(ca_params, ca_key);

    let mut names: Vec<String> = DEFAULT_HOSTS.iter().map(|h| (*h).to_owned()).collect();
    for host in hosts {
        if !names.iter().any(|n| n == host) {
            names.push((*host).to_owned());
        }
    }
    let server_key = KeyPair::generate()?;
    let mut server_params = CertificateParams::new(names)?;
    server_params
        .distinguished_name
        .push(DnType::CommonName, "kube-apiserver");
    server_params.extended_key_usages = vec![ExtendedKeyUsagePurpose::ServerAuth];
    server_params.use_authority_key_identifier_extension = true;
    let server_cert = server_params.signed_by(&server_key, &issuer)?;

    let mut roots = RootCertStore::empty();
    roots.add(ca_cert.der().clone())?;
    let client_verifier = WebPkiClientVerifier::builder_with_provider(Arc::new(roots), provider())
        .allow_unauthenticated()
        .build()?;
    let mut server_config = ServerConfig::builder_with_provider(provider())
        .with_safe_default_protocol_versions()?
        .with_client_cert_verifier(client_verifier)
        .with_single_cert(
            vec![server_cert.der().clone(), ca_cert.der().clone()],
            pkcs8(&server_key),
        )?;
    server_config.alpn_protocols = vec![b"h2".to_vec(), b"http/1.1".to_vec()];

    Ok(SimTls {
        ca_pem: ca_cert.pem(),
        ca_der: ca_cert.der().to_vec(),
        server_config: Arc::new(server_config),
        issuer,
    })
}

impl SimTls {
    /// The rustls server configuration (for servers not built on tokio-rustls).
    pub fn server_config(&self) -> Arc<ServerConfig> {
        Arc::clone(&self.server_config)
    }

    /// An acceptor that performs the server side of the handshake on accepted connections.
    pub fn acceptor(&self) -> tokio_rustls::TlsAcceptor {
        tokio_rustls::TlsAcceptor::from(self.server_config())
    }

    /// The CA certificate as rustls takes it (for a client's root store).
    pub fn ca_certificate(&self) -> CertificateDer<'static> {
        CertificateDer::from(self.ca_der.clone())
    }

    /// A client certificate signed by the CA, `(cert_pem, key_pem)`, identifying the user
    /// `common_name` in (at most one of) `groups`, the way Kubernetes reads a client
    /// certificate: user = CN, group = O.
    pub fn generate_client_cert(
        &self,
        common_name: &str,
        groups: &[&str],
    ) -> Result<(String, String), TlsError> {
        if groups.len() > 1 {
            return Err(TlsError::TooManyGroups(groups.len()));
        }
        let key = KeyPair::generate()?;
        let mut params = CertificateParams::default();
        params.distinguished_name = rcgen::DistinguishedName::new();
        params
            .distinguished_name
            .push(DnType::CommonName, common_name);
        if let Some(group) = groups.first() {
            params
                .distinguished_name
                .push(DnType::OrganizationName, *group);
        }
        params.extended_key_usages = vec![ExtendedKeyUsagePurpose::ClientAuth];
        params.use_authority_key_identifier_extension = true;
        let cert = params.signed_by(&key, &self.issuer)?;
        Ok((cert.pem(), key.serialize_pem()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rustls::ClientConfig;
    use rustls_pki_types::pem::PemObject;
    use rustls_pki_types::ServerName;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    use tokio_rustls::TlsConnector;

    fn client_config(trusted: &SimTls, identity: Option<(String, String)>) -> ClientConfig {
        let mut roots = RootCertStore::empty();
        roots.add(trusted.ca_certificate()).expect("CA parses");
        let builder = ClientConfig::builder_with_provider(provider())
            .with_safe_default_protocol_versions()
            .expect("ring supports the defaults")
            .with_root_certificates(roots);
        let mut config = match identity {
            None => builder.with_no_client_auth(),
            Some((cert_pem, key_pem)) => {
                let cert = CertificateDer::from_pem_slice(cert_pem.as_bytes()).expect("cert PEM");
                let key = PrivateKeyDer::from_pem_slice(key_pem.as_bytes()).expect("key PEM");
                builder
                    .with_client_auth_cert(vec![cert], key)
                    .expect("client identity")
            }
        };
        config.alpn_protocols = vec![b"h2".to_vec()];
        config
    }

    /// Runs a handshake over an in-memory pipe and exchanges one byte each way; returns the
    /// negotiated ALPN protocol and whether the server saw a client certificate.
    async fn handshake(
        server: &SimTls,
        client: ClientConfig,
        host: &str,
    ) -> Result<(Option<Vec<u8>>, bool), std::io::Error> {
        let (client_io, server_io) = tokio::io::duplex(64 * 1024);
        let acceptor = server.acceptor();
        let server_side = async move {
            let mut stream = acceptor.accept(server_io).await?;
            let mut byte = [0u8; 1];
            stream.read_exact(&mut byte).await?;
            stream.write_all(&byte).await?;
            stream.flush().await?;
            let saw_client_cert = stream.get_ref().1.peer_certificates().is_some();
            Ok::<_, std::io::Error>(saw_client_cert)
        };
        let name = ServerName::try_from(host.to_owned()).expect("valid server name");
        let client_side = async move {
            let mut stream = TlsConnector::from(Arc::new(client))
                .connect(name, client_io)
                .await?;
            stream.write_all(b"x").await?;
            stream.flush().await?;
            let mut byte = [0u8; 1];
            stream.read_exact(&mut byte).await?;
            Ok::<_, std::io::Error>(stream.get_ref().1.alpn_protocol().map(<[u8]>::to_vec))
        };
        let (server_result, client_result) = tokio::join!(server_side, client_side);
        let alpn = client_result?;
        Ok((alpn, server_result?))
    }

    #[tokio::test]
    async fn a_client_trusting_the_ca_completes_the_handshake_with_h2() {
        let tls = generate(&["sim.example"]).expect("generate");
        assert!(tls.ca_pem.starts_with("-----BEGIN CERTIFICATE-----"));
        for host in ["localhost", "127.0.0.1", "::1", "sim.example"] {
            let (alpn, saw_cert) = handshake(&tls, client_config(&tls, None), host)
                .await
                .expect(host);
            assert_eq!(alpn.as_deref(), Some(&b"h2"[..]), "{host}");
            assert!(!saw_cert);
        }
    }

    #[tokio::test]
    async fn a_client_trusting_another_ca_is_refused() {
        let tls = generate(&[]).expect("generate");
        let stranger = generate(&[]).expect("generate");
        let result = handshake(&tls, client_config(&stranger, None), "localhost").await;
        assert!(result.is_err(), "handshake must fail with an unrelated CA");
    }

    #[tokio::test]
    async fn a_host_outside_the_certificate_is_refused() {
        let tls = generate(&[]).expect("generate");
        let result = handshake(&tls, client_config(&tls, None), "elsewhere.example").await;
        assert!(result.is_err());
    }

    #[tokio::test]
    async fn client_certificates_from_the_ca_are_accepted_and_others_refused() {
        let tls = generate(&[]).expect("generate");
        let identity = tls
            .generate_client_cert("kube-gc", &["system:masters"])
            .expect("client cert");
        let (_, saw_cert) = handshake(&tls, client_config(&tls, Some(identity)), "localhost")
            .await
            .expect("handshake with client cert");
        assert!(saw_cert);

        let stranger = generate(&[]).expect("generate");
        let foreign = stranger.generate_client_cert("mallory", &[]).expect("cert");
        let result = handshake(&tls, client_config(&tls, Some(foreign)), "localhost").await;
        assert!(
            result.is_err(),
            "a certificate from another CA must be refused"
        );

        assert!(matches!(
            tls.generate_client_cert("x", &["a", "b"]),
            Err(TlsError::TooManyGroups(2))
        ));
    }
}
