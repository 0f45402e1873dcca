//! Volcano's `batch.volcano.sh/v1alpha1` [`VolcanoJob`] custom resource, reduced to what
//! TTL-after-finished needs.
//!
//! Contract: a read-only projection, like [`Job`](super::Job): only `spec.ttlSecondsAfterFinished`
//! and `status.state` are kept; never send a decoded `VolcanoJob` back in a PUT. The phase stays
//! a string, since a custom resource's status is whatever its writer put there.

use serde::{Deserialize, Serialize};

use super::defaults::{is_default, null_as_default};
use super::meta::{ObjectMeta, TypeMeta};
use super::resource::{HasMetadata, Resource};
use super::time::Time;

/// A Volcano Job (`kind: Job` in group `batch.volcano.sh`).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct VolcanoJob {
    /// `batch.volcano.sh/v1alpha1` + `Job` (absent on list items).
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
    pub spec: VolcanoJobSpec,
    /// The kept part of the status.
    #[serde(
        default,
        deserialize_with = "null_as_default",
        skip_serializing_if = "is_default"
    )]
    pub status: VolcanoJobStatus,
}

/// The part of a Volcano `JobSpec` a garbage collector reads.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct VolcanoJobSpec {
    /// Seconds after the Job finishes before it may be deleted; `None` means never.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ttl_seconds_after_finished: Option<i32>,
}

/// The part of a Volcano `JobStatus` a garbage collector reads.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct VolcanoJobStatus {
    /// The Job's current state.
    #[serde(
        default,
        deserialize_with = "null_as_default",
        skip_serializing_if = "is_default"
    )]
    pub state: JobState,
}

/// A Volcano Job's `status.state`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct JobState {
    /// e.g. `Running`, [`JobState::COMPLETED`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub phase: Option<String>,
    /// Why the Job is in this phase.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// Human-readable detail.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
    /// When the phase last changed; for a finished phase, when the Job finished.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_transition_time: Option<Time>,
}

impl JobState {
    /// Finished successfully.
    pub const COMPLETED: &'static str = "Completed";
    /// Finished unsuccessfully.
    pub const FAILED: &'static str = "Failed";
    /// Finished because it was terminated.
    pub const TERMINATED: &'static str = "Terminated";

    /// Whether the phase is a finished one (`Completed`, `Failed`, `Terminated`). `Aborted` is
    /// not: an aborted Volcano Job can be resumed.
    pub fn is_finished(&self) -> bool {
        matches!(
            self.phase.as_deref(),
            Some(Self::COMPLETED | Self::FAILED | Self::TERMINATED)
        )
    }
}

impl HasMetadata for VolcanoJob {
    fn metadata(&self) -> &ObjectMeta {
        &self.metadata
    }
    fn metadata_mut(&mut self) -> &mut ObjectMeta {
        &mut self.metadata
    }
}

impl Resource for VolcanoJob {
    const GROUP: &'static str = "batch.volcano.sh";
    const VERSION: &'static str = "v1alpha1";
    const API_VERSION: &'static str = "batch.volcano.sh/v1alpha1";
    const KIND: &'static str = "Job";
    const PLURAL: &'static str = "jobs";
    const NAMESPACED: bool = true;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finished_phases() {
        for (phase, finished) in [
            ("Completed", true),
            ("Failed", true),
            ("Terminated", true),
            ("Aborted", false),
            ("Running", false),
            ("Completing", false),
        ] {
            let state = JobState {
                phase: Some(phase.into()),
                ..Default::default()
            };
            assert_eq!(state.is_finished(), finished, "{phase}");
        }
        assert!(!JobState::default().is_finished());
    }
}
