//! `spark-applications`: the Spark operator's `sparkoperator.k8s.io/v1beta2`
//! SparkApplications.
//!
//! Finished when `status.applicationState.state` is `COMPLETED` or `FAILED`: the operator's
//! `util.IsTerminated`, the only states in which it applies the TTL (`IsExpired`, from
//! `status.terminationTime` plus `spec.timeToLiveSeconds`). `SUBMISSION_FAILED`, `FAILING`,
//! `SUCCEEDING`, `INVALIDATING`, `PENDING_RERUN`, `UNKNOWN` and the suspend states are
//! transient: the reconciler moves each on to another state. A `FAILED` application with
//! retries left (`restartPolicy: OnFailure`) may still be re-run by the operator; a policy TTL
//! shorter than its retry interval would pre-empt that, as the operator's own TTL would.

use crate::retention::finish::{FinishKind, FinishRule, FinishTime, GroupBy, TtlField};
use kube_gc_api::PropagationPolicy;

use super::{path, strings, Preset, PresetResource};

/// `spark-applications`.
pub(super) fn applications() -> Preset {
    Preset {
        name: "spark-applications",
        summary: "SparkApplications in state COMPLETED or FAILED",
        resources: vec![PresetResource {
            group: "sparkoperator.k8s.io",
            version: "v1beta2",
            resource: "sparkapplications",
            kind: "SparkApplication",
        }],
        finish: FinishRule {
            kind: FinishKind::Field {
                path: path(["status", "applicationState", "state"]),
                succeeded: strings(&["COMPLETED"]),
                failed: strings(&["FAILED"]),
            },
            time: FinishTime::Field(path(["status", "terminationTime"])),
        },
        own_ttl: vec![TtlField::any(path(["spec", "timeToLiveSeconds"]))],
        propagation: PropagationPolicy::Background,
        group_by: GroupBy::Owner,
        skip_controlled: false,
    }
}
