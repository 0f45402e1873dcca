//! [`RetentionReconciler`]: a work key, from "the cache says it is due" to a safe deletion.
//!
//! Contract, for an object key (TTL):
//! 1. Not cached → done. Not governed → done. A [`Problem`] (CEL, rule, own TTL field,
//!    annotation) → logged, counted and reported as a Warning Event on the object once while
//!    it lasts; the object is kept.
//! 2. [`judge`] the cached judgement: keep → done; waiting → requeue at the expiry; a missing
//!    finish or creation time → reported like a problem, never a deletion.
//! 3. Expired → DELETE with the policy's propagation and preconditions on the cached UID *and*
//!    resourceVersion: the server deletes only the very copy that was judged.
//! 4. On 409 Conflict: GET a fresh copy, judge it under the same rules (its TTL may have been
//!    extended, it may be a new object that has not finished), and only if it is still expired
//!    DELETE it with the fresh UID and resourceVersion. A second Conflict leaves it to its
//!    next event. NotFound at any point is success: it is gone.
//!
//! For a group key (history limit): rank the group's finished members from the cache, and
//! delete each one beyond its limit the same way — preconditions on what was ranked, and on
//! Conflict a fresh read, re-ranked with the others, before any deletion.
//!
//! With `dryRun` the deletion is logged and counted, and no request is made.

use std::collections::HashMap;
use std::sync::Arc;

use chrono::{DateTime, Utc};
use parking_lot::Mutex;
use serde::de::IgnoredAny;

use crate::api::{DeleteOptions, ObjectReference};
use crate::client::Api;
use crate::clock::SharedClock;
use crate::controllers::retention::history::{over_limit, Member};
use crate::controllers::retention::judge::{judge, Unschedulable, Verdict};
use crate::controllers::retention::judgement::{project, Governed, Judged, Judgement};
use crate::controllers::retention::policy::{CompiledPolicy, Target};
use crate::events::{EventRecord, EventType, SharedRecorder};
use crate::runtime::cache::{Cacheable, ObjectKey};
use crate::runtime::controller::{Action, Reconciler};

use super::groups::GroupKey;
use super::metrics::RetentionMetrics;
use super::watch::ResourceWatch;
use super::{WatchMap, WorkKey};

/// A request that failed (the key is retried with back-off).
#[derive(Debug, thiserror::Error)]
#[error("{verb} {resource} {key}: {source}")]
pub struct RetentionError {
    verb: &'static str,
    resource: String,
    key: ObjectKey,
    #[source]
    source: crate::client::Error,
}

/// How a DELETE ended.
enum Deletion {
    /// Deleted (or would have been, dry run).
    Deleted,
    /// It was gone already.
    Gone,
    /// The server holds another copy than the one judged.
    Conflict,
}

/// The retention controller's reconciler.
pub struct RetentionReconciler {
    watches: WatchMap,
    clock: SharedClock,
    metrics: Arc<RetentionMetrics>,
    recorder: SharedRecorder,
    /// Every policy is a dry run.
    dry_run: bool,
    /// Objects whose problem was reported, with the message, so it is said once.
    reported: Mutex<HashMap<(Arc<Target>, ObjectKey), String>>,
}

impl RetentionReconciler {
    /// A reconciler acting on the watches in `watches`.
    pub fn new(
        watches: WatchMap,
        clock: SharedClock,
        metrics: Arc<RetentionMetrics>,
        recorder: SharedRecorder,
    ) -> Self {
        RetentionReconciler {
            watches,
            clock,
            metrics,
            recorder,
            dry_run: false,
            reported: Mutex::new(HashMap::new()),
        }
    }

    /// Deletes nothing, whatever the policies say (`kube-gc run --dry-run`).
    pub fn with_dry_run(mut self, dry_run: bool) -> Self {
        self.dry_run = dry_run;
        self
    }

    fn watch(&self, target: &Target) -> Option<Arc<ResourceWatch>> {
        self.watches.read().get(target).cloned()
    }

    async fn object(
        &self,
        watch: &ResourceWatch,
        key: &ObjectKey,
    ) -> Result<Action, RetentionError> {
        let Some(cached) = watch.store.get(key) else {
            self.reported
                .lock()
                .remove(&(Arc::clone(&watch.target), key.clone()));
            return Ok(Action::Done);
        };
        let (governed, expired_at) = match self.due(watch, &cached) {
            Due::Now(governed, at) => (governed, at),
            Due::Later(action) => return Ok(action),
        };
        let policy = Arc::clone(&watch.rules.policies[usize::from(governed.policy)]);
        let uid = cached.uid().to_owned();
        match self
            .delete(watch, &cached, &policy, "ttl", Some(expired_at))
            .await?
        {
            Deletion::Deleted | Deletion::Gone => Ok(Action::Done),
            Deletion::Conflict => {
                tracing::debug!(resource = %watch.target, %key, %uid, "changed since it was judged; reading it fresh");
                self.object_fresh(watch, key).await
            }
        }
    }

    /// Step 4: judge a fresh copy, delete it only if it is still due.
    async fn object_fresh(
        &self,
        watch: &ResourceWatch,
        key: &ObjectKey,
    ) -> Result<Action, RetentionError> {
        let Some(fresh) = self.read_fresh(watch, key).await? else {
            return Ok(Action::Done);
        };
        let (governed, expired_at) = match self.due(watch, &fresh) {
            Due::Now(governed, at) => (governed, at),
            Due::Later(action) => return Ok(action),
        };
        let policy = Arc::clone(&watch.rules.policies[usize::from(governed.policy)]);
        match self
            .delete(watch, &fresh, &policy, "ttl", Some(expired_at))
            .await?
        {
            Deletion::Deleted | Deletion::Gone => Ok(Action::Done),
            Deletion::Conflict => {
                tracing::info!(resource = %watch.target, %key, "changed again while being deleted; leaving it to its next event");
                Ok(Action::Done)
            }
        }
    }

    /// GETs `key` and judges it under the watch's rules; `None` if it is gone.
    async fn read_fresh(
        &self,
        watch: &ResourceWatch,
        key: &ObjectKey,
    ) -> Result<Option<Judgement>, RetentionError> {
        let api = watch.api.within(key.namespace().unwrap_or_default());
        match api.get_opt(key.name()).await {
            Ok(Some(object)) => Ok(Some(project(&object, &watch.rules, self.clock.now()))),
            Ok(None) => Ok(None),
            Err(source) => Err(self.api_error("get", watch, key, source)),
        }
    }

    /// Whether a judgement is due for deletion now.
    fn due(&self, watch: &ResourceWatch, judgement: &Judgement) -> Due {
        let governed = match &judgement.judged {
            Judged::Ungoverned => return Due::Later(Action::Done),
            Judged::Problem(problem) => {
                self.report(watch, judgement, problem.reason, &problem.message);
                return Due::Later(Action::Done);
            }
            Judged::Governed(governed) => governed.clone(),
        };
        let now = self.clock.now();
        match judge(&governed.facts, governed.ttl, now) {
            Ok(Verdict::Keep(_)) => Due::Later(Action::Done),
            Ok(Verdict::Wait {
                expires_at,
                remaining,
                finished_in_future,
            }) => {
                if finished_in_future {
                    tracing::warn!(resource = %watch.target, key = %judgement.key(), %expires_at,
                        "finished in the future; this is likely due to clock skew in the cluster; cleanup will be deferred");
                }
                Due::Later(Action::RequeueAfter(remaining))
            }
            Ok(Verdict::Expired { expired_at }) => Due::Now(governed, expired_at),
            Err(unschedulable) => {
                let policy = &watch.rules.policies[usize::from(governed.policy)];
                let reason = match unschedulable {
                    Unschedulable::FinishTimeUnknown => "finish_time_unknown",
                    Unschedulable::CreationTimeUnknown => "creation_time_unknown",
                };
                let message = format!("{}: {unschedulable}; its TTL cannot be applied", policy.id);
                self.report(watch, judgement, reason, &message);
                Due::Later(Action::Done)
            }
        }
    }

    /// DELETE with preconditions on `judged`'s UID and resourceVersion.
    async fn delete(
        &self,
        watch: &ResourceWatch,
        judged: &Judgement,
        policy: &CompiledPolicy,
        reason: &'static str,
        expired_at: Option<DateTime<Utc>>,
    ) -> Result<Deletion, RetentionError> {
        let key = judged.key();
        if policy.dry_run || self.dry_run {
            self.metrics
                .observe_deletion(policy.id.to_string(), reason, true);
            tracing::info!(policy = %policy.id, resource = %watch.target, %key, uid = judged.uid(), reason, "dry run: would delete");
            return Ok(Deletion::Deleted);
        }
        let options = DeleteOptions::with_policy(policy.propagation)
            .with_uid(judged.uid())
            .with_resource_version(judged.resource_version());
        // What the server answers (a Status; or the object, when a finalizer keeps it — a
        // Foreground deletion — or when the resource answers with what it deleted, as Pods do
        // on a real API server) is never read: it is skipped unbuilt, not decoded into a
        // `Value` of the whole object and dropped.
        let api: Api<IgnoredAny> = Api::dynamic(
            watch.api.client().clone(),
            watch.resource.clone(),
            key.namespace(),
        );
        match api.delete(key.name(), &options).await {
            Ok(_) => {
                self.deleted(watch, judged, policy, reason, expired_at);
                Ok(Deletion::Deleted)
            }
            Err(e) if e.is_not_found() => Ok(Deletion::Gone),
            Err(e) if e.is_conflict() => Ok(Deletion::Conflict),
            Err(source) => Err(self.api_error("delete", watch, key, source)),
        }
    }

    fn deleted(
        &self,
        watch: &ResourceWatch,
        judged: &Judgement,
        policy: &CompiledPolicy,
        reason: &'static str,
        expired_at: Option<DateTime<Utc>>,
    ) {
        self.metrics
            .observe_deletion(policy.id.to_string(), reason, false);
        let latency = expired_at.map(|at| {
            (self.clock.now() - at)
                .to_std()
                .map(|d| d.as_secs_f64())
                .unwrap_or(0.0)
        });
        if let Some(latency) = latency {
            self.metrics.observe_delay(latency);
        }
        let key = judged.key();
        tracing::info!(
            controller = "retention",
            policy = %policy.id,
            resource = %watch.target,
            namespace = key.namespace().unwrap_or(""),
            name = key.name(),
            uid = judged.uid(),
            propagation = ?policy.propagation,
            reason,
            latency_seconds = latency,
            "deleted"
        );
    }

    async fn group(
        &self,
        watch: &ResourceWatch,
        group: &GroupKey,
    ) -> Result<Action, RetentionError> {
        let Some(policy) = watch.rules.policies.get(usize::from(group.policy)).cloned() else {
            return Ok(Action::Done);
        };
        let mut members = self.group_members(watch, group);
        for excess in over_limit(&history_members(&members), policy.limits) {
            let Some(judged) = members.get(&excess.id).cloned() else {
                continue;
            };
            if let Deletion::Conflict = self
                .delete(watch, &judged, &policy, "history_limit", None)
                .await?
            {
                self.delete_fresh_member(watch, group, &policy, &mut members, &excess.id)
                    .await?;
            }
        }
        Ok(Action::Done)
    }

    /// On Conflict: read the member fresh, re-rank the group with it, delete only if it is
    /// still beyond the limit.
    async fn delete_fresh_member(
        &self,
        watch: &ResourceWatch,
        group: &GroupKey,
        policy: &CompiledPolicy,
        members: &mut HashMap<ObjectKey, Judgement>,
        key: &ObjectKey,
    ) -> Result<(), RetentionError> {
        members.remove(key);
        let Some(fresh) = self.read_fresh(watch, key).await? else {
            return Ok(());
        };
        if member_of(&fresh, group) {
            members.insert(key.clone(), fresh.clone());
        }
        let still_over = over_limit(&history_members(members), policy.limits)
            .iter()
            .any(|r| &r.id == key);
        if still_over {
            if let Deletion::Conflict = self
                .delete(watch, &fresh, policy, "history_limit", None)
                .await?
            {
                tracing::info!(resource = %watch.target, %key, "changed again while being deleted; leaving it to its next event");
            }
        }
        Ok(())
    }

    /// The group's finished members that are not being deleted, from the cache.
    fn group_members(
        &self,
        watch: &ResourceWatch,
        group: &GroupKey,
    ) -> HashMap<ObjectKey, Judgement> {
        watch
            .groups
            .members(group)
            .into_iter()
            .filter_map(|key| watch.store.get(&key))
            .filter(|j| member_of(j, group))
            .map(|j| (j.key().clone(), (*j).clone()))
            .collect()
    }

    /// Logs, counts and reports a problem with one object, once while it lasts.
    fn report(
        &self,
        watch: &ResourceWatch,
        judged: &Judgement,
        reason: &'static str,
        message: &str,
    ) {
        let entry = (Arc::clone(&watch.target), judged.key().clone());
        if self.reported.lock().get(&entry).map(String::as_str) == Some(message) {
            return;
        }
        self.reported.lock().insert(entry, message.to_owned());
        self.metrics.observe_object_error(reason);
        let key = judged.key();
        tracing::warn!(resource = %watch.target, %key, reason, "kept: {message}");
        self.recorder.record(EventRecord {
            regarding: ObjectReference {
                api_version: Some(watch.resource.api_version()),
                kind: Some(watch.resource.kind.clone()),
                namespace: key.namespace().map(str::to_owned),
                name: Some(key.name().to_owned()),
                uid: Some(judged.uid().to_owned()),
                ..ObjectReference::default()
            },
            event_type: EventType::Warning,
            reason: event_reason(reason).to_owned(),
            message: format!("kept: {message}"),
        });
    }

    fn api_error(
        &self,
        verb: &'static str,
        watch: &ResourceWatch,
        key: &ObjectKey,
        source: crate::client::Error,
    ) -> RetentionError {
        self.metrics.observe_api_error(verb);
        RetentionError {
            verb,
            resource: watch.target.to_string(),
            key: key.clone(),
            source,
        }
    }
}

/// Whether a judgement is due now, or what to do instead.
enum Due {
    Now(Governed, DateTime<Utc>),
    Later(Action),
}

/// A finished, governed member of `group`, not being deleted.
fn member_of(judged: &Judgement, group: &GroupKey) -> bool {
    judged.governed().is_some_and(|g| {
        g.policy == group.policy
            && !g.facts.being_deleted
            && g.facts.finished.is_some()
            && g.group.as_deref() == Some(&*group.value)
    })
}

fn history_members(members: &HashMap<ObjectKey, Judgement>) -> Vec<Member<ObjectKey>> {
    members
        .iter()
        .filter_map(|(key, judged)| {
            let finished = judged.governed()?.facts.finished?;
            Some(Member {
                id: key.clone(),
                outcome: finished.outcome,
                finished_at: finished.at,
            })
        })
        .collect()
}

fn event_reason(reason: &str) -> &'static str {
    match reason {
        "annotation" => "InvalidRetentionAnnotation",
        "finish_time_unknown" => "FinishTimeUnknown",
        "creation_time_unknown" => "CreationTimeUnknown",
        _ => "RetentionRuleFailed",
    }
}

impl Reconciler<WorkKey> for RetentionReconciler {
    type Error = RetentionError;

    async fn reconcile(&self, key: &WorkKey) -> Result<Action, RetentionError> {
        let Some(watch) = self.watch(key.target()) else {
            return Ok(Action::Done);
        };
        match key {
            WorkKey::Object { key, .. } => self.object(&watch, key).await,
            WorkKey::Group { group, .. } => self.group(&watch, group).await,
        }
    }
}
