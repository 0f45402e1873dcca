//! Built-in kinds: `pods` (v1) and `batch-jobs` (batch/v1).
//!
//! - Jobs: kube-controller-manager's `ttl-after-finished` controller
//!   (`pkg/controller/ttlafterfinished`): finished when a `Complete` or `Failed` condition is
//!   `True`, at that condition's `lastTransitionTime`; TTL `spec.ttlSecondsAfterFinished`;
//!   deleted with `Foreground` propagation so the Job goes only after its Pods. Agrees with
//!   `controllers/ttl/job.rs` (`SuccessCriteriaMet` and `FailureTarget` are not terminal).
//! - Pods: `status.phase` `Succeeded` or `Failed` (the two terminal phases of `PodPhase` in
//!   `k8s.io/api/core/v1`); finished when the last container stopped (see `finish/time.rs`).
//!   Pods with a controller are left to it (a Job's Pods go with the Job), and Pods have no
//!   TTL field of their own.

use crate::retention::finish::{FinishKind, FinishRule, FinishTime, GroupBy, Outcome, TtlField};
use kube_gc_api::PropagationPolicy;

use super::{condition, path, strings, Preset, PresetResource};

/// `pods`.
pub(super) fn pods() -> Preset {
    Preset {
        name: "pods",
        summary: "Pods in phase Succeeded or Failed, finished when their last container stopped; \
                  Pods with a controller are left to it",
        resources: vec![PresetResource {
            group: "",
            version: "v1",
            resource: "pods",
            kind: "Pod",
        }],
        finish: FinishRule {
            kind: FinishKind::Field {
                path: path(["status", "phase"]),
                succeeded: strings(&["Succeeded"]),
                failed: strings(&["Failed"]),
            },
            time: FinishTime::ContainersTerminated,
        },
        own_ttl: Vec::new(),
        propagation: PropagationPolicy::Background,
        group_by: GroupBy::Owner,
        skip_controlled: true,
    }
}

/// `batch-jobs`.
pub(super) fn batch_jobs() -> Preset {
    Preset {
        name: "batch-jobs",
        summary: "batch/v1 Jobs with a Complete or Failed condition, as kube-controller-manager's \
                  TTL-after-finished controller sees them",
        resources: vec![PresetResource {
            group: "batch",
            version: "v1",
            resource: "jobs",
            kind: "Job",
        }],
        finish: FinishRule {
            kind: FinishKind::Conditions(vec![
                condition("Complete", "True", Outcome::Succeeded),
                condition("Failed", "True", Outcome::Failed),
            ]),
            time: FinishTime::MatchedCondition,
        },
        own_ttl: vec![TtlField::any(path(["spec", "ttlSecondsAfterFinished"]))],
        propagation: PropagationPolicy::Foreground,
        group_by: GroupBy::Owner,
        skip_controlled: false,
    }
}
