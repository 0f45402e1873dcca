//! [`PvcProtection`]: removes `kubernetes.io/pvc-protection` from a claim being deleted once no
//! Pod uses it (kube-controller-manager's `pvc-protection`).
//!
//! Contract:
//! - Informers: claims and Pods (only what [`PodClaims::reads`] names, in protobuf), from the
//!   shared sources, in `--namespace` or everywhere; the Pod cache is indexed by the claims each
//!   Pod uses.
//! - Handlers queue a claim's **namespace** when the claim is being deleted and holds the
//!   finalizer, and when a Pod that uses such a claim changes or goes.
//! - A worker takes a namespace, finds its claims waiting for release, keeps those the cache
//!   shows in use ([`decide::claim_release`]), confirms the rest with one live LIST of the
//!   namespace's Pods (consistent, not from the watch cache), and releases those still unused
//!   ([`super::release`]). A claim the LIST shows in use waits for that Pod's next change.

use std::fmt;
use std::sync::Arc;

use super::decide::{claim_release, Release};
use super::facts::{ClaimFacts, PodClaims};
use super::{claim_resource, release, release_patch, Released, PVC_CONTROLLER, PVC_FINALIZER};
use crate::podgc::pod_resource;
use crate::settled::Settled;
use crate::wiring::Wiring;
use kube_gc_api::PartialObjectMetadata;
use kube_gc_client::{Api, Client, Error, ItemDecoder, ListParams, ResourceRef};
use kube_gc_runtime::cache::{Cacheable, Deleted, ObjectKey, Store};
use kube_gc_runtime::controller::{Action, Controller, ControllerError, Reconciler, ServerWait};
use kube_gc_runtime::informer::{EventHandler, InformerSynced, SharedInformer};
use kube_gc_runtime::reflector::{ReflectorConfig, ReflectorMetrics};
use kube_gc_runtime::sources::{SourceKey, Subscriber};
use kube_gc_runtime::workqueue::WorkQueue;

/// The workqueue's name, as upstream's.
pub const QUEUE: &str = "pvcprotection";
/// The `User-Agent` suffix of its requests, as upstream's.
pub const COMPONENT: &str = "pvc-protection-controller";
/// The Pod cache's index: `namespace/claim` of each claim a Pod uses.
const BY_CLAIM: &str = "claim";

/// A namespace whose claims may be released.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Namespace(pub String);

impl fmt::Display for Namespace {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "namespace {}", self.0)
    }
}

/// What the command line decides for both protection controllers.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ProtectionOptions {
    /// `--namespace`: one namespace's claims (the PV controller does not run then).
    pub namespace: Option<String>,
    /// `--dry-run`: decide and log, write nothing.
    pub dry_run: bool,
}

/// The PVC protection controller, wired and not started.
pub struct PvcProtection {
    controller: Controller<Namespace, PvcReconciler>,
    claims: Arc<Store<ClaimFacts>>,
    pods: Arc<Store<PodClaims>>,
    queue: WorkQueue<Namespace>,
    synced: Vec<InformerSynced>,
    reflectors: Vec<(ResourceRef, Arc<ReflectorMetrics>)>,
}

impl PvcProtection {
    /// Wires the controller over `client` (its own), reading through the wiring's sources, its
    /// queue reporting where the wiring says.
    ///
    /// # Panics
    ///
    /// Outside a Tokio runtime (registering a handler spawns its task).
    pub fn new(client: Client, wiring: &Wiring, options: &ProtectionOptions) -> PvcProtection {
        let queue = wiring.queue(QUEUE).build();
        let sources = &wiring.sources_or_own(&client, &ReflectorConfig::default());
        let scope = |resource| SourceKey {
            resource,
            namespace: options.namespace.clone(),
        };
        // Each informer holds the sources until it has subscribed: the controllers built beside
        // this one read the same resources, and the first list is to serve them all.
        let claims = SharedInformer::builder("persistentvolumeclaims", Store::new())
            .source_holding(
                sources,
                scope(claim_resource()),
                subscriber(ClaimFacts::decoder()),
                Some(sources.hold()),
            )
            .build();
        let pod_store = Store::builder().index(BY_CLAIM, claims_of).build();
        let pods = SharedInformer::builder("pods", pod_store)
            .source_holding(
                sources,
                scope(pod_resource()),
                subscriber(PodClaims::decoder()),
                Some(sources.hold()),
            )
            .build();
        let settled = Arc::new(Settled::default());
        claims.add_handler(OnClaims {
            queue: queue.clone(),
            settled: Arc::clone(&settled),
        });
        pods.add_handler(OnPods {
            claims: Arc::clone(claims.store()),
            queue: queue.clone(),
        });
        let reconciler = PvcReconciler {
            claims: Arc::clone(claims.store()),
            pods: Arc::clone(pods.store()),
            claim_api: Api::dynamic(client.clone(), claim_resource(), None),
            pod_api: Api::dynamic(client.clone(), pod_resource(), None),
            settled,
            dry_run: options.dry_run,
        };
        let synced = vec![claims.synced(), pods.synced()];
        let reflectors = [
            crate::reflector_of(claim_resource(), &claims),
            crate::reflector_of(pod_resource(), &pods),
        ]
        .into_iter()
        .flatten()
        .collect();
        let controller = Controller::new(PVC_CONTROLLER, queue.clone(), reconciler)
            .wait_for_server(client.availability().clone())
            .informer(&claims)
            .informer(&pods);
        PvcProtection {
            controller,
            claims: Arc::clone(claims.store()),
            pods: Arc::clone(pods.store()),
            queue,
            synced,
            reflectors,
        }
    }

    /// The claim and Pod caches' sync flags.
    pub fn synced(&self) -> Vec<InformerSynced> {
        self.synced.clone()
    }

    /// The cached claims.
    pub fn claims(&self) -> &Arc<Store<ClaimFacts>> {
        &self.claims
    }

    /// The cached Pods, as the claims they use.
    pub fn pods(&self) -> &Arc<Store<PodClaims>> {
        &self.pods
    }

    /// The reflector counters of its two informers, for `/metrics` and readiness.
    pub fn reflector_metrics(&self) -> &[(ResourceRef, Arc<ReflectorMetrics>)] {
        &self.reflectors
    }

    /// The workqueue.
    pub fn queue(&self) -> &WorkQueue<Namespace> {
        &self.queue
    }

    /// Where its keys wait while the API server is unavailable.
    pub fn server_wait(&self) -> Option<ServerWait<Namespace>> {
        self.controller.server_wait()
    }

    /// Runs until `shutdown` is cancelled, then drains and stops.
    ///
    /// # Errors
    ///
    /// [`ControllerError`] if a cache can never sync.
    pub async fn run(
        self,
        shutdown: tokio_util::sync::CancellationToken,
    ) -> Result<(), ControllerError> {
        self.controller.run(shutdown).await
    }
}

/// The two protection controllers' subscriber, whole objects decoded by `decoder`.
pub(super) fn subscriber<T>(decoder: ItemDecoder<T>) -> Subscriber<T> {
    Subscriber::objects("storage-protection", decoder)
}

/// The index function of the Pod cache.
fn claims_of(pod: &PodClaims) -> Vec<String> {
    let namespace = pod.key.namespace().unwrap_or_default();
    pod.all_claims()
        .map(|claim| format!("{namespace}/{claim}"))
        .collect()
}

/// Whether `claim` waits for this controller.
fn waiting(claim: &ClaimFacts) -> bool {
    claim.deleting && claim.finalizers.iter().any(|f| f == PVC_FINALIZER)
}

struct OnClaims {
    queue: WorkQueue<Namespace>,
    settled: Arc<Settled>,
}

impl OnClaims {
    fn check(&self, claim: &ClaimFacts) {
        if waiting(claim) {
            let namespace = claim.key.namespace().unwrap_or_default();
            self.queue.add(Namespace(namespace.to_owned()));
        }
    }
}

impl EventHandler<ClaimFacts> for OnClaims {
    async fn on_add(&mut self, claim: Arc<ClaimFacts>) {
        self.check(&claim);
    }

    async fn on_update(&mut self, _old: Arc<ClaimFacts>, claim: Arc<ClaimFacts>) {
        self.check(&claim);
    }

    async fn on_delete(&mut self, deleted: Deleted<ClaimFacts>) {
        self.settled.forget(&deleted.object().uid);
    }
}

struct OnPods {
    claims: Arc<Store<ClaimFacts>>,
    queue: WorkQueue<Namespace>,
}

impl OnPods {
    /// Queues `pod`'s namespace if a claim it uses waits for release.
    fn check(&self, pod: &PodClaims) {
        let namespace = pod.key.namespace().unwrap_or_default();
        let waits = pod.all_claims().any(|claim| {
            let key = ObjectKey::new(namespace, claim);
            self.claims.get(&key).is_some_and(|c| waiting(&c))
        });
        if waits {
            self.queue.add(Namespace(namespace.to_owned()));
        }
    }
}

impl EventHandler<PodClaims> for OnPods {
    async fn on_add(&mut self, pod: Arc<PodClaims>) {
        self.check(&pod);
    }

    async fn on_update(&mut self, old: Arc<PodClaims>, pod: Arc<PodClaims>) {
        // A Pod deleted and re-created under its name between two events: the old one may
        // have been what held a claim the new one does not use.
        if old.uid() != pod.uid() {
            self.check(&old);
        }
        self.check(&pod);
    }

    async fn on_delete(&mut self, deleted: Deleted<PodClaims>) {
        self.check(deleted.object());
    }
}

/// Why a namespace's claims could not be handled; retried with back-off.
#[derive(Debug, thiserror::Error)]
pub enum PvcError {
    /// The live LIST of the namespace's Pods failed.
    #[error("listing the pods of namespace {namespace}: {source}")]
    List {
        /// The namespace.
        namespace: String,
        /// Why.
        #[source]
        source: Error,
    },
    /// A release failed.
    #[error("releasing claim {claim}: {source}")]
    Release {
        /// The claim.
        claim: ObjectKey,
        /// Why.
        #[source]
        source: Error,
    },
}

struct PvcReconciler {
    claims: Arc<Store<ClaimFacts>>,
    pods: Arc<Store<PodClaims>>,
    claim_api: Api<PartialObjectMetadata>,
    pod_api: Api<PartialObjectMetadata>,
    /// Claims released whose deletion the cache has not seen yet.
    settled: Arc<Settled>,
    dry_run: bool,
}

impl Reconciler<Namespace> for PvcReconciler {
    type Error = PvcError;

    async fn reconcile(&self, key: &Namespace) -> Result<Action, PvcError> {
        let namespace = key.0.as_str();
        let unused: Vec<Arc<ClaimFacts>> = self
            .claims
            .list_namespace(namespace)
            .into_iter()
            .filter(|claim| waiting(claim) && !self.settled.contains(&claim.uid))
            .filter(|claim| {
                let users = self
                    .pods
                    .by_index(BY_CLAIM, &claim.key.to_string())
                    .unwrap_or_default();
                match claim_release(claim, PVC_FINALIZER, users.iter().map(Arc::as_ref)) {
                    Release::InUse(by) => {
                        tracing::debug!(controller = PVC_CONTROLLER, claim = %claim.key, %by,
                            "keeping the claim: in use");
                        false
                    }
                    Release::Release { .. } => true,
                    Release::NotCandidate => false,
                }
            })
            .collect();
        if unused.is_empty() {
            return Ok(Action::Done);
        }
        let live = self
            .pod_api
            .within(namespace)
            .pager_with(ListParams::default(), PodClaims::decoder())
            .collect()
            .await
            .map_err(|source| PvcError::List {
                namespace: namespace.to_owned(),
                source,
            })?
            .items;
        for claim in unused {
            self.release(&claim, &live).await?;
        }
        Ok(Action::Done)
    }

    fn server_unavailable(error: &PvcError) -> bool {
        match error {
            PvcError::List { source, .. } | PvcError::Release { source, .. } => {
                source.is_unavailable()
            }
        }
    }
}

impl PvcReconciler {
    /// Releases `claim` if no Pod of the live LIST uses it.
    async fn release(&self, claim: &ClaimFacts, live: &[PodClaims]) -> Result<(), PvcError> {
        let index = match claim_release(claim, PVC_FINALIZER, live) {
            Release::Release { index } => index,
            Release::InUse(by) => {
                tracing::info!(controller = PVC_CONTROLLER, claim = %claim.key, %by,
                    "keeping the claim: the server says it is in use");
                return Ok(());
            }
            Release::NotCandidate => return Ok(()),
        };
        let namespace = claim.key.namespace().unwrap_or_default();
        let patch = release_patch(&claim.uid, &claim.resource_version, PVC_FINALIZER, index);
        let api = self.claim_api.within(namespace);
        let released = release(&api, claim.key.name(), &patch, self.dry_run)
            .await
            .map_err(|source| PvcError::Release {
                claim: claim.key.clone(),
                source,
            })?;
        if released == Released::Released {
            self.settled.insert(&claim.uid);
        }
        super::report(
            PVC_CONTROLLER,
            "claim",
            &claim.key.to_string(),
            &claim.uid,
            released,
        );
        Ok(())
    }
}
