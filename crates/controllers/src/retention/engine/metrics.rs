//! [`RetentionMetrics`]: the retention controller's Prometheus metrics.
//!
//! | name | type | meaning |
//! |---|---|---|
//! | `kube_gc_retention_deletions_total` | counter | objects deleted, by `policy_kind`, `policy` and `reason` (`ttl`, `history_limit`) |
//! | `kube_gc_retention_dry_run_deletions_total` | counter | deletions `kube-gc run --dry-run` would have made |
//! | `kube_gc_retention_would_delete_total` | counter | objects a policy in `Audit` mode would have deleted, by `policy_kind` and `policy`: each object once |
//! | `kube_gc_retention_deletion_delay_seconds` | histogram | expiry to successful delete (TTL deletions), upstream's TTL buckets |
//! | `kube_gc_retention_object_errors_total` | counter | objects kept because something in them could not be read, by `reason` (`match`, `finish_rule`, `own_ttl`, `annotation`, `finish_time_unknown`, `creation_time_unknown`) |
//! | `kube_gc_retention_api_errors_total` | counter | failed requests, by `verb` |
//! | `kube_gc_retention_policies` | gauge | policies, by `state` (`ready`, `invalid`, `not_served`, `forbidden`) |
//!
//! The per-policy deletion count is also what the policies' `status.deleted` reports.

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::{exponential_buckets, Histogram};
use prometheus_client::registry::Registry;

use crate::retention::policy::PolicyId;

/// Labels of the deletion counters.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct DeletionLabels {
    /// `RetentionPolicy` or `ClusterRetentionPolicy`.
    pub policy_kind: &'static str,
    /// `namespace/name` of a `RetentionPolicy`, `name` of a `ClusterRetentionPolicy`.
    pub policy: String,
    /// `ttl` or `history_limit`.
    pub reason: &'static str,
}

/// Which policy.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct PolicyLabels {
    /// `RetentionPolicy` or `ClusterRetentionPolicy`.
    pub policy_kind: &'static str,
    /// `namespace/name` of a `RetentionPolicy`, `name` of a `ClusterRetentionPolicy`.
    pub policy: String,
}

/// A label of its own.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct ReasonLabels {
    /// Why.
    pub reason: &'static str,
}

/// A request verb.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct VerbLabels {
    /// `get`, `delete`, `patch`.
    pub verb: &'static str,
}

/// A policy state.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct StateLabels {
    /// `ready`, `invalid`, `not_served`, `forbidden`.
    pub state: &'static str,
}

/// How many policies are in each state.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct StateTally {
    /// Valid, every resource watched.
    pub ready: usize,
    /// Invalid.
    pub invalid: usize,
    /// Naming a resource the server does not serve.
    pub not_served: usize,
    /// Naming a resource kube-gc is forbidden to read or delete.
    pub forbidden: usize,
}

/// The retention controller's metrics; share behind an `Arc`.
#[derive(Debug)]
pub struct RetentionMetrics {
    deletions: Family<DeletionLabels, Counter>,
    dry_run_deletions: Family<DeletionLabels, Counter>,
    would_delete: Family<PolicyLabels, Counter>,
    delay: Histogram,
    object_errors: Family<ReasonLabels, Counter>,
    api_errors: Family<VerbLabels, Counter>,
    policies: Family<StateLabels, Gauge>,
}

impl Default for RetentionMetrics {
    fn default() -> Self {
        RetentionMetrics {
            deletions: Family::default(),
            dry_run_deletions: Family::default(),
            would_delete: Family::default(),
            delay: delay_histogram(),
            object_errors: Family::default(),
            api_errors: Family::default(),
            policies: Family::default(),
        }
    }
}

fn policy_labels(policy: &PolicyId) -> PolicyLabels {
    PolicyLabels {
        policy_kind: policy.kind(),
        policy: policy.path(),
    }
}

fn delay_histogram() -> Histogram {
    Histogram::new(exponential_buckets(0.1, 2.0, 14))
}

impl RetentionMetrics {
    /// Adds every metric to `registry`.
    pub fn register(&self, registry: &mut Registry) {
        registry.register(
            "kube_gc_retention_deletions",
            "Objects deleted under a retention policy",
            self.deletions.clone(),
        );
        registry.register(
            "kube_gc_retention_dry_run_deletions",
            "Deletions kube-gc run --dry-run would have made under a retention policy",
            self.dry_run_deletions.clone(),
        );
        registry.register(
            "kube_gc_retention_would_delete",
            "Objects a retention policy in Audit mode would have deleted (each object once)",
            self.would_delete.clone(),
        );
        registry.register(
            "kube_gc_retention_deletion_delay_seconds",
            "Seconds from an object's expiry to its deletion",
            self.delay.clone(),
        );
        registry.register(
            "kube_gc_retention_object_errors",
            "Objects kept because a rule could not be applied to them",
            self.object_errors.clone(),
        );
        registry.register(
            "kube_gc_retention_api_errors",
            "Failed requests of the retention controller",
            self.api_errors.clone(),
        );
        registry.register(
            "kube_gc_retention_policies",
            "Retention policies by state",
            self.policies.clone(),
        );
    }

    /// One deletion (or, with `dry_run`, one that would have been made).
    pub fn observe_deletion(&self, policy: &PolicyId, reason: &'static str, dry_run: bool) {
        let family = if dry_run {
            &self.dry_run_deletions
        } else {
            &self.deletions
        };
        family
            .get_or_create(&DeletionLabels {
                policy_kind: policy.kind(),
                policy: policy.path(),
                reason,
            })
            .inc();
    }

    /// An object `policy`, in `Audit` mode, would have deleted.
    pub fn observe_would_delete(&self, policy: &PolicyId) {
        self.would_delete
            .get_or_create(&policy_labels(policy))
            .inc();
    }

    /// Objects `policy` would have deleted so far (in `Audit` mode).
    pub fn would_deletes(&self, policy: &PolicyId) -> u64 {
        self.would_delete
            .get_or_create(&policy_labels(policy))
            .get()
    }

    /// A TTL deletion `seconds` after expiry.
    pub fn observe_delay(&self, seconds: f64) {
        self.delay.observe(seconds.max(0.0));
    }

    /// An object kept for `reason`.
    pub fn observe_object_error(&self, reason: &'static str) {
        self.object_errors
            .get_or_create(&ReasonLabels { reason })
            .inc();
    }

    /// A failed request.
    pub fn observe_api_error(&self, verb: &'static str) {
        self.api_errors.get_or_create(&VerbLabels { verb }).inc();
    }

    /// Sets the policy gauges.
    pub fn set_policies(&self, tally: &StateTally) {
        for (state, n) in [
            ("ready", tally.ready),
            ("invalid", tally.invalid),
            ("not_served", tally.not_served),
            ("forbidden", tally.forbidden),
        ] {
            self.policies
                .get_or_create(&StateLabels { state })
                .set(n as i64);
        }
    }

    /// Deletions under `policy` so far (both reasons).
    pub fn deletions(&self, policy: &PolicyId) -> u64 {
        ["ttl", "history_limit"]
            .into_iter()
            .map(|reason| {
                self.deletions
                    .get_or_create(&DeletionLabels {
                        policy_kind: policy.kind(),
                        policy: policy.path(),
                        reason,
                    })
                    .get()
            })
            .sum()
    }

    /// Objects kept for `reason` so far.
    pub fn object_errors(&self, reason: &'static str) -> u64 {
        self.object_errors
            .get_or_create(&ReasonLabels { reason })
            .get()
    }
}
