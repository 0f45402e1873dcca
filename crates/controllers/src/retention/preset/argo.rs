//! `argo-workflows`: `argoproj.io/v1alpha1` Workflows, as Argo's workflow garbage collector
//! (`workflow/gccontroller/gc_controller.go`) sees them.
//!
//! - Finished: `status.phase` `Succeeded`, `Failed` or `Error` (`WorkflowPhase.Completed()`),
//!   and not waiting to be archived: Argo's `common.IsDone` holds a Workflow back while its
//!   label `workflows.argoproj.io/workflow-archiving-status` is `Pending`, so the workflow
//!   archive is not robbed of it. That needs two fields, hence CEL. `Failed` and `Error` fail.
//! - Time: `status.finishedAt`, which the gc controller adds the TTL to.
//! - Own TTL: `spec.ttlStrategy`, in the order of the gc controller's `ttl()`:
//!   `secondsAfterFailure` (phase `Failed` only), `secondsAfterError` (phase `Error` only),
//!   `secondsAfterSuccess`, then `secondsAfterCompletion` for any finished Workflow. Only the
//!   Workflow's own `spec` is read: a strategy inherited from a WorkflowTemplate
//!   (`status.storedWorkflowTemplateSpec`) or the controller's `workflowDefaults` is not.
//! - Deleted in the background, Argo's default (`WF_DEL_PROPAGATION_POLICY` unset).

use crate::retention::finish::{FinishKind, FinishRule, FinishTime, GroupBy, Outcome, TtlField};
use kube_gc_api::PropagationPolicy;

use super::{cel, path, Preset, PresetResource};

/// Finished, and not pending archiving. `has()` guards keep objects without labels or a
/// phase from being CEL errors.
const FINISHED: &str = "has(object.status) && has(object.status.phase) \
    && object.status.phase in ['Succeeded', 'Failed', 'Error'] \
    && !(has(object.metadata.labels) \
         && 'workflows.argoproj.io/workflow-archiving-status' in object.metadata.labels \
         && object.metadata.labels['workflows.argoproj.io/workflow-archiving-status'] == 'Pending')";

/// Only evaluated once [`FINISHED`] is true, so the phase is there.
const FAILED: &str = "object.status.phase != 'Succeeded'";

/// `argo-workflows`.
pub(super) fn workflows() -> Preset {
    let strategy = |key: &str| path(["spec", "ttlStrategy", key]);
    let phase = || path(["status", "phase"]);
    Preset {
        name: "argo-workflows",
        summary: "Argo Workflows in phase Succeeded, Failed or Error, once archived if archiving",
        resources: vec![PresetResource {
            group: "argoproj.io",
            version: "v1alpha1",
            resource: "workflows",
            kind: "Workflow",
        }],
        finish: FinishRule {
            kind: FinishKind::Cel {
                finished: cel(FINISHED),
                failed: Some(cel(FAILED)),
            },
            time: FinishTime::Field(path(["status", "finishedAt"])),
        },
        own_ttl: vec![
            TtlField::on(Outcome::Failed, strategy("secondsAfterFailure")).when(phase(), "Failed"),
            TtlField::on(Outcome::Failed, strategy("secondsAfterError")).when(phase(), "Error"),
            TtlField::on(Outcome::Succeeded, strategy("secondsAfterSuccess")),
            TtlField::any(strategy("secondsAfterCompletion")),
        ],
        propagation: PropagationPolicy::Background,
        group_by: GroupBy::Owner,
        skip_controlled: false,
    }
}
