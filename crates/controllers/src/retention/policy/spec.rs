//! The wire types of the two CRDs, group `kube-gc.io`, version `v1alpha1`:
//! `RetentionPolicy` (namespaced: applies in its own namespace) and `ClusterRetentionPolicy`
//! (cluster-scoped, with a `namespaceSelector`). Both share [`RetentionPolicySpec`] and
//! [`RetentionPolicyStatus`]; `deploy/crds/` holds their OpenAPI schemas, and
//! `docs/retention.md` explains every field.
//!
//! Contract: these types only carry what a user wrote. Whether it makes sense is decided by
//! [`compile`](super::compile), which names the field at fault; nothing here rejects a policy,
//! so that a malformed one still decodes and can be answered with `Ready=False`.

use serde::{Deserialize, Serialize};

use kube_gc_api::{HasMetadata, LabelSelector, ObjectMeta, Time};

/// The API group.
pub const GROUP: &str = "kube-gc.io";
/// The API version.
pub const VERSION: &str = "v1alpha1";
/// `RetentionPolicy`'s plural.
pub const NAMESPACED_PLURAL: &str = "retentionpolicies";
/// `ClusterRetentionPolicy`'s plural.
pub const CLUSTER_PLURAL: &str = "clusterretentionpolicies";

/// A `RetentionPolicy` or a `ClusterRetentionPolicy`, as read from the server.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RetentionPolicyObject {
    /// The object's metadata (a `RetentionPolicy` has a namespace, a cluster one none).
    #[serde(default)]
    pub metadata: ObjectMeta,
    /// What the user asked for.
    #[serde(default)]
    pub spec: RetentionPolicySpec,
    /// What kube-gc reports.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<RetentionPolicyStatus>,
}

impl HasMetadata for RetentionPolicyObject {
    fn metadata(&self) -> &ObjectMeta {
        &self.metadata
    }

    fn metadata_mut(&mut self) -> &mut ObjectMeta {
        &mut self.metadata
    }
}

/// What to clean up, when, and how many to keep.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RetentionPolicySpec {
    /// A preset by name (`pods`, `batch-jobs`, `argo-workflows`...): its resources, finish
    /// rule, own TTL fields and defaults. Exactly one of `preset` and `resource`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub preset: Option<String>,
    /// A resource to clean up with a rule of the policy's own (`finished`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resource: Option<ResourceSpec>,
    /// `ClusterRetentionPolicy` only: the namespaces it applies in (absent: all).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub namespace_selector: Option<LabelSelector>,
    /// The objects it applies to, by label (absent: all).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub selector: Option<LabelSelector>,
    /// A CEL predicate over `object`: only objects for which it is true.
    #[serde(default, rename = "match", skip_serializing_if = "Option::is_none")]
    pub match_expression: Option<String>,
    /// When an object has finished (required with `resource`; overrides a preset's rule).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub finished: Option<FinishedSpec>,
    /// Delete this long after the object finished.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ttl_seconds_after_finished: Option<i64>,
    /// Delete this long after the object was created, finished or not.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ttl_seconds_after_creation: Option<i64>,
    /// Keep at most this many successful objects per group (newest by finish time).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub successful_history_limit: Option<i64>,
    /// Keep at most this many failed objects per group.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub failed_history_limit: Option<i64>,
    /// How objects are grouped for the history limits: `owner` (the controlling owner), or
    /// `{label: <key>}` (the label's value).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub group_by: Option<GroupBySpec>,
    /// `Foreground`, `Background` or `Orphan` (default: the preset's, else `Background`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub propagation_policy: Option<String>,
    /// `Enforce` (absent: delete what is due) or `Audit` (judge and report everything as
    /// `Enforce` would, delete nothing).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mode: Option<String>,
    /// The older spelling of `mode: Audit`: decide, report and log; delete nothing.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub dry_run: bool,
    /// Also objects that have a controlling owner (the `pods` preset leaves them to their
    /// controller unless this is true).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub include_controlled: Option<bool>,
    /// Where this policy's deletions (and those to come) are sent, besides kube-gc's own
    /// `--notify-webhook-url`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub notification: Option<NotificationSpec>,
}

/// `{webhookSecretRef: {name: slack, key: url}}`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct NotificationSpec {
    /// The key of a Secret holding the webhook's URL (a Slack incoming webhook, or any
    /// receiver of JSON).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub webhook_secret_ref: Option<SecretKeyRef>,
}

/// A key of a Secret: `{name: slack, key: url}`, and for a `ClusterRetentionPolicy` the
/// Secret's `namespace`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SecretKeyRef {
    /// The Secret's namespace: required by a `ClusterRetentionPolicy`; a `RetentionPolicy`
    /// reads Secrets of its own namespace only.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub namespace: Option<String>,
    /// The Secret's name.
    #[serde(default)]
    pub name: String,
    /// The key in its `data` (absent: `url`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub key: Option<String>,
}

/// A resource by group, version and plural name (`{group: tekton.dev, version: v1, resource:
/// pipelineruns}`; the core group is `""`).
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ResourceSpec {
    /// The API group (`""` for core).
    #[serde(default)]
    pub group: String,
    /// The version.
    #[serde(default)]
    pub version: String,
    /// The plural resource name.
    #[serde(default)]
    pub resource: String,
}

/// A custom finish rule: exactly one of `conditions`, `field` and `cel`, plus where the finish
/// time is read from.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct FinishedSpec {
    /// Finished when any of these conditions is present with its status; the first that
    /// matches gives the outcome (and, by default, the finish time: its
    /// `lastTransitionTime`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub conditions: Vec<ConditionSpec>,
    /// Finished when a field has one of the listed values.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub field: Option<FieldSpec>,
    /// Finished when a CEL expression is true.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cel: Option<CelFinishedSpec>,
    /// Where the finish time is read from (required for `field` and `cel`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub finish_time: Option<FinishTimeSpec>,
}

/// `{type: Complete, status: "True", outcome: Succeeded}`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ConditionSpec {
    /// The condition's type.
    #[serde(rename = "type", default)]
    pub type_: String,
    /// The status that means finished (default `"True"`); `Unknown` never means finished.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<String>,
    /// `Succeeded` or `Failed` (default `Succeeded`): which history limit it counts against.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub outcome: Option<String>,
}

/// `{path: status.phase, succeeded: [Succeeded], failed: [Failed]}`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct FieldSpec {
    /// A dotted path into the object (`status.phase`).
    #[serde(default)]
    pub path: String,
    /// Values meaning it finished and succeeded.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub succeeded: Vec<String>,
    /// Values meaning it finished and failed.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub failed: Vec<String>,
}

/// `{finished: "<CEL>", failed: "<CEL>"}`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CelFinishedSpec {
    /// True when the object has finished.
    #[serde(default)]
    pub finished: String,
    /// True when a finished object failed (absent: every finished object succeeded).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub failed: Option<String>,
}

/// Where the finish time is read: exactly one of the three.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct FinishTimeSpec {
    /// A dotted path to an RFC 3339 time (`status.completionTime`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub field: Option<String>,
    /// The `lastTransitionTime` of the condition of this type.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub condition: Option<String>,
    /// A CEL expression giving a timestamp (or an RFC 3339 string).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cel: Option<String>,
}

/// `owner`, or `{label: tekton.dev/pipeline}`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum GroupBySpec {
    /// A keyword: `owner` is the only one.
    Keyword(String),
    /// The value of a label.
    Label {
        /// The label's key.
        label: String,
    },
}

/// What kube-gc reports on a policy.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RetentionPolicyStatus {
    /// The `metadata.generation` this status describes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observed_generation: Option<i64>,
    /// Objects it governs now.
    #[serde(default)]
    pub matched: u64,
    /// Of those, finished or expiring objects waiting for their time.
    #[serde(default)]
    pub waiting: u64,
    /// Of those, objects kept because their fate cannot be decided: finished without a finish
    /// time (or without a creation time) under a TTL counted from it, or with something that
    /// cannot be read (a malformed annotation, a CEL error). Each has a Warning Event saying
    /// why.
    #[serde(default)]
    pub unknown: u64,
    /// Objects deleted under it, counted across restarts of kube-gc.
    #[serde(default)]
    pub deleted: u64,
    /// The mode it runs in: `Enforce`, or `Audit` (`mode: Audit`, or `dryRun: true`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mode: Option<String>,
    /// `Audit` only: the objects it governs that are due now — their TTL ran out, or they are
    /// beyond a history limit — and that `Enforce` would have deleted.
    #[serde(default)]
    pub would_delete: u64,
    /// Deletions due within the next hour, those due now included (under `Audit`: the ones it
    /// would make).
    #[serde(default)]
    pub deletions_within_hour: u64,
    /// Deletions due within the next day, those due now included.
    #[serde(default)]
    pub deletions_within_day: u64,
    /// The next few deletions, earliest first (due now first).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub next_deletions: Vec<NextDeletion>,
    /// The next deletion it has scheduled.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub next_deletion_time: Option<Time>,
    /// `Ready` (the policy is valid and its resources are watched), and others.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub conditions: Vec<Condition>,
}

/// One deletion to come, as a policy's status lists it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct NextDeletion {
    /// The object's kind.
    pub kind: String,
    /// Its namespace (absent for a cluster-scoped object).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub namespace: Option<String>,
    /// Its name.
    pub name: String,
    /// When its TTL runs out (or ran out); absent for one beyond a history limit, which is
    /// due as soon as it is ranked there.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub deletes_at: Option<Time>,
    /// `ttl` or `history_limit`.
    pub reason: String,
}

/// `metav1.Condition`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Condition {
    /// `Ready`.
    #[serde(rename = "type")]
    pub type_: String,
    /// `True`, `False` or `Unknown`.
    pub status: String,
    /// The generation it was set for.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observed_generation: Option<i64>,
    /// When `status` last changed.
    pub last_transition_time: Time,
    /// A CamelCase reason.
    pub reason: String,
    /// What a human needs to know.
    #[serde(default)]
    pub message: String,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_issue_example_decodes() {
        let yaml = r#"
apiVersion: kube-gc.io/v1alpha1
kind: ClusterRetentionPolicy
metadata: {name: finished-pods}
spec:
  preset: pods
  namespaceSelector: {matchLabels: {team: data}}
  selector: {matchLabels: {app: etl}}
  match: "object.metadata.name.startsWith('etl-')"
  ttlSecondsAfterFinished: 3600
  successfulHistoryLimit: 3
  failedHistoryLimit: 1
  groupBy: owner
"#;
        let policy: RetentionPolicyObject = serde_saphyr::from_str(yaml).unwrap();
        let spec = &policy.spec;
        assert_eq!(spec.preset.as_deref(), Some("pods"));
        assert_eq!(spec.ttl_seconds_after_finished, Some(3600));
        assert_eq!(spec.group_by, Some(GroupBySpec::Keyword("owner".into())));
        assert_eq!(
            spec.match_expression.as_deref(),
            Some("object.metadata.name.startsWith('etl-')")
        );
        let by_label: GroupBySpec =
            serde_json::from_str(r#"{"label":"tekton.dev/pipeline"}"#).unwrap();
        assert_eq!(
            by_label,
            GroupBySpec::Label {
                label: "tekton.dev/pipeline".into()
            }
        );
    }
}
