//! [`PvProtection`]: removes `kubernetes.io/pv-protection` from a volume being deleted once no
//! claim is bound to it (kube-controller-manager's `pv-protection`).
//!
//! Contract:
//! - Informers: volumes and claims, from the shared sources (the claims' source is the PVC
//!   protection controller's too); the claim cache is indexed by `spec.volumeName`.
//! - Handlers queue the controller's one key ([`Volumes`]) when a volume is being deleted and
//!   holds the finalizer, and when a claim that may bind one goes or changes the volume it
//!   names.
//! - A worker takes the key, finds the volumes waiting for release, keeps those the cache shows
//!   bound ([`decide::volume_release`]), confirms the rest with one live LIST of every claim
//!   (consistent), and releases those still unbound ([`super::release`]).

use std::fmt;
use std::sync::Arc;

use super::decide::{volume_release, Release};
use super::facts::{ClaimFacts, VolumeFacts};
use super::pvc::subscriber;
use super::{
    claim_resource, release, release_patch, volume_resource, Released, PV_CONTROLLER, PV_FINALIZER,
};
use crate::settled::Settled;
use crate::wiring::Wiring;
use kube_gc_api::PartialObjectMetadata;
use kube_gc_client::{Api, Client, Error, ListParams, ResourceRef};
use kube_gc_runtime::cache::{Deleted, ObjectKey, Store};
use kube_gc_runtime::controller::{Action, Controller, ControllerError, Reconciler, ServerWait};
use kube_gc_runtime::informer::{EventHandler, InformerSynced, SharedInformer};
use kube_gc_runtime::reflector::{ReflectorConfig, ReflectorMetrics};
use kube_gc_runtime::sources::SourceKey;
use kube_gc_runtime::workqueue::WorkQueue;

/// The workqueue's name, as upstream's.
pub const QUEUE: &str = "pvprotection";
/// The `User-Agent` suffix of its requests, as upstream's.
pub const COMPONENT: &str = "pv-protection-controller";
/// The claim cache's index: the volume a claim names.
const BY_VOLUME: &str = "volume";

/// The controller's one key: the volumes waiting for release.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Volumes;

impl fmt::Display for Volumes {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("persistent volumes")
    }
}

/// The PV protection controller, wired and not started.
pub struct PvProtection {
    controller: Controller<Volumes, PvReconciler>,
    volumes: Arc<Store<VolumeFacts>>,
    claims: Arc<Store<ClaimFacts>>,
    queue: WorkQueue<Volumes>,
    synced: Vec<InformerSynced>,
    reflectors: Vec<(ResourceRef, Arc<ReflectorMetrics>)>,
}

impl PvProtection {
    /// Wires the controller over `client` (its own), reading through the wiring's sources, its
    /// queue reporting where the wiring says; `dry_run` writes nothing.
    ///
    /// # Panics
    ///
    /// Outside a Tokio runtime (registering a handler spawns its task).
    pub fn new(client: Client, wiring: &Wiring, dry_run: bool) -> PvProtection {
        let queue = wiring.queue(QUEUE).build();
        let sources = &wiring.sources_or_own(&client, &ReflectorConfig::default());
        // Each informer holds the sources until it has subscribed: the controllers built beside
        // this one read the same resources, and the first list is to serve them all.
        let volumes = SharedInformer::builder("persistentvolumes", Store::new())
            .source_holding(
                sources,
                SourceKey::all(volume_resource()),
                subscriber(VolumeFacts::decoder()),
                Some(sources.hold()),
            )
            .build();
        let claim_store = Store::builder().index(BY_VOLUME, volume_of).build();
        let claims = SharedInformer::builder("persistentvolumeclaims", claim_store)
            .source_holding(
                sources,
                SourceKey::all(claim_resource()),
                subscriber(ClaimFacts::decoder()),
                Some(sources.hold()),
            )
            .build();
        let settled = Arc::new(Settled::default());
        volumes.add_handler(OnVolumes {
            queue: queue.clone(),
            settled: Arc::clone(&settled),
        });
        claims.add_handler(OnClaims {
            volumes: Arc::clone(volumes.store()),
            queue: queue.clone(),
        });
        let reconciler = PvReconciler {
            volumes: Arc::clone(volumes.store()),
            claims: Arc::clone(claims.store()),
            volume_api: Api::dynamic(client.clone(), volume_resource(), None),
            claim_api: Api::dynamic(client.clone(), claim_resource(), None),
            settled,
            dry_run,
        };
        let synced = vec![volumes.synced(), claims.synced()];
        let reflectors = [
            crate::reflector_of(volume_resource(), &volumes),
            crate::reflector_of(claim_resource(), &claims),
        ]
        .into_iter()
        .flatten()
        .collect();
        let controller = Controller::new(PV_CONTROLLER, queue.clone(), reconciler)
            .wait_for_server(client.availability().clone())
            .informer(&volumes)
            .informer(&claims);
        PvProtection {
            controller,
            volumes: Arc::clone(volumes.store()),
            claims: Arc::clone(claims.store()),
            queue,
            synced,
            reflectors,
        }
    }

    /// The volume and claim caches' sync flags.
    pub fn synced(&self) -> Vec<InformerSynced> {
        self.synced.clone()
    }

    /// The cached volumes.
    pub fn volumes(&self) -> &Arc<Store<VolumeFacts>> {
        &self.volumes
    }

    /// The cached claims.
    pub fn claims(&self) -> &Arc<Store<ClaimFacts>> {
        &self.claims
    }

    /// The reflector counters of its two informers, for `/metrics` and readiness.
    pub fn reflector_metrics(&self) -> &[(ResourceRef, Arc<ReflectorMetrics>)] {
        &self.reflectors
    }

    /// The workqueue.
    pub fn queue(&self) -> &WorkQueue<Volumes> {
        &self.queue
    }

    /// Where its key waits while the API server is unavailable.
    pub fn server_wait(&self) -> Option<ServerWait<Volumes>> {
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

/// The index function of the claim cache.
fn volume_of(claim: &ClaimFacts) -> Vec<String> {
    if claim.volume_name.is_empty() {
        Vec::new()
    } else {
        vec![claim.volume_name.clone()]
    }
}

/// Whether `volume` waits for this controller.
fn waiting(volume: &VolumeFacts) -> bool {
    volume.deleting && volume.finalizers.iter().any(|f| f == PV_FINALIZER)
}

struct OnVolumes {
    queue: WorkQueue<Volumes>,
    settled: Arc<Settled>,
}

impl EventHandler<VolumeFacts> for OnVolumes {
    async fn on_add(&mut self, volume: Arc<VolumeFacts>) {
        if waiting(&volume) {
            self.queue.add(Volumes);
        }
    }

    async fn on_update(&mut self, _old: Arc<VolumeFacts>, volume: Arc<VolumeFacts>) {
        if waiting(&volume) {
            self.queue.add(Volumes);
        }
    }

    async fn on_delete(&mut self, deleted: Deleted<VolumeFacts>) {
        self.settled.forget(&deleted.object().uid);
    }
}

struct OnClaims {
    volumes: Arc<Store<VolumeFacts>>,
    queue: WorkQueue<Volumes>,
}

impl OnClaims {
    /// Queues the key if a volume waits for release: a claim that went or let go of a volume
    /// may have been what held it.
    fn check(&self) {
        if self.volumes.list().iter().any(|v| waiting(v)) {
            self.queue.add(Volumes);
        }
    }
}

impl EventHandler<ClaimFacts> for OnClaims {
    async fn on_update(&mut self, old: Arc<ClaimFacts>, claim: Arc<ClaimFacts>) {
        if old.volume_name != claim.volume_name || old.uid != claim.uid {
            self.check();
        }
    }

    async fn on_delete(&mut self, _deleted: Deleted<ClaimFacts>) {
        self.check();
    }
}

/// Why the volumes could not be handled; retried with back-off.
#[derive(Debug, thiserror::Error)]
pub enum PvError {
    /// The live LIST of claims failed.
    #[error("listing every persistent volume claim: {0}")]
    List(#[source] Error),
    /// A release failed.
    #[error("releasing persistent volume {volume}: {source}")]
    Release {
        /// The volume.
        volume: String,
        /// Why.
        #[source]
        source: Error,
    },
}

struct PvReconciler {
    volumes: Arc<Store<VolumeFacts>>,
    claims: Arc<Store<ClaimFacts>>,
    volume_api: Api<PartialObjectMetadata>,
    claim_api: Api<PartialObjectMetadata>,
    /// Volumes released whose deletion the cache has not seen yet.
    settled: Arc<Settled>,
    dry_run: bool,
}

impl Reconciler<Volumes> for PvReconciler {
    type Error = PvError;

    async fn reconcile(&self, _key: &Volumes) -> Result<Action, PvError> {
        let unbound: Vec<Arc<VolumeFacts>> = self
            .volumes
            .list()
            .into_iter()
            .filter(|volume| waiting(volume) && !self.settled.contains(&volume.uid))
            .filter(|volume| {
                match volume_release(
                    volume,
                    PV_FINALIZER,
                    self.cached_claims(volume).iter().map(Arc::as_ref),
                ) {
                    Release::InUse(by) => {
                        tracing::debug!(controller = PV_CONTROLLER, volume = %volume.name, %by,
                        "keeping the volume: bound");
                        false
                    }
                    Release::Release { .. } => true,
                    Release::NotCandidate => false,
                }
            })
            .collect();
        if unbound.is_empty() {
            return Ok(Action::Done);
        }
        let live = self
            .claim_api
            .pager_with(ListParams::default(), ClaimFacts::decoder())
            .collect()
            .await
            .map_err(PvError::List)?
            .items;
        for volume in unbound {
            self.release(&volume, &live).await?;
        }
        Ok(Action::Done)
    }

    fn server_unavailable(error: &PvError) -> bool {
        match error {
            PvError::List(source) | PvError::Release { source, .. } => source.is_unavailable(),
        }
    }
}

impl PvReconciler {
    /// The cached claims that may bind `volume`: those naming it, and the one its `claimRef`
    /// names.
    fn cached_claims(&self, volume: &VolumeFacts) -> Vec<Arc<ClaimFacts>> {
        let mut claims = self
            .claims
            .by_index(BY_VOLUME, &volume.name)
            .unwrap_or_default();
        if let Some(reference) = &volume.claim_ref {
            let key = ObjectKey::new(&reference.namespace, &reference.name);
            claims.extend(self.claims.get(&key));
        }
        claims
    }

    /// Releases `volume` if no claim of the live LIST binds it.
    async fn release(&self, volume: &VolumeFacts, live: &[ClaimFacts]) -> Result<(), PvError> {
        let index = match volume_release(volume, PV_FINALIZER, live) {
            Release::Release { index } => index,
            Release::InUse(by) => {
                tracing::info!(controller = PV_CONTROLLER, volume = %volume.name, %by,
                    "keeping the volume: the server says it is bound");
                return Ok(());
            }
            Release::NotCandidate => return Ok(()),
        };
        let patch = release_patch(&volume.uid, &volume.resource_version, PV_FINALIZER, index);
        let released = release(&self.volume_api, &volume.name, &patch, self.dry_run)
            .await
            .map_err(|source| PvError::Release {
                volume: volume.name.clone(),
                source,
            })?;
        if released == Released::Released {
            self.settled.insert(&volume.uid);
        }
        super::report(PV_CONTROLLER, "volume", &volume.name, &volume.uid, released);
        Ok(())
    }
}
