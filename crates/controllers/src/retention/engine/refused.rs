//! What the API server refused kube-gc on one resource ([`Refusal`]), as one policy's status
//! reports it ([`Refused`]), and the RBAC rule that would grant it ([`rule_needed`]): the
//! vocabulary the plan's `Forbidden` state and the refusals' tracker (`refusal.rs`) share.

use crate::retention::policy::Target;

/// The verbs the retention controller needs on every resource a policy names (the rule
/// `deploy/controllers/retention/rbac.yaml` grants the presets' resources).
pub const VERBS_NEEDED: [&str; 4] = ["get", "list", "watch", "delete"];

/// What the server refused on one resource, in its own words (the 403 `Status` message).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Refusal {
    /// Its list or watch was refused.
    pub read: Option<String>,
    /// A delete was refused.
    pub delete: Option<String>,
}

/// One refused resource of a policy, as its status reports it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Refused {
    /// The resource.
    pub target: Target,
    /// What was refused.
    pub refusal: Refusal,
}

impl Refused {
    /// What the policy's `Ready` condition and its Event say: what kube-gc may not do, the
    /// server's words, and the rule to grant.
    pub fn describe(&self) -> String {
        let what = match (&self.refusal.read, &self.refusal.delete) {
            (Some(_), Some(_)) => "read or delete",
            (Some(_), None) => "read",
            (None, _) => "delete",
        };
        let said = [&self.refusal.read, &self.refusal.delete]
            .into_iter()
            .flatten()
            .map(String::as_str)
            .collect::<Vec<_>>()
            .join("; ");
        format!(
            "kube-gc may not {what} {} ({said}); grant its service account the RBAC rule {}",
            self.target,
            rule_needed(&self.target)
        )
    }
}

/// The RBAC rule the retention controller needs on `target`, as YAML flow text:
/// `{apiGroups: [""], resources: ["configmaps"], verbs: ["get", "list", "watch", "delete"]}`.
pub fn rule_needed(target: &Target) -> String {
    let verbs = VERBS_NEEDED
        .iter()
        .map(|v| format!("{v:?}"))
        .collect::<Vec<_>>()
        .join(", ");
    format!(
        "{{apiGroups: [{:?}], resources: [{:?}], verbs: [{verbs}]}}",
        target.group, target.resource
    )
}
