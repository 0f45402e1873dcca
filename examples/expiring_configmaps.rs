//! # A whole controller: ConfigMaps that delete themselves when they expire
//!
//! ```sh
//! cargo run --example expiring_configmaps                        # against an embedded sim
//! cargo run --example expiring_configmaps -- --kubeconfig FILE   # against a cluster, until Ctrl-C
//! ```
//!
//! A ConfigMap annotated `example.kube-gc.io/expires-at: 2030-01-01T00:00:00Z` (any RFC 3339
//! time) is deleted once that time has come. The controller is kube-gc's runtime used the way
//! kube-gc's own controllers use it, in about a hundred lines (from `EXPIRES_AT` to the end of
//! `impl Reconciler`). Read in this order:
//!
//! 1. `ConfigMap`: the object, as much of it as the controller reads. The client needs no
//!    generated types: a struct with `metadata` and the [`Resource`] constants is enough.
//! 2. `expiry`: the decision, a pure function of the object and the time.
//! 3. `expiring_configmaps`: the wiring. An informer lists and watches ConfigMaps into its
//!    cache; its handler (`Schedule`) puts each annotated ConfigMap's key on the workqueue for
//!    the moment it is due (`add_after`), so nothing polls; [`Controller`] runs the workers.
//! 4. `Expirer::reconcile`: a worker's turn with one key. It re-reads the ConfigMap from the
//!    cache — it may have changed or gone since it was queued — decides again, and deletes with
//!    a UID precondition, so that a ConfigMap re-created under the same name meanwhile is never
//!    deleted by mistake. An error is retried with back-off by the worker loop.
//!
//! Then `main`: with no arguments, `on_sim` starts an embedded [`SimServer`] with four
//! ConfigMaps — expired, due in 2 s, not annotated, annotated with a malformed time — runs the
//! controller until the first two are gone, and prints what it did. The test at the bottom runs
//! the same scenario on tokio's paused clock, so the 2 s pass in no real time.
//!
//! Before: `crates/workqueue/examples/workqueue.rs`, `examples/informer.rs`. Next:
//! `src/controllers/ttl/`, the same shape with metrics, Events and an API server outage to live
//! through; `docs/runtime.md` ("Worker loop") explains the design.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use chrono::{DateTime, SecondsFormat, Utc};
use kube_gc::api::{DeleteOptions, HasMetadata, ObjectMeta, Resource};
use kube_gc::client::config::{ClientConfig, Environment, LoadOptions};
use kube_gc::client::{Api, Client, ClientOptions};
use kube_gc::clock::{SharedClock, SystemClock};
use kube_gc::runtime::cache::{Cacheable, ObjectKey, Store};
use kube_gc::runtime::controller::{Action, Controller, Reconciler};
use kube_gc::runtime::informer::{EventHandler, SharedInformer};
use kube_gc::runtime::reflector::ReflectorConfig;
use kube_gc::runtime::workqueue::WorkQueue;
use kube_gc::sim::Connect as _;
use kube_gc::sim::{Gvr, SimConfig, SimServer};
use serde::{Deserialize, Serialize};
use serde_json::json;
use tokio_util::sync::CancellationToken;

type Error = Box<dyn std::error::Error + Send + Sync>;

/// When a ConfigMap may be deleted, as an RFC 3339 time.
const EXPIRES_AT: &str = "example.kube-gc.io/expires-at";

/// A core/v1 ConfigMap, reduced to its metadata: the decoder skips `data` and every other field.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
struct ConfigMap {
    #[serde(default)]
    metadata: ObjectMeta,
}

impl HasMetadata for ConfigMap {
    fn metadata(&self) -> &ObjectMeta {
        &self.metadata
    }
    fn metadata_mut(&mut self) -> &mut ObjectMeta {
        &mut self.metadata
    }
}

/// Where ConfigMaps are served: `/api/v1/namespaces/{namespace}/configmaps`.
impl Resource for ConfigMap {
    const GROUP: &'static str = "";
    const VERSION: &'static str = "v1";
    const API_VERSION: &'static str = "v1";
    const KIND: &'static str = "ConfigMap";
    const PLURAL: &'static str = "configmaps";
    const NAMESPACED: bool = true;
}

/// What the annotation says about a ConfigMap at one moment.
#[derive(Debug, PartialEq)]
enum Expiry {
    /// Not annotated: never deleted.
    Never,
    /// Annotated with something that is not an RFC 3339 time: kept, and said so.
    Malformed(String),
    /// Due after this wait.
    In(Duration),
    /// Due now, or overdue.
    Due,
}

fn expiry(config_map: &ConfigMap, now: DateTime<Utc>) -> Expiry {
    let Some(text) = config_map.metadata.annotations.get(EXPIRES_AT) else {
        return Expiry::Never;
    };
    match DateTime::parse_from_rfc3339(text) {
        // A negative wait (already past) does not convert: that is "due".
        Ok(at) => match (at.with_timezone(&Utc) - now).to_std() {
            Ok(wait) if !wait.is_zero() => Expiry::In(wait),
            _ => Expiry::Due,
        },
        Err(e) => Expiry::Malformed(format!(
            "{EXPIRES_AT}: {text:?} is not an RFC 3339 time: {e}"
        )),
    }
}

/// The controller, wired and not started: informer → handler → workqueue → workers.
fn expiring_configmaps(client: Client, clock: SharedClock) -> Controller<ObjectKey, Expirer> {
    let api: Api<ConfigMap> = Api::all(client);
    let informer = SharedInformer::new("configmaps", api.clone(), ReflectorConfig::default());
    let queue = WorkQueue::new("expiring-configmaps");
    // The handler runs on the informer's task, so it holds its own handles on the queue and
    // the clock (both are cheap, shared clones).
    let schedule = Schedule {
        queue: queue.clone(),
        clock: Arc::clone(&clock),
    };
    informer.add_handler(schedule);
    let cache = Arc::clone(informer.store());
    let expirer = Expirer { cache, api, clock };
    // The controller starts the informer, waits for its initial list, then runs two workers
    // that take keys from the queue and call `Expirer::reconcile`.
    Controller::new("expiring-configmaps", queue, expirer)
        .workers(2)
        .informer(&informer)
}

/// The handler: queues an annotated ConfigMap's key for when it is due. Handlers must be quick
/// and never wait, so the decision whether to delete is left to a worker.
struct Schedule {
    queue: WorkQueue<ObjectKey>,
    clock: SharedClock,
}

impl EventHandler<ConfigMap> for Schedule {
    async fn on_add(&mut self, config_map: Arc<ConfigMap>) {
        self.schedule(&config_map);
    }
    async fn on_update(&mut self, _old: Arc<ConfigMap>, config_map: Arc<ConfigMap>) {
        self.schedule(&config_map);
    }
    // `on_delete` keeps its default, doing nothing: there is nothing left to delete.
}

impl Schedule {
    fn schedule(&self, config_map: &ConfigMap) {
        match expiry(config_map, self.clock.now()) {
            Expiry::Never => {}
            Expiry::In(wait) => self.queue.add_after(config_map.cache_key(), wait),
            // Due, or malformed: a worker deletes it, or says why it will not.
            _ => self.queue.add(config_map.cache_key()),
        }
    }
}

/// The reconciler: what a worker does with one key.
struct Expirer {
    cache: Arc<Store<ConfigMap>>,
    api: Api<ConfigMap>,
    clock: SharedClock,
}

impl Reconciler<ObjectKey> for Expirer {
    type Error = kube_gc::client::Error;

    async fn reconcile(&self, key: &ObjectKey) -> Result<Action, Self::Error> {
        let Some(config_map) = self.cache.get(key) else {
            return Ok(Action::Done); // Deleted since it was queued.
        };
        let now = self.clock.now();
        match expiry(&config_map, now) {
            Expiry::Never => return Ok(Action::Done), // Its annotation was removed.
            Expiry::Malformed(why) => {
                println!("{}  kept {key}: {why}", hms(now));
                return Ok(Action::Done);
            }
            // Moved later since it was queued (or the clock is a hair behind the queue's).
            Expiry::In(wait) => return Ok(Action::RequeueAfter(wait)),
            Expiry::Due => {}
        }
        // The UID precondition: if the ConfigMap in the cache was deleted and a new one made
        // under its name since, the server answers 409 Conflict instead of deleting the new one.
        let options = DeleteOptions::background().with_uid(config_map.uid());
        let api = self.api.within(key.namespace().unwrap_or_default());
        let result = api.delete(key.name(), &options).await;
        let now = hms(now);
        match result {
            Ok(_) => println!("{now}  deleted {key}: due"),
            Err(e) if e.is_not_found() => println!("{now}  {key}: deleted by someone else"),
            Err(e) if e.is_conflict() => println!("{now}  kept {key}: re-created since read"),
            Err(e) => return Err(e), // Retried after a back-off.
        }
        Ok(Action::Done)
    }
}

// ---- Running it ----

#[tokio::main]
async fn main() -> Result<(), Error> {
    match kubeconfig_argument()? {
        Some(path) => on_cluster(&path).await,
        None => on_sim(Arc::new(SystemClock), ClientOptions::default())
            .await
            .map(drop),
    }
}

/// `--kubeconfig FILE`, or nothing.
fn kubeconfig_argument() -> Result<Option<PathBuf>, Error> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match args.as_slice() {
        [] => Ok(None),
        [flag, path] if flag == "--kubeconfig" => Ok(Some(PathBuf::from(path))),
        _ => Err("usage: expiring_configmaps [--kubeconfig FILE]".into()),
    }
}

/// Runs the controller against the cluster `kubeconfig` points at until Ctrl-C.
async fn on_cluster(kubeconfig: &Path) -> Result<(), Error> {
    let config = ClientConfig::load(&LoadOptions::file(kubeconfig), &Environment::from_process())?;
    let client = Client::new(&config, &ClientOptions::default())?;
    let shutdown = CancellationToken::new();
    let controller = expiring_configmaps(client, Arc::new(SystemClock));
    let running = tokio::spawn(controller.run(shutdown.clone()));
    println!("deleting ConfigMaps annotated {EXPIRES_AT} when due; Ctrl-C to stop");
    tokio::signal::ctrl_c().await?;
    // Cancelling lets the workers finish the keys they hold, then stops everything.
    shutdown.cancel();
    running.await??;
    Ok(())
}

/// What the embedded scenario left behind.
#[derive(Debug)]
struct Outcome {
    /// `(name, when)` of each ConfigMap deleted, by the server's clock.
    deleted: Vec<(String, DateTime<Utc>)>,
    /// The names still there.
    kept: Vec<String>,
    /// When the scenario created the ConfigMaps.
    started: DateTime<Utc>,
}

/// Against an embedded simulated server whose clock is `clock`: four ConfigMaps, the controller
/// running until the two due ones are gone.
async fn on_sim(clock: SharedClock, options: ClientOptions) -> Result<Outcome, Error> {
    let sim = SimServer::start(SimConfig::default().with_clock(Arc::clone(&clock))).await?;
    let dir = tempfile::tempdir()?;
    let client = Client::new(
        &sim.client_config(&dir.path().join("kubeconfig"))?,
        &options,
    )?;
    let configmaps = Gvr::new("", "v1", "configmaps");
    let started = clock.now();
    let in_2s = started + Duration::from_secs(2);
    let stamp = |at: DateTime<Utc>| at.to_rfc3339_opts(SecondsFormat::Millis, true);
    for (name, expires_at) in [
        ("expired", Some(stamp(started - Duration::from_secs(3600)))),
        ("due-in-2s", Some(stamp(in_2s))),
        ("plain", None),
        ("malformed", Some("next tuesday".to_string())),
    ] {
        sim.create(&configmaps, config_map(name, expires_at.as_deref()))?;
        let annotation = expires_at.map_or("no annotation".to_string(), |at| format!("{at:?}"));
        println!("{}  created default/{name}: {annotation}", hms(started));
    }

    let shutdown = CancellationToken::new();
    let running = tokio::spawn(expiring_configmaps(client, clock).run(shutdown.clone()));
    for name in ["expired", "due-in-2s"] {
        // `wait_for` follows the server's changes: no polling, no sleeping.
        let gone = sim.wait_for(&configmaps, Some("default"), name, |cm| cm.is_none());
        tokio::time::timeout(Duration::from_secs(30), gone).await??;
    }
    shutdown.cancel();
    running.await??;

    let deleted = sim
        .deletions()
        .into_iter()
        .map(|d| (d.name, d.at))
        .collect();
    let kept = sim.list(&configmaps, Some("default"))?;
    let kept = kept.iter().filter_map(|cm| cm["metadata"]["name"].as_str());
    let outcome = Outcome {
        deleted,
        kept: kept.map(str::to_string).collect(),
        started,
    };
    for (name, at) in &outcome.deleted {
        let after = (*at - outcome.started).to_std().unwrap_or_default();
        println!("summary: default/{name} deleted {after:.1?} after the start");
    }
    println!("summary: still there: {}", outcome.kept.join(", "));
    sim.shutdown().await;
    Ok(outcome)
}

/// A time of day to print, to the millisecond.
fn hms(at: DateTime<Utc>) -> String {
    at.format("%H:%M:%S%.3f").to_string()
}

fn config_map(name: &str, expires_at: Option<&str>) -> serde_json::Value {
    let annotations = match expires_at {
        Some(at) => json!({ EXPIRES_AT: at }),
        None => json!({}),
    };
    json!({"apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": name, "namespace": "default", "annotations": annotations},
        "data": {"greeting": "hello"}})
}

#[cfg(test)]
mod tests {
    use super::*;
    use kube_gc::clock::TokioClock;

    /// On tokio's paused clock, read by the controller and the server alike (`TokioClock`): the
    /// queue's 2 s timer fires as soon as everything else waits, so the test takes no real time.
    /// Client timeouts are off because on a paused clock they would fire at once.
    #[tokio::test(start_paused = true)]
    async fn due_configmaps_are_deleted_on_time_and_the_others_kept() -> Result<(), Error> {
        let clock: SharedClock = Arc::new(TokioClock::from_system());
        let outcome = on_sim(clock, ClientOptions::default().without_timeouts()).await?;
        let mut deleted: Vec<&str> = outcome.deleted.iter().map(|(n, _)| n.as_str()).collect();
        deleted.sort_unstable();
        assert_eq!(deleted, ["due-in-2s", "expired"]);
        let mut kept = outcome.kept.clone();
        kept.sort_unstable();
        assert_eq!(kept, ["malformed", "plain"]);
        // Not before its time, and not long after.
        for (name, at) in &outcome.deleted {
            let after = (*at - outcome.started).to_std().unwrap_or_default();
            match name.as_str() {
                "expired" => assert!(after < Duration::from_secs(1), "{after:?}"),
                _ => assert!(
                    (Duration::from_secs(2)..Duration::from_millis(2100)).contains(&after),
                    "{name} deleted {after:?} after the start"
                ),
            }
        }
        Ok(())
    }

    #[test]
    fn expiry_reads_the_annotation() {
        let now = Utc::now();
        let annotated = |text: &str| {
            let mut cm = ConfigMap::default();
            cm.metadata
                .annotations
                .insert(EXPIRES_AT.into(), text.into());
            cm
        };
        assert_eq!(expiry(&ConfigMap::default(), now), Expiry::Never);
        let past = (now - Duration::from_secs(1)).to_rfc3339();
        assert_eq!(expiry(&annotated(&past), now), Expiry::Due);
        let later = (now + Duration::from_secs(5)).to_rfc3339();
        assert_eq!(
            expiry(&annotated(&later), now),
            Expiry::In(Duration::from_secs(5))
        );
        assert!(matches!(
            expiry(&annotated("soon"), now),
            Expiry::Malformed(_)
        ));
    }
}
