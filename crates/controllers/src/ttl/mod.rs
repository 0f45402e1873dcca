//! The TTL-after-finished controller: deletes a finished Job once its
//! `ttlSecondsAfterFinished` has passed — kube-controller-manager's `ttl-after-finished` for
//! batch/v1 Jobs and Volcano's garbage collector for Volcano Jobs. Both are the retention
//! engine (`controllers/retention/engine`) run with a fixed policy: the kind's preset
//! (`batch-jobs`, `volcano-jobs`), its own TTL field, `Foreground`, and upstream's flags,
//! metric names and error handling. `docs/controllers.md` explains it; each file holds one part:
//!
//! | file | what it holds |
//! |---|---|
//! | `kind.rs` | [`TtlKind`] — a kind with a TTL: its names, resource and preset — and [`Finished`] |
//! | `job.rs`, `volcano.rs` | the two kinds, [`BatchJob`] and [`VolcanoJobs`] |
//! | `state.rs` | [`TtlState`]: the engine's judgement of an object, read as the TTL decision reads it |
//! | `judge.rs` | [`judge`]: keep, wait, or expired — the engine's `decide` (which the controller calls) on a [`TtlState`], for `kube-gc explain` |
//! | `metrics.rs` | [`TtlMetrics`], under kube-controller-manager's names, and the engine's [`KindTally`] into them |
//! | `controller.rs` | [`TtlController`]: the engine's watch, queue and reconciler, with the kind's fixed policy |

mod controller;
mod job;
mod judge;
mod kind;
mod metrics;
pub(crate) mod state;
mod volcano;

pub use controller::{detached, work_key, TtlController, TtlControllerBuilder};
pub use job::BatchJob;
pub use judge::{judge, MissingFinishTime, Verdict};
pub use kind::{Finished, TtlKind};
pub use metrics::{ErrorLabels, ErrorReason, KindLabels, KindTally, TtlMetrics};
pub use state::{judge_object, rules, TtlState};
pub use volcano::VolcanoJobs;

pub use crate::retention::engine::{FreshRead, UnknownFreshRead};
use kube_gc_runtime::reflector::ReflectorConfig;

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
