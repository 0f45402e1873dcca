//! `deploy/` checked as data: every manifest parses, the Deployment runs as the issue asks, and
//! the RBAC bound to kube-gc's service account allows every request kube-gc makes — listed by
//! hand below, and read from the simulated API server's journal after kube-gc's own leader
//! election and event recorder ran against it. The end-to-end suites can feed their journals to
//! `deploy_support::denied_in_journal` the same way.

mod deploy_support;
mod ops_support;

use std::time::Duration;

use deploy_support::{allowed, denied, denied_in_journal, grants, manifests, Request};
use kube_gc::api::ObjectReference;
use kube_gc::events::{ApiEventRecorder, EventRecord, EventRecorder, EventType, Reporter};
use ops_support::{Candidate, Cluster, Timeline};

#[test]
fn every_manifest_parses_and_names_its_kind() {
    let documents = manifests();
    assert!(documents.len() >= 9, "{} documents", documents.len());
    for (file, document) in &documents {
        assert!(document["apiVersion"].is_string(), "{file}: no apiVersion");
        assert!(document["kind"].is_string(), "{file}: no kind");
        assert!(document["metadata"]["name"].is_string() || document["kind"] == "Kustomization");
    }
}

#[test]
fn the_deployment_runs_two_hardened_replicas_with_probes() {
    let documents = manifests();
    let (_, deployment) = documents
        .iter()
        .find(|(_, d)| d["kind"] == "Deployment")
        .expect("a Deployment");
    assert_eq!(deployment["spec"]["replicas"], 2);
    let pod = &deployment["spec"]["template"]["spec"];
    assert_eq!(pod["serviceAccountName"], "kube-gc");
    assert_eq!(pod["securityContext"]["runAsNonRoot"], true);
    let container = &pod["containers"][0];
    assert_eq!(container["securityContext"]["readOnlyRootFilesystem"], true);
    assert_eq!(
        container["securityContext"]["allowPrivilegeEscalation"],
        false
    );
    for (probe, path) in [("livenessProbe", "/healthz"), ("readinessProbe", "/readyz")] {
        assert_eq!(container[probe]["httpGet"]["path"], path);
        assert_eq!(container[probe]["httpGet"]["scheme"], "HTTPS");
    }
    assert_eq!(container["ports"][0]["containerPort"], 10257);
    assert!(container["resources"]["requests"]["memory"].is_string());
}

/// What each part of kube-gc asks the API server for.
fn required() -> Vec<Request> {
    let r = Request::resource;
    vec![
        // ttl-after-finished
        r("list", "batch", "jobs", None),
        r("watch", "batch", "jobs", None),
        r("delete", "batch", "jobs", Some("default")).named("pi"),
        r("list", "batch.volcano.sh", "jobs", None),
        r("watch", "batch.volcano.sh", "jobs", None),
        r("delete", "batch.volcano.sh", "jobs", Some("default")).named("vc"),
        // garbage collector: any resource, discovery
        r("list", "apps", "replicasets", None),
        r("watch", "", "configmaps", None),
        r("get", "apps", "deployments", Some("default")).named("web"),
        r("patch", "", "configmaps", Some("default")).named("cm"),
        r("update", "", "pods", Some("default")).named("p"),
        r("delete", "", "secrets", Some("default")).named("s"),
        Request::NonResource {
            verb: "get".into(),
            path: "/apis".into(),
        },
        Request::NonResource {
            verb: "get".into(),
            path: "/apis/batch/v1".into(),
        },
        // events
        r("create", "", "events", Some("default")),
        r("patch", "", "events", Some("default")).named("pi.1"),
        // leader election
        r(
            "create",
            "coordination.k8s.io",
            "leases",
            Some("kube-system"),
        ),
        r("get", "coordination.k8s.io", "leases", Some("kube-system")).named("kube-gc"),
        r(
            "update",
            "coordination.k8s.io",
            "leases",
            Some("kube-system"),
        )
        .named("kube-gc"),
    ]
}

#[test]
fn rbac_allows_every_request_kube_gc_makes() {
    assert_eq!(denied(&required()), Vec::<Request>::new());
}

#[test]
fn rbac_is_least_privilege() {
    let all = grants();
    let r = Request::resource;
    let only =
        |file: &str| -> Vec<_> { all.iter().filter(|g| g.source == file).cloned().collect() };
    // Together: nothing is created but Events and the Lease, nothing deleted in bulk, no
    // escalation, no non-resource URL beyond discovery.
    for request in [
        r("create", "", "pods", Some("default")),
        r("create", "", "secrets", Some("default")),
        r("deletecollection", "batch", "jobs", Some("default")),
        r(
            "escalate",
            "rbac.authorization.k8s.io",
            "clusterroles",
            None,
        ),
        r("impersonate", "", "serviceaccounts", Some("default")),
        Request::NonResource {
            verb: "get".into(),
            path: "/metrics".into(),
        },
    ] {
        assert!(!allowed(&all, &request), "{request:?} should be denied");
    }
    // Each narrow role on its own covers its controller and nothing more.
    let ttl = only("rbac-ttl-after-finished.yaml");
    assert!(!allowed(
        &ttl,
        &r("update", "batch", "jobs", Some("default")).named("pi")
    ));
    assert!(!allowed(
        &ttl,
        &r("delete", "", "pods", Some("default")).named("p")
    ));
    let lease = only("rbac-leader-election.yaml");
    assert!(!allowed(
        &lease,
        &r(
            "update",
            "coordination.k8s.io",
            "leases",
            Some("kube-system")
        )
        .named("kube-scheduler")
    ));
    assert!(!allowed(
        &lease,
        &r("get", "coordination.k8s.io", "leases", Some("default")).named("kube-gc")
    ));
    assert!(!allowed(
        &lease,
        &r(
            "delete",
            "coordination.k8s.io",
            "leases",
            Some("kube-system")
        )
        .named("kube-gc")
    ));
    let events = only("rbac-events.yaml");
    assert!(!allowed(
        &events,
        &r("delete", "", "events", Some("default")).named("x")
    ));
    assert!(!allowed(&events, &r("list", "", "events", None)));
}

#[tokio::test(start_paused = true)]
async fn rbac_allows_what_leader_election_and_events_sent_to_the_simulator() {
    let cluster = Cluster::start().await;
    let timeline = Timeline::default();
    let candidate = Candidate::start("kube-gc-0", cluster.client("a", None), &timeline);
    let shutdown = tokio_util::sync::CancellationToken::new();
    let reporter = Reporter {
        component: "kube-gc".into(),
        instance: "kube-gc-0".into(),
    };
    let (recorder, task) =
        ApiEventRecorder::start(cluster.client("events", None), reporter, shutdown.clone());
    for _ in 0..2 {
        recorder.record(EventRecord {
            regarding: ObjectReference {
                kind: Some("Job".into()),
                namespace: Some("default".into()),
                name: Some("pi".into()),
                ..ObjectReference::default()
            },
            event_type: EventType::Warning,
            reason: "Unknown".into(),
            message: "finish time unknown".into(),
        });
    }
    tokio::time::sleep(Duration::from_secs(10)).await;
    candidate.stop.cancel();
    candidate.outcome().await;
    shutdown.cancel();
    task.await.unwrap();

    let journal = cluster.sim.journal().entries();
    let verbs: Vec<String> = journal.iter().map(|e| e.method.clone()).collect();
    for method in ["POST", "PUT", "GET", "PATCH"] {
        assert!(
            verbs.iter().any(|v| v == method),
            "no {method} in the journal"
        );
    }
    assert_eq!(denied_in_journal(&journal), Vec::<Request>::new());
}
