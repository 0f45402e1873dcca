//! [`Environment`]: everything outside the kubeconfig files that configuration loading looks at.
//!
//! Loading a configuration depends on environment variables (`KUBECONFIG`,
//! `KUBERNETES_SERVICE_HOST`, ...), the home directory, the service-account directory of a pod,
//! whether stdin is a terminal (for interactive exec plugins), the wall clock (exec credential
//! expiry) and the operating system's trust store. All of them live in this one value, so that
//! library code never reads the real process state: [`Environment::from_process`] is the single
//! place that does, and tests build an `Environment` by hand around a temporary directory.

use std::collections::BTreeMap;
use std::fmt;
use std::io::IsTerminal;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use chrono::{DateTime, Utc};
use kube_gc_core::clock::{SharedClock, SystemClock};
use rustls_pki_types::CertificateDer;

/// Where a pod's service-account credentials are mounted.
pub const SERVICE_ACCOUNT_DIR: &str = "/var/run/secrets/kubernetes.io/serviceaccount";

/// Which certificates to trust when a cluster names no certificate authority.
#[derive(Clone)]
pub enum SystemRoots {
    /// The operating system's trust store, loaded when a TLS configuration needs it
    /// (rustls-native-certs, which honours `SSL_CERT_FILE` and `SSL_CERT_DIR` as Go does).
    Native,
    /// A fixed list (tests; or an empty list to trust nothing without an explicit CA).
    Fixed(Vec<CertificateDer<'static>>),
}

impl fmt::Debug for SystemRoots {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SystemRoots::Native => f.write_str("Native"),
            SystemRoots::Fixed(roots) => write!(f, "Fixed({} certificates)", roots.len()),
        }
    }
}

/// The process state configuration loading may consult; see the module documentation.
#[derive(Clone)]
pub struct Environment {
    vars: BTreeMap<String, String>,
    home: Option<PathBuf>,
    service_account_dir: PathBuf,
    stdin_is_terminal: bool,
    /// Exec credentials expire at a wall-clock instant.
    clock: SharedClock,
    system_roots: SystemRoots,
}

impl Environment {
    /// The real process environment: variables, `$HOME`, the standard service-account
    /// directory, the terminal state of stdin, the system clock and the OS trust store.
    pub fn from_process() -> Self {
        let vars: BTreeMap<String, String> = std::env::vars().collect();
        let home = vars
            .get("HOME")
            .or_else(|| vars.get("USERPROFILE"))
            .filter(|home| !home.is_empty())
            .map(PathBuf::from);
        Environment {
            vars,
            home,
            service_account_dir: PathBuf::from(SERVICE_ACCOUNT_DIR),
            stdin_is_terminal: std::io::stdin().is_terminal(),
            clock: Arc::new(SystemClock),
            system_roots: SystemRoots::Native,
        }
    }

    /// An empty environment: no variables, no home, a service-account directory that does not
    /// exist, no terminal, the system clock and no trusted roots. Tests start from here.
    pub fn empty() -> Self {
        Environment {
            vars: BTreeMap::new(),
            home: None,
            service_account_dir: PathBuf::from("/nonexistent/kube-gc/serviceaccount"),
            stdin_is_terminal: false,
            clock: Arc::new(SystemClock),
            system_roots: SystemRoots::Fixed(Vec::new()),
        }
    }

    /// Sets an environment variable.
    pub fn with_var(mut self, name: impl Into<String>, value: impl Into<String>) -> Self {
        self.vars.insert(name.into(), value.into());
        self
    }

    /// Sets the home directory (where `.kube/config` is looked for).
    pub fn with_home(mut self, home: impl Into<PathBuf>) -> Self {
        self.home = Some(home.into());
        self
    }

    /// Sets the directory holding the service-account `token`, `ca.crt` and `namespace`.
    pub fn with_service_account_dir(mut self, dir: impl Into<PathBuf>) -> Self {
        self.service_account_dir = dir.into();
        self
    }

    /// Declares whether stdin is an interactive terminal.
    pub fn with_stdin_terminal(mut self, is_terminal: bool) -> Self {
        self.stdin_is_terminal = is_terminal;
        self
    }

    /// Replaces the wall clock.
    pub fn with_clock(mut self, clock: SharedClock) -> Self {
        self.clock = clock;
        self
    }

    /// Replaces the certificates trusted when a cluster names no CA.
    pub fn with_system_roots(mut self, roots: SystemRoots) -> Self {
        self.system_roots = roots;
        self
    }

    /// The value of a variable, if set and not empty (empty counts as unset, as in client-go).
    pub fn var(&self, name: &str) -> Option<&str> {
        self.vars
            .get(name)
            .map(String::as_str)
            .filter(|value| !value.is_empty())
    }

    /// All variables, handed to exec credential plugins as their environment.
    pub fn vars(&self) -> &BTreeMap<String, String> {
        &self.vars
    }

    /// The home directory, if known.
    pub fn home(&self) -> Option<&Path> {
        self.home.as_deref()
    }

    /// The service-account directory.
    pub fn service_account_dir(&self) -> &Path {
        &self.service_account_dir
    }

    /// Whether stdin is an interactive terminal.
    pub fn stdin_is_terminal(&self) -> bool {
        self.stdin_is_terminal
    }

    /// The wall clock.
    pub fn clock(&self) -> &SharedClock {
        &self.clock
    }

    /// The current wall-clock time.
    pub fn now(&self) -> DateTime<Utc> {
        self.clock.now()
    }

    /// The certificates trusted when a cluster names no CA.
    pub fn system_roots(&self) -> &SystemRoots {
        &self.system_roots
    }
}

impl fmt::Debug for Environment {
    // Variables may hold credentials (AWS keys, tokens): only their names are shown.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Environment")
            .field("vars", &self.vars.keys().collect::<Vec<_>>())
            .field("home", &self.home)
            .field("service_account_dir", &self.service_account_dir)
            .field("stdin_is_terminal", &self.stdin_is_terminal)
            .finish_non_exhaustive()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn empty_variables_count_as_unset() {
        let env = Environment::empty()
            .with_var("KUBECONFIG", "")
            .with_var("A", "b");
        assert_eq!(env.var("KUBECONFIG"), None);
        assert_eq!(env.var("A"), Some("b"));
    }

    #[test]
    fn debug_shows_variable_names_only() {
        let env = Environment::empty().with_var("AWS_SECRET_ACCESS_KEY", "s3cr3t");
        let shown = format!("{env:?}");
        assert!(shown.contains("AWS_SECRET_ACCESS_KEY"));
        assert!(!shown.contains("s3cr3t"));
    }
}
