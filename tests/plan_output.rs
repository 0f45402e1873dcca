//! `kube-gc plan` as an operator reads it: one row per object at its earliest deletion (a Job
//! under a retention policy and its own TTL is one row, not two, and the totals count
//! objects), a history limit saying what the group is, a chart scaled to the window, and
//! counts said in proper English.

mod client_support;
mod ttl_support;

use std::time::Duration;

use chrono::Duration as Span;
use kube_gc::client::Discovery;
use kube_gc::explain::plan::{plan, text, PlanOptions, PlanReport};
use kube_gc::manager::ControllerSelection;
use kube_gc::sim::{Gvr, SimConfig};
use serde_json::json;

use ttl_support::{create_job, wire_time, world_with, World};

/// Two finished Jobs with their own TTL of an hour, under a policy keeping the newest one.
async fn scene() -> World {
    let world = world_with(SimConfig::default()).await;
    let (sim, now) = (world.sim(), world.now());
    create_job(sim, "old", Some(3600), Some(now - Span::minutes(10)));
    create_job(sim, "new", Some(3600), Some(now - Span::minutes(5)));
    sim.create(
        &Gvr::new("kube-gc.io", "v1alpha1", "clusterretentionpolicies"),
        json!({"apiVersion": "kube-gc.io/v1alpha1", "kind": "ClusterRetentionPolicy",
            "metadata": {"name": "job-history"},
            "spec": {"preset": "batch-jobs", "successfulHistoryLimit": 1}}),
    )
    .expect("create the policy");
    world
}

async fn plan_of(world: &World, within: Duration, controllers: &[&str]) -> PlanReport {
    let client = &world.harness.client;
    let discovery = Discovery::run(client).await.expect("discovery");
    let options = PlanOptions {
        within,
        controllers: ControllerSelection::parse(controllers).expect("controllers"),
        ..PlanOptions::default()
    };
    plan(client, &discovery, &options, world.now())
        .await
        .expect("plan")
}

#[tokio::test(start_paused = true)]
async fn each_object_is_one_row_at_its_earliest_deletion() {
    let world = scene().await;
    let now = world.now();
    let report = plan_of(&world, Duration::from_secs(7 * 86_400), &["*"]).await;
    let rows: Vec<(&str, &str, bool)> = report
        .deletions
        .iter()
        .map(|r| (r.name.as_str(), r.controller.as_str(), r.due))
        .collect();
    assert_eq!(
        rows,
        [
            ("old", "retention", true),
            ("new", "ttl-after-finished", false)
        ],
        "{report:#?}"
    );
    let old = &report.deletions[0];
    assert_eq!(
        old.reason,
        "history limit 1 successful: 2nd newest of those without a controlling owner in \
         namespace default (ClusterRetentionPolicy job-history)"
    );
    // Its own TTL would delete it later, by the Job TTL controller and by the policy (which
    // takes the Job's own TTL): said beside it, not as rows of their own.
    let also: Vec<(&str, Option<&str>)> = old
        .also
        .iter()
        .map(|a| (a.controller.as_str(), a.deletes_at.as_deref()))
        .collect();
    let expires = wire_time(now - Span::minutes(10) + Span::hours(1));
    assert_eq!(
        also,
        [
            ("ttl-after-finished", Some(expires.as_str())),
            ("retention", Some(expires.as_str()))
        ]
    );
    let new = &report.deletions[1];
    assert_eq!(
        new.deletes_at,
        wire_time(now - Span::minutes(5) + Span::hours(1))
    );
    assert_eq!(new.also[0].controller, "retention");
    assert_eq!(report.by_kind.get("Job"), Some(&2), "objects, not findings");
    assert_eq!(report.by_namespace.get("default"), Some(&2));

    let screen = text(&report);
    assert!(screen.contains("\n2 deletions within 7d\n"), "{screen}");
    assert!(
        screen
            .contains("(ClusterRetentionPolicy job-history) (also: ttl-after-finished, retention)"),
        "{screen}"
    );
    // A week is charted by the day: seven lines and `now`, not 168 hours.
    let chart: Vec<&str> = screen
        .lines()
        .skip_while(|l| *l != "per 1d")
        .skip(1)
        .collect();
    assert_eq!(chart.len(), 8, "{screen}");
    assert!(chart[0].trim_start().starts_with("now █"), "{screen}");
    assert!(chart[1].trim_start().starts_with("+0d █"), "{screen}");
    assert!(chart[7].trim_start().starts_with("+6d"), "{screen}");
}

#[tokio::test(start_paused = true)]
async fn one_deletion_is_said_in_the_singular() {
    let world = scene().await;
    let report = plan_of(&world, Duration::ZERO, &["retention"]).await;
    assert_eq!(report.deletions.len(), 1, "{report:#?}");
    let screen = text(&report);
    assert!(screen.contains("\n1 deletion within 0s\n"), "{screen}");
    // Nothing to chart but `now`: no chart.
    assert!(screen.ends_with("\nby kind: Job 1\n"), "{screen}");
}
