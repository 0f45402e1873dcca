//! `/debug/explain` on a running kube-gc: the manager runs against the simulated API
//! server on the paused clock, in dry-run so that what is due stays to be explained, and its
//! page answers from the controllers' caches what `kube-gc explain` answers from the API — the
//! same verdict and `deleteAt` at the same instant, without a single request; behind
//! `--enable-debug-handlers`; one line naming what was wrong for a bad query or an object no
//! cache holds.

mod client_support;
mod explain_support;
mod ttl_support;

use std::sync::Arc;

use chrono::Duration as Span;
use explain_support::explain_at;
use futures_util::FutureExt;
use http::{Request, StatusCode};
use http_body_util::BodyExt;
use kube_gc::explain::decide::rfc3339;
use kube_gc::explain::{Explanation, VerdictKind};
use kube_gc::manager::{ControllerSelection, Manager, ManagerOptions};
use kube_gc::metrics::Metrics;
use kube_gc::server::Endpoints;
use kube_gc::sim::{DeleteOptions, Gvr, Propagation, SimConfig};
use serde_json::{json, Value};
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;
use ttl_support::{create_job, eventually, jobs, world_with, World};

fn pods() -> Gvr {
    Gvr::new("", "v1", "pods")
}

/// A running manager publishing on its endpoints.
struct Running {
    endpoints: Endpoints,
    shutdown: CancellationToken,
    task: JoinHandle<()>,
}

impl Running {
    async fn stop(self) {
        self.shutdown.cancel();
        self.task.await.expect("the manager task");
    }
}

async fn world() -> World {
    world_with(SimConfig::default().with_namespaces(&["default", "data"])).await
}

/// Starts the manager (dry run: nothing is deleted) and waits for its caches.
async fn run(world: &World, debug: bool, controllers: &[&str]) -> Running {
    let options = ManagerOptions {
        controllers: ControllerSelection::parse(controllers).expect("controllers"),
        ..ManagerOptions::default()
    };
    run_with(world, debug, options).await
}

async fn run_with(world: &World, debug: bool, options: ManagerOptions) -> Running {
    let endpoints = Endpoints::new(Metrics::new(), debug);
    let options = ManagerOptions {
        dry_run: true,
        ..options
    };
    let set = Manager::new(world.harness.client.clone(), options)
        .clock(Arc::clone(&world.clock))
        .publish_to(&endpoints)
        .start()
        .await
        .expect("the manager starts");
    let readiness = set.readiness();
    let shutdown = CancellationToken::new();
    let stop = shutdown.clone();
    let task = tokio::spawn(async move { set.run(stop).await.expect("the manager ran") });
    readiness.wait(&shutdown).await.expect("caches synced");
    Running {
        endpoints,
        shutdown,
        task,
    }
}

/// `GET path` on the endpoints: status and body. Synchronous, as the handler is.
fn get(endpoints: &Endpoints, path: &str) -> (StatusCode, String) {
    let request = Request::get(path).body(()).expect("a request");
    let response = endpoints.respond(&request);
    let status = response.status();
    let body = response
        .into_body()
        .collect()
        .now_or_never()
        .expect("a full body is ready")
        .expect("a body")
        .to_bytes();
    (status, String::from_utf8_lossy(&body).into_owned())
}

/// `/debug/explain` as JSON.
fn live(endpoints: &Endpoints, object: &str, namespace: &str) -> Value {
    let path = format!("/debug/explain?object={object}&namespace={namespace}&output=json");
    let (status, body) = get(endpoints, &path);
    assert_eq!(status, StatusCode::OK, "{body}");
    serde_json::from_str(&body).expect("JSON")
}

/// `kube-gc explain`'s path: gather from the API, decide at `now`.
async fn cli(
    world: &World,
    type_: &str,
    namespace: &str,
    name: &str,
    now: chrono::DateTime<chrono::Utc>,
) -> Explanation {
    explain_at(world, type_, namespace, name, now)
        .await
        .expect("gathered")
}

fn decision<'a>(explained: &'a Value, controller: &str) -> &'a Value {
    explained["decisions"]
        .as_array()
        .and_then(|all| all.iter().find(|d| d["controller"] == controller))
        .unwrap_or_else(|| panic!("no decision of {controller}: {explained:#}"))
}

/// The live verdict and deleteAt, then the CLI's at the same instant: they agree.
async fn agree(world: &World, running: &Running, type_: &str, ns: &str, name: &str) -> Value {
    let said = live(&running.endpoints, &format!("{type_}/{name}"), ns);
    let now = world.now();
    let answered_at = format!("answered from kube-gc's caches at {}", rfc3339(now));
    assert!(
        said["notes"][0]
            .as_str()
            .is_some_and(|n| n.starts_with(&answered_at)),
        "{said:#}"
    );
    let cli = cli(world, type_, ns, name, now).await;
    assert_eq!(said["verdict"], cli.verdict.as_str(), "{said:#}\n{cli:#?}");
    assert_eq!(
        said["deleteAt"].as_str(),
        cli.delete_at.as_deref(),
        "{said:#}"
    );
    for d in &cli.decisions {
        let live = decision(&said, &d.controller);
        assert_eq!(
            live["governs"], d.governs,
            "{}: {live:#} vs {d:#?}",
            d.controller
        );
        assert_eq!(
            live["verdict"],
            d.verdict.as_str(),
            "{}: {live:#}",
            d.controller
        );
    }
    said
}

fn pod(namespace: &str, name: &str, metadata: Value) -> Value {
    let mut pod = json!({"apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {"restartPolicy": "Never", "containers": [{"name": "main", "image": "busybox:1.36"}]}});
    if let Some(fields) = metadata.as_object() {
        for (k, v) in fields {
            pod["metadata"][k] = v.clone();
        }
    }
    pod
}

/// A running Pod in `data` under a Pods policy; an owner Job deleted in the foreground whose
/// Pod, blocking it, is held by another controller's finalizer.
fn retention_and_foreground(world: &World) {
    let sim = world.sim();
    let policies = Gvr::new("kube-gc.io", "v1alpha1", "clusterretentionpolicies");
    sim.create(
        &policies,
        json!({"apiVersion": "kube-gc.io/v1alpha1",
        "kind": "ClusterRetentionPolicy", "metadata": {"name": "pods"},
        "spec": {"preset": "pods", "ttlSecondsAfterFinished": 3600}}),
    )
    .expect("the policy");
    let mut running = sim
        .create(&pods(), pod("data", "web", json!({})))
        .expect("a Pod");
    running["status"] = json!({"phase": "Running"});
    sim.update_status(&pods(), running).expect("running");

    let owner = create_job(sim, "owner", None, None);
    let reference = json!([{"apiVersion": "batch/v1", "kind": "Job", "name": "owner",
        "uid": owner["metadata"]["uid"], "controller": true, "blockOwnerDeletion": true}]);
    let held = pod(
        "default",
        "worker",
        json!({"ownerReferences": reference,
        "finalizers": ["example.com/protect"]}),
    );
    sim.create(&pods(), held).expect("the held Pod");
    sim.delete(
        &pods(),
        Some("default"),
        "worker",
        &DeleteOptions::default(),
    )
    .expect("delete the Pod");
    sim.delete(
        &jobs(),
        Some("default"),
        "owner",
        &DeleteOptions::propagation(Propagation::Foreground),
    )
    .expect("delete the Job in the foreground");
}

#[tokio::test(start_paused = true)]
async fn the_live_verdict_is_the_cli_verdict_at_the_same_instant() {
    let world = world().await;
    let now = world.now();
    create_job(world.sim(), "unexpired", Some(600), Some(now));
    create_job(world.sim(), "expired", Some(0), Some(now - Span::hours(1)));
    retention_and_foreground(&world);
    let running = run(&world, true, &["*"]).await;
    eventually("the caches hold every object", || {
        let explained = |object, ns| {
            get(
                &running.endpoints,
                &format!("/debug/explain?object={object}&namespace={ns}&output=json"),
            )
        };
        let governed = |(status, body): (StatusCode, String)| {
            status == StatusCode::OK && body.contains("\"governs\": true")
        };
        governed(explained("pods/web", "data"))
            && explained("jobs/owner", "default").1.contains("\"blocked\"")
    })
    .await;

    let unexpired = agree(&world, &running, "jobs", "default", "unexpired").await;
    assert_eq!(unexpired["verdict"], "delete-at");
    let expired = agree(&world, &running, "jobs", "default", "expired").await;
    assert_eq!(expired["verdict"], "delete-now");
    let web = agree(&world, &running, "po", "data", "web").await;
    assert_eq!(web["verdict"], "keep");
    assert_eq!(decision(&web, "retention")["governs"], true);
    let owner = agree(&world, &running, "jobs", "default", "owner").await;
    assert_eq!(owner["verdict"], "blocked");
    let foreground = &owner["deletion"]["finalizers"][0];
    assert_eq!(foreground["finalizer"], "foregroundDeletion", "{owner:#}");
    assert_eq!(
        foreground["blockers"][0]["object"], "Pod default/worker",
        "{owner:#}"
    );
    running.stop().await;
}

#[tokio::test(start_paused = true)]
async fn the_page_makes_no_request() {
    let world = world().await;
    create_job(world.sim(), "done", Some(60), Some(world.now()));
    let running = run(&world, true, &["*"]).await;
    eventually("the Job is cached", || {
        get(&running.endpoints, "/debug/explain?object=jobs/done").0 == StatusCode::OK
    })
    .await;
    let last = |world: &World| world.sim().journal().entries().last().map(|e| e.seq);
    let before = last(&world);
    for output in ["text", "json", "yaml"] {
        let path = format!("/debug/explain?object=jobs/done&output={output}");
        assert_eq!(get(&running.endpoints, &path).0, StatusCode::OK);
    }
    assert_eq!(
        get(&running.endpoints, "/debug/explain?object=jobs/nope").0,
        StatusCode::NOT_FOUND
    );
    assert_eq!(last(&world), before, "the journal is unchanged");
    running.stop().await;
}

#[tokio::test(start_paused = true)]
async fn without_debug_handlers_there_is_no_page() {
    let world = world().await;
    create_job(world.sim(), "done", Some(60), Some(world.now()));
    let running = run(&world, false, &["*"]).await;
    let (status, body) = get(&running.endpoints, "/debug/explain?object=jobs/done");
    assert_eq!(
        (status, body.as_str()),
        (StatusCode::NOT_FOUND, "404 page not found\n")
    );
    running.stop().await;
}

#[tokio::test(start_paused = true)]
async fn a_bad_query_is_400_and_an_object_no_cache_holds_404_each_in_one_line() {
    let world = world().await;
    create_job(world.sim(), "done", Some(60), Some(world.now()));
    let running = run(&world, true, &["*", "-volcano-job-ttl"]).await;
    let endpoints = &running.endpoints;
    let one_line = |(status, body): (StatusCode, String)| {
        assert_eq!(body.trim_end().lines().count(), 1, "{body}");
        (status, body.trim_end().to_owned())
    };
    for (query, says) in [
        ("", "missing object"),
        ("object=jobs", "object \"jobs\" is not TYPE/NAME"),
        (
            "object=jobs/done&output=xml",
            "output \"xml\" is not text, json or yaml",
        ),
        ("object=jobs/done&limit=1", "unknown parameter \"limit\""),
        (
            "object=widgets/x",
            "the server doesn't have a resource type \"widgets\"",
        ),
    ] {
        let (status, body) = one_line(get(endpoints, &format!("/debug/explain?{query}")));
        assert_eq!(status, StatusCode::BAD_REQUEST, "{query}: {body}");
        assert!(body.contains(says), "{query}: {body}");
    }
    let (status, body) = one_line(get(endpoints, "/debug/explain?object=jobs/nope"));
    assert_eq!(status, StatusCode::NOT_FOUND, "{body}");
    assert!(
        body.starts_with(
            "jobs.batch \"nope\" in namespace \"default\" is not in kube-gc's caches ("
        ),
        "{body}"
    );
    assert!(
        body.contains("ttl-after-finished watches batch/v1/jobs (1 cached"),
        "{body}"
    );
    assert!(
        body.contains("volcano-job-ttl is not running in this kube-gc: disabled by --controllers"),
        "{body}"
    );

    eventually("the Job is cached", || {
        get(endpoints, "/debug/explain?object=jobs/done").0 == StatusCode::OK
    })
    .await;
    let said = live(endpoints, "jobs/done", "default");
    let volcano = decision(&said, "volcano-job-ttl");
    assert_eq!(volcano["governs"], false);
    assert_eq!(
        volcano["summary"],
        "not running in this kube-gc: disabled by --controllers"
    );
    assert_eq!(said["verdict"], VerdictKind::DeleteAt.as_str());
    running.stop().await;
}

#[tokio::test(start_paused = true)]
async fn a_controller_that_does_not_run_says_why_and_governs_nothing() {
    let world = world().await;
    create_job(world.sim(), "done", Some(60), Some(world.now()));
    let options = ManagerOptions {
        namespace: Some("default".into()),
        ..ManagerOptions::default()
    };
    let running = run_with(&world, true, options).await;
    let endpoints = &running.endpoints;
    eventually("the Job is cached", || {
        get(endpoints, "/debug/explain?object=jobs/done").0 == StatusCode::OK
    })
    .await;
    let said = live(endpoints, "jobs/done", "default");
    for controller in ["retention", "garbagecollector"] {
        let d = decision(&said, controller);
        assert_eq!(d["governs"], false, "{d:#}");
        assert_eq!(
            d["summary"],
            "not running in this kube-gc: skipped at start-up: it needs every namespace, and --namespace is \"default\""
        );
    }
    assert_eq!(said["verdict"], "delete-at", "{said:#}");
    running.stop().await;
}

/// The namespace controller's, the PVC protection controller's and the pod garbage collector's
/// caches answer what `kube-gc explain` answers: a namespace held by `kubernetes` and a
/// ConfigMap's finalizer, a claim held by the Pod that uses it, an orphaned Pod.
#[tokio::test(start_paused = true)]
async fn a_namespace_a_claim_and_a_pod_are_explained_from_the_caches_as_the_cli_does() {
    let world = world().await;
    let sim = world.sim();
    let gvr = |resource: &str| Gvr::new("", "v1", resource);
    sim.create(&gvr("namespaces"), json!({"metadata": {"name": "xn-held"}}))
        .expect("a namespace");
    sim.create(
        &gvr("configmaps"),
        json!({"metadata": {"name": "cm-a", "namespace": "xn-held",
            "finalizers": ["example.com/hold"]}}),
    )
    .expect("a ConfigMap");
    sim.delete(
        &gvr("namespaces"),
        None,
        "xn-held",
        &DeleteOptions::default(),
    )
    .expect("delete the namespace");
    let mut node = sim
        .create(&gvr("nodes"), json!({"metadata": {"name": "n1"}}))
        .expect("a node");
    node["status"] = json!({"conditions": [{"type": "Ready", "status": "True"}]});
    sim.update_status(&gvr("nodes"), node).expect("ready");
    sim.create(
        &gvr("persistentvolumeclaims"),
        json!({"metadata": {"name": "data", "namespace": "data"},
            "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}}}),
    )
    .expect("a claim");
    let mut web = pod("data", "web", json!({}));
    web["spec"]["nodeName"] = json!("n1");
    web["spec"]["volumes"] = json!([{"name": "d", "persistentVolumeClaim": {"claimName": "data"}}]);
    sim.create(&pods(), web).expect("a Pod using it");
    sim.delete(
        &gvr("persistentvolumeclaims"),
        Some("data"),
        "data",
        &DeleteOptions::default(),
    )
    .expect("delete the claim");
    let mut orphan = pod("data", "orphan", json!({}));
    orphan["spec"]["nodeName"] = json!("gone");
    sim.create(&pods(), orphan).expect("an orphan");

    let running = run(&world, true, &["*"]).await;
    let endpoints = &running.endpoints;
    eventually("the caches hold them", || {
        let governed = |object: &str, ns: &str| {
            let (status, body) = get(
                endpoints,
                &format!("/debug/explain?object={object}&namespace={ns}&output=json"),
            );
            status == StatusCode::OK && body.contains("\"governs\": true")
        };
        governed("namespaces/xn-held", "")
            && governed("pvc/data", "data")
            && governed("pods/orphan", "data")
    })
    .await;

    let namespace = agree(&world, &running, "namespaces", "", "xn-held").await;
    assert_eq!(namespace["verdict"], "blocked", "{namespace:#}");
    let kubernetes = &namespace["deletion"]["finalizers"][0];
    assert_eq!(kubernetes["finalizer"], "kubernetes");
    assert_eq!(kubernetes["field"], "spec.finalizers");
    assert_eq!(
        kubernetes["blockers"][0]["object"], "ConfigMap xn-held/cm-a",
        "{namespace:#}"
    );
    let remaining = &namespace["namespace"]["remaining"][0];
    assert_eq!(remaining["resource"], "configmaps");
    assert_eq!(remaining["finalizers"][0]["owner"]["kind"], "unknown");
    assert!(namespace["namespace"]["contentSource"]
        .as_str()
        .is_some_and(|s| s.starts_with("kube-gc's caches")));

    let claim = agree(&world, &running, "pvc", "data", "data").await;
    let protection = decision(&claim, "pvc-protection");
    assert_eq!(protection["verdict"], "blocked");
    assert!(protection["summary"]
        .as_str()
        .is_some_and(|s| s.starts_with("in use by pod data/web")));
    assert_eq!(
        claim["deletion"]["finalizers"][0]["blockers"][0]["object"],
        "Pod data/web"
    );

    // The orphan's quarantine: the collector's own clock started when it saw the node missing,
    // which the CLI cannot know — it says "at the latest".
    let live = live(endpoints, "pods/orphan", "data");
    let cli = cli(&world, "pods", "data", "orphan", world.now()).await;
    assert_eq!(live["verdict"], "delete-at", "{live:#}");
    assert_eq!(cli.verdict, VerdictKind::DeleteAt);
    let live_at = live["deleteAt"].as_str().expect("a time").to_owned();
    assert!(
        live_at.as_str() <= cli.delete_at.as_deref().unwrap_or(""),
        "{live_at}"
    );
    running.stop().await;
}
