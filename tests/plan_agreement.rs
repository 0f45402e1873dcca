//! `kube-gc plan -o json`, the policies' status and `/metrics` say the same thing about the
//! same cluster: for every controller and retention policy, how many deletions fall within the
//! next hour and day, which come next, and what a policy in `Audit` mode would delete — on the
//! simulated API server, the controllers running (the manager, as `kube-gc run` starts it), the
//! plan read at the same instant.

mod client_support;
mod ttl_support;

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use chrono::{DateTime, Duration as Span, Utc};
use kube_gc::client::config::Environment;
use kube_gc::client::{Client, Discovery};
use kube_gc::explain::plan::{plan, PlanOptions};
use kube_gc::manager::{ControllerSelection, Manager, ManagerOptions};
use kube_gc::metrics::Metrics;
use kube_gc::server::Endpoints;
use kube_gc::sim::{Gvr, SimConfig, SimServer};
use serde_json::{json, Value};
use tokio_util::sync::CancellationToken;
use ttl_support::{create_job, eventually, wire_time, world_with, World};

/// kube-gc's service account, refused the deletion of ConfigMaps: the garbage collector's
/// orphans stay pending.
const KUBE_GC: &str = "system:serviceaccount:kube-system:kube-gc";

fn pods() -> Gvr {
    Gvr::new("", "v1", "pods")
}

fn configmaps() -> Gvr {
    Gvr::new("", "v1", "configmaps")
}

fn cluster_policies() -> Gvr {
    Gvr::new("kube-gc.io", "v1alpha1", "clusterretentionpolicies")
}

fn finished_pod(sim: &SimServer, name: &str, app: &str, finished_at: DateTime<Utc>) {
    let pod = json!({"apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": name, "namespace": "ci", "labels": {"app": app}},
        "spec": {"restartPolicy": "Never", "containers": [{"name": "c", "image": "busybox"}]}});
    let mut created = sim.create(&pods(), pod).expect("create the Pod");
    created["status"] = json!({"phase": "Succeeded", "containerStatuses": [{"name": "c", "state":
        {"terminated": {"exitCode": 0, "startedAt": wire_time(finished_at),
            "finishedAt": wire_time(finished_at)}}}]});
    sim.update_status(&pods(), created).expect("finish the Pod");
}

fn policy(sim: &SimServer, yaml: &str) {
    let object: Value = serde_saphyr::from_str(yaml).expect("policy YAML");
    sim.create(&cluster_policies(), object)
        .expect("create the policy");
}

/// The cluster: an enforcing and an Audit policy on Pods, Jobs with their own TTL, and two
/// ConfigMaps whose owner is gone.
fn scene(world: &World) {
    let (sim, now) = (world.sim(), world.now());
    policy(sim, "metadata: {name: enforced}\nspec: {preset: pods, selector: {matchLabels: {app: a}}, ttlSecondsAfterFinished: 7200}");
    policy(sim, "metadata: {name: trial}\nspec: {preset: pods, mode: Audit, selector: {matchLabels: {app: b}}, ttlSecondsAfterFinished: 3600}");
    // enforced: one due now (deleted at once), one in 30 min, one in 90 min.
    finished_pod(sim, "a-expired", "a", now - Span::hours(3));
    finished_pod(sim, "a-soon", "a", now - Span::minutes(90));
    finished_pod(sim, "a-later", "a", now - Span::minutes(30));
    // trial: two due now (kept: Audit), one in 10 min, one in 20 h.
    finished_pod(sim, "b-expired", "b", now - Span::hours(2));
    finished_pod(sim, "b-expired-too", "b", now - Span::hours(5));
    finished_pod(sim, "b-soon", "b", now - Span::minutes(50));
    finished_pod(sim, "b-tomorrow", "b", now + Span::hours(19));
    // ttl-after-finished: one in 30 min, one in 5 h.
    create_job(sim, "job-soon", Some(1800), Some(now));
    create_job(sim, "job-later", Some(5 * 3600), Some(now));
    for name in ["orphan-1", "orphan-2"] {
        sim.create(
            &configmaps(),
            json!({"apiVersion": "v1", "kind": "ConfigMap",
                "metadata": {"name": name, "namespace": "ci", "ownerReferences": [{"apiVersion": "v1",
                    "kind": "ConfigMap", "name": "gone-owner", "uid": "uid-gone"}]}}),
        )
        .expect("create the orphan");
    }
}

/// A client authenticating as kube-gc's service account.
fn kube_gc_client(sim: &SimServer, dir: &tempfile::TempDir) -> Client {
    let config = client_support::custom_config(
        sim,
        dir.path(),
        "kube-gc-kubeconfig",
        "",
        "kube-gc",
        "{token: kube-gc-token}",
        &Environment::empty(),
    );
    Client::new(&config, &client_support::unthrottled()).expect("client")
}

type Windows = BTreeMap<(String, String, String, bool), (u64, u64)>;

/// Per (controller, policy kind, policy, audit): deletions within the hour and the day, as
/// `/metrics` publishes them (zeros left out).
fn from_metrics(text: &str) -> Windows {
    let mut found = Windows::new();
    for line in text.lines() {
        let (audit, rest) = if let Some(rest) = line.strip_prefix("kube_gc_pending_deletions{") {
            (false, rest)
        } else if let Some(rest) = line.strip_prefix("kube_gc_retention_would_delete_pending{") {
            (true, rest)
        } else {
            continue;
        };
        let (labels, value) = rest.split_once("} ").expect("a sample");
        let label = |name: &str| {
            labels
                .split(',')
                .find_map(|l| l.strip_prefix(&format!("{name}=\"")))
                .map(|v| v.trim_end_matches('"').to_owned())
                .unwrap_or_default()
        };
        let controller = if audit {
            "retention".to_owned()
        } else {
            label("controller")
        };
        let key = (controller, label("policy_kind"), label("policy"), audit);
        let value: u64 = value.parse().expect("a count");
        let entry = found.entry(key).or_default();
        match label("within").as_str() {
            "1h" => entry.0 = value,
            "24h" => entry.1 = value,
            other => panic!("within={other}"),
        }
    }
    found.retain(|_, (hour, day)| *hour + *day > 0);
    found
}

/// The same, from the plan's JSON: each row and each other controller's deletion beside it.
fn from_plan(report: &Value, now: DateTime<Utc>) -> Windows {
    let mut found = Windows::new();
    let text = |v: &Value, k: &str| v[k].as_str().unwrap_or_default().to_owned();
    let mut count = |d: &Value| {
        let at = d["deletesAt"]
            .as_str()
            .and_then(|t| DateTime::parse_from_rfc3339(t).ok())
            .map(|t| t.with_timezone(&Utc));
        let due = d["due"].as_bool().unwrap_or(false);
        let within = |span: Span| due || at.is_some_and(|at| at <= now + span);
        let key = (
            text(d, "controller"),
            text(d, "policyKind"),
            text(d, "policy"),
            d["audit"].as_bool().unwrap_or(false),
        );
        let entry = found.entry(key).or_default();
        entry.0 += u64::from(within(Span::hours(1)));
        entry.1 += u64::from(within(Span::hours(24)));
    };
    for row in report["deletions"].as_array().expect("rows") {
        count(row);
        for also in row["also"].as_array().into_iter().flatten() {
            count(also);
        }
    }
    found
}

#[tokio::test(start_paused = true)]
async fn plan_status_and_metrics_agree_on_what_comes() {
    let config = SimConfig::default()
        .with_namespaces(&["default", "ci"])
        .with_user("kube-gc-token", KUBE_GC, &["system:serviceaccounts"])
        .forbidding(KUBE_GC, "", "configmaps", &["delete"]);
    let world = world_with(config).await;
    scene(&world);
    let sim = world.sim();
    let dir = tempfile::tempdir().expect("tempdir");
    let controllers = ["ttl-after-finished", "retention", "garbagecollector"];
    let selection = ControllerSelection::parse(&controllers).expect("controllers");
    let options = ManagerOptions {
        controllers: selection.clone(),
        retention_status_interval: Duration::from_secs(1),
        ..ManagerOptions::default()
    };
    let endpoints = Endpoints::new(Metrics::new(), false);
    let set = Manager::new(kube_gc_client(sim, &dir), options)
        .clock(Arc::clone(&world.clock))
        .publish_to(&endpoints)
        .start()
        .await
        .expect("start");
    let shutdown = CancellationToken::new();
    let running = tokio::spawn(set.run(shutdown.clone()));
    let status = |name: &str| {
        sim.get(&cluster_policies(), None, name)
            .map(|p| p["status"].clone())
            .unwrap_or_default()
    };
    eventually("the due Pod is deleted and both statuses written", || {
        sim.get(&pods(), Some("ci"), "a-expired").is_err()
            && status("enforced")["deleted"] == 1
            && status("trial")["wouldDelete"] == 2
    })
    .await;
    // The garbage collector has met its refusal: its orphans wait, retried.
    eventually("the collector tried to delete the orphans", || {
        sim.journal()
            .entries()
            .iter()
            .any(|e| e.method == "DELETE" && e.path.ends_with("/configmaps/orphan-1"))
    })
    .await;
    tokio::time::sleep(Duration::from_secs(2)).await;

    let now = world.now();
    let scraped = from_metrics(&endpoints.metrics.encode().expect("metrics"));
    let discovery = Discovery::run(&world.harness.client)
        .await
        .expect("discovery");
    let plan_options = PlanOptions {
        within: Duration::from_secs(86_400),
        controllers: selection,
        ..PlanOptions::default()
    };
    let report = plan(&world.harness.client, &discovery, &plan_options, now)
        .await
        .expect("plan");
    let report = serde_json::to_value(&report).expect("plan -o json");
    let planned = from_plan(&report, now);

    let key = |controller: &str, kind: &str, policy: &str, audit: bool| {
        (
            controller.to_owned(),
            kind.to_owned(),
            policy.to_owned(),
            audit,
        )
    };
    let crp = "ClusterRetentionPolicy";
    let expected = Windows::from([
        (key("garbagecollector", "", "", false), (2, 2)),
        (key("retention", crp, "enforced", false), (1, 2)),
        (key("retention", crp, "trial", true), (3, 4)),
        (key("ttl-after-finished", "", "", false), (1, 2)),
    ]);
    assert_eq!(planned, expected, "plan:\n{report:#}");
    assert_eq!(scraped, expected, "/metrics");

    // The statuses say it too, and list the same deletions first.
    for (name, audit) in [("enforced", false), ("trial", true)] {
        let status = status(name);
        let (hour, day) = expected[&key("retention", crp, name, audit)];
        assert_eq!(status["deletionsWithinHour"], hour, "{name}: {status:#}");
        assert_eq!(status["deletionsWithinDay"], day, "{name}: {status:#}");
        let listed: Vec<&str> = status["nextDeletions"]
            .as_array()
            .expect("nextDeletions")
            .iter()
            .filter_map(|d| d["name"].as_str())
            .collect();
        let mut rows: Vec<(bool, &str, &str)> = report["deletions"]
            .as_array()
            .expect("rows")
            .iter()
            .filter(|r| r["policy"] == name)
            .map(|r| {
                let due = r["due"].as_bool().unwrap_or(false);
                (
                    !due,
                    r["deletesAt"].as_str().unwrap_or(""),
                    r["name"].as_str().unwrap_or(""),
                )
            })
            .collect();
        rows.sort();
        let planned: Vec<&str> = rows.iter().map(|(_, _, name)| *name).collect();
        assert_eq!(listed, planned, "{name}");
    }
    let trial = status("trial");
    assert_eq!(trial["mode"], "Audit");
    let audit_due = report["deletions"]
        .as_array()
        .expect("rows")
        .iter()
        .filter(|r| r["audit"] == true && r["due"] == true)
        .count();
    assert_eq!(trial["wouldDelete"], audit_due);
    assert_eq!(report["auditDeletions"], 4);
    assert_eq!(status("enforced")["wouldDelete"], 0);

    shutdown.cancel();
    running.await.expect("task").expect("ran");
}
