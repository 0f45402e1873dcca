//! `tekton-pipelineruns` and `tekton-taskruns`: `tekton.dev/v1` PipelineRuns and TaskRuns.
//!
//! Both carry Knative's single `Succeeded` condition (`apis.ConditionSucceeded`, used by
//! `pkg/apis/pipeline/v1`'s `PipelineRunStatus`/`TaskRunStatus`): `Unknown` while running,
//! `True` once succeeded, `False` once failed, cancelled or timed out. They finish at
//! `status.completionTime`, set by the reconcilers with the condition. Tekton has no TTL of
//! its own. History is grouped by the Pipeline or Task they ran, from the labels Tekton puts
//! on every run (`tekton.dev/pipeline`, `tekton.dev/task`). A TaskRun a PipelineRun created
//! (its controlling owner) is left to it, as the Tekton pruner does (`isPipelineRunOwned`):
//! deleting it for a Task's history limit would gut a PipelineRun that is being kept.

use crate::retention::finish::{FinishKind, FinishRule, FinishTime, GroupBy, Outcome};
use kube_gc_api::PropagationPolicy;

use super::{condition, path, Preset, PresetResource};

fn succeeded_condition() -> FinishRule {
    FinishRule {
        kind: FinishKind::Conditions(vec![
            condition("Succeeded", "True", Outcome::Succeeded),
            condition("Succeeded", "False", Outcome::Failed),
        ]),
        time: FinishTime::Field(path(["status", "completionTime"])),
    }
}

fn run(
    name: &'static str,
    summary: &'static str,
    resource: &'static str,
    kind: &'static str,
    label: &str,
    skip_controlled: bool,
) -> Preset {
    Preset {
        name,
        summary,
        resources: vec![PresetResource {
            group: "tekton.dev",
            version: "v1",
            resource,
            kind,
        }],
        finish: succeeded_condition(),
        own_ttl: Vec::new(),
        propagation: PropagationPolicy::Background,
        group_by: GroupBy::Label(label.to_owned()),
        skip_controlled,
    }
}

/// `tekton-pipelineruns`.
pub(super) fn pipeline_runs() -> Preset {
    run(
        "tekton-pipelineruns",
        "Tekton PipelineRuns whose Succeeded condition is True or False, grouped by Pipeline",
        "pipelineruns",
        "PipelineRun",
        "tekton.dev/pipeline",
        false,
    )
}

/// `tekton-taskruns`.
pub(super) fn task_runs() -> Preset {
    run(
        "tekton-taskruns",
        "Tekton TaskRuns whose Succeeded condition is True or False, grouped by Task",
        "taskruns",
        "TaskRun",
        "tekton.dev/task",
        true,
    )
}
