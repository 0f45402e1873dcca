//! One pass over one namespace: gather what is known, [`assess`] it, carry out the one next
//! step, and assess again, until the step is to wait, to retry, or done.
//!
//! Contract:
//! - A pass reads the namespace from the cache and its content from the index; what it lists
//!   itself overrides the index for the rest of the pass. What it asked and proved is kept in
//!   the namespace's [`Progress`] for the next pass.
//! - Before its first content deletion a pass reads the namespace from the server: content is
//!   deleted by namespace name, and the cache could lag behind a finalize and a re-creation
//!   under the same name (kube-controller-manager reads it at every sync for the same reason).
//! - Writes: deletions (what [`assess`] says, never more), a status write only when the
//!   conditions changed and the content is settled (no deletion on its way) — one that only
//!   moves a message not within [`conditions::MESSAGE_REFRESH`] of the last, the pass
//!   requeued for when it is due — and the finalize,
//!   with the resourceVersion of the copy judged — the one the status write answered, if it
//!   wrote — so the server refuses it if the namespace changed since. On that 409 the namespace
//!   is read again: gone, or another namespace by that name (another UID), and nothing is
//!   finalized; still ours, and the finalize is sent again with that copy (the content proofs
//!   still hold: nothing can be created in the namespace any more).
//! - `--dry-run`: everything is decided and logged, nothing is written.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use futures_util::future::join_all;

use super::conditions;
use super::decide::{
    assess, is_ours, Assessment, Blocker, Content, DeleteHow, Deletion, Failure, Inputs, Known,
    Next, Object, Progress, Subject,
};
use super::requests::{self, Answer};
use super::shared::{CachedNamespace, DiscoveryState, Shared};
use kube_gc_api::ObjectReference;
use kube_gc_client::{Error, ResourceRef};
use kube_gc_runtime::cache::ObjectKey;
use kube_gc_runtime::controller::{Action, Reconciler};
use kube_gc_runtime::events::{EventRecord, EventType};

/// Steps one pass may take before it yields (a pass normally takes two or three).
const MAX_STEPS: usize = 8;
/// Finalize attempts of one pass, each after a 409 and a fresh read.
const FINALIZE_ATTEMPTS: usize = 3;

/// Why a pass did not finish its namespace.
#[derive(Debug, thiserror::Error)]
pub enum NamespaceError {
    /// The API server could not serve a request: the namespace waits for it.
    #[error("the API server could not serve a request: {0}")]
    Unavailable(#[source] Error),
    /// A status write or a finalize failed.
    #[error("{0}")]
    Request(#[source] Error),
    /// The namespace cannot be finalized until discovery or a refused request succeeds.
    #[error("namespace {namespace} is blocked: {reasons}")]
    Blocked {
        /// The namespace.
        namespace: String,
        /// What blocks it.
        reasons: String,
    },
}

fn classify(error: Error) -> NamespaceError {
    if error.is_unavailable() {
        NamespaceError::Unavailable(error)
    } else {
        NamespaceError::Request(error)
    }
}

/// The namespace controller's [`Reconciler`].
pub struct NamespaceReconciler {
    shared: Arc<Shared>,
}

impl NamespaceReconciler {
    /// A reconciler over `shared`.
    pub fn new(shared: Arc<Shared>) -> NamespaceReconciler {
        NamespaceReconciler { shared }
    }
}

impl Reconciler<String> for NamespaceReconciler {
    type Error = NamespaceError;

    async fn reconcile(&self, name: &String) -> Result<Action, NamespaceError> {
        let shared = &*self.shared;
        let Some(cached) = shared.namespaces.get(&ObjectKey::cluster_scoped(name)) else {
            shared.forget(name);
            return Ok(Action::Done);
        };
        let subject = cached.subject();
        if !is_ours(&subject) {
            shared.forget(name);
            return Ok(Action::Done);
        }
        let mut pass = Pass {
            progress: shared.progress(name, &subject.uid),
            shared,
            subject,
            judged: cached,
            discovery: shared.latest_discovery(),
            failures: HashMap::new(),
            listed: HashMap::new(),
            blocked: Vec::new(),
            confirmed: false,
        };
        let result = pass.run().await;
        let Pass {
            subject,
            progress,
            blocked,
            ..
        } = pass;
        shared.save(&subject.name, &subject.uid, progress, blocked);
        result
    }

    fn server_unavailable(error: &NamespaceError) -> bool {
        matches!(error, NamespaceError::Unavailable(_))
    }
}

/// The sooner of two optional waits.
fn sooner(a: Option<Duration>, b: Option<Duration>) -> Option<Duration> {
    match (a, b) {
        (Some(a), Some(b)) => Some(a.min(b)),
        (a, b) => a.or(b),
    }
}

/// One pass's state.
struct Pass<'a> {
    shared: &'a Shared,
    subject: Subject,
    /// The copy of the namespace judged (the status write's answer once it wrote).
    judged: Arc<CachedNamespace>,
    discovery: Arc<DiscoveryState>,
    progress: Progress,
    /// Requests that failed this pass.
    failures: HashMap<ResourceRef, Failure>,
    /// What this pass listed (or, after deleting, knows to be unknown again).
    listed: HashMap<ResourceRef, Known>,
    /// What blocks the namespace, as the last assessment found.
    blocked: Vec<&'static str>,
    /// The server confirmed, this pass, that the namespace is the one judged and is being
    /// deleted.
    confirmed: bool,
}

impl Pass<'_> {
    async fn run(&mut self) -> Result<Action, NamespaceError> {
        for _ in 0..MAX_STEPS {
            let assessment = self.assess();
            tracing::debug!(namespace = %self.subject.name, next = ?assessment.next, "namespace assessed");
            self.blocked = assessment.blockers.iter().map(Blocker::reason).collect();
            self.blocked.sort_unstable();
            self.blocked.dedup();
            match assessment.next.clone() {
                Next::Nothing => return Ok(Action::Done),
                Next::Delete if self.shared.dry_run => {
                    for deletion in &assessment.delete {
                        tracing::info!(namespace = %self.subject.name, resource = %deletion.resource.path_name(), how = ?deletion.how, "dry run: would delete the namespace's objects of this resource");
                    }
                    return Ok(Action::Done);
                }
                Next::Delete => {
                    if !self.confirm().await? {
                        return Ok(Action::Done);
                    }
                    self.delete(&assessment.delete).await?;
                }
                Next::Prove {
                    rediscover,
                    resources,
                    emptied,
                } => {
                    if !emptied.is_empty() && !self.confirm().await? {
                        return Ok(Action::Done);
                    }
                    self.prove(rediscover, &resources, &emptied).await?;
                }
                Next::Wait { recheck } => {
                    let deferred = self.report(&assessment).await?;
                    return Ok(sooner(recheck, deferred).map_or(Action::Done, Action::RequeueAfter));
                }
                Next::WaitUntil(at) => {
                    let deferred = self.report(&assessment).await?;
                    let wait = (at - self.shared.clock.now()).to_std().unwrap_or_default();
                    return Ok(Action::RequeueAfter(
                        sooner(Some(wait), deferred).unwrap_or(wait),
                    ));
                }
                Next::Retry => {
                    // A write deferred here goes with the retry (the failure itself is news).
                    self.report(&assessment).await?;
                    return Err(NamespaceError::Blocked {
                        namespace: self.subject.name.clone(),
                        reasons: self.blocked.join(", "),
                    });
                }
                Next::Finalize => {
                    self.finalize(&assessment).await?;
                    return Ok(Action::Done);
                }
            }
        }
        Ok(Action::RequeueAfter(Duration::from_secs(1)))
    }

    fn content(&self) -> Vec<Content> {
        self.discovery
            .discovered
            .types
            .iter()
            .map(|kind| Content {
                known: self
                    .listed
                    .get(&kind.resource)
                    .cloned()
                    .unwrap_or_else(|| self.shared.index.known(&kind.resource, &self.subject.name)),
                failure: self.failures.get(&kind.resource).cloned(),
                kind: kind.clone(),
            })
            .collect()
    }

    fn assess(&self) -> Assessment {
        let content = self.content();
        assess(&Inputs {
            subject: &self.subject,
            discovered: &self.discovery.discovered,
            content: &content,
            progress: &self.progress,
            now: self.shared.clock.now(),
            finalize_delay: self.shared.finalize_delay,
        })
    }

    /// Reads the namespace from the server before the pass first deletes content. Content is
    /// deleted by namespace *name*: a cache that lags could still show as being deleted a
    /// namespace finalized and re-created under the same name since, whose content must not be
    /// touched. Gone, another UID, or not being deleted: `false`, and the pass stops. The copy
    /// read is the one judged from then on (the freshest, for the status write and the
    /// finalize).
    async fn confirm(&mut self) -> Result<bool, NamespaceError> {
        if self.confirmed {
            return Ok(true);
        }
        let name = &self.subject.name;
        let fresh = requests::get_namespace(&self.shared.client, name)
            .await
            .map_err(classify)?
            .and_then(|raw| CachedNamespace::from_raw(raw).ok());
        match fresh {
            Some(fresh) if fresh.subject().uid == self.subject.uid && is_ours(&fresh.subject()) => {
                self.judged = Arc::new(fresh);
                self.confirmed = true;
                Ok(true)
            }
            _ => {
                tracing::info!(namespace = %name, "the namespace is gone, re-created or no longer being deleted; its content is left alone");
                Ok(false)
            }
        }
    }

    /// Deletes what `deletions` name; records what was asked, and what failed.
    async fn delete(&mut self, deletions: &[Deletion]) -> Result<(), NamespaceError> {
        let namespace = self.subject.name.clone();
        for deletion in deletions {
            let resource = &deletion.resource;
            let client = &self.shared.client;
            let answer = match deletion.how {
                DeleteHow::Collection => {
                    requests::delete_collection(client, resource, &namespace).await
                }
                DeleteHow::EachListed => {
                    requests::delete_each(client, resource, &namespace, &self.progress.asked).await
                }
            }
            .map_err(NamespaceError::Unavailable)?;
            match answer {
                Answer::Done(objects) => {
                    tracing::info!(namespace, resource = %resource.path_name(), objects = objects.len(), "deleted the namespace's objects");
                    let held = objects
                        .iter()
                        .any(|o| o.holding_finalizers().next().is_some());
                    self.progress
                        .asked
                        .extend(objects.into_iter().map(|o| o.uid));
                    // What a LIST found where nothing watches: gone unless held, so listed
                    // again rather than waited for.
                    if matches!(self.listed.get(resource), Some(Known::Listed { .. })) && !held {
                        self.listed.insert(resource.clone(), Known::Unknown);
                    }
                }
                Answer::NotServed => {
                    self.listed
                        .insert(resource.clone(), Known::Cached(Vec::new()));
                }
                Answer::Failed(failure) => self.failed(resource, failure),
            }
        }
        Ok(())
    }

    /// Discovers again if asked, then LISTs one page of each of `resources`, and empties each
    /// of `emptied` (its answer is its proof).
    async fn prove(
        &mut self,
        rediscover: bool,
        resources: &[ResourceRef],
        emptied: &[ResourceRef],
    ) -> Result<(), NamespaceError> {
        if rediscover {
            let since = self.subject.deletion_timestamp.unwrap_or_default()
                + chrono::Duration::from_std(self.shared.finalize_delay)
                    .unwrap_or(chrono::Duration::zero());
            self.discovery = self.shared.discovery_since(since).await.map_err(classify)?;
            return Ok(());
        }
        let namespace = &self.subject.name;
        let client = &self.shared.client;
        let (pages, deleted) = futures_util::future::join(
            join_all(
                resources
                    .iter()
                    .map(|resource| requests::list_page(client, resource, namespace)),
            ),
            join_all(
                emptied
                    .iter()
                    .map(|resource| requests::delete_collection(client, resource, namespace)),
            ),
        )
        .await;
        let mut proofs = Vec::new();
        for (resource, answer) in emptied.iter().zip(deleted) {
            let answer = match answer.map_err(NamespaceError::Unavailable)? {
                Answer::Done(objects) => {
                    // What a finalizer holds stays, marked; everything else is gone.
                    let held: Vec<Object> = objects
                        .iter()
                        .filter(|o| o.holding_finalizers().next().is_some())
                        .map(|o| Object {
                            deleting: true,
                            ..o.clone()
                        })
                        .collect();
                    self.progress
                        .asked
                        .extend(objects.into_iter().map(|o| o.uid));
                    Answer::Done(Known::Listed {
                        objects: held,
                        more: false,
                    })
                }
                Answer::NotServed => Answer::NotServed,
                Answer::Failed(failure) => Answer::Failed(failure),
            };
            proofs.push((resource, Ok(answer)));
        }
        let now = self.shared.clock.now();
        let deadline = self.subject.deletion_timestamp.unwrap_or_default()
            + chrono::Duration::from_std(self.shared.finalize_delay)
                .unwrap_or(chrono::Duration::zero());
        for (resource, page) in resources.iter().zip(pages).chain(proofs) {
            let known = match page.map_err(NamespaceError::Unavailable)? {
                Answer::Done(known) => known,
                Answer::NotServed => Known::Listed {
                    objects: Vec::new(),
                    more: false,
                },
                Answer::Failed(failure) => {
                    self.failed(resource, failure);
                    continue;
                }
            };
            if let Known::Listed { objects, .. } = &known {
                if objects.is_empty() {
                    if super::decide::is_pods(resource) {
                        self.progress.pods_gone = true;
                    }
                    if now >= deadline {
                        self.progress.proven_empty.insert(resource.clone());
                    }
                }
            }
            self.listed.insert(resource.clone(), known);
        }
        Ok(())
    }

    fn failed(&mut self, resource: &ResourceRef, failure: Failure) {
        tracing::warn!(namespace = %self.subject.name, resource = %resource.path_name(), verb = failure.verb, forbidden = failure.forbidden, message = %failure.message, "namespace content request failed; the namespace is not finalized");
        self.failures.insert(resource.clone(), failure);
    }

    /// Writes the conditions when they changed and the content is settled; reports failures
    /// as Warning events. Answers how long until a write it deferred is due, if it deferred one.
    async fn report(
        &mut self,
        assessment: &Assessment,
    ) -> Result<Option<Duration>, NamespaceError> {
        self.warn(assessment);
        if !assessment.is_settled() {
            return Ok(None);
        }
        self.write_conditions(assessment).await
    }

    async fn write_conditions(
        &mut self,
        assessment: &Assessment,
    ) -> Result<Option<Duration>, NamespaceError> {
        let desired = conditions::desired(assessment);
        let current = &self.judged.namespace.status.conditions;
        if !conditions::worth_writing(current, &desired) {
            return Ok(None);
        }
        let now = self.shared.clock.now();
        let Some(merged) = conditions::merge(current, &desired, now) else {
            return Ok(None);
        };
        let last_write = self.progress.conditions_written_at;
        if let Some(due) = conditions::deferred_until(current, &desired, last_write, now) {
            return Ok(Some((due - now).to_std().unwrap_or_default()));
        }
        if self.shared.dry_run {
            tracing::info!(namespace = %self.subject.name, "dry run: would write the namespace's deletion conditions");
            return Ok(None);
        }
        self.progress.conditions_written_at = Some(now);
        match requests::write_conditions(&self.shared.client, &self.judged.namespace, &merged).await
        {
            Ok(written) => match CachedNamespace::from_raw(written) {
                Ok(written) => self.judged = Arc::new(written),
                Err(error) => {
                    tracing::warn!(namespace = %self.subject.name, %error, "the status write's answer does not decode")
                }
            },
            // Someone else wrote it meanwhile: the watch brings that copy, and a pass with it.
            Err(error) if error.is_conflict() => {
                tracing::debug!(namespace = %self.subject.name, "namespace changed during the status write")
            }
            Err(error) => return Err(classify(error)),
        }
        Ok(None)
    }

    /// One Warning event per kind of failure (the recorder aggregates repeats).
    fn warn(&self, assessment: &Assessment) {
        let discovery = assessment
            .failures()
            .any(|b| matches!(b, Blocker::DiscoveryFailed(_)));
        let requests = assessment
            .failures()
            .any(|b| matches!(b, Blocker::RequestFailed { .. }));
        if !discovery && !requests {
            return;
        }
        let desired = conditions::desired(assessment);
        for (failing, condition) in [(discovery, &desired[0]), (requests, &desired[2])] {
            if failing {
                self.shared.recorder.record(EventRecord {
                    regarding: self.reference(),
                    event_type: EventType::Warning,
                    reason: condition.type_.to_owned(),
                    message: condition.message.clone(),
                });
            }
        }
    }

    fn reference(&self) -> ObjectReference {
        ObjectReference {
            api_version: Some("v1".into()),
            kind: Some("Namespace".into()),
            name: Some(self.subject.name.clone()),
            uid: Some(self.subject.uid.clone()),
            ..ObjectReference::default()
        }
    }

    /// Removes `kubernetes` from `spec.finalizers` (see the module documentation).
    async fn finalize(&mut self, assessment: &Assessment) -> Result<(), NamespaceError> {
        let name = self.subject.name.clone();
        if self.kept_by_other_finalizers() {
            // It will stay after ours goes: its conditions must say all went.
            self.write_conditions(assessment).await?;
        }
        if self.shared.dry_run {
            tracing::info!(namespace = %name, "dry run: would finalize the namespace (its content is gone)");
            return Ok(());
        }
        for _ in 0..FINALIZE_ATTEMPTS {
            match requests::finalize(&self.shared.client, &self.judged.raw).await {
                Ok(_) => {
                    let after = self.shared.clock.now()
                        - self.subject.deletion_timestamp.unwrap_or_default();
                    tracing::info!(namespace = %name, after_seconds = after.num_milliseconds() as f64 / 1000.0, "namespace finalized: its content is gone");
                    self.shared
                        .metrics
                        .finalized(after.to_std().unwrap_or_default());
                    self.blocked.clear();
                    return Ok(());
                }
                Err(error) if error.is_not_found() => return Ok(()),
                Err(error) if error.is_conflict() => {
                    let fresh = requests::get_namespace(&self.shared.client, &name)
                        .await
                        .map_err(classify)?;
                    let Some(fresh) = fresh.and_then(|raw| CachedNamespace::from_raw(raw).ok())
                    else {
                        return Ok(());
                    };
                    let subject = fresh.subject();
                    if subject.uid != self.subject.uid {
                        tracing::info!(namespace = %name, "the namespace was re-created under the same name; the new one is not finalized");
                        return Ok(());
                    }
                    if !is_ours(&subject) {
                        return Ok(());
                    }
                    self.judged = Arc::new(fresh);
                }
                Err(error) => return Err(classify(error)),
            }
        }
        Ok(())
    }

    /// Whether finalizers other than ours keep the namespace once ours is gone.
    fn kept_by_other_finalizers(&self) -> bool {
        let namespace = &self.judged.namespace;
        !namespace.metadata.finalizers.is_empty()
            || namespace
                .spec
                .finalizers
                .iter()
                .any(|f| f != super::decide::KUBERNETES_FINALIZER)
    }
}

#[cfg(feature = "test-util")]
pub mod steps;
