//! `kube-gc explain TYPE/NAME` and `kube-gc plan`: read-only answers from the same decisions
//! the controllers make (`crate::explain`). Both connect as `kube-gc run` does, take its
//! `--controllers` to assume what the install runs, need no running kube-gc, send only GET and
//! LIST, and fail with one line naming what was asked.

use std::path::PathBuf;
use std::time::Duration;

use clap::{Args, ValueEnum};
use serde_json::Value;

use super::config::ConnectionArgs;
use super::output;
use crate::client::config::{ClientConfig, ConfigError, Environment, LoadOptions};
use crate::client::{Api, BuildError, Client, ClientOptions, Discovery, ListParams};

use crate::explain::plan::{plan, text as plan_text, PlanOptions};
use crate::explain::{
    decide_assuming, gather_with, render, resolve, Assumed, ExplainTarget, Explanation,
    GatherError, Settings,
};
use crate::manager::{ControllerSelection, SelectionError};

/// How to print.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, ValueEnum)]
pub enum Output {
    /// For a terminal.
    #[default]
    Text,
    /// The data, as JSON.
    Json,
    /// The data, as YAML.
    Yaml,
}

/// Flags of `kube-gc explain`.
#[derive(Debug, Clone, Args)]
pub struct ExplainArgs {
    /// TYPE/NAME (`jobs/nightly-29`), or TYPE NAME, or TYPE with -l.
    #[arg(value_name = "TYPE/NAME")]
    pub target: Vec<String>,
    /// The namespace (default: the kubeconfig context's).
    #[arg(short = 'n', long, value_name = "NS")]
    pub namespace: Option<String>,
    /// Explain the objects a manifest names (by kind, name and namespace).
    #[arg(short = 'f', long, value_name = "FILE")]
    pub filename: Option<PathBuf>,
    /// With TYPE: explain every object whose labels match.
    #[arg(short = 'l', long, value_name = "SELECTOR")]
    pub selector: Option<String>,
    /// text, json or yaml.
    #[arg(short = 'o', long, value_enum, default_value_t = Output::Text)]
    pub output: Output,
    /// The controllers the install runs, as `kube-gc run --controllers` takes them (the
    /// managed overlay: volcano-job-ttl,retention): the others decide nothing here.
    #[arg(long, value_name = "NAMES", value_delimiter = ',', default_value = "*")]
    pub controllers: Vec<String>,
    #[command(flatten)]
    pub settings: SettingsArgs,
    #[command(flatten)]
    pub connection: ConnectionArgs,
}

/// Flags of `kube-gc plan`.
#[derive(Debug, Clone, Args)]
pub struct PlanArgs {
    /// How far ahead (Go duration, or days: 90m, 24h, 7d).
    #[arg(long, value_name = "DURATION", default_value = "24h", value_parser = crate::duration::parse_duration_or_days)]
    pub within: Duration,
    /// One namespace.
    #[arg(short = 'n', long, value_name = "NS")]
    pub namespace: Option<String>,
    /// Only objects whose labels match.
    #[arg(short = 'l', long, value_name = "SELECTOR")]
    pub selector: Option<String>,
    /// text or json (yaml too).
    #[arg(short = 'o', long, value_enum, default_value_t = Output::Text)]
    pub output: Output,
    /// The controllers the install runs, as `kube-gc run --controllers` takes them (the
    /// managed overlay: volcano-job-ttl,retention): only their deletions are planned.
    #[arg(long, value_name = "NAMES", value_delimiter = ',', default_value = "*")]
    pub controllers: Vec<String>,
    #[command(flatten)]
    pub settings: SettingsArgs,
    #[command(flatten)]
    pub connection: ConnectionArgs,
}

/// The flags of `kube-gc run` that some decisions read, so that `explain` and `plan` assume
/// what the install runs with.
#[derive(Debug, Clone, Args)]
pub struct SettingsArgs {
    /// As `kube-gc run --namespace-deletion-grace-period`: the least time between a namespace's
    /// deletion and its finalize.
    #[arg(long, value_name = "DURATION", value_parser = crate::duration::parse_duration, default_value = "5s")]
    pub namespace_deletion_grace_period: Duration,
    /// As `kube-gc run --terminated-pod-gc-threshold`: terminated Pods kept before the pod
    /// garbage collector deletes the oldest; 0 keeps them all.
    #[arg(long, value_name = "N", default_value_t = crate::controllers::podgc::DEFAULT_TERMINATED_POD_THRESHOLD)]
    pub terminated_pod_gc_threshold: usize,
}

impl SettingsArgs {
    fn settings(&self) -> Settings {
        Settings {
            namespace_deletion_grace_period: self.namespace_deletion_grace_period,
            terminated_pod_gc_threshold: self.terminated_pod_gc_threshold,
        }
    }
}

/// Why `explain` or `plan` failed.
#[derive(Debug, thiserror::Error)]
pub enum ExplainError {
    /// The command line names no object.
    #[error("{0}")]
    Usage(String),
    /// `--controllers` names something unknown, or enables nothing.
    #[error(transparent)]
    Controllers(#[from] SelectionError),
    /// The configuration could not be loaded.
    #[error(transparent)]
    Config(#[from] ConfigError),
    /// The client could not be built.
    #[error("cannot build the API client: {0}")]
    Client(#[from] BuildError),
    /// Discovery failed.
    #[error("cannot read what the server serves: {0}")]
    Discovery(#[source] crate::client::Error),
    /// The facts could not be gathered.
    #[error(transparent)]
    Gather(#[from] GatherError),
    /// The manifest could not be read.
    #[error("{path}: {message}")]
    File {
        /// The file.
        path: String,
        /// What is wrong.
        message: String,
    },
    /// The output could not be written.
    #[error("cannot print the result: {0}")]
    Print(String),
}

async fn connect(connection: &ConnectionArgs) -> Result<(Client, Discovery), ExplainError> {
    let options = LoadOptions {
        kubeconfig: connection.kubeconfig.clone(),
        context: connection.context.clone(),
    };
    let config = ClientConfig::load(&options, &Environment::from_process())?;
    let client = Client::new(&config, &ClientOptions::default())?;
    let discovery = Discovery::run(&client)
        .await
        .map_err(ExplainError::Discovery)?;
    Ok((client, discovery))
}

/// Runs `kube-gc explain`.
pub async fn run_explain(args: ExplainArgs) -> Result<(), ExplainError> {
    let running = ControllerSelection::parse(&args.controllers)?;
    let (client, discovery) = connect(&args.connection).await?;
    let namespace = args
        .namespace
        .clone()
        .unwrap_or_else(|| client.default_namespace().to_owned());
    let Targets { targets, scope } = targets(&args, &client, &discovery, &namespace).await?;
    if targets.is_empty() {
        return print_none(scope.as_deref(), args.output);
    }
    let now = chrono::Utc::now();
    let assumed = Assumed::of(&running).lines("explain");
    let mut explanations = Vec::new();
    for target in &targets {
        let gathered = gather_with(&client, &discovery, target, args.settings.settings()).await?;
        let mut explained = decide_assuming(&gathered, &running, now);
        explained.notes.extend(assumed.iter().cloned());
        explanations.push(explained);
    }
    print(&explanations, args.output)
}

/// The objects the command line names.
struct Targets {
    targets: Vec<ExplainTarget>,
    /// The namespace they were looked for in, for a namespaced type chosen by a selector.
    scope: Option<String>,
}

impl From<Vec<ExplainTarget>> for Targets {
    fn from(targets: Vec<ExplainTarget>) -> Self {
        Targets {
            targets,
            scope: None,
        }
    }
}

/// What the command line names.
async fn targets(
    args: &ExplainArgs,
    client: &Client,
    discovery: &Discovery,
    namespace: &str,
) -> Result<Targets, ExplainError> {
    if let Some(path) = &args.filename {
        return from_file(path, discovery, namespace).map(Targets::from);
    }
    let (type_, name) = match args.target.as_slice() {
        [one] => match one.split_once('/') {
            Some((t, n)) => (t.to_owned(), Some(n.to_owned())),
            None => (one.clone(), None),
        },
        [t, n] => (t.clone(), Some(n.clone())),
        _ => {
            return Err(ExplainError::Usage(
                "expected TYPE/NAME, TYPE NAME, TYPE -l SELECTOR or -f FILE".into(),
            ))
        }
    };
    if let Some(name) = name {
        let target = ExplainTarget {
            type_,
            name,
            namespace: namespace.to_owned(),
        };
        return Ok(Targets::from(vec![target]));
    }
    let Some(selector) = &args.selector else {
        return Err(ExplainError::Usage(format!(
            "{type_}: name an object (TYPE/NAME) or select some with -l"
        )));
    };
    let resource = resolve(discovery, &type_).map_err(GatherError::from)?;
    let api: Api<Value> = Api::dynamic(
        client.clone(),
        resource.clone(),
        resource.namespaced.then_some(namespace),
    );
    let params = ListParams {
        label_selector: Some(selector.clone()),
        ..ListParams::default()
    };
    let list = api
        .list_metadata(&params)
        .await
        .map_err(|source| GatherError::Api {
            what: format!("list {} -l {selector}", resource.path_name()),
            source,
        })?;
    let targets = list
        .items
        .into_iter()
        .filter_map(|o| o.metadata.name)
        .map(|name| ExplainTarget {
            type_: type_.clone(),
            name,
            namespace: namespace.to_owned(),
        })
        .collect();
    Ok(Targets {
        targets,
        scope: resource.namespaced.then(|| namespace.to_owned()),
    })
}

/// Nothing matched: as kubectl says it — on standard error for a terminal ("No resources
/// found in default namespace."), an empty list as data.
fn print_none(scope: Option<&str>, output: Output) -> Result<(), ExplainError> {
    match output {
        Output::Text => {
            output::eprint(&match scope {
                Some(namespace) => format!("No resources found in {namespace} namespace.\n"),
                None => "No resources found\n".to_owned(),
            });
            Ok(())
        }
        Output::Json | Output::Yaml => {
            output::print("[]\n").map_err(|e| ExplainError::Print(e.to_string()))
        }
    }
}

fn from_file(
    path: &PathBuf,
    discovery: &Discovery,
    namespace: &str,
) -> Result<Vec<ExplainTarget>, ExplainError> {
    let fail = |message: String| ExplainError::File {
        path: path.display().to_string(),
        message,
    };
    let text = std::fs::read_to_string(path).map_err(|e| fail(e.to_string()))?;
    let document: Value =
        serde_saphyr::from_str(&text).map_err(|e| fail(format!("not YAML or JSON: {e}")))?;
    let objects = match document["items"].as_array() {
        Some(items) => items.clone(),
        None => vec![document],
    };
    objects
        .iter()
        .map(|object| {
            let (api_version, kind) = (object["apiVersion"].as_str(), object["kind"].as_str());
            let name = object["metadata"]["name"].as_str();
            let (Some(api_version), Some(kind), Some(name)) = (api_version, kind, name) else {
                return Err(fail(
                    "each object needs apiVersion, kind and metadata.name".into(),
                ));
            };
            let found = discovery
                .resource_for_kind(api_version, kind)
                .ok_or_else(|| fail(format!("the server doesn't serve {kind} in {api_version}")))?;
            let r = &found.resource;
            let type_ = if r.group.is_empty() {
                r.plural.clone()
            } else {
                format!("{}.{}", r.plural, r.group)
            };
            let namespace = object["metadata"]["namespace"]
                .as_str()
                .unwrap_or(namespace)
                .to_owned();
            Ok(ExplainTarget {
                type_,
                name: name.to_owned(),
                namespace,
            })
        })
        .collect()
}

fn print(explanations: &[Explanation], output: Output) -> Result<(), ExplainError> {
    let text = match output {
        Output::Text => {
            let screens: Vec<String> = explanations.iter().map(render::text).collect();
            screens.join("\n---\n\n")
        }
        Output::Json => {
            let text = match explanations {
                [one] => serde_json::to_string_pretty(one),
                many => serde_json::to_string_pretty(many),
            }
            .map_err(|e| ExplainError::Print(e.to_string()))?;
            format!("{text}\n")
        }
        Output::Yaml => match explanations {
            [one] => serde_saphyr::to_string(one),
            many => serde_saphyr::to_string(&many),
        }
        .map_err(|e| ExplainError::Print(e.to_string()))?,
    };
    output::print(&text).map_err(|e| ExplainError::Print(e.to_string()))
}

/// Runs `kube-gc plan`.
pub async fn run_plan(args: PlanArgs) -> Result<(), ExplainError> {
    let controllers = ControllerSelection::parse(&args.controllers)?;
    let (client, discovery) = connect(&args.connection).await?;
    let options = PlanOptions {
        within: args.within,
        namespace: args.namespace.clone(),
        selector: args.selector.clone(),
        controllers,
        settings: args.settings.settings(),
    };
    let report = plan(&client, &discovery, &options, chrono::Utc::now()).await?;
    let text = match args.output {
        Output::Text => plan_text(&report),
        Output::Json => serde_json::to_string_pretty(&report)
            .map(|text| format!("{text}\n"))
            .map_err(|e| ExplainError::Print(e.to_string()))?,
        Output::Yaml => {
            serde_saphyr::to_string(&report).map_err(|e| ExplainError::Print(e.to_string()))?
        }
    };
    output::print(&text).map_err(|e| ExplainError::Print(e.to_string()))
}
