//! `kube-gc run` (the default subcommand): connect to a cluster and run the garbage-collection
//! controllers until SIGINT or SIGTERM.
//!
//! Flags are named as kube-controller-manager's (and Volcano's, for `--worker-threads-for-gc`),
//! so an operator moving a controller out of kcm keeps their values.
//!
//! What a run wires together, in order:
//!
//! 1. one [`Metrics`] registry: the client reports `rest_client_*`, the manager's controllers
//!    `workqueue_*`, `ttl_after_finished_*`, `garbagecollector_*` and reflector counters;
//! 2. the HTTP server (`/healthz`, `/livez`, `/readyz`, `/metrics`, debug pages);
//! 3. the Event recorder the controllers report through;
//! 4. the controllers ([`Manager`]), built from discovery but not yet running;
//! 5. with `--leader-elect` (the default), a [`LeaderElector`]: the controllers run only while
//!    this replica leads, under the leading token.
//!
//! How it ends:
//! - SIGTERM/SIGINT: the controllers stop taking work and finish what they hold, for at most
//!   `--shutdown-grace-period`; then the Lease is released (so another replica takes over at
//!   once), the server and the recorder stop, and the process exits 0. A second signal exits 1
//!   at once ([`crate::shutdown`]).
//! - Leadership lost (renewals failed until the renew deadline): every controller is stopped at
//!   once, "leaderelection lost" is logged and the process exits 1, as kube-controller-manager
//!   does — a restarted process competes again from scratch.
//! - A controller failing: the others are stopped and the process exits 1.

use std::sync::Arc;
use std::time::Duration;

use clap::Args;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;
use url::Url;

use super::config::ConnectionArgs;
use super::logging::LogSink;
use super::notify::{NotifyArgs, NotifyFlagError};
use crate::client::config::{
    Auth, ClientConfig, ConfigError, Environment, LoadOptions, Origin, SystemRoots, TlsSettings,
};
use crate::client::outage::describe_failure;
use crate::client::{BuildError, Client, ClientOptions};
use crate::controllers::ttl::{FreshRead, DEFAULT_JOB_WORKERS, DEFAULT_VOLCANO_WORKERS};
use crate::duration::parse_duration;
use crate::events::{ApiEventRecorder, NoopRecorder, Reporter, SharedRecorder};
use crate::leaderelection::{
    hostname, unique_identity, InvalidConfig, LeaderElectionArgs, LeaderElectionConfig,
    LeaderElector, LeadershipWatch, Outcome, DEFAULT_LEASE_NAME, DEFAULT_LEASE_NAMESPACE,
};
use crate::manager::{
    ControllerFailed, ControllerSelection, ControllerSet, Manager, ManagerError, ManagerOptions,
    Readiness, SelectionError, DEFAULT_GC_WORKERS, DEFAULT_RETENTION_WORKERS,
    DEFAULT_TERMINATED_POD_THRESHOLD, KNOWN_CONTROLLERS,
};
use crate::metrics::Metrics;
use crate::server::{DelegatedAuth, Endpoints, Server, ServerError, ServerOptions};
use crate::shutdown::{drain_within, handle_signals, Drain, ShutdownArgs};

/// The component name in Events and in the `User-Agent`.
const COMPONENT: &str = "kube-gc";

/// Flags of `kube-gc run`.
#[derive(Debug, Clone, Args)]
pub struct RunArgs {
    #[command(flatten)]
    pub connection: ConnectionArgs,

    /// The API server's address; overrides the kubeconfig's server.
    #[arg(long, value_name = "URL")]
    pub master: Option<Url>,

    /// Controllers to run: `*` for all, a name to enable one, `-name` to disable one.
    /// Names: ttl-after-finished, volcano-job-ttl, garbagecollector, namespace, retention, podgc,
    /// pvc-protection, pv-protection (aliases: ttl-after-finished-controller,
    /// garbage-collector-controller, namespace-controller, pod-garbage-collector-controller,
    /// persistentvolumeclaim-protection-controller, persistentvolume-protection-controller). A
    /// controller whose resource the cluster does not serve is skipped (retention: the
    /// kube-gc.io CRDs), and the garbage collector, the namespace controller, retention, podgc
    /// and pv-protection under --namespace (they need every namespace).
    #[arg(long, value_name = "NAMES", value_delimiter = ',', default_value = "*")]
    pub controllers: Vec<String>,

    /// Jobs reconciled at once by the ttl-after-finished controller.
    #[arg(long, value_name = "N", default_value_t = DEFAULT_JOB_WORKERS)]
    pub concurrent_ttl_after_finished_syncs: usize,

    /// Volcano Jobs reconciled at once by the volcano-job-ttl controller.
    #[arg(long, value_name = "N", default_value_t = DEFAULT_VOLCANO_WORKERS)]
    pub worker_threads_for_gc: usize,

    /// Requests per second to the API server on average (0 disables throttling).
    #[arg(long, value_name = "QPS", default_value_t = 20.0)]
    pub kube_api_qps: f64,

    /// Requests allowed in a burst above --kube-api-qps.
    #[arg(long, value_name = "N", default_value_t = 30)]
    pub kube_api_burst: u32,

    /// Watch and clean up this namespace only (default: all namespaces).
    #[arg(short = 'n', long, value_name = "NAME")]
    pub namespace: Option<String>,

    /// Decide and log what would be deleted and when; delete nothing.
    #[arg(long)]
    pub dry_run: bool,

    /// When to GET a fresh copy of an expired object before deleting it: `on-conflict` (one
    /// request per deletion; the DELETE carries uid and resourceVersion preconditions) or
    /// `always` (upstream's GET then DELETE).
    #[arg(long, value_name = "MODE", default_value_t = FreshRead::OnConflict)]
    pub ttl_fresh_read: FreshRead,

    /// Objects the garbage collector handles at once (per queue: attempt-to-delete and
    /// attempt-to-orphan).
    #[arg(long, value_name = "N", default_value_t = DEFAULT_GC_WORKERS)]
    pub concurrent_gc_syncs: usize,

    /// Objects the retention controller handles at once.
    #[arg(long, value_name = "N", default_value_t = DEFAULT_RETENTION_WORKERS)]
    pub concurrent_retention_syncs: usize,

    /// Terminated Pods (Succeeded or Failed) kept before the pod garbage collector deletes the
    /// oldest; 0 keeps them all.
    #[arg(long, value_name = "N", default_value_t = DEFAULT_TERMINATED_POD_THRESHOLD)]
    pub terminated_pod_gc_threshold: usize,

    /// How often the garbage collector re-reads discovery to monitor new resources (CRDs) and
    /// stop monitoring removed ones.
    #[arg(long, value_name = "DURATION", value_parser = parse_duration, default_value = "30s")]
    pub gc_discovery_period: Duration,

    /// How long the garbage collector waits for every monitored resource's first list before
    /// its workers start anyway (decisions needing an unsynced resource are deferred).
    #[arg(long, value_name = "DURATION", value_parser = parse_duration, default_value = "30s")]
    pub gc_initial_sync_timeout: Duration,

    /// Namespaces the namespace controller deletes at once.
    #[arg(long, value_name = "N", default_value_t = crate::controllers::namespace::DEFAULT_WORKERS)]
    pub concurrent_namespace_syncs: usize,

    /// How often the namespace controller looks again at every namespace being deleted, whatever
    /// happened (it acts on events; this is a safety net; 0 disables it).
    #[arg(long, value_name = "DURATION", value_parser = parse_duration, default_value = "5m")]
    pub namespace_sync_period: Duration,

    /// The least time between a namespace's deletion and the removal of its kubernetes
    /// finalizer (kube-controller-manager's fixed 5 s: an API server of an HA control plane that
    /// has not seen the deletion yet could still admit a create). Content deletion starts at once.
    #[arg(long, value_name = "DURATION", value_parser = parse_duration, default_value = "5s")]
    pub namespace_deletion_grace_period: Duration,

    #[command(flatten, next_help_heading = "Notifications")]
    pub notify: NotifyArgs,

    #[command(flatten, next_help_heading = "Leader election")]
    pub leader_election: LeaderElectionArgs,

    #[command(flatten, next_help_heading = "Health, metrics and debug endpoints")]
    pub server: ServerOptions,

    #[command(flatten, next_help_heading = "Shutdown")]
    pub shutdown: ShutdownArgs,
}

/// Why `kube-gc run` stopped with an error.
#[derive(Debug, thiserror::Error)]
pub enum RunError {
    /// `--controllers` names something unknown, or enables nothing.
    #[error(transparent)]
    Controllers(#[from] SelectionError),
    /// A notification flag cannot be used.
    #[error(transparent)]
    Notify(#[from] NotifyFlagError),
    /// No usable connection configuration.
    #[error(transparent)]
    Config(#[from] ConfigError),
    /// The client could not be built from it.
    #[error("cannot build the API client: {0}")]
    Client(#[from] BuildError),
    /// The leader election flags are inconsistent.
    #[error(transparent)]
    LeaderElection(#[from] InvalidConfig),
    /// The HTTP server could not start.
    #[error(transparent)]
    Server(#[from] ServerError),
    /// The signal handlers could not be installed.
    #[error("cannot install the signal handlers: {0}")]
    Signals(#[source] std::io::Error),
    /// The controllers could not start or failed.
    #[error(transparent)]
    Manager(#[from] ManagerError),
    /// The Lease could not be renewed in time: another replica may lead by now.
    #[error("leaderelection lost")]
    LeadershipLost,
    /// The API server refused the credentials at start-up (401), or what they may do (403).
    #[error("the API server refused the credentials of {whose}: {source}")]
    CredentialsRefused {
        /// Whose credentials, and what kind (never their value).
        whose: String,
        /// The server's answer.
        #[source]
        source: crate::client::Error,
    },
    /// Nobody reads the log any more (`kube-gc run 2>&1 | head -1`): the controllers were
    /// stopped as on SIGTERM rather than run on with nobody told what they do.
    #[error("the log's reader went away; stopped")]
    LogClosed,
    /// A task of the process ended abnormally (a panic).
    #[error("the {task} task ended abnormally: {source}")]
    Task {
        /// Which task.
        task: &'static str,
        /// Its panic.
        #[source]
        source: tokio::task::JoinError,
    },
}

impl RunArgs {
    /// The manager's options from the flags.
    ///
    /// # Errors
    ///
    /// [`RunError::Controllers`] or [`RunError::Notify`] naming the flag at fault.
    pub fn manager_options(&self) -> Result<ManagerOptions, RunError> {
        Ok(ManagerOptions {
            controllers: ControllerSelection::parse(&self.controllers)?,
            namespace: self.namespace.clone(),
            dry_run: self.dry_run,
            fresh_read: self.ttl_fresh_read,
            job_ttl_workers: self.concurrent_ttl_after_finished_syncs,
            volcano_ttl_workers: self.worker_threads_for_gc,
            gc_workers: self.concurrent_gc_syncs,
            retention_workers: self.concurrent_retention_syncs,
            gc_discovery_period: self.gc_discovery_period,
            gc_initial_sync_timeout: self.gc_initial_sync_timeout,
            terminated_pod_gc_threshold: self.terminated_pod_gc_threshold,
            notify: self.notify.options()?,
            namespace_workers: self.concurrent_namespace_syncs,
            namespace_sync_period: self.namespace_sync_period,
            namespace_deletion_grace_period: self.namespace_deletion_grace_period,
            ..ManagerOptions::default()
        })
    }

    /// The client's options: the rate limit, request metrics into `metrics`, and a
    /// `User-Agent` naming this replica, so a server's audit log tells replicas apart.
    fn client_options(&self, identity: &str, metrics: &Metrics) -> ClientOptions {
        let mut options = ClientOptions::default()
            .with_rate(self.kube_api_qps, self.kube_api_burst)
            .with_observer(metrics.rest_client());
        options.user_agent = format!("{} ({identity})", options.user_agent);
        options
    }

    /// The connection configuration: kubeconfig / in-cluster as kubectl finds it, with the
    /// server replaced by `--master`; `--master` alone connects anonymously.
    fn client_config(&self) -> Result<ClientConfig, ConfigError> {
        let options = LoadOptions {
            kubeconfig: self.connection.kubeconfig.clone(),
            context: self.connection.context.clone(),
        };
        match (
            ClientConfig::load(&options, &Environment::from_process()),
            &self.master,
        ) {
            (Ok(mut config), Some(master)) => {
                config.server = master.clone();
                Ok(config)
            }
            (Ok(config), None) => Ok(config),
            (Err(ConfigError::NoConfiguration { .. }), Some(master)) => {
                Ok(anonymous_config(master.clone()))
            }
            (Err(error), _) => Err(error),
        }
    }
}

/// What kcm does with `--master` and no kubeconfig: that server, no credentials.
fn anonymous_config(server: Url) -> ClientConfig {
    ClientConfig {
        server,
        tls: TlsSettings::default(),
        proxy_url: None,
        disable_compression: false,
        auth: Auth::None,
        impersonation: Default::default(),
        default_namespace: "default".to_owned(),
        origin: Origin::Kubeconfig {
            context: String::new(),
            cluster: "--master".to_owned(),
            user: None,
            files: Vec::new(),
        },
        system_roots: SystemRoots::Native,
    }
}

/// Runs `kube-gc run` (see the module documentation) until a signal, or until nobody reads
/// `log` any more.
pub async fn run(args: RunArgs, log: LogSink) -> Result<(), RunError> {
    let options = args.manager_options()?;
    let config = args.client_config()?;
    let identity = unique_identity(&hostname());
    let election = election(&args, &options.controllers, &identity)?;
    let metrics = Metrics::new();
    let client = Client::new(&config, &args.client_options(&identity, &metrics))?;
    tracing::info!(server = %config.server, %identity, controllers = %args.controllers.join(","),
        known = %KNOWN_CONTROLLERS.join(","), leader_elect = election.is_some(), dry_run = args.dry_run,
        "starting kube-gc");

    let shutdown = CancellationToken::new();
    let signals = handle_signals(shutdown.clone()).map_err(RunError::Signals)?;
    let log_gone = stop_when_closed(log.clone(), shutdown.clone());
    // The server and the Event writer outlive the controllers: they stop last, on any path.
    let services = CancellationToken::new();
    let _stop_services = services.clone().drop_guard();
    let endpoints = Endpoints::new(metrics, args.server.enable_debug_handlers);
    // The secure port asks the API server who may read it, through a client of its own.
    let auth = DelegatedAuth::new(
        client.for_component("delegated-auth", 1.0),
        args.server.auth_options(),
    );
    let server = Server::start(
        &args.server.listeners(),
        endpoints.clone(),
        Some(Arc::new(auth)),
        services.clone(),
    )
    .await?;
    let (recorder, events) = event_recorder(&args, &client, identity, &services);

    // Discovery is retried at start-up while the server fails it; a signal ends the wait.
    let manager = Manager::new(client.clone(), options)
        .recorder(recorder)
        .publish_to(&endpoints);
    let started = tokio::select! {
        started = manager.start() => Some(started),
        () = shutdown.cancelled() => None,
    };
    let grace = args.shutdown.grace_period;
    let result = match started {
        None => {
            tracing::info!("stopped during start-up");
            Ok(())
        }
        Some(Err(ManagerError::Discovery(source))) if refuses_credentials(&source) => {
            Err(RunError::CredentialsRefused {
                whose: config.whose_credentials(),
                source,
            })
        }
        Some(Err(error)) => Err(error.into()),
        Some(Ok(controllers)) => match election {
            None => {
                add_readiness(&endpoints, &client, controllers.readiness(), None);
                run_controllers(controllers, CancellationToken::new(), &shutdown, grace).await
            }
            Some(config) => {
                run_elected(controllers, client, config, &endpoints, &shutdown, grace).await
            }
        },
    };

    services.cancel();
    signals.abort();
    log_gone.abort();
    if let Some(events) = events {
        let _ = events.await;
    }
    server.stopped().await;
    result?;
    if log.is_closed() {
        return Err(RunError::LogClosed);
    }
    tracing::info!("stopped");
    Ok(())
}

/// Stops the run (as SIGTERM does: drained, the Lease released) once nobody reads `log`.
fn stop_when_closed(log: LogSink, shutdown: CancellationToken) -> JoinHandle<()> {
    tokio::spawn(async move {
        log.closed().await;
        shutdown.cancel();
    })
}

/// A 401 or 403: the server refuses these credentials, or what they may do.
fn refuses_credentials(error: &crate::client::Error) -> bool {
    error.is_unauthorized() || error.is_forbidden()
}

/// Where Events go: the API server, through a writer task of their own — but nowhere for a dry
/// run, which writes nothing (what an Event would say is logged as well).
fn event_recorder(
    args: &RunArgs,
    client: &Client,
    identity: String,
    services: &CancellationToken,
) -> (SharedRecorder, Option<JoinHandle<()>>) {
    if args.dry_run {
        tracing::info!("dry run: no Events are written; the log says what they would");
        return (Arc::new(NoopRecorder), None);
    }
    let reporter = Reporter {
        component: COMPONENT.to_owned(),
        instance: identity,
    };
    let events_client = client.for_component("events", 1.0);
    let (recorder, events) = ApiEventRecorder::start(events_client, reporter, services.clone());
    (recorder.shared(), Some(events))
}

/// Whether and where this run competes for leadership. A dry run acts on nothing, so it never
/// takes part: a laptop's dry run must not take the Lease from the production Deployment. The
/// Lease is in `--namespace`'s namespace when the run has one (kube-system otherwise), named
/// after what the run runs ([`lease_name`]), so that instances running different things never
/// share one; `--leader-elect-resource-*` override both.
fn election(
    args: &RunArgs,
    controllers: &ControllerSelection,
    identity: &str,
) -> Result<Option<LeaderElectionConfig>, InvalidConfig> {
    if args.dry_run {
        if args.leader_election.leader_elect {
            tracing::info!("dry run: not taking part in the leader election");
        }
        return Ok(None);
    }
    let namespace = args.namespace.as_deref().unwrap_or(DEFAULT_LEASE_NAMESPACE);
    args.leader_election
        .to_config(identity, namespace, &lease_name(controllers))
}

/// The Lease name of a run of `controllers`: `kube-gc` for all of them, else `kube-gc` and the
/// ones it runs, dot-separated (`kube-gc.retention.volcano-job-ttl`: a valid object name).
fn lease_name(controllers: &ControllerSelection) -> String {
    if *controllers == ControllerSelection::default() {
        return DEFAULT_LEASE_NAME.to_owned();
    }
    format!("{DEFAULT_LEASE_NAME}.{}", controllers.enabled().join("."))
}

/// `/readyz`'s checks: the API server answers (else for how long it has not, and how), the
/// controllers are ready (caches synced, the garbage collector's workers running), no informer
/// is stuck (named in the failure), and, when electing, the leadership state is known. A
/// follower runs no controllers, so for it only the election counts: a follower that is never
/// ready would stall every rolling update of a two-replica Deployment.
fn add_readiness(
    endpoints: &Endpoints,
    client: &Client,
    controllers: Readiness,
    leadership: Option<LeadershipWatch>,
) {
    let availability = client.availability().clone();
    endpoints.readiness.add_with_reason("api-server", move || {
        let now = availability.current();
        (!now.answering).then(|| {
            let lasted = now.unavailable_for(tokio::time::Instant::now());
            format!(
                "the API server has not answered for {:.0}s: {}",
                lasted.as_secs_f64(),
                describe_failure(now.failure)
            )
        })
    });
    let reflectors = endpoints.metrics.reflectors().clone();
    endpoints.readiness.add_with_reason("informers", move || {
        let stuck = reflectors.stuck();
        (!stuck.is_empty()).then(|| {
            format!(
                "no list and watch has worked for over twice the backoff cap: {}",
                stuck.join(", ")
            )
        })
    });
    match leadership {
        None => endpoints
            .readiness
            .add("controllers", move || controllers.is_ready()),
        Some(leadership) => {
            endpoints.readiness.add_leadership(leadership.clone());
            endpoints.readiness.add("controllers", move || {
                !leadership.current().is_leader() || controllers.is_ready()
            });
        }
    }
}

/// Competes for the Lease; runs the controllers while leading. The Lease is released only
/// after the controllers stopped, so no other replica starts while deletions are in flight.
async fn run_elected(
    controllers: ControllerSet,
    client: Client,
    config: LeaderElectionConfig,
    endpoints: &Endpoints,
    shutdown: &CancellationToken,
    grace: Duration,
) -> Result<(), RunError> {
    // Its own token bucket: a renewal never waits behind the controllers' requests, and a
    // leader that cannot renew in time loses the Lease.
    let elector = LeaderElector::new(client.for_component("leader-election", 1.0), config)?;
    let mut leadership = elector.subscribe();
    add_readiness(
        endpoints,
        &client,
        controllers.readiness(),
        Some(leadership.clone()),
    );
    let stop_election = CancellationToken::new();
    let election = tokio::spawn(elector.run(stop_election.clone()));
    let led = tokio::select! {
        leading = leadership.leading() => match leading {
            Some(leading) => run_controllers(controllers, leading, shutdown, grace).await,
            None => Ok(()),
        },
        () = shutdown.cancelled() => Ok(()),
    };
    stop_election.cancel();
    match election.await {
        Ok(Outcome::Lost) => {
            tracing::error!("leaderelection lost");
            Err(RunError::LeadershipLost)
        }
        Ok(Outcome::Stopped) => led,
        Err(source) => Err(RunError::Task {
            task: "leader election",
            source,
        }),
    }
}

/// Runs `controllers` until `shutdown` (then drains them for at most `grace`), until `leading`
/// is cancelled (then stops them at once: another replica may already lead), or until one
/// fails.
async fn run_controllers(
    controllers: ControllerSet,
    leading: CancellationToken,
    shutdown: &CancellationToken,
    grace: Duration,
) -> Result<(), RunError> {
    let stop = leading.child_token();
    let mut running = tokio::spawn(controllers.run(stop.clone()));
    tokio::select! {
        finished = &mut running => return controllers_result(finished),
        () = leading.cancelled() => {
            running.abort();
            return Ok(());
        }
        () = shutdown.cancelled() => {}
    }
    stop.cancel();
    tracing::info!(
        ?grace,
        "stopping the controllers; finishing the work in hand"
    );
    drain(running, grace).await
}

/// Waits for the stopping controllers for at most `grace`, then abandons them.
async fn drain(
    mut running: JoinHandle<Result<(), ControllerFailed>>,
    grace: Duration,
) -> Result<(), RunError> {
    let mut finished = None;
    let drained = drain_within(grace, async { finished = Some((&mut running).await) }).await;
    match (drained, finished) {
        (Drain::Completed, Some(finished)) => controllers_result(finished),
        _ => {
            running.abort();
            Ok(())
        }
    }
}

fn controllers_result(
    finished: Result<Result<(), ControllerFailed>, tokio::task::JoinError>,
) -> Result<(), RunError> {
    match finished {
        Ok(result) => result.map_err(|failed| RunError::Manager(failed.into())),
        Err(source) => Err(RunError::Task {
            task: "controllers",
            source,
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::manager::{BoxError, ManagedController};
    use clap::Parser;
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::sync::Arc;

    #[derive(Debug, Parser)]
    struct Flags {
        #[command(flatten)]
        run: RunArgs,
    }

    fn parse(args: &[&str]) -> RunArgs {
        Flags::parse_from(std::iter::once("kube-gc").chain(args.iter().copied())).run
    }

    #[test]
    fn defaults_are_kube_controller_managers() {
        let args = parse(&[]);
        let options = args.manager_options().unwrap();
        assert_eq!(options, ManagerOptions::default());
        assert_eq!((args.kube_api_qps, args.kube_api_burst), (20.0, 30));
        assert_eq!(args.ttl_fresh_read, FreshRead::OnConflict);
    }

    /// Where the run competes for leadership, from its flags.
    fn lease_of(flags: &[&str]) -> Option<(String, String)> {
        let args = parse(flags);
        let options = args.manager_options().unwrap();
        election(&args, &options.controllers, "me")
            .unwrap()
            .map(|c| (c.lease_namespace, c.lease_name))
    }

    fn lease(namespace: &str, name: &str) -> Option<(String, String)> {
        Some((namespace.to_owned(), name.to_owned()))
    }

    #[test]
    fn the_lease_is_where_and_what_the_run_runs_and_a_dry_run_takes_none() {
        assert_eq!(lease_of(&[]), lease("kube-system", "kube-gc"));
        assert_eq!(lease_of(&["--dry-run"]), None, "a dry run never elects");
        assert_eq!(lease_of(&["--dry-run", "--namespace=batch"]), None);
        assert_eq!(lease_of(&["--leader-elect=false"]), None);
        assert_eq!(
            lease_of(&["--namespace=batch"]),
            lease("batch", "kube-gc"),
            "a namespace's run elects in that namespace"
        );
        assert_eq!(
            lease_of(&["--controllers=retention,volcano-job-ttl"]),
            lease("kube-system", "kube-gc.volcano-job-ttl.retention")
        );
        assert_eq!(
            lease_of(&["--controllers=*,-garbagecollector", "--namespace=batch"]),
            lease(
                "batch",
                "kube-gc.ttl-after-finished.volcano-job-ttl.namespace.retention.podgc.pvc-protection.pv-protection"
            )
        );
        assert_eq!(
            lease_of(&[
                "--namespace=batch",
                "--leader-elect-resource-namespace=ops",
                "--leader-elect-resource-name=gc"
            ]),
            lease("ops", "gc"),
            "the flags win"
        );
    }

    #[test]
    fn flags_reach_the_manager_options() {
        let args = parse(&[
            "--controllers=*,-volcano-job-ttl",
            "--concurrent-ttl-after-finished-syncs=7",
            "--worker-threads-for-gc=3",
            "--namespace=batch",
            "--dry-run",
            "--ttl-fresh-read=always",
            "--concurrent-gc-syncs=4",
            "--gc-discovery-period=1m",
            "--gc-initial-sync-timeout=5s",
            "--notify-webhook-url=https://hooks.slack.com/services/T/B/x",
            "--notify-interval=5m",
            "--concurrent-namespace-syncs=3",
            "--namespace-sync-period=0s",
            "--namespace-deletion-grace-period=2s",
        ]);
        let options = args.manager_options().unwrap();
        assert_eq!(
            options.notify.webhook.map(|u| u.to_string()),
            Some("https://hooks.slack.com/…".to_owned())
        );
        assert_eq!(options.notify.interval, Duration::from_secs(300));
        assert!(!options.controllers.is_enabled("volcano-job-ttl"));
        assert!(options.controllers.is_enabled("ttl-after-finished"));
        assert_eq!(
            (options.job_ttl_workers, options.volcano_ttl_workers),
            (7, 3)
        );
        assert_eq!(options.namespace.as_deref(), Some("batch"));
        assert!(options.dry_run);
        assert_eq!(options.fresh_read, FreshRead::Always);
        assert_eq!(
            (
                options.gc_workers,
                options.gc_discovery_period,
                options.gc_initial_sync_timeout
            ),
            (4, Duration::from_secs(60), Duration::from_secs(5))
        );
        assert_eq!(
            (
                options.namespace_workers,
                options.namespace_sync_period,
                options.namespace_deletion_grace_period
            ),
            (3, Duration::ZERO, Duration::from_secs(2))
        );
    }

    #[test]
    fn the_user_agent_names_the_replica() {
        let args = parse(&[]);
        let options = args.client_options("node-1_abc", &Metrics::new());
        assert!(
            options.user_agent.starts_with("kube-gc/")
                && options.user_agent.ends_with(" (node-1_abc)"),
            "{}",
            options.user_agent
        );
        assert!(args.leader_election.leader_elect, "run elects by default");
    }

    #[test]
    fn master_overrides_the_kubeconfig_server() {
        let fixture = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/fixtures/kubeconfig/credentials.yaml"
        );
        let args = parse(&[
            "--kubeconfig",
            fixture,
            "--context",
            "basic",
            "--master",
            "https://10.0.0.1:6443",
        ]);
        let config = args.client_config().unwrap();
        assert_eq!(config.server.as_str(), "https://10.0.0.1:6443/");
        let anonymous = anonymous_config(Url::parse("http://127.0.0.1:8080").unwrap());
        assert!(matches!(anonymous.auth, Auth::None));
    }

    /// A set of one controller that takes `stopping` to finish after its token is cancelled,
    /// and a flag saying whether it finished.
    fn slow_to_stop(stopping: Duration) -> (ControllerSet, Arc<AtomicBool>) {
        let finished = Arc::new(AtomicBool::new(false));
        let flag = Arc::clone(&finished);
        let mut set = ControllerSet::new();
        set.push(ManagedController::new(
            "slow",
            Vec::new(),
            move |token: CancellationToken| async move {
                token.cancelled().await;
                tokio::time::sleep(stopping).await;
                flag.store(true, Ordering::SeqCst);
                Ok::<(), BoxError>(())
            },
        ));
        (set, finished)
    }

    #[tokio::test(start_paused = true)]
    async fn a_signal_drains_within_the_grace_period_and_losing_the_lease_stops_at_once() {
        let grace = Duration::from_secs(30);
        // Drained: the in-flight work finishes.
        let (set, finished) = slow_to_stop(Duration::from_secs(5));
        let shutdown = CancellationToken::new();
        shutdown.cancel();
        let start = tokio::time::Instant::now();
        run_controllers(set, CancellationToken::new(), &shutdown, grace)
            .await
            .unwrap();
        assert!(finished.load(Ordering::SeqCst));
        assert_eq!(start.elapsed(), Duration::from_secs(5));

        // Too slow: abandoned at the end of the grace period.
        let (set, finished) = slow_to_stop(Duration::from_secs(60));
        let start = tokio::time::Instant::now();
        run_controllers(set, CancellationToken::new(), &shutdown, grace)
            .await
            .unwrap();
        assert!(!finished.load(Ordering::SeqCst));
        assert_eq!(start.elapsed(), grace);

        // Leadership lost: stopped at once, nothing waited for.
        let (set, finished) = slow_to_stop(Duration::from_secs(5));
        let leading = CancellationToken::new();
        leading.cancel();
        let start = tokio::time::Instant::now();
        run_controllers(set, leading, &CancellationToken::new(), grace)
            .await
            .unwrap();
        assert!(!finished.load(Ordering::SeqCst));
        assert_eq!(start.elapsed(), Duration::ZERO);
    }

    #[tokio::test(start_paused = true)]
    async fn a_failing_controller_is_an_error() {
        let mut set = ControllerSet::new();
        set.push(ManagedController::new(
            "broken",
            Vec::new(),
            |_token| async { Err::<(), BoxError>("no".into()) },
        ));
        let result = run_controllers(
            set,
            CancellationToken::new(),
            &CancellationToken::new(),
            Duration::from_secs(30),
        )
        .await;
        assert!(
            matches!(result, Err(RunError::Manager(ManagerError::Failed(f))) if f.controller == "broken")
        );
    }
}
