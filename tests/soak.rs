//! The seeded fault-injection soak (issue #9): the real controllers, through the manager,
//! against a simulated API server injecting 5xx, 429s, latency, watch cuts, compactions, one
//! restart, with one controller crash — and the invariants that prove nothing wrong was deleted
//! and nothing due was left behind. See `soak_support` for the workload and the checks.
//!
//! - `cargo test --test soak`: the CI-sized run over [`CI_SEEDS`] and [`REGRESSION_SEEDS`].
//! - `KUBE_GC_SOAK_SEED=n`: replay one seed.
//! - `KUBE_GC_SOAK_SECONDS=s KUBE_GC_SOAK_SEEDS=k`: the long run, `s` simulated seconds of
//!   workload on each of `k` seeds, printing each run's numbers
//!   (`cargo test --test soak -- --nocapture long_soak`).

mod client_support;
mod soak_support;
mod ttl_support;

use std::time::Duration;

use soak_support::{run, sim_config, SoakConfig};

/// Seeds every CI run soaks.
const CI_SEEDS: &[u64] = &[1, 2, 4];

/// Seeds that once broke an invariant, kept so they stay fixed.
/// - 3: after the controller restart, discovery of `batch.volcano.sh` failed (an injected 503)
///   and the manager took the Volcano Job resource for "not served", skipping volcano-job-ttl
///   for the life of the process; expired Volcano Jobs were never deleted. Fixed in
///   `manager::init_ttl`: a resource missing because its group's discovery failed is an error.
const REGRESSION_SEEDS: &[u64] = &[3];

fn env_number(name: &str) -> Option<u64> {
    std::env::var(name).ok()?.parse().ok()
}

/// Runs one seed on a fresh world; panics, naming the seed, on any violation.
async fn soak(config: SoakConfig) {
    let world = ttl_support::world_with(sim_config(config.seed)).await;
    let report = run(&world, &config).await;
    println!("{report}");
    assert!(
        report.violations.is_empty(),
        "soak seed {} broke invariants (replay with KUBE_GC_SOAK_SEED={}):\n{}",
        config.seed,
        config.seed,
        report.violations.join("\n")
    );
    assert!(report.controller_deletions > 0, "the soak deleted nothing");
}

#[tokio::test(start_paused = true)]
async fn ci_soak_over_several_seeds() {
    let seeds: Vec<u64> = match env_number("KUBE_GC_SOAK_SEED") {
        Some(seed) => vec![seed],
        None => CI_SEEDS.iter().chain(REGRESSION_SEEDS).copied().collect(),
    };
    for seed in seeds {
        soak(SoakConfig::ci(seed)).await;
    }
}

#[tokio::test(start_paused = true)]
async fn long_soak() {
    let Some(seconds) = env_number("KUBE_GC_SOAK_SECONDS") else {
        return; // Only on demand: see the module documentation.
    };
    let seeds = env_number("KUBE_GC_SOAK_SEEDS").unwrap_or(1);
    let first = env_number("KUBE_GC_SOAK_SEED").unwrap_or(1000);
    for seed in first..first + seeds {
        let config = SoakConfig {
            duration: Duration::from_secs(seconds),
            ..SoakConfig::ci(seed)
        };
        soak(config).await;
    }
}
