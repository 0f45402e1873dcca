//! `kube-gc run`'s notification flags: `--notify-webhook-url` (or `KUBE_GC_NOTIFY_WEBHOOK_URL`,
//! so a Deployment can take it from a Secret) and `--notify-interval`.
//!
//! Contract: a URL that is not an http(s) URL with a host, or an interval of zero, stops the run
//! at start-up with an error naming the flag — and never quoting the URL, whose path or query
//! is often the webhook's secret.

use std::time::Duration;

use clap::Args;

use crate::duration::parse_duration;
use crate::notify::{InvalidUrl, NotifyOptions, WebhookUrl, DEFAULT_INTERVAL};

/// The notification flags.
#[derive(Debug, Clone, Args)]
pub struct NotifyArgs {
    /// Send, in batches, what kube-gc deleted, what retention policies in Audit mode would
    /// have deleted, and what it will delete in the next window, to this webhook: a POST of
    /// JSON with a Slack-compatible `text` field. Retention policies can name their own
    /// (spec.notification).
    #[arg(
        long,
        value_name = "URL",
        env = "KUBE_GC_NOTIFY_WEBHOOK_URL",
        hide_env_values = true
    )]
    pub notify_webhook_url: Option<String>,

    /// At most one notification per destination this often (failed ones are retried with
    /// back-off within it); each tells what comes in the next such window.
    #[arg(long, value_name = "DURATION", value_parser = parse_duration, default_value = "1m")]
    pub notify_interval: Duration,
}

/// A notification flag that cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum NotifyFlagError {
    /// The URL is not one kube-gc sends to.
    #[error("--notify-webhook-url: {0}")]
    Url(#[source] InvalidUrl),
    /// An interval of zero.
    #[error("--notify-interval must be longer than zero")]
    Interval,
}

impl NotifyArgs {
    /// The notifier's options.
    ///
    /// # Errors
    ///
    /// [`NotifyFlagError`] naming the flag at fault.
    pub fn options(&self) -> Result<NotifyOptions, NotifyFlagError> {
        let webhook = self
            .notify_webhook_url
            .as_deref()
            .map(WebhookUrl::parse)
            .transpose()
            .map_err(NotifyFlagError::Url)?;
        if self.notify_interval.is_zero() {
            return Err(NotifyFlagError::Interval);
        }
        Ok(NotifyOptions {
            webhook,
            interval: self.notify_interval,
            ..NotifyOptions::default()
        })
    }
}

impl Default for NotifyArgs {
    fn default() -> Self {
        NotifyArgs {
            notify_webhook_url: None,
            notify_interval: DEFAULT_INTERVAL,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(url: Option<&str>, interval: Duration) -> NotifyArgs {
        NotifyArgs {
            notify_webhook_url: url.map(str::to_owned),
            notify_interval: interval,
        }
    }

    #[test]
    fn a_bad_url_or_interval_is_an_error_naming_the_flag_not_the_url() {
        let ok = args(
            Some("https://hooks.slack.com/services/T/B/x"),
            DEFAULT_INTERVAL,
        );
        assert!(ok.options().unwrap().webhook.is_some());
        let error = args(
            Some("hooks.slack.com/services/T/B/s3cret"),
            DEFAULT_INTERVAL,
        )
        .options()
        .unwrap_err()
        .to_string();
        assert!(
            error.starts_with("--notify-webhook-url: not a URL"),
            "{error}"
        );
        assert!(!error.contains("s3cret"), "{error}");
        let error = args(None, Duration::ZERO).options().unwrap_err();
        assert_eq!(
            error.to_string(),
            "--notify-interval must be longer than zero"
        );
        assert_eq!(NotifyArgs::default().options().unwrap().webhook, None);
    }
}
