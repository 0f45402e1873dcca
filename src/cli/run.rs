//! `kube-gc run` (the default subcommand): connect to a cluster and run the garbage-collection
//! controllers until SIGINT or SIGTERM.
//!
//! Flags are named as kube-controller-manager's (and Volcano's, for `--worker-threads-for-gc`),
//! so an operator moving a controller out of kcm keeps their values. The first SIGINT/SIGTERM
//! cancels the controllers, which finish the deletions in hand and stop; the process then
//! exits 0.

use std::path::PathBuf;

use clap::Args;
use tokio_util::sync::CancellationToken;
use url::Url;

use crate::client::config::{
    Auth, ClientConfig, ConfigError, Environment, LoadOptions, Origin, SystemRoots, TlsSettings,
};
use crate::client::{BuildError, Client, ClientOptions};
use crate::controllers::ttl::{FreshRead, DEFAULT_JOB_WORKERS, DEFAULT_VOLCANO_WORKERS};
use crate::manager::{
    ControllerSelection, Manager, ManagerError, ManagerOptions, UnknownController,
    KNOWN_CONTROLLERS,
};

/// Flags of `kube-gc run`.
#[derive(Debug, Clone, Args)]
pub struct RunArgs {
    /// Path to a kubeconfig file. Without it: $KUBECONFIG, then ~/.kube/config, then in-cluster.
    #[arg(long, value_name = "FILE")]
    pub kubeconfig: Option<PathBuf>,

    /// The kubeconfig context to use instead of its current-context.
    #[arg(long, value_name = "NAME")]
    pub context: Option<String>,

    /// The API server's address; overrides the kubeconfig's server.
    #[arg(long, value_name = "URL")]
    pub master: Option<Url>,

    /// Controllers to run: `*` for all, a name to enable one, `-name` to disable one.
    /// Names: ttl-after-finished, volcano-job-ttl, garbagecollector (aliases:
    /// ttl-after-finished-controller, garbage-collector-controller). A controller whose
    /// resource the cluster does not serve is skipped.
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
    #[arg(long, value_name = "NAME")]
    pub namespace: Option<String>,

    /// Decide and log what would be deleted and when; delete nothing.
    #[arg(long)]
    pub dry_run: bool,

    /// When to GET a fresh copy of an expired object before deleting it: `on-conflict` (one
    /// request per deletion; the DELETE carries uid and resourceVersion preconditions) or
    /// `always` (upstream's GET then DELETE).
    #[arg(long, value_name = "MODE", default_value_t = FreshRead::OnConflict)]
    pub ttl_fresh_read: FreshRead,
}

/// Why `kube-gc run` stopped with an error.
#[derive(Debug, thiserror::Error)]
pub enum RunError {
    /// `--controllers` names something unknown.
    #[error(transparent)]
    Controllers(#[from] UnknownController),
    /// No usable connection configuration.
    #[error(transparent)]
    Config(#[from] ConfigError),
    /// The client could not be built from it.
    #[error("cannot build the API client: {0}")]
    Client(#[from] BuildError),
    /// The signal handlers could not be installed.
    #[error("cannot install the signal handlers: {0}")]
    Signals(#[source] std::io::Error),
    /// The controllers could not start or failed.
    #[error(transparent)]
    Manager(#[from] ManagerError),
}

impl RunArgs {
    /// The manager's options from the flags.
    pub fn manager_options(&self) -> Result<ManagerOptions, UnknownController> {
        Ok(ManagerOptions {
            controllers: ControllerSelection::parse(&self.controllers)?,
            namespace: self.namespace.clone(),
            dry_run: self.dry_run,
            fresh_read: self.ttl_fresh_read,
            job_ttl_workers: self.concurrent_ttl_after_finished_syncs,
            volcano_ttl_workers: self.worker_threads_for_gc,
            ..ManagerOptions::default()
        })
    }

    /// The connection configuration: kubeconfig / in-cluster as kubectl finds it, with the
    /// server replaced by `--master`; `--master` alone connects anonymously.
    fn client_config(&self) -> Result<ClientConfig, ConfigError> {
        let options = LoadOptions {
            kubeconfig: self.kubeconfig.clone(),
            context: self.context.clone(),
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

/// Runs `kube-gc run`.
pub async fn run(args: RunArgs) -> Result<(), RunError> {
    let options = args.manager_options()?;
    let config = args.client_config()?;
    let client_options = ClientOptions::default().with_rate(args.kube_api_qps, args.kube_api_burst);
    let client = Client::new(&config, &client_options)?;
    tracing::info!(server = %config.server, controllers = ?args.controllers, known = ?KNOWN_CONTROLLERS,
        dry_run = args.dry_run, "starting kube-gc");

    let shutdown = CancellationToken::new();
    let signals = tokio::spawn(cancel_on_signal(shutdown.clone()));
    let result = Manager::new(client, options).run(shutdown.clone()).await;
    signals.abort();
    result?;
    tracing::info!("stopped");
    Ok(())
}

/// Cancels `shutdown` on the first SIGINT or SIGTERM.
async fn cancel_on_signal(shutdown: CancellationToken) -> Result<(), RunError> {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{signal, SignalKind};
        let mut terminate = signal(SignalKind::terminate()).map_err(RunError::Signals)?;
        tokio::select! {
            result = tokio::signal::ctrl_c() => result.map_err(RunError::Signals)?,
            _ = terminate.recv() => {}
        }
    }
    #[cfg(not(unix))]
    tokio::signal::ctrl_c().await.map_err(RunError::Signals)?;
    tracing::info!("signal received; finishing the work in hand, then stopping");
    shutdown.cancel();
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

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

    #[test]
    fn flags_reach_the_manager_options() {
        let args = parse(&[
            "--controllers=*,-volcano-job-ttl",
            "--concurrent-ttl-after-finished-syncs=7",
            "--worker-threads-for-gc=3",
            "--namespace=batch",
            "--dry-run",
            "--ttl-fresh-read=always",
        ]);
        let options = args.manager_options().unwrap();
        assert!(!options.controllers.is_enabled("volcano-job-ttl"));
        assert!(options.controllers.is_enabled("ttl-after-finished"));
        assert_eq!(
            (options.job_ttl_workers, options.volcano_ttl_workers),
            (7, 3)
        );
        assert_eq!(options.namespace.as_deref(), Some("batch"));
        assert!(options.dry_run);
        assert_eq!(options.fresh_read, FreshRead::Always);
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
}
