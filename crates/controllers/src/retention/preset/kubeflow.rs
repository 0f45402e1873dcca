//! `kubeflow-training`: the Kubeflow Training Operator's `kubeflow.org/v1` jobs (PyTorchJob,
//! TFJob, MPIJob, XGBoostJob, PaddleJob), which share `JobStatus` and `RunPolicy`
//! (`pkg/apis/kubeflow.org/v1/common_types.go`).
//!
//! Finished when a `Succeeded` or `Failed` condition is `True` (`IsFinished` in
//! `pkg/util/status.go`), at `status.completionTime`: the operator's own cleanup
//! (`CleanupJob` in `pkg/controller.v1/common/job.go`) counts the TTL from it, and refuses to
//! guess when it is missing. Own TTL `spec.runPolicy.ttlSecondsAfterFinished`. The operator
//! deletes with no propagation policy, i.e. the apiserver's background default for CRs.

use crate::retention::finish::{FinishKind, FinishRule, FinishTime, GroupBy, Outcome, TtlField};
use kube_gc_api::PropagationPolicy;

use super::{condition, path, Preset, PresetResource};

/// The kinds and their plurals.
const KINDS: [(&str, &str); 5] = [
    ("pytorchjobs", "PyTorchJob"),
    ("tfjobs", "TFJob"),
    ("mpijobs", "MPIJob"),
    ("xgboostjobs", "XGBoostJob"),
    ("paddlejobs", "PaddleJob"),
];

/// `kubeflow-training`.
pub(super) fn training() -> Preset {
    Preset {
        name: "kubeflow-training",
        summary: "Kubeflow training jobs (PyTorch, TF, MPI, XGBoost, Paddle) with a Succeeded or \
                  Failed condition",
        resources: KINDS
            .iter()
            .map(|&(resource, kind)| PresetResource {
                group: "kubeflow.org",
                version: "v1",
                resource,
                kind,
            })
            .collect(),
        finish: FinishRule {
            kind: FinishKind::Conditions(vec![
                condition("Succeeded", "True", Outcome::Succeeded),
                condition("Failed", "True", Outcome::Failed),
            ]),
            time: FinishTime::Field(path(["status", "completionTime"])),
        },
        own_ttl: vec![TtlField::any(path([
            "spec",
            "runPolicy",
            "ttlSecondsAfterFinished",
        ]))],
        propagation: PropagationPolicy::Background,
        group_by: GroupBy::Owner,
        skip_controlled: false,
    }
}
