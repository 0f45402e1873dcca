//! The `kube-gc` command line.
//!
//! `main` parses flags with clap, installs logging, builds a tokio runtime and runs one
//! subcommand. Each subcommand lives in its own module and returns a [`CliError`]; only this
//! module turns errors into exit codes, so every failure is printed the same way.

mod config;
mod demo;

mod explain;
mod logging;
mod notify;
mod output;
mod record;
mod run;
mod sim;

use std::process::ExitCode;

use clap::{Parser, Subcommand};

pub use crate::duration::{parse_duration, DurationError};
pub use logging::{LogFormat, LogSink, LoggingArgs};

/// kube-gc: a standalone Kubernetes garbage collector.
///
/// Deletes finished Jobs and Volcano Jobs once their ttlSecondsAfterFinished expires, as
/// kube-controller-manager's ttl-after-finished controller and Volcano's garbage collector do,
/// and collects objects whose owners are gone (Background, Foreground and Orphan deletion), as
/// kube-controller-manager's garbage collector does — on a hand-written informer/workqueue
/// runtime. Without a subcommand it runs the controllers
/// (`kube-gc run`). Try `kube-gc demo` to watch them work against a simulated cluster.
#[derive(Debug, Parser)]
#[command(name = "kube-gc", version, propagate_version = true)]
pub struct Cli {
    #[command(flatten)]
    logging: LoggingArgs,

    #[command(subcommand)]
    command: Option<Command>,

    /// `kube-gc run`'s flags, for running without naming the subcommand.
    #[command(flatten)]
    run: Box<run::RunArgs>,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Run the controllers against a cluster until SIGINT/SIGTERM (the default).
    Run(Box<run::RunArgs>),
    /// Run the controllers against a simulated cluster with a realistic batch workload, show
    /// their progress and check the outcome (exits non-zero if anything went wrong).
    Demo(demo::DemoArgs),
    /// Run the simulated Kubernetes API server and print how to reach it (kubectl works too).
    #[command(after_long_help = crate::sim::differences::help_text(100))]
    Sim(sim::SimArgs),
    /// Inspect the connection configuration kube-gc would use.
    #[command(subcommand)]
    Config(config::ConfigCommand),
    /// Record a live list+watch of one resource as a replay script (JSON lines on stdout).
    Record(record::RecordArgs),
    /// Why an object is still there, and what kube-gc will do with it (read-only).
    Explain(explain::ExplainArgs),
    /// What kube-gc would delete, and when (read-only): `plan` before `run`.
    Plan(explain::PlanArgs),
}

impl Cli {
    /// Hands connection flags given before the subcommand to it (see [`parse_command_line`]).
    fn hoist_connection(&mut self) -> Result<(), String> {
        let Some(command) = &mut self.command else {
            return Ok(()); // `run` by default: the flags are already its own.
        };
        let before = std::mem::take(&mut self.run.connection);
        let named = command.name();
        let Some(after) = command.connection_mut() else {
            return match (&before.kubeconfig, &before.context) {
                (None, None) => Ok(()),
                (Some(_), _) => Err(format!(
                    "--kubeconfig: `kube-gc {named}` connects to no cluster"
                )),
                (None, Some(_)) => Err(format!(
                    "--context: `kube-gc {named}` connects to no cluster"
                )),
            };
        };
        after.kubeconfig = one_of(
            "kubeconfig",
            named,
            before.kubeconfig,
            after.kubeconfig.take(),
        )?;
        after.context = one_of("context", named, before.context, after.context.take())?;
        Ok(())
    }
}

/// The value of `--flag`, given before or after the subcommand, or both times alike.
fn one_of<T: PartialEq + std::fmt::Debug>(
    flag: &str,
    subcommand: &str,
    before: Option<T>,
    after: Option<T>,
) -> Result<Option<T>, String> {
    match (before, after) {
        (Some(a), Some(b)) if a != b => Err(format!(
            "--{flag} given twice, before and after `{subcommand}`, as {a:?} and {b:?}: give it once"
        )),
        (before, after) => Ok(after.or(before)),
    }
}

impl Command {
    /// The subcommand as typed.
    fn name(&self) -> &'static str {
        match self {
            Command::Run(_) => "run",
            Command::Demo(_) => "demo",
            Command::Sim(_) => "sim",
            Command::Config(_) => "config",
            Command::Record(_) => "record",
            Command::Explain(_) => "explain",
            Command::Plan(_) => "plan",
        }
    }

    /// Its connection flags, if it connects to a cluster.
    fn connection_mut(&mut self) -> Option<&mut config::ConnectionArgs> {
        match self {
            Command::Run(args) => Some(&mut args.connection),
            Command::Explain(args) => Some(&mut args.connection),
            Command::Plan(args) => Some(&mut args.connection),
            Command::Record(args) => Some(&mut args.connection),
            Command::Config(config::ConfigCommand::View(args)) => Some(args),
            Command::Demo(_) | Command::Sim(_) => None,
        }
    }
}

/// A subcommand's failure, printed by [`main`] before exiting non-zero.
#[derive(Debug, thiserror::Error)]
pub enum CliError {
    /// The async runtime could not be built.
    #[error("cannot start the async runtime: {0}")]
    Runtime(#[source] std::io::Error),
    /// The simulated API server failed.
    #[error(transparent)]
    Sim(#[from] sim::SimCommandError),
    /// The kubeconfig or in-cluster configuration could not be loaded.
    #[error(transparent)]
    Config(#[from] crate::client::config::ConfigError),
    /// `kube-gc record` failed.
    #[error(transparent)]
    Record(#[from] record::RecordError),
    /// `kube-gc run` failed.
    #[error(transparent)]
    Run(#[from] run::RunError),
    /// `kube-gc explain` or `kube-gc plan` failed.
    #[error(transparent)]
    Explain(#[from] explain::ExplainError),
    /// `kube-gc demo` failed or found a wrong outcome.
    #[error(transparent)]
    Demo(#[from] crate::demo::DemoError),
    /// Standard output could not be written (not a reader that went away: that is no error).
    #[error("cannot write the output: {0}")]
    Output(#[source] std::io::Error),
}

/// The flags saying where the cluster is: before a subcommand they are the subcommand's, as
/// kubectl's `--kubeconfig` is (`kube-gc --kubeconfig k plan`).
const CONNECTION_FLAGS: [&str; 2] = ["kubeconfig", "context"];

/// Parses a command line. The logging flags are global: they go before or after the
/// subcommand (`kube-gc -v=4 run`). So do the connection flags, for every subcommand that
/// connects to a cluster (`kube-gc --kubeconfig k run`). `run`'s other flags may stand without
/// the subcommand (`kube-gc --dry-run`, the default command) but not before another one, where
/// they would be silently ignored.
///
/// # Errors
///
/// What clap says of a malformed command line; a flag of `run` given before a subcommand; a
/// connection flag before a subcommand that does not connect, or given before and after the
/// subcommand with different values.
pub fn parse_command_line<I, T>(args: I) -> Result<Cli, clap::Error>
where
    I: IntoIterator<Item = T>,
    T: Into<std::ffi::OsString> + Clone,
{
    use clap::parser::ValueSource;
    use clap::{CommandFactory, FromArgMatches};
    let mut command = Cli::command();
    let matches = command.try_get_matches_from_mut(args)?;
    let conflict =
        |message: String| Cli::command().error(clap::error::ErrorKind::ArgumentConflict, message);
    if let Some((subcommand, _)) = matches.subcommand() {
        let misplaced = command
            .get_arguments()
            .filter(|arg| !arg.is_global_set())
            .filter(|arg| !CONNECTION_FLAGS.contains(&arg.get_id().as_str()))
            .find(|arg| {
                matches.value_source(arg.get_id().as_str()) == Some(ValueSource::CommandLine)
            });
        if let Some(arg) = misplaced {
            let flag = arg.get_long().unwrap_or(arg.get_id().as_str());
            return Err(conflict(format!(
                "--{flag} is a flag of `kube-gc run`: put it after `{subcommand}` (if that \
                 command takes it), or leave the subcommand out to run"
            )));
        }
    }
    let mut cli = Cli::from_arg_matches(&matches)?;
    cli.hoist_connection().map_err(conflict)?;
    Ok(cli)
}

/// Entry point of the binary: parse, log, run, map the outcome to an exit code.
pub fn main() -> ExitCode {
    let cli = match parse_command_line(std::env::args_os()) {
        Ok(cli) => cli,
        Err(error) => error.exit(),
    };
    let command = cli.command.unwrap_or(Command::Run(cli.run));
    let log = if matches!(command, Command::Demo(_)) {
        cli.logging.install_quiet()
    } else {
        cli.logging.install()
    };
    match run(command, log) {
        Ok(()) => ExitCode::SUCCESS,
        Err(err) => {
            output::eprint(&format!("kube-gc: {}\n", crate::error_chain::chain(&err)));
            ExitCode::FAILURE
        }
    }
}

/// Runs `command`; `log` is where its log lines go (`run` stops when nobody reads them).
fn run(command: Command, log: LogSink) -> Result<(), CliError> {
    match command {
        // Loading a configuration is blocking file I/O and needs no async runtime.
        Command::Config(config_command) => config::run(&config_command)?,
        Command::Sim(args) => async_runtime()?.block_on(sim::run(args))?,
        Command::Record(args) => async_runtime()?.block_on(record::run(args))?,
        Command::Run(args) => async_runtime()?.block_on(run::run(*args, log))?,
        Command::Demo(args) => async_runtime()?.block_on(demo::run(args))?,
        Command::Explain(args) => async_runtime()?.block_on(explain::run_explain(args))?,
        Command::Plan(args) => async_runtime()?.block_on(explain::run_plan(args))?,
    }
    Ok(())
}

fn async_runtime() -> Result<tokio::runtime::Runtime, CliError> {
    tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .map_err(CliError::Runtime)
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::CommandFactory;

    #[test]
    fn command_line_definition_is_consistent() {
        Cli::command().debug_assert();
    }

    #[test]
    fn logging_flags_go_before_or_after_the_subcommand_and_run_flags_not_before_another() {
        for args in [
            &["kube-gc", "-v=4", "run"][..],
            &["kube-gc", "--v", "4", "run"],
            &["kube-gc", "run", "-v=4"],
            &["kube-gc", "-v=4", "--kubeconfig", "k"],
        ] {
            let cli = parse_command_line(args).unwrap_or_else(|e| panic!("{args:?}: {e}"));
            assert_eq!(cli.logging.verbosity, 4, "{args:?}");
        }
        let error = parse_command_line(["kube-gc", "--dry-run", "plan"]).expect_err("misplaced");
        assert!(
            error
                .to_string()
                .contains("--dry-run is a flag of `kube-gc run`"),
            "{error}"
        );
    }

    #[test]
    fn connection_flags_go_before_or_after_any_subcommand_that_connects() {
        let connection = |args: &[&str]| {
            let mut cli = parse_command_line(args).unwrap_or_else(|e| panic!("{args:?}: {e}"));
            let command = cli.command.as_mut().expect("a subcommand");
            let connection = command.connection_mut().expect("it connects").clone();
            (connection.kubeconfig, connection.context)
        };
        let k = Some(std::path::PathBuf::from("k"));
        for args in [
            &["kube-gc", "--kubeconfig", "k", "run"][..],
            &["kube-gc", "run", "--kubeconfig", "k"],
            &["kube-gc", "--kubeconfig=k", "plan"],
            &["kube-gc", "--kubeconfig", "k", "explain", "jobs/x"],
            &[
                "kube-gc",
                "--kubeconfig",
                "k",
                "record",
                "--resource",
                "jobs",
            ],
            &["kube-gc", "--kubeconfig", "k", "config", "view"],
            &["kube-gc", "--kubeconfig", "k", "run", "--kubeconfig", "k"],
        ] {
            assert_eq!(connection(args), (k.clone(), None), "{args:?}");
        }
        assert_eq!(
            connection(&["kube-gc", "--context", "c", "plan", "--kubeconfig", "k"]),
            (k, Some("c".to_owned()))
        );
        let twice =
            parse_command_line(["kube-gc", "--kubeconfig", "a", "plan", "--kubeconfig", "b"])
                .expect_err("two files");
        assert!(
            twice.to_string().contains("--kubeconfig given twice"),
            "{twice}"
        );
        let nowhere =
            parse_command_line(["kube-gc", "--kubeconfig", "k", "demo"]).expect_err("demo");
        assert!(
            nowhere
                .to_string()
                .contains("`kube-gc demo` connects to no cluster"),
            "{nowhere}"
        );
    }

    #[test]
    fn a_bare_leader_elect_means_true_and_short_namespace_flags() {
        let run = |args: &[&str]| match parse_command_line(args).map(|c| c.command) {
            Ok(Some(Command::Run(run))) => run,
            other => panic!("{args:?} parsed as {other:?}"),
        };
        assert!(
            run(&["kube-gc", "run", "--leader-elect"])
                .leader_election
                .leader_elect
        );
        assert!(
            !run(&["kube-gc", "run", "--leader-elect=false"])
                .leader_election
                .leader_elect
        );
        assert_eq!(
            run(&["kube-gc", "run", "-n", "batch"]).namespace.as_deref(),
            Some("batch")
        );
        match parse_command_line([
            "kube-gc",
            "record",
            "--resource",
            "batch/v1/jobs",
            "-n",
            "x",
        ])
        .map(|c| c.command)
        {
            Ok(Some(Command::Record(record))) => assert_eq!(record.namespace.as_deref(), Some("x")),
            other => panic!("record parsed as {other:?}"),
        }
        match parse_command_line(["kube-gc", "plan", "--within", "1d"]).map(|c| c.command) {
            Ok(Some(Command::Plan(plan))) => {
                assert_eq!(plan.within, std::time::Duration::from_secs(86_400))
            }
            other => panic!("plan parsed as {other:?}"),
        }
    }

    #[test]
    fn sim_serves_the_workload_crds_only_when_asked() {
        let workload_crds = |args: &[&str]| match Cli::try_parse_from(args).map(|c| c.command) {
            Ok(Some(Command::Sim(sim))) => sim.workload_crds,
            other => panic!("{args:?} parsed as {other:?}"),
        };
        assert!(!workload_crds(&["kube-gc", "sim"]));
        assert!(workload_crds(&["kube-gc", "sim", "--workload-crds"]));
    }

    #[test]
    fn sim_answers_discovery_as_the_release_asked_for() {
        use crate::sim::AggregatedDiscovery;
        let forms = |args: &[&str]| match Cli::try_parse_from(args).map(|c| c.command) {
            Ok(Some(Command::Sim(sim))) => Ok(sim.aggregated_discovery),
            Ok(_) => panic!("not sim"),
            Err(e) => Err(e.to_string()),
        };
        assert_eq!(forms(&["kube-gc", "sim"]), Ok(AggregatedDiscovery::V2Beta1));
        for (name, setting) in AggregatedDiscovery::NAMES {
            let flag = format!("--aggregated-discovery={name}");
            assert_eq!(forms(&["kube-gc", "sim", &flag]), Ok(setting));
        }
        let refused = forms(&["kube-gc", "sim", "--aggregated-discovery", "v3"]);
        assert!(
            refused
                .as_ref()
                .is_err_and(|e| e.contains("\"v3\" is not one of none, v2beta1, both, v2")),
            "{refused:?}"
        );
    }
}
