//! batch/v1 [`Job`], reduced to what TTL-after-finished needs.
//!
//! Contract: a read-only projection. Only `spec.ttlSecondsAfterFinished` and the status fields
//! that say whether and when the Job finished are kept; the pod template and everything else is
//! skipped while decoding (that is most of a Job's bytes). Never send a decoded `Job` back in a
//! PUT: it would drop the fields not kept. Condition `type` and `status` stay strings, and may
//! even be missing, because a v1.28 server does not validate Job status: one odd Job must not
//! make a whole list undecodable.

use serde::{Deserialize, Serialize};

use super::defaults::{is_default, null_as_default};
use super::meta::{ObjectMeta, TypeMeta};
use super::resource::{HasMetadata, Resource};
use super::time::Time;

/// A batch/v1 Job.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Job {
    /// `batch/v1` + `Job` (absent on list items).
    #[serde(flatten)]
    pub types: TypeMeta,
    /// Standard metadata.
    #[serde(default)]
    pub metadata: ObjectMeta,
    /// The kept part of the spec.
    #[serde(
        default,
        deserialize_with = "null_as_default",
        skip_serializing_if = "is_default"
    )]
    pub spec: JobSpec,
    /// The kept part of the status.
    #[serde(
        default,
        deserialize_with = "null_as_default",
        skip_serializing_if = "is_default"
    )]
    pub status: JobStatus,
}

/// The part of `JobSpec` a garbage collector reads.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct JobSpec {
    /// Seconds after the Job finishes before it may be deleted; `None` means never.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ttl_seconds_after_finished: Option<i32>,
}

/// The part of `JobStatus` a garbage collector reads.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct JobStatus {
    /// The Job's conditions, e.g. `Complete`, `Failed`, `SuccessCriteriaMet`.
    #[serde(
        default,
        deserialize_with = "null_as_default",
        skip_serializing_if = "Vec::is_empty"
    )]
    pub conditions: Vec<JobCondition>,
    /// When the Job controller started the Job.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub start_time: Option<Time>,
    /// When the Job completed successfully.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub completion_time: Option<Time>,
}

/// One entry of `status.conditions`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct JobCondition {
    /// The condition type, e.g. [`JobCondition::COMPLETE`].
    #[serde(rename = "type", default)]
    pub type_: String,
    /// `True`, `False` or `Unknown`.
    #[serde(default)]
    pub status: String,
    /// When `status` last changed; for a terminal condition, when the Job finished.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_transition_time: Option<Time>,
}

impl JobCondition {
    /// The Job completed successfully (terminal).
    pub const COMPLETE: &'static str = "Complete";
    /// The Job failed (terminal).
    pub const FAILED: &'static str = "Failed";

    /// `status: "True"`.
    pub fn is_true(&self) -> bool {
        self.status == "True"
    }
}

impl Job {
    /// The condition that makes the Job finished: the first `Complete` or `Failed` condition
    /// whose status is `True`. Other conditions (`SuccessCriteriaMet`, `FailureTarget`) are
    /// not terminal.
    pub fn finished_condition(&self) -> Option<&JobCondition> {
        self.status.conditions.iter().find(|c| {
            (c.type_ == JobCondition::COMPLETE || c.type_ == JobCondition::FAILED) && c.is_true()
        })
    }
}

impl HasMetadata for Job {
    fn metadata(&self) -> &ObjectMeta {
        &self.metadata
    }
    fn metadata_mut(&mut self) -> &mut ObjectMeta {
        &mut self.metadata
    }
}

impl Resource for Job {
    const GROUP: &'static str = "batch";
    const VERSION: &'static str = "v1";
    const API_VERSION: &'static str = "batch/v1";
    const KIND: &'static str = "Job";
    const PLURAL: &'static str = "jobs";
    const NAMESPACED: bool = true;
}

#[cfg(test)]
mod tests {
    use super::*;

    fn job_with_conditions(conditions: &str) -> Job {
        serde_json::from_str(&format!(r#"{{"status":{{"conditions":{conditions}}}}}"#)).unwrap()
    }

    #[test]
    fn only_true_complete_or_failed_is_finished() {
        let running = job_with_conditions(r#"[{"type":"SuccessCriteriaMet","status":"True"}]"#);
        assert_eq!(running.finished_condition(), None);
        let not_yet = job_with_conditions(r#"[{"type":"Failed","status":"False"}]"#);
        assert_eq!(not_yet.finished_condition(), None);
        let failed = job_with_conditions(
            r#"[{"type":"FailureTarget","status":"True"},{"type":"Failed","status":"True","lastTransitionTime":"2026-11-22T03:45:32Z"}]"#,
        );
        let cond = failed.finished_condition().map(|c| c.type_.as_str());
        assert_eq!(cond, Some("Failed"));
    }

    #[test]
    fn an_unvalidated_condition_still_decodes() {
        let odd = job_with_conditions(
            r#"[{"type":"Complete"},{"status":"True"},{"type":"Failed","status":"Maybe"}]"#,
        );
        assert_eq!(odd.status.conditions.len(), 3);
        assert_eq!(odd.finished_condition(), None);
    }

    #[test]
    fn empty_or_null_spec_and_status_decode() {
        let job: Job =
            serde_json::from_str(r#"{"metadata":{"name":"a"},"spec":null,"status":{}}"#).unwrap();
        assert_eq!(job.spec.ttl_seconds_after_finished, None);
        assert!(job.status.conditions.is_empty());
    }
}
