//! [`TtlKind`]: what the TTL-after-finished controller needs to know about a kind of object, and
//! [`Finished`], the answer to "has it finished, and when?".
//!
//! Contract: a kind names its REST resource and the parts of its `spec` and `status` to decode
//! (everything else is skipped on the wire), and says how to read a TTL and a finish time from
//! them. The controller itself is written once, generic over the kind; batch/v1 Jobs
//! ([`BatchJob`](super::BatchJob)) and Volcano Jobs ([`VolcanoJobs`](super::VolcanoJobs)) are the
//! two kinds plugged in.

use chrono::{DateTime, Utc};
use serde::de::DeserializeOwned;

use crate::client::ResourceRef;

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

    /// The part of `spec` to decode.
    type Spec: DeserializeOwned;
    /// The part of `status` to decode.
    type Status: DeserializeOwned;

    /// The REST resource the objects are served at.
    fn resource() -> ResourceRef;

    /// `spec.ttlSecondsAfterFinished`, if set.
    fn ttl_seconds(spec: &Self::Spec) -> Option<i32>;

    /// Whether and when the object finished, from its status.
    fn finished(status: &Self::Status) -> Finished;
}
