//! The kubeconfig file format (`apiVersion: v1`, `kind: Config`), as written by kubectl.
//!
//! These types mirror the YAML one to one and do no interpretation: merging several files is
//! [`super::loader`]'s job, turning a context into something to connect with is
//! [`super::resolve`]'s. Unknown fields are ignored (as client-go does), every field is optional,
//! and credentials are read straight into [`Secret`] so they cannot leak through `Debug`.
//!
//! Parsing follows kubectl: an empty file is an empty configuration, only the first YAML
//! document of a multi-document file is read (clientcmd decodes a single object and never looks
//! past the first `---`), and UTF-16 with a byte-order mark is accepted (see [`super::text`]).

use std::collections::BTreeMap;

use serde::Deserialize;

use super::secret::Secret;
use super::text::{self, TextError};

/// A whole kubeconfig file.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub struct Kubeconfig {
    /// The context used when none is chosen on the command line.
    pub current_context: Option<String>,
    /// Named clusters (API server address and how to trust it).
    pub clusters: Option<Vec<NamedCluster>>,
    /// Named users (credentials).
    pub users: Option<Vec<NamedAuthInfo>>,
    /// Named contexts (a cluster, a user and a namespace).
    pub contexts: Option<Vec<NamedContext>>,
}

/// A `clusters[]` entry.
#[derive(Debug, Clone, Deserialize)]
pub struct NamedCluster {
    /// The name contexts refer to.
    pub name: String,
    /// The cluster itself (`null` when the entry is empty).
    pub cluster: Option<Cluster>,
}

/// How to reach and trust one API server.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub struct Cluster {
    /// `https://host:port[/path]`; a bare `host:port` means https.
    pub server: Option<String>,
    /// Path of a PEM file of CA certificates.
    pub certificate_authority: Option<String>,
    /// Base64 of PEM CA certificates; wins over `certificate-authority` (client-go).
    pub certificate_authority_data: Option<String>,
    /// Skip server certificate verification (dangerous).
    pub insecure_skip_tls_verify: Option<bool>,
    /// The name to verify the server certificate against, instead of the host in `server`.
    pub tls_server_name: Option<String>,
    /// Proxy for all requests to this cluster (`http`, `https` or `socks5`). A `Secret` because
    /// the URL may hold a password, and this raw form cannot yet tell where one is.
    pub proxy_url: Option<Secret<String>>,
    /// Do not ask the server for compressed responses.
    pub disable_compression: Option<bool>,
    /// Named extensions; `client.authentication.k8s.io/exec` is passed to exec plugins.
    pub extensions: Option<Vec<NamedExtension>>,
}

/// An `extensions[]` entry: arbitrary data under a name.
#[derive(Debug, Clone, Deserialize)]
pub struct NamedExtension {
    /// The extension's name.
    pub name: String,
    /// Its content, kept as JSON.
    pub extension: Option<serde_json::Value>,
}

/// A `users[]` entry.
#[derive(Debug, Clone, Deserialize)]
pub struct NamedAuthInfo {
    /// The name contexts refer to.
    pub name: String,
    /// The credentials (`null` when the entry is empty).
    pub user: Option<AuthInfo>,
}

/// Credentials and impersonation for one user.
#[derive(Debug, Clone, Default, Deserialize)]
pub struct AuthInfo {
    /// Path of a PEM client certificate.
    #[serde(rename = "client-certificate")]
    pub client_certificate: Option<String>,
    /// Base64 of a PEM client certificate.
    #[serde(rename = "client-certificate-data")]
    pub client_certificate_data: Option<String>,
    /// Path of a PEM private key (PKCS#1 RSA, SEC1 EC or PKCS#8).
    #[serde(rename = "client-key")]
    pub client_key: Option<String>,
    /// Base64 of a PEM private key.
    #[serde(rename = "client-key-data")]
    pub client_key_data: Option<Secret<String>>,
    /// A bearer token.
    pub token: Option<Secret<String>>,
    /// Path of a file holding a bearer token, re-read as it may rotate.
    #[serde(rename = "tokenFile")]
    pub token_file: Option<String>,
    /// User to impersonate.
    #[serde(rename = "as")]
    pub impersonate: Option<String>,
    /// UID to impersonate.
    #[serde(rename = "as-uid")]
    pub impersonate_uid: Option<String>,
    /// Groups to impersonate.
    #[serde(rename = "as-groups")]
    pub impersonate_groups: Option<Vec<String>>,
    /// Extra fields to impersonate.
    #[serde(rename = "as-user-extra")]
    pub impersonate_user_extra: Option<BTreeMap<String, Vec<String>>>,
    /// Basic-auth user name.
    pub username: Option<String>,
    /// Basic-auth password.
    pub password: Option<Secret<String>>,
    /// A legacy in-tree auth provider (gcp, azure, oidc); refused with advice.
    #[serde(rename = "auth-provider")]
    pub auth_provider: Option<AuthProviderConfig>,
    /// An exec credential plugin.
    pub exec: Option<ExecConfig>,
}

/// A legacy `auth-provider` entry; only its name is needed to explain the refusal.
#[derive(Debug, Clone, Deserialize)]
pub struct AuthProviderConfig {
    /// `gcp`, `azure`, `oidc`, ...
    pub name: String,
}

/// An exec credential plugin (`users[].user.exec`).
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ExecConfig {
    /// The program to run (looked up on `PATH` unless it contains a path separator).
    pub command: Option<String>,
    /// Its arguments.
    pub args: Option<Vec<String>>,
    /// Extra environment variables, added to the inherited ones.
    pub env: Option<Vec<ExecEnvVar>>,
    /// `client.authentication.k8s.io/v1` or `/v1beta1`.
    pub api_version: Option<String>,
    /// Shown when the program is not installed.
    pub install_hint: Option<String>,
    /// Pass the cluster's details in `KUBERNETES_EXEC_INFO`.
    pub provide_cluster_info: Option<bool>,
    /// `Never`, `IfAvailable` or `Always`; required for `v1`.
    pub interactive_mode: Option<String>,
}

/// One `exec.env[]` entry. The value may be a credential, hence `Secret`.
#[derive(Debug, Clone, Deserialize)]
pub struct ExecEnvVar {
    /// Variable name.
    pub name: String,
    /// Variable value.
    pub value: Secret<String>,
}

/// A `contexts[]` entry.
#[derive(Debug, Clone, Deserialize)]
pub struct NamedContext {
    /// The name `current-context` and `--context` refer to.
    pub name: String,
    /// The context (`null` when the entry is empty).
    pub context: Option<Context>,
}

/// A cluster, a user and a default namespace.
#[derive(Debug, Clone, Default, Deserialize)]
pub struct Context {
    /// Name of a `clusters[]` entry.
    pub cluster: Option<String>,
    /// Name of a `users[]` entry.
    pub user: Option<String>,
    /// Namespace for namespaced requests that name none.
    pub namespace: Option<String>,
}

/// Why a kubeconfig's bytes could not be read as a configuration.
#[derive(Debug, thiserror::Error)]
pub enum ParseError {
    /// Not text kubectl would read.
    #[error("{0}")]
    Text(#[from] TextError),
    /// Not a YAML (or JSON) kubeconfig (boxed: the parser's error is large).
    #[error("{0}")]
    Yaml(Box<serde_saphyr::Error>),
}

/// Parses a kubeconfig file's bytes (see the module documentation for the rules).
pub fn parse(bytes: &[u8]) -> Result<Kubeconfig, ParseError> {
    let text = text::decode(bytes)?;
    let mut reader = text.as_bytes();
    // Only the first document counts; later ones are not even parsed, as in kubectl.
    let first = serde_saphyr::read::<_, Option<Kubeconfig>>(&mut reader).next();
    match first {
        None => Ok(Kubeconfig::default()),
        Some(document) => Ok(document
            .map_err(|err| ParseError::Yaml(Box::new(err)))?
            .unwrap_or_default()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn empty_and_comment_only_files_are_empty_configs() {
        for text in ["", "\n", "# nothing here\n"] {
            let config = parse(text.as_bytes()).unwrap();
            assert!(config.clusters.is_none() && config.current_context.is_none());
        }
    }

    #[test]
    fn all_field_spellings_are_read() {
        let yaml = r#"
apiVersion: v1
kind: Config
current-context: dev
clusters:
- name: c
  cluster:
    server: https://1.2.3.4:6443
    certificate-authority: ca.pem
    insecure-skip-tls-verify: false
    tls-server-name: api.local
    proxy-url: http://proxy:3128
users:
- name: u
  user:
    tokenFile: t
    as: alice
    as-uid: "42"
    as-groups: [a, b]
    as-user-extra: {scopes: [x]}
    exec:
      apiVersion: client.authentication.k8s.io/v1
      command: get-token
      args: [--x]
      env: [{name: K, value: V}]
      installHint: install it
      provideClusterInfo: true
      interactiveMode: Never
contexts:
- name: dev
  context: {cluster: c, user: u, namespace: team}
"#;
        let config = parse(yaml.as_bytes()).unwrap();
        assert_eq!(config.current_context.as_deref(), Some("dev"));
        let cluster = config.clusters.unwrap()[0].cluster.clone().unwrap();
        assert_eq!(cluster.tls_server_name.as_deref(), Some("api.local"));
        assert_eq!(
            cluster.proxy_url.as_ref().map(|p| p.expose().as_str()),
            Some("http://proxy:3128")
        );
        let user = config.users.unwrap()[0].user.clone().unwrap();
        assert_eq!(user.token_file.as_deref(), Some("t"));
        assert_eq!(user.impersonate.as_deref(), Some("alice"));
        assert_eq!(user.impersonate_groups.unwrap(), ["a", "b"]);
        let exec = user.exec.unwrap();
        assert_eq!(exec.interactive_mode.as_deref(), Some("Never"));
        assert_eq!(exec.provide_cluster_info, Some(true));
        let context = config.contexts.unwrap()[0].context.clone().unwrap();
        assert_eq!(context.namespace.as_deref(), Some("team"));
    }

    #[test]
    fn only_the_first_document_is_read() {
        let yaml = "current-context: first\n---\ncurrent-context: second\n---\n: [broken\n";
        let config = parse(yaml.as_bytes()).unwrap();
        assert_eq!(config.current_context.as_deref(), Some("first"));
    }

    #[test]
    fn null_sections_are_accepted() {
        let config = parse(b"clusters: null\nusers:\n- name: u\n  user: null\n").unwrap();
        assert!(config.clusters.is_none());
        assert!(config.users.unwrap()[0].user.is_none());
    }

    #[test]
    fn secrets_are_redacted_in_debug() {
        let yaml = "users:\n- name: u\n  user:\n    token: tok-123\n    password: pw-456\n    client-key-data: a2V5LTc4OQ==\n";
        let shown = format!("{:?}", parse(yaml.as_bytes()).unwrap());
        for secret in ["tok-123", "pw-456", "a2V5LTc4OQ=="] {
            assert!(!shown.contains(secret), "{secret} leaked: {shown}");
        }
    }
}
