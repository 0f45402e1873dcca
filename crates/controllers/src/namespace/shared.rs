//! What the namespace controller's tasks share: the cached namespaces, the content index, the
//! latest discovery, and each namespace's [`Progress`] while it is deleted.
//!
//! Contract:
//! - [`CachedNamespace`] keeps each namespace whole as the server sent it: `/finalize` sends it
//!   back so, and a typed projection would drop what it does not model.
//! - The latest discovery is replaced, never edited; a pass that needs a discovery started
//!   after a given time ([`Shared::discovery_since`]) runs one — one at a time, so namespaces
//!   waiting together share it — and the monitors then follow it.
//! - A namespace's progress is keyed by name and UID: a namespace re-created under the same
//!   name starts from nothing.

use std::collections::HashMap;
use std::sync::Arc;

use chrono::{DateTime, Utc};
use parking_lot::{Mutex, RwLock};
use serde::Deserialize;
use serde_json::Value;
use tokio::sync::Notify;

use super::content::ContentIndex;
use super::decide::{ContentType, Discovered, FailedGroup, Progress, Subject};
use super::metrics::NamespaceMetrics;
use crate::garbagecollector::IGNORED_RESOURCES;
use kube_gc_api::{HasMetadata, Namespace, ObjectMeta};
use kube_gc_client::{Client, Discovery, Error, ResourceRef};
use kube_gc_core::clock::SharedClock;
use kube_gc_runtime::cache::Store;
use kube_gc_runtime::events::SharedRecorder;

/// A namespace as cached: typed, and whole as read.
#[derive(Clone, Debug)]
pub struct CachedNamespace {
    /// What the controller reads of it.
    pub namespace: Namespace,
    /// Every field as the server sent it.
    pub raw: Arc<Value>,
}

impl CachedNamespace {
    /// Both forms of the namespace in `raw`.
    pub fn from_raw(raw: Value) -> Result<CachedNamespace, serde_json::Error> {
        let namespace = Namespace::deserialize(&raw)?;
        Ok(CachedNamespace {
            namespace,
            raw: Arc::new(raw),
        })
    }

    /// Decodes one object's text (the informer's item decoder).
    pub fn decode(bytes: &[u8]) -> Result<CachedNamespace, serde_json::Error> {
        CachedNamespace::from_raw(serde_json::from_slice(bytes)?)
    }

    /// The namespace as the decisions see it.
    pub fn subject(&self) -> Subject {
        let meta = &self.namespace.metadata;
        Subject {
            name: meta.name.clone().unwrap_or_default(),
            uid: meta.uid.clone().unwrap_or_default(),
            deletion_timestamp: meta.deletion_timestamp.map(|t| t.0),
            spec_finalizers: self.namespace.spec.finalizers.clone(),
        }
    }
}

impl HasMetadata for CachedNamespace {
    fn metadata(&self) -> &ObjectMeta {
        &self.namespace.metadata
    }
    fn metadata_mut(&mut self) -> &mut ObjectMeta {
        &mut self.namespace.metadata
    }
}

/// One discovery, as namespace deletion and its monitors read it.
#[derive(Debug)]
pub struct DiscoveryState {
    /// What must be emptied, what failed, when it started.
    pub discovered: Discovered,
    /// The resources to monitor: listed, watched and deleted (Events aside).
    pub monitored: Vec<ResourceRef>,
    /// The groups whose discovery failed (their monitors are kept).
    pub failed_groups: Vec<String>,
    /// The discovery itself, to keep what failed groups served at the next one.
    pub raw: Arc<Discovery>,
}

impl DiscoveryState {
    /// Before the first discovery: nothing known, started at the epoch (never recent enough).
    pub fn empty() -> DiscoveryState {
        DiscoveryState {
            discovered: Discovered {
                types: Vec::new(),
                failed: Vec::new(),
                started: DateTime::<Utc>::UNIX_EPOCH,
            },
            monitored: Vec::new(),
            failed_groups: Vec::new(),
            raw: Arc::new(Discovery::default()),
        }
    }

    /// What `discovery`, started at `started`, says; group versions it could not read keep
    /// what `previous` knew of them (their content still has to go).
    pub fn of(
        discovery: Discovery,
        previous: &Discovery,
        started: DateTime<Utc>,
    ) -> DiscoveryState {
        let failed = failed_groups(&discovery);
        let discovery = discovery.keeping_failed_from(previous);
        let types = content_types(&discovery);
        let monitored = discovery
            .preferred()
            .filter(|r| r.resource.namespaced && r.is_deletable())
            .map(|r| r.resource.clone())
            .filter(|r| !IGNORED_RESOURCES.contains(&(r.group.as_str(), r.plural.as_str())))
            .collect();
        let mut failed_groups: Vec<String> = failed
            .iter()
            .map(|f| {
                f.group_version
                    .rsplit_once('/')
                    .map_or("", |(group, _)| group)
                    .to_owned()
            })
            .collect();
        failed_groups.dedup();
        DiscoveryState {
            discovered: Discovered {
                types,
                failed,
                started,
            },
            monitored,
            failed_groups,
            raw: Arc::new(discovery),
        }
    }
}

/// What namespace deletion must empty, by `discovery`: every namespaced resource served with
/// `list` and `delete`, in its preferred version, sorted, each once.
pub fn content_types(discovery: &Discovery) -> Vec<ContentType> {
    let mut types: Vec<ContentType> = discovery
        .preferred()
        .filter(|r| r.resource.namespaced && r.supports("list") && r.supports("delete"))
        .map(|r| ContentType {
            resource: r.resource.clone(),
            delete_collection: r.supports("deletecollection"),
        })
        .collect();
    types.sort();
    types.dedup_by(|a, b| {
        a.resource.group == b.resource.group && a.resource.plural == b.resource.plural
    });
    types
}

/// The group versions `discovery` could not read.
pub fn failed_groups(discovery: &Discovery) -> Vec<FailedGroup> {
    discovery
        .failures()
        .iter()
        .map(|f| FailedGroup {
            group_version: f.group_version.clone(),
            message: f.error.to_string(),
        })
        .collect()
}

/// A namespace's progress, and whose it is.
#[derive(Debug, Default)]
struct Tracked {
    uid: String,
    progress: Progress,
    blocked: Vec<&'static str>,
}

/// What the tasks share.
pub struct Shared {
    /// The controller's client (its own rate limiter and user agent).
    pub client: Client,
    /// Every namespace.
    pub namespaces: Arc<Store<CachedNamespace>>,
    /// What every namespace holds.
    pub index: Arc<ContentIndex>,
    /// The latest discovery.
    pub discovery: RwLock<Arc<DiscoveryState>>,
    /// Serializes the discoveries passes ask for.
    discovering: tokio::sync::Mutex<()>,
    /// Tells the monitors' task a newer discovery is in.
    pub rediscovered: Notify,
    progress: Mutex<HashMap<String, Tracked>>,
    /// Wall time.
    pub clock: SharedClock,
    /// Where Warning events go.
    pub recorder: SharedRecorder,
    /// The controller's metrics.
    pub metrics: NamespaceMetrics,
    /// `--namespace-deletion-grace-period`.
    pub finalize_delay: std::time::Duration,
    /// `--dry-run`: decide and log, write nothing.
    pub dry_run: bool,
}

impl Shared {
    /// Shared state with no discovery yet.
    #[allow(clippy::too_many_arguments)]
    pub fn new(
        client: Client,
        namespaces: Arc<Store<CachedNamespace>>,
        index: Arc<ContentIndex>,
        clock: SharedClock,
        recorder: SharedRecorder,
        metrics: NamespaceMetrics,
        finalize_delay: std::time::Duration,
        dry_run: bool,
    ) -> Shared {
        Shared {
            client,
            namespaces,
            index,
            discovery: RwLock::new(Arc::new(DiscoveryState::empty())),
            discovering: tokio::sync::Mutex::new(()),
            rediscovered: Notify::new(),
            progress: Mutex::new(HashMap::new()),
            clock,
            recorder,
            metrics,
            finalize_delay,
            dry_run,
        }
    }

    /// The latest discovery.
    pub fn latest_discovery(&self) -> Arc<DiscoveryState> {
        Arc::clone(&self.discovery.read())
    }

    /// A discovery started at or after `since`: the latest if it is, else a new one.
    pub async fn discovery_since(
        &self,
        since: DateTime<Utc>,
    ) -> Result<Arc<DiscoveryState>, Error> {
        let _one_at_a_time = self.discovering.lock().await;
        let latest = self.latest_discovery();
        if latest.discovered.started >= since {
            return Ok(latest);
        }
        self.rediscover().await
    }

    /// Runs discovery now and makes it the latest; the monitors' task is told.
    pub async fn rediscover(&self) -> Result<Arc<DiscoveryState>, Error> {
        let started = self.clock.now();
        let discovery = Discovery::run(&self.client).await?;
        let previous = self.latest_discovery();
        let state = Arc::new(DiscoveryState::of(discovery, &previous.raw, started));
        {
            let mut latest = self.discovery.write();
            if latest.discovered.started <= started {
                *latest = Arc::clone(&state);
            }
        }
        self.rediscovered.notify_one();
        Ok(state)
    }

    /// The progress of namespace `name` with `uid` (a fresh one if it is new or was another).
    pub fn progress(&self, name: &str, uid: &str) -> Progress {
        let mut all = self.progress.lock();
        let tracked = all.entry(name.to_owned()).or_default();
        if tracked.uid != uid {
            self.metrics.blocked_changed(&tracked.blocked, &[]);
            *tracked = Tracked {
                uid: uid.to_owned(),
                ..Tracked::default()
            };
        }
        tracked.progress.clone()
    }

    /// The progress of namespace `name` with `uid`, if a pass has recorded any — read only, for
    /// `/debug/explain`.
    pub fn progress_of(&self, name: &str, uid: &str) -> Option<Progress> {
        let all = self.progress.lock();
        all.get(name)
            .filter(|t| t.uid == uid)
            .map(|t| t.progress.clone())
    }

    /// Stores `progress` and the reasons it is blocked for, if the namespace is still `uid`.
    pub fn save(&self, name: &str, uid: &str, progress: Progress, blocked: Vec<&'static str>) {
        let mut all = self.progress.lock();
        if let Some(tracked) = all.get_mut(name).filter(|t| t.uid == uid) {
            self.metrics.blocked_changed(&tracked.blocked, &blocked);
            tracked.progress = progress;
            tracked.blocked = blocked;
        }
    }

    /// Forgets namespace `name`: it is gone, finalized, or no longer being deleted.
    pub fn forget(&self, name: &str) {
        if let Some(tracked) = self.progress.lock().remove(name) {
            self.metrics.blocked_changed(&tracked.blocked, &[]);
        }
    }

    /// Namespaces being deleted now whose `kubernetes` finalizer is still there.
    pub fn terminating(&self) -> Vec<String> {
        self.namespaces
            .list()
            .iter()
            .filter(|ns| super::decide::is_ours(&ns.subject()))
            .filter_map(|ns| ns.namespace.metadata.name.clone())
            .collect()
    }
}
