//! `kube-gc sim`: run the simulated Kubernetes API server on its own.
//!
//! Starts [`crate::sim::SimServer`], writes a kubeconfig pointing at it, prints how to reach it
//! and serves until Ctrl-C (or `--for` elapses). By default it holds a few sample objects — Jobs
//! finished, running and without a TTL, and a Volcano Job — so that `kubectl get jobs -A` has
//! something to show. It serves kube-gc's retention policies (`kubectl get rp,crp -A`), and with
//! `--workload-crds` also the presets' custom resources (Argo Workflows, Tekton runs, Kubeflow
//! training jobs, Spark applications, Ray jobs). The sim never garbage-collects anything itself.
//!
//! Two signals act on the running server, to try a client against what a real cluster does:
//! `SIGHUP` restarts the API server (every watch and connection ends, the watch caches are
//! rebuilt at the current revision, so watches from older versions get 410) and `SIGUSR1`
//! compacts etcd's history to the current revision (exact reads and continue tokens from
//! before get 410).

use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::path::{Path, PathBuf};
use std::time::Duration;

use chrono::{SecondsFormat, Utc};
use clap::Args;
use serde_json::{json, Value};

use crate::duration::parse_duration;
use crate::sim::resources::Gvr;
use crate::sim::{AggregatedDiscovery, SimConfig, SimError, SimServer};

/// Flags of `kube-gc sim`.
#[derive(Debug, Clone, Args)]
pub struct SimArgs {
    /// Address to listen on.
    #[arg(long, default_value_t = IpAddr::V4(Ipv4Addr::LOCALHOST))]
    pub bind_address: IpAddr,

    /// Port to listen on; 0 picks a free one.
    #[arg(long, default_value_t = 0)]
    pub port: u16,

    /// Serve HTTPS (HTTP/1.1 and h2) with a freshly generated CA, written into the kubeconfig
    /// (with an administrator's client certificate signed by it, unless --token is given).
    #[arg(long)]
    pub tls: bool,

    /// Require this bearer token on every request (written into the kubeconfig).
    #[arg(long, value_name = "TOKEN")]
    pub token: Option<String>,

    /// Where to write the kubeconfig for the server [default: <temp dir>/kube-gc-sim/kubeconfig].
    #[arg(long, value_name = "FILE")]
    pub kubeconfig_out: Option<PathBuf>,

    /// Start with no sample objects (only the default namespaces).
    #[arg(long)]
    pub empty: bool,

    /// Also serve the custom resources of the retention presets' workloads: argoproj.io
    /// workflows, tekton.dev pipelineruns and taskruns, kubeflow.org training jobs,
    /// sparkoperator.k8s.io sparkapplications and ray.io rayjobs.
    #[arg(long)]
    pub workload_crds: bool,

    /// Stop after this long (Go duration syntax: 30s, 5m); default: run until Ctrl-C.
    #[arg(long = "for", value_name = "DURATION", value_parser = parse_duration)]
    pub run_for: Option<Duration>,

    /// How often etcd's history is compacted (kube-apiserver's flag); 0 never compacts.
    #[arg(long, value_name = "DURATION", value_parser = parse_duration, default_value = "5m")]
    pub etcd_compaction_interval: Duration,

    /// The aggregated discovery `/api` and `/apis` answer, as a server of that release:
    /// `v2beta1` (v1.26-v1.29), `both` (v2 and v2beta1: v1.30-v1.32), `v2` (v1.33 and later),
    /// `none` (before v1.26: the legacy documents only).
    #[arg(long, value_name = "FORMS", default_value = "v2beta1", value_parser = parse_aggregated_discovery)]
    pub aggregated_discovery: AggregatedDiscovery,
}

/// `--aggregated-discovery`'s value.
fn parse_aggregated_discovery(name: &str) -> Result<AggregatedDiscovery, String> {
    AggregatedDiscovery::from_name(name).ok_or_else(|| {
        let names: Vec<&str> = AggregatedDiscovery::NAMES.iter().map(|(n, _)| *n).collect();
        format!("{name:?} is not one of {}", names.join(", "))
    })
}

/// Why `kube-gc sim` stopped with an error.
///
/// The sim's errors are boxed: [`SimError`] is large, and every `Result` on this path would
/// otherwise carry its size.
#[derive(Debug, thiserror::Error)]
pub enum SimCommandError {
    /// The server could not start.
    #[error("cannot start the simulated API server")]
    Start(#[source] Box<SimError>),
    /// The kubeconfig could not be written.
    #[error("cannot write the kubeconfig to {path}")]
    Kubeconfig {
        /// Where it was to be written.
        path: PathBuf,
        /// Why it failed.
        #[source]
        source: Box<SimError>,
    },
    /// The directory for the kubeconfig could not be created.
    #[error("cannot create the directory {path}")]
    KubeconfigDir {
        /// The directory.
        path: PathBuf,
        /// Why it failed.
        #[source]
        source: std::io::Error,
    },
    /// A sample object was refused by the server.
    #[error("cannot create the sample objects")]
    Samples(#[source] Box<SimError>),
    /// Waiting for Ctrl-C failed.
    #[error("cannot listen for Ctrl-C")]
    Signal(#[source] std::io::Error),
    /// The banner could not be written (not to a reader that went away: that is no error).
    #[error("cannot write the banner")]
    Output(#[source] std::io::Error),
}

/// Runs the server until Ctrl-C or `--for`.
pub async fn run(args: SimArgs) -> Result<(), SimCommandError> {
    let compaction = Some(args.etcd_compaction_interval).filter(|i| !i.is_zero());
    let mut config = SimConfig::default()
        .with_bind(SocketAddr::new(args.bind_address, args.port))
        .with_compaction_interval(compaction)
        .with_aggregated_discovery(args.aggregated_discovery);
    if args.tls {
        config = config.with_tls();
    }
    if args.workload_crds {
        config = config.with_workload_custom_resources();
    }
    if let Some(token) = &args.token {
        config = config.with_token(token.clone());
    }
    let server = SimServer::start(config)
        .await
        .map_err(|e| SimCommandError::Start(Box::new(e)))?;
    let kubeconfig = args
        .kubeconfig_out
        .clone()
        .unwrap_or_else(|| std::env::temp_dir().join("kube-gc-sim").join("kubeconfig"));
    write_kubeconfig(&server, &kubeconfig)?;
    if !args.empty {
        create_samples(&server).map_err(|e| SimCommandError::Samples(Box::new(e)))?;
    }
    // Installed before the banner invites `kill -HUP`: until a handler is installed, SIGHUP's
    // default action ends the process.
    let signals = Signals::install()?;
    super::output::print(&banner(&server, &kubeconfig, args.run_for))
        .map_err(SimCommandError::Output)?;

    let outcome = serve_until_stopped(&server, signals, args.run_for).await;
    server.shutdown().await;
    outcome
}

fn write_kubeconfig(server: &SimServer, path: &Path) -> Result<(), SimCommandError> {
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir).map_err(|source| SimCommandError::KubeconfigDir {
            path: dir.to_path_buf(),
            source,
        })?;
    }
    server
        .write_kubeconfig(path)
        .map_err(|source| SimCommandError::Kubeconfig {
            path: path.to_path_buf(),
            source: Box::new(source),
        })
}

/// What the server is and how to reach it, as printed once it serves.
fn banner(server: &SimServer, kubeconfig: &Path, run_for: Option<Duration>) -> String {
    let kubeconfig = kubeconfig.display();
    let until = match run_for {
        Some(limit) => format!("Stopping after {limit:?} (or on Ctrl-C)."),
        None => "Ctrl-C stops it.".to_owned(),
    };
    format!(
        "kube-gc simulated API server listening on {url}\n\
         kubeconfig written to {kubeconfig}\n\
         \n\
         Try, from another terminal:\n\
         \x20 kubectl --kubeconfig {kubeconfig} get jobs -A\n\
         \x20 kubectl --kubeconfig {kubeconfig} get --raw '/apis/batch/v1/jobs?watch=1&timeoutSeconds=5'\n\
         \n\
         This runs the simulated API server only; it collects no garbage itself. To run the \
         controllers against it:\n\
         \x20 kube-gc run --kubeconfig {kubeconfig} --leader-elect=false\n\
         kill -HUP {pid} restarts the API server (watches from older versions then get 410); \
         kill -USR1 {pid} compacts etcd.\n\
         {until}\n",
        url = server.url(),
        pid = std::process::id()
    )
}

/// A line about a signal handled. The server goes on serving its clients whether or not
/// anybody still reads its standard output.
fn say(line: &str) {
    let _ = super::output::print(&format!("{line}\n"));
}

/// The signals `kube-gc sim` answers besides Ctrl-C: SIGHUP (restart) and SIGUSR1 (compact).
struct Signals {
    hangup: tokio::signal::unix::Signal,
    user1: tokio::signal::unix::Signal,
}

impl Signals {
    fn install() -> Result<Signals, SimCommandError> {
        use tokio::signal::unix::{signal, SignalKind};
        Ok(Signals {
            hangup: signal(SignalKind::hangup()).map_err(SimCommandError::Signal)?,
            user1: signal(SignalKind::user_defined1()).map_err(SimCommandError::Signal)?,
        })
    }
}

/// Serves until Ctrl-C or `run_for`, restarting on SIGHUP and compacting on SIGUSR1.
async fn serve_until_stopped(
    server: &SimServer,
    signals: Signals,
    run_for: Option<Duration>,
) -> Result<(), SimCommandError> {
    let Signals {
        mut hangup,
        mut user1,
    } = signals;
    let deadline = async {
        match run_for {
            Some(limit) => tokio::time::sleep(limit).await,
            None => std::future::pending().await,
        }
    };
    tokio::pin!(deadline);
    loop {
        tokio::select! {
            signal = tokio::signal::ctrl_c() => return signal.map_err(SimCommandError::Signal),
            () = &mut deadline => return Ok(()),
            Some(()) = hangup.recv() => {
                server.restart();
                say(&format!("SIGHUP: API server restarted at resourceVersion {}", server.resource_version()));
            }
            Some(()) = user1.recv() => {
                server.compact();
                say(&format!("SIGUSR1: etcd compacted to resourceVersion {}", server.resource_version()));
            }
        }
    }
}

/// A handful of objects that show what kube-gc will act on: a finished Job whose TTL expires
/// soon, a running Job, a finished Job without a TTL, and a completed Volcano Job.
fn create_samples(server: &SimServer) -> Result<(), SimError> {
    let jobs = Gvr::new("batch", "v1", "jobs");
    let volcano_jobs = Gvr::new("batch.volcano.sh", "v1alpha1", "jobs");
    let now = Utc::now().to_rfc3339_opts(SecondsFormat::Secs, true);
    server.create(
        &Gvr::new("", "v1", "namespaces"),
        json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "demo"}}),
    )?;

    let finished = |condition: &str| json!({"conditions": [{"type": condition, "status": "True", "lastTransitionTime": now}]});
    let samples = [
        ("pi-finished-ttl-60", Some(60), Some(finished("Complete"))),
        ("pi-failed-ttl-0", Some(0), Some(finished("Failed"))),
        ("pi-running-ttl-60", Some(60), None),
        ("pi-finished-no-ttl", None, Some(finished("Complete"))),
    ];
    for (name, ttl, status) in samples {
        let created = server.create(&jobs, batch_job("demo", name, ttl))?;
        if let Some(status) = status {
            server.update_status(&jobs, with_status(created, status))?;
        }
    }

    let vcjob = server.create(
        &volcano_jobs,
        volcano_job("demo", "vc-completed-ttl-60", 60),
    )?;
    let state = json!({"state": {"phase": "Completed", "lastTransitionTime": now}});
    server.update_status(&volcano_jobs, with_status(vcjob, state))?;
    Ok(())
}

fn with_status(mut object: Value, status: Value) -> Value {
    object["status"] = status;
    object
}

fn batch_job(namespace: &str, name: &str, ttl: Option<u32>) -> Value {
    let mut job = json!({
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {
            "template": {"spec": {
                "restartPolicy": "Never",
                "containers": [{"name": "pi", "image": "perl:5.34.0",
                                "command": ["perl", "-Mbignum=bpi", "-wle", "print bpi(2000)"]}]
            }}
        }
    });
    if let Some(ttl) = ttl {
        job["spec"]["ttlSecondsAfterFinished"] = json!(ttl);
    }
    job
}

fn volcano_job(namespace: &str, name: &str, ttl: u32) -> Value {
    json!({
        "apiVersion": "batch.volcano.sh/v1alpha1",
        "kind": "Job",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {
            "ttlSecondsAfterFinished": ttl,
            "minAvailable": 1,
            "schedulerName": "volcano",
            "tasks": [{"name": "worker", "replicas": 1, "template": {"spec": {
                "restartPolicy": "Never",
                "containers": [{"name": "worker", "image": "busybox", "command": ["true"]}]
            }}}]
        }
    })
}
