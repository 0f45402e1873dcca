//! [`RetentionReconciler`]: a work key, from "the cache says it is due" to a safe deletion —
//! for the retention policies and for the TTL controllers alike, which run the engine with a
//! fixed policy and their upstream settings ([`ReconcileSettings`]).
//!
//! Contract, for an object key (TTL):
//! 1. Not cached → done. Not governed → done. A [`Problem`] (CEL, rule, own TTL field,
//!    annotation) → logged, counted and reported as a Warning Event on the object once while
//!    it lasts; the object is kept.
//! 2. [`decide`] on the cached assessment: keep → done; waiting → requeue at the expiry; a missing
//!    finish or creation time → reported like a problem, never a deletion (with
//!    `retry_unschedulable`, as kube-controller-manager does, it is also an error for the key,
//!    counted on every attempt and retried with back-off).
//! 3. Expired → DELETE with the policy's propagation and preconditions on the cached UID *and*
//!    resourceVersion: the server deletes only the very copy that was assessed.
//! 4. On 409 Conflict: GET a fresh copy, assess it under the same rules (its TTL may have been
//!    extended, it may be a new object that has not finished), and only if it is still expired
//!    DELETE it with the fresh UID and resourceVersion. A second Conflict leaves it to its
//!    next event. NotFound at any point is success: it is gone.
//! 5. With [`FreshRead::Always`] (upstream's exact pattern) step 3 is skipped: every deletion
//!    is a GET, an assessment of the fresh copy, and a DELETE guarded by its UID alone.
//!
//! For a group key (history limit, `history.rs`): rank the group's finished members from the
//! cache, and delete each one beyond its limit the same way — preconditions on what was
//! ranked, and on Conflict a fresh read, re-ranked with the others, before any deletion.
//!
//! Under a policy in `Audit` mode (`mode: Audit`, or `dryRun: true`) the deletion is reported
//! once per object as one that would have been made (`audit.rs`) and no request is made; with
//! the settings' `dry_run` (`kube-gc run --dry-run`) it is logged and counted as such. Every
//! real deletion and every would-be one goes to the deletion feed (notifications).

mod audit;
mod delete;
mod history;
mod report;

use std::collections::HashMap;
use std::sync::Arc;

use chrono::{DateTime, Utc};
use parking_lot::Mutex;

use crate::deleted::{NoFeed, SharedFeed};
use crate::retention::assessment::{assess, Assessment, Governed, Standing};
use crate::retention::policy::Target;
use crate::retention::verdict::{decide, Unschedulable, Verdict};
use kube_gc_core::clock::SharedClock;
use kube_gc_runtime::cache::{Cacheable, ObjectKey};
use kube_gc_runtime::controller::{Action, Reconciler};
use kube_gc_runtime::events::SharedRecorder;

use super::fresh_read::FreshRead;
use super::refusal::Refusals;
use super::tally::Tally;
use super::watch::ResourceWatch;
use super::{WatchMap, WorkKey};

use delete::{Deletion, Guard, Reason};

/// Why a key could not be reconciled (it is retried with back-off).
#[derive(Debug, thiserror::Error)]
pub enum RetentionError {
    /// A request failed.
    #[error("{verb} {resource} {key}: {source}")]
    Api {
        /// `get` or `delete`.
        verb: &'static str,
        /// The resource.
        resource: String,
        /// The object.
        key: ObjectKey,
        /// What the client said.
        #[source]
        source: kube_gc_client::Error,
    },
    /// Its TTL cannot be scheduled (only with `retry_unschedulable`).
    #[error("{resource} {key}: {why}; it will not be deleted until it says")]
    Unschedulable {
        /// The resource.
        resource: String,
        /// The object.
        key: ObjectKey,
        /// What is missing.
        why: Unschedulable,
    },
}

/// How a reconciler deletes and reports, beyond what its policies say.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ReconcileSettings {
    /// The controller, as logs name it (`retention`, `ttl-after-finished`).
    pub controller: &'static str,
    /// Delete nothing, whatever the policies say (`kube-gc run --dry-run`).
    pub dry_run: bool,
    /// When a fresh copy is read before deleting.
    pub fresh_read: FreshRead,
    /// A TTL that cannot be scheduled is an error for its key, retried with back-off and
    /// counted on every attempt — upstream's TTL controllers' behaviour. Otherwise the object
    /// is reported once and kept until its next event.
    pub retry_unschedulable: bool,
}

impl Default for ReconcileSettings {
    fn default() -> Self {
        ReconcileSettings {
            controller: super::CONTROLLER,
            dry_run: false,
            fresh_read: FreshRead::OnConflict,
            retry_unschedulable: false,
        }
    }
}

/// The engine's reconciler.
pub struct RetentionReconciler {
    watches: WatchMap,
    clock: SharedClock,
    tally: Arc<dyn Tally>,
    recorder: SharedRecorder,
    settings: ReconcileSettings,
    /// Objects whose problem was reported, with the message, so it is said once.
    reported: Mutex<HashMap<(Arc<Target>, ObjectKey), String>>,
    /// Where a refused DELETE is recorded, for the policies to report (`None`: logged only).
    refusals: Option<Arc<Refusals>>,
    /// The objects whose would-be deletion (`Audit`) was reported, so it is reported once.
    audited: audit::Audited,
    /// Where deletions, and would-be ones, are told.
    feed: SharedFeed,
}

impl RetentionReconciler {
    /// A reconciler acting on the watches in `watches`, with the default settings.
    pub fn new(
        watches: WatchMap,
        clock: SharedClock,
        tally: Arc<dyn Tally>,
        recorder: SharedRecorder,
    ) -> Self {
        RetentionReconciler {
            watches,
            clock,
            tally,
            recorder,
            settings: ReconcileSettings::default(),
            reported: Mutex::new(HashMap::new()),
            refusals: None,
            audited: audit::Audited::default(),
            feed: Arc::new(NoFeed),
        }
    }

    /// Tells `feed` of every deletion, and of every one an `Audit` policy would have made.
    pub fn with_feed(mut self, feed: SharedFeed) -> Self {
        self.feed = feed;
        self
    }

    /// Records each DELETE the server forbids (403) in `refusals`, and lifts it at the next
    /// deletion that works.
    pub fn with_refusals(mut self, refusals: Arc<Refusals>) -> Self {
        self.refusals = Some(refusals);
        self
    }

    /// Replaces the settings.
    pub fn with_settings(mut self, settings: ReconcileSettings) -> Self {
        self.settings = settings;
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
            self.forget(watch, key);
            return Ok(Action::Done);
        };
        let (governed, expired_at) = match self.due(watch, &cached)? {
            Due::Now(governed, at) => (governed, at),
            Due::Later(action) => return Ok(action),
        };
        if self.settings.fresh_read == FreshRead::Always && !self.dry_run(watch, &governed) {
            return self.object_fresh(watch, key, Guard::Uid).await;
        }
        let policy = Arc::clone(&watch.rules.policies[usize::from(governed.policy)]);
        let ttl = Reason::Ttl(expired_at);
        match self
            .delete(watch, &cached, &policy, ttl, Guard::UidAndVersion)
            .await?
        {
            Deletion::Deleted | Deletion::Gone => Ok(Action::Done),
            Deletion::Conflict => {
                tracing::debug!(resource = %watch.target, %key, uid = cached.uid(), "changed since it was judged; reading it fresh");
                self.object_fresh(watch, key, Guard::UidAndVersion).await
            }
        }
    }

    /// Step 4 (and 5): assess a fresh copy, delete it only if it is still due.
    async fn object_fresh(
        &self,
        watch: &ResourceWatch,
        key: &ObjectKey,
        guard: Guard,
    ) -> Result<Action, RetentionError> {
        let Some(fresh) = self.read_fresh(watch, key).await? else {
            return Ok(Action::Done);
        };
        let (governed, expired_at) = match self.due(watch, &fresh)? {
            Due::Now(governed, at) => (governed, at),
            Due::Later(action) => return Ok(action),
        };
        let policy = Arc::clone(&watch.rules.policies[usize::from(governed.policy)]);
        match self
            .delete(watch, &fresh, &policy, Reason::Ttl(expired_at), guard)
            .await?
        {
            Deletion::Deleted | Deletion::Gone => Ok(Action::Done),
            Deletion::Conflict => {
                tracing::info!(resource = %watch.target, %key, "changed again (or re-created) while being deleted; leaving it to its next event");
                Ok(Action::Done)
            }
        }
    }

    /// GETs `key` and assesses it under the watch's rules; `None` if it is gone.
    async fn read_fresh(
        &self,
        watch: &ResourceWatch,
        key: &ObjectKey,
    ) -> Result<Option<Assessment>, RetentionError> {
        let api = watch.api.within(key.namespace().unwrap_or_default());
        match api.get_opt(key.name()).await {
            Ok(Some(object)) => Ok(Some(assess(&object, &watch.rules, self.clock.now()))),
            Ok(None) => Ok(None),
            Err(source) => Err(self.api_error("get", watch, key, source)),
        }
    }

    /// Whether an assessment is due for deletion now.
    fn due(&self, watch: &ResourceWatch, assessment: &Assessment) -> Result<Due, RetentionError> {
        let governed = match &assessment.standing {
            Standing::Ungoverned | Standing::Gone => return Ok(Due::Later(Action::Done)),
            Standing::Problem(problem) => {
                self.report(watch, assessment, problem.reason, &problem.message);
                return Ok(Due::Later(Action::Done));
            }
            Standing::Governed(governed) => governed.clone(),
        };
        let now = self.clock.now();
        match decide(&governed.facts, governed.ttl, now) {
            Ok(Verdict::Keep(_)) => {
                self.forget(watch, assessment.key());
                Ok(Due::Later(Action::Done))
            }
            Ok(Verdict::Wait {
                expires_at,
                remaining,
                finished_in_future,
            }) => {
                self.forget(watch, assessment.key());
                let key = assessment.key();
                if finished_in_future {
                    tracing::warn!(controller = self.settings.controller, resource = %watch.target, %key, %expires_at,
                        "found an object that finished in the future; this is likely due to clock skew in the cluster; cleanup will be deferred");
                } else {
                    tracing::debug!(controller = self.settings.controller, resource = %watch.target, %key, %expires_at, "not expired yet; looking again then");
                }
                Ok(Due::Later(Action::RequeueAfter(remaining)))
            }
            Ok(Verdict::Expired { expired_at }) => Ok(Due::Now(governed, expired_at)),
            Err(why) => self.unschedulable(watch, assessment, &governed, why),
        }
    }

    /// A TTL counted from a time the object does not give: never a deletion.
    fn unschedulable(
        &self,
        watch: &ResourceWatch,
        assessment: &Assessment,
        governed: &Governed,
        why: Unschedulable,
    ) -> Result<Due, RetentionError> {
        let policy = &watch.rules.policies[usize::from(governed.policy)];
        let reason = match why {
            Unschedulable::FinishTimeUnknown => "finish_time_unknown",
            Unschedulable::CreationTimeUnknown => "creation_time_unknown",
        };
        let message = format!("{}: {why}; its TTL cannot be applied", policy.label());
        let first = self.report(watch, assessment, reason, &message);
        if !self.settings.retry_unschedulable {
            return Ok(Due::Later(Action::Done));
        }
        // Upstream counts every failed attempt; the report above counted only the first.
        if !first {
            self.tally.kept(reason);
        }
        Err(RetentionError::Unschedulable {
            resource: watch.target.to_string(),
            key: assessment.key().clone(),
            why,
        })
    }

    /// Whether a deletion under `governed`'s policy would only be reported (an `Audit`
    /// policy, or a dry run).
    fn dry_run(&self, watch: &ResourceWatch, governed: &Governed) -> bool {
        self.settings.dry_run
            || watch.rules.policies[usize::from(governed.policy)]
                .mode
                .is_audit()
    }

    fn api_error(
        &self,
        verb: &'static str,
        watch: &ResourceWatch,
        key: &ObjectKey,
        source: kube_gc_client::Error,
    ) -> RetentionError {
        self.tally.api_error(verb);
        RetentionError::Api {
            verb,
            resource: watch.target.to_string(),
            key: key.clone(),
            source,
        }
    }
}

/// Whether an assessment is due now, or what to do instead.
enum Due {
    Now(Governed, DateTime<Utc>),
    Later(Action),
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

    fn server_unavailable(error: &RetentionError) -> bool {
        matches!(error, RetentionError::Api { source, .. } if source.is_unavailable())
    }
}
