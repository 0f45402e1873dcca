//! `kube-gc demo`: the real controllers, over HTTP, against the simulated API server holding a
//! realistic batch workload — then a check that they did exactly what they should.
//!
//! Contract: [`run`] starts a [`SimServer`] serving the workload CRDs too (Tekton among them),
//! fills it with the [`workload`] (Jobs and Volcano Jobs running, finishing over the next
//! seconds with short TTLs, without TTL, re-created under the same name, one whose TTL is
//! extended before it expires), the [`owners`] trees (Deployments → ReplicaSets → Pods, Jobs
//! with Pods) and the [`retention`] scene (standalone Pods under a `ClusterRetentionPolicy` with
//! a TTL — finished, finishing, running, one with its TTL extended by annotation, one with a
//! malformed annotation — and Tekton PipelineRuns of two Pipelines under a `RetentionPolicy`
//! with history limits) and the [`namespaces`] scene (namespaces with Pods on a live and on a
//! lost node, a Job with Pods, a claim in use, ConfigMaps, Secrets, custom resources, one held
//! by a finalizer, and one namespace that stays), starts the controller [`Manager`] — the TTL
//! controllers, the garbage collector, the namespace controller, the retention controller, the
//! pod garbage collector and PVC/PV protection — against it through a kubeconfig like any
//! cluster, deletes three Deployments Background, Foreground and Orphan and three namespaces
//! (and the lost node) once the controllers are ready, plays the workload's and the scenes'
//! changes on time ([`driver`], [`retention::Scene::drive`], [`namespaces::Scene::drive`]: a
//! kubelet, an archiver), shows a live [`progress`] line, and returns the [`Summary`] once
//! every expected deletion happened, every cascade settled, both policies report the expected
//! status, the deleted namespaces are gone and every trap has had its chance to spring (or a
//! deadline passed). Nothing is left running: the controllers drain, the server shuts down,
//! the temporary kubeconfig is removed.

pub mod driver;
pub mod explained;
pub mod namespaces;
pub mod owners;
pub mod progress;
pub mod retention;
mod row;
pub mod summary;
pub mod workload;

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use crate::client::{BuildError, Client, ClientOptions};
use crate::manager::{Manager, ManagerError, ManagerOptions};
use crate::sim::{Connect, ConnectError, SimConfig, SimError, SimServer};

pub use summary::Summary;
pub use workload::WorkloadSize;

use driver::Record;
use owners::OwnerTrees;
use progress::Progress;
use retention::{Scene, SceneRecord};
use workload::{Expect, NAMESPACE};

/// How the demo runs.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct DemoOptions {
    /// The workload's size and pace.
    pub size: WorkloadSize,
    /// The controllers' client rate limit (requests per second; 0 for none).
    pub qps: f64,
    /// The controllers' client burst.
    pub burst: u32,
    /// Show the live progress line.
    pub progress: bool,
}

/// Why the demo could not run, or found a wrong outcome.
#[derive(Debug, thiserror::Error)]
pub enum DemoError {
    /// The simulated server failed.
    #[error("simulated API server: {0}")]
    Sim(#[source] Box<SimError>),
    /// The kubeconfig for it could not be written or read.
    #[error("kubeconfig for the simulated server: {0}")]
    Config(#[from] ConnectError),
    /// Its temporary directory could not be made.
    #[error("temporary directory {path}: {source}")]
    TempDir {
        /// Where.
        path: PathBuf,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// The client could not be built.
    #[error("API client: {0}")]
    Client(#[from] BuildError),
    /// The controllers could not start or failed.
    #[error(transparent)]
    Manager(#[from] ManagerError),
    /// The outcome was not the expected one (the summary says what).
    #[error("the demo's outcome was wrong: {problems} problem(s)")]
    Failed {
        /// How many.
        problems: usize,
    },
}

impl From<SimError> for DemoError {
    fn from(error: SimError) -> Self {
        DemoError::Sim(Box::new(error))
    }
}

/// How long past the last expiry the demo waits for missing deletions before giving up.
const GRACE: Duration = Duration::from_secs(20);
/// How long the pod garbage collector waits for the lost node before its Pods go: upstream's
/// 40 s would outlast the demo.
const POD_GC_QUARANTINE: Duration = Duration::from_secs(2);

/// Runs the demo and returns what it found (see the module docs).
pub async fn run(options: DemoOptions) -> Result<Summary, DemoError> {
    let planned = workload::plan(&options.size);
    let scene = retention::plan(options.size.pods, options.size.spread, options.size.seed);
    let config = SimConfig::default()
        .with_workload_custom_resources()
        .with_namespaces(&[
            "default",
            "kube-system",
            NAMESPACE,
            retention::PODS_NAMESPACE,
        ])
        .with_journal_capacity((planned.len() + scene.len()) * 4 + 10_000);
    let sim = SimServer::start(config).await?;
    let dir = TempDir::new()?;
    let outcome = run_against(&sim, &dir, &planned, scene, options).await;
    sim.shutdown().await;
    outcome
}

async fn run_against(
    sim: &SimServer,
    dir: &TempDir,
    planned: &[workload::Planned],
    scene: Vec<retention::Item>,
    options: DemoOptions,
) -> Result<Summary, DemoError> {
    let mut record = Record::default();
    driver::create_all(sim, planned, &mut record)?;
    let trees = OwnerTrees::create(sim)?;
    let last_expiry = workload::last_expiry(planned).max(retention::last_expiry(&scene));
    let mut scene_record = SceneRecord::default();
    let scene = Scene::create(sim, scene, &mut scene_record)?;
    let manager_options = ManagerOptions {
        // The policies' status is part of the check; on the demo's timescale it cannot wait
        // the usual ten seconds.
        retention_status_interval: Duration::from_millis(500),
        pod_gc_quarantine: POD_GC_QUARANTINE,
        ..ManagerOptions::default()
    };
    let mut namespaces_record = namespaces::SceneRecord::default();
    let namespace_scene =
        namespaces::Scene::create(sim, manager_options.namespace_deletion_grace_period)?;

    let config = sim
        .kubeconfig_spec()
        .client_config(&dir.0.join("kubeconfig"))?;
    let client = Client::new(
        &config,
        &ClientOptions::default().with_rate(options.qps, options.burst),
    )?;
    let manager = Manager::new(client.clone(), manager_options);
    let metrics = Arc::clone(manager.ttl_metrics());
    let controllers = manager.start().await?;

    let start = Instant::now();
    // Every deletion the TTL controllers are to make: the workload's, and the owner trees'
    // expired Jobs (whose Pods the garbage collector then deletes).
    let expected = planned
        .iter()
        .filter(|p| p.expect == Expect::Deleted)
        .count()
        + owners::JOBS_WITH_PODS;
    let progress = Progress::new(controllers.progress_probes(), metrics, expected, start)
        .with_namespaces(namespace_scene.finalized(), namespace_scene.to_finalize());
    let readiness = controllers.readiness();
    let shutdown = CancellationToken::new();
    let running = tokio::spawn(controllers.run(shutdown.clone()));

    let played = async {
        // Deleted once the collector watches, so the cascades are seen happening.
        let _ = readiness.wait(&shutdown).await;
        trees.delete_owners(sim)?;
        namespace_scene.delete(sim, &mut namespaces_record)?;
        tokio::try_join!(
            driver::drive(sim, planned, start, &mut record),
            scene.drive(sim, start, &mut scene_record),
            namespace_scene.drive(sim, start, last_expiry + GRACE, &mut namespaces_record),
        )?;
        // Until every expected deletion happened, every cascade settled, the policies report
        // it and every trap had its chance, or too late.
        while start.elapsed() < last_expiry + GRACE {
            let done = progress.deleted() >= u64::try_from(expected).unwrap_or(u64::MAX)
                && trees.settled(sim)
                && scene.settled(sim, &scene_record)
                && namespace_scene.settled(sim);
            if done && start.elapsed() >= last_expiry {
                break;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        Ok::<(), DemoError>(())
    };
    let played = if options.progress {
        tokio::select! {
            played = played => played,
            // `show` redraws forever; the workload's end is what ends the `select!`.
            () = progress.show() => Ok(()),
        }
    } else {
        played.await
    };
    if options.progress {
        progress.finish();
    }
    shutdown.cancel();
    let stopped = running.await;
    played?;
    match stopped {
        Ok(result) => result.map_err(|e| DemoError::Manager(e.into()))?,
        Err(join) => tracing::error!(error = %join, "the controllers' task ended abnormally"),
    }

    let scenes = summary::Scenes {
        trees: &trees,
        retention: (&scene, &scene_record),
        namespaces: (&namespace_scene, &namespaces_record),
    };
    let mut summary = summary::check(sim, planned, &record, &scenes);
    summary.elapsed = start.elapsed();
    let (screens, problems) = explained::examples(sim, &client).await;
    summary.explained = screens;
    summary.problems.extend(problems);
    Ok(summary)
}

/// A private temporary directory, removed when dropped.
struct TempDir(PathBuf);

impl TempDir {
    fn new() -> Result<TempDir, DemoError> {
        let path = std::env::temp_dir().join(format!(
            "kube-gc-demo-{}-{}",
            std::process::id(),
            rand::random::<u32>()
        ));
        std::fs::create_dir_all(&path).map_err(|source| DemoError::TempDir {
            path: path.clone(),
            source,
        })?;
        Ok(TempDir(path))
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}
