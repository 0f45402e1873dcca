//! Kubeconfig files pointing at a simulated API server, so a client (kube-gc itself, or
//! kubectl) can be started against it exactly as against a real cluster.
//!
//! Contract: [`render`] turns a [`KubeconfigSpec`] into a one-cluster, one-user, one-context
//! kubeconfig YAML that kubectl accepts, with the CA and client certificate embedded as
//! base64 `*-data` fields; [`KubeconfigSpec::write_to`] writes it to a file readable only by its
//! owner (mode 0600), as kubeconfigs hold credentials. A client is pointed at the server by loading
//! that file the way it loads a user's `--kubeconfig` (kube-gc's own client does, in
//! `kube_gc::sim::Connect`: the simulated server knows nothing of the client). The file is
//! serialized with serde-saphyr from the small serde structs below, never assembled as text.

use std::path::Path;

use base64::engine::general_purpose::STANDARD as BASE64;
use base64::Engine;
use serde::{Deserialize, Serialize};
use thiserror::Error;
use url::Url;

/// What the kubeconfig should say.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KubeconfigSpec {
    /// The API server URL, e.g. `https://127.0.0.1:6443`.
    pub server: Url,
    /// The CA certificate (PEM) that signed the server's certificate.
    pub ca_pem: Option<String>,
    /// A bearer token.
    pub token: Option<String>,
    /// A client certificate and its private key, both PEM: `(cert_pem, key_pem)`.
    pub client_cert: Option<(String, String)>,
    /// The context's default namespace.
    pub namespace: Option<String>,
    /// The name of the cluster, the user and the context (one name for all three).
    pub context_name: String,
}

/// Why a kubeconfig could not be produced.
#[derive(Debug, Error)]
pub enum KubeconfigError {
    /// The YAML serializer failed.
    #[error("serializing the kubeconfig: {0}")]
    Yaml(#[from] serde_saphyr::SerializeError),
    /// The file could not be written.
    #[error("writing kubeconfig {path}: {source}")]
    Io {
        /// The file being written.
        path: String,
        /// What went wrong.
        source: std::io::Error,
    },
}

/// The kubeconfig document (`clientcmd/api/v1.Config`), reduced to what is written here.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub struct Kubeconfig {
    /// Always `v1`.
    #[serde(rename = "apiVersion")]
    pub api_version: String,
    /// Always `Config`.
    pub kind: String,
    /// The clusters, by name.
    pub clusters: Vec<NamedCluster>,
    /// The users, by name.
    pub users: Vec<NamedUser>,
    /// The contexts, by name.
    pub contexts: Vec<NamedContext>,
    /// The context in use.
    pub current_context: String,
}

/// A named entry of `clusters`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct NamedCluster {
    /// The cluster's name.
    pub name: String,
    /// How to reach it.
    pub cluster: Cluster,
}

/// How to reach an API server.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub struct Cluster {
    /// The server URL.
    pub server: String,
    /// The CA certificate, PEM, base64 encoded.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub certificate_authority_data: Option<String>,
}

/// A named entry of `users`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct NamedUser {
    /// The user's name.
    pub name: String,
    /// Its credentials.
    pub user: User,
}

/// Credentials.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub struct User {
    /// A bearer token.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub token: Option<String>,
    /// The client certificate, PEM, base64 encoded.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client_certificate_data: Option<String>,
    /// The client key, PEM, base64 encoded.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client_key_data: Option<String>,
}

/// A named entry of `contexts`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct NamedContext {
    /// The context's name.
    pub name: String,
    /// What it binds together.
    pub context: Context,
}

/// A cluster, a user and a default namespace.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Context {
    /// The cluster's name.
    pub cluster: String,
    /// The user's name.
    pub user: String,
    /// The default namespace.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub namespace: Option<String>,
}

impl KubeconfigSpec {
    /// The kubeconfig document this spec describes.
    pub fn to_document(&self) -> Kubeconfig {
        let name = self.context_name.clone();
        // `Url` always renders a root path as a trailing slash; kubeconfigs conventionally have
        // none.
        let server = self.server.as_str();
        let server = if self.server.path() == "/" {
            server.strip_suffix('/').unwrap_or(server)
        } else {
            server
        };
        let encode = |pem: &String| BASE64.encode(pem.as_bytes());
        let (certificate, key) = match &self.client_cert {
            Some((cert, key)) => (Some(encode(cert)), Some(encode(key))),
            None => (None, None),
        };
        Kubeconfig {
            api_version: "v1".to_owned(),
            kind: "Config".to_owned(),
            clusters: vec![NamedCluster {
                name: name.clone(),
                cluster: Cluster {
                    server: server.to_owned(),
                    certificate_authority_data: self.ca_pem.as_ref().map(encode),
                },
            }],
            users: vec![NamedUser {
                name: name.clone(),
                user: User {
                    token: self.token.clone(),
                    client_certificate_data: certificate,
                    client_key_data: key,
                },
            }],
            contexts: vec![NamedContext {
                name: name.clone(),
                context: Context {
                    cluster: name.clone(),
                    user: name.clone(),
                    namespace: self.namespace.clone(),
                },
            }],
            current_context: name,
        }
    }

    /// Renders the kubeconfig YAML.
    pub fn render(&self) -> Result<String, KubeconfigError> {
        Ok(serde_saphyr::to_string(&self.to_document())?)
    }

    /// Writes the kubeconfig to `path` with mode 0600 (also when the file already existed).
    pub fn write_to(&self, path: &Path) -> Result<(), KubeconfigError> {
        let yaml = self.render()?;
        write_private(path, yaml.as_bytes()).map_err(|source| KubeconfigError::Io {
            path: path.display().to_string(),
            source,
        })
    }
}

/// Renders the kubeconfig YAML for `spec`.
pub fn render(spec: &KubeconfigSpec) -> Result<String, KubeconfigError> {
    spec.render()
}

#[cfg(unix)]
fn write_private(path: &Path, contents: &[u8]) -> std::io::Result<()> {
    use std::io::Write;
    use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
    let mut file = std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(0o600)
        .open(path)?;
    // `mode` only applies to a file being created; tighten an existing one as well.
    file.set_permissions(std::fs::Permissions::from_mode(0o600))?;
    file.write_all(contents)?;
    file.sync_all()
}

#[cfg(not(unix))]
fn write_private(path: &Path, contents: &[u8]) -> std::io::Result<()> {
    std::fs::write(path, contents)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec() -> KubeconfigSpec {
        KubeconfigSpec {
            server: Url::parse("https://127.0.0.1:6443").expect("valid URL"),
            ca_pem: Some("-----BEGIN CERTIFICATE-----\nCA\n-----END CERTIFICATE-----\n".into()),
            token: Some("sim-token".into()),
            client_cert: Some(("CERT PEM".into(), "KEY PEM".into())),
            namespace: Some("team-a".into()),
            context_name: "sim".into(),
        }
    }

    #[test]
    fn rendered_yaml_parses_back_with_every_field() {
        let spec = spec();
        let yaml = render(&spec).expect("renders");
        let parsed: Kubeconfig = serde_saphyr::from_str(&yaml).expect("parses back");
        assert_eq!(parsed, spec.to_document());
        assert_eq!(parsed.current_context, "sim");
        let cluster = &parsed.clusters[0].cluster;
        assert_eq!(cluster.server, "https://127.0.0.1:6443");
        let ca = cluster.certificate_authority_data.as_deref().expect("CA");
        assert_eq!(
            BASE64.decode(ca).expect("base64"),
            spec.ca_pem.as_deref().map(str::as_bytes).expect("CA")
        );
        let user = &parsed.users[0].user;
        assert_eq!(user.token.as_deref(), Some("sim-token"));
        let key = user.client_key_data.as_deref().expect("key");
        assert_eq!(BASE64.decode(key).expect("base64"), b"KEY PEM");
        assert_eq!(
            parsed.contexts[0].context.namespace.as_deref(),
            Some("team-a")
        );
        assert!(yaml.contains("certificate-authority-data:"), "{yaml}");
        assert!(yaml.contains("current-context: sim"), "{yaml}");
    }

    #[test]
    fn optional_fields_are_left_out() {
        let spec = KubeconfigSpec {
            server: Url::parse("http://localhost:8080/prefix").expect("valid URL"),
            ca_pem: None,
            token: None,
            client_cert: None,
            namespace: None,
            context_name: "bare".into(),
        };
        let yaml = render(&spec).expect("renders");
        assert!(!yaml.contains("-data"), "{yaml}");
        assert!(!yaml.contains("token"), "{yaml}");
        assert!(!yaml.contains("namespace"), "{yaml}");
        let parsed: Kubeconfig = serde_saphyr::from_str(&yaml).expect("parses back");
        assert_eq!(
            parsed.clusters[0].cluster.server,
            "http://localhost:8080/prefix"
        );
    }

    #[cfg(unix)]
    #[test]
    fn write_to_creates_an_owner_only_file() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().expect("temp dir");
        let path = dir.path().join("config");
        std::fs::write(&path, "old").expect("pre-existing file");
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o644)).expect("chmod");
        spec().write_to(&path).expect("writes");
        let mode = std::fs::metadata(&path)
            .expect("metadata")
            .permissions()
            .mode();
        assert_eq!(mode & 0o777, 0o600);
        let text = std::fs::read_to_string(&path).expect("readable");
        assert_eq!(text, render(&spec()).expect("renders"));

        let missing = dir.path().join("no-such-dir").join("config");
        let err = spec().write_to(&missing).expect_err("no directory");
        assert!(err.to_string().contains("no-such-dir"), "{err}");
    }

    /// kubectl is the reference reader of kubeconfigs. When it is not installed the test says
    /// so and stops: there is nothing to compare with.
    #[test]
    fn kubectl_accepts_the_rendered_file() {
        let dir = tempfile::tempdir().expect("temp dir");
        let path = dir.path().join("config");
        let spec = spec();
        spec.write_to(&path).expect("writes");
        let output = std::process::Command::new("kubectl")
            .args(["config", "view", "--raw", "-o", "json", "--kubeconfig"])
            .arg(&path)
            .output();
        let output = match output {
            Ok(output) => output,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                eprintln!("kubectl not on PATH: skipping the kubectl check");
                return;
            }
            Err(e) => panic!("running kubectl: {e}"),
        };
        assert!(
            output.status.success(),
            "kubectl refused the file: {}",
            String::from_utf8_lossy(&output.stderr)
        );
        let view: serde_json::Value = serde_json::from_slice(&output.stdout).expect("JSON");
        assert_eq!(view["current-context"], "sim");
        assert_eq!(
            view["clusters"][0]["cluster"]["server"],
            "https://127.0.0.1:6443"
        );
        let ca = BASE64.encode(spec.ca_pem.as_deref().expect("CA"));
        assert_eq!(
            view["clusters"][0]["cluster"]["certificate-authority-data"],
            ca
        );
        assert_eq!(view["users"][0]["user"]["token"], "sim-token");
        assert_eq!(view["contexts"][0]["context"]["namespace"], "team-a");
        assert_eq!(view["contexts"][0]["context"]["user"], "sim");
    }
}
