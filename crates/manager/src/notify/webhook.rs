//! A webhook: its URL ([`WebhookUrl`]: checked, and never shown whole) and one POST of a JSON
//! body to it ([`Webhook::post`]), classified as delivered, worth trying again, or refused for
//! good.
//!
//! Contract:
//! - A URL is `http` or `https` with a host, and nothing else; a Slack incoming webhook carries
//!   its secret in the path (`/services/T…/B…/…`), others in the query or the user info, so a
//!   URL is only ever displayed as `scheme://host[:port]/…` ([`WebhookUrl`]'s `Display`).
//! - One POST is bounded by the request timeout (connecting included) and follows no redirect:
//!   a receiver that moved is told by its 3xx, as a refusal, rather than followed with the body.
//! - 2xx is delivered. A transport failure (refused, reset, timed out), 408, 429 and 5xx are
//!   worth trying again — after the `Retry-After` a 429 or 503 names, when it does; any other
//!   answer (a revoked Slack webhook's 404 or 410, a 400) is refused for good: trying again
//!   would be refused again.

use std::fmt;
use std::time::Duration;

use url::Url;

use kube_gc_client::config::{SystemRoots, TlsSettings};

/// A webhook's URL.
#[derive(Clone, PartialEq, Eq)]
pub struct WebhookUrl(Url);

/// Why a text is not a webhook URL (never quoting it: it may hold a secret).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum InvalidUrl {
    /// Not a URL at all.
    #[error("not a URL: {0}")]
    Malformed(String),
    /// Another scheme.
    #[error("the scheme is {0:?}; only http and https are sent to")]
    Scheme(String),
    /// No host.
    #[error("it names no host")]
    NoHost,
}

impl WebhookUrl {
    /// Checks `text` (surrounding white space ignored: a Secret's value often ends in a newline).
    ///
    /// # Errors
    ///
    /// [`InvalidUrl`], saying what is wrong without quoting the URL.
    pub fn parse(text: &str) -> Result<WebhookUrl, InvalidUrl> {
        let url = Url::parse(text.trim()).map_err(|e| InvalidUrl::Malformed(e.to_string()))?;
        if !matches!(url.scheme(), "http" | "https") {
            return Err(InvalidUrl::Scheme(url.scheme().to_owned()));
        }
        if url.host_str().is_none_or(str::is_empty) {
            return Err(InvalidUrl::NoHost);
        }
        Ok(WebhookUrl(url))
    }

    /// The URL, whole: for the request only.
    pub fn expose(&self) -> &Url {
        &self.0
    }
}

impl std::str::FromStr for WebhookUrl {
    type Err = InvalidUrl;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        WebhookUrl::parse(text)
    }
}

/// `scheme://host[:port]/…`: what logs, conditions and errors show of the URL.
impl fmt::Display for WebhookUrl {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let url = &self.0;
        write!(f, "{}://{}", url.scheme(), url.host_str().unwrap_or(""))?;
        if let Some(port) = url.port() {
            write!(f, ":{port}")?;
        }
        let hidden = url.path() != "/" || url.query().is_some() || !url.username().is_empty();
        f.write_str(if hidden { "/…" } else { "/" })
    }
}

impl fmt::Debug for WebhookUrl {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "WebhookUrl({self})")
    }
}

/// How one POST ended.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Sent {
    /// 2xx.
    Delivered,
    /// Worth trying again (after the wait the receiver asked for, if any).
    Retry {
        /// What happened, for the log and the condition.
        why: String,
        /// A `Retry-After` the receiver sent.
        after: Option<Duration>,
    },
    /// Refused for good.
    Refused {
        /// What happened.
        why: String,
    },
}

/// Why the HTTP client for webhooks cannot be built.
#[derive(Debug, thiserror::Error)]
pub enum WebhookClientError {
    /// No trust roots, or a broken TLS configuration.
    #[error("cannot set up TLS for webhooks: {0}")]
    Tls(#[from] kube_gc_client::config::ConfigError),
    /// reqwest refused the configuration.
    #[error("cannot build the HTTP client for webhooks: {0}")]
    Build(#[from] reqwest::Error),
}

/// Sends to webhooks; cheap to clone (clones share connections).
#[derive(Clone, Debug)]
pub struct Webhook {
    http: reqwest::Client,
    timeout: Duration,
}

impl Webhook {
    /// A client trusting the system's roots, each POST bounded by `timeout`.
    ///
    /// # Errors
    ///
    /// [`WebhookClientError`] when TLS cannot be set up (no trust roots at all).
    pub fn new(timeout: Duration) -> Result<Webhook, WebhookClientError> {
        // The system's roots, with the crypto provider the API client uses (ring).
        let tls = TlsSettings::default().rustls_config(&SystemRoots::Native)?;
        let http = reqwest::Client::builder()
            .use_preconfigured_tls(tls)
            .redirect(reqwest::redirect::Policy::none())
            .connect_timeout(timeout)
            .timeout(timeout)
            .user_agent(concat!(
                "kube-gc/",
                env!("CARGO_PKG_VERSION"),
                " (notifications)"
            ))
            .build()?;
        Ok(Webhook { http, timeout })
    }

    /// POSTs `body` (JSON) to `url` once.
    pub async fn post(&self, url: &WebhookUrl, body: &serde_json::Value) -> Sent {
        let request = self.http.post(url.expose().clone()).json(body).send();
        // reqwest's own timeout bounds it too; this one also holds on tokio's paused clock.
        let answer = match tokio::time::timeout(self.timeout, request).await {
            Err(_) => {
                return Sent::Retry {
                    why: format!("no answer within {:?}", self.timeout),
                    after: None,
                }
            }
            Ok(Err(error)) => {
                return Sent::Retry {
                    why: transport_failure(&error),
                    after: None,
                }
            }
            Ok(Ok(answer)) => answer,
        };
        let status = answer.status();
        if status.is_success() {
            return Sent::Delivered;
        }
        let why = format!("answered {status}");
        let code = status.as_u16();
        if code == 408 || code == 429 || status.is_server_error() {
            let after = answer
                .headers()
                .get(reqwest::header::RETRY_AFTER)
                .and_then(|v| v.to_str().ok())
                .and_then(|v| v.trim().parse::<u64>().ok())
                .map(Duration::from_secs);
            Sent::Retry { why, after }
        } else {
            Sent::Refused { why }
        }
    }
}

/// A transport failure in a few words, without the URL reqwest puts in its messages.
fn transport_failure(error: &reqwest::Error) -> String {
    let what = if error.is_timeout() {
        "timed out"
    } else if error.is_connect() {
        "could not connect"
    } else if error.is_request() || error.is_body() {
        "the request failed"
    } else {
        "no answer"
    };
    let mut cause = String::new();
    let mut source = std::error::Error::source(error);
    while let Some(inner) = source {
        cause = inner.to_string();
        source = inner.source();
    }
    if cause.is_empty() {
        what.to_owned()
    } else {
        format!("{what}: {cause}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_http_urls_with_a_host_are_taken_and_never_shown_whole() {
        let slack = WebhookUrl::parse(
            "https://hooks.slack.com/services/T000/B000/XXXXXXXXXXXXXXXXXXXXXXXX\n",
        )
        .unwrap();
        assert_eq!(slack.to_string(), "https://hooks.slack.com/…");
        assert!(!format!("{slack:?}").contains("XXXX"));
        let plain = WebhookUrl::parse("http://receiver.ops:8080/").unwrap();
        assert_eq!(plain.to_string(), "http://receiver.ops:8080/");
        let token = WebhookUrl::parse("https://user:pw@example.com/?token=s3cret").unwrap();
        assert!(!token.to_string().contains("s3cret") && !token.to_string().contains("pw"));
        assert_eq!(
            WebhookUrl::parse("ftp://example.com/x"),
            Err(InvalidUrl::Scheme("ftp".into()))
        );
        assert!(matches!(
            WebhookUrl::parse("hooks.slack.com/services/x"),
            Err(InvalidUrl::Malformed(_))
        ));
        let error = WebhookUrl::parse("not a url with s3cret").unwrap_err();
        assert!(!error.to_string().contains("s3cret"), "{error}");
    }
}
