//! `volcano-jobs`: `batch.volcano.sh/v1alpha1` Jobs, as Volcano controller-manager's garbage
//! collector (`pkg/controllers/garbagecollector`) sees them, and as `controllers/ttl/volcano.rs`
//! does: finished when `status.state.phase` is `Completed`, `Failed` or `Terminated`, at
//! `status.state.lastTransitionTime`; TTL `spec.ttlSecondsAfterFinished`. `Aborted` is not
//! finished (an aborted Job can be resumed), nor are `Completing`, `Terminating`, `Aborting`.
//! `Terminated` (stopped by a policy or a user) counts as failed. Deleted `Foreground`, as
//! Volcano's collector (`processJob`) and `controllers/ttl` delete them.

use crate::retention::finish::{FinishKind, FinishRule, FinishTime, GroupBy, TtlField};
use kube_gc_api::PropagationPolicy;

use super::{path, strings, Preset, PresetResource};

/// `volcano-jobs`.
pub(super) fn volcano_jobs() -> Preset {
    Preset {
        name: "volcano-jobs",
        summary: "Volcano Jobs in phase Completed, Failed or Terminated",
        resources: vec![PresetResource {
            group: "batch.volcano.sh",
            version: "v1alpha1",
            resource: "jobs",
            kind: "Job",
        }],
        finish: FinishRule {
            kind: FinishKind::Field {
                path: path(["status", "state", "phase"]),
                succeeded: strings(&["Completed"]),
                failed: strings(&["Failed", "Terminated"]),
            },
            time: FinishTime::Field(path(["status", "state", "lastTransitionTime"])),
        },
        own_ttl: vec![TtlField::any(path(["spec", "ttlSecondsAfterFinished"]))],
        propagation: PropagationPolicy::Foreground,
        group_by: GroupBy::Owner,
        skip_controlled: false,
    }
}
