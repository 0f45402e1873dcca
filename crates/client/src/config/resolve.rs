//! From merged kubeconfig files to a [`ClientConfig`]: pick the context, follow it to its cluster
//! and user, read every referenced file and `-data` field, and check the combination.
//!
//! The rules follow client-go's clientcmd: `--context` beats `current-context`; a context without
//! a user is anonymous; `-data` fields and their path twins exclude each other, as do a CA and
//! `insecure-skip-tls-verify`, and a token and basic auth; `token` wins over `tokenFile`; a
//! server without a scheme is `https://`; the namespace is the context's, else `default`. Every
//! error names the file, the entry and the field at fault.

use std::path::{Path, PathBuf};

use base64::Engine;
use url::Url;

use super::auth::exec::{encode_ca_for_exec_info, ExecSpec};
use super::auth::{Auth, ExecPlugin, TokenFile};
use super::environment::Environment;
use super::error::{ConfigError, Entry, FieldProblem};
use super::impersonation::Impersonation;
use super::kubeconfig::{AuthInfo, Cluster, Context};
use super::loader::{MergedKubeconfig, Sourced};
use super::secret::{redacted_url, ProxyUrl, Secret};
use super::tls::{self, CertificateAuthority, ClientCertSlot, PemSource, TlsSettings};
use super::{ClientConfig, Origin};

/// The cluster extension whose content is handed to exec plugins as `spec.cluster.config`.
const EXEC_EXTENSION: &str = "client.authentication.k8s.io/exec";

/// Resolves `context` (or the merged `current-context`) into a connection configuration.
/// Blocking file I/O (certificates, keys, token files): call at start-up.
pub fn from_kubeconfig(
    merged: &MergedKubeconfig,
    context: Option<&str>,
    env: &Environment,
) -> Result<ClientConfig, ConfigError> {
    let chosen = Chosen::follow(merged, context)?;
    let resolved = ResolvedCluster::new(chosen.cluster_name, chosen.cluster)?;
    let mut tls = resolved.tls;
    let (auth, impersonation) = match chosen.user {
        Some((name, user)) => resolve_user(name, user, &mut tls, resolved.exec_cluster_info, env)?,
        None => (Auth::None, Impersonation::default()),
    };
    let default_namespace = non_empty(chosen.context.value.namespace.as_deref())
        .unwrap_or("default")
        .to_string();
    Ok(ClientConfig {
        server: resolved.server,
        tls,
        proxy_url: resolved.proxy_url,
        disable_compression: resolved.disable_compression,
        auth,
        impersonation,
        default_namespace,
        origin: Origin::Kubeconfig {
            context: chosen.context_name,
            cluster: chosen.cluster_name.to_string(),
            user: chosen.user.map(|(name, _)| name.to_string()),
            files: merged.files.clone(),
        },
        system_roots: env.system_roots().clone(),
    })
}

/// The chosen context and the entries it names, all known to exist.
struct Chosen<'a> {
    context_name: String,
    context: &'a Sourced<Context>,
    cluster_name: &'a str,
    cluster: &'a Sourced<Cluster>,
    /// `None` for a context without a user: anonymous.
    user: Option<(&'a str, &'a Sourced<AuthInfo>)>,
}

impl<'a> Chosen<'a> {
    /// Picks `--context` or `current-context` and follows its references.
    fn follow(merged: &'a MergedKubeconfig, context: Option<&str>) -> Result<Self, ConfigError> {
        let files = merged.file_list();
        let context_name = match (context, &merged.current_context) {
            (Some(name), _) => name.to_string(),
            (None, Some(current)) => current.value.clone(),
            (None, None) => return Err(ConfigError::NoCurrentContext { files }),
        };
        let Some(context) = merged.contexts.get(&context_name) else {
            return Err(ConfigError::ContextNotFound {
                context: context_name,
                files,
            });
        };
        let Some(cluster_name) = non_empty(context.value.cluster.as_deref()) else {
            return Err(ConfigError::Field {
                file: context.file.clone(),
                entry: Entry::Context(context_name),
                field: "cluster",
                problem: FieldProblem::Missing,
            });
        };
        let dangling = |kind, name: &str| ConfigError::DanglingReference {
            context: context_name.clone(),
            kind,
            name: name.to_string(),
            files: files.clone(),
        };
        let cluster = merged
            .clusters
            .get(cluster_name)
            .ok_or_else(|| dangling("cluster", cluster_name))?;
        let user = match non_empty(context.value.user.as_deref()) {
            None => None,
            Some(name) => {
                let user = merged
                    .users
                    .get(name)
                    .ok_or_else(|| dangling("user", name))?;
                Some((name, user))
            }
        };
        Ok(Chosen {
            context_name,
            context,
            cluster_name,
            cluster,
            user,
        })
    }
}

fn non_empty(value: Option<&str>) -> Option<&str> {
    value.filter(|value| !value.is_empty())
}

/// The connection half of a configuration: one `clusters[]` entry, checked and loaded.
struct ResolvedCluster {
    server: Url,
    tls: TlsSettings,
    proxy_url: Option<ProxyUrl>,
    disable_compression: bool,
    exec_cluster_info: serde_json::Value,
}

impl ResolvedCluster {
    fn new(name: &str, cluster: &Sourced<Cluster>) -> Result<Self, ConfigError> {
        let fields = Fields {
            file: &cluster.file,
            entry: Entry::Cluster(name.to_string()),
        };
        let value = &cluster.value;
        let server =
            parse_server(value.server.as_deref()).map_err(|p| fields.error("server", p))?;
        let proxy_url = value
            .proxy_url
            .as_ref()
            .map(|proxy| proxy.expose().as_str())
            .and_then(|proxy| non_empty(Some(proxy)))
            .map(parse_proxy)
            .transpose()
            .map_err(|problem| fields.error("proxy-url", problem))?;
        let insecure = value.insecure_skip_tls_verify.unwrap_or(false);
        let ca_pem = fields.data_or_file(
            (
                "certificate-authority-data",
                value.certificate_authority_data.as_deref(),
            ),
            (
                "certificate-authority",
                value.certificate_authority.as_deref(),
            ),
        )?;
        if insecure && ca_pem.is_some() {
            let first = if value.certificate_authority_data.is_some() {
                "certificate-authority-data"
            } else {
                "certificate-authority"
            };
            return Err(fields.conflict(first, "insecure-skip-tls-verify"));
        }
        let certificate_authority = match &ca_pem {
            None => None,
            Some((pem, source, field)) => Some(CertificateAuthority {
                certificates: tls::parse_certificates(pem).map_err(|p| fields.error(field, p))?,
                source: source.clone(),
            }),
        };
        let server_name = non_empty(value.tls_server_name.as_deref()).map(String::from);
        if let Some(name) = &server_name {
            rustls_pki_types::ServerName::try_from(name.as_str()).map_err(|_| {
                let problem = format!("\"{name}\" is not a valid DNS name or IP address");
                fields.error("tls-server-name", FieldProblem::Invalid(problem))
            })?;
        }
        let exec_cluster_info = exec_cluster_info(value, &server, ca_pem.as_ref().map(|c| &c.0));
        Ok(ResolvedCluster {
            server,
            tls: TlsSettings {
                certificate_authority,
                insecure_skip_verify: insecure,
                server_name,
                ..TlsSettings::default()
            },
            proxy_url,
            disable_compression: value.disable_compression.unwrap_or(false),
            exec_cluster_info,
        })
    }
}

/// `spec.cluster` of `KUBERNETES_EXEC_INFO`, spelled as client-go spells it.
fn exec_cluster_info(
    cluster: &Cluster,
    server: &Url,
    ca_pem: Option<&Vec<u8>>,
) -> serde_json::Value {
    let mut info = serde_json::json!({ "server": server.as_str() });
    if let Some(name) = non_empty(cluster.tls_server_name.as_deref()) {
        info["tls-server-name"] = name.into();
    }
    if cluster.insecure_skip_tls_verify == Some(true) {
        info["insecure-skip-tls-verify"] = true.into();
    }
    if let Some(pem) = ca_pem {
        info["certificate-authority-data"] = encode_ca_for_exec_info(pem).into();
    }
    // The plugin is handed the proxy as configured, credentials included (client-go does too).
    let proxy = cluster
        .proxy_url
        .as_ref()
        .map(|proxy| proxy.expose().as_str());
    if let Some(proxy) = non_empty(proxy) {
        info["proxy-url"] = proxy.into();
    }
    if cluster.disable_compression == Some(true) {
        info["disable-compression"] = true.into();
    }
    let extension = cluster
        .extensions
        .iter()
        .flatten()
        .find(|extension| extension.name == EXEC_EXTENSION)
        .and_then(|extension| extension.extension.clone());
    if let Some(config) = extension {
        info["config"] = config;
    }
    info
}

fn parse_server(server: Option<&str>) -> Result<Url, FieldProblem> {
    let server = non_empty(server).ok_or(FieldProblem::Missing)?;
    // client-go treats "host:port" as "https://host:port".
    let url = if server.contains("://") {
        Url::parse(server)?
    } else {
        Url::parse(&format!("https://{server}"))?
    };
    match url.scheme() {
        "https" | "http" if url.host().is_some() => Ok(url),
        "https" | "http" => Err(FieldProblem::Invalid(format!("\"{server}\" has no host"))),
        other => Err(FieldProblem::Invalid(format!(
            "\"{server}\" has scheme {other}; only https and http are supported"
        ))),
    }
}

fn parse_proxy(proxy: &str) -> Result<ProxyUrl, FieldProblem> {
    // `url::ParseError` never quotes its input, so a malformed URL's password stays out too.
    let url = Url::parse(proxy)?;
    match url.scheme() {
        "http" | "https" | "socks5" => Ok(ProxyUrl::new(url)),
        other => {
            // Quoted as written, unless a password has to be taken out.
            let shown = match url.password() {
                Some(_) => redacted_url(&url),
                None => proxy.to_string(),
            };
            Err(FieldProblem::Invalid(format!(
                "\"{shown}\" has scheme {other}; only http, https and socks5 are supported"
            )))
        }
    }
}

/// The credential half: one `users[]` entry, checked and loaded. Adds any client certificate to
/// `tls`.
fn resolve_user(
    name: &str,
    user: &Sourced<AuthInfo>,
    tls: &mut TlsSettings,
    exec_cluster_info: serde_json::Value,
    env: &Environment,
) -> Result<(Auth, Impersonation), ConfigError> {
    let fields = Fields {
        file: &user.file,
        entry: Entry::User(name.to_string()),
    };
    let value = &user.value;
    if let Some(provider) = &value.auth_provider {
        return Err(ConfigError::AuthProvider {
            file: user.file.clone(),
            entry: fields.entry.clone(),
            provider: provider.name.clone(),
            advice: auth_provider_advice(&provider.name),
        });
    }
    let (slot, source) = client_certificate(&fields, value)?;
    tls.client_certificate = slot;
    tls.client_certificate_source = source;
    let auth = credential(
        &fields,
        value,
        exec_cluster_info,
        &tls.client_certificate,
        env,
    )?;
    let impersonation = Impersonation {
        user: value.impersonate.clone().filter(|user| !user.is_empty()),
        uid: value.impersonate_uid.clone().filter(|uid| !uid.is_empty()),
        groups: value.impersonate_groups.clone().unwrap_or_default(),
        extra: value.impersonate_user_extra.clone().unwrap_or_default(),
    };
    impersonation
        .headers()
        .map_err(|err| fields.error("as", FieldProblem::Invalid(err.to_string())))?;
    Ok((auth, impersonation))
}

fn auth_provider_advice(provider: &str) -> &'static str {
    match provider {
        "gcp" => ", e.g. gke-gcloud-auth-plugin",
        "azure" => ", e.g. kubelogin (github.com/Azure/kubelogin)",
        "oidc" => ", e.g. kubelogin (github.com/int128/kubelogin)",
        _ => "",
    }
}

/// The kubeconfig's own client certificate, in a fresh slot that an exec plugin may refill.
fn client_certificate(
    fields: &Fields<'_>,
    user: &AuthInfo,
) -> Result<(ClientCertSlot, Option<PemSource>), ConfigError> {
    let cert = fields.data_or_file(
        (
            "client-certificate-data",
            user.client_certificate_data.as_deref(),
        ),
        ("client-certificate", user.client_certificate.as_deref()),
    )?;
    let key = fields.data_or_file(
        (
            "client-key-data",
            user.client_key_data.as_ref().map(|k| k.expose().as_str()),
        ),
        ("client-key", user.client_key.as_deref()),
    )?;
    let (cert, key) = match (cert, key) {
        (None, None) => return Ok((ClientCertSlot::default(), None)),
        (Some((_, _, cert_field)), None) => {
            return Err(fields.error("client-key", FieldProblem::MissingPartner(cert_field)))
        }
        (None, Some((_, _, key_field))) => {
            let problem = FieldProblem::MissingPartner(key_field);
            return Err(fields.error("client-certificate", problem));
        }
        (Some(cert), Some(key)) => (cert, key),
    };
    let (cert_pem, source, cert_field) = cert;
    let (key_pem, _, key_field) = key;
    let chain = tls::parse_certificates(&cert_pem).map_err(|p| fields.error(cert_field, p))?;
    let key_pem = Secret::new(key_pem);
    let key = tls::parse_private_key(key_pem.expose()).map_err(|p| fields.error(key_field, p))?;
    let certified = tls::certified_key(chain, key).map_err(|err| {
        let problem = match err {
            rustls::Error::InconsistentKeys(rustls::InconsistentKeys::KeyMismatch) => {
                format!("is not the private key of the certificate in {cert_field}")
            }
            other => format!("cannot be used with {cert_field}: {other}"),
        };
        fields.error(key_field, FieldProblem::Invalid(problem))
    })?;
    Ok((ClientCertSlot::with(certified), Some(source)))
}

/// The header-producing credential: token, token file, basic auth, exec plugin or none.
fn credential(
    fields: &Fields<'_>,
    user: &AuthInfo,
    exec_cluster_info: serde_json::Value,
    cert_slot: &ClientCertSlot,
    env: &Environment,
) -> Result<Auth, ConfigError> {
    let token = user
        .token
        .clone()
        .filter(|token| !token.expose().is_empty());
    let token_file = non_empty(user.token_file.as_deref());
    let username = non_empty(user.username.as_deref());
    let has_password = user
        .password
        .as_ref()
        .is_some_and(|p| !p.expose().is_empty());
    if (token.is_some() || token_file.is_some()) && (username.is_some() || has_password) {
        let first = if token.is_some() {
            "token"
        } else {
            "tokenFile"
        };
        return Err(fields.conflict(first, "username/password"));
    }
    if let Some(token) = token {
        return Ok(Auth::Token(token));
    }
    if let Some(path) = token_file {
        // Checked now so a wrong path fails at start-up, not at the first request.
        std::fs::metadata(path).map_err(|source| {
            fields.error(
                "tokenFile",
                FieldProblem::Unreadable {
                    path: PathBuf::from(path),
                    source,
                },
            )
        })?;
        return Ok(Auth::TokenFile(TokenFile::new(path)));
    }
    if username.is_some() || has_password {
        let username = username.ok_or_else(|| fields.error("username", FieldProblem::Missing))?;
        let password = user
            .password
            .clone()
            .filter(|_| has_password)
            .ok_or_else(|| fields.error("password", FieldProblem::Missing))?;
        return Ok(Auth::Basic {
            username: username.to_string(),
            password,
        });
    }
    if let Some(exec) = &user.exec {
        let spec = ExecSpec::new(exec, Some(exec_cluster_info))
            .map_err(|err| fields.error(err.field, FieldProblem::Invalid(err.problem)))?;
        return Ok(Auth::Exec(ExecPlugin::new(spec, env, cert_slot.clone())));
    }
    Ok(Auth::None)
}

/// Error-building helpers for the fields of one entry.
struct Fields<'a> {
    file: &'a Path,
    entry: Entry,
}

/// PEM bytes, where they came from, and the field that named them.
type Loaded = (Vec<u8>, PemSource, &'static str);

impl Fields<'_> {
    fn error(&self, field: &'static str, problem: FieldProblem) -> ConfigError {
        ConfigError::Field {
            file: self.file.to_path_buf(),
            entry: self.entry.clone(),
            field,
            problem,
        }
    }

    fn conflict(&self, first: &'static str, second: &'static str) -> ConfigError {
        ConfigError::Conflict {
            file: self.file.to_path_buf(),
            entry: self.entry.clone(),
            first,
            second,
        }
    }

    /// Reads a `<x>-data` (base64) / `<x>` (path) pair, refusing both at once.
    fn data_or_file(
        &self,
        (data_field, data): (&'static str, Option<&str>),
        (path_field, path): (&'static str, Option<&str>),
    ) -> Result<Option<Loaded>, ConfigError> {
        match (non_empty(data), non_empty(path)) {
            (Some(_), Some(_)) => Err(self.conflict(data_field, path_field)),
            (Some(data), None) => {
                // Go's base64 decoder skips line breaks; some generators wrap long values.
                let compact: String = data.chars().filter(|c| !c.is_ascii_whitespace()).collect();
                let bytes = base64::engine::general_purpose::STANDARD
                    .decode(compact)
                    .map_err(|err| self.error(data_field, FieldProblem::Base64(err)))?;
                Ok(Some((bytes, PemSource::Inline, data_field)))
            }
            (None, Some(path)) => {
                let path = PathBuf::from(path);
                match std::fs::read(&path) {
                    Ok(bytes) => Ok(Some((bytes, PemSource::File(path), path_field))),
                    Err(source) => {
                        Err(self.error(path_field, FieldProblem::Unreadable { path, source }))
                    }
                }
            }
            (None, None) => Ok(None),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn servers_without_scheme_are_https() {
        let url = parse_server(Some("10.0.0.1:6443")).unwrap();
        assert_eq!(url.as_str(), "https://10.0.0.1:6443/");
        let url = parse_server(Some("https://api.example.com/prefix")).unwrap();
        assert_eq!(url.path(), "/prefix");
        assert!(matches!(parse_server(None), Err(FieldProblem::Missing)));
        assert!(matches!(
            parse_server(Some("ftp://x")),
            Err(FieldProblem::Invalid(_))
        ));
    }

    #[test]
    fn proxies_must_be_http_or_socks5() {
        assert!(parse_proxy("socks5://127.0.0.1:1080").is_ok());
        assert!(matches!(
            parse_proxy("gopher://x"),
            Err(FieldProblem::Invalid(_))
        ));
    }

    #[test]
    fn auth_provider_advice_names_the_replacement() {
        assert!(auth_provider_advice("gcp").contains("gke-gcloud-auth-plugin"));
        assert_eq!(auth_provider_advice("custom"), "");
    }
}
