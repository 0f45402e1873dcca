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
    //! What the kinds' tests (`job.rs`, `volcano.rs`) read a state with.
    use super::*;

    /// The state the controller of `K` reads of `object`.
    pub(crate) fn state_of<K: TtlKind>(object: &serde_json::Value) -> TtlState {
        let assessment = judge_object::<K>(object, Utc::now());
        match TtlState::of(&assessment) {
            Ok(state) => state,
            Err(problem) => panic!("{object}: {}", problem.message),
        }
    }
}
