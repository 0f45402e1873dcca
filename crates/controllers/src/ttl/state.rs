//! [`TtlState`]: what a TTL controller's decision reads of an object — whether it is being
//! deleted, its own TTL, and whether and when it finished — read off the
//! [`Assessment`] the engine made of it under the controller's fixed policy.
//!
//! Contract: the engine caches assessments, never objects; this is a view of one, for the
//! places that word the TTL controllers' decision (`kube-gc explain`, `/debug/explain`,
//! progress). An assessment the engine could not make (a TTL field that is not an integer, a
//! condition of the wrong shape) is its [`Problem`], returned as it is.

use std::collections::BTreeMap;
use std::sync::Arc;

use chrono::{DateTime, Utc};

use crate::retention::assessment::{assess, Assessment, Problem, ResourcePolicies, Standing};
use crate::retention::ttl::Ttl;

use super::kind::{Finished, TtlKind};

/// What the TTL decision reads.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TtlState {
    /// `metadata.deletionTimestamp` is set: someone is already deleting it.
    pub being_deleted: bool,
    /// Its own `spec.ttlSecondsAfterFinished`.
    pub ttl_seconds: Option<i64>,
    /// Whether and when it finished.
    pub finished: Finished,
}

impl TtlState {
    /// The state an assessment made under a TTL controller's policy records.
    ///
    /// # Errors
    ///
    /// The assessment's [`Problem`], if the engine could not read the object.
    pub fn of(assessment: &Assessment) -> Result<TtlState, &Problem> {
        let governed = match &assessment.standing {
            Standing::Governed(governed) => governed,
            Standing::Problem(problem) => return Err(problem),
            // A controller's policy applies to every object of its kind; an ungoverned one
            // has nothing to say.
            Standing::Ungoverned => {
                return Ok(TtlState {
                    being_deleted: false,
                    ttl_seconds: None,
                    finished: Finished::No,
                })
            }
            // The final state of a deleted object: only its identity was read.
            Standing::Gone => {
                return Ok(TtlState {
                    being_deleted: true,
                    ttl_seconds: None,
                    finished: Finished::No,
                })
            }
        };
        let ttl_seconds = match governed.ttl {
            Ttl::After { length, .. } => Some(length.num_seconds()),
            Ttl::None | Ttl::At { .. } => None,
        };
        let finished = match governed.facts.finished {
            None => Finished::No,
            Some(done) => done.at.map_or(Finished::WithoutTime, Finished::At),
        };
        Ok(TtlState {
            being_deleted: governed.facts.being_deleted,
            ttl_seconds,
            finished,
        })
    }

    /// The handlers' filter (upstream's `needsCleanup` plus the deletion check): not being
    /// deleted, a TTL set, and finished.
    pub fn needs_cleanup(&self) -> bool {
        !self.being_deleted && self.ttl_seconds.is_some() && self.finished.is_finished()
    }
}

/// The rules a TTL controller of `K` judges with: its fixed policy alone.
pub fn rules<K: TtlKind>() -> ResourcePolicies {
    ResourcePolicies {
        policies: vec![Arc::new(K::policy())],
        namespaces: BTreeMap::new(),
    }
}

/// The assessment the controller of `K` makes of `object` at `now`.
pub fn judge_object<K: TtlKind>(object: &serde_json::Value, now: DateTime<Utc>) -> Assessment {
    assess(object, &rules::<K>(), now)
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::ttl::BatchJob;

    /// The state the controller of `K` reads of `object`.
    pub(crate) fn state_of<K: TtlKind>(object: &serde_json::Value) -> TtlState {
        let assessment = judge_object::<K>(object, Utc::now());
        match TtlState::of(&assessment) {
            Ok(state) => state,
            Err(problem) => panic!("{object}: {}", problem.message),
        }
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
