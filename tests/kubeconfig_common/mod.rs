//! Helpers shared by the `kubeconfig_*` integration tests: fixture paths, a hermetic
//! [`Environment`], and loading a fixture with `--kubeconfig` / `--context`.

#![allow(dead_code)] // Each test crate uses a different subset.

use std::path::{Path, PathBuf};

use kube_gc::client::config::{ClientConfig, ConfigError, Environment, LoadOptions};

/// `fixtures/kubeconfig/<relative>`, absolute.
pub fn fixture(relative: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("fixtures/kubeconfig")
        .join(relative)
}

/// An environment with nothing from the real process but `PATH` (exec plugins are shell
/// scripts that need `cat` and `sed`).
pub fn hermetic_env() -> Environment {
    let path = std::env::var("PATH").unwrap_or_else(|_| "/usr/bin:/bin".to_string());
    Environment::empty().with_var("PATH", path)
}

/// Loads `fixtures/kubeconfig/<file>` as `--kubeconfig`, with an optional `--context`.
pub fn load(file: &str, context: Option<&str>) -> Result<ClientConfig, ConfigError> {
    load_with(file, context, &hermetic_env())
}

/// [`load`] with a given environment.
pub fn load_with(
    file: &str,
    context: Option<&str>,
    env: &Environment,
) -> Result<ClientConfig, ConfigError> {
    let options = LoadOptions {
        kubeconfig: Some(fixture(file)),
        context: context.map(String::from),
    };
    ClientConfig::load(&options, env)
}

/// A throwaway certificate authority that issues server and client certificates.
pub struct TestCa {
    issuer: rcgen::Issuer<'static, rcgen::KeyPair>,
    /// The CA certificate, PEM.
    pub pem: String,
}

/// A certificate and its private key, PEM.
pub struct Issued {
    /// Certificate, PEM.
    pub cert_pem: String,
    /// Private key (PKCS#8), PEM.
    pub key_pem: String,
}

impl TestCa {
    /// A new self-signed CA.
    pub fn new(name: &str) -> TestCa {
        let mut params = rcgen::CertificateParams::new(Vec::<String>::new()).unwrap();
        params
            .distinguished_name
            .push(rcgen::DnType::CommonName, name);
        params.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
        params.key_usages = vec![
            rcgen::KeyUsagePurpose::KeyCertSign,
            rcgen::KeyUsagePurpose::DigitalSignature,
        ];
        let key = rcgen::KeyPair::generate().unwrap();
        let cert = params.self_signed(&key).unwrap();
        TestCa {
            pem: cert.pem(),
            issuer: rcgen::Issuer::new(params, key),
        }
    }

    /// A server certificate for `names` (DNS names or IP addresses).
    pub fn server(&self, names: &[&str]) -> Issued {
        let names: Vec<String> = names.iter().map(|name| name.to_string()).collect();
        let mut params = rcgen::CertificateParams::new(names).unwrap();
        params.extended_key_usages = vec![rcgen::ExtendedKeyUsagePurpose::ServerAuth];
        self.issue(params)
    }

    /// A client certificate for user `name`.
    pub fn client(&self, name: &str) -> Issued {
        let mut params = rcgen::CertificateParams::new(Vec::<String>::new()).unwrap();
        params
            .distinguished_name
            .push(rcgen::DnType::CommonName, name);
        params.extended_key_usages = vec![rcgen::ExtendedKeyUsagePurpose::ClientAuth];
        self.issue(params)
    }

    fn issue(&self, params: rcgen::CertificateParams) -> Issued {
        let key = rcgen::KeyPair::generate().unwrap();
        let cert = params.signed_by(&key, &self.issuer).unwrap();
        Issued {
            cert_pem: cert.pem(),
            key_pem: key.serialize_pem(),
        }
    }
}
