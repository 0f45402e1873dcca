//! How a policy acts on what is due and where it reports it: its [`Mode`] (`spec.mode`, with
//! `spec.dryRun` as its older spelling) and its notification sink (`spec.notification`),
//! checked and compiled.
//!
//! Contract:
//! - `mode` is `Enforce` (the default) or `Audit`; `dryRun: true` means `Audit`, and together
//!   with `mode: Enforce` it is refused (which one did the author mean?), never guessed.
//! - A notification names the key of a Secret holding a webhook URL. A `RetentionPolicy` reads
//!   a Secret of its own namespace only — kube-gc must not read another tenant's Secret on a
//!   tenant's behalf — and a `ClusterRetentionPolicy` says which namespace.
//! - Pure: the Secret itself is read by the notifier (`kube_gc_manager::notify`), which reports what it
//!   finds on the policy's status.

use super::spec::{NotificationSpec, RetentionPolicySpec};
use super::FieldError;

/// The key a Secret reference reads when it names none.
pub const DEFAULT_SECRET_KEY: &str = "url";

/// What a policy does with an object that is due.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum Mode {
    /// Delete it.
    #[default]
    Enforce,
    /// Judge and report it exactly as `Enforce` would — status, Events, metrics,
    /// notifications — and delete nothing.
    Audit,
}

impl Mode {
    /// `Enforce` or `Audit`, as the spec and the status write it.
    pub fn as_str(self) -> &'static str {
        match self {
            Mode::Enforce => "Enforce",
            Mode::Audit => "Audit",
        }
    }

    /// Whether nothing is deleted.
    pub fn is_audit(self) -> bool {
        self == Mode::Audit
    }
}

impl std::fmt::Display for Mode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

impl Mode {
    /// The mode `spec` asks for; `None` if it is not valid.
    pub fn of_spec(spec: &RetentionPolicySpec) -> Option<Mode> {
        let mut errors = Vec::new();
        let asked = mode(spec, &mut errors);
        errors.is_empty().then_some(asked)
    }
}

/// The mode `spec` asks for.
pub(super) fn mode(spec: &RetentionPolicySpec, errors: &mut Vec<FieldError>) -> Mode {
    let asked = match spec.mode.as_deref() {
        None => None,
        Some("Enforce") => Some(Mode::Enforce),
        Some("Audit") => Some(Mode::Audit),
        Some(other) => {
            errors.push(FieldError::new(
                "spec.mode",
                format!("{other:?} is not one of Enforce, Audit"),
            ));
            // Whatever was meant, nothing is deleted: the policy is invalid anyway.
            return Mode::Audit;
        }
    };
    match (asked, spec.dry_run) {
        (Some(Mode::Enforce), true) => {
            errors.push(FieldError::new(
                "spec.dryRun",
                "true contradicts mode: Enforce; remove dryRun (mode: Audit is its new name)",
            ));
            Mode::Audit
        }
        (Some(mode), _) => mode,
        (None, true) => Mode::Audit,
        (None, false) => Mode::Enforce,
    }
}

/// The Secret key a policy's notifications go to, resolved to its namespace.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct WebhookSecret {
    /// The Secret's namespace.
    pub namespace: String,
    /// Its name.
    pub name: String,
    /// The key in its `data` holding the URL.
    pub key: String,
}

impl std::fmt::Display for WebhookSecret {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "Secret {}/{} key {:?}",
            self.namespace, self.name, self.key
        )
    }
}

/// The Secret a policy's notifications go to; `own_namespace` is a `RetentionPolicy`'s
/// namespace (`None` for a `ClusterRetentionPolicy`).
pub(super) fn notification(
    spec: Option<&NotificationSpec>,
    own_namespace: Option<&str>,
    errors: &mut Vec<FieldError>,
) -> Option<WebhookSecret> {
    let spec = spec?;
    const FIELD: &str = "spec.notification.webhookSecretRef";
    let Some(reference) = &spec.webhook_secret_ref else {
        errors.push(FieldError::new(
            FIELD,
            "required: the Secret key holding the webhook's URL",
        ));
        return None;
    };
    let before = errors.len();
    if reference.name.trim().is_empty() {
        errors.push(FieldError::new(
            format!("{FIELD}.name"),
            "must not be empty",
        ));
    }
    let key = reference.key.as_deref().unwrap_or(DEFAULT_SECRET_KEY);
    if key.trim().is_empty() {
        errors.push(FieldError::new(format!("{FIELD}.key"), "must not be empty"));
    }
    let namespace = match (own_namespace, reference.namespace.as_deref()) {
        (Some(own), None) => Some(own),
        (Some(own), Some(named)) if named == own => Some(own),
        (Some(own), Some(named)) => {
            errors.push(FieldError::new(
                format!("{FIELD}.namespace"),
                format!(
                    "a RetentionPolicy reads Secrets of its own namespace only ({own:?}, not {named:?})"
                ),
            ));
            None
        }
        (None, Some(named)) if !named.trim().is_empty() => Some(named),
        (None, _) => {
            errors.push(FieldError::new(
                format!("{FIELD}.namespace"),
                "required by a ClusterRetentionPolicy: the namespace of the Secret",
            ));
            None
        }
    };
    match (namespace, errors.len() == before) {
        (Some(namespace), true) => Some(WebhookSecret {
            namespace: namespace.to_owned(),
            name: reference.name.clone(),
            key: key.to_owned(),
        }),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::super::spec::SecretKeyRef;
    use super::*;

    fn spec(yaml: &str) -> RetentionPolicySpec {
        serde_saphyr::from_str(yaml).unwrap()
    }

    fn mode_of(yaml: &str) -> (Mode, Vec<String>) {
        let mut errors = Vec::new();
        let mode = mode(&spec(yaml), &mut errors);
        (mode, errors.iter().map(ToString::to_string).collect())
    }

    #[test]
    fn the_mode_defaults_to_enforce_and_dry_run_is_audit() {
        assert_eq!(mode_of("preset: pods"), (Mode::Enforce, vec![]));
        assert_eq!(
            mode_of("{preset: pods, mode: Audit}"),
            (Mode::Audit, vec![])
        );
        assert_eq!(
            mode_of("{preset: pods, dryRun: true}"),
            (Mode::Audit, vec![])
        );
        assert_eq!(
            mode_of("{preset: pods, mode: Audit, dryRun: true}"),
            (Mode::Audit, vec![])
        );
    }

    #[test]
    fn an_unknown_or_contradicted_mode_is_refused_and_deletes_nothing() {
        let (mode, errors) = mode_of("{preset: pods, mode: audit}");
        assert_eq!(mode, Mode::Audit);
        assert_eq!(
            errors,
            ["spec.mode: \"audit\" is not one of Enforce, Audit"]
        );
        let (mode, errors) = mode_of("{preset: pods, mode: Enforce, dryRun: true}");
        assert_eq!(mode, Mode::Audit);
        assert_eq!(
            errors,
            ["spec.dryRun: true contradicts mode: Enforce; remove dryRun (mode: Audit is its new name)"]
        );
    }

    fn secret(
        reference: Option<SecretKeyRef>,
        own: Option<&str>,
    ) -> (Option<WebhookSecret>, Vec<String>) {
        let mut errors = Vec::new();
        let spec = NotificationSpec {
            webhook_secret_ref: reference,
        };
        let found = notification(Some(&spec), own, &mut errors);
        (found, errors.iter().map(ToString::to_string).collect())
    }

    fn named(namespace: Option<&str>, name: &str, key: Option<&str>) -> Option<SecretKeyRef> {
        Some(SecretKeyRef {
            namespace: namespace.map(str::to_owned),
            name: name.to_owned(),
            key: key.map(str::to_owned),
        })
    }

    #[test]
    fn a_namespaced_policy_reads_its_own_namespaces_secret_only() {
        let (found, errors) = secret(named(None, "slack", None), Some("ci"));
        assert!(errors.is_empty(), "{errors:?}");
        let found = found.unwrap();
        assert_eq!(found.to_string(), "Secret ci/slack key \"url\"");
        let (found, _) = secret(named(Some("ci"), "slack", Some("hook")), Some("ci"));
        assert_eq!(found.map(|s| s.key), Some("hook".to_owned()));
        let (found, errors) = secret(named(Some("kube-system"), "slack", None), Some("ci"));
        assert_eq!(found, None);
        assert_eq!(
            errors,
            ["spec.notification.webhookSecretRef.namespace: a RetentionPolicy reads Secrets of its own namespace only (\"ci\", not \"kube-system\")"]
        );
    }

    #[test]
    fn a_cluster_policy_names_the_namespace_and_every_field_at_fault_is_named() {
        let (found, errors) = secret(named(Some("ops"), "slack", None), None);
        assert!(errors.is_empty() && found.is_some(), "{errors:?}");
        let (_, errors) = secret(named(None, "", Some("")), None);
        assert_eq!(
            errors,
            [
                "spec.notification.webhookSecretRef.name: must not be empty",
                "spec.notification.webhookSecretRef.key: must not be empty",
                "spec.notification.webhookSecretRef.namespace: required by a ClusterRetentionPolicy: the namespace of the Secret",
            ]
        );
        let (_, errors) = secret(None, None);
        assert_eq!(
            errors,
            ["spec.notification.webhookSecretRef: required: the Secret key holding the webhook's URL"]
        );
    }
}
