//! The namespace controller against the simulated server (whose namespaces follow the real
//! lifecycle, exchanges 137–164), on tokio's paused clock: a deleted namespace is emptied — Pods
//! first — and finalized; what holds it (a finalizer, a partial discovery, a refused request)
//! holds it, and its release is acted on at once; the safety delay holds; an outage is waited
//! out; what one namespace costs in requests is counted; and its RBAC allows all it does.

mod deploy_support;

use std::sync::Arc;
use std::time::Duration;

use chrono::{DateTime, Utc};
use kube_gc::client::{Client, ClientOptions};
use kube_gc::clock::{SharedClock, TokioClock};
use kube_gc::controllers::namespace::{NamespaceController, NamespaceHandle, NamespaceOptions};
use kube_gc::controllers::Wiring;
use kube_gc::events::CollectingRecorder;
use kube_gc::runtime::controller::ControllerError;
use kube_gc::runtime::reflector::ReflectorConfig;
use kube_gc::runtime::sources::Sources;
use kube_gc::sim::Connect as _;
use kube_gc::sim::{DeleteOptions, Gvr, SimConfig, SimServer};
use serde_json::{json, Value};
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

/// Virtual time: a bound on waits that would otherwise hang a broken test.
const PATIENCE: Duration = Duration::from_secs(600);
/// The User-Agent suffix the controller's requests carry.
const AGENT: &str = "namespace-controller";
const HOLD: &str = "example.com/hold";

fn epoch() -> DateTime<Utc> {
    DateTime::parse_from_rfc3339("2026-11-29T08:00:00Z")
        .map(|t| t.to_utc())
        .unwrap_or_default()
}

fn namespaces() -> Gvr {
    Gvr::new("", "v1", "namespaces")
}
fn pods() -> Gvr {
    Gvr::new("", "v1", "pods")
}
fn configmaps() -> Gvr {
    Gvr::new("", "v1", "configmaps")
}
fn secrets() -> Gvr {
    Gvr::new("", "v1", "secrets")
}
fn jobs() -> Gvr {
    Gvr::new("batch", "v1", "jobs")
}
fn leases() -> Gvr {
    Gvr::new("coordination.k8s.io", "v1", "leases")
}
fn events() -> Gvr {
    Gvr::new("", "v1", "events")
}

/// A simulated server and the namespace controller running against it.
struct Run {
    sim: SimServer,
    handle: NamespaceHandle,
    recorder: Arc<CollectingRecorder>,
    clock: SharedClock,
    stop: CancellationToken,
    task: JoinHandle<Result<(), ControllerError>>,
    _dir: tempfile::TempDir,
}

/// A server with `namespaces` (and their content, from `seed`), then the controller on it.
async fn start(
    namespace_names: &[&str],
    seed: impl FnOnce(&SimServer),
    tune: impl FnOnce(&mut NamespaceOptions),
) -> Run {
    let clock: SharedClock = Arc::new(TokioClock::starting_at(epoch()));
    let mut config = SimConfig::default().with_clock(Arc::clone(&clock) as _);
    config.journal_capacity = 100_000;
    let sim = SimServer::start(config).await.unwrap();
    for name in namespace_names {
        sim.create(&namespaces(), json!({"metadata": {"name": name}}))
            .unwrap();
    }
    seed(&sim);
    let dir = tempfile::tempdir().unwrap();
    let config = sim.client_config(&dir.path().join("kubeconfig")).unwrap();
    let options = ClientOptions::default()
        .with_rate(0.0, 1)
        .without_timeouts();
    let client = Client::new(&config, &options).unwrap();
    let reflector = ReflectorConfig {
        seed: Some(7),
        ..ReflectorConfig::default()
    };
    let sources = Sources::new(client.for_component("shared-informers", 1.0), reflector);
    let recorder = Arc::new(CollectingRecorder::new());
    let mut options = NamespaceOptions {
        wiring: Wiring::default()
            .sources(sources)
            .clock(Arc::clone(&clock))
            .recorder(Arc::clone(&recorder) as _),
        ..NamespaceOptions::default()
    };
    tune(&mut options);
    let controller = NamespaceController::new(client.for_component(AGENT, 1.0), options);
    let handle = controller.handle();
    let stop = CancellationToken::new();
    let task = tokio::spawn(controller.run(stop.clone()));
    let synced = tokio::time::timeout(PATIENCE, async {
        while !handle.is_synced() {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    })
    .await;
    assert!(synced.is_ok(), "the namespaces never synced");
    Run {
        sim,
        handle,
        recorder,
        clock,
        stop,
        task,
        _dir: dir,
    }
}

impl Run {
    /// Stops the controller; it must stop cleanly.
    async fn stop(self) -> SimServer {
        self.stop.cancel();
        let stopped = tokio::time::timeout(PATIENCE, self.task).await;
        assert!(
            matches!(stopped, Ok(Ok(Ok(())))),
            "the controller did not stop cleanly: {stopped:?}"
        );
        self.sim
    }

    fn now(&self) -> DateTime<Utc> {
        self.clock.now()
    }

    /// Deletes a namespace as kubectl does; returns its deletionTimestamp.
    fn delete_namespace(&self, name: &str) -> DateTime<Utc> {
        self.sim
            .delete(&namespaces(), None, name, &DeleteOptions::default())
            .unwrap();
        let namespace = self.namespace(name).unwrap();
        let at = namespace["metadata"]["deletionTimestamp"].as_str().unwrap();
        DateTime::parse_from_rfc3339(at).unwrap().to_utc()
    }

    fn namespace(&self, name: &str) -> Option<Value> {
        self.sim.get(&namespaces(), None, name).ok()
    }

    /// Waits until the namespace is gone; returns when (virtual time).
    async fn gone(&self, name: &str) -> DateTime<Utc> {
        let waited = tokio::time::timeout(
            PATIENCE,
            self.sim
                .wait_for(&namespaces(), None, name, |o| o.is_none()),
        )
        .await;
        assert!(waited.is_ok(), "namespace {name} was never finalized");
        self.now()
    }

    /// Waits until `condition` holds for the namespace, and returns it.
    async fn until(&self, name: &str, condition: impl Fn(&Value) -> bool) -> Value {
        let waited = tokio::time::timeout(
            PATIENCE,
            self.sim
                .wait_for(&namespaces(), None, name, |o| o.is_some_and(&condition)),
        )
        .await;
        match waited {
            Ok(Ok(Some(namespace))) => namespace,
            other => panic!("namespace {name} never got there: {other:?}"),
        }
    }

    /// Lets `seconds` of virtual time pass.
    async fn wait(&self, seconds: u64) {
        tokio::time::sleep(Duration::from_secs(seconds)).await;
    }

    /// The controller's requests so far (its User-Agent), discovery aside: it reads discovery
    /// every period whatever the namespaces do, as the garbage collector does.
    fn requests(&self) -> Vec<kube_gc::sim::journal::JournalEntry> {
        self.sim
            .journal()
            .entries()
            .into_iter()
            .filter(|e| {
                e.headers
                    .iter()
                    .any(|(name, value)| name == "user-agent" && value.ends_with(AGENT))
            })
            .filter(|e| e.verb != kube_gc::sim::faults::Verb::Discovery)
            .collect()
    }

    fn count(&self, gvr: &Gvr, namespace: &str) -> usize {
        self.sim.list(gvr, Some(namespace)).unwrap().len()
    }

    fn release(&self, gvr: &Gvr, namespace: &str, name: &str) {
        let mut object = self.sim.get(gvr, Some(namespace), name).unwrap();
        object["metadata"]["finalizers"] = json!([]);
        self.sim.update(gvr, object).unwrap();
    }
}

fn object(namespace: &str, name: &str, finalizers: &[&str]) -> Value {
    let mut metadata = json!({"name": name, "namespace": namespace});
    if !finalizers.is_empty() {
        metadata["finalizers"] = json!(finalizers);
    }
    json!({"metadata": metadata, "data": {"k": "v"}})
}

fn pod(namespace: &str, name: &str, finalizers: &[&str]) -> Value {
    let mut pod = object(namespace, name, finalizers);
    pod["spec"] = json!({"containers": [{"name": "c", "image": "busybox:1.36"}]});
    pod
}

fn job(namespace: &str, name: &str) -> Value {
    json!({"metadata": {"name": name, "namespace": namespace},
        "spec": {"template": {"spec": {"restartPolicy": "Never",
            "containers": [{"name": "c", "image": "busybox:1.36"}]}}}})
}

/// A namespace with content of several kinds: two Pods, three ConfigMaps, a Secret, a Job, a
/// Lease and an Event.
fn seed_content(sim: &SimServer, namespace: &str) {
    for name in ["web-0", "web-1"] {
        sim.create(&pods(), pod(namespace, name, &[])).unwrap();
    }
    for name in ["a", "b", "c"] {
        sim.create(&configmaps(), object(namespace, name, &[]))
            .unwrap();
    }
    sim.create(&secrets(), object(namespace, "s", &[])).unwrap();
    sim.create(&jobs(), job(namespace, "j")).unwrap();
    sim.create(&leases(), object(namespace, "l", &[])).unwrap();
    let event = json!({"metadata": {"name": "e", "namespace": namespace},
        "involvedObject": {"kind": "Pod", "name": "web-0", "namespace": namespace},
        "reason": "Started", "type": "Normal"});
    sim.create(&events(), event).unwrap();
}

#[tokio::test(start_paused = true)]
async fn a_namespace_with_content_of_several_kinds_is_emptied_pods_first_and_finalized() {
    let run = start(
        &["team-a", "team-b"],
        |sim| {
            seed_content(sim, "team-a");
            seed_content(sim, "team-b");
        },
        |_| {},
    )
    .await;
    let deleted_at = run.delete_namespace("team-a");
    let gone_at = run.gone("team-a").await;
    assert!(
        gone_at >= deleted_at + chrono::Duration::seconds(5),
        "finalized {gone_at} before the safety delay after {deleted_at}"
    );
    for gvr in [pods(), configmaps(), secrets(), jobs(), leases(), events()] {
        assert_eq!(run.count(&gvr, "team-a"), 0, "{gvr:?} left in team-a");
    }
    // The other namespace is untouched.
    assert!(run.namespace("team-b").is_some());
    assert_eq!(run.count(&configmaps(), "team-b"), 3);
    assert_eq!(run.count(&pods(), "team-b"), 2);
    // Pods went first: every Pod left storage before anything else of the namespace.
    let deletions: Vec<_> = run
        .sim
        .deletions()
        .into_iter()
        .filter(|d| d.namespace.as_deref() == Some("team-a"))
        .collect();
    let last_pod = deletions
        .iter()
        .filter(|d| d.gvr == pods())
        .map(|d| d.rv)
        .max()
        .unwrap();
    let first_other = deletions
        .iter()
        .filter(|d| d.gvr != pods())
        .map(|d| d.rv)
        .min()
        .unwrap();
    assert!(last_pod < first_other, "{deletions:?}");
    // The finalize's answer reaches the controller after the namespace left the store.
    run.wait(1).await;
    assert_eq!(run.handle.metrics().finalized_total(), 1);
    // Its RBAC (deploy/controllers/namespace) and discovery's allow every request it made,
    // the lists and watches of its sources included.
    let grants: Vec<_> = deploy_support::grants()
        .into_iter()
        .filter(|g| {
            g.source == "controllers/namespace/rbac.yaml" || g.source == "base/rbac-discovery.yaml"
        })
        .collect();
    let journal = run.sim.journal().entries();
    let mut denied: Vec<deploy_support::Request> = journal
        .iter()
        .map(deploy_support::Request::from_journal)
        .filter(|r| !deploy_support::allowed(&grants, r))
        .collect();
    denied.dedup();
    assert_eq!(denied, Vec::<deploy_support::Request>::new());
    run.stop().await;
}

#[tokio::test(start_paused = true)]
async fn a_pod_a_finalizer_holds_keeps_everything_else_until_it_goes() {
    let run = start(
        &["team-a"],
        |sim| {
            sim.create(&pods(), pod("team-a", "held", &[HOLD])).unwrap();
            sim.create(&configmaps(), object("team-a", "config", &[]))
                .unwrap();
        },
        |_| {},
    )
    .await;
    run.delete_namespace("team-a");
    // The Pod is marked, the ConfigMap untouched, the namespace says why.
    let namespace = run
        .until("team-a", |ns| {
            condition(ns, "NamespaceContentRemaining").is_some_and(|c| c["status"] == "True")
        })
        .await;
    run.wait(60).await;
    let held = run.sim.get(&pods(), Some("team-a"), "held").unwrap();
    assert!(held["metadata"]["deletionTimestamp"].is_string());
    let config = run
        .sim
        .get(&configmaps(), Some("team-a"), "config")
        .unwrap();
    assert!(
        config["metadata"].get("deletionTimestamp").is_none(),
        "deleted before the Pod went"
    );
    assert_eq!(
        condition(&namespace, "NamespaceContentRemaining").unwrap()["message"],
        "Some resources are remaining: configmaps. has 1 resource instances, pods. has 1 resource instances"
    );
    assert_eq!(
        condition(&namespace, "NamespaceFinalizersRemaining").unwrap()["message"],
        "Some content in the namespace has finalizers remaining: example.com/hold in 1 resource instances"
    );
    run.release(&pods(), "team-a", "held");
    run.gone("team-a").await;
    assert_eq!(run.count(&configmaps(), "team-a"), 0);
    run.stop().await;
}

fn condition<'a>(namespace: &'a Value, type_: &str) -> Option<&'a Value> {
    namespace["status"]["conditions"]
        .as_array()?
        .iter()
        .find(|c| c["type"] == type_)
}

#[tokio::test(start_paused = true)]
async fn a_finalizer_holds_the_finalize_without_polling_and_its_release_is_acted_on_at_once() {
    let run = start(
        &["team-a"],
        |sim| {
            sim.create(&configmaps(), object("team-a", "held", &[HOLD]))
                .unwrap();
            sim.create(&configmaps(), object("team-a", "plain", &[]))
                .unwrap();
        },
        |_| {},
    )
    .await;
    run.delete_namespace("team-a");
    run.until("team-a", |ns| {
        condition(ns, "NamespaceFinalizersRemaining").is_some_and(|c| c["status"] == "True")
    })
    .await;
    // Settled: nothing is asked of the server while the finalizer holds.
    run.wait(10).await;
    let before = run.requests().len();
    run.wait(300).await;
    assert_eq!(
        run.requests().len(),
        before,
        "requests while waiting on a finalizer"
    );
    let namespace = run.namespace("team-a").unwrap();
    assert_eq!(namespace["spec"]["finalizers"], json!(["kubernetes"]));
    assert_eq!(
        condition(&namespace, "NamespaceContentRemaining").unwrap()["message"],
        "Some resources are remaining: configmaps. has 1 resource instances"
    );
    for (type_, reason) in [
        ("NamespaceDeletionDiscoveryFailure", "ResourcesDiscovered"),
        (
            "NamespaceDeletionGroupVersionParsingFailure",
            "ParsedGroupVersions",
        ),
        ("NamespaceDeletionContentFailure", "ContentDeleted"),
    ] {
        let condition = condition(&namespace, type_).unwrap();
        assert_eq!(
            (&condition["status"], &condition["reason"]),
            (&json!("False"), &json!(reason))
        );
    }
    let released_at = run.now();
    run.release(&configmaps(), "team-a", "held");
    let gone_at = run.gone("team-a").await;
    assert!(
        gone_at - released_at <= chrono::Duration::seconds(1),
        "finalized {} after the release",
        gone_at - released_at
    );
    run.stop().await;
}

#[tokio::test(start_paused = true)]
async fn the_finalize_waits_for_the_safety_delay_and_the_flag_changes_it() {
    let run = start(&["empty"], |_| {}, |_| {}).await;
    let deleted_at = run.delete_namespace("empty");
    let gone_at = run.gone("empty").await;
    let after = gone_at - deleted_at;
    assert!(
        after >= chrono::Duration::seconds(5) && after < chrono::Duration::seconds(6),
        "finalized {after} after the deletion"
    );
    run.stop().await;
    let run = start(&["empty"], |_| {}, |o| o.finalize_delay = Duration::ZERO).await;
    let deleted_at = run.delete_namespace("empty");
    let gone_at = run.gone("empty").await;
    assert!(gone_at - deleted_at < chrono::Duration::seconds(1));
    run.stop().await;
}

#[tokio::test(start_paused = true)]
async fn a_group_discovery_cannot_read_stops_only_the_finalize_and_is_named() {
    let run = start(
        &["team-a"],
        |sim| {
            sim.set_stale("batch.volcano.sh", "v1alpha1", true);
            sim.create(&configmaps(), object("team-a", "config", &[]))
                .unwrap();
        },
        |_| {},
    )
    .await;
    run.delete_namespace("team-a");
    let namespace = run
        .until("team-a", |ns| {
            condition(ns, "NamespaceDeletionDiscoveryFailure")
                .is_some_and(|c| c["status"] == "True")
        })
        .await;
    // Everything else went; the finalizer stays.
    assert_eq!(run.count(&configmaps(), "team-a"), 0);
    run.wait(120).await;
    let namespace = run.namespace("team-a").unwrap_or(namespace);
    assert_eq!(namespace["spec"]["finalizers"], json!(["kubernetes"]));
    let message = condition(&namespace, "NamespaceDeletionDiscoveryFailure").unwrap()["message"]
        .as_str()
        .unwrap()
        .to_owned();
    assert!(
        message.starts_with("Discovery failed for some groups, 1 failing: unable to retrieve the complete list of server APIs: batch.volcano.sh/v1alpha1: "),
        "{message}"
    );
    assert!(run
        .recorder
        .events()
        .iter()
        .any(|e| e.reason == "NamespaceDeletionDiscoveryFailure" && e.message == message));
    assert_eq!(run.handle.metrics().blocked_now("DiscoveryFailed"), 1);
    // The group answers again: the namespace goes within a discovery period.
    run.sim.set_stale("batch.volcano.sh", "v1alpha1", false);
    run.gone("team-a").await;
    run.wait(1).await;
    assert_eq!(run.handle.metrics().blocked_now("DiscoveryFailed"), 0);
    run.stop().await;
}

#[tokio::test(start_paused = true)]
async fn a_resource_kube_gc_may_not_delete_blocks_the_finalize_and_is_reported() {
    let run = start(
        &["team-a"],
        |sim| {
            sim.create(&configmaps(), object("team-a", "config", &[]))
                .unwrap();
            sim.create(&secrets(), object("team-a", "s", &[])).unwrap();
            sim.deny("deletecollection", &configmaps()).unwrap();
        },
        |_| {},
    )
    .await;
    run.delete_namespace("team-a");
    let namespace = run
        .until("team-a", |ns| {
            condition(ns, "NamespaceDeletionContentFailure").is_some_and(|c| c["status"] == "True")
        })
        .await;
    assert_eq!(run.count(&secrets(), "team-a"), 0, "the rest is deleted");
    run.wait(120).await;
    assert!(run.namespace("team-a").is_some(), "finalized despite a 403");
    assert_eq!(run.count(&configmaps(), "team-a"), 1);
    let message = &condition(&namespace, "NamespaceDeletionContentFailure").unwrap()["message"];
    assert_eq!(
        message,
        "Failed to delete all resource types, 1 remaining: configmaps is forbidden: User \"admin\" cannot deletecollection resource \"configmaps\" in API group \"\" in the namespace \"team-a\""
    );
    assert!(run
        .recorder
        .events()
        .iter()
        .any(|e| e.reason == "NamespaceDeletionContentFailure"));
    assert_eq!(run.handle.metrics().blocked_total("Forbidden"), 1);
    run.sim.allow("deletecollection", &configmaps()).unwrap();
    run.gone("team-a").await;
    run.stop().await;
}

#[tokio::test(start_paused = true)]
async fn an_api_server_outage_is_waited_out_and_the_deletion_resumes() {
    let run = start(
        &["team-a"],
        |sim| {
            sim.create(&configmaps(), object("team-a", "held", &[HOLD]))
                .unwrap();
        },
        |_| {},
    )
    .await;
    run.delete_namespace("team-a");
    run.until("team-a", |ns| {
        condition(ns, "NamespaceFinalizersRemaining").is_some_and(|c| c["status"] == "True")
    })
    .await;
    run.sim.stop_apiserver().await;
    // Released while kube-gc cannot see it.
    run.release(&configmaps(), "team-a", "held");
    run.wait(90).await;
    assert!(run.namespace("team-a").is_some());
    run.sim.start_apiserver().await.unwrap();
    run.gone("team-a").await;
    run.stop().await;
}

#[tokio::test(start_paused = true)]
async fn dry_run_deletes_and_finalizes_nothing() {
    let run = start(
        &["team-a"],
        |sim| seed_content(sim, "team-a"),
        |o| o.dry_run = true,
    )
    .await;
    run.delete_namespace("team-a");
    run.wait(120).await;
    assert!(run.namespace("team-a").is_some());
    assert_eq!(run.count(&pods(), "team-a"), 2);
    assert!(
        run.requests().iter().all(|e| e.method == "GET"),
        "dry run wrote"
    );
    run.stop().await;
}

/// The fixed scene whose request count docs/namespaces.md reports: two Pods, three ConfigMaps,
/// a Secret, a Job, a Lease and an Event, nothing held.
#[tokio::test(start_paused = true)]
async fn one_namespace_costs_a_counted_number_of_requests() {
    let run = start(&["team-a"], |sim| seed_content(sim, "team-a"), |_| {}).await;
    let before = run.requests().len();
    run.delete_namespace("team-a");
    run.gone("team-a").await;
    let requests: Vec<String> = run.requests()[before..]
        .iter()
        .map(|e| format!("{} {}", e.method, e.path))
        .collect();
    // Per namespace: a GET of the namespace before each pass that deletes (3), deletecollection
    // of pods, a LIST proving them gone, deletecollection of each other resource holding
    // content (configmaps, secrets, jobs, leases), then after the safety delay one LIST page of
    // each watched namespaced resource (10 in the sim, kube-gc's own RetentionPolicies among
    // them) and one deletecollection of each resource
    // nothing watches (Events of both groups: its answer is the proof), and the finalize, which
    // gets no 409. No status write: nothing was held, nothing went wrong. And a discovery (2,
    // not counted here) after the delay.
    assert_eq!(requests.len(), 22, "{requests:#?}");
    let deletes = requests.iter().filter(|r| r.starts_with("DELETE")).count();
    assert_eq!(deletes, 7, "{requests:#?}");
    let finalizes = requests.iter().filter(|r| r.ends_with("/finalize")).count();
    assert_eq!(finalizes, 1, "no 409 on the finalize: {requests:#?}");
    eprintln!(
        "requests for one namespace (discovery aside): {}",
        requests.len()
    );
    run.stop().await;
}

#[tokio::test(start_paused = true)]
async fn objects_released_one_by_one_do_not_each_cost_a_status_write() {
    let run = start(
        &["claims"],
        |sim| {
            for i in 0..40 {
                let name = format!("held-{i:02}");
                sim.create(&configmaps(), object("claims", &name, &[HOLD]))
                    .unwrap();
            }
        },
        |_| {},
    )
    .await;
    run.delete_namespace("claims");
    run.until("claims", |ns| {
        condition(ns, "NamespaceFinalizersRemaining").is_some_and(|c| c["status"] == "True")
    })
    .await;
    let status_writes = |run: &Run| {
        run.requests()
            .iter()
            .filter(|e| e.method == "PATCH" && e.path.ends_with("/claims/status"))
            .count()
    };
    let before = status_writes(&run);
    // The finalizer's owner releases them one by one, four a second, for ten seconds (as PVC
    // protection does at its client's rate), all but one.
    for i in 0..39 {
        run.release(&configmaps(), "claims", &format!("held-{i:02}"));
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
    let during = status_writes(&run) - before;
    assert!(
        during <= 3,
        "{during} status writes for 39 releases over ten seconds"
    );
    // The last count is written once the refresh is due, with no other event to prompt it.
    let namespace = run
        .until("claims", |ns| {
            condition(ns, "NamespaceContentRemaining").is_some_and(|c| {
                c["message"] == "Some resources are remaining: configmaps. has 1 resource instances"
            })
        })
        .await;
    assert_eq!(
        condition(&namespace, "NamespaceFinalizersRemaining").unwrap()["message"],
        "Some content in the namespace has finalizers remaining: example.com/hold in 1 resource instances"
    );
    let released_at = run.now();
    run.release(&configmaps(), "claims", "held-39");
    let gone_at = run.gone("claims").await;
    assert!(gone_at - released_at <= chrono::Duration::seconds(1));
    run.stop().await;
}
