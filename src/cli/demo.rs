//! `kube-gc demo`: runs [`crate::demo`] and prints its summary; exits non-zero when the outcome
//! is not the expected one.

use std::time::Duration;

use clap::Args;

use crate::demo::{DemoError, DemoOptions, WorkloadSize};
use crate::duration::parse_duration;

/// Flags of `kube-gc demo`.
#[derive(Debug, Clone, Args)]
pub struct DemoArgs {
    /// batch/v1 Jobs in the workload.
    #[arg(long, value_name = "N", default_value_t = 300)]
    pub jobs: usize,

    /// Volcano Jobs in the workload.
    #[arg(long, value_name = "N", default_value_t = 100)]
    pub volcano_jobs: usize,

    /// Standalone Pods in the retention scene (a ClusterRetentionPolicy with a TTL); Tekton
    /// PipelineRuns under history limits come with them.
    #[arg(long, value_name = "N", default_value_t = 50)]
    pub pods: usize,

    /// Jobs and Pods finish at random times within this long after the start (Go duration: 5s,
    /// 500ms).
    #[arg(long, value_name = "DURATION", value_parser = parse_duration, default_value = "5s")]
    pub spread: Duration,

    /// Seed of the workload's random finish times and TTLs.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,

    /// The controllers' requests per second to the (simulated) API server; 0 disables throttling.
    #[arg(long, value_name = "QPS", default_value_t = 100.0)]
    pub kube_api_qps: f64,

    /// The controllers' request burst.
    #[arg(long, value_name = "N", default_value_t = 200)]
    pub kube_api_burst: u32,

    /// No live progress line.
    #[arg(long)]
    pub no_progress: bool,
}

/// Runs `kube-gc demo`.
pub async fn run(args: DemoArgs) -> Result<(), DemoError> {
    let options = DemoOptions {
        size: WorkloadSize {
            jobs: args.jobs,
            volcano_jobs: args.volcano_jobs,
            pods: args.pods,
            spread: args.spread,
            seed: args.seed,
        },
        qps: args.kube_api_qps,
        burst: args.kube_api_burst,
        progress: !args.no_progress,
    };
    // The demo goes on for a reader that went away: its verdict is its exit status.
    let _ = super::output::print(&format!(
        "kube-gc demo: {} Jobs, {} Volcano Jobs, a few owner trees, {} standalone Pods and Tekton PipelineRuns under retention policies, and four namespaces (three deleted, one of them held by a finalizer) on a simulated API server; the TTL controllers, the garbage collector, the retention controller, the namespace controller, the pod garbage collector and PVC/PV protection run against it over HTTP.\n",
        args.jobs, args.volcano_jobs, args.pods
    ));
    let summary = crate::demo::run(options).await?;
    let _ = super::output::print(&format!("\n{summary}"));
    if summary.passed() {
        Ok(())
    } else {
        Err(DemoError::Failed {
            problems: summary.problems.len(),
        })
    }
}
