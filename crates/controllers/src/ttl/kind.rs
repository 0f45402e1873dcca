//! [`TtlKind`]: a kind the TTL-after-finished controller cleans up — its names, its resource
//! and the retention preset whose finish rule and own TTL field it is judged by.
//!
//! Contract: a kind adds nothing to the engine's rules; it only picks them. The preset says
//! when an object has finished and where its TTL is; [`TtlKind::policy`] turns it into the
//! fixed policy the controller runs the retention engine with (no policy TTL, no limits, no
//! `kube-gc.io` annotations): an object is deleted when its own `ttlSecondsAfterFinished` has
//! passed since it finished, as upstream's controller deletes it. batch/v1 Jobs
//! ([`BatchJob`](super::BatchJob)) and Volcano Jobs ([`VolcanoJobs`](super::VolcanoJobs)) are
//! the two kinds.

use chrono::{DateTime, Utc};

use crate::retention::policy::CompiledPolicy;
use crate::retention::preset::Preset;
use kube_gc_client::ResourceRef;

/// Whether an object has finished, and when.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Finished {
    /// Still running (or never started): nothing to clean up.
    No,
    /// Finished at this time; the TTL counts from here.
    At(DateTime<Utc>),
    /// Finished, but the object does not say when. Cleanup cannot be scheduled; the controller
    /// reports it as an error for that key (retried with back-off) and never deletes on a guess.
    WithoutTime,
}

impl Finished {
    /// Whether the object has finished, with or without a known time.
    pub fn is_finished(self) -> bool {
        !matches!(self, Finished::No)
    }
}

/// A kind of object with a TTL after it finishes.
pub trait TtlKind: Send + Sync + 'static {
    /// The kind as logs, events and the metrics' `kind` label name it (`Job`, `VolcanoJob`).
    const KIND: &'static str;
    /// The controller's name, as `--controllers` selects it.
    const CONTROLLER: &'static str;
    /// The workqueue's name (its metrics carry it).
    const QUEUE: &'static str;
    /// Whose rules the controller follows, as `explain` names them.
    const RULES: &'static str;

    /// The REST resource the objects are served at.
    fn resource() -> ResourceRef;

    /// The retention preset that says when an object of this kind has finished, and where
    /// its own TTL is.
    fn preset() -> Preset;

    /// The fixed policy the controller runs the engine with.
    fn policy() -> CompiledPolicy {
        CompiledPolicy::for_controller(&Self::preset(), Self::CONTROLLER)
    }
}
