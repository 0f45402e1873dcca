//! A policy's webhook URL, read from the key of a Secret through the API (one GET, before each
//! batch — so a changed or newly created Secret is used from the next batch on), or the reason
//! it cannot be, as the policy's `Notifying` condition says it.
//!
//! Contract: the URL is never logged nor put in a condition whole ([`WebhookUrl`]'s display);
//! a Secret that is missing, unreadable (kube-gc may not `get` it: its RBAC is granted per
//! namespace, `deploy/controllers/retention/rbac-notification-secrets.yaml`), lacks the key or
//! holds no http(s) URL is a [`SecretProblem`] naming what to fix.

use base64::Engine;

use kube_gc_client::{Api, Client, ResourceRef};
use kube_gc_controllers::retention::policy::WebhookSecret;

use super::webhook::WebhookUrl;

/// The ClusterRole a RoleBinding in the Secret's namespace must grant kube-gc.
pub const SECRETS_ROLE: &str = "kube-gc:retention-notification-secrets";

/// Why a policy's webhook URL cannot be read.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum SecretProblem {
    /// No such Secret.
    NotFound,
    /// kube-gc may not read it: the server's words.
    Forbidden(String),
    /// It has no such key.
    KeyMissing,
    /// The key holds no http(s) URL: what is wrong with it.
    InvalidUrl(String),
    /// The request failed otherwise (the server is away): tried again at the next batch.
    Unreadable(String),
}

impl SecretProblem {
    /// The condition's reason.
    pub fn reason(&self) -> &'static str {
        match self {
            SecretProblem::NotFound => "SecretNotFound",
            SecretProblem::Forbidden(_) => "SecretForbidden",
            SecretProblem::KeyMissing => "SecretKeyMissing",
            SecretProblem::InvalidUrl(_) => "InvalidURL",
            SecretProblem::Unreadable(_) => "SecretUnreadable",
        }
    }

    /// The condition's message, about `secret`.
    pub fn describe(&self, secret: &WebhookSecret) -> String {
        let (ns, name, key) = (&secret.namespace, &secret.name, &secret.key);
        match self {
            SecretProblem::NotFound => format!("Secret {ns}/{name} does not exist"),
            SecretProblem::Forbidden(said) => format!(
                "kube-gc may not read Secret {ns}/{name} ({said}); grant it with \
                 `kubectl create rolebinding kube-gc-notification-secrets -n {ns} \
                 --clusterrole={SECRETS_ROLE} --serviceaccount=<kube-gc's namespace>:kube-gc`"
            ),
            SecretProblem::KeyMissing => format!("Secret {ns}/{name} has no key {key:?}"),
            SecretProblem::InvalidUrl(why) => {
                format!("key {key:?} of Secret {ns}/{name} holds no webhook URL: {why}")
            }
            SecretProblem::Unreadable(why) => {
                format!(
                    "Secret {ns}/{name} could not be read ({why}); trying again at the next batch"
                )
            }
        }
    }
}

fn secrets() -> ResourceRef {
    ResourceRef::new("", "v1", "secrets", "Secret", true)
}

/// Reads the webhook URL `secret` names.
///
/// # Errors
///
/// [`SecretProblem`] saying what is in the way.
pub async fn read_url(
    client: &Client,
    secret: &WebhookSecret,
) -> Result<WebhookUrl, SecretProblem> {
    let api: Api<serde_json::Value> =
        Api::dynamic(client.clone(), secrets(), Some(&secret.namespace));
    let object = match api.get_opt(&secret.name).await {
        Ok(Some(object)) => object,
        Ok(None) => return Err(SecretProblem::NotFound),
        Err(error) if error.is_forbidden() => {
            let said = error
                .api()
                .map_or_else(|| error.to_string(), |api| api.message.clone());
            return Err(SecretProblem::Forbidden(said));
        }
        Err(error) => return Err(SecretProblem::Unreadable(error.to_string())),
    };
    url_in(&object, &secret.key)
}

/// The URL in `key` of a Secret's `data` (base64, as the API serves it).
fn url_in(secret: &serde_json::Value, key: &str) -> Result<WebhookUrl, SecretProblem> {
    let encoded = secret["data"][key]
        .as_str()
        .ok_or(SecretProblem::KeyMissing)?;
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(encoded)
        .map_err(|_| SecretProblem::InvalidUrl("its value is not base64".to_owned()))?;
    let text = String::from_utf8(bytes)
        .map_err(|_| SecretProblem::InvalidUrl("its value is not UTF-8 text".to_owned()))?;
    WebhookUrl::parse(&text).map_err(|e| SecretProblem::InvalidUrl(e.to_string()))
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn encoded(text: &str) -> String {
        base64::engine::general_purpose::STANDARD.encode(text)
    }

    #[test]
    fn the_url_is_read_from_the_key_and_every_problem_named() {
        let secret = json!({"data": {"url": encoded("https://hooks.slack.com/services/T/B/X\n"),
            "bad": encoded("ftp://example.com"), "garbled": "!!"}});
        assert_eq!(
            url_in(&secret, "url").map(|u| u.to_string()),
            Ok("https://hooks.slack.com/…".to_owned())
        );
        assert_eq!(url_in(&secret, "other"), Err(SecretProblem::KeyMissing));
        assert!(matches!(
            url_in(&secret, "bad"),
            Err(SecretProblem::InvalidUrl(_))
        ));
        assert!(matches!(
            url_in(&secret, "garbled"),
            Err(SecretProblem::InvalidUrl(_))
        ));
        let reference = WebhookSecret {
            namespace: "ci".into(),
            name: "slack".into(),
            key: "url".into(),
        };
        let forbidden = SecretProblem::Forbidden("secrets \"slack\" is forbidden".into());
        assert_eq!(forbidden.reason(), "SecretForbidden");
        assert!(forbidden
            .describe(&reference)
            .contains("--clusterrole=kube-gc:retention-notification-secrets"));
        assert_eq!(
            SecretProblem::NotFound.describe(&reference),
            "Secret ci/slack does not exist"
        );
    }
}
