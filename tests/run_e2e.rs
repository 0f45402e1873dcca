//! `kube-gc run` end to end, as an operator runs it: the real binary against the simulated API
//! server, with leader election, the HTTP endpoints, Events and both kinds of collection.
//!
//! - One replica: a Foreground TTL deletion of a Job with a Pod cascades through the garbage
//!   collector; a Job without a finish time gets a Warning Event; `/readyz`, `/metrics` (parsed)
//!   and the debug pages answer; SIGTERM releases the Lease and exits 0; and every request in
//!   the journal is allowed by the RBAC in `deploy/`.
//! - Two replicas: one leads; SIGKILL it and the other takes over within the lease duration
//!   plus a retry; every write to the cluster came from the replica leading at the time.
//! - A leader whose renewals fail logs "leaderelection lost" and exits 1.
//! - After an API server restart, a Job that finishes and an owner deleted afterwards are still
//!   collected (the relist is served from the restarted watch cache).
//! - While the API server is stopped, `/readyz` fails naming it, `/metrics` counts the Job
//!   waiting for it, the log says so once; the Job that expired meanwhile is deleted within a
//!   second or so of the server's return.

mod deploy_support;
mod run_support;
mod server_support;

use std::time::Duration;

use chrono::Utc;
use kube_gc::sim::faults::{FaultPlan, Verb};
use kube_gc::sim::journal::JournalEntry;
use kube_gc::sim::{SimConfig, SimServer};
use serde_json::{json, Value};

use deploy_support::{denied_in_journal, Request};
use run_support::*;

const LIMIT: Duration = Duration::from_secs(60);

/// A replica serving plain HTTP on loopback, ready.
struct Ready {
    replica: Replica,
    address: std::net::SocketAddr,
    http: reqwest::Client,
    /// Kept for the replica's life: it reads its credentials from there.
    _kubeconfig: Kubeconfig,
}

impl Ready {
    /// Starts replica `name` against `sim` with `flags` beside the HTTP ones, and waits up to
    /// `within` for its `/readyz` to pass.
    async fn start(sim: &SimServer, name: &str, flags: &[&str], within: Duration) -> Ready {
        let kubeconfig = Kubeconfig::for_sim(sim);
        let port = free_port().to_string();
        let http_flags = [
            "--secure-port=0",
            "--bind-address=127.0.0.1",
            "--port",
            &port,
        ];
        let replica = Replica::start(name, &kubeconfig.path(), &[&http_flags[..], flags].concat());
        let address = replica.http_address().await;
        let http = server_support::http_client(None);
        let readyz = poll_readyz(&http, address, within).await;
        assert_eq!(readyz.0, 200, "never ready: {readyz:?}\n{}", replica.log());
        Ready {
            replica,
            address,
            http,
            _kubeconfig: kubeconfig,
        }
    }

    /// One replica without leader election.
    async fn solo(sim: &SimServer) -> Ready {
        Ready::start(
            sim,
            "solo",
            &["--leader-elect=false"],
            Duration::from_secs(30),
        )
        .await
    }
}

/// A Job in `default`, TTL 0, Complete with no time saying when (a Warning Event, never a
/// deletion); its UID.
fn finished_without_a_time(sim: &SimServer, name: &str) -> String {
    let mut job = sim
        .create(
            &jobs(),
            json!({"apiVersion": "batch/v1", "kind": "Job",
                "metadata": {"name": name, "namespace": "default"},
                "spec": {"ttlSecondsAfterFinished": 0}}),
        )
        .expect("create");
    let uid = job["metadata"]["uid"].as_str().expect("uid").to_owned();
    job["status"] = json!({"conditions": [{"type": "Complete", "status": "True"}]});
    sim.update_status(&jobs(), job).expect("finish");
    uid
}

fn events_with_reason(sim: &SimServer, reason: &str) -> Vec<Value> {
    let events = kube_gc::sim::Gvr::new("", "v1", "events");
    sim.list(&events, Some("default"))
        .unwrap_or_default()
        .into_iter()
        .filter(|e| e["reason"] == reason)
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn run_cascades_reports_serves_metrics_and_stays_within_its_rbac() {
    let sim = SimServer::start(SimConfig::default())
        .await
        .expect("start the sim");
    let kubeconfig = Kubeconfig::for_sim(&sim);
    let job = create_expired_job(&sim, "done");
    let pod = json!({"apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": "done-worker", "namespace": "default",
            "ownerReferences": [{"apiVersion": "batch/v1", "kind": "Job", "name": "done",
                "uid": job["metadata"]["uid"], "controller": true, "blockOwnerDeletion": true}]},
        "spec": {"containers": [{"name": "main", "image": "busybox:1.36"}]}});
    let pod = sim.create(&pods(), pod).expect("create the pod");
    // Finished, with no time saying when: a Warning Event, never a deletion.
    let unknown_uid = finished_without_a_time(&sim, "when");

    let port = free_port().to_string();
    let replica = Replica::start(
        "solo",
        &kubeconfig.path(),
        &[
            &["--secure-port=0", "--bind-address=127.0.0.1"][..],
            &["--port", &port, "--enable-debug-handlers"],
            &FAST_ELECTION,
        ]
        .concat(),
    );
    let address = replica.http_address().await;
    let gone = tokio::time::timeout(
        LIMIT,
        sim.wait_for(&jobs(), Some("default"), "done", |o| o.is_none()),
    )
    .await;
    assert!(
        gone.is_ok(),
        "the Job was not collected:\n{}",
        replica.log()
    );
    assert!(sim.get(&pods(), Some("default"), "done-worker").is_err());
    let reported = wait_until(LIMIT, || {
        !events_with_reason(&sim, "FinishTimeUnknown").is_empty()
    })
    .await;
    assert!(reported.is_some(), "no Event:\n{}", replica.log());
    assert!(sim.get(&jobs(), Some("default"), "when").is_ok());

    let http = server_support::http_client(None);
    let readyz = poll_readyz(&http, address, Duration::from_secs(5)).await;
    assert_eq!((readyz.0, readyz.2.as_str()), (200, "ok"), "{readyz:?}");

    let (status, _, text) = http_get(&http, address, "/metrics").await;
    assert_eq!(status, 200);
    let metrics = server_support::parse(&text).expect("/metrics parses");
    for prefix in [
        "workqueue_",
        "rest_client_",
        "ttl_after_finished_",
        "garbagecollector_",
        "kube_gc_reflector_",
    ] {
        assert!(
            metrics.samples.iter().any(|s| s.name.starts_with(prefix)),
            "no {prefix}* series in\n{text}"
        );
    }
    // Both controllers read Jobs, through one list and watch: one series, naming both.
    let lists = metrics.value(
        "kube_gc_reflector_lists_total",
        &[
            ("controller", "garbagecollector,ttl-after-finished"),
            ("resource", "batch/v1/jobs"),
        ],
    );
    assert_eq!(lists, Some(1.0), "{text}");
    let ttl_deletions = metrics.value(
        "ttl_after_finished_controller_deletions_total",
        &[("kind", "Job")],
    );
    assert_eq!(ttl_deletions, Some(1.0), "{text}");
    let gc_deletions: f64 = metrics
        .samples
        .iter()
        .filter(|s| s.name == "garbagecollector_deletions_total")
        .map(|s| s.value)
        .sum();
    assert_eq!(gc_deletions, 1.0, "the Pod: {text}");

    for path in [
        "/debug/controllers/garbage-collector-controller/graph",
        "/debug/controllers/garbagecollector/graph",
    ] {
        let (status, content_type, body) = http_get(&http, address, path).await;
        assert_eq!((status, content_type.as_str()), (200, "text/vnd.graphviz"));
        assert!(body.starts_with("strict digraph"), "{body}");
    }
    let when_uid = unknown_uid.as_str();
    let path = format!("/debug/controllers/garbagecollector/graph?uid={when_uid}");
    let (_, _, one) = http_get(&http, address, &path).await;
    assert!(
        one.contains(when_uid) && !one.contains("kube-public"),
        "{one}"
    );
    let (status, _, queues) = http_get(&http, address, "/debug/workqueue").await;
    assert_eq!(status, 200);
    let queues: Value = serde_json::from_str(&queues).expect("JSON");
    let names: Vec<&str> = queues["queues"]
        .as_array()
        .expect("queues")
        .iter()
        .filter_map(|q| q["name"].as_str())
        .collect();
    assert!(
        names.contains(&"garbage_collector_attempt_to_delete") && names.len() >= 3,
        "{names:?}"
    );

    let pod_uid = pod["metadata"]["uid"].as_str().expect("uid");
    let logged = replica.log_lines(pod_uid);
    assert!(
        logged
            .iter()
            .any(|l| l["propagation_policy"] == "Background"
                && l["kind"] == "Pod"
                && l["name"] == "done-worker"
                && l["namespace"] == "default"
                && l["reason"].is_string()),
        "the Pod's deletion is not logged: {logged:?}"
    );
    let job_uid = job["metadata"]["uid"].as_str().expect("uid");
    assert!(
        replica
            .log_lines(job_uid)
            .iter()
            .any(|l| l["propagation_policy"] == "Foreground"
                && l["controller"] == "ttl-after-finished"
                && l["reason"].is_string()),
        "the Job's deletion is not logged:\n{}",
        replica.log()
    );

    assert_eq!(
        lease_holder(&sim).map(|h| h.starts_with("solo_")),
        Some(true)
    );
    replica.terminate();
    let (status, log) = replica.wait();
    assert!(status.success(), "{status:?}\n{log}");
    assert_eq!(lease_holder(&sim), None, "the Lease was not released");

    let journal = sim.journal().entries();
    assert!(journal.iter().any(|e| e.path.contains("/leases/")));
    assert!(journal.iter().any(|e| e.path.contains("/events")));
    assert_eq!(denied_in_journal(&journal), Vec::<Request>::new());
    sim.shutdown().await;
}

/// Writes to the cluster, other than the Lease and Events: what only a leader may send.
fn cluster_writes(journal: &[JournalEntry]) -> Vec<&JournalEntry> {
    journal
        .iter()
        .filter(|e| matches!(e.verb, Verb::Delete | Verb::Patch | Verb::Update))
        .filter(|e| !e.path.contains("/leases/") && !e.path.contains("/events"))
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_replicas_elect_one_leader_and_fail_over_when_it_is_killed() {
    let sim = SimServer::start(SimConfig::default())
        .await
        .expect("start the sim");
    let kubeconfig = Kubeconfig::for_sim(&sim);
    create_expired_job(&sim, "before");
    let flags = [&["--secure-port=0"][..], &FAST_ELECTION].concat();
    let mut replicas = vec![
        Replica::start("replica-a", &kubeconfig.path(), &flags),
        Replica::start("replica-b", &kubeconfig.path(), &flags),
    ];
    let elected = wait_until(LIMIT, || lease_holder(&sim).is_some()).await;
    assert!(elected.is_some(), "nobody leads");
    let first = lease_holder(&sim).expect("a holder");
    let leader = replicas
        .iter()
        .position(|r| first.starts_with(&format!("{}_", r.name)))
        .expect("the holder is one of the replicas");
    let gone = tokio::time::timeout(
        LIMIT,
        sim.wait_for(&jobs(), Some("default"), "before", |o| o.is_none()),
    )
    .await;
    assert!(gone.is_ok(), "{}", replicas[leader].log());

    let killed_at = Utc::now();
    replicas[leader].kill();
    let dead = replicas.remove(leader);
    create_expired_job(&sim, "after");
    let took = wait_until(LIMIT, || {
        lease_holder(&sim).is_some_and(|holder| holder != first)
    })
    .await
    .expect("nobody took over");
    // Followers take over `lease duration` after the last renewal they saw, at their next
    // (jittered) retry; the slack is for a loaded machine.
    let bound = LEASE_DURATION + RETRY_PERIOD.mul_f64(2.2) + Duration::from_secs(2);
    assert!(took <= bound, "took over after {took:?} (bound {bound:?})");
    let second = lease_holder(&sim).expect("a holder");
    let survivor = &replicas[0];
    assert!(second.starts_with(&format!("{}_", survivor.name)));
    let gone = tokio::time::timeout(
        LIMIT,
        sim.wait_for(&jobs(), Some("default"), "after", |o| o.is_none()),
    )
    .await;
    assert!(gone.is_ok(), "{}", survivor.log());

    // A follower stopped by SIGTERM has nothing to drain and exits 0 without ever leading.
    let follower = Replica::start("replica-c", &kubeconfig.path(), &flags);
    let competing = wait_until(LIMIT, || {
        !follower
            .log_lines("attempting to acquire leader lease")
            .is_empty()
    })
    .await;
    assert!(competing.is_some(), "{}", follower.log());
    follower.terminate();
    let (status, log) = follower.wait();
    assert!(status.success(), "{status:?}\n{log}");
    assert!(!log.contains("successfully acquired lease"), "{log}");
    assert_eq!(
        lease_holder(&sim),
        Some(second),
        "a follower released the lease"
    );

    let journal = sim.journal().entries();
    let writes = cluster_writes(&journal);
    let deletes = |replica: &Replica| {
        writes
            .iter()
            .filter(|e| e.verb == Verb::Delete && replica.sent(e.header("user-agent")))
            .count()
    };
    assert_eq!((deletes(&dead), deletes(survivor)), (1, 1), "{writes:#?}");
    // No overlap: every write of the dead leader arrived before it was killed, and before any
    // write of the survivor (journal order), which all came after the kill.
    let first_of_survivor = writes
        .iter()
        .find(|e| survivor.sent(e.header("user-agent")))
        .map(|e| e.seq);
    for write in &writes {
        let agent = write.header("user-agent");
        assert!(dead.sent(agent) || survivor.sent(agent), "{write:?}");
        if dead.sent(agent) {
            assert!(write.at <= killed_at, "the dead leader wrote: {write:?}");
            assert!(
                first_of_survivor.is_none_or(|first| write.seq < first),
                "the leaders overlapped: {write:?}"
            );
        } else {
            assert!(
                write.at > killed_at,
                "the follower wrote while not leading: {write:?}"
            );
        }
    }
    drop(dead);
    let survivor = replicas.remove(0);
    survivor.terminate();
    let (status, log) = survivor.wait();
    assert!(status.success(), "{status:?}\n{log}");
    sim.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_leader_whose_renewals_fail_stops_and_exits_1() {
    let sim = SimServer::start(SimConfig::default())
        .await
        .expect("start the sim");
    let kubeconfig = Kubeconfig::for_sim(&sim);
    let flags = [&["--secure-port=0"][..], &FAST_ELECTION].concat();
    let replica = Replica::start("lonely", &kubeconfig.path(), &flags);
    let elected = wait_until(LIMIT, || lease_holder(&sim).is_some()).await;
    assert!(elected.is_some(), "{}", replica.log());
    // Every renewal (a PUT of the Lease) fails from now on.
    sim.faults()
        .set_plan(FaultPlan::new(1).fail(Verb::Update, 1.0, &[500]));
    let (status, log) = replica.wait();
    assert_eq!(status.code(), Some(1), "{log}");
    assert!(log.contains("leaderelection lost"), "{log}");
    sim.shutdown().await;
}

/// The bug an API server restart once caused: afterwards the informers must still see
/// new objects. The watch caches restart at the current revision, so every watch gets a 410 and
/// every reflector relists; a Job that finishes after the restart is still deleted, and the
/// dependents of an owner deleted after it are still collected.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn run_keeps_collecting_after_the_api_server_restarts() {
    let sim = SimServer::start(SimConfig::default())
        .await
        .expect("start the sim");
    let configmaps = kube_gc::sim::Gvr::new("", "v1", "configmaps");
    // `_kubeconfig` is bound, not dropped: the replica keeps reading it.
    let Ready {
        replica,
        _kubeconfig,
        ..
    } = Ready::solo(&sim).await;

    // Writes move the revision on before the restart, as in exchanges 56-60 (1587 -> 1592):
    // every reflector but the ConfigMaps' is then behind the restarted watch caches.
    create_expired_job(&sim, "before-restart");
    sim.create(
        &configmaps,
        json!({"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": "unrelated", "namespace": "default"}}),
    )
    .expect("create");
    sim.restart();
    let job = create_expired_job(&sim, "after-restart");
    let owner = sim
        .create(
            &configmaps,
            json!({"apiVersion": "v1", "kind": "ConfigMap",
                "metadata": {"name": "owner", "namespace": "default"}}),
        )
        .expect("create the owner");
    sim.create(
        &pods(),
        json!({"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": "dependent", "namespace": "default",
                "ownerReferences": [{"apiVersion": "v1", "kind": "ConfigMap", "name": "owner",
                    "uid": owner["metadata"]["uid"]}]},
            "spec": {"containers": [{"name": "main", "image": "busybox:1.36"}]}}),
    )
    .expect("create the dependent");
    // Whether the collector sees the dependent before or after its owner goes, an owner
    // deleted after the restart must take its dependent with it.
    sim.delete(
        &configmaps,
        Some("default"),
        "owner",
        &kube_gc::sim::DeleteOptions::propagation(kube_gc::sim::Propagation::Background),
    )
    .expect("delete the owner");

    let job_gone = tokio::time::timeout(
        LIMIT,
        sim.wait_for(&jobs(), Some("default"), "after-restart", |o| o.is_none()),
    )
    .await;
    assert!(
        job_gone.is_ok(),
        "the Job finished after the restart was not deleted (uid {}):\n{}",
        job["metadata"]["uid"],
        replica.log()
    );
    let dependent_gone = tokio::time::timeout(
        LIMIT,
        sim.wait_for(&pods(), Some("default"), "dependent", |o| o.is_none()),
    )
    .await;
    assert!(
        dependent_gone.is_ok(),
        "the dependent of an owner deleted after the restart was not collected:\n{}",
        replica.log()
    );
    replica.terminate();
    let (status, _) = replica.wait();
    assert!(status.success());
}

/// A Job that expires while the API server is stopped is deleted as soon as it is back; in
/// between, kube-gc says it cannot act, once, and its readiness and metrics say so too.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn run_says_it_waits_for_a_stopped_api_server_and_resumes_when_it_returns() {
    let sim = SimServer::start(SimConfig::default())
        .await
        .expect("start the sim");
    let Ready {
        replica,
        address,
        http,
        _kubeconfig,
    } = Ready::solo(&sim).await;

    // Finished now, 2 s to live: it falls due while the server is away.
    let mut job = sim
        .create(
            &jobs(),
            json!({"apiVersion": "batch/v1", "kind": "Job",
                "metadata": {"name": "expires-in-the-outage", "namespace": "default"},
                "spec": {"ttlSecondsAfterFinished": 2}}),
        )
        .expect("create the job");
    job["status"] = json!({"conditions": [{"type": "Complete", "status": "True",
        "lastTransitionTime": Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Secs, true)}]});
    sim.update_status(&jobs(), job).expect("finish the job");
    // The TTL controller has seen the Job finish (the Jobs' one watch, which it shares with the
    // collector, counted the MODIFIED event).
    let finished = r#"kube_gc_reflector_events_total{controller="garbagecollector,ttl-after-finished",resource="batch/v1/jobs",type="MODIFIED"} 1"#;
    let started = std::time::Instant::now();
    loop {
        let (_, _, metrics) = http_get(&http, address, "/metrics").await;
        if metrics.lines().any(|line| line == finished) {
            break;
        }
        assert!(
            started.elapsed() < LIMIT,
            "never saw the Job finish:\n{metrics}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let logged_before = replica.log().lines().count();
    sim.stop_apiserver().await;

    let waiting = r#"kube_gc_workqueue_waiting_for_apiserver{name="ttl_jobs_to_delete"} 1"#;
    let started = std::time::Instant::now();
    let metrics = loop {
        let (_, _, metrics) = http_get(&http, address, "/metrics").await;
        if metrics.lines().any(|line| line == waiting) || started.elapsed() > LIMIT {
            break metrics;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    assert!(
        metrics.lines().any(|line| line == waiting),
        "the expired Job waits for the server:\n{metrics}\n{}",
        replica.log()
    );
    assert!(metrics
        .lines()
        .any(|line| line == "kube_gc_apiserver_available 0"));
    let (status, _, body) = http_get(&http, address, "/readyz").await;
    assert_eq!(status, 500, "{body}");
    assert!(
        body.contains("[-]api-server failed: the API server has not answered for"),
        "{body}"
    );

    // The controller's Warning comes one probe interval after its first key parked.
    let warned = wait_until(LIMIT, || {
        replica
            .log()
            .contains("keys wait for it instead of backing off")
    })
    .await;
    assert!(warned.is_some(), "{}", replica.log());
    let back = std::time::Instant::now();
    sim.start_apiserver()
        .await
        .expect("the API server starts again");
    let gone = tokio::time::timeout(
        LIMIT,
        sim.wait_for(&jobs(), Some("default"), "expires-in-the-outage", |o| {
            o.is_none_or(|o| o["metadata"]["deletionTimestamp"].is_string())
        }),
    )
    .await;
    let latency = back.elapsed();
    assert!(gone.is_ok(), "never deleted:\n{}", replica.log());
    assert!(
        latency < Duration::from_secs(2),
        "deleted {latency:?} after the return:\n{}",
        replica.log()
    );
    let readyz = poll_readyz(&http, address, LIMIT).await;
    assert_eq!(readyz.0, 200, "ready again: {readyz:?}");

    // What an operator reads at default verbosity: the outage once, the controller's waiting
    // key once, the returns; no line per failed request.
    let during: Vec<String> = replica
        .log()
        .lines()
        .skip(logged_before)
        .map(str::to_owned)
        .collect();
    let count = |needle: &str| during.iter().filter(|l| l.contains(needle)).count();
    assert_eq!(
        count("the API server is unavailable; waiting for it"),
        1,
        "{during:#?}"
    );
    assert_eq!(
        count("keys wait for it instead of backing off"),
        1,
        "{during:#?}"
    );
    assert_eq!(count("reconcile failed"), 0, "{during:#?}");
    assert_eq!(
        count("reflector watch failed") + count("reflector list failed"),
        0,
        "{during:#?}"
    );
    assert!(
        during.len() <= 12,
        "{} lines for one outage: {during:#?}",
        during.len()
    );
    println!(
        "deleted {latency:?} after the return; {} log lines:\n{}",
        during.len(),
        during.join("\n")
    );
    replica.terminate();
    let (status, _) = replica.wait();
    assert!(status.success());
}

/// Retention policies through the binary: a `ClusterRetentionPolicy` created while `kube-gc run` runs
/// deletes a finished standalone Pod and leaves a running one, reports `Ready=True` and its
/// counts in the policy's status, and its metrics are served.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn run_applies_a_retention_policy_created_while_it_runs() {
    let sim = SimServer::start(SimConfig::default())
        .await
        .expect("start the sim");
    let finished_at = (Utc::now() - chrono::Duration::minutes(10))
        .to_rfc3339_opts(chrono::SecondsFormat::Secs, true);
    for (name, status) in [
        (
            "done",
            json!({"phase": "Succeeded", "containerStatuses": [{"name": "main", "state":
            {"terminated": {"exitCode": 0, "startedAt": finished_at, "finishedAt": finished_at}}}]}),
        ),
        ("busy", json!({"phase": "Running"})),
    ] {
        let pod = json!({"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "namespace": "default"},
            "spec": {"containers": [{"name": "main", "image": "busybox:1.36"}]}});
        let mut pod = sim.create(&pods(), pod).expect("create the pod");
        pod["status"] = status;
        sim.update_status(&pods(), pod).expect("set its status");
    }
    let flags = [&["--controllers=retention"][..], &FAST_ELECTION].concat();
    let Ready {
        replica,
        address,
        http,
        _kubeconfig,
    } = Ready::start(&sim, "solo", &flags, Duration::from_secs(10)).await;
    assert!(
        sim.get(&pods(), Some("default"), "done").is_ok(),
        "no policy yet"
    );

    let policies = kube_gc::sim::Gvr::new("kube-gc.io", "v1alpha1", "clusterretentionpolicies");
    let policy = json!({"apiVersion": "kube-gc.io/v1alpha1", "kind": "ClusterRetentionPolicy",
        "metadata": {"name": "finished-pods"},
        "spec": {"preset": "pods", "ttlSecondsAfterFinished": 60}});
    sim.create(&policies, policy).expect("create the policy");
    let gone = tokio::time::timeout(
        LIMIT,
        sim.wait_for(&pods(), Some("default"), "done", |o| o.is_none()),
    )
    .await;
    assert!(
        gone.is_ok(),
        "the Pod was not collected:\n{}",
        replica.log()
    );
    let ready = wait_until(LIMIT, || {
        sim.get(&policies, None, "finished-pods")
            .map(|p| {
                p["status"]["conditions"][0]["status"] == "True" && p["status"]["deleted"] == 1
            })
            .unwrap_or(false)
    })
    .await;
    assert!(
        ready.is_some(),
        "status: {:?}\n{}",
        sim.get(&policies, None, "finished-pods"),
        replica.log()
    );
    assert!(sim.get(&pods(), Some("default"), "busy").is_ok());

    let (status, _, text) = http_get(&http, address, "/metrics").await;
    assert_eq!(status, 200);
    let metrics = server_support::parse(&text).expect("/metrics parses");
    let deleted = metrics.value(
        "kube_gc_retention_deletions_total",
        &[
            ("policy_kind", "ClusterRetentionPolicy"),
            ("policy", "finished-pods"),
            ("reason", "ttl"),
        ],
    );
    assert_eq!(deleted, Some(1.0), "{text}");
    let watched = metrics.value(
        "kube_gc_reflector_lists_total",
        &[("controller", "retention"), ("resource", "v1/pods")],
    );
    assert!(watched >= Some(1.0), "{text}");
    replica.terminate();
    let (exit, log) = replica.wait();
    assert!(exit.success(), "{log}");
}

/// A dry run acts on nothing and writes nothing: it takes no Lease (it would take the
/// production Deployment's), writes no Event and no status, deletes nothing; it says what it
/// would delete.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_dry_run_takes_no_lease_and_writes_nothing() {
    let sim = SimServer::start(SimConfig::default())
        .await
        .expect("start the sim");
    create_expired_job(&sim, "done");
    // Finished without a time saying when: a run writes a Warning Event about it.
    finished_without_a_time(&sim, "when");
    let Ready {
        replica,
        _kubeconfig,
        ..
    } = Ready::start(&sim, "laptop", &["--dry-run"], LIMIT).await;
    let said = wait_until(LIMIT, || {
        !replica.log_lines("dry run: would delete").is_empty()
    })
    .await;
    assert!(said.is_some(), "{}", replica.log());

    assert_eq!(
        lease_holder(&sim),
        None,
        "no Lease taken:\n{}",
        replica.log()
    );
    let writes: Vec<String> = sim
        .journal()
        .entries()
        .into_iter()
        .filter(|e| e.method != "GET")
        .map(|e| format!("{} {}", e.method, e.path))
        .collect();
    assert!(writes.is_empty(), "a dry run wrote {writes:?}");
    assert!(sim.get(&jobs(), Some("default"), "done").is_ok());
    replica.terminate();
    let (status, _) = replica.wait();
    assert!(status.success());
}

/// A run limited to a namespace competes for a Lease in that namespace, not for the
/// cluster-wide one: two teams' instances never share a Lease, and neither needs rights in
/// kube-system.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_namespace_run_elects_in_its_namespace() {
    let sim = SimServer::start(SimConfig::default().with_namespaces(&["default", "batch"]))
        .await
        .expect("start the sim");
    let flags = [
        &["--namespace=batch", "--controllers=ttl-after-finished"][..],
        &FAST_ELECTION,
    ]
    .concat();
    let Ready {
        replica,
        _kubeconfig,
        ..
    } = Ready::start(&sim, "team", &flags, LIMIT).await;
    let lease = sim
        .get(&leases(), Some("batch"), "kube-gc.ttl-after-finished")
        .unwrap_or_else(|e| panic!("no Lease in batch: {e}\n{}", replica.log()));
    assert!(lease["spec"]["holderIdentity"]
        .as_str()
        .is_some_and(|holder| holder.starts_with("team_")));
    assert_eq!(lease_holder(&sim), None, "nothing in kube-system");
    replica.terminate();
    let (status, _) = replica.wait();
    assert!(status.success());
}

/// A signal while discovery is still being retried at start-up stops the process within a
/// second, instead of after the retries.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_signal_during_start_up_stops_it_at_once() {
    let sim = SimServer::start(SimConfig::default().with_fault_plan(FaultPlan::new(1).fail(
        Verb::Discovery,
        1.0,
        &[503],
    )))
    .await
    .expect("start the sim");
    let kubeconfig = Kubeconfig::for_sim(&sim);
    let replica = Replica::start(
        "solo",
        &kubeconfig.path(),
        &["--secure-port=0", "--leader-elect=false"],
    );
    let retrying = wait_until(LIMIT, || {
        !replica
            .log_lines("discovery failed at start-up; retrying")
            .is_empty()
    })
    .await;
    assert!(retrying.is_some(), "{}", replica.log());
    let signalled = std::time::Instant::now();
    replica.terminate();
    let (status, log) = replica.wait();
    let took = signalled.elapsed();
    assert!(status.success(), "{status:?}\n{log}");
    assert!(
        took < Duration::from_secs(1),
        "stopped {took:?} after SIGTERM:\n{log}"
    );
}

/// Credentials the server refuses at start-up fail the start at once, in one line that says
/// whose they were — not after half a minute of retries as if the server were away.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn refused_credentials_at_start_up_fail_at_once_naming_them() {
    let sim = SimServer::start(SimConfig::default().with_token("the-right-token"))
        .await
        .expect("start the sim");
    let kubeconfig = Kubeconfig::for_sim(&sim);
    let text = std::fs::read_to_string(kubeconfig.path()).expect("read the kubeconfig");
    assert!(text.contains("the-right-token"));
    std::fs::write(
        kubeconfig.path(),
        text.replace("the-right-token", "a-wrong-token"),
    )
    .expect("write the kubeconfig");
    let started = std::time::Instant::now();
    let replica = Replica::start(
        "solo",
        &kubeconfig.path(),
        &["--secure-port=0", "--leader-elect=false"],
    );
    let (status, log) = replica.wait();
    let took = started.elapsed();
    assert!(!status.success(), "{log}");
    assert!(
        took < Duration::from_secs(5),
        "failed after {took:?}:\n{log}"
    );
    let last = log.lines().last().unwrap_or_default();
    assert!(
        last.contains("the API server refused the credentials of user")
            && last.contains("bearer token")
            && !last.contains("a-wrong-token"),
        "{last}"
    );
}
