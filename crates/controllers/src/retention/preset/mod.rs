//! The presets: for each kind that finishes, its resources, finish rule, own TTL fields and
//! defaults, so that a policy can say `preset: argo-workflows` and nothing else.
//!
//! Contract:
//! - [`all`] and [`named`] build the presets afresh (they hold compiled CEL); [`NAMES`] lists
//!   them in the order `docs/retention.md` presents them.
//! - Each rule follows what the kind's own controller treats as finished, and each file cites
//!   the upstream code or types it was read from. A preset never finishes an object that its
//!   controller might still resume or re-run on its own (Volcano `Aborted`, a scheduled
//!   RayJob, an Argo Workflow waiting to be archived).
//! - `fixtures/retention/presets/<name>/` holds objects shaped as each assess's API objects,
//!   replayed against these rules by `tests/retention_presets.rs`.

mod argo;
mod kubeflow;
mod kubernetes;
mod ray;
mod spark;
mod tekton;
mod volcano;

use kube_gc_api::PropagationPolicy;

use super::cel::CelExpr;
use super::finish::{ConditionRule, FinishRule, GroupBy, Outcome, TtlField};
use super::path::FieldPath;

/// A resource a preset applies to.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct PresetResource {
    /// The API group (`""` for core).
    pub group: &'static str,
    /// The version.
    pub version: &'static str,
    /// The plural resource name.
    pub resource: &'static str,
    /// The kind.
    pub kind: &'static str,
}

/// A preset: everything a policy does not have to spell out.
#[derive(Clone, Debug, PartialEq)]
pub struct Preset {
    /// Its name, as `spec.preset` gives it.
    pub name: &'static str,
    /// One line, for `docs/retention.md`.
    pub summary: &'static str,
    /// The resources it applies to.
    pub resources: Vec<PresetResource>,
    /// When their objects have finished.
    pub finish: FinishRule,
    /// The kind's own TTL field(s), which override a policy's TTL for that object.
    pub own_ttl: Vec<TtlField>,
    /// How deletions propagate to dependents.
    pub propagation: PropagationPolicy,
    /// Default grouping for history limits.
    pub group_by: GroupBy,
    /// Leave objects with a controlling ownerReference to their controller (unless the policy
    /// sets `includeControlled`).
    pub skip_controlled: bool,
}

/// Every preset's name.
pub const NAMES: [&str; 9] = [
    "pods",
    "batch-jobs",
    "volcano-jobs",
    "argo-workflows",
    "tekton-pipelineruns",
    "tekton-taskruns",
    "kubeflow-training",
    "spark-applications",
    "ray-jobs",
];

/// Every preset, in [`NAMES`] order.
pub fn all() -> Vec<Preset> {
    vec![
        kubernetes::pods(),
        kubernetes::batch_jobs(),
        volcano::volcano_jobs(),
        argo::workflows(),
        tekton::pipeline_runs(),
        tekton::task_runs(),
        kubeflow::training(),
        spark::applications(),
        ray::jobs(),
    ]
}

/// `batch-jobs`: what kube-controller-manager's `ttl-after-finished` controller runs on.
pub fn batch_jobs() -> Preset {
    kubernetes::batch_jobs()
}

/// `volcano-jobs`: what Volcano's garbage collector (`volcano-job-ttl`) runs on.
pub fn volcano_jobs() -> Preset {
    volcano::volcano_jobs()
}

/// The preset called `name`.
pub fn named(name: &str) -> Option<Preset> {
    all().into_iter().find(|p| p.name == name)
}

/// A path from its keys.
fn path<const N: usize>(keys: [&str; N]) -> FieldPath {
    FieldPath::new(keys)
}

/// `type` with status `True` means `outcome`.
fn condition(type_: &str, status: &str, outcome: Outcome) -> ConditionRule {
    ConditionRule {
        type_: type_.to_owned(),
        status: status.to_owned(),
        outcome,
    }
}

/// A preset's own CEL. It is text in this crate, not user input, and the tests compile every
/// preset, so a mistake here fails them rather than a running collector.
fn cel(source: &'static str) -> CelExpr {
    match CelExpr::compile(source) {
        Ok(expr) => expr,
        Err(error) => panic!("preset CEL {source:?}: {error}"),
    }
}

/// Strings for a field rule's value lists.
fn strings(values: &[&str]) -> Vec<String> {
    values.iter().map(|v| (*v).to_owned()).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_and_presets_agree() {
        let presets = all();
        let names: Vec<&str> = presets.iter().map(|p| p.name).collect();
        assert_eq!(names, NAMES);
        for name in NAMES {
            assert_eq!(named(name).map(|p| p.name), Some(name));
        }
        assert_eq!(named("jobs"), None);
    }

    #[test]
    fn every_preset_has_resources_and_a_summary() {
        for preset in all() {
            // An assessment keeps the index of the own TTL field it read as a u8.
            assert!(
                preset.own_ttl.len() <= usize::from(u8::MAX),
                "{}",
                preset.name
            );
            assert!(!preset.resources.is_empty(), "{}", preset.name);
            assert!(!preset.summary.is_empty(), "{}", preset.name);
            for r in &preset.resources {
                assert!(!r.version.is_empty() && !r.resource.is_empty() && !r.kind.is_empty());
            }
        }
    }

    #[test]
    fn only_jobs_delete_in_the_foreground_and_only_pods_and_taskruns_skip_controlled() {
        // Jobs as their upstream TTL controllers delete them (kcm's and Volcano's); for the
        // rest, dependents go in the background, as the apiserver's default for them.
        for preset in all() {
            let foreground = preset.propagation == PropagationPolicy::Foreground;
            let jobs = ["batch-jobs", "volcano-jobs"].contains(&preset.name);
            assert_eq!(foreground, jobs, "{}", preset.name);
            assert_eq!(
                preset.skip_controlled,
                ["pods", "tekton-taskruns"].contains(&preset.name),
                "{}",
                preset.name
            );
        }
    }
}
