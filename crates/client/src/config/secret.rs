//! [`Secret`]: a value that must never reach a log line or `Debug` output.
//!
//! Tokens, passwords and private keys are wrapped in `Secret` as soon as they are read, so a
//! stray `{:?}` or `tracing::debug!(?config)` prints `<redacted>` instead of the credential.
//! Reading the value takes an explicit call to [`Secret::expose`], which is easy to find in review.
//!
//! A URL may carry a password too (`socks5://alice:pw@proxy:1080`): [`redacted_url`] renders it
//! with the password replaced by `<redacted>` but the username kept, so operators still see which
//! account is used, and [`ProxyUrl`] is a `proxy-url` whose `Debug` and `Display` do just that.

use std::fmt;

use url::{Position, Url};

/// A credential whose `Debug` output is `<redacted>`; it has no `Display` on purpose.
#[derive(Clone, PartialEq, Eq)]
pub struct Secret<T>(T);

impl<T> Secret<T> {
    /// Wraps a credential.
    pub fn new(value: T) -> Self {
        Secret(value)
    }

    /// The credential itself; call only where it is sent or handed to TLS.
    pub fn expose(&self) -> &T {
        &self.0
    }
}

impl<T> fmt::Debug for Secret<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("<redacted>")
    }
}

impl<'de, T: serde::Deserialize<'de>> serde::Deserialize<'de> for Secret<T> {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        T::deserialize(deserializer).map(Secret)
    }
}

impl<T> From<T> for Secret<T> {
    fn from(value: T) -> Self {
        Secret(value)
    }
}

/// `url` as text, with its password (if any) replaced by `<redacted>`; everything else, the
/// username included, is kept.
pub fn redacted_url(url: &Url) -> String {
    if url.password().is_none() {
        return url.to_string();
    }
    // Sliced rather than `set_password`, which would percent-encode the marker's `<` and `>`.
    format!(
        "{}:<redacted>@{}",
        &url[..Position::AfterUsername],
        &url[Position::BeforeHost..]
    )
}

/// A `proxy-url`: its `Debug` and `Display` never show the password (see [`redacted_url`]);
/// the URL itself, password included, takes an explicit [`ProxyUrl::expose`].
#[derive(Clone, PartialEq, Eq)]
pub struct ProxyUrl(Url);

impl ProxyUrl {
    /// Wraps a proxy URL.
    pub fn new(url: Url) -> Self {
        ProxyUrl(url)
    }

    /// The URL with its credentials; call only where the HTTP client's proxy is built.
    pub fn expose(&self) -> &Url {
        &self.0
    }

    /// `http`, `https` or `socks5`.
    pub fn scheme(&self) -> &str {
        self.0.scheme()
    }
}

impl fmt::Display for ProxyUrl {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&redacted_url(&self.0))
    }
}

impl fmt::Debug for ProxyUrl {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "ProxyUrl({self})")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn debug_output_hides_the_value() {
        let secret = Secret::new(String::from("hunter2"));
        let shown = format!("{secret:?} {:?}", Some(&secret));
        assert!(!shown.contains("hunter2"), "{shown}");
        assert_eq!(shown, "<redacted> Some(<redacted>)");
        assert_eq!(secret.expose(), "hunter2");
    }

    #[test]
    fn urls_keep_the_username_and_lose_the_password() {
        let url = |text: &str| Url::parse(text).unwrap();
        assert_eq!(
            redacted_url(&url("socks5://alice:s3cr3tpw@127.0.0.1:1080")),
            "socks5://alice:<redacted>@127.0.0.1:1080"
        );
        assert_eq!(
            redacted_url(&url("http://:pw%40x@proxy:3128/path?q=1")),
            "http://:<redacted>@proxy:3128/path?q=1"
        );
        assert_eq!(
            redacted_url(&url("http://bob@proxy:3128")),
            "http://bob@proxy:3128/"
        );
        assert_eq!(
            redacted_url(&url("socks5://[::1]:1080")),
            "socks5://[::1]:1080"
        );
    }

    #[test]
    fn proxy_urls_redact_in_debug_and_display_only() {
        let url = Url::parse("socks5://alice:s3cr3tpw@127.0.0.1:1080").unwrap();
        let proxy = ProxyUrl::new(url.clone());
        let shown = format!("{proxy} {proxy:?} {:?}", Some(&proxy));
        assert!(!shown.contains("s3cr3tpw"), "{shown}");
        assert_eq!(
            format!("{proxy:?}"),
            "ProxyUrl(socks5://alice:<redacted>@127.0.0.1:1080)"
        );
        assert_eq!(proxy.expose(), &url);
        assert_eq!(proxy.expose().password(), Some("s3cr3tpw"));
    }
}
