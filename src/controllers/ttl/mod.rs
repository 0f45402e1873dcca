//! The TTL-after-finished controller: deletes a finished Job once its
//! `ttlSecondsAfterFinished` has passed — kube-controller-manager's `ttl-after-finished` for
//! batch/v1 Jobs and Volcano's garbage collector for Volcano Jobs, as one design with two kinds
//! plugged in. `docs/controllers.md` explains it; each file holds one part:
//!
//! | file | what it holds |
//! |---|---|
//! | `kind.rs` | [`TtlKind`] — a kind with a TTL: its resource, TTL and finish time — and [`Finished`] |
//! | `job.rs`, `volcano.rs` | the two kinds, [`BatchJob`] and [`VolcanoJobs`] |
//! | `object.rs` | [`TtlObject`], the compact projection the cache holds, decoded from the wire |
//! | `judge.rs` | [`judge`]: keep, wait, or expired — pure |
//! | `reconcile.rs` | [`TtlReconciler`]: the fast-path delete and its fresh-read fallback |
//! | `metrics.rs` | [`TtlMetrics`] |
//! | `controller.rs` | [`TtlController`]: informer + handlers + workqueue + workers |

mod controller;
mod job;
mod judge;
mod kind;
mod metrics;
mod object;
mod reconcile;
mod volcano;

use std::fmt;
use std::str::FromStr;

pub use controller::{TtlController, TtlControllerBuilder};
pub use job::BatchJob;
pub use judge::{judge, MissingFinishTime, Verdict};
pub use kind::{Finished, TtlKind};
pub use metrics::{ErrorLabels, ErrorReason, KindLabels, TtlMetrics};
pub use object::{TtlObject, TtlState};
pub use reconcile::{ReconcileSettings, TtlError, TtlReconciler};
pub use volcano::VolcanoJobs;

use crate::runtime::reflector::ReflectorConfig;

/// When to GET a fresh copy of an expired object before deleting it (`--ttl-fresh-read`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum FreshRead {
    /// Only when the fast-path DELETE (UID + resourceVersion preconditions) is refused with a
    /// Conflict: one request per Job when nothing changed.
    #[default]
    OnConflict,
    /// Always, before every DELETE: upstream's exact request pattern (two per Job).
    Always,
}

impl FreshRead {
    /// The flag's spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            FreshRead::OnConflict => "on-conflict",
            FreshRead::Always => "always",
        }
    }
}

impl fmt::Display for FreshRead {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.pad(self.as_str())
    }
}

/// A `--ttl-fresh-read` value that is neither `on-conflict` nor `always`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown fresh-read mode {0:?} (expected on-conflict or always)")]
pub struct UnknownFreshRead(pub String);

impl FromStr for FreshRead {
    type Err = UnknownFreshRead;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "on-conflict" => Ok(FreshRead::OnConflict),
            "always" => Ok(FreshRead::Always),
            other => Err(UnknownFreshRead(other.to_owned())),
        }
    }
}

/// How one TTL controller runs.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TtlOptions {
    /// Keys reconciled at once (`--concurrent-ttl-after-finished-syncs` 5 for Jobs,
    /// `--worker-threads-for-gc` 1 for Volcano Jobs).
    pub workers: usize,
    /// Watch only this namespace; `None` for all.
    pub namespace: Option<String>,
    /// Decide and log, delete nothing.
    pub dry_run: bool,
    /// When to read a fresh copy before deleting.
    pub fresh_read: FreshRead,
    /// How the informer lists and watches.
    pub reflector: ReflectorConfig,
}

impl TtlOptions {
    /// Upstream's defaults with `workers` workers.
    pub fn with_workers(workers: usize) -> Self {
        TtlOptions {
            workers,
            namespace: None,
            dry_run: false,
            fresh_read: FreshRead::default(),
            reflector: ReflectorConfig::default(),
        }
    }
}

/// kube-controller-manager's `--concurrent-ttl-after-finished-syncs` default.
pub const DEFAULT_JOB_WORKERS: usize = 5;
/// Volcano's `--worker-threads-for-gc` default.
pub const DEFAULT_VOLCANO_WORKERS: usize = 1;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fresh_read_round_trips_its_flag_spelling() {
        for mode in [FreshRead::OnConflict, FreshRead::Always] {
            assert_eq!(mode.as_str().parse::<FreshRead>(), Ok(mode));
        }
        assert!("sometimes".parse::<FreshRead>().is_err());
    }
}
