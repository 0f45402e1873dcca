//! Helpers of the operations suites (`leader_*`, `events_*`, `deploy_*`): a simulated API server
//! with a client per candidate, candidates for the Lease, a TCP proxy that can stall a
//! candidate's connection, and a timeline of who led when.
#![allow(dead_code)]

use std::sync::Arc;
use std::time::Duration;

use kube_gc::client::config::ClientConfig;
use kube_gc::client::{Client, ClientOptions};
use kube_gc::leaderelection::{LeaderElectionConfig, LeaderElector, Leadership, Outcome};
use kube_gc::sim::Connect as _;
use kube_gc::sim::{SimConfig, SimServer};
use parking_lot::Mutex;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::watch;
use tokio::task::{JoinHandle, JoinSet};
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

/// The namespace and name of the Lease every test competes for.
pub const NAMESPACE: &str = "kube-system";
/// See [`NAMESPACE`].
pub const LEASE: &str = "kube-gc";

/// kube-controller-manager's timings.
pub const LEASE_DURATION: Duration = Duration::from_secs(15);
/// See [`LEASE_DURATION`].
pub const RENEW_DEADLINE: Duration = Duration::from_secs(10);
/// See [`LEASE_DURATION`].
pub const RETRY_PERIOD: Duration = Duration::from_secs(2);
/// The longest wait between two attempts while acquiring: `retry × (1 + 1.2)`.
pub const MAX_ACQUIRE_WAIT: Duration = Duration::from_millis(4_400);

/// A simulated server with the Lease's namespace, and the kubeconfig directory.
pub struct Cluster {
    /// The server.
    pub sim: SimServer,
    dir: tempfile::TempDir,
}

impl Cluster {
    /// A server with the default resources.
    pub async fn start() -> Cluster {
        let sim = SimServer::start(SimConfig::default().with_namespaces(&["default", NAMESPACE]))
            .await
            .unwrap();
        let dir = tempfile::tempdir().unwrap();
        Cluster { sim, dir }
    }

    /// The configuration a user would load, optionally pointed at `server` instead (a proxy).
    pub fn config(&self, server: Option<&str>) -> ClientConfig {
        let mut config = self
            .sim
            .client_config(&self.dir.path().join("kubeconfig"))
            .unwrap();
        if let Some(server) = server {
            config.server = server.parse().unwrap();
        }
        config
    }

    /// A client with user agent `name` (to tell candidates apart in the journal), unthrottled
    /// and without client-side timers (paused clock).
    pub fn client(&self, name: &str, server: Option<&str>) -> Client {
        let options = ClientOptions {
            user_agent: name.to_owned(),
            ..ClientOptions::default()
                .with_rate(0.0, 1)
                .without_timeouts()
        };
        Client::new(&self.config(server), &options).unwrap()
    }

    /// A client like [`Cluster::client`] but throttled at `qps` / `burst`, as `--kube-api-qps` /
    /// `--kube-api-burst` would; its components get buckets of their own from it.
    pub fn throttled_client(&self, name: &str, qps: f64, burst: u32) -> Client {
        let options = ClientOptions {
            user_agent: name.to_owned(),
            ..ClientOptions::default()
                .with_rate(qps, burst)
                .without_timeouts()
        };
        Client::new(&self.config(None), &options).unwrap()
    }

    /// The Lease's spec as the server holds it.
    pub fn lease_spec(&self) -> serde_json::Value {
        let leases = kube_gc::sim::Gvr::new("coordination.k8s.io", "v1", "leases");
        self.sim.get(&leases, Some(NAMESPACE), LEASE).unwrap()["spec"].clone()
    }

    /// Successful lease writes (POST or PUT) by user agent, in order: `(agent, holder)`.
    pub fn lease_writes(&self) -> Vec<(String, String)> {
        let prefix = format!("/apis/coordination.k8s.io/v1/namespaces/{NAMESPACE}/leases");
        self.sim
            .journal()
            .entries_for_path_prefix(&prefix)
            .into_iter()
            .filter(|e| matches!(e.method.as_str(), "POST" | "PUT") && e.status < 300)
            .map(|e| {
                let holder = e
                    .body
                    .as_ref()
                    .and_then(|b| b["spec"]["holderIdentity"].as_str())
                    .unwrap_or_default()
                    .to_owned();
                (
                    e.header("user-agent").unwrap_or_default().to_owned(),
                    holder,
                )
            })
            .collect()
    }
}

/// Who led, when: `(instant, candidate, leading)`, one entry per change.
#[derive(Clone, Default)]
pub struct Timeline {
    entries: Arc<Mutex<Vec<(Instant, String, bool)>>>,
}

impl Timeline {
    /// Every change so far.
    pub fn entries(&self) -> Vec<(Instant, String, bool)> {
        self.entries.lock().clone()
    }

    /// When `name` first started leading.
    pub fn started_leading(&self, name: &str) -> Option<Instant> {
        self.entries
            .lock()
            .iter()
            .find(|(_, n, leading)| n == name && *leading)
            .map(|(at, _, _)| *at)
    }

    /// Asserts that no two candidates ever led at once.
    pub fn assert_never_two_leaders(&self) {
        let mut leaders: Vec<String> = Vec::new();
        for (at, name, leading) in self.entries() {
            if leading {
                assert!(
                    leaders.is_empty(),
                    "{name} started leading at {at:?} while {leaders:?} still led"
                );
                leaders.push(name);
            } else {
                leaders.retain(|n| *n != name);
            }
        }
    }
}

/// A running candidate.
pub struct Candidate {
    /// Its identity.
    pub name: String,
    /// Cancel to stop it cleanly (releasing the lease).
    pub stop: CancellationToken,
    /// The elector's task.
    pub task: JoinHandle<Outcome>,
    /// The task recording its leadership into the timeline.
    recorder: JoinHandle<()>,
    /// Its leadership.
    pub leadership: kube_gc::leaderelection::LeadershipWatch,
}

impl Candidate {
    /// Starts candidate `name` on `client`, recording into `timeline`.
    pub fn start(name: &str, client: Client, timeline: &Timeline) -> Candidate {
        let config = LeaderElectionConfig {
            lease_duration: LEASE_DURATION,
            renew_deadline: RENEW_DEADLINE,
            retry_period: RETRY_PERIOD,
            ..LeaderElectionConfig::new(name).with_lease(NAMESPACE, LEASE)
        };
        let elector = LeaderElector::new(client, config).unwrap();
        let leadership = elector.subscribe();
        let mut changes = elector.subscribe();
        let stop = CancellationToken::new();
        let task = tokio::spawn(elector.run(stop.clone()));
        let entries = timeline.entries.clone();
        let owner = name.to_owned();
        let recorder = tokio::spawn(async move {
            let mut leading = false;
            loop {
                let now_leading = changes.current().is_leader();
                if now_leading != leading {
                    leading = now_leading;
                    entries
                        .lock()
                        .push((Instant::now(), owner.clone(), leading));
                }
                if matches!(changes.current(), Leadership::Stopped) || !changes.changed().await {
                    if leading {
                        entries.lock().push((Instant::now(), owner.clone(), false));
                    }
                    return;
                }
            }
        });
        Candidate {
            name: name.to_owned(),
            stop,
            task,
            recorder,
            leadership,
        }
    }

    /// Whether it leads now.
    pub fn is_leader(&self) -> bool {
        self.leadership.current().is_leader()
    }

    /// Kills it without releasing anything, as a crashed pod would.
    pub async fn kill(self) {
        self.task.abort();
        let _ = self.task.await;
        self.recorder.abort();
        let _ = self.recorder.await;
    }

    /// Waits for its elector to return.
    pub async fn outcome(self) -> Outcome {
        let outcome = self.task.await.unwrap();
        let _ = self.recorder.await;
        outcome
    }
}

/// Advances the paused clock in small steps until `done` holds, giving up after `limit`.
pub async fn wait_until(limit: Duration, mut done: impl FnMut() -> bool) -> Duration {
    let start = Instant::now();
    while !done() {
        assert!(
            start.elapsed() <= limit,
            "condition not met within {limit:?}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    start.elapsed()
}

/// A TCP proxy to the simulated server that can stop forwarding (a stalled network or a frozen
/// API server connection). Its tasks end when it is dropped.
pub struct StallingProxy {
    /// `http://127.0.0.1:port`.
    pub url: String,
    stalled: watch::Sender<bool>,
    _tasks: JoinSet<()>,
}

impl StallingProxy {
    /// A proxy to `target` (`host:port`).
    pub async fn start(target: String) -> StallingProxy {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        let stalled = watch::Sender::new(false);
        let mut tasks = JoinSet::new();
        let gate = stalled.subscribe();
        tasks.spawn(async move {
            let mut connections = JoinSet::new();
            while let Ok((inbound, _)) = listener.accept().await {
                let target = target.clone();
                let gate = gate.clone();
                connections.spawn(async move {
                    if let Ok(outbound) = TcpStream::connect(&target).await {
                        forward_both_ways(inbound, outbound, gate).await;
                    }
                });
            }
        });
        StallingProxy {
            url,
            stalled,
            _tasks: tasks,
        }
    }

    /// Stops forwarding bytes in either direction.
    pub fn stall(&self) {
        self.stalled.send_replace(true);
    }
}

async fn forward_both_ways(inbound: TcpStream, outbound: TcpStream, gate: watch::Receiver<bool>) {
    let (in_read, in_write) = inbound.into_split();
    let (out_read, out_write) = outbound.into_split();
    tokio::join!(
        forward(in_read, out_write, gate.clone()),
        forward(out_read, in_write, gate)
    );
}

async fn forward(
    mut from: tokio::net::tcp::OwnedReadHalf,
    mut to: tokio::net::tcp::OwnedWriteHalf,
    mut gate: watch::Receiver<bool>,
) {
    let mut buffer = vec![0u8; 16 * 1024];
    loop {
        let n = match from.read(&mut buffer).await {
            Ok(0) | Err(_) => return,
            Ok(n) => n,
        };
        // A stalled link holds the bytes forever.
        if gate.wait_for(|stalled| !*stalled).await.is_err() {
            return;
        }
        if to.write_all(&buffer[..n]).await.is_err() {
            return;
        }
    }
}
