//! `batch.v1` (`k8s.io.api.batch.v1`): Job.
//!
//! Field numbers: `staging/src/k8s.io/api/batch/v1/generated.proto`; pointer or value and
//! `omitempty`: the Go structs in `staging/src/k8s.io/api/batch/v1/types.go` (v1.28).
//! `JobSpec`'s optional fields are all pointers: a `ttlSecondsAfterFinished` of 0 is on the wire
//! and means "delete at once", while an absent one means "never".

use super::core::POD_TEMPLATE_SPEC;
use super::meta::{LABEL_SELECTOR, OBJECT_META};
use super::{Field, Kind, Message};

/// `batch.v1.Job`.
pub static JOB: Message = Message {
    name: "batch.v1.Job",
    fields: &[
        Field::message(1, "metadata", &OBJECT_META),
        Field::message(2, "spec", &JOB_SPEC),
        Field::message(3, "status", &JOB_STATUS),
    ],
};

/// `batch.v1.JobList`.
pub static JOB_LIST: Message = list_of!("batch.v1.JobList", &JOB);

/// `batch.v1.JobSpec`.
pub static JOB_SPEC: Message = Message {
    name: "batch.v1.JobSpec",
    fields: &[
        Field::int32(1, "parallelism").pointer(),
        Field::int32(2, "completions").pointer(),
        Field::int64(3, "activeDeadlineSeconds").pointer(),
        Field::message(11, "podFailurePolicy", &POD_FAILURE_POLICY).pointer(),
        Field::int32(7, "backoffLimit").pointer(),
        Field::int32(12, "backoffLimitPerIndex").pointer(),
        Field::int32(13, "maxFailedIndexes").pointer(),
        Field::message(4, "selector", &LABEL_SELECTOR).pointer(),
        Field::bool(5, "manualSelector").pointer(),
        Field::message(6, "template", &POD_TEMPLATE_SPEC),
        Field::int32(8, "ttlSecondsAfterFinished").pointer(),
        Field::string(9, "completionMode").pointer(),
        Field::bool(10, "suspend").pointer(),
        Field::string(14, "podReplacementPolicy").pointer(),
    ],
};

/// `batch.v1.JobStatus`.
pub static JOB_STATUS: Message = Message {
    name: "batch.v1.JobStatus",
    fields: &[
        Field::message(1, "conditions", &JOB_CONDITION).repeated(),
        Field::of(2, "startTime", Kind::Time).pointer(),
        Field::of(3, "completionTime", Kind::Time).pointer(),
        Field::int32(4, "active"),
        Field::int32(5, "succeeded"),
        Field::int32(6, "failed"),
        Field::int32(11, "terminating").pointer(),
        Field::string(7, "completedIndexes"),
        Field::string(10, "failedIndexes").pointer(),
        Field::message(8, "uncountedTerminatedPods", &UNCOUNTED_TERMINATED_PODS).pointer(),
        Field::int32(9, "ready").pointer(),
    ],
};

/// `batch.v1.JobCondition`.
pub static JOB_CONDITION: Message = Message {
    name: "batch.v1.JobCondition",
    fields: &[
        Field::string(1, "type").always(),
        Field::string(2, "status").always(),
        Field::of(3, "lastProbeTime", Kind::Time).always(),
        Field::of(4, "lastTransitionTime", Kind::Time).always(),
        Field::string(5, "reason"),
        Field::string(6, "message"),
    ],
};

/// `batch.v1.UncountedTerminatedPods`.
pub static UNCOUNTED_TERMINATED_PODS: Message = Message {
    name: "batch.v1.UncountedTerminatedPods",
    fields: &[
        Field::string(1, "succeeded").repeated(),
        Field::string(2, "failed").repeated(),
    ],
};

/// `batch.v1.PodFailurePolicy`.
pub static POD_FAILURE_POLICY: Message = Message {
    name: "batch.v1.PodFailurePolicy",
    fields: &[Field::message(1, "rules", &POD_FAILURE_POLICY_RULE).repeated()],
};

/// `batch.v1.PodFailurePolicyRule`.
pub static POD_FAILURE_POLICY_RULE: Message = Message {
    name: "batch.v1.PodFailurePolicyRule",
    fields: &[
        Field::string(1, "action").always(),
        Field::message(2, "onExitCodes", &ON_EXIT_CODES).pointer(),
        Field::message(3, "onPodConditions", &ON_POD_CONDITIONS).repeated(),
    ],
};

/// `batch.v1.PodFailurePolicyOnExitCodesRequirement`.
pub static ON_EXIT_CODES: Message = Message {
    name: "batch.v1.PodFailurePolicyOnExitCodesRequirement",
    fields: &[
        Field::string(1, "containerName").pointer(),
        Field::string(2, "operator").always(),
        Field::int32(3, "values").repeated(),
    ],
};

/// `batch.v1.PodFailurePolicyOnPodConditionsPattern`.
pub static ON_POD_CONDITIONS: Message = Message {
    name: "batch.v1.PodFailurePolicyOnPodConditionsPattern",
    fields: &[
        Field::string(1, "type").always(),
        Field::string(2, "status").always(),
    ],
};
