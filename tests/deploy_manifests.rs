//! `deploy/` checked as data: every manifest parses, the Deployment runs as the issue asks, and
//! the RBAC bound to kube-gc's service account allows every request kube-gc makes — listed by
//! hand below, and read from the simulated API server's journal after kube-gc's own leader
//! election and event recorder ran against it. The end-to-end suites can feed their journals to
//! `deploy_support::denied_in_journal` the same way. The retention CRDs are checked against the
//! Rust wire types they describe, field for field.

mod deploy_support;
mod ops_support;

use std::time::Duration;

use std::collections::BTreeSet;

use deploy_support::{
    allowed, crd, denied, denied_in_journal, deploy_root, grants, grants_in, kustomize,
    manifest_files, manifests, missing_from_schema, Request,
};
use kube_gc::api::{LabelSelector, LabelSelectorRequirement, ObjectReference, Time};
use kube_gc::controllers::retention::policy::{
    CelFinishedSpec, Condition, ConditionSpec, FieldSpec, FinishTimeSpec, FinishedSpec,
    GroupBySpec, NextDeletion, NotificationSpec, ResourceSpec, RetentionPolicySpec,
    RetentionPolicyStatus, SecretKeyRef,
};
use kube_gc::events::{ApiEventRecorder, EventRecord, EventRecorder, EventType, Reporter};
use kube_gc::manager::{
    ControllerSelection, GARBAGE_COLLECTOR, KNOWN_CONTROLLERS, NAMESPACE, PODGC, PVC_PROTECTION,
    PV_PROTECTION, RETENTION, TTL_AFTER_FINISHED, VOLCANO_JOB_TTL,
};
use ops_support::{Candidate, Cluster, Timeline};

#[test]
fn every_manifest_parses_and_names_its_kind() {
    let documents = manifests();
    assert!(documents.len() >= 20, "{} documents", documents.len());
    for (file, document) in &documents {
        assert!(document["apiVersion"].is_string(), "{file}: no apiVersion");
        assert!(document["kind"].is_string(), "{file}: no kind");
        assert!(document["metadata"]["name"].is_string(), "{file}: no name");
    }
}

/// `deploy/overlays/<name>` rendered.
fn overlay(name: &str) -> Vec<(String, serde_json::Value)> {
    kustomize::render(&deploy_root().join("overlays").join(name))
}

/// The controllers a rendered overlay's Deployment enables with `--controllers`.
fn enabled_controllers(objects: &[(String, serde_json::Value)]) -> BTreeSet<&'static str> {
    let (_, deployment) = objects
        .iter()
        .find(|(_, d)| d["kind"] == "Deployment")
        .expect("a Deployment");
    let args: Vec<&str> = deployment["spec"]["template"]["spec"]["containers"][0]["args"]
        .as_array()
        .expect("args")
        .iter()
        .filter_map(|a| a.as_str())
        .collect();
    let flags: Vec<&str> = args
        .iter()
        .filter_map(|a| a.strip_prefix("--controllers="))
        .collect();
    let [flag] = flags.as_slice() else {
        panic!("one --controllers flag expected in {args:?}");
    };
    let entries: Vec<&str> = flag.split(',').collect();
    let selection = ControllerSelection::parse(&entries).expect("known controllers");
    KNOWN_CONTROLLERS
        .into_iter()
        .filter(|c| selection.is_enabled(c))
        .collect()
}

/// The controllers whose `deploy/controllers/<name>/` RBAC a rendered overlay installs.
fn controllers_with_rbac(objects: &[(String, serde_json::Value)]) -> BTreeSet<String> {
    objects
        .iter()
        .filter_map(|(file, _)| file.strip_prefix("controllers/"))
        .filter_map(|rest| rest.split_once('/').map(|(name, _)| name.to_owned()))
        .collect()
}

#[test]
fn every_manifest_is_installed_by_an_overlay_the_crds_or_the_monitoring_extra() {
    let mut installed = BTreeSet::new();
    for name in OVERLAYS {
        let objects = overlay(name);
        let kinds: Vec<&str> = objects
            .iter()
            .map(|(_, d)| d["kind"].as_str().unwrap())
            .collect();
        assert!(
            kinds.contains(&"Deployment") && kinds.contains(&"Service"),
            "{name}"
        );
        installed.extend(objects.into_iter().map(|(file, _)| file));
    }
    let crds = kustomize::render(&deploy_root().join("crds"));
    assert!(crds
        .iter()
        .all(|(_, d)| d["kind"] == "CustomResourceDefinition"));
    installed.extend(crds.into_iter().map(|(file, _)| file));
    let monitoring = kustomize::render(&deploy_root().join("monitoring"));
    assert_eq!(monitoring[0].1["kind"], "ServiceMonitor");
    installed.extend(monitoring.into_iter().map(|(file, _)| file));
    let files: BTreeSet<String> = manifest_files().into_iter().collect();
    assert_eq!(installed, files, "a manifest no kustomization installs");
}

/// `kubectl delete -k` of an overlay — uninstalling kube-gc, or reinstalling it — deletes what
/// the overlay renders: were a CRD among them, every retention policy of its kind in the cluster
/// would go with it. Only `deploy/crds` installs (and so deletes) them, and nothing an overlay
/// renders holds state kube-gc would need back: no namespace, no Lease (kube-gc creates its
/// Lease at run time; the uninstall in the README deletes it by name).
#[test]
fn deleting_an_overlay_deletes_no_crd_policy_namespace_or_lease() {
    for name in OVERLAYS {
        for (file, object) in overlay(name) {
            let kind = object["kind"].as_str().unwrap_or_default();
            assert!(
                ![
                    "CustomResourceDefinition",
                    "RetentionPolicy",
                    "ClusterRetentionPolicy",
                    "Namespace",
                    "Lease",
                ]
                .contains(&kind),
                "{name} renders a {kind} ({file}): `kubectl delete -k` of it would delete it"
            );
        }
    }
}

#[test]
fn each_overlay_runs_exactly_the_controllers_whose_rbac_it_installs() {
    for (name, expected) in [
        ("managed", vec![VOLCANO_JOB_TTL, RETENTION]),
        ("standalone", KNOWN_CONTROLLERS.to_vec()),
    ] {
        let objects = overlay(name);
        let enabled = enabled_controllers(&objects);
        assert_eq!(enabled, expected.into_iter().collect(), "{name}");
        let with_rbac = controllers_with_rbac(&objects);
        let enabled: BTreeSet<String> = enabled.into_iter().map(str::to_owned).collect();
        assert_eq!(with_rbac, enabled, "{name}: RBAC and --controllers differ");
    }
}

#[test]
fn the_managed_overlay_grants_no_wildcard_and_nothing_kcm_already_does() {
    let grants = grants_in(overlay("managed"));
    for grant in &grants {
        for field in ["apiGroups", "resources", "verbs", "nonResourceURLs"] {
            let wildcard = grant.rule[field]
                .as_array()
                .into_iter()
                .flatten()
                .any(|v| v == "*");
            assert!(!wildcard, "{}: `*` in {field}", grant.source);
        }
    }
    let mut needed = required_by_every_installation();
    needed.extend(required_by(VOLCANO_JOB_TTL));
    needed.extend(required_by(RETENTION));
    let denied_here: Vec<&Request> = needed.iter().filter(|r| !allowed(&grants, r)).collect();
    assert!(denied_here.is_empty(), "managed denies {denied_here:?}");
    // The ownerReference garbage collector's and the namespace controller's writes are kcm's on
    // a managed cluster.
    for request in required_by(GARBAGE_COLLECTOR)
        .into_iter()
        .chain(required_by(NAMESPACE))
        .filter(|r| matches!(r, Request::Resource { verb, .. } if verb != "list" && verb != "watch" && verb != "get"))
    {
        if let Request::Resource { verb, .. } = &request {
            assert!(
                !allowed(&grants, &request),
                "managed allows {verb}: {request:?}"
            );
        }
    }
}

#[test]
fn the_standalone_overlay_allows_every_request_kube_gc_makes() {
    let grants = grants_in(overlay("standalone"));
    let denied_here: Vec<Request> = required()
        .into_iter()
        .filter(|r| !allowed(&grants, r))
        .collect();
    assert_eq!(denied_here, Vec::<Request>::new());
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

/// The overlays in `deploy/overlays/`.
const OVERLAYS: [&str; 2] = ["managed", "standalone"];

/// What kube-gc asks the API server for whatever it runs: discovery, the secure port's
/// delegated authentication and authorization, Events, leader election.
fn required_by_every_installation() -> Vec<Request> {
    let r = Request::resource;
    vec![
        Request::NonResource {
            verb: "get".into(),
            path: "/apis".into(),
        },
        Request::NonResource {
            verb: "get".into(),
            path: "/apis/batch/v1".into(),
        },
        r("create", "authentication.k8s.io", "tokenreviews", None),
        r(
            "create",
            "authorization.k8s.io",
            "subjectaccessreviews",
            None,
        ),
        r("create", "", "events", Some("default")),
        r("patch", "", "events", Some("default")).named("pi.1"),
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

/// What one controller asks the API server for.
fn required_by(controller: &str) -> Vec<Request> {
    let r = Request::resource;
    match controller {
        TTL_AFTER_FINISHED => vec![
            r("list", "batch", "jobs", None),
            r("watch", "batch", "jobs", None),
            r("delete", "batch", "jobs", Some("default")).named("pi"),
        ],
        VOLCANO_JOB_TTL => vec![
            r("list", "batch.volcano.sh", "jobs", None),
            r("watch", "batch.volcano.sh", "jobs", None),
            r("delete", "batch.volcano.sh", "jobs", Some("default")).named("vc"),
        ],
        // The policies, their status, namespaces, the presets' resources.
        RETENTION => {
            let mut requests = vec![
                r("list", "kube-gc.io", "retentionpolicies", None),
                r("watch", "kube-gc.io", "retentionpolicies", None),
                r("list", "kube-gc.io", "clusterretentionpolicies", None),
                r("watch", "kube-gc.io", "clusterretentionpolicies", None),
                r(
                    "update",
                    "kube-gc.io",
                    "retentionpolicies/status",
                    Some("default"),
                )
                .named("rp"),
                r(
                    "patch",
                    "kube-gc.io",
                    "clusterretentionpolicies/status",
                    None,
                )
                .named("crp"),
                r("list", "", "namespaces", None),
                r("watch", "", "namespaces", None),
            ];
            for (group, resource) in PRESET_RESOURCES {
                requests.push(r("delete", group, resource, Some("default")).named("x"));
            }
            requests
        }
        // Any namespaced resource: metadata lists and watches, a page to prove it empty, its
        // deletion (all at once, or one by one); namespaces, their finalize and status.
        NAMESPACE => vec![
            r("list", "", "configmaps", None),
            r("watch", "apps", "replicasets", None),
            r("list", "", "pods", Some("team-a")),
            r("deletecollection", "", "pods", Some("team-a")),
            r(
                "deletecollection",
                "events.k8s.io",
                "events",
                Some("team-a"),
            ),
            r("list", "example.com", "widgets", Some("team-a")),
            r("delete", "example.com", "widgets", Some("team-a")).named("w"),
            r("list", "", "namespaces", None),
            r("watch", "", "namespaces", None),
            r("get", "", "namespaces", Some("team-a")).named("team-a"),
            r("update", "", "namespaces/finalize", Some("team-a")).named("team-a"),
            r("patch", "", "namespaces/status", Some("team-a")).named("team-a"),
        ],
        // Any resource: metadata watches, owner lookups, ownerReference and finalizer writes.
        GARBAGE_COLLECTOR => vec![
            r("list", "apps", "replicasets", None),
            r("watch", "", "configmaps", None),
            r("get", "apps", "deployments", Some("default")).named("web"),
            r("patch", "", "configmaps", Some("default")).named("cm"),
            r("update", "", "pods", Some("default")).named("p"),
            r("delete", "", "secrets", Some("default")).named("s"),
        ],
        // Pods and Nodes watched; a Node read; a Pod's status written, the Pod deleted, and
        // read again after a conflict.
        PODGC => vec![
            r("list", "", "pods", None),
            r("watch", "", "pods", None),
            r("list", "", "nodes", None),
            r("watch", "", "nodes", None),
            r("get", "", "nodes", None).named("node-1"),
            r("get", "", "pods", Some("default")).named("p"),
            r("patch", "", "pods/status", Some("default")).named("p"),
            r("delete", "", "pods", Some("default")).named("p"),
        ],
        // Claims and Pods watched, a namespace's Pods listed, a claim's finalizer removed.
        PVC_PROTECTION => vec![
            r("list", "", "persistentvolumeclaims", None),
            r("watch", "", "persistentvolumeclaims", None),
            r("list", "", "pods", None),
            r("watch", "", "pods", None),
            r("list", "", "pods", Some("default")),
            r("patch", "", "persistentvolumeclaims", Some("default")).named("c"),
        ],
        // Volumes and claims watched, a volume's finalizer removed.
        PV_PROTECTION => vec![
            r("list", "", "persistentvolumes", None),
            r("watch", "", "persistentvolumes", None),
            r("list", "", "persistentvolumeclaims", None),
            r("watch", "", "persistentvolumeclaims", None),
            r("patch", "", "persistentvolumes", None).named("pv-1"),
        ],
        other => panic!("no requests listed for {other}"),
    }
}

/// The resources of the retention presets.
const PRESET_RESOURCES: [(&str, &str); 13] = [
    ("", "pods"),
    ("batch", "jobs"),
    ("batch.volcano.sh", "jobs"),
    ("argoproj.io", "workflows"),
    ("tekton.dev", "pipelineruns"),
    ("tekton.dev", "taskruns"),
    ("kubeflow.org", "pytorchjobs"),
    ("kubeflow.org", "tfjobs"),
    ("kubeflow.org", "mpijobs"),
    ("kubeflow.org", "xgboostjobs"),
    ("kubeflow.org", "paddlejobs"),
    ("sparkoperator.k8s.io", "sparkapplications"),
    ("ray.io", "rayjobs"),
];

/// What every part of kube-gc asks the API server for.
fn required() -> Vec<Request> {
    let mut requests = required_by_every_installation();
    for controller in KNOWN_CONTROLLERS {
        requests.extend(required_by(controller));
    }
    requests
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
    // Together: nothing is created but Events and the Lease, no escalation, no non-resource URL
    // beyond discovery.
    for request in [
        r("create", "", "pods", Some("default")),
        r("create", "", "secrets", Some("default")),
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
    let ttl = only("controllers/ttl-after-finished/rbac.yaml");
    assert!(!allowed(
        &ttl,
        &r("update", "batch", "jobs", Some("default")).named("pi")
    ));
    assert!(!allowed(
        &ttl,
        &r("delete", "", "pods", Some("default")).named("p")
    ));
    assert!(!allowed(
        &ttl,
        &r("delete", "batch.volcano.sh", "jobs", Some("default")).named("vc")
    ));
    let volcano = only("controllers/volcano-job-ttl/rbac.yaml");
    assert!(allowed(&volcano, &required_by(VOLCANO_JOB_TTL)[2]));
    for request in required_by(TTL_AFTER_FINISHED) {
        assert!(!allowed(&volcano, &request), "{request:?} should be denied");
    }
    let retention = only("controllers/retention/rbac.yaml");
    for (group, resource) in PRESET_RESOURCES {
        for verb in ["get", "list", "watch", "delete"] {
            let request = r(verb, group, resource, Some("default")).named("x");
            assert!(
                allowed(&retention, &request),
                "{request:?} should be allowed"
            );
        }
        for verb in ["update", "patch", "create", "deletecollection"] {
            let request = r(verb, group, resource, Some("default")).named("x");
            assert!(
                !allowed(&retention, &request),
                "{request:?} should be denied"
            );
        }
    }
    for request in [
        r("create", "kube-gc.io", "retentionpolicies", Some("default")),
        r("update", "kube-gc.io", "retentionpolicies", Some("default")).named("rp"),
        r("delete", "kube-gc.io", "clusterretentionpolicies", None).named("crp"),
        r("patch", "", "namespaces", None).named("default"),
        r("delete", "", "configmaps", Some("default")).named("cm"),
        r("delete", "apps", "replicasets", Some("default")).named("rs"),
    ] {
        assert!(
            !allowed(&retention, &request),
            "{request:?} should be denied"
        );
    }
    // The pod garbage collector writes Pods' status and deletes Pods, never Nodes nor a
    // Pod's spec; the protection controllers patch claims and volumes, and delete nothing.
    let podgc = only("controllers/podgc/rbac.yaml");
    for request in [
        r("patch", "", "pods", Some("default")).named("p"),
        r("update", "", "pods", Some("default")).named("p"),
        r("delete", "", "nodes", None).named("node-1"),
        r("patch", "", "nodes", None).named("node-1"),
    ] {
        assert!(!allowed(&podgc, &request), "{request:?} should be denied");
    }
    let pvc = only("controllers/pvc-protection/rbac.yaml");
    let pv = only("controllers/pv-protection/rbac.yaml");
    for request in [
        r("delete", "", "persistentvolumeclaims", Some("default")).named("c"),
        r("update", "", "persistentvolumeclaims", Some("default")).named("c"),
        r("delete", "", "pods", Some("default")).named("p"),
        r("patch", "", "persistentvolumes", None).named("pv-1"),
    ] {
        assert!(!allowed(&pvc, &request), "{request:?} should be denied");
    }
    for request in [
        r("delete", "", "persistentvolumes", None).named("pv-1"),
        r("patch", "", "persistentvolumeclaims", Some("default")).named("c"),
        r("list", "", "pods", None),
    ] {
        assert!(!allowed(&pv, &request), "{request:?} should be denied");
    }
    // Only the namespace controller deletes in bulk, and it writes nothing but a namespace's
    // finalize and status.
    let namespace = only("controllers/namespace/rbac.yaml");
    for request in required_by(NAMESPACE) {
        assert!(
            allowed(&namespace, &request),
            "{request:?} should be allowed"
        );
    }
    for file in [
        "controllers/ttl-after-finished/rbac.yaml",
        "controllers/volcano-job-ttl/rbac.yaml",
        "controllers/garbagecollector/rbac.yaml",
        "controllers/retention/rbac.yaml",
    ] {
        let request = r("deletecollection", "batch", "jobs", Some("default"));
        assert!(!allowed(&only(file), &request), "{file} deletes in bulk");
    }
    for request in [
        r("get", "", "configmaps", Some("default")).named("cm"),
        r("create", "", "configmaps", Some("default")),
        r("update", "", "configmaps", Some("default")).named("cm"),
        r("patch", "apps", "deployments", Some("default")).named("web"),
        r("update", "", "namespaces", None).named("default"),
        r("patch", "", "namespaces", None).named("default"),
        r("create", "", "namespaces", None),
    ] {
        // (Its `*` rule covers deleting a namespace, as kube-controller-manager's role does:
        // RBAC cannot leave one resource out of `*`.)
        assert!(
            !allowed(&namespace, &request),
            "{request:?} should be denied"
        );
    }
    let lease = only("base/rbac-leader-election.yaml");
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
    let events = only("base/rbac-events.yaml");
    assert!(!allowed(
        &events,
        &r("delete", "", "events", Some("default")).named("x")
    ));
    assert!(!allowed(&events, &r("list", "", "events", None)));
}

/// The Secrets of retention policies' webhooks: the managed overlay lets kube-gc read none
/// (the standalone one's garbage collector reads every resource, as kube-controller-manager's
/// does), and the RoleBinding the role's file (and a policy's `SecretForbidden` condition)
/// tells an operator to create lets it `get` the Secrets of that one namespace, nothing more.
#[test]
fn notification_secrets_are_readable_only_where_a_namespace_binds_the_role() {
    let r = Request::resource;
    let get = |namespace: &str| r("get", "", "secrets", Some(namespace)).named("slack");
    assert!(!allowed(&grants_in(overlay("managed")), &get("ci")));
    let mut documents = overlay("managed");
    let binding = serde_json::json!({"apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "RoleBinding", "metadata": {"name": "kube-gc-notification-secrets", "namespace": "ci"},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole",
            "name": "kube-gc:retention-notification-secrets"},
        "subjects": [{"kind": "ServiceAccount", "name": "kube-gc", "namespace": "kube-system"}]});
    documents.push(("ci-binding.yaml".to_owned(), binding));
    let grants = grants_in(documents);
    assert!(allowed(&grants, &get("ci")));
    for request in [
        get("ops"),
        r("list", "", "secrets", Some("ci")),
        r("watch", "", "secrets", Some("ci")),
        r("update", "", "secrets", Some("ci")).named("slack"),
    ] {
        assert!(!allowed(&grants, &request), "{request:?} should be denied");
    }
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

/// A spec with every optional field set, so that its JSON holds every field of the type.
fn every_field_spec() -> RetentionPolicySpec {
    let selector = LabelSelector {
        match_labels: [("team".to_string(), "data".to_string())].into(),
        match_expressions: vec![LabelSelectorRequirement {
            key: "tier".into(),
            operator: "In".into(),
            values: vec!["batch".into()],
        }],
    };
    RetentionPolicySpec {
        preset: Some("pods".into()),
        resource: Some(ResourceSpec {
            group: "tekton.dev".into(),
            version: "v1".into(),
            resource: "pipelineruns".into(),
        }),
        namespace_selector: Some(selector.clone()),
        selector: Some(selector),
        match_expression: Some("true".into()),
        finished: Some(FinishedSpec {
            conditions: vec![ConditionSpec {
                type_: "Succeeded".into(),
                status: Some("True".into()),
                outcome: Some("Succeeded".into()),
            }],
            field: Some(FieldSpec {
                path: "status.phase".into(),
                succeeded: vec!["Succeeded".into()],
                failed: vec!["Failed".into()],
            }),
            cel: Some(CelFinishedSpec {
                finished: "true".into(),
                failed: Some("false".into()),
            }),
            finish_time: Some(FinishTimeSpec {
                field: Some("status.completionTime".into()),
                condition: Some("Succeeded".into()),
                cel: Some("timestamp(object.status.completionTime)".into()),
            }),
        }),
        ttl_seconds_after_finished: Some(1),
        ttl_seconds_after_creation: Some(2),
        successful_history_limit: Some(3),
        failed_history_limit: Some(4),
        group_by: Some(GroupBySpec::Label {
            label: "tekton.dev/pipeline".into(),
        }),
        propagation_policy: Some("Foreground".into()),
        mode: Some("Audit".into()),
        dry_run: true,
        include_controlled: Some(true),
        notification: Some(NotificationSpec {
            webhook_secret_ref: Some(SecretKeyRef {
                namespace: Some("ops".into()),
                name: "slack".into(),
                key: Some("url".into()),
            }),
        }),
    }
}

fn every_field_status() -> RetentionPolicyStatus {
    let now = Time::now();
    RetentionPolicyStatus {
        observed_generation: Some(1),
        matched: 5,
        waiting: 1,
        unknown: 1,
        deleted: 2,
        mode: Some("Audit".into()),
        would_delete: 1,
        deletions_within_hour: 1,
        deletions_within_day: 1,
        next_deletions: vec![NextDeletion {
            kind: "Pod".into(),
            namespace: Some("ci".into()),
            name: "build-1".into(),
            deletes_at: Some(now),
            reason: "ttl".into(),
        }],
        next_deletion_time: Some(now),
        conditions: vec![Condition {
            type_: "Ready".into(),
            status: "True".into(),
            observed_generation: Some(1),
            last_transition_time: now,
            reason: "Watching".into(),
            message: "watching pods".into(),
        }],
    }
}

fn keys(value: &serde_json::Value) -> Vec<String> {
    let mut keys: Vec<String> = value
        .as_object()
        .map(|o| o.keys().cloned().collect())
        .unwrap_or_default();
    keys.sort();
    keys
}

#[test]
fn every_field_of_the_rust_types_is_in_both_crd_schemas() {
    let spec = serde_json::to_value(every_field_spec()).unwrap();
    let status = serde_json::to_value(every_field_status()).unwrap();
    for (kind, cluster_scoped) in [("RetentionPolicy", false), ("ClusterRetentionPolicy", true)] {
        let crd = crd(kind);
        let version = &crd["spec"]["versions"][0];
        let root = &version["schema"]["openAPIV3Schema"]["properties"];
        let mut spec = spec.clone();
        if !cluster_scoped {
            // A RetentionPolicy applies in its own namespace: no namespaceSelector.
            spec.as_object_mut().unwrap().remove("namespaceSelector");
            assert!(root["spec"]["properties"]["namespaceSelector"].is_null());
        }
        assert_eq!(
            missing_from_schema(&spec, &root["spec"], ""),
            Vec::<String>::new(),
            "{kind}: spec fields missing from the schema"
        );
        assert_eq!(
            missing_from_schema(&status, &root["status"], ""),
            Vec::<String>::new(),
            "{kind}: status fields missing from the schema"
        );
        // Nor does the schema declare fields the Rust types do not have.
        assert_eq!(keys(&root["spec"]["properties"]), keys(&spec), "{kind}");
        assert_eq!(keys(&root["status"]["properties"]), keys(&status), "{kind}");
        // groupBy's other shape: the keyword.
        let keyword = serde_json::to_value(GroupBySpec::Keyword("owner".into())).unwrap();
        assert_eq!(
            root["spec"]["properties"]["groupBy"]["oneOf"][0]["enum"],
            serde_json::json!([keyword])
        );
    }
}

#[test]
fn both_crds_share_one_spec_schema_but_namespace_selector() {
    let spec_schema = |kind: &str| {
        crd(kind)["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"].clone()
    };
    let namespaced = spec_schema("RetentionPolicy");
    let mut cluster = spec_schema("ClusterRetentionPolicy");
    let properties = cluster["properties"].as_object_mut().unwrap();
    assert!(properties.remove("namespaceSelector").is_some());
    assert_eq!(namespaced, cluster);
}

#[test]
fn the_crds_are_served_as_kube_gc_reads_them() {
    use kube_gc::controllers::retention::policy::spec::{
        CLUSTER_PLURAL, GROUP, NAMESPACED_PLURAL, VERSION,
    };
    for (kind, plural, scope, short) in [
        ("RetentionPolicy", NAMESPACED_PLURAL, "Namespaced", "rp"),
        ("ClusterRetentionPolicy", CLUSTER_PLURAL, "Cluster", "crp"),
    ] {
        let crd = crd(kind);
        assert_eq!(crd["apiVersion"], "apiextensions.k8s.io/v1");
        assert_eq!(crd["metadata"]["name"], format!("{plural}.{GROUP}"));
        let spec = &crd["spec"];
        assert_eq!(spec["group"], GROUP);
        assert_eq!(spec["scope"], scope);
        assert_eq!(spec["names"]["plural"], plural);
        assert_eq!(spec["names"]["shortNames"], serde_json::json!([short]));
        assert_eq!(spec["names"]["categories"], serde_json::json!(["kube-gc"]));
        let versions = spec["versions"].as_array().unwrap();
        assert_eq!(versions.len(), 1);
        let version = &versions[0];
        assert_eq!(version["name"], VERSION);
        assert_eq!(version["served"], true);
        assert_eq!(version["storage"], true);
        assert!(version["subresources"]["status"].is_object());
        let columns: Vec<&str> = version["additionalPrinterColumns"]
            .as_array()
            .unwrap()
            .iter()
            .filter_map(|c| c["name"].as_str())
            .collect();
        assert_eq!(
            columns,
            [
                "Preset",
                "Resource",
                "TTL",
                "Mode",
                "Matched",
                "Waiting",
                "Unknown",
                "Deleted",
                "WouldDelete",
                "Ready",
                "Age"
            ]
        );
        let spec_schema = &version["schema"]["openAPIV3Schema"]["properties"]["spec"];
        let messages: Vec<&str> = spec_schema["x-kubernetes-validations"]
            .as_array()
            .unwrap()
            .iter()
            .filter_map(|v| v["message"].as_str())
            .collect();
        assert_eq!(
            messages,
            [
                "exactly one of preset and resource must be set",
                "ttlSecondsAfterFinished and ttlSecondsAfterCreation are mutually exclusive",
                "finished is required with resource, unless ttlSecondsAfterCreation decides alone (no history limits)",
                "dryRun: true contradicts mode: Enforce; remove dryRun (mode: Audit is its new name)",
            ]
        );
        let properties = &spec_schema["properties"];
        for field in [
            "ttlSecondsAfterFinished",
            "ttlSecondsAfterCreation",
            "successfulHistoryLimit",
            "failedHistoryLimit",
        ] {
            assert_eq!(properties[field]["minimum"], 0, "{kind}: {field}");
        }
        assert_eq!(
            properties["propagationPolicy"]["enum"],
            serde_json::json!(["Foreground", "Background", "Orphan"])
        );
    }
}

/// The test renderer against the real kustomize, where kubectl is installed (kubectl's
/// kustomize sorts by kind, so the objects are compared as sets).
#[test]
fn the_test_renderer_agrees_with_kubectl_kustomize_where_kubectl_is_installed() {
    let Ok(version) = std::process::Command::new("kubectl")
        .args(["version", "--client"])
        .output()
    else {
        eprintln!("kubectl is not installed: the renderer was not compared with kustomize");
        return;
    };
    assert!(version.status.success());
    for directory in ["overlays/managed", "overlays/standalone", "monitoring"] {
        let path = deploy_root().join(directory);
        let output = std::process::Command::new("kubectl")
            .arg("kustomize")
            .arg(&path)
            .output()
            .unwrap();
        assert!(
            output.status.success(),
            "kubectl kustomize {directory}: {}",
            String::from_utf8_lossy(&output.stderr)
        );
        let text = String::from_utf8(output.stdout).unwrap();
        let theirs: Vec<serde_json::Value> = serde_saphyr::from_multiple(&text).unwrap();
        let ours: Vec<serde_json::Value> = kustomize::render(&path)
            .into_iter()
            .map(|(_, d)| d)
            .collect();
        let sorted = |mut objects: Vec<serde_json::Value>| {
            objects.sort_by_key(|o| o.to_string());
            objects
        };
        assert_eq!(sorted(ours), sorted(theirs), "{directory}");
    }
}
