//! [`TtlReconciler`]: one key, from "the cache says it expired" to a safe deletion — upstream's
//! `processJob`, with fewer requests and no less safety.
//!
//! Contract, for the object cached under a key:
//! 1. Not cached → done (it is gone; the handlers have no delete hook to clean up after).
//! 2. [`judge`] the cached copy: keep → done; not expired yet → requeue after the time left;
//!    finished without a finish time → an error for the key (logged and reported as a Warning
//!    event once per key, counted every time, retried with back-off; never a deletion).
//! 3. Expired, default ([`FreshRead::OnConflict`]): DELETE with `propagationPolicy: Foreground`
//!    and preconditions on the cached copy's UID *and* resourceVersion. The server deletes only
//!    if it still holds exactly the copy that was judged expired — the same object, unchanged —
//!    so the fresh GET upstream makes first is not needed: one request per Job.
//! 4. On 409 Conflict (the object changed, or was re-created, since the cache saw it) — or always
//!    with [`FreshRead::Always`], upstream's exact pattern — GET a fresh copy (NotFound → done),
//!    judge it again (its TTL may have been extended, or it may be a new object that has not
//!    finished), and only if it is still expired DELETE it, Foreground, with its fresh UID as a
//!    precondition. A Conflict then means it was re-created between the GET and the DELETE:
//!    not retried blindly — the new object's own events decide its fate.
//! 5. NotFound on any DELETE is success: someone else deleted it first.
//! - With `dry_run`, steps 3–4 are replaced by a log line saying what would be deleted.

use std::collections::HashSet;
use std::sync::Arc;

use parking_lot::Mutex;

use crate::api::{DeleteOptions, ObjectReference};
use crate::client::Api;
use crate::clock::SharedClock;
use crate::events::{EventRecord, EventType, SharedRecorder};
use crate::runtime::cache::{Cacheable, ObjectKey, Store};
use crate::runtime::controller::{Action, Reconciler};

use super::judge::{judge, Verdict};
use super::kind::TtlKind;
use super::metrics::{ErrorReason, TtlMetrics};
use super::object::TtlObject;
use super::FreshRead;

/// Why one key could not be reconciled (the key is retried with back-off).
#[derive(Debug, thiserror::Error)]
pub enum TtlError {
    /// The object has finished but says not when.
    #[error("{kind} {key} has finished but its finish time is not set; it will not be deleted until it is")]
    MissingFinishTime {
        /// `Job` or `VolcanoJob`.
        kind: &'static str,
        /// The object.
        key: ObjectKey,
    },
    /// A request to the API server failed.
    #[error("{verb} {kind} {key}: {source}")]
    Api {
        /// `Job` or `VolcanoJob`.
        kind: &'static str,
        /// `get` or `delete`.
        verb: &'static str,
        /// The object.
        key: ObjectKey,
        /// What the client said.
        #[source]
        source: crate::client::Error,
    },
}

/// What the judgement of one copy leads to.
enum Step {
    /// Stop here with this action.
    Stop(Action),
    /// It expired at this time: delete it.
    Delete(chrono::DateTime<chrono::Utc>),
}

/// Which copy of the object a judgement was made on, for logs.
#[derive(Clone, Copy)]
enum CopySource {
    /// The informer's cache.
    Cache,
    /// A GET just now.
    Server,
}

impl CopySource {
    fn as_str(self) -> &'static str {
        match self {
            CopySource::Cache => "cached",
            CopySource::Server => "fresh",
        }
    }
}

/// What a [`TtlReconciler`] shares with the rest of the process, and how it deletes.
#[derive(Clone)]
pub struct ReconcileSettings {
    /// Wall time.
    pub clock: SharedClock,
    /// When to read a fresh copy before deleting.
    pub fresh_read: FreshRead,
    /// Decide and log; delete nothing.
    pub dry_run: bool,
    /// Deletions, latencies and errors.
    pub metrics: Arc<TtlMetrics>,
    /// Where the Warning about a missing finish time goes.
    pub recorder: SharedRecorder,
}

/// The reconciler of the TTL controller for kind `K`.
pub struct TtlReconciler<K: TtlKind> {
    cache: Arc<Store<TtlObject<K>>>,
    api: Api<TtlObject<K>>,
    clock: SharedClock,
    fresh_read: FreshRead,
    dry_run: bool,
    metrics: Arc<TtlMetrics>,
    recorder: SharedRecorder,
    /// Keys whose missing finish time was already logged and reported.
    reported: Mutex<HashSet<ObjectKey>>,
}

impl<K: TtlKind> TtlReconciler<K> {
    /// A reconciler reading `cache` and writing through `api` (any namespace scope: each request
    /// is narrowed to the key's namespace). [`TtlController`](super::TtlController) builds one;
    /// tests may build one over a store they fill themselves.
    pub fn new(
        cache: Arc<Store<TtlObject<K>>>,
        api: Api<TtlObject<K>>,
        settings: ReconcileSettings,
    ) -> Self {
        TtlReconciler {
            cache,
            api,
            clock: settings.clock,
            fresh_read: settings.fresh_read,
            dry_run: settings.dry_run,
            metrics: settings.metrics,
            recorder: settings.recorder,
            reported: Mutex::new(HashSet::new()),
        }
    }

    fn api_for(&self, key: &ObjectKey) -> Api<TtlObject<K>> {
        self.api.within(key.namespace().unwrap_or_default())
    }

    /// Judges one copy of the object and turns the verdict into the next step.
    fn decide(
        &self,
        key: &ObjectKey,
        object: &TtlObject<K>,
        copy: CopySource,
    ) -> Result<Step, TtlError> {
        let now = self.clock.now();
        let verdict = match judge(object.state(), now) {
            Ok(verdict) => verdict,
            Err(_) => {
                self.report_missing_finish_time(key, object);
                self.metrics
                    .observe_error(K::KIND, ErrorReason::MissingFinishTime);
                return Err(TtlError::MissingFinishTime {
                    kind: K::KIND,
                    key: key.clone(),
                });
            }
        };
        self.reported.lock().remove(key);
        match verdict {
            Verdict::Keep => Ok(Step::Stop(Action::Done)),
            Verdict::Wait {
                expires_at,
                remaining,
                finished_in_future,
            } => {
                if finished_in_future {
                    tracing::warn!(kind = K::KIND, %key, %expires_at,
                        "found an object that finished in the future; this is likely due to clock skew in the cluster; cleanup will be deferred");
                }
                if self.dry_run {
                    tracing::info!(kind = K::KIND, %key, %expires_at, "dry run: would delete when its TTL expires");
                } else {
                    tracing::debug!(kind = K::KIND, %key, %expires_at, copy = copy.as_str(), "TTL not expired yet; looking again then");
                }
                Ok(Step::Stop(Action::RequeueAfter(remaining)))
            }
            Verdict::Expired { expired_at } => Ok(Step::Delete(expired_at)),
        }
    }

    /// Logs and reports a missing finish time, once per key until it is fixed or gone.
    fn report_missing_finish_time(&self, key: &ObjectKey, object: &TtlObject<K>) {
        if !self.reported.lock().insert(key.clone()) {
            return;
        }
        tracing::warn!(kind = K::KIND, %key, "finished but without a finish time; cannot schedule its cleanup");
        let resource = K::resource();
        self.recorder.record(EventRecord {
            regarding: ObjectReference {
                api_version: Some(resource.api_version()),
                kind: Some(resource.kind.clone()),
                namespace: key.namespace().map(str::to_owned),
                name: Some(key.name().to_owned()),
                uid: Some(object.uid().to_owned()),
                ..ObjectReference::default()
            },
            event_type: EventType::Warning,
            reason: "FinishTimeUnknown".to_owned(),
            message: format!(
                "{} has finished but its finish time is not set; its ttlSecondsAfterFinished cannot be applied",
                K::KIND
            ),
        });
    }

    /// The fast path: delete the cached copy if the server still holds exactly it.
    async fn delete_cached(
        &self,
        key: &ObjectKey,
        cached: &TtlObject<K>,
        expired_at: chrono::DateTime<chrono::Utc>,
    ) -> Result<Action, TtlError> {
        let options = DeleteOptions::foreground()
            .with_uid(cached.uid())
            .with_resource_version(cached.resource_version());
        match self.api_for(key).delete(key.name(), &options).await {
            Ok(_) => Ok(self.deleted(key, cached.uid(), expired_at)),
            Err(e) if e.is_not_found() => Ok(Action::Done),
            Err(e) if e.is_conflict() => {
                tracing::debug!(kind = K::KIND, %key, "changed since it was cached; reading it fresh");
                self.delete_after_fresh_read(key).await
            }
            Err(source) => Err(self.api_error("delete", key, source)),
        }
    }

    /// Upstream's pattern: GET, judge again, delete with the fresh UID as precondition.
    async fn delete_after_fresh_read(&self, key: &ObjectKey) -> Result<Action, TtlError> {
        let fresh = match self.api_for(key).get_opt(key.name()).await {
            Ok(Some(fresh)) => fresh,
            Ok(None) => return Ok(Action::Done),
            Err(source) => return Err(self.api_error("get", key, source)),
        };
        let expired_at = match self.decide(key, &fresh, CopySource::Server)? {
            Step::Stop(action) => return Ok(action),
            Step::Delete(expired_at) => expired_at,
        };
        let options = DeleteOptions::foreground().with_uid(fresh.uid());
        match self.api_for(key).delete(key.name(), &options).await {
            Ok(_) => Ok(self.deleted(key, fresh.uid(), expired_at)),
            Err(e) if e.is_not_found() => Ok(Action::Done),
            Err(e) if e.is_conflict() => {
                tracing::info!(kind = K::KIND, %key, "re-created while being deleted; leaving the new object to its own events");
                Ok(Action::Done)
            }
            Err(source) => Err(self.api_error("delete", key, source)),
        }
    }

    fn deleted(
        &self,
        key: &ObjectKey,
        uid: &str,
        expired_at: chrono::DateTime<chrono::Utc>,
    ) -> Action {
        let latency = (self.clock.now() - expired_at)
            .to_std()
            .map(|d| d.as_secs_f64())
            .unwrap_or(0.0);
        self.metrics.observe_deletion(K::KIND, latency);
        tracing::info!(
            controller = K::CONTROLLER,
            kind = K::KIND,
            namespace = key.namespace().unwrap_or(""),
            name = key.name(),
            uid,
            policy = "Foreground",
            reason = "its ttlSecondsAfterFinished expired",
            %expired_at,
            latency_seconds = latency,
            "deleted"
        );
        Action::Done
    }

    fn api_error(
        &self,
        verb: &'static str,
        key: &ObjectKey,
        source: crate::client::Error,
    ) -> TtlError {
        self.metrics.observe_error(K::KIND, ErrorReason::Api);
        TtlError::Api {
            kind: K::KIND,
            verb,
            key: key.clone(),
            source,
        }
    }
}

impl<K: TtlKind> Reconciler<ObjectKey> for TtlReconciler<K> {
    type Error = TtlError;

    async fn reconcile(&self, key: &ObjectKey) -> Result<Action, TtlError> {
        let Some(cached) = self.cache.get(key) else {
            self.reported.lock().remove(key);
            return Ok(Action::Done);
        };
        let expired_at = match self.decide(key, &cached, CopySource::Cache)? {
            Step::Stop(action) => return Ok(action),
            Step::Delete(expired_at) => expired_at,
        };
        if self.dry_run {
            tracing::info!(kind = K::KIND, %key, %expired_at, "dry run: would delete now (TTL expired)");
            return Ok(Action::Done);
        }
        match self.fresh_read {
            FreshRead::OnConflict => self.delete_cached(key, &cached, expired_at).await,
            FreshRead::Always => self.delete_after_fresh_read(key).await,
        }
    }
}
