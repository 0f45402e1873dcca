//! [`Auth`]: how kube-gc proves who it is, and the `Authorization` header that results.
//!
//! The REST client calls [`Auth::authorization_header`] before every request and
//! [`Auth::invalidate`] when the server answers 401. Static credentials (a token, basic auth)
//! are returned as they are; a token file is re-read as it rotates ([`token_file`]); an exec
//! plugin is run when no unexpired credential is cached ([`exec`]). Client certificates are not
//! a header: they sit in the TLS configuration's [`ClientCertSlot`](super::tls::ClientCertSlot),
//! which an exec plugin refreshes when it returns one.
//!
//! The header value is marked sensitive, so `http`'s `Debug` prints `Sensitive` instead of it.

pub mod exec;
pub mod token_file;

use std::path::PathBuf;

use base64::Engine;
use http::HeaderValue;

use super::secret::Secret;
pub use exec::{ExecError, ExecPlugin, EXEC_TIMEOUT};
pub use token_file::TokenFile;

/// The credential source of a configuration. Clones share caches.
#[derive(Debug, Clone)]
pub enum Auth {
    /// No header (anonymous, or a client certificate only).
    None,
    /// A fixed bearer token (`token`).
    Token(Secret<String>),
    /// A bearer token re-read from a file (`tokenFile`, or the in-cluster service account).
    TokenFile(TokenFile),
    /// HTTP basic authentication (`username` / `password`).
    Basic {
        /// The user name.
        username: String,
        /// The password.
        password: Secret<String>,
    },
    /// An exec credential plugin.
    Exec(ExecPlugin),
}

/// Why no credential could be produced for a request.
#[derive(Debug, thiserror::Error)]
pub enum AuthError {
    /// The token file cannot be read.
    #[error("cannot read token file {path}: {source}")]
    TokenFile {
        /// The file.
        path: PathBuf,
        /// The operating system's reason.
        source: std::io::Error,
    },
    /// The token file holds nothing but whitespace.
    #[error("token file {path} is empty")]
    EmptyTokenFile {
        /// The file.
        path: PathBuf,
    },
    /// The credential contains bytes an HTTP header cannot carry.
    #[error("the {0} credential contains characters that cannot be sent in an HTTP header")]
    InvalidHeader(&'static str),
    /// The exec plugin failed.
    #[error(transparent)]
    Exec(#[from] ExecError),
}

impl Auth {
    /// The `Authorization` header value for the next request, if this source produces one.
    pub async fn authorization_header(&self) -> Result<Option<HeaderValue>, AuthError> {
        let header = match self {
            Auth::None => return Ok(None),
            Auth::Token(token) => bearer(token)?,
            Auth::TokenFile(file) => bearer(&file.token().await?)?,
            Auth::Basic { username, password } => basic(username, password)?,
            Auth::Exec(plugin) => match plugin.token().await? {
                Some(token) => bearer(&token)?,
                None => return Ok(None),
            },
        };
        Ok(Some(header))
    }

    /// Drops cached credentials after the server rejected them (HTTP 401), so the next
    /// [`Auth::authorization_header`] re-reads the token file or re-runs the exec plugin.
    pub fn invalidate(&self) {
        match self {
            Auth::TokenFile(file) => file.invalidate(),
            Auth::Exec(plugin) => plugin.invalidate(),
            Auth::None | Auth::Token(_) | Auth::Basic { .. } => {}
        }
    }

    /// A short, secret-free description for `kube-gc config view`.
    pub fn describe(&self) -> String {
        match self {
            Auth::None => "none (anonymous or client certificate only)".to_string(),
            Auth::Token(_) => "bearer token (inline, redacted)".to_string(),
            Auth::TokenFile(file) => format!("bearer token from {}", file.path().display()),
            Auth::Basic { username, .. } => format!("basic auth as \"{username}\""),
            Auth::Exec(plugin) => plugin.describe(),
        }
    }
}

fn bearer(token: &Secret<String>) -> Result<HeaderValue, AuthError> {
    sensitive(format!("Bearer {}", token.expose()), "bearer token")
}

fn basic(username: &str, password: &Secret<String>) -> Result<HeaderValue, AuthError> {
    let pair = format!("{username}:{}", password.expose());
    let encoded = base64::engine::general_purpose::STANDARD.encode(pair);
    sensitive(format!("Basic {encoded}"), "basic auth")
}

fn sensitive(value: String, kind: &'static str) -> Result<HeaderValue, AuthError> {
    let mut header = HeaderValue::try_from(value).map_err(|_| AuthError::InvalidHeader(kind))?;
    header.set_sensitive(true);
    Ok(header)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn static_credentials_become_headers() {
        let token = Auth::Token(Secret::new("abc".into()));
        let header = token.authorization_header().await.unwrap().unwrap();
        assert_eq!(header, "Bearer abc");
        assert!(header.is_sensitive());
        assert!(!format!("{header:?}").contains("abc"));

        let basic = Auth::Basic {
            username: "admin".into(),
            password: Secret::new("secret".into()),
        };
        let header = basic.authorization_header().await.unwrap().unwrap();
        assert_eq!(header, "Basic YWRtaW46c2VjcmV0");
        assert!(Auth::None.authorization_header().await.unwrap().is_none());
    }

    #[tokio::test]
    async fn a_token_with_a_newline_is_refused() {
        let token = Auth::Token(Secret::new("abc\ndef".into()));
        let err = token.authorization_header().await.unwrap_err();
        assert!(matches!(err, AuthError::InvalidHeader("bearer token")));
    }

    #[test]
    fn descriptions_hold_no_secret() {
        let token = Auth::Token(Secret::new("abc123".into()));
        let basic = Auth::Basic {
            username: "admin".into(),
            password: Secret::new("pw-999".into()),
        };
        for auth in [token, basic] {
            let text = format!("{} {:?}", auth.describe(), auth);
            assert!(
                !text.contains("abc123") && !text.contains("pw-999"),
                "{text}"
            );
        }
    }
}
