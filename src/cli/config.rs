//! `kube-gc config view`: what kube-gc would connect to, and as whom.
//!
//! Loads the configuration exactly as `kube-gc run` will (kubeconfig search and merge, context
//! selection, in-cluster fallback) and prints the server, user, credential kind, CA and namespace.
//! Secrets are never printed: the description comes from
//! [`crate::client::config::config_view`], which redacts them.

use std::path::PathBuf;

use clap::{Args, Subcommand};

use crate::client::config::{config_view, Environment, LoadOptions};

/// `kube-gc config …`
#[derive(Debug, Subcommand)]
pub enum ConfigCommand {
    /// Print the server, user, credential kind, CA and namespace kube-gc would use (secrets redacted).
    View(ConnectionArgs),
}

/// Where to find the cluster, as kube-controller-manager and kubectl name these flags.
#[derive(Debug, Clone, Default, Args)]
pub struct ConnectionArgs {
    /// Path to a kubeconfig file. Without it: $KUBECONFIG, then ~/.kube/config, then in-cluster.
    #[arg(long, value_name = "FILE")]
    pub kubeconfig: Option<PathBuf>,

    /// The kubeconfig context to use instead of its current-context.
    #[arg(long, value_name = "NAME")]
    pub context: Option<String>,
}

impl ConnectionArgs {
    fn load_options(&self) -> LoadOptions {
        LoadOptions {
            kubeconfig: self.kubeconfig.clone(),
            context: self.context.clone(),
        }
    }
}

/// Runs a `config` subcommand, printing its result on standard output.
pub fn run(command: &ConfigCommand) -> Result<(), super::CliError> {
    match command {
        ConfigCommand::View(args) => {
            let mut text = config_view(&args.load_options(), &Environment::from_process())?;
            if !text.ends_with('\n') {
                text.push('\n');
            }
            super::output::print(&text).map_err(super::CliError::Output)
        }
    }
}
