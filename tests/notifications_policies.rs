//! Notifications as `kube-gc run` sends them, against the simulated API server and a local
//! receiver on tokio's paused clock: `--notify-webhook-url` hears of every deletion, a policy's
//! own destination (a Secret's key) of its own; a Secret that is missing, lacks the key, holds
//! no URL or may not be read is a clear `Notifying` condition on the policy; and a receiver that
//! never answers does not delay a single deletion.

mod client_support;
mod notify_support;
mod ttl_support;

use std::sync::Arc;
use std::time::Duration;

use base64::Engine;
use chrono::{DateTime, Utc};
use kube_gc::client::config::Environment;
use kube_gc::client::Client;
use kube_gc::manager::{ControllerSelection, Manager, ManagerOptions};
use kube_gc::metrics::Metrics;
use kube_gc::notify::{NotifyOptions, WebhookUrl};
use kube_gc::server::Endpoints;
use kube_gc::sim::{Gvr, SimConfig, SimServer};
use notify_support::{Answer, Receiver};
use serde_json::{json, Value};
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;
use ttl_support::{eventually, wire_time, world_with, World};

const KUBE_GC: &str = "system:serviceaccount:kube-system:kube-gc";

fn pods() -> Gvr {
    Gvr::new("", "v1", "pods")
}

fn secrets() -> Gvr {
    Gvr::new("", "v1", "secrets")
}

fn finished_pod(sim: &SimServer, namespace: &str, name: &str, finished_at: DateTime<Utc>) {
    let pod = json!({"apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": name, "namespace": namespace, "labels": {"app": name}},
        "spec": {"restartPolicy": "Never", "containers": [{"name": "c", "image": "busybox"}]}});
    let mut created = sim.create(&pods(), pod).expect("create the Pod");
    created["status"] = json!({"phase": "Succeeded", "containerStatuses": [{"name": "c", "state":
        {"terminated": {"exitCode": 0, "startedAt": wire_time(finished_at),
            "finishedAt": wire_time(finished_at)}}}]});
    sim.update_status(&pods(), created).expect("finish the Pod");
}

fn secret(sim: &SimServer, namespace: &str, name: &str, key: &str, value: &str) {
    let data = base64::engine::general_purpose::STANDARD.encode(value);
    sim.create(
        &secrets(),
        json!({"apiVersion": "v1", "kind": "Secret",
            "metadata": {"name": name, "namespace": namespace}, "data": {key: data}}),
    )
    .expect("create the Secret");
}

fn policy(sim: &SimServer, yaml: &str) {
    let object: Value = serde_saphyr::from_str(yaml).expect("policy YAML");
    let gvr = if object["metadata"]["namespace"].is_string() {
        Gvr::new("kube-gc.io", "v1alpha1", "retentionpolicies")
    } else {
        Gvr::new("kube-gc.io", "v1alpha1", "clusterretentionpolicies")
    };
    sim.create(&gvr, object).expect("create the policy");
}

/// The `Notifying` condition of a policy (`namespace` `None`: a cluster policy).
fn notifying(sim: &SimServer, namespace: Option<&str>, name: &str) -> Value {
    let gvr = match namespace {
        Some(_) => Gvr::new("kube-gc.io", "v1alpha1", "retentionpolicies"),
        None => Gvr::new("kube-gc.io", "v1alpha1", "clusterretentionpolicies"),
    };
    let policy = sim.get(&gvr, namespace, name).unwrap_or_default();
    policy["status"]["conditions"]
        .as_array()
        .into_iter()
        .flatten()
        .find(|c| c["type"] == "Notifying")
        .cloned()
        .unwrap_or_default()
}

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

struct Running {
    shutdown: CancellationToken,
    task: JoinHandle<Result<(), kube_gc::manager::ControllerFailed>>,
    metrics: Metrics,
    _dir: tempfile::TempDir,
}

impl Running {
    async fn stop(self) {
        self.shutdown.cancel();
        self.task.await.expect("task").expect("ran");
    }
}

/// kube-gc's retention controller as `kube-gc run` starts it, notifying `flag` (if given)
/// every minute.
async fn run(world: &World, flag: Option<String>) -> Running {
    let dir = tempfile::tempdir().expect("tempdir");
    let options = ManagerOptions {
        controllers: ControllerSelection::parse(&["retention"]).expect("controllers"),
        retention_status_interval: Duration::from_secs(1),
        notify: NotifyOptions {
            webhook: flag.map(|url| WebhookUrl::parse(&url).expect("url")),
            ..NotifyOptions::default()
        },
        ..ManagerOptions::default()
    };
    let endpoints = Endpoints::new(Metrics::new(), false);
    let set = Manager::new(kube_gc_client(world.sim(), &dir), options)
        .clock(Arc::clone(&world.clock))
        .publish_to(&endpoints)
        .start()
        .await
        .expect("start");
    let shutdown = CancellationToken::new();
    let task = tokio::spawn(set.run(shutdown.clone()));
    Running {
        shutdown,
        task,
        metrics: endpoints.metrics.clone(),
        _dir: dir,
    }
}

fn config() -> SimConfig {
    SimConfig::default()
        .with_namespaces(&["ci", "ops"])
        .with_user("kube-gc-token", KUBE_GC, &["system:serviceaccounts"])
}

#[tokio::test(start_paused = true)]
async fn the_flag_hears_of_everything_and_a_policy_of_its_own_or_says_why_not() {
    let world = world_with(config()).await;
    let sim = world.sim();
    let (flag, own) = (
        Receiver::start(Answer::Accept).await,
        Receiver::start(Answer::Accept).await,
    );
    secret(sim, "ci", "slack", "url", &format!("{}\n", own.url()));
    secret(sim, "ops", "not-a-url", "url", "hooks.example.com/s3cret");
    secret(
        sim,
        "ci",
        "dead",
        "url",
        &notify_support::refusing_url().await,
    );
    policy(sim, "metadata: {name: builds, namespace: ci}\nspec: {preset: pods, selector: {matchLabels: {app: done}}, ttlSecondsAfterFinished: 60, notification: {webhookSecretRef: {name: slack}}}");
    policy(sim, "metadata: {name: unreachable, namespace: ci}\nspec: {preset: pods, selector: {matchLabels: {app: unheard}}, ttlSecondsAfterFinished: 60, notification: {webhookSecretRef: {name: dead}}}");
    policy(sim, "metadata: {name: wrong-key, namespace: ci}\nspec: {preset: pods, selector: {matchLabels: {none: x}}, notification: {webhookSecretRef: {name: slack, key: hook}}}");
    policy(sim, "metadata: {name: missing}\nspec: {preset: pods, selector: {matchLabels: {none: x}}, notification: {webhookSecretRef: {namespace: ops, name: nothing-here}}}");
    policy(sim, "metadata: {name: garbled}\nspec: {preset: pods, selector: {matchLabels: {none: x}}, notification: {webhookSecretRef: {namespace: ops, name: not-a-url}}}");
    policy(sim, "metadata: {name: elsewhere}\nspec: {preset: pods, namespaceSelector: {matchLabels: {team: ops}}, ttlSecondsAfterFinished: 60}");
    let now = world.now();
    finished_pod(sim, "ci", "done", now - chrono::Duration::hours(1));
    finished_pod(sim, "ci", "unheard", now - chrono::Duration::hours(1));
    let running = run(&world, Some(flag.url())).await;

    eventually("both receivers heard of the deletion", || {
        !flag.received().is_empty() && !own.received().is_empty()
    })
    .await;
    let theirs = &own.received()[0].body;
    assert_eq!(theirs["destination"], "RetentionPolicy/ci/builds");
    assert_eq!(theirs["deleted"]["items"][0]["name"], "done");
    assert_eq!(theirs["deleted"]["items"][0]["policy"], "ci/builds");
    let everything = &flag.received()[0].body;
    assert_eq!(everything["destination"], "--notify-webhook-url");
    assert_eq!(
        everything["deleted"]["total"], 2,
        "both policies' deletions"
    );
    assert!(
        sim.get(&pods(), Some("ci"), "unheard").is_err(),
        "a receiver that refuses does not keep a deletion from happening"
    );

    eventually("each policy's Notifying condition is written", || {
        notifying(sim, Some("ci"), "builds")["reason"] == "Delivered"
            && notifying(sim, Some("ci"), "wrong-key")["status"] == "False"
            && notifying(sim, None, "missing")["status"] == "False"
            && notifying(sim, None, "garbled")["status"] == "False"
    })
    .await;
    let delivered = notifying(sim, Some("ci"), "builds");
    assert_eq!(delivered["status"], "True");
    let message = delivered["message"].as_str().unwrap_or_default();
    assert!(
        message.starts_with("batches are delivered to http://127.0.0.1:"),
        "{message}"
    );
    assert!(
        !message.contains("s3cr3t"),
        "the URL's secret part is never shown: {message}"
    );
    let condition = notifying(sim, Some("ci"), "wrong-key");
    assert_eq!(condition["reason"], "SecretKeyMissing");
    assert_eq!(condition["message"], "Secret ci/slack has no key \"hook\"");
    let condition = notifying(sim, None, "missing");
    assert_eq!(condition["reason"], "SecretNotFound");
    assert_eq!(
        condition["message"],
        "Secret ops/nothing-here does not exist"
    );
    eventually("the unreachable receiver's batch is given up on", || {
        notifying(sim, Some("ci"), "unreachable")["reason"] == "Undeliverable"
    })
    .await;
    let condition = notifying(sim, Some("ci"), "unreachable");
    assert_eq!(condition["status"], "False");
    let message = condition["message"].as_str().unwrap_or_default();
    assert!(message.contains("could not connect"), "{message}");
    assert!(
        message.ends_with("until the next batch was due; it was dropped"),
        "{message}"
    );
    let condition = notifying(sim, None, "garbled");
    assert_eq!(condition["reason"], "InvalidURL");
    let message = condition["message"].as_str().unwrap_or_default();
    assert!(!message.contains("s3cret"), "{message}");
    assert_eq!(
        notifying(sim, None, "elsewhere"),
        Value::Null,
        "no destination of its own: no condition"
    );
    let text = running.metrics.encode().expect("metrics");
    assert!(
        text.lines().any(|l| l
            == r#"kube_gc_notification_batches_sent_total{destination="RetentionPolicy/ci/builds"} 1"#),
        "{text}"
    );
    running.stop().await;
}

#[tokio::test(start_paused = true)]
async fn a_secret_kube_gc_may_not_read_says_which_role_to_bind() {
    let world = world_with(config().forbidding(KUBE_GC, "", "secrets", &["get"])).await;
    let sim = world.sim();
    policy(sim, "metadata: {name: builds, namespace: ci}\nspec: {preset: pods, notification: {webhookSecretRef: {name: slack}}}");
    let running = run(&world, None).await;
    eventually("the condition says the Secret may not be read", || {
        notifying(sim, Some("ci"), "builds")["reason"] == "SecretForbidden"
    })
    .await;
    let condition = notifying(sim, Some("ci"), "builds");
    assert_eq!(condition["status"], "False");
    let message = condition["message"].as_str().unwrap_or_default();
    assert!(
        message.contains("kubectl create rolebinding kube-gc-notification-secrets -n ci --clusterrole=kube-gc:retention-notification-secrets"),
        "{message}"
    );
    running.stop().await;
}

#[tokio::test(start_paused = true)]
async fn a_receiver_that_never_answers_delays_no_deletion() {
    let world = world_with(config()).await;
    let sim = world.sim();
    let silent = Receiver::start(Answer::Slowly(Duration::from_secs(86_400))).await;
    policy(
        sim,
        "metadata: {name: pods}\nspec: {preset: pods, ttlSecondsAfterFinished: 60}",
    );
    let now = world.now();
    for i in 0..20 {
        finished_pod(
            sim,
            "ci",
            &format!("p{i}"),
            now + chrono::Duration::seconds(i * 10),
        );
    }
    let running = run(&world, Some(silent.url())).await;
    // Each Pod goes 60 s after it finished, on time, while the receiver holds every request.
    for i in 0..20 {
        let name = format!("p{i}");
        eventually(&format!("{name} is deleted"), || {
            sim.get(&pods(), Some("ci"), &name).is_err()
        })
        .await;
        let expiry = now + chrono::Duration::seconds(i * 10 + 60);
        let late = (world.now() - expiry).num_milliseconds();
        assert!(late <= 1000, "{name} deleted {late} ms after its expiry");
    }
    assert!(!silent.received().is_empty(), "the receiver was tried");
    running.stop().await;
}
