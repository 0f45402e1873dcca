//! [`ExecPlugin`]: credentials from an external program (`users[].user.exec`), as kubectl runs it.
//!
//! The program is started directly (no shell) with its `args`, the caller's environment plus the
//! configured `env`, and `KUBERNETES_EXEC_INFO` holding an `ExecCredential` request (the API
//! version, whether the session is interactive, and with `provideClusterInfo` the cluster's
//! address and CA). It prints an `ExecCredential` whose `status` holds a `token` and/or a client
//! certificate and key, and optionally an `expirationTimestamp`.
//!
//! The result is cached until that timestamp (forever without one) or until [`ExecPlugin::invalidate`]
//! after a 401. Concurrent callers share one run: the first runs the program while the others wait
//! for its result, so a burst of requests does not start a burst of plugins.
//!
//! A non-interactive run that has not finished after [`EXEC_TIMEOUT`] is killed and reported as
//! an error, so a hung plugin costs one failed request instead of stalling every request forever.
//! An interactive run has no limit: the user may be typing a password.
//!
//! `interactiveMode` decides stdin: `Never` gives the program none; `IfAvailable` (the `v1beta1`
//! default) passes stdin through only when it is a terminal; `Always` requires a terminal.
//! `v1` requires the field, as client-go does. A missing program is reported with `installHint`.
//!
//! A client certificate returned by the plugin goes into the TLS configuration's
//! [`ClientCertSlot`] and is presented from the next handshake on; connections already open keep
//! the certificate they were made with until the HTTP client closes them.

use std::collections::BTreeMap;
use std::fmt;
use std::process::{ExitStatus, Stdio};
use std::sync::Arc;

use base64::Engine;
use chrono::{DateTime, Utc};
use parking_lot::Mutex;
use serde::Deserialize;

use crate::config::environment::Environment;
use crate::config::secret::Secret;
use crate::config::tls::{self, ClientCertSlot};
use kube_gc_core::clock::SharedClock;

const API_V1: &str = "client.authentication.k8s.io/v1";
const API_V1BETA1: &str = "client.authentication.k8s.io/v1beta1";
const API_V1ALPHA1: &str = "client.authentication.k8s.io/v1alpha1";
/// At most this much of a failing plugin's stderr is quoted in the error.
const STDERR_QUOTE_LIMIT: usize = 2048;

/// `interactiveMode`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum InteractiveMode {
    /// Never give the plugin a stdin.
    Never,
    /// Give it stdin if stdin is a terminal.
    IfAvailable,
    /// Require a terminal.
    Always,
}

/// A validated `exec` section, ready to run.
#[derive(Debug, Clone)]
pub struct ExecSpec {
    /// Program to run.
    pub command: String,
    /// Its arguments.
    pub args: Vec<String>,
    /// Extra environment variables.
    pub env: Vec<(String, Secret<String>)>,
    /// `client.authentication.k8s.io/v1` or `/v1beta1`.
    pub api_version: String,
    /// Shown when the program is not installed.
    pub install_hint: Option<String>,
    /// Whether the plugin may use stdin.
    pub interactive_mode: InteractiveMode,
    /// `spec.cluster` of `KUBERNETES_EXEC_INFO` when `provideClusterInfo` is set; a `Secret`
    /// because its `proxy-url` may hold a password.
    pub cluster_info: Option<Secret<serde_json::Value>>,
}

/// Why an `exec` section is not usable; `field` is its spelling in the kubeconfig.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ExecSpecError {
    /// The offending field, e.g. `exec.apiVersion`.
    pub field: &'static str,
    /// What is wrong.
    pub problem: String,
}

impl ExecSpec {
    /// Validates the kubeconfig's `exec` section.
    pub fn new(
        config: &crate::config::kubeconfig::ExecConfig,
        cluster_info: Option<serde_json::Value>,
    ) -> Result<ExecSpec, ExecSpecError> {
        let invalid = |field, problem: &str| ExecSpecError {
            field,
            problem: problem.to_string(),
        };
        let command = config
            .command
            .clone()
            .filter(|command| !command.is_empty())
            .ok_or_else(|| invalid("exec.command", "is missing"))?;
        let api_version = match config.api_version.as_deref() {
            Some(version @ (API_V1 | API_V1BETA1)) => version.to_string(),
            Some(API_V1ALPHA1) => {
                return Err(invalid(
                    "exec.apiVersion",
                    "is client.authentication.k8s.io/v1alpha1, which is no longer supported; use client.authentication.k8s.io/v1",
                ))
            }
            Some(other) => {
                return Err(invalid(
                    "exec.apiVersion",
                    &format!("\"{other}\" is not client.authentication.k8s.io/v1 or /v1beta1"),
                ))
            }
            None => return Err(invalid("exec.apiVersion", "is missing")),
        };
        let interactive_mode = match config.interactive_mode.as_deref() {
            Some("Never") => InteractiveMode::Never,
            Some("IfAvailable") => InteractiveMode::IfAvailable,
            Some("Always") => InteractiveMode::Always,
            Some(other) => {
                return Err(invalid(
                    "exec.interactiveMode",
                    &format!("\"{other}\" is not Never, IfAvailable or Always"),
                ))
            }
            None if api_version == API_V1 => {
                return Err(invalid(
                    "exec.interactiveMode",
                    "is required with client.authentication.k8s.io/v1",
                ))
            }
            None => InteractiveMode::IfAvailable,
        };
        let env = config
            .env
            .iter()
            .flatten()
            .map(|var| (var.name.clone(), var.value.clone()))
            .collect();
        Ok(ExecSpec {
            command,
            args: config.args.clone().unwrap_or_default(),
            env,
            api_version,
            install_hint: config.install_hint.clone(),
            interactive_mode,
            cluster_info: cluster_info
                .filter(|_| config.provide_cluster_info == Some(true))
                .map(Secret::new),
        })
    }
}

/// Why running the plugin gave no credential.
#[derive(Debug, thiserror::Error)]
pub enum ExecError {
    /// The program does not exist.
    #[error(
        "exec plugin: executable {command} not found\n\nIt looks like you are trying to use a \
         client-go credential plugin that is not installed.\n\n{hint}"
    )]
    NotInstalled {
        /// The program.
        command: String,
        /// `installHint`, or a generic sentence without one.
        hint: String,
    },
    /// The program exists but could not be started.
    #[error("exec plugin {command} could not be started: {source}")]
    Spawn {
        /// The program.
        command: String,
        /// The operating system's reason.
        source: std::io::Error,
    },
    /// `interactiveMode: Always` without a terminal.
    #[error("exec plugin {command} has interactiveMode Always, but stdin is not a terminal")]
    NeedsTerminal {
        /// The program.
        command: String,
    },
    /// The program exited unsuccessfully.
    #[error("exec plugin {command} failed ({status}): {stderr}")]
    Failed {
        /// The program.
        command: String,
        /// How it exited.
        status: ExitStatus,
        /// The start of what it wrote to stderr.
        stderr: String,
    },
    /// The program ran longer than [`EXEC_TIMEOUT`] and was killed.
    #[error("exec plugin {command} did not finish within {}s and was killed", .after.as_secs())]
    TimedOut {
        /// The program.
        command: String,
        /// How long it was given.
        after: std::time::Duration,
    },
    /// The program printed something other than a usable `ExecCredential`.
    #[error("exec plugin {command} printed an unusable ExecCredential: {reason}")]
    BadOutput {
        /// The program.
        command: String,
        /// What is wrong with it.
        reason: String,
    },
}

/// How long a non-interactive plugin run may take before it is killed. client-go sets no limit;
/// a controller cannot wait for a human, and a minute is far beyond any healthy plugin.
pub const EXEC_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(60);

/// An exec credential plugin with its cache; clones share both.
#[derive(Clone)]
pub struct ExecPlugin {
    inner: Arc<Inner>,
}

struct Inner {
    spec: ExecSpec,
    base_env: BTreeMap<String, String>,
    stdin_is_terminal: bool,
    clock: SharedClock,
    cert_slot: ClientCertSlot,
    cache: Mutex<Option<Credential>>,
    /// Held while the program runs so concurrent callers wait for one run instead of starting
    /// their own. An async mutex, because waiting for the run is the point.
    run_gate: tokio::sync::Mutex<()>,
}

#[derive(Clone)]
struct Credential {
    token: Option<Secret<String>>,
    expires: Option<DateTime<Utc>>,
}

impl ExecPlugin {
    /// A plugin that inherits `env`'s variables, terminal state and clock, and stores any client
    /// certificate it returns in `cert_slot` (the one the TLS configuration presents).
    pub fn new(spec: ExecSpec, env: &Environment, cert_slot: ClientCertSlot) -> Self {
        ExecPlugin {
            inner: Arc::new(Inner {
                spec,
                base_env: env.vars().clone(),
                stdin_is_terminal: env.stdin_is_terminal(),
                clock: env.clock().clone(),
                cert_slot,
                cache: Mutex::new(None),
                run_gate: tokio::sync::Mutex::new(()),
            }),
        }
    }

    /// The plugin's validated configuration.
    pub fn spec(&self) -> &ExecSpec {
        &self.inner.spec
    }

    /// The bearer token to send (`None` when the plugin returns only a client certificate),
    /// running the plugin if nothing unexpired is cached.
    pub async fn token(&self) -> Result<Option<Secret<String>>, ExecError> {
        if let Some(credential) = self.unexpired() {
            return Ok(credential.token);
        }
        let _running = self.inner.run_gate.lock().await;
        // Another caller may have refreshed the credential while this one waited.
        if let Some(credential) = self.unexpired() {
            return Ok(credential.token);
        }
        let credential = self.run().await?;
        *self.inner.cache.lock() = Some(credential.clone());
        Ok(credential.token)
    }

    /// Forgets the cached credential so the next call runs the plugin (call after a 401).
    pub fn invalidate(&self) {
        *self.inner.cache.lock() = None;
    }

    /// A secret-free description for `kube-gc config view`.
    pub fn describe(&self) -> String {
        let spec = &self.inner.spec;
        let mut text = format!("exec plugin {}", spec.command);
        for arg in &spec.args {
            text.push(' ');
            text.push_str(arg);
        }
        text.push_str(&format!(" ({})", spec.api_version));
        text
    }

    fn unexpired(&self) -> Option<Credential> {
        let cached = self.inner.cache.lock().clone()?;
        match cached.expires {
            Some(expires) if self.inner.clock.now() >= expires => None,
            _ => Some(cached),
        }
    }

    fn interactive(&self) -> Result<bool, ExecError> {
        let spec = &self.inner.spec;
        match spec.interactive_mode {
            InteractiveMode::Never => Ok(false),
            InteractiveMode::IfAvailable => Ok(self.inner.stdin_is_terminal),
            InteractiveMode::Always if self.inner.stdin_is_terminal => Ok(true),
            InteractiveMode::Always => Err(ExecError::NeedsTerminal {
                command: spec.command.clone(),
            }),
        }
    }

    fn exec_info(&self, interactive: bool) -> String {
        let spec = &self.inner.spec;
        let mut request = serde_json::json!({
            "apiVersion": spec.api_version,
            "kind": "ExecCredential",
            "spec": { "interactive": interactive },
        });
        if let Some(cluster) = &spec.cluster_info {
            request["spec"]["cluster"] = cluster.expose().clone();
        }
        request.to_string()
    }

    async fn run(&self) -> Result<Credential, ExecError> {
        let spec = &self.inner.spec;
        let interactive = self.interactive()?;
        let mut command = tokio::process::Command::new(&spec.command);
        command
            .args(&spec.args)
            .env_clear()
            .envs(&self.inner.base_env)
            .envs(spec.env.iter().map(|(name, value)| (name, value.expose())))
            .env("KUBERNETES_EXEC_INFO", self.exec_info(interactive))
            .stdout(Stdio::piped())
            .kill_on_drop(true);
        if interactive {
            // The plugin may prompt: it needs the user's terminal on both stdin and stderr.
            command.stdin(Stdio::inherit()).stderr(Stdio::inherit());
        } else {
            command.stdin(Stdio::null()).stderr(Stdio::piped());
        }
        // `kill_on_drop` makes dropping the timed-out future kill the program.
        let run = command.output();
        let output = if interactive {
            run.await
        } else {
            tokio::time::timeout(EXEC_TIMEOUT, run)
                .await
                .map_err(|_| ExecError::TimedOut {
                    command: spec.command.clone(),
                    after: EXEC_TIMEOUT,
                })?
        }
        .map_err(|source| self.spawn_error(source))?;
        if !output.status.success() {
            return Err(ExecError::Failed {
                command: spec.command.clone(),
                status: output.status,
                stderr: quote_stderr(&output.stderr),
            });
        }
        let credential = parse_credential(&output.stdout, &spec.api_version)
            .map_err(|reason| self.bad_output(reason))?;
        if let Some(key) = credential.client_key {
            self.inner.cert_slot.set(key);
        }
        Ok(Credential {
            token: credential.token,
            expires: credential.expires,
        })
    }

    fn spawn_error(&self, source: std::io::Error) -> ExecError {
        let command = self.inner.spec.command.clone();
        if source.kind() != std::io::ErrorKind::NotFound {
            return ExecError::Spawn { command, source };
        }
        let hint = self.inner.spec.install_hint.clone().unwrap_or_else(|| {
            "Install it, or check the users[].user.exec.command in your kubeconfig.".to_string()
        });
        ExecError::NotInstalled { command, hint }
    }

    fn bad_output(&self, reason: String) -> ExecError {
        ExecError::BadOutput {
            command: self.inner.spec.command.clone(),
            reason,
        }
    }
}

impl fmt::Debug for ExecPlugin {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ExecPlugin")
            .field("spec", &self.inner.spec)
            .field("cached", &self.inner.cache.lock().is_some())
            .finish_non_exhaustive()
    }
}

fn quote_stderr(stderr: &[u8]) -> String {
    let text = String::from_utf8_lossy(stderr);
    let text = text.trim();
    if text.is_empty() {
        return "(no output on stderr)".to_string();
    }
    let mut end = text.len().min(STDERR_QUOTE_LIMIT);
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    text[..end].to_string()
}

/// The `ExecCredential` a plugin prints.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct ExecCredentialOutput {
    api_version: Option<String>,
    kind: Option<String>,
    status: Option<ExecCredentialStatus>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct ExecCredentialStatus {
    token: Option<Secret<String>>,
    expiration_timestamp: Option<DateTime<Utc>>,
    client_certificate_data: Option<String>,
    client_key_data: Option<Secret<String>>,
}

#[derive(Debug)]
struct ParsedCredential {
    token: Option<Secret<String>>,
    expires: Option<DateTime<Utc>>,
    client_key: Option<Arc<rustls::sign::CertifiedKey>>,
}

fn parse_credential(stdout: &[u8], api_version: &str) -> Result<ParsedCredential, String> {
    let output: ExecCredentialOutput =
        serde_json::from_slice(stdout).map_err(|err| format!("not JSON ({err})"))?;
    if output.kind.as_deref() != Some("ExecCredential") {
        let kind = quoted(output.kind.as_deref());
        return Err(format!("kind is {kind}, not \"ExecCredential\""));
    }
    if output.api_version.as_deref() != Some(api_version) {
        let found = quoted(output.api_version.as_deref());
        return Err(format!(
            "apiVersion is {found}, but the kubeconfig asks for \"{api_version}\""
        ));
    }
    let status = output.status.ok_or("it has no status")?;
    let token = status.token.filter(|token| !token.expose().is_empty());
    let client_key = match (status.client_certificate_data, status.client_key_data) {
        (None, None) => None,
        (Some(cert), Some(key)) => Some(client_certificate(&cert, key.expose())?),
        _ => return Err("it has only one of clientCertificateData and clientKeyData".into()),
    };
    if token.is_none() && client_key.is_none() {
        return Err("it has neither a token nor a client certificate and key".into());
    }
    Ok(ParsedCredential {
        token,
        expires: status.expiration_timestamp,
        client_key,
    })
}

fn quoted(value: Option<&str>) -> String {
    value.map_or_else(|| "missing".to_string(), |value| format!("\"{value}\""))
}

/// `clientCertificateData` / `clientKeyData` are PEM text (not base64, unlike the kubeconfig).
fn client_certificate(cert: &str, key: &str) -> Result<Arc<rustls::sign::CertifiedKey>, String> {
    let chain = tls::parse_certificates(cert.as_bytes())
        .map_err(|err| format!("clientCertificateData {err}"))?;
    let key =
        tls::parse_private_key(key.as_bytes()).map_err(|err| format!("clientKeyData {err}"))?;
    tls::certified_key(chain, key).map_err(|err| format!("client certificate and key: {err}"))
}

/// Base64 of PEM, the form `certificate-authority-data` takes in `KUBERNETES_EXEC_INFO`.
pub fn encode_ca_for_exec_info(pem: &[u8]) -> String {
    base64::engine::general_purpose::STANDARD.encode(pem)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::kubeconfig::ExecConfig;

    fn config(api_version: &str, interactive_mode: Option<&str>) -> ExecConfig {
        ExecConfig {
            command: Some("plugin".into()),
            api_version: Some(api_version.into()),
            interactive_mode: interactive_mode.map(String::from),
            ..ExecConfig::default()
        }
    }

    #[test]
    fn v1_requires_interactive_mode_and_v1beta1_defaults_it() {
        let err = ExecSpec::new(&config(API_V1, None), None).unwrap_err();
        assert_eq!(err.field, "exec.interactiveMode");
        let spec = ExecSpec::new(&config(API_V1BETA1, None), None).unwrap();
        assert_eq!(spec.interactive_mode, InteractiveMode::IfAvailable);
        let spec = ExecSpec::new(&config(API_V1, Some("Never")), None).unwrap();
        assert_eq!(spec.interactive_mode, InteractiveMode::Never);
    }

    #[test]
    fn unsupported_versions_and_modes_are_refused() {
        let err = ExecSpec::new(&config(API_V1ALPHA1, None), None).unwrap_err();
        assert!(
            err.problem.contains("no longer supported"),
            "{}",
            err.problem
        );
        let err = ExecSpec::new(&config("v2", Some("Never")), None).unwrap_err();
        assert_eq!(err.field, "exec.apiVersion");
        let err = ExecSpec::new(&config(API_V1, Some("Sometimes")), None).unwrap_err();
        assert_eq!(err.field, "exec.interactiveMode");
    }

    #[test]
    fn cluster_info_is_passed_only_when_asked_for() {
        let info = Some(serde_json::json!({"server": "https://x"}));
        let spec = ExecSpec::new(&config(API_V1, Some("Never")), info.clone()).unwrap();
        assert!(spec.cluster_info.is_none());
        let mut asked = config(API_V1, Some("Never"));
        asked.provide_cluster_info = Some(true);
        assert!(ExecSpec::new(&asked, info).unwrap().cluster_info.is_some());
    }

    #[test]
    fn credentials_are_parsed_and_checked() {
        let ok = br#"{"apiVersion":"client.authentication.k8s.io/v1","kind":"ExecCredential",
            "status":{"token":"t","expirationTimestamp":"2030-01-01T00:00:00Z"}}"#;
        let parsed = parse_credential(ok, API_V1).unwrap();
        assert_eq!(parsed.token.unwrap().expose(), "t");
        assert_eq!(
            parsed.expires.unwrap().to_rfc3339(),
            "2030-01-01T00:00:00+00:00"
        );

        let wrong_version = parse_credential(ok, API_V1BETA1).unwrap_err();
        assert!(wrong_version.contains("apiVersion"), "{wrong_version}");
        let empty = br#"{"apiVersion":"client.authentication.k8s.io/v1","kind":"ExecCredential","status":{}}"#;
        assert!(parse_credential(empty, API_V1)
            .unwrap_err()
            .contains("neither"));
        assert!(parse_credential(b"oops", API_V1)
            .unwrap_err()
            .contains("not JSON"));
    }

    #[test]
    fn stderr_quotes_are_bounded() {
        assert_eq!(quote_stderr(b"  boom \n"), "boom");
        assert_eq!(quote_stderr(b""), "(no output on stderr)");
        assert_eq!(quote_stderr(&[b'x'; 5000]).len(), STDERR_QUOTE_LIMIT);
    }
}
