//! The one DELETE every deletion of the engine goes through: guarded by preconditions on the
//! copy that was assessed, propagated as the policy says, counted and logged once; a 403 is
//! recorded as the resource's refusal (`refusal.rs`), lifted by the next deletion that works.
//! Under a policy in `Audit` mode nothing is sent: the deletion is reported as one that would
//! have been made (`audit.rs`); under `kube-gc run --dry-run`, logged and counted as such.

use chrono::{DateTime, Utc};
use serde::de::IgnoredAny;

use crate::deleted::DeletionRecord;
use crate::retention::assessment::Assessment;
use crate::retention::policy::{CompiledPolicy, Origin, PolicyId};
use kube_gc_api::DeleteOptions;
use kube_gc_client::Api;
use kube_gc_runtime::cache::Cacheable;

use super::super::upcoming::{HISTORY_LIMIT, TTL};
use super::super::watch::ResourceWatch;
use super::{RetentionError, RetentionReconciler};

/// How a DELETE ended.
pub(super) enum Deletion {
    /// Deleted (or would have been: `Audit`, dry run).
    Deleted,
    /// It was gone already.
    Gone,
    /// The server holds another copy than the one assessed.
    Conflict,
}

/// The preconditions a DELETE carries.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Guard {
    /// The assessed copy's UID and resourceVersion: only that very copy is deleted.
    UidAndVersion,
    /// Its UID alone: upstream's TTL controllers' DELETE after their fresh GET.
    Uid,
}

/// Why an object is deleted.
#[derive(Clone, Copy, Debug)]
pub(super) enum Reason {
    /// Its TTL expired at this time (the latency metric counts from it).
    Ttl(DateTime<Utc>),
    /// It is beyond its group's history limit.
    HistoryLimit,
}

impl Reason {
    pub(super) fn label(self) -> &'static str {
        match self {
            Reason::Ttl(_) => TTL,
            Reason::HistoryLimit => HISTORY_LIMIT,
        }
    }
}

impl RetentionReconciler {
    /// DELETE `assessment` under `policy`, with `guard`'s preconditions.
    pub(super) async fn delete(
        &self,
        watch: &ResourceWatch,
        assessment: &Assessment,
        policy: &CompiledPolicy,
        reason: Reason,
        guard: Guard,
    ) -> Result<Deletion, RetentionError> {
        let key = assessment.key();
        if policy.mode.is_audit() {
            self.would_delete(watch, assessment, policy, reason);
            return Ok(Deletion::Deleted);
        }
        if self.settings.dry_run {
            self.tally.deleted(policy, reason.label(), true, None);
            tracing::info!(
                controller = self.settings.controller,
                retention_policy = retention_policy(policy),
                resource = %watch.target,
                namespace = key.namespace().unwrap_or(""),
                name = key.name(),
                uid = assessment.uid(),
                reason = reason.label(),
                "dry run: would delete"
            );
            return Ok(Deletion::Deleted);
        }
        let mut options = DeleteOptions::with_policy(policy.propagation).with_uid(assessment.uid());
        if guard == Guard::UidAndVersion {
            options = options.with_resource_version(assessment.resource_version());
        }
        // What the server answers (a Status; or the object, when a finalizer keeps it — a
        // Foreground deletion — or when the resource answers with what it deleted, as Pods do
        // on a real API server) is never read: it is asked for as metadata only, which the
        // server encodes and sends in a fraction of the bytes, and skipped unbuilt.
        let api: Api<IgnoredAny> = Api::dynamic(
            watch.api.client().clone(),
            watch.resource.clone(),
            key.namespace(),
        );
        match api.delete_for_metadata(key.name(), &options).await {
            Ok(_) => {
                if let Some(refusals) = &self.refusals {
                    refusals.deleted(&watch.target);
                }
                self.deleted(watch, assessment, policy, reason);
                Ok(Deletion::Deleted)
            }
            Err(e) if e.is_not_found() => Ok(Deletion::Gone),
            Err(e) if e.is_conflict() => Ok(Deletion::Conflict),
            Err(source) => {
                if let (true, Some(refusals)) = (source.is_forbidden(), &self.refusals) {
                    let said = source
                        .api()
                        .map_or_else(|| source.to_string(), |api| api.message.clone());
                    refusals.refused_delete(&watch.target, said);
                }
                Err(self.api_error("delete", watch, key, source))
            }
        }
    }

    fn deleted(
        &self,
        watch: &ResourceWatch,
        assessment: &Assessment,
        policy: &CompiledPolicy,
        reason: Reason,
    ) {
        let latency = match reason {
            Reason::Ttl(expired_at) => Some(
                (self.clock.now() - expired_at)
                    .to_std()
                    .map(|d| d.as_secs_f64())
                    .unwrap_or(0.0),
            ),
            Reason::HistoryLimit => None,
        };
        // An object an Audit policy held past its expiry was kept by choice, not late: its wait
        // is not a deletion delay, and would swamp the histogram after a switch to Enforce.
        let held = self.audited.forget(&watch.target, assessment);
        let delay = latency.filter(|_| !held);
        self.tally.deleted(policy, reason.label(), false, delay);
        let key = assessment.key();
        tracing::info!(
            controller = self.settings.controller,
            retention_policy = retention_policy(policy),
            resource = %watch.target,
            namespace = key.namespace().unwrap_or(""),
            name = key.name(),
            uid = assessment.uid(),
            propagation_policy = ?policy.propagation,
            reason = reason.label(),
            latency_seconds = latency,
            "deleted"
        );
        self.feed.record(DeletionRecord {
            controller: self.settings.controller,
            policy: reported_policy(policy),
            audit: false,
            kind: watch.resource.kind.clone(),
            namespace: key.namespace().map(str::to_owned),
            name: key.name().to_owned(),
            uid: assessment.uid().to_owned(),
            reason: reason.label(),
            at: self.clock.now(),
        });
    }
}

/// The policy a deletion is reported under: the policy object, none for a TTL controller's
/// fixed policy.
pub(super) fn reported_policy(policy: &CompiledPolicy) -> Option<PolicyId> {
    match policy.origin {
        Origin::Object => Some(policy.id.clone()),
        Origin::Controller(_) => None,
    }
}

/// The `retention_policy` log key: the policy object a deletion was made under, absent for a
/// TTL controller's fixed policy (its `controller` key says which).
pub(super) fn retention_policy(policy: &CompiledPolicy) -> Option<String> {
    match policy.origin {
        Origin::Object => Some(policy.label().to_string()),
        Origin::Controller(_) => None,
    }
}
