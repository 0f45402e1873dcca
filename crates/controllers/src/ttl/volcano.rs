//! Volcano Jobs (`batch.volcano.sh/v1alpha1`) as a [`TtlKind`]: Volcano controller-manager's
//! garbage collector, judged by the `volcano-jobs` preset.
//!
//! A Volcano Job has finished when `status.state.phase` is `Completed`, `Failed` or
//! `Terminated`; it finished at `status.state.lastTransitionTime`. `Aborted` is not finished (an
//! aborted Job can be resumed), nor are the transient `Completing`, `Terminating`, `Aborting`.

use crate::retention::preset::{self, Preset};
use kube_gc_api::VolcanoJob;
use kube_gc_client::ResourceRef;

use super::kind::TtlKind;

/// The Volcano Job kind.
#[derive(Debug, Clone, Copy, Default)]
pub struct VolcanoJobs;

impl TtlKind for VolcanoJobs {
    const KIND: &'static str = "VolcanoJob";
    const CONTROLLER: &'static str = "volcano-job-ttl";
    const QUEUE: &'static str = "volcano_jobs_to_delete";
    const RULES: &'static str = "Volcano's garbagecollector controller (vc-controller-manager)";

    fn resource() -> ResourceRef {
        ResourceRef::of::<VolcanoJob>()
    }

    fn preset() -> Preset {
        preset::volcano_jobs()
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::ttl::state::tests::state_of;
    use crate::ttl::Finished;

    fn job(state: serde_json::Value) -> serde_json::Value {
        json!({"metadata": {"name": "v", "namespace": "n"},
               "spec": {"ttlSecondsAfterFinished": 5}, "status": {"state": state}})
    }

    #[test]
    fn finished_phases_and_their_time() {
        let at = kube_gc_api::Time::parse("2026-11-22T03:45:32Z").unwrap().0;
        for phase in ["Completed", "Failed", "Terminated"] {
            let object = job(json!({"phase": phase, "lastTransitionTime": "2026-11-22T03:45:32Z"}));
            let state = state_of::<VolcanoJobs>(&object);
            assert_eq!(state.finished, Finished::At(at), "{phase}");
        }
        for phase in ["Aborted", "Completing", "Terminating", "Running", "Pending"] {
            let object = job(json!({"phase": phase, "lastTransitionTime": "2026-11-22T03:45:32Z"}));
            let state = state_of::<VolcanoJobs>(&object);
            assert_eq!(state.finished, Finished::No, "{phase}");
        }
        let no_time = job(json!({"phase": "Completed"}));
        assert_eq!(
            state_of::<VolcanoJobs>(&no_time).finished,
            Finished::WithoutTime
        );
    }
}
