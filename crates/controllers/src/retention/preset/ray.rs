//! `ray-jobs`: KubeRay's `ray.io/v1` RayJobs (`ray-operator/apis/ray/v1/rayjob_types.go`).
//!
//! - Finished when `status.jobDeploymentStatus` is `Complete` or `Failed`
//!   (`IsJobDeploymentTerminal`): KubeRay moves a RayJob there once the Ray job reaches a
//!   terminal `jobStatus` (`SUCCEEDED`, `FAILED`, `STOPPED`), or on its own failures
//!   (submission, deadline, validation) whatever `jobStatus` says, so `jobStatus` alone is not
//!   enough. `Failed` fails; `Complete` succeeds, including a user's `STOPPED`.
//! - A RayJob with `spec.schedule` never finishes: KubeRay re-runs it on its cron schedule
//!   (`Complete` goes back to `Scheduled`), so deleting it would delete the schedule. Two
//!   fields, hence CEL.
//! - Time: `status.endTime`, set when the deployment status turns terminal.
//! - No own TTL: `spec.ttlSecondsAfterFinished` is documented as "the TTL to clean up
//!   RayCluster" (only with `shutdownAfterJobFinishes`); it is not a TTL for the RayJob, and
//!   reading it as one would delete RayJobs after a cluster's (often seconds-long) TTL.

use crate::retention::finish::{FinishKind, FinishRule, FinishTime, GroupBy};
use kube_gc_api::PropagationPolicy;

use super::{cel, path, Preset, PresetResource};

/// Terminal, and not scheduled.
const FINISHED: &str = "has(object.status) && has(object.status.jobDeploymentStatus) \
    && object.status.jobDeploymentStatus in ['Complete', 'Failed'] \
    && !(has(object.spec) && has(object.spec.schedule) && object.spec.schedule != '')";

/// Only evaluated once [`FINISHED`] is true.
const FAILED: &str = "object.status.jobDeploymentStatus == 'Failed'";

/// `ray-jobs`.
pub(super) fn jobs() -> Preset {
    Preset {
        name: "ray-jobs",
        summary:
            "KubeRay RayJobs whose deployment status is Complete or Failed (not scheduled ones)",
        resources: vec![PresetResource {
            group: "ray.io",
            version: "v1",
            resource: "rayjobs",
            kind: "RayJob",
        }],
        finish: FinishRule {
            kind: FinishKind::Cel {
                finished: cel(FINISHED),
                failed: Some(cel(FAILED)),
            },
            time: FinishTime::Field(path(["status", "endTime"])),
        },
        own_ttl: Vec::new(),
        propagation: PropagationPolicy::Background,
        group_by: GroupBy::Owner,
        skip_controlled: false,
    }
}
