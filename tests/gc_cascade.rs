//! The garbage collector end to end, against the simulated API server (which does not collect
//! garbage itself). The cases whose outcome is "these objects go, in this order, for
//! this many requests; those stay" are one table ([`CASES`]); cases that need their own kind of
//! check follow as separate tests. Every test checks the invariant that nothing with a live,
//! valid owner was deleted. On tokio's paused clock, over real sockets.

mod gc_support;

use std::time::Duration;

use gc_support::*;
use kube_gc::controllers::garbagecollector::INVALID_NAMESPACE_REASON;
use kube_gc::sim::faults::Verb;
use kube_gc::sim::{DeleteOptions, Gvr, Propagation, SimServer};
use serde_json::Value;

/// One object: its resource, namespace and name.
type Obj = (fn() -> Gvr, Option<&'static str>, &'static str);

/// One end-to-end case.
struct Case {
    name: &'static str,
    /// Objects created before the collector starts.
    seed: fn(&SimServer),
    /// What a user does once the collector runs.
    act: fn(&SimServer),
    /// Objects the collector must get deleted.
    gone: &'static [Obj],
    /// Objects that must still exist once those are gone.
    kept: &'static [Obj],
    /// (first, then): `first` must leave storage before `then`.
    removed_before: &'static [(&'static str, &'static str)],
    /// GET, DELETE and PATCH requests the collector may send in the whole run.
    requests: Option<[usize; 3]>,
    /// An object that must get an `OwnerRefInvalidNamespace` Warning.
    warned: Option<&'static str>,
}

const NOTHING: fn(&SimServer) = |_| {};

const CASES: &[Case] = &[
    Case {
        name: "Background cascade across three levels: Deployment → ReplicaSet → Pods",
        seed: |sim| {
            let deploy = create(
                sim,
                &deployments(),
                object("apps/v1", "Deployment", Some("default"), "web"),
            );
            let rs = create(
                sim,
                &replicasets(),
                owned_by(
                    object("apps/v1", "ReplicaSet", Some("default"), "web-1"),
                    vec![reference_to(&deploy, true)],
                ),
            );
            for name in ["web-1-a", "web-1-b", "web-1-c"] {
                pod(sim, "default", name, &[&rs], true);
            }
        },
        act: |sim| {
            delete(
                sim,
                &deployments(),
                Some("default"),
                "web",
                Propagation::Background,
            )
        },
        gone: &[
            (replicasets, Some("default"), "web-1"),
            (pods, Some("default"), "web-1-a"),
            (pods, Some("default"), "web-1-b"),
            (pods, Some("default"), "web-1-c"),
        ],
        kept: &[],
        removed_before: &[],
        // The graph saw the Deployment, then the ReplicaSet go: no read is needed.
        requests: Some([0, 4, 0]),
        warned: None,
    },
    Case {
        name: "Foreground waits for the blocking dependents, then removes the finalizer",
        seed: |sim| {
            let rs = create(
                sim,
                &replicasets(),
                object("apps/v1", "ReplicaSet", Some("default"), "rs"),
            );
            for name in ["p0", "p1", "p2"] {
                pod(sim, "default", name, &[&rs], true);
            }
        },
        act: |sim| {
            delete(
                sim,
                &replicasets(),
                Some("default"),
                "rs",
                Propagation::Foreground,
            )
        },
        gone: &[
            (replicasets, Some("default"), "rs"),
            (pods, Some("default"), "p0"),
            (pods, Some("default"), "p1"),
            (pods, Some("default"), "p2"),
        ],
        kept: &[],
        removed_before: &[("p0", "rs"), ("p1", "rs"), ("p2", "rs")],
        // One DELETE per pod; the owner's finalizer: one read, one patch.
        requests: Some([1, 3, 1]),
        warned: None,
    },
    Case {
        name: "Foreground across three levels: the ReplicaSet is deleted Foreground in turn",
        seed: |sim| {
            let deploy = create(
                sim,
                &deployments(),
                object("apps/v1", "Deployment", Some("default"), "web"),
            );
            let rs = create(
                sim,
                &replicasets(),
                owned_by(
                    object("apps/v1", "ReplicaSet", Some("default"), "web-1"),
                    vec![reference_to(&deploy, true)],
                ),
            );
            for name in ["web-1-a", "web-1-b"] {
                pod(sim, "default", name, &[&rs], true);
            }
        },
        act: |sim| {
            delete(
                sim,
                &deployments(),
                Some("default"),
                "web",
                Propagation::Foreground,
            )
        },
        gone: &[
            (deployments, Some("default"), "web"),
            (replicasets, Some("default"), "web-1"),
            (pods, Some("default"), "web-1-a"),
            (pods, Some("default"), "web-1-b"),
        ],
        kept: &[],
        removed_before: &[("web-1-a", "web-1"), ("web-1-b", "web-1"), ("web-1", "web")],
        // Pods: a DELETE each; the ReplicaSet: a Foreground DELETE, then its finalizer (GET +
        // PATCH); the Deployment: its finalizer.
        requests: Some([2, 3, 2]),
        warned: None,
    },
    Case {
        name: "blockOwnerDeletion=false does not hold the owner",
        seed: |sim| {
            let rs = create(
                sim,
                &replicasets(),
                object("apps/v1", "ReplicaSet", Some("default"), "rs"),
            );
            // A dependent another finalizer keeps for ever, and that does not block.
            let mut held = owned_by(
                object("v1", "Pod", Some("default"), "held"),
                vec![reference_to(&rs, false)],
            );
            held["metadata"]["finalizers"] = serde_json::json!(["example.com/hold"]);
            create(sim, &pods(), held);
        },
        act: |sim| {
            delete(
                sim,
                &replicasets(),
                Some("default"),
                "rs",
                Propagation::Foreground,
            )
        },
        gone: &[(replicasets, Some("default"), "rs")],
        kept: &[(pods, Some("default"), "held")],
        removed_before: &[],
        requests: None,
        warned: None,
    },
    Case {
        name: "an owner that never existed: virtual, looked up once, dependents deleted",
        seed: |sim| {
            let ghost = serde_json::json!({"apiVersion": "v1", "kind": "ConfigMap",
                "metadata": {"name": "ghost", "uid": "never-existed"}});
            for name in ["x", "y"] {
                pod(sim, "default", name, &[&ghost], true);
            }
        },
        act: NOTHING,
        gone: &[(pods, Some("default"), "x"), (pods, Some("default"), "y")],
        kept: &[],
        removed_before: &[],
        // One GET of the virtual owner; its absence is then known to both dependents.
        requests: Some([1, 2, 0]),
        warned: None,
    },
    Case {
        name: "an owner re-created with the same name and a new UID",
        seed: |sim| {
            let old = create(
                sim,
                &configmaps(),
                object("v1", "ConfigMap", Some("default"), "owner"),
            );
            pod(sim, "default", "of-old", &[&old], true);
            delete(
                sim,
                &configmaps(),
                Some("default"),
                "owner",
                Propagation::Background,
            );
            let new = create(
                sim,
                &configmaps(),
                object("v1", "ConfigMap", Some("default"), "owner"),
            );
            pod(sim, "default", "of-new", &[&new], true);
        },
        act: NOTHING,
        gone: &[(pods, Some("default"), "of-old")],
        kept: &[
            (pods, Some("default"), "of-new"),
            (configmaps, Some("default"), "owner"),
        ],
        removed_before: &[],
        // One GET finds another UID under the name; of-new's owner is in the graph.
        requests: Some([1, 1, 0]),
        warned: None,
    },
    Case {
        name: "a namespaced owner in another namespace is absent, and reported",
        seed: |sim| {
            let owner = create(
                sim,
                &configmaps(),
                object("v1", "ConfigMap", Some("other"), "owner"),
            );
            pod(sim, "default", "cross", &[&owner], true);
        },
        act: NOTHING,
        gone: &[(pods, Some("default"), "cross")],
        kept: &[(configmaps, Some("other"), "owner")],
        removed_before: &[],
        requests: Some([0, 1, 0]),
        warned: Some("cross"),
    },
    Case {
        name: "a cycle A → B → A of blocking owners, A deleted Foreground",
        seed: |sim| {
            let a = create(
                sim,
                &configmaps(),
                object("v1", "ConfigMap", Some("default"), "a"),
            );
            let b = create(
                sim,
                &configmaps(),
                owned_by(
                    object("v1", "ConfigMap", Some("default"), "b"),
                    vec![reference_to(&a, true)],
                ),
            );
            let mut a = a;
            a["metadata"]["ownerReferences"] = Value::Array(vec![reference_to(&b, true)]);
            if let Err(e) = sim.update(&configmaps(), a) {
                panic!("closing the cycle: {e}");
            }
        },
        act: |sim| {
            delete(
                sim,
                &configmaps(),
                Some("default"),
                "a",
                Propagation::Foreground,
            )
        },
        gone: &[
            (configmaps, Some("default"), "a"),
            (configmaps, Some("default"), "b"),
        ],
        kept: &[],
        removed_before: &[],
        requests: None,
        warned: None,
    },
    Case {
        name: "the TTL controller's Foreground Job deletion completes: Pods, then the Job",
        seed: |sim| {
            let job = create(
                sim,
                &jobs(),
                object("batch/v1", "Job", Some("default"), "pi"),
            );
            for name in ["pi-0", "pi-1"] {
                pod(sim, "default", name, &[&job], true);
            }
        },
        // What the TTL controller sends: Foreground, guarded by the Job's UID.
        act: |sim| {
            let job = sim.get(&jobs(), Some("default"), "pi").unwrap_or_default();
            let options = DeleteOptions {
                propagation: Some(Propagation::Foreground),
                precondition_uid: job["metadata"]["uid"].as_str().map(str::to_owned),
                ..DeleteOptions::default()
            };
            if let Err(e) = sim.delete(&jobs(), Some("default"), "pi", &options) {
                panic!("deleting the Job: {e}");
            }
        },
        gone: &[
            (jobs, Some("default"), "pi"),
            (pods, Some("default"), "pi-0"),
            (pods, Some("default"), "pi-1"),
        ],
        kept: &[],
        removed_before: &[("pi-0", "pi"), ("pi-1", "pi")],
        requests: Some([1, 2, 1]),
        warned: None,
    },
];

async fn run_case(case: &Case) {
    let gc = running(case.seed).await;
    (case.act)(&gc.sim);
    for (gvr, namespace, name) in case.gone {
        gc.gone(&gvr(), *namespace, name).await;
    }
    for (gvr, namespace, name) in case.kept {
        assert!(
            gc.exists(&gvr(), *namespace, name),
            "{}: {name} was deleted",
            case.name
        );
    }
    for (first, then) in case.removed_before {
        let (first_rv, then_rv) = (removed_at(&gc.sim, first), removed_at(&gc.sim, then));
        assert!(
            first_rv.zip(then_rv).is_some_and(|(f, t)| f < t),
            "{}: {first} (rv {first_rv:?}) did not leave before {then} (rv {then_rv:?})",
            case.name
        );
    }
    if let Some(expected) = case.requests {
        let sent = [
            gc.requests(Verb::Get, "/"),
            gc.requests(Verb::Delete, "/"),
            gc.requests(Verb::Patch, "/"),
        ];
        assert_eq!(sent, expected, "{}: [GET, DELETE, PATCH] sent", case.name);
    }
    if let Some(name) = case.warned {
        let events = gc.recorder.events();
        assert!(
            events.iter().any(|e| e.reason == INVALID_NAMESPACE_REASON
                && e.regarding.name.as_deref() == Some(name)),
            "{}: no warning on {name}",
            case.name
        );
    }
    gc.assert_invariant();
    gc.stop().await;
}

#[tokio::test(start_paused = true)]
async fn every_case_of_the_table() {
    for case in CASES {
        run_case(case).await;
    }
}

/// Every deletion the collector sends carries both preconditions.
#[tokio::test(start_paused = true)]
async fn deletions_carry_uid_and_resource_version_preconditions() {
    let gc = running(|sim| {
        let owner = create(
            sim,
            &configmaps(),
            object("v1", "ConfigMap", Some("default"), "owner"),
        );
        pod(sim, "default", "p", &[&owner], true);
    })
    .await;
    delete(
        &gc.sim,
        &configmaps(),
        Some("default"),
        "owner",
        Propagation::Background,
    );
    gc.gone(&pods(), Some("default"), "p").await;
    let deletes = gc.sim.journal().by_verb(Verb::Delete);
    assert_eq!(deletes.len(), 1);
    let body = deletes[0].body.clone().unwrap_or_default();
    assert!(body["preconditions"]["uid"].is_string());
    assert!(body["preconditions"]["resourceVersion"].is_string());
    assert_eq!(body["propagationPolicy"], "Background");
    // The Pod's answer, which the collector does not read, is asked for as metadata (69).
    assert_eq!(
        deletes[0].header("accept"),
        Some(kube_gc::api::ACCEPT_PARTIAL_OBJECT_METADATA_OR_JSON)
    );
    gc.assert_invariant();
    gc.stop().await;
}

#[tokio::test(start_paused = true)]
async fn orphan_keeps_the_dependents_and_removes_their_reference() {
    let gc = running(|sim| {
        let rs = create(
            sim,
            &replicasets(),
            object("apps/v1", "ReplicaSet", Some("default"), "rs"),
        );
        let other = create(
            sim,
            &configmaps(),
            object("v1", "ConfigMap", Some("default"), "other"),
        );
        pod(sim, "default", "a", &[&rs], true);
        pod(sim, "default", "b", &[&rs, &other], true);
    })
    .await;
    delete(
        &gc.sim,
        &replicasets(),
        Some("default"),
        "rs",
        Propagation::Orphan,
    );
    gc.gone(&replicasets(), Some("default"), "rs").await;
    let a = gc.sim.get(&pods(), Some("default"), "a").ok();
    let b = gc.sim.get(&pods(), Some("default"), "b").ok();
    let references = |p: &Option<Value>| {
        p.as_ref()
            .and_then(|p| p["metadata"]["ownerReferences"].as_array().cloned())
            .unwrap_or_default()
    };
    assert!(a.is_some() && references(&a).is_empty());
    let b_refs = references(&b);
    assert_eq!(b_refs.len(), 1);
    assert_eq!(b_refs[0]["name"], "other");
    gc.assert_invariant();
    gc.stop().await;
}

#[tokio::test(start_paused = true)]
async fn a_dependent_with_a_surviving_owner_is_kept_and_loses_the_dead_reference() {
    let gc = running(|sim| {
        let a = create(
            sim,
            &configmaps(),
            object("v1", "ConfigMap", Some("default"), "owner-a"),
        );
        let b = create(
            sim,
            &configmaps(),
            object("v1", "ConfigMap", Some("default"), "owner-b"),
        );
        pod(sim, "default", "shared", &[&a, &b], true);
    })
    .await;
    delete(
        &gc.sim,
        &configmaps(),
        Some("default"),
        "owner-a",
        Propagation::Background,
    );
    let pod = gc
        .until(&pods(), Some("default"), "shared", |p| {
            p.is_none()
                || p.is_some_and(|p| {
                    p["metadata"]["ownerReferences"].as_array().map(Vec::len) == Some(1)
                })
        })
        .await;
    let pod = pod.unwrap_or_default();
    assert_eq!(pod["metadata"]["ownerReferences"][0]["name"], "owner-b");
    assert!(pod["metadata"]["deletionTimestamp"].is_null());
    // One guarded patch, no read.
    assert_eq!(gc.requests(Verb::Patch, "/pods/shared"), 1);
    assert_eq!(gc.requests(Verb::Get, "/pods/shared"), 0);
    gc.assert_invariant();
    gc.stop().await;
}

#[tokio::test(start_paused = true)]
async fn a_cluster_scoped_dependent_of_a_namespaced_owner_is_never_deleted() {
    let gc = running(|sim| {
        let owner = create(
            sim,
            &configmaps(),
            object("v1", "ConfigMap", Some("default"), "owner"),
        );
        create(
            sim,
            &clusterroles(),
            owned_by(
                object("rbac.authorization.k8s.io/v1", "ClusterRole", None, "role"),
                vec![reference_to(&owner, true)],
            ),
        );
        delete(
            sim,
            &configmaps(),
            Some("default"),
            "owner",
            Propagation::Background,
        );
    })
    .await;
    let reported = tokio::time::timeout(PATIENCE, async {
        while !gc
            .recorder
            .events()
            .iter()
            .any(|e| e.reason == INVALID_NAMESPACE_REASON)
        {
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    })
    .await;
    assert!(reported.is_ok(), "no OwnerRefInvalidNamespace event");
    assert!(gc.exists(&clusterroles(), None, "role"));
    assert_eq!(gc.requests(Verb::Delete, "/"), 0);
    gc.assert_invariant();
    gc.stop().await;
}

#[tokio::test(start_paused = true)]
async fn a_crd_served_after_start_gets_a_monitor_and_its_objects_are_collected() {
    let (sim, dir, client) = start_sim().await;
    sim.unserve_resource(&vcjobs()).unwrap();
    let gc = start_gc(sim, dir, client, Duration::from_secs(1)).await;
    let monitors_vcjobs = |gc: &GcRun| {
        gc.handle
            .monitored()
            .iter()
            .any(|(gk, synced)| &*gk.group == "batch.volcano.sh" && *synced)
    };
    assert!(!monitors_vcjobs(&gc));
    gc.sim.serve_resource(&vcjobs()).unwrap();
    let vcjob = create(
        &gc.sim,
        &vcjobs(),
        object("batch.volcano.sh/v1alpha1", "Job", Some("default"), "train"),
    );
    pod(&gc.sim, "default", "train-0", &[&vcjob], true);
    let synced = tokio::time::timeout(PATIENCE, async {
        while !monitors_vcjobs(&gc) {
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
    })
    .await;
    assert!(synced.is_ok(), "no monitor for the new resource");
    delete(
        &gc.sim,
        &vcjobs(),
        Some("default"),
        "train",
        Propagation::Background,
    );
    gc.gone(&pods(), Some("default"), "train-0").await;
    // The resource goes away again: its monitor is stopped.
    gc.sim.unserve_resource(&vcjobs()).unwrap();
    let stopped = tokio::time::timeout(PATIENCE, async {
        while gc
            .handle
            .monitored()
            .iter()
            .any(|(gk, _)| &*gk.group == "batch.volcano.sh")
        {
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
    })
    .await;
    assert!(stopped.is_ok(), "the monitor outlived its resource");
    gc.assert_invariant();
    gc.stop().await;
}

#[tokio::test(start_paused = true)]
async fn an_owner_of_a_kind_not_served_keeps_its_dependent_and_the_collector_stops_cleanly() {
    let gc = running(|sim| {
        let widget = serde_json::json!({"apiVersion": "example.com/v1", "kind": "Widget",
            "metadata": {"name": "w", "uid": "widget-uid"}});
        pod(sim, "default", "of-widget", &[&widget], true);
    })
    .await;
    let retried = tokio::time::timeout(PATIENCE, async {
        while gc.handle.metrics().errors("mapping") < 3 {
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    })
    .await;
    assert!(retried.is_ok(), "the unmapped owner was not retried");
    assert!(gc.exists(&pods(), Some("default"), "of-widget"));
    assert_eq!(gc.requests(Verb::Delete, "/"), 0);
    gc.assert_invariant();
    gc.stop().await;
}

#[tokio::test(start_paused = true)]
async fn an_owner_with_a_thousand_dependents_is_collected_with_one_request_each() {
    const N: usize = 1000;
    let gc = running(|sim| {
        let rs = create(
            sim,
            &replicasets(),
            object("apps/v1", "ReplicaSet", Some("default"), "big"),
        );
        for i in 0..N {
            pod(sim, "default", &format!("big-{i}"), &[&rs], true);
        }
    })
    .await;
    gc.sim.journal().clear();
    delete(
        &gc.sim,
        &replicasets(),
        Some("default"),
        "big",
        Propagation::Background,
    );
    for i in 0..N {
        gc.gone(&pods(), Some("default"), &format!("big-{i}")).await;
    }
    assert_eq!(gc.requests(Verb::Delete, "/pods/"), N);
    assert_eq!(gc.requests(Verb::Get, "/"), 0);
    gc.assert_invariant();
    let sim = gc.stop().await;
    assert!(sim
        .list(&pods(), Some("default"))
        .unwrap_or_default()
        .is_empty());
}

#[tokio::test(start_paused = true)]
async fn workers_start_after_the_initial_sync_timeout_and_defer_unsynced_owners() {
    use kube_gc::sim::faults::FaultPlan;
    let (sim, dir, client) = start_sim().await;
    let owner = create(
        &sim,
        &configmaps(),
        object("v1", "ConfigMap", Some("default"), "owner"),
    );
    pod(&sim, "default", "of-deleted", &[&owner], true);
    delete(
        &sim,
        &configmaps(),
        Some("default"),
        "owner",
        Propagation::Background,
    );
    // Every LIST fails: no monitor can sync.
    sim.faults()
        .set_plan(FaultPlan::new(1).fail(Verb::List, 1.0, &[500]));
    let started = tokio::time::Instant::now();
    let gc = start_gc(sim, dir, client, Duration::from_secs(30)).await;
    assert!(
        started.elapsed() >= Duration::from_secs(30),
        "ready before the timeout"
    );
    assert!(gc.handle.monitored().iter().all(|(_, synced)| !synced));
    // The lists recover: the monitors sync and the dangling pod is collected.
    gc.sim.faults().set_plan(FaultPlan::new(1));
    gc.gone(&pods(), Some("default"), "of-deleted").await;
    gc.assert_invariant();
    gc.stop().await;
}

#[tokio::test(start_paused = true)]
async fn the_simulator_serves_a_resource_only_while_asked() {
    let (sim, _dir, client) = start_sim().await;
    let served = |discovery: &kube_gc::client::Discovery| {
        discovery
            .resource_for_kind("batch.volcano.sh/v1alpha1", "Job")
            .is_some()
    };
    sim.unserve_resource(&vcjobs()).unwrap();
    let discovery = kube_gc::client::Discovery::run(&client).await.unwrap();
    assert!(!served(&discovery));
    let api = kube_gc::client::Api::<Value>::dynamic(
        client.clone(),
        kube_gc::client::ResourceRef::new("batch.volcano.sh", "v1alpha1", "jobs", "Job", true),
        Some("default"),
    );
    let listed = api.list(&kube_gc::client::ListParams::default()).await;
    assert!(listed.is_err_and(|e| e.is_not_found()));
    sim.serve_resource(&vcjobs()).unwrap();
    let discovery = kube_gc::client::Discovery::run(&client).await.unwrap();
    assert!(served(&discovery));
    assert!(api
        .list(&kube_gc::client::ListParams::default())
        .await
        .is_ok());
}

/// On the real clock: readiness must come from the monitors syncing, not from the initial-sync
/// timeout (the paused clock of the other tests would hide a wait that only ends at 30 s).
#[tokio::test]
async fn the_workers_start_as_soon_as_every_monitor_synced() {
    let started = std::time::Instant::now();
    let ready = tokio::time::timeout(Duration::from_secs(20), running(|_| {})).await;
    let Ok(gc) = ready else {
        panic!("not ready after 20 s");
    };
    assert!(started.elapsed() < Duration::from_secs(20));
    assert!(gc.handle.monitored().iter().all(|(_, synced)| *synced));
    gc.stop().await;
}

/// The invariant check itself catches a collector that deletes an object whose owner lives.
#[tokio::test(start_paused = true)]
async fn the_invariant_check_catches_a_wrong_deletion() {
    let (sim, _dir, client) = start_sim().await;
    let owner = create(
        &sim,
        &configmaps(),
        object("v1", "ConfigMap", Some("default"), "alive"),
    );
    pod(&sim, "default", "victim", &[&owner], true);
    // A buggy collector: deletes the dependent over HTTP while its owner lives.
    let api = kube_gc::client::Api::<Value>::dynamic(
        client,
        kube_gc::client::ResourceRef::new("", "v1", "pods", "Pod", true),
        Some("default"),
    );
    let deleted = api
        .delete("victim", &kube_gc::api::DeleteOptions::background())
        .await;
    assert!(deleted.is_ok());
    let check = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        assert_no_live_owner_deleted(&sim)
    }));
    assert!(
        check.is_err(),
        "the invariant check missed a wrong deletion"
    );
}
