//! Helpers of the `tests/run_*.rs` suites: the real `kube-gc run` binary as a child process
//! (a replica), its JSON log collected as it is written, and the simulated cluster it runs
//! against.
#![allow(dead_code)]

use std::io::{BufRead, BufReader};
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::Duration;

use kube_gc::sim::{Gvr, SimServer};
use serde_json::{json, Value};
use tokio::time::Instant;

/// Leader election timings short enough for a test, valid as client-go requires
/// (lease > renew deadline > 1.2 × retry period).
pub const LEASE_DURATION: Duration = Duration::from_secs(2);
/// See [`LEASE_DURATION`].
pub const RETRY_PERIOD: Duration = Duration::from_millis(300);
/// The flags giving those timings.
pub const FAST_ELECTION: [&str; 3] = [
    "--leader-elect-lease-duration=2s",
    "--leader-elect-renew-deadline=1500ms",
    "--leader-elect-retry-period=300ms",
];

/// The Lease kube-gc competes for by default.
pub fn leases() -> Gvr {
    Gvr::new("coordination.k8s.io", "v1", "leases")
}

/// batch/v1 Jobs.
pub fn jobs() -> Gvr {
    Gvr::new("batch", "v1", "jobs")
}

/// core/v1 Pods.
pub fn pods() -> Gvr {
    Gvr::new("", "v1", "pods")
}

/// Creates a Job in `default` that finished an hour ago with TTL 0: expired at once.
pub fn create_expired_job(sim: &SimServer, name: &str) -> Value {
    let job = json!({"apiVersion": "batch/v1", "kind": "Job",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {"ttlSecondsAfterFinished": 0}});
    let mut job = sim.create(&jobs(), job).expect("create the job");
    job["status"] = json!({"conditions": [{"type": "Complete", "status": "True",
        "lastTransitionTime": "2026-01-01T00:00:00Z"}]});
    sim.update_status(&jobs(), job).expect("finish the job")
}

/// The Lease's holder now (`None` when there is no Lease or it is released).
pub fn lease_holder(sim: &SimServer) -> Option<String> {
    let lease = sim.get(&leases(), Some("kube-system"), "kube-gc").ok()?;
    let holder = lease["spec"]["holderIdentity"].as_str()?;
    (!holder.is_empty()).then(|| holder.to_owned())
}

/// Polls `done` every 20 ms until it holds or `limit` passes; the time it took, or `None`.
/// (The replicas are other processes on the real clock: polling is the only way to watch
/// them.)
pub async fn wait_until(limit: Duration, mut done: impl FnMut() -> bool) -> Option<Duration> {
    let start = Instant::now();
    while start.elapsed() < limit {
        if done() {
            return Some(start.elapsed());
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    None
}

/// A kubeconfig for the simulator, in a directory removed on drop.
pub struct Kubeconfig {
    dir: tempfile::TempDir,
}

impl Kubeconfig {
    /// Writes it.
    pub fn for_sim(sim: &SimServer) -> Kubeconfig {
        let dir = tempfile::tempdir().expect("temp dir");
        sim.write_kubeconfig(&dir.path().join("kubeconfig"))
            .expect("kubeconfig");
        Kubeconfig { dir }
    }

    /// Its path.
    pub fn path(&self) -> PathBuf {
        self.dir.path().join("kubeconfig")
    }
}

/// One `kube-gc run` process, logging JSON to a buffer the test reads.
pub struct Replica {
    /// Its host name (`HOSTNAME`), the prefix of its leader election identity.
    pub name: String,
    child: Child,
    log: Arc<Mutex<String>>,
    reader: Option<JoinHandle<()>>,
}

impl Replica {
    /// Starts `kube-gc --kubeconfig <path> <flags>` (`run`, the default subcommand, which the
    /// top-level logging flags need) as host `name`.
    pub fn start(name: &str, kubeconfig: &Path, flags: &[&str]) -> Replica {
        let mut child = Command::new(env!("CARGO_BIN_EXE_kube-gc"))
            .env("HOSTNAME", name)
            .args(["--logging-format=json", "--kubeconfig"])
            .arg(kubeconfig)
            .args(flags)
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("start kube-gc");
        let stderr = child.stderr.take().expect("piped stderr");
        let log = Arc::new(Mutex::new(String::new()));
        let sink = Arc::clone(&log);
        let reader = std::thread::spawn(move || {
            for line in BufReader::new(stderr).lines().map_while(Result::ok) {
                let mut log = sink.lock().expect("log lock");
                log.push_str(&line);
                log.push('\n');
            }
        });
        Replica {
            name: name.to_owned(),
            child,
            log,
            reader: Some(reader),
        }
    }

    /// Everything logged so far.
    pub fn log(&self) -> String {
        self.log.lock().expect("log lock").clone()
    }

    /// The JSON log lines whose message contains `needle`.
    pub fn log_lines(&self, needle: &str) -> Vec<Value> {
        self.log()
            .lines()
            .filter(|line| line.contains(needle))
            .filter_map(|line| serde_json::from_str(line).ok())
            .collect()
    }

    /// The plain-HTTP address the server bound, once it logged it.
    pub async fn http_address(&self) -> SocketAddr {
        let mut address = None;
        wait_until(Duration::from_secs(30), || {
            address = self
                .log_lines("serving health, metrics and debug endpoints")
                .iter()
                .find(|line| line["tls"] == json!(false))
                .and_then(|line| line["address"].as_str()?.parse().ok());
            address.is_some()
        })
        .await;
        address.unwrap_or_else(|| panic!("{} serves no HTTP:\n{}", self.name, self.log()))
    }

    /// Whether a request's `User-Agent` says it came from this replica.
    pub fn sent(&self, user_agent: Option<&str>) -> bool {
        user_agent.is_some_and(|agent| agent.contains(&format!("({}_", self.name)))
    }

    /// Sends SIGTERM.
    pub fn terminate(&self) {
        let status = Command::new("kill")
            .args(["-TERM", &self.child.id().to_string()])
            .status()
            .expect("send SIGTERM");
        assert!(status.success());
    }

    /// Kills it with SIGKILL: no clean-up, no Lease release.
    pub fn kill(&mut self) {
        self.child.kill().expect("SIGKILL");
    }

    /// Waits for it to exit (60 s at most); its status and log.
    pub fn wait(mut self) -> (ExitStatus, String) {
        let deadline = std::time::Instant::now() + Duration::from_secs(60);
        let status = loop {
            if let Some(status) = self.child.try_wait().expect("wait for kube-gc") {
                break status;
            }
            if std::time::Instant::now() > deadline {
                let _ = self.child.kill();
                panic!("{} did not exit:\n{}", self.name, self.log());
            }
            std::thread::sleep(Duration::from_millis(20));
        };
        if let Some(reader) = self.reader.take() {
            let _ = reader.join();
        }
        (status, self.log())
    }
}

impl Drop for Replica {
    fn drop(&mut self) {
        // A failing test must not leave a kube-gc running.
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A free local port for `--port` (bound, read, released).
pub fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("a free port")
}

/// Polls `/readyz` every 50 ms until it answers 200 or `limit` passes; its last answer.
pub async fn poll_readyz(
    client: &reqwest::Client,
    address: SocketAddr,
    limit: Duration,
) -> (u16, String, String) {
    let start = Instant::now();
    loop {
        let readyz = http_get(client, address, "/readyz").await;
        if readyz.0 == 200 || start.elapsed() >= limit {
            return readyz;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// `GET http://address/path` with `client`: status, content type, body.
pub async fn http_get(
    client: &reqwest::Client,
    address: SocketAddr,
    path: &str,
) -> (u16, String, String) {
    let response = client
        .get(format!("http://{address}{path}"))
        .send()
        .await
        .expect("request");
    let status = response.status().as_u16();
    let content_type = response
        .headers()
        .get("content-type")
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default()
        .to_owned();
    (status, content_type, response.text().await.expect("body"))
}
