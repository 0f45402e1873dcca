//! [`DeleteOptions`]: the body of a DELETE request.
//!
//! Contract: every field is optional and omitted when unset, so `DeleteOptions::default()`
//! serializes to `{}` and the server applies the resource's default policy (for batch/v1 Jobs
//! that default is to orphan the Pods, exchange 32 — which is why a garbage collector always
//! states a policy). The builders produce exactly the bodies of exchanges 25, 29 and 30.

use serde::{Deserialize, Serialize};

/// How the dependents of a deleted object are treated.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum PropagationPolicy {
    /// Dependents are kept and their owner references to this object removed.
    Orphan,
    /// The object is removed at once; the garbage collector deletes dependents afterwards.
    Background,
    /// The object stays (with the `foregroundDeletion` finalizer) until every dependent with
    /// `blockOwnerDeletion: true` is gone.
    Foreground,
}

/// Conditions the server checks before deleting; on mismatch it answers 409 Conflict.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Preconditions {
    /// Delete only the object with this UID (not a newer one with the same name).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub uid: Option<String>,
    /// Delete only if the object is still at this resourceVersion.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resource_version: Option<String>,
}

/// `metav1.DeleteOptions`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct DeleteOptions {
    /// Seconds before the object is deleted; `0` means immediately.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub grace_period_seconds: Option<i64>,
    /// Checks the server makes before deleting.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub preconditions: Option<Preconditions>,
    /// What happens to dependents.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub propagation_policy: Option<PropagationPolicy>,
    /// `["All"]` to validate the deletion without persisting it.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub dry_run: Vec<String>,
}

impl DeleteOptions {
    /// Options with the given propagation policy and nothing else.
    pub fn with_policy(policy: PropagationPolicy) -> Self {
        DeleteOptions {
            propagation_policy: Some(policy),
            ..Default::default()
        }
    }

    /// `{"propagationPolicy":"Foreground"}`.
    pub fn foreground() -> Self {
        Self::with_policy(PropagationPolicy::Foreground)
    }

    /// `{"propagationPolicy":"Background"}`.
    pub fn background() -> Self {
        Self::with_policy(PropagationPolicy::Background)
    }

    /// `{"propagationPolicy":"Orphan"}`.
    pub fn orphan() -> Self {
        Self::with_policy(PropagationPolicy::Orphan)
    }

    /// Adds a UID precondition, so a re-created object with the same name is never deleted.
    pub fn with_uid(mut self, uid: impl Into<String>) -> Self {
        self.preconditions
            .get_or_insert_with(Preconditions::default)
            .uid = Some(uid.into());
        self
    }

    /// Adds a resourceVersion precondition, so an object changed since it was read is not
    /// deleted.
    pub fn with_resource_version(mut self, resource_version: impl Into<String>) -> Self {
        self.preconditions
            .get_or_insert_with(Preconditions::default)
            .resource_version = Some(resource_version.into());
        self
    }

    /// Asks the server to validate without deleting (`dryRun: ["All"]`).
    pub fn dry_run(mut self) -> Self {
        self.dry_run = vec!["All".to_owned()];
        self
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn default_is_an_empty_body() {
        assert_eq!(
            serde_json::to_string(&DeleteOptions::default()).ok(),
            Some("{}".into())
        );
    }

    #[test]
    fn builders_produce_the_ttl_controller_body() {
        let body = serde_json::to_string(&DeleteOptions::foreground().with_uid("u1")).ok();
        assert_eq!(
            body,
            Some(r#"{"preconditions":{"uid":"u1"},"propagationPolicy":"Foreground"}"#.into())
        );
    }

    #[test]
    fn all_fields_use_their_wire_names() {
        let opts = DeleteOptions {
            grace_period_seconds: Some(0),
            ..DeleteOptions::orphan()
                .with_uid("u")
                .with_resource_version("7")
                .dry_run()
        };
        let json = serde_json::to_value(&opts).unwrap();
        assert_eq!(
            json,
            serde_json::json!({
                "gracePeriodSeconds": 0,
                "preconditions": {"uid": "u", "resourceVersion": "7"},
                "propagationPolicy": "Orphan",
                "dryRun": ["All"],
            })
        );
        let back: DeleteOptions = serde_json::from_value(json).unwrap();
        assert_eq!(back, opts);
    }
}
