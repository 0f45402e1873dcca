//! batch/v1 Jobs as a [`TtlKind`]: kube-controller-manager's `ttl-after-finished` controller,
//! judged by the `batch-jobs` preset.
//!
//! A Job has finished when it has a `Complete` or `Failed` condition with status `True`; it
//! finished at that condition's `lastTransitionTime`. `SuccessCriteriaMet` and `FailureTarget`
//! are not terminal by themselves: since v1.31 the Job controller adds them first and the
//! terminal condition only once every Pod has stopped, so a TTL must not start from them.

use crate::retention::preset::{self, Preset};
use kube_gc_client::ResourceRef;

use super::kind::TtlKind;

/// The batch/v1 Job kind.
#[derive(Debug, Clone, Copy, Default)]
pub struct BatchJob;

impl TtlKind for BatchJob {
    const KIND: &'static str = "Job";
    const CONTROLLER: &'static str = "ttl-after-finished";
    const QUEUE: &'static str = "ttl_jobs_to_delete";
    const RULES: &'static str = "kube-controller-manager's ttl-after-finished controller";

    fn resource() -> ResourceRef {
        ResourceRef::of::<kube_gc_api::Job>()
    }

    fn preset() -> Preset {
        preset::batch_jobs()
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::ttl::state::tests::state_of;
    use crate::ttl::Finished;
    use crate::ttl::{judge_object, TtlState};
    use chrono::Utc;

    fn job(conditions: serde_json::Value) -> serde_json::Value {
        json!({"metadata": {"name": "j", "namespace": "n"},
               "spec": {"ttlSecondsAfterFinished": 5},
               "status": {"conditions": conditions}})
    }

    #[test]
    fn only_a_true_terminal_condition_finishes_a_job() {
        for running in [
            json!([]),
            json!([{"type":"SuccessCriteriaMet","status":"True","lastTransitionTime":"2026-11-22T03:45:32Z"}]),
            json!([{"type":"FailureTarget","status":"True","lastTransitionTime":"2026-11-22T03:45:32Z"}]),
            json!([{"type":"Complete","status":"False","lastTransitionTime":"2026-11-22T03:45:32Z"}]),
        ] {
            let state = state_of::<BatchJob>(&job(running.clone()));
            assert_eq!(state.finished, Finished::No, "{running}");
        }
        let failed = job(json!([
            {"type":"FailureTarget","status":"True","lastTransitionTime":"2026-11-22T03:40:00Z"},
            {"type":"Failed","status":"True","lastTransitionTime":"2026-11-22T03:45:32Z"}]));
        let at = kube_gc_api::Time::parse("2026-11-22T03:45:32Z").unwrap().0;
        assert_eq!(state_of::<BatchJob>(&failed).finished, Finished::At(at));
    }

    #[test]
    fn the_ttl_judgement_of_a_job_reads_only_what_protobuf_tables_describe() {
        use crate::retention::engine::assessing;
        use crate::ttl::state::rules;
        use kube_gc_client::protobuf::schema;
        let decoder = assessing(std::sync::Arc::new(rules::<BatchJob>()), chrono::Utc::now);
        let reads = decoder.reads().expect("the judgement says what it reads");
        assert!(
            kube_gc_client::negotiate::covers(&schema::JOB, &reads),
            "{reads:?}"
        );
        // And not the pod template, most of a Job's bytes.
        let spec = reads.member("spec").expect("spec");
        assert!(spec.member("template").is_none(), "{reads:?}");
    }

    #[test]
    fn a_terminal_condition_without_a_time_is_finished_without_time() {
        let odd = job(json!([{"type": "Complete", "status": "True"}]));
        assert_eq!(state_of::<BatchJob>(&odd).finished, Finished::WithoutTime);
    }

    #[test]
    fn a_job_is_read_as_the_controller_reads_it() {
        let json = serde_json::json!({"apiVersion":"batch/v1","kind":"Job",
            "metadata":{"name":"pi","namespace":"batch","uid":"u-1","resourceVersion":"42",
                "labels":{"a":"b"},"managedFields":[{"manager":"kube-controller-manager"}]},
            "spec":{"ttlSecondsAfterFinished":100,"template":{"spec":{"containers":[]}}},
            "status":{"conditions":[{"type":"Complete","status":"True",
                "lastTransitionTime":"2026-11-22T03:45:32Z"}]}});
        let at = kube_gc_api::Time::parse("2026-11-22T03:45:32Z").unwrap().0;
        assert_eq!(
            state_of::<BatchJob>(&json),
            TtlState {
                being_deleted: false,
                ttl_seconds: Some(100),
                finished: Finished::At(at)
            }
        );
        assert!(state_of::<BatchJob>(&json).needs_cleanup());
    }

    #[test]
    fn nulls_and_absences_read_as_nothing_to_clean_up() {
        let deleting = serde_json::json!({"metadata":{"name":"a","namespace":"n",
            "deletionTimestamp":"2026-11-22T03:45:32Z"}, "spec":null, "status":null});
        let state = state_of::<BatchJob>(&deleting);
        assert!(state.being_deleted);
        assert_eq!(state.ttl_seconds, None);
        assert!(!state.needs_cleanup());
        let bare = state_of::<BatchJob>(&serde_json::json!({}));
        assert_eq!(bare.finished, Finished::No);
    }

    #[test]
    fn the_kube_gc_annotations_are_not_read_by_a_ttl_controller() {
        // Upstream knows nothing of them: a Job without a TTL of its own has none.
        let annotated = serde_json::json!({"metadata":{"name":"a","namespace":"n",
            "annotations":{"kube-gc.io/ttl":"1s","kube-gc.io/expires-at":"2020-01-01T00:00:00Z"}},
            "status":{"conditions":[{"type":"Complete","status":"True",
                "lastTransitionTime":"2026-11-22T03:45:32Z"}]}});
        assert_eq!(state_of::<BatchJob>(&annotated).ttl_seconds, None);
    }

    #[test]
    fn a_ttl_that_is_not_a_number_is_a_problem_not_a_ttl() {
        let odd = serde_json::json!({"metadata":{"name":"a","namespace":"n"},
            "spec":{"ttlSecondsAfterFinished":"soon"}});
        let assessment = judge_object::<BatchJob>(&odd, Utc::now());
        let problem = TtlState::of(&assessment).expect_err("a problem");
        assert_eq!(problem.reason, "own_ttl");
    }
}
