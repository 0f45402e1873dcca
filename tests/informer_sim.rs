//! A shared informer with its reflector against the simulated API server: what handlers see as
//! objects are created, changed and deleted, and when a relist finds that an object vanished
//! while nobody was watching.
//!
//! Real sockets, tokio's paused clock: time advances only when every task waits, so the
//! reflector's back-off and watch timeouts cost no real time, and a sequence of server-side
//! changes with no `.await` between them happens, as far as the reflector can tell, at once.

mod client_support;

use std::sync::Arc;
use std::time::Duration;

use kube_gc::api::Job;
use kube_gc::client::Api;
use kube_gc::runtime::cache::{Cacheable, Deleted, Store};
use kube_gc::runtime::informer::{EventHandler, SharedInformer};
use kube_gc::runtime::reflector::{Reflector, ReflectorConfig};
use kube_gc::sim::{DeleteOptions, Propagation, SimConfig};
use serde_json::json;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use client_support::{job, jobs, start_with, unthrottled};

/// Virtual time: a bound on waits that would otherwise hang a broken test forever.
const PATIENCE: Duration = Duration::from_secs(600);

/// Writes each notification as `kind namespace/name`.
struct Recorder(mpsc::UnboundedSender<String>);

impl Recorder {
    fn record(&self, kind: &str, job: &Job) {
        let _ = self.0.send(format!("{kind} {}", job.cache_key()));
    }
}

impl EventHandler<Job> for Recorder {
    async fn on_add(&mut self, job: Arc<Job>) {
        self.record("add", &job);
    }
    async fn on_update(&mut self, _old: Arc<Job>, new: Arc<Job>) {
        self.record("update", &new);
    }
    async fn on_delete(&mut self, deleted: Deleted<Job>) {
        let kind = match deleted {
            Deleted::Observed(_) => "delete",
            Deleted::FinalStateUnknown(_) => "delete-unknown",
        };
        self.record(kind, deleted.object());
    }
}

async fn next_line(lines: &mut mpsc::UnboundedReceiver<String>) -> String {
    match tokio::time::timeout(PATIENCE, lines.recv()).await {
        Ok(Some(line)) => line,
        Ok(None) => panic!("the handler is gone"),
        Err(_) => panic!("no notification within {PATIENCE:?}"),
    }
}

async fn next_lines(lines: &mut mpsc::UnboundedReceiver<String>, n: usize) -> Vec<String> {
    let mut taken = Vec::with_capacity(n);
    for _ in 0..n {
        taken.push(next_line(lines).await);
    }
    taken
}

fn reflector_config() -> ReflectorConfig {
    ReflectorConfig {
        seed: Some(7),
        ..ReflectorConfig::default()
    }
}

fn background() -> DeleteOptions {
    DeleteOptions::propagation(Propagation::Background)
}

#[tokio::test(start_paused = true)]
async fn handlers_follow_watch_events_and_a_relist_after_a_restart() {
    // Client timeouts would fire on the paused clock while the server works.
    let harness = start_with(SimConfig::default(), unthrottled().without_timeouts()).await;
    let sim = &harness.sim;
    for name in ["a", "b", "c"] {
        sim.create(&jobs(), job("default", name)).unwrap();
    }

    let api: Api<Job> = Api::all(harness.client.clone());
    let informer = SharedInformer::builder("jobs.batch", Store::new())
        .reflector(Reflector::new(api, reflector_config()))
        .build();
    let (lines_tx, mut lines) = mpsc::unbounded_channel();
    informer.add_handler(Recorder(lines_tx));
    let shutdown = CancellationToken::new();
    let running = tokio::spawn(informer.clone().run(shutdown.clone()));

    // The initial list.
    tokio::time::timeout(PATIENCE, informer.synced().wait(&shutdown))
        .await
        .expect("synced in time")
        .expect("not cancelled");
    let mut initial = next_lines(&mut lines, 3).await;
    initial.sort();
    assert_eq!(initial, ["add default/a", "add default/b", "add default/c"]);

    // Watch events, in the order the server made the changes.
    sim.create(&jobs(), job("default", "d")).unwrap();
    let mut a = sim.get(&jobs(), Some("default"), "a").unwrap();
    a["metadata"]["labels"] = json!({"app": "changed"});
    sim.update(&jobs(), a).unwrap();
    sim.delete(&jobs(), Some("default"), "b", &background())
        .unwrap();
    assert_eq!(
        next_lines(&mut lines, 3).await,
        ["add default/d", "update default/a", "delete default/b"]
    );

    // A gap in the watch: the connection is cut, `c` is deleted and the API server restarts,
    // its watch cache starting after the deletion — with no `.await` in between, so the
    // reflector sees none of it — and the reflector, unable to resume, must relist.
    sim.drop_connections();
    sim.delete(&jobs(), Some("default"), "c", &background())
        .unwrap();
    sim.restart();

    // The relist finds `c` gone: its deletion was never observed, so the handler gets the last
    // state the cache knew, flagged as such.
    assert_eq!(next_line(&mut lines).await, "delete-unknown default/c");
    let cached: Vec<String> = {
        let mut keys: Vec<String> = informer
            .store()
            .keys()
            .iter()
            .map(|k| k.to_string())
            .collect();
        keys.sort();
        keys
    };
    assert_eq!(cached, ["default/a", "default/d"]);

    // And the informer watches again from the relist.
    sim.create(&jobs(), job("default", "e")).unwrap();
    assert_eq!(next_line(&mut lines).await, "add default/e");
    let metrics = informer
        .reflector_metrics()
        .expect("built with a reflector");
    assert!(metrics.snapshot().relists >= 1, "{:?}", metrics.snapshot());

    shutdown.cancel();
    running.await.unwrap();
    harness.sim.shutdown().await;
}
