//! `kube-gc plan` and `kube-gc explain` assume what the install runs (`--controllers`, as
//! `run` takes it): under the managed overlay (`volcano-job-ttl,retention`) a Job's own TTL and
//! an orphan are kube-controller-manager's job, so the plan lists neither — and does not even
//! read what only those controllers would need — and `explain` says who does the job instead,
//! and what kube-gc would decide were it run here.

mod client_support;
mod explain_support;
mod ttl_support;

use std::time::Duration;

use kube_gc::client::Discovery;
use kube_gc::explain::plan::{plan, text, PlanOptions, PlanReport};
use kube_gc::explain::VerdictKind;
use kube_gc::manager::ControllerSelection;
use kube_gc::sim::{Gvr, SimConfig};
use serde_json::json;

use explain_support::explain_assuming;
use ttl_support::{create_job, world_with, World};

/// The managed overlay's `--controllers`.
fn managed() -> ControllerSelection {
    ControllerSelection::parse(&["volcano-job-ttl", "retention"]).expect("known controllers")
}

/// A finished Job whose own TTL is up, and a ConfigMap whose only owner is gone.
async fn scene() -> World {
    let world = world_with(SimConfig::default()).await;
    let sim = world.sim();
    create_job(sim, "nightly", Some(0), Some(world.now()));
    let owner = json!([{"apiVersion": "v1", "kind": "ConfigMap", "name": "gone",
        "uid": "0b0e5a6e-0000-4000-8000-000000000001"}]);
    sim.create(
        &Gvr::new("", "v1", "configmaps"),
        json!({"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": "orphan", "namespace": "default", "ownerReferences": owner}}),
    )
    .expect("create the orphan");
    world
}

async fn plan_assuming(world: &World, controllers: ControllerSelection) -> PlanReport {
    let client = &world.harness.client;
    let discovery = Discovery::run(client).await.expect("discovery");
    let options = PlanOptions {
        within: Duration::from_secs(3600),
        controllers,
        ..PlanOptions::default()
    };
    plan(client, &discovery, &options, world.now())
        .await
        .expect("plan")
}

#[tokio::test(start_paused = true)]
async fn plan_lists_only_what_the_controllers_run_here_delete() {
    let world = scene().await;
    let everything = plan_assuming(&world, ControllerSelection::default()).await;
    let names: Vec<&str> = everything
        .deletions
        .iter()
        .map(|r| r.name.as_str())
        .collect();
    assert_eq!(names, ["nightly", "orphan"], "{everything:#?}");

    let journal = world.sim().journal();
    journal.clear();
    let managed = plan_assuming(&world, managed()).await;
    assert!(managed.deletions.is_empty(), "{managed:#?}");
    assert_eq!(
        managed.controllers.running,
        ["volcano-job-ttl", "retention"]
    );
    let screen = text(&managed);
    assert!(
        screen.starts_with(
            "Assuming kube-gc runs: volcano-job-ttl, retention (--controllers)\n\
             ttl-after-finished, garbagecollector, namespace, podgc, pvc-protection, \
             pv-protection: not run here (kube-controller-manager's job on this cluster)\n\n\
             No deletions within 1h.\n"
        ),
        "{screen}"
    );
    // Neither the Jobs (the Job TTL controller's) nor every resource's metadata (the garbage
    // collector's) was read: a controller not run here costs the cluster nothing.
    let paths: Vec<String> = journal.entries().into_iter().map(|e| e.path).collect();
    assert!(
        !paths
            .iter()
            .any(|p| p.starts_with("/apis/batch/v1/") || p.contains("/configmaps")),
        "{paths:#?}"
    );
    let json = serde_json::to_value(&managed).expect("JSON");
    assert_eq!(
        json["controllers"]["notRunHere"][0],
        json!({"controller": "ttl-after-finished",
            "why": "not run here (kube-controller-manager's job on this cluster)",
            "instead": "kube-controller-manager's ttl-after-finished-controller"})
    );
}

#[tokio::test(start_paused = true)]
async fn explain_says_who_does_the_job_of_a_controller_not_run_here() {
    let world = scene().await;
    let now = world.now();
    let orphan = explain_assuming(&world, "configmaps", "default", "orphan", &managed(), now)
        .await
        .expect("explain");
    assert_eq!(orphan.verdict, VerdictKind::Keep, "{orphan:#?}");
    let gc = orphan
        .decisions
        .iter()
        .find(|d| d.controller == "garbagecollector")
        .expect("the collector's decision");
    assert!(!gc.governs, "{gc:?}");
    assert_eq!(
        gc.summary,
        "not run here (kube-controller-manager's job on this cluster)"
    );
    assert!(
        gc.details[0].starts_with("were it run here: delete-now — every owner is gone"),
        "{gc:?}"
    );
    assert!(
        orphan.reasons.iter().any(|r| r.starts_with(
            "garbagecollector, not run here (kube-controller-manager's job on this cluster), \
             would: delete-now"
        )),
        "{:?}",
        orphan.reasons
    );

    let job = explain_assuming(&world, "jobs", "default", "nightly", &managed(), now)
        .await
        .expect("explain");
    assert_eq!(job.verdict, VerdictKind::Keep, "{job:#?}");
    let everything = ControllerSelection::default();
    let job = explain_assuming(&world, "jobs", "default", "nightly", &everything, now)
        .await
        .expect("explain");
    assert_eq!(job.verdict, VerdictKind::DeleteNow, "{job:#?}");
}
