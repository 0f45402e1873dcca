//! # An informer printing what happens to Jobs
//!
//! ```sh
//! cargo run --example informer                          # against an embedded simulated server
//! cargo run --example informer -- --kubeconfig FILE     # against a cluster, until Ctrl-C
//! ```
//!
//! A [`SharedInformer`] lists the Jobs of the cluster, then watches them, keeps a cache of them
//! current, and tells its handlers about every change: ADD, UPDATE (old and new) and DELETE.
//! This example's one handler only forwards what it is told to `main`, which prints it. Read in
//! this order:
//!
//! 1. `job_informer`: building the informer and registering the handler.
//! 2. `on_sim`: starting an embedded [`SimServer`] and a client for it, then changing Jobs one
//!    step at a time and waiting, after each step, for the event it causes (`expect`). A Job
//!    made before the informer starts arrives as an ADD from the initial list; the rest from
//!    the watch.
//! 3. `on_cluster`: the same informer on a real cluster (or on `kube-gc sim --kubeconfig-out
//!    FILE`, then `kubectl --kubeconfig FILE create job ...` in another terminal).
//!
//! The test at the bottom runs `on_sim` and checks the events, in under a second of real time.
//!
//! Before: `crates/workqueue/examples/workqueue.rs`. Next: `examples/expiring_configmaps.rs`,
//! where the handler puts keys on a workqueue instead of printing. The informer's design is in
//! `docs/runtime.md` ("Informer").

use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use kube_gc::api::Job;
use kube_gc::client::config::{ClientConfig, Environment, LoadOptions};
use kube_gc::client::{Api, Client, ClientOptions};
use kube_gc::runtime::cache::{Cacheable, Deleted};
use kube_gc::runtime::informer::{HandlerFns, SharedInformer};
use kube_gc::runtime::reflector::ReflectorConfig;
use kube_gc::sim::Connect as _;
use kube_gc::sim::{DeleteOptions, Gvr, Propagation, SimConfig, SimServer};
use serde_json::json;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

type Error = Box<dyn std::error::Error + Send + Sync>;

/// How long `on_sim` waits for each event before giving up (it comes within milliseconds).
const PATIENCE: Duration = Duration::from_secs(10);

#[tokio::main]
async fn main() -> Result<(), Error> {
    match kubeconfig_argument()? {
        Some(path) => on_cluster(&path).await,
        None => on_sim().await.map(drop),
    }
}

/// `--kubeconfig FILE`, or nothing.
fn kubeconfig_argument() -> Result<Option<PathBuf>, Error> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match args.as_slice() {
        [] => Ok(None),
        [flag, path] if flag == "--kubeconfig" => Ok(Some(PathBuf::from(path))),
        _ => Err("usage: informer [--kubeconfig FILE]".into()),
    }
}

/// What the informer told the handler about one Job.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Seen {
    event: &'static str,
    key: String,
    resource_version: String,
}

impl fmt::Display for Seen {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let (event, key, rv) = (self.event, &self.key, &self.resource_version);
        write!(f, "{event:<6} {key} (resourceVersion {rv})")
    }
}

/// An informer on the Jobs of every namespace, whose one handler sends each event to `events`.
///
/// Handlers run on the informer's tasks and must not block: sending on an unbounded channel
/// never does. The work happens on the other end of the channel.
fn job_informer(client: Client, events: mpsc::UnboundedSender<Seen>) -> SharedInformer<Job> {
    let api: Api<Job> = Api::all(client);
    let informer = SharedInformer::new("jobs.batch", api, ReflectorConfig::default());
    let (on_add, on_update, on_delete) = (events.clone(), events.clone(), events);
    // Each callback gets the object as the cache holds it, behind an `Arc`: no copy.
    informer.add_handler(
        HandlerFns::new()
            .on_add(move |job: Arc<Job>| tell(&on_add, "ADD", &job))
            .on_update(move |_old: Arc<Job>, new: Arc<Job>| tell(&on_update, "UPDATE", &new))
            // A deletion found by a relist rather than the watch carries the last state the
            // cache knew (`Deleted::FinalStateUnknown`); `object()` gives either.
            .on_delete(move |gone: Deleted<Job>| tell(&on_delete, "DELETE", gone.object())),
    );
    informer
}

fn tell(events: &mpsc::UnboundedSender<Seen>, event: &'static str, job: &Job) {
    let seen = Seen {
        event,
        key: job.cache_key().to_string(),
        resource_version: job.resource_version().to_string(),
    };
    // Fails only once `main` stopped listening, while shutting down: nothing to do then.
    let _ = events.send(seen);
}

/// Watches the cluster `kubeconfig` points at until Ctrl-C.
async fn on_cluster(kubeconfig: &Path) -> Result<(), Error> {
    let config = ClientConfig::load(&LoadOptions::file(kubeconfig), &Environment::from_process())?;
    let client = Client::new(&config, &ClientOptions::default())?;
    let (events, mut seen) = mpsc::unbounded_channel();
    let informer = job_informer(client, events);
    let shutdown = CancellationToken::new();
    let running = tokio::spawn(informer.run(shutdown.clone()));
    println!(
        "watching Jobs through {}; Ctrl-C to stop",
        kubeconfig.display()
    );
    let ctrl_c = tokio::signal::ctrl_c();
    tokio::pin!(ctrl_c);
    loop {
        tokio::select! {
            next = seen.recv() => match next {
                Some(next) => println!("{next}"),
                None => break,
            },
            stop = &mut ctrl_c => {
                stop?;
                break;
            }
        }
    }
    // Cancelling stops the reflector and the handler tasks; `run` returns when they have.
    shutdown.cancel();
    running.await?;
    Ok(())
}

/// Against an embedded simulated server: one Job listed, one created, updated, and the first
/// deleted. Returns the events seen, in order.
async fn on_sim() -> Result<Vec<Seen>, Error> {
    let sim = SimServer::start(SimConfig::default()).await?;
    // The client is configured the way a user's would be: from a kubeconfig file.
    let dir = tempfile::tempdir()?;
    let config = sim.client_config(&dir.path().join("kubeconfig"))?;
    let client = Client::new(&config, &ClientOptions::default())?;
    // The changes are made with the server's in-process API: someone else's doing, as far as
    // the informer knows.
    let jobs = Gvr::new("batch", "v1", "jobs");
    sim.create(&jobs, job("listed"))?;
    println!("sim: created default/listed before the informer starts");

    let (events, mut seen) = mpsc::unbounded_channel();
    let informer = job_informer(client, events);
    let shutdown = CancellationToken::new();
    let running = tokio::spawn(informer.run(shutdown.clone()));
    let mut log = Vec::new();
    expect(&mut seen, &mut log, "ADD", "default/listed").await?;

    sim.create(&jobs, job("created"))?;
    println!("sim: created default/created");
    expect(&mut seen, &mut log, "ADD", "default/created").await?;

    let mut created = sim.get(&jobs, Some("default"), "created")?;
    created["metadata"]["labels"] = json!({"stage": "two"});
    sim.update(&jobs, created)?;
    println!("sim: labelled default/created stage=two");
    expect(&mut seen, &mut log, "UPDATE", "default/created").await?;

    // Background: a Job deleted with the default options orphans its Pods, which asks the
    // garbage collector to remove an `orphan` finalizer first. None runs here, so the Job would
    // stay, marked with a deletionTimestamp: an UPDATE, not a DELETE.
    let background = DeleteOptions::propagation(Propagation::Background);
    sim.delete(&jobs, Some("default"), "listed", &background)?;
    println!("sim: deleted default/listed");
    expect(&mut seen, &mut log, "DELETE", "default/listed").await?;

    shutdown.cancel();
    running.await?;
    sim.shutdown().await;
    Ok(log)
}

/// A Job in `default` with the least a Job needs (the simulated server checks no more).
fn job(name: &str) -> serde_json::Value {
    json!({"apiVersion": "batch/v1", "kind": "Job",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {"template": {"spec": {"restartPolicy": "Never",
            "containers": [{"name": "main", "image": "busybox:1.36"}]}}}})
}

/// Waits for the next event, prints it, and checks it is `event` for `key`.
async fn expect(
    seen: &mut mpsc::UnboundedReceiver<Seen>,
    log: &mut Vec<Seen>,
    event: &str,
    key: &str,
) -> Result<(), Error> {
    let next = tokio::time::timeout(PATIENCE, seen.recv())
        .await
        .map_err(|_| format!("no event within {PATIENCE:?}; expected {event} {key}"))?
        .ok_or("the informer stopped")?;
    println!("{next}");
    if next.event != event || next.key != key {
        return Err(format!("expected {event} {key}, saw {next}").into());
    }
    log.push(next);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Real time: nothing here waits for a timer, so it takes milliseconds.
    #[tokio::test]
    async fn the_informer_reports_the_list_then_each_change_in_order() -> Result<(), Error> {
        let log = on_sim().await?;
        let events: Vec<(&str, &str)> = log.iter().map(|s| (s.event, s.key.as_str())).collect();
        assert_eq!(
            events,
            [
                ("ADD", "default/listed"),
                ("ADD", "default/created"),
                ("UPDATE", "default/created"),
                ("DELETE", "default/listed"),
            ]
        );
        // Each event carries the version it is about: the update is newer than the create.
        assert!(rv(&log[2]) > rv(&log[1]), "{log:?}");
        Ok(())
    }

    fn rv(seen: &Seen) -> u64 {
        seen.resource_version.parse().unwrap_or(0)
    }
}
