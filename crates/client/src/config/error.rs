//! [`ConfigError`]: why a configuration could not be loaded, naming the file, entry and field.
//!
//! The messages are written for the person who has to fix their kubeconfig: each says which
//! file, which `clusters[]`/`users[]`/`contexts[]` entry and which field is at fault, and never
//! includes a credential.

use std::fmt;
use std::path::PathBuf;

use super::kubeconfig::ParseError;

/// Which entry of a kubeconfig a problem is in.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Entry {
    /// A `clusters[]` entry, by name.
    Cluster(String),
    /// A `users[]` entry, by name.
    User(String),
    /// A `contexts[]` entry, by name.
    Context(String),
}

impl fmt::Display for Entry {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Entry::Cluster(name) => write!(f, "cluster \"{name}\""),
            Entry::User(name) => write!(f, "user \"{name}\""),
            Entry::Context(name) => write!(f, "context \"{name}\""),
        }
    }
}

/// A list of kubeconfig files, shown comma-separated.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct FileList(pub Vec<PathBuf>);

impl fmt::Display for FileList {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (index, path) in self.0.iter().enumerate() {
            if index > 0 {
                f.write_str(", ")?;
            }
            write!(f, "{}", path.display())?;
        }
        Ok(())
    }
}

/// What is wrong with one field of a kubeconfig entry.
#[derive(Debug, thiserror::Error)]
pub enum FieldProblem {
    /// Required but absent or empty.
    #[error("is missing")]
    Missing,
    /// One half of a pair (certificate and key) without the other.
    #[error("is missing, but {0} is set and needs it")]
    MissingPartner(&'static str),
    /// A `-data` field that is not base64.
    #[error("is not valid base64 ({0})")]
    Base64(#[from] base64::DecodeError),
    /// A path that cannot be read.
    #[error("names {path}, which cannot be read: {source}")]
    Unreadable {
        /// The file, after resolving it against the kubeconfig's directory.
        path: PathBuf,
        /// The operating system's reason.
        source: std::io::Error,
    },
    /// PEM that holds no certificate.
    #[error("holds no PEM certificate")]
    NoCertificate,
    /// PEM that holds no private key.
    #[error("holds no PEM private key (PKCS#1 RSA, SEC1 EC or PKCS#8)")]
    NoPrivateKey,
    /// Malformed PEM.
    #[error("is not valid PEM ({0})")]
    Pem(#[from] rustls_pki_types::pem::Error),
    /// Not a URL.
    #[error("is not a valid URL ({0})")]
    Url(#[from] url::ParseError),
    /// Any other invalid value, described.
    #[error("{0}")]
    Invalid(String),
}

/// Why a configuration could not be loaded.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    /// A kubeconfig file that exists (or was named explicitly) could not be read.
    #[error("cannot read kubeconfig {path}: {source}")]
    ReadKubeconfig {
        /// The file.
        path: PathBuf,
        /// The operating system's reason.
        source: std::io::Error,
    },
    /// A kubeconfig file is not a valid kubeconfig.
    #[error("cannot parse kubeconfig {path}: {source}")]
    ParseKubeconfig {
        /// The file.
        path: PathBuf,
        /// What the parser said.
        source: ParseError,
    },
    /// One file defines the same cluster, user or context name twice.
    #[error("kubeconfig {path} defines {kind} \"{name}\" twice")]
    DuplicateName {
        /// The file.
        path: PathBuf,
        /// `cluster`, `user` or `context`.
        kind: &'static str,
        /// The repeated name.
        name: String,
    },
    /// Neither a kubeconfig nor an in-cluster service account was found.
    #[error(
        "no configuration found: no kubeconfig at {looked_at}, and KUBERNETES_SERVICE_HOST is \
         not set so this is not a pod; pass --kubeconfig or set KUBECONFIG"
    )]
    NoConfiguration {
        /// Where kubeconfig files were looked for.
        looked_at: String,
    },
    /// No `--context` and no `current-context`.
    #[error("no context chosen: {files} set no current-context and --context was not given")]
    NoCurrentContext {
        /// The files that were merged.
        files: FileList,
    },
    /// The chosen context does not exist.
    #[error("context \"{context}\" is not in {files}")]
    ContextNotFound {
        /// The context asked for.
        context: String,
        /// The files that were merged.
        files: FileList,
    },
    /// A context names a cluster or user that no file defines.
    #[error("context \"{context}\" names {kind} \"{name}\", which is not in {files}")]
    DanglingReference {
        /// The context.
        context: String,
        /// `cluster` or `user`.
        kind: &'static str,
        /// The missing entry's name.
        name: String,
        /// The files that were merged.
        files: FileList,
    },
    /// One field of one entry is wrong.
    #[error("{entry} in {file}: {field} {problem}")]
    Field {
        /// The file defining the entry.
        file: PathBuf,
        /// The entry.
        entry: Entry,
        /// The field's name as spelled in the kubeconfig.
        field: &'static str,
        /// What is wrong with it.
        problem: FieldProblem,
    },
    /// Two fields that exclude each other are both set.
    #[error("{entry} in {file} sets both {first} and {second}; keep only one")]
    Conflict {
        /// The file defining the entry.
        file: PathBuf,
        /// The entry.
        entry: Entry,
        /// One field.
        first: &'static str,
        /// The other.
        second: &'static str,
    },
    /// A legacy `auth-provider`, which client-go no longer supports either.
    #[error(
        "{entry} in {file} uses auth-provider \"{provider}\", which kube-gc does not support \
         (client-go removed its in-tree auth providers in Kubernetes 1.26); switch this user to \
         an exec credential plugin{advice}"
    )]
    AuthProvider {
        /// The file defining the user.
        file: PathBuf,
        /// The user.
        entry: Entry,
        /// The provider's name.
        provider: String,
        /// The usual replacement for well-known providers, starting with ", ".
        advice: &'static str,
    },
    /// In-cluster configuration was chosen but is incomplete.
    #[error("in-cluster configuration: {0}")]
    InCluster(String),
    /// In-cluster configuration was chosen but a service-account file cannot be read.
    #[error("in-cluster configuration: cannot read {path}: {source}")]
    InClusterFile {
        /// The file.
        path: PathBuf,
        /// The operating system's reason.
        source: std::io::Error,
    },
    /// rustls refused the TLS settings.
    #[error("cannot build the TLS configuration: {0}")]
    Tls(#[from] rustls::Error),
    /// No trust anchors, so no server certificate could ever be verified.
    #[error("cannot verify the API server: {0}")]
    Verifier(#[from] rustls::client::VerifierBuilderError),
    /// None of the configured CA certificates can be parsed as a trust anchor.
    #[error("the certificate authority holds no certificate usable as a trust anchor")]
    UnusableCertificateAuthority,
    /// `tls-server-name` is not a DNS name or IP address.
    #[error("tls-server-name \"{0}\" is not a valid DNS name or IP address")]
    InvalidServerName(String),
    /// The operating system's trust store could not be read and no CA was configured.
    #[error(
        "no certificate authority configured and the system trust store has none usable ({0}); \
         set certificate-authority or certificate-authority-data"
    )]
    NoTrustRoots(String),
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dangling_user_message_names_everything() {
        let err = ConfigError::DanglingReference {
            context: "dev".into(),
            kind: "user",
            name: "bob".into(),
            files: FileList(vec!["/a/config".into(), "/b/config".into()]),
        };
        assert_eq!(
            err.to_string(),
            "context \"dev\" names user \"bob\", which is not in /a/config, /b/config"
        );
    }
}
