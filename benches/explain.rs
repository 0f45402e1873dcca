//! `kube-gc explain` and `kube-gc plan` against the simulated API server over HTTP:
//! how long one object's explanation takes, and how long a plan of the whole cluster takes with
//! N real-sized Jobs (~6 KB each, `tests/job_support`), every one finished with a TTL.
//!
//! Run: `cargo bench --bench explain` (100,000 Jobs; `EXPLAIN_BENCH_JOBS=10000` for a quicker
//! look). `harness = false`: it prints its numbers. Targets: under 2 s for one object, under
//! 10 s for the plan of 100,000 Jobs.

#[path = "../tests/client_support/mod.rs"]
mod client_support;
#[path = "../tests/job_support/mod.rs"]
mod job_support;

use std::time::{Duration, Instant};

use kube_gc::client::Discovery;
use kube_gc::explain::plan::{plan, PlanOptions};
use kube_gc::explain::{decide, gather, ExplainTarget};
use kube_gc::sim::SimConfig;

use client_support::{start_with, unthrottled};
use job_support::{job_name, seed_jobs};

fn main() {
    let count: usize = std::env::var("EXPLAIN_BENCH_JOBS")
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(100_000);
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("a tokio runtime");
    runtime.block_on(run(count));
}

async fn run(count: usize) {
    let harness = start_with(
        SimConfig::default().with_journal_capacity(1_000),
        unthrottled(),
    )
    .await;
    let seeding = Instant::now();
    seed_jobs(&harness.sim, count);
    println!(
        "seeded {count} Jobs in {:.1} s",
        seeding.elapsed().as_secs_f64()
    );
    let client = &harness.client;

    // One object, as `kube-gc explain jobs/NAME -n NS` runs: discovery, then the reads.
    let (namespace, name) = job_name(count / 2);
    let mut one = Vec::new();
    for _ in 0..5 {
        let started = Instant::now();
        let discovery = Discovery::run(client).await.expect("discovery");
        let target = ExplainTarget {
            type_: "jobs".into(),
            name: name.clone(),
            namespace: namespace.clone(),
        };
        let explanation = decide(
            &gather(client, &discovery, &target).await.expect("gather"),
            chrono::Utc::now(),
        );
        one.push(started.elapsed());
        assert_eq!(explanation.object.name, name);
    }
    one.sort();
    println!(
        "explain one Job: median {:.0} ms, max {:.0} ms (5 runs; target < 2 s)",
        ms(one[2]),
        ms(one[4])
    );

    // The whole cluster, as `kube-gc plan --within 24h` runs.
    let started = Instant::now();
    let discovery = Discovery::run(client).await.expect("discovery");
    let options = PlanOptions {
        within: Duration::from_secs(86_400),
        ..PlanOptions::default()
    };
    let report = plan(client, &discovery, &options, chrono::Utc::now())
        .await
        .expect("plan");
    let took = started.elapsed();
    println!(
        "plan of {count} Jobs: {:.2} s, {} deletions listed (target < 10 s for 100,000)",
        took.as_secs_f64(),
        report.deletions.len()
    );
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}
