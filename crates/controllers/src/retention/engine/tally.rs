//! [`Tally`]: where the reconciler counts what it did. The retention controller counts into
//! [`RetentionMetrics`]; a TTL controller running the engine counts into its own metrics,
//! under the names kube-controller-manager gives them, so `--controllers` and dashboards built
//! for upstream keep working.
//!
//! Contract: the reconciler calls [`Tally::deleted`] once per deletion (or, dry run, once per
//! deletion it would have made), [`Tally::kept`] when an object is kept because something
//! about it cannot be read, [`Tally::would_delete`] once per object a policy in `Audit` mode
//! would have deleted, and [`Tally::api_error`] once per failed request. A tally never blocks
//! and never fails.

use super::metrics::RetentionMetrics;
use crate::retention::policy::CompiledPolicy;

/// Counts a reconciler's outcomes.
pub trait Tally: Send + Sync + 'static {
    /// An object deleted under `policy` for `reason` (`ttl`, `history_limit`), or with
    /// `dry_run` one that would have been; `latency` is the time since it expired, in
    /// seconds, for a TTL deletion.
    fn deleted(
        &self,
        policy: &CompiledPolicy,
        reason: &'static str,
        dry_run: bool,
        latency: Option<f64>,
    );

    /// An object kept because something about it could not be read; `reason` is a metric
    /// label (`match`, `finish_rule`, `own_ttl`, `annotation`, `finish_time_unknown`, …).
    fn kept(&self, reason: &'static str);

    /// A request (`get`, `delete`) that failed.
    fn api_error(&self, verb: &'static str);

    /// An object `policy`, in `Audit` mode, would have deleted for `reason`. A TTL controller's
    /// fixed policy is never in `Audit` mode: nothing to count by default.
    fn would_delete(&self, _policy: &CompiledPolicy, _reason: &'static str) {}
}

impl Tally for RetentionMetrics {
    fn deleted(
        &self,
        policy: &CompiledPolicy,
        reason: &'static str,
        dry_run: bool,
        latency: Option<f64>,
    ) {
        self.observe_deletion(&policy.id, reason, dry_run);
        if let (false, Some(latency)) = (dry_run, latency) {
            self.observe_delay(latency);
        }
    }

    fn kept(&self, reason: &'static str) {
        self.observe_object_error(reason);
    }

    fn api_error(&self, verb: &'static str) {
        self.observe_api_error(verb);
    }

    fn would_delete(&self, policy: &CompiledPolicy, _reason: &'static str) {
        self.observe_would_delete(&policy.id);
    }
}
