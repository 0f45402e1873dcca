//! Volcano Jobs (`batch.volcano.sh/v1alpha1`) as a [`TtlKind`]: Volcano controller-manager's
//! garbage collector.
//!
//! A Volcano Job has finished when `status.state.phase` is `Completed`, `Failed` or
//! `Terminated`; it finished at `status.state.lastTransitionTime`. `Aborted` is not finished (an
//! aborted Job can be resumed), nor are the transient `Completing`, `Terminating`, `Aborting`.

use crate::api::{VolcanoJob, VolcanoJobSpec, VolcanoJobStatus};
use crate::client::ResourceRef;

use super::kind::{Finished, TtlKind};

/// The Volcano Job kind.
#[derive(Debug, Clone, Copy, Default)]
pub struct VolcanoJobs;

impl TtlKind for VolcanoJobs {
    const KIND: &'static str = "VolcanoJob";
    const CONTROLLER: &'static str = "volcano-job-ttl";
    const QUEUE: &'static str = "volcano_jobs_to_delete";

    type Spec = VolcanoJobSpec;
    type Status = VolcanoJobStatus;

    fn resource() -> ResourceRef {
        ResourceRef::of::<VolcanoJob>()
    }

    fn ttl_seconds(spec: &VolcanoJobSpec) -> Option<i32> {
        spec.ttl_seconds_after_finished
    }

    fn finished(status: &VolcanoJobStatus) -> Finished {
        if !status.state.is_finished() {
            return Finished::No;
        }
        match status.state.last_transition_time {
            Some(time) => Finished::At(time.0),
            None => Finished::WithoutTime,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn status(json: &str) -> VolcanoJobStatus {
        serde_json::from_str(json).unwrap()
    }

    #[test]
    fn finished_phases_and_their_time() {
        let at = crate::api::Time::parse("2026-11-22T03:45:32Z").unwrap().0;
        for phase in ["Completed", "Failed", "Terminated"] {
            let s = status(&format!(
                r#"{{"state":{{"phase":"{phase}","lastTransitionTime":"2026-11-22T03:45:32Z"}}}}"#
            ));
            assert_eq!(VolcanoJobs::finished(&s), Finished::At(at), "{phase}");
        }
        for phase in ["Aborted", "Completing", "Terminating", "Running", "Pending"] {
            let s = status(&format!(
                r#"{{"state":{{"phase":"{phase}","lastTransitionTime":"2026-11-22T03:45:32Z"}}}}"#
            ));
            assert_eq!(VolcanoJobs::finished(&s), Finished::No, "{phase}");
        }
        let no_time = status(r#"{"state":{"phase":"Completed"}}"#);
        assert_eq!(VolcanoJobs::finished(&no_time), Finished::WithoutTime);
    }
}
