//! batch/v1 Jobs as a [`TtlKind`]: kube-controller-manager's `ttl-after-finished` controller.
//!
//! A Job has finished when it has a `Complete` or `Failed` condition with status `True`; it
//! finished at that condition's `lastTransitionTime`. `SuccessCriteriaMet` and `FailureTarget`
//! are not terminal by themselves: since v1.31 the Job controller adds them first and the
//! terminal condition only once every Pod has stopped, so a TTL must not start from them.

use crate::api::{JobCondition, JobSpec, JobStatus};
use crate::client::ResourceRef;

use super::kind::{Finished, TtlKind};

/// The batch/v1 Job kind.
#[derive(Debug, Clone, Copy, Default)]
pub struct BatchJob;

impl TtlKind for BatchJob {
    const KIND: &'static str = "Job";
    const CONTROLLER: &'static str = "ttl-after-finished";
    const QUEUE: &'static str = "ttl_jobs_to_delete";

    type Spec = JobSpec;
    type Status = JobStatus;

    fn resource() -> ResourceRef {
        ResourceRef::of::<crate::api::Job>()
    }

    fn ttl_seconds(spec: &JobSpec) -> Option<i32> {
        spec.ttl_seconds_after_finished
    }

    fn finished(status: &JobStatus) -> Finished {
        let terminal = status.conditions.iter().find(|c| {
            (c.type_ == JobCondition::COMPLETE || c.type_ == JobCondition::FAILED) && c.is_true()
        });
        match terminal {
            None => Finished::No,
            Some(condition) => match condition.last_transition_time {
                Some(time) => Finished::At(time.0),
                None => Finished::WithoutTime,
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn status(conditions: &str) -> JobStatus {
        serde_json::from_str(&format!(r#"{{"conditions":{conditions}}}"#)).unwrap()
    }

    #[test]
    fn only_a_true_terminal_condition_finishes_a_job() {
        for running in [
            r#"[]"#,
            r#"[{"type":"SuccessCriteriaMet","status":"True","lastTransitionTime":"2026-11-22T03:45:32Z"}]"#,
            r#"[{"type":"FailureTarget","status":"True","lastTransitionTime":"2026-11-22T03:45:32Z"}]"#,
            r#"[{"type":"Complete","status":"False","lastTransitionTime":"2026-11-22T03:45:32Z"}]"#,
        ] {
            assert_eq!(
                BatchJob::finished(&status(running)),
                Finished::No,
                "{running}"
            );
        }
        let failed = status(
            r#"[{"type":"FailureTarget","status":"True","lastTransitionTime":"2026-11-22T03:40:00Z"},
                {"type":"Failed","status":"True","lastTransitionTime":"2026-11-22T03:45:32Z"}]"#,
        );
        let at = crate::api::Time::parse("2026-11-22T03:45:32Z").unwrap().0;
        assert_eq!(BatchJob::finished(&failed), Finished::At(at));
    }

    #[test]
    fn a_terminal_condition_without_a_time_is_finished_without_time() {
        let odd = status(r#"[{"type":"Complete","status":"True"}]"#);
        assert_eq!(BatchJob::finished(&odd), Finished::WithoutTime);
    }
}
