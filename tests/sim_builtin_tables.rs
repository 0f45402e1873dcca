//! `kubectl get jobs`, `get pods -o wide`, `get events` and `get crd` against the simulated
//! server: the objects of the real server's scene (exchanges 275–278 of
//! `fixtures/real-apiserver/`, made by `capture/capture_kubectl.py`) created on a simulated
//! server whose clock stands where the real one stood, and its `Table`s compared with the
//! captured ones — the columns' names, types, formats and priorities, and every cell.

mod sim_support;

use std::sync::Arc;
use std::time::Duration;

use chrono::{DateTime, Utc};
use kube_gc::clock::{Clock, ManualClock};
use kube_gc::sim::{DeleteOptions, Gvr, SimConfig, SimServer};
use serde_json::{json, Value};
use sim_support::*;

const KUBECTL: &str = "application/json;as=Table;v=v1;g=meta.k8s.io,application/json;as=Table;v=v1beta1;g=meta.k8s.io,application/json";
const NS: &str = "kubectl-capture";

/// When the captured Tables were answered (their `date` header).
fn answered() -> DateTime<Utc> {
    DateTime::parse_from_rfc3339("2026-11-29T05:27:46Z")
        .unwrap()
        .with_timezone(&Utc)
}

/// The scene, as the capture script writes it: times `ago` seconds before `at`.
struct Scene {
    server: SimServer,
    clock: ManualClock,
}

impl Scene {
    async fn start() -> Scene {
        // The objects of exchange 275 whose age is 3 s were created then.
        let clock = ManualClock::new(answered() - chrono::Duration::seconds(3));
        let config = SimConfig::default()
            .with_clock(Arc::new(clock.clone()))
            .with_namespaces(&["default", NS]);
        let server = start(config).await;
        Scene { server, clock }
    }

    fn ago(&self, seconds: i64) -> String {
        (self.clock.now() - chrono::Duration::seconds(seconds))
            .to_rfc3339_opts(chrono::SecondsFormat::Secs, true)
    }

    fn create_with_status(&self, gvr: &Gvr, object: Value, status: Option<Value>) -> Value {
        let mut created = self.server.create(gvr, object).unwrap();
        if let Some(status) = status {
            created["status"] = status;
            created = self.server.update_status(gvr, created).unwrap();
        }
        created
    }
}

fn container(name: &str) -> Value {
    json!({"name": name, "image": "busybox:1.36", "command": ["sleep", "3600"]})
}

fn job(scene: &Scene, name: &str, spec: Value, status: Option<Value>) {
    let mut full = json!({"template": {"spec": {"restartPolicy": "Never",
        "containers": [container("main")]}}, "backoffLimit": 0});
    for (key, value) in spec.as_object().unwrap() {
        full[key] = value.clone();
    }
    let body = json!({"apiVersion": "batch/v1", "kind": "Job",
        "metadata": {"name": name, "namespace": NS}, "spec": full});
    scene.create_with_status(&jobs(), body, status);
}

fn make_jobs(scene: &Scene) {
    job(
        scene,
        "job-complete",
        json!({"completions": 1}),
        Some(
            json!({"startTime": scene.ago(600), "completionTime": scene.ago(535),
            "succeeded": 1, "ready": 0,
            "conditions": [{"type": "Complete", "status": "True"}]}),
        ),
    );
    job(
        scene,
        "job-running",
        json!({"completions": 3, "parallelism": 2}),
        Some(json!({"startTime": scene.ago(185), "active": 2, "succeeded": 1, "ready": 1})),
    );
    // The others were created a second later.
    scene.clock.advance(Duration::from_secs(1));
    job(
        scene,
        "job-failed",
        json!({"completions": 1}),
        Some(
            json!({"startTime": scene.ago(3700), "failed": 1, "ready": 0,
            "conditions": [{"type": "Failed", "status": "True",
                "reason": "BackoffLimitExceeded"}]}),
        ),
    );
    job(
        scene,
        "job-parallel-no-completions",
        json!({"parallelism": 3}),
        Some(json!({"startTime": scene.ago(45), "active": 3, "ready": 0})),
    );
    job(
        scene,
        "job-not-started",
        json!({"completions": 2, "suspend": true}),
        None,
    );
}

fn pod(scene: &Scene, name: &str, spec: Value, status: Option<Value>, finalizers: Option<Value>) {
    let mut full = json!({"restartPolicy": "Always", "nodeName": "node-a",
        "containers": [container("main")]});
    for (key, value) in spec.as_object().unwrap() {
        full[key] = value.clone();
    }
    let mut metadata = json!({"name": name, "namespace": NS, "labels": {"app": NS}});
    if let Some(finalizers) = finalizers {
        metadata["finalizers"] = finalizers;
    }
    let body = json!({"apiVersion": "v1", "kind": "Pod", "metadata": metadata, "spec": full});
    scene.create_with_status(&pods(), body, status);
}

fn pods() -> Gvr {
    Gvr::new("", "v1", "pods")
}

fn make_pods(scene: &Scene) {
    let running = json!({"startedAt": scene.ago(3000)});
    let main = |state: Value, extra: Value| {
        let mut status = json!({"name": "main", "image": "busybox:1.36", "imageID": "",
            "ready": false, "restartCount": 0, "state": state});
        for (key, value) in extra.as_object().unwrap() {
            status[key] = value.clone();
        }
        status
    };
    pod(
        scene,
        "pod-running",
        json!({"containers": [container("main"), container("sidecar")],
            "readinessGates": [{"conditionType": "example.com/load-balancer"}]}),
        Some(json!({"phase": "Running", "podIP": "10.244.0.5",
            "podIPs": [{"ip": "10.244.0.5"}], "nominatedNodeName": "node-b",
            "conditions": [{"type": "Ready", "status": "False"},
                           {"type": "example.com/load-balancer", "status": "True"}],
            "containerStatuses": [
                main(json!({"running": running}), json!({"ready": true, "started": true,
                    "restartCount": 3, "lastState": {"terminated": {"exitCode": 137,
                        "reason": "OOMKilled", "startedAt": scene.ago(400),
                        "finishedAt": scene.ago(125)}}})),
                {"name": "sidecar", "image": "busybox:1.36", "imageID": "", "ready": false,
                 "started": true, "restartCount": 0, "state": {"running": running}}]})),
        None,
    );
    pod(
        scene,
        "pod-crashloop",
        json!({}),
        Some(
            json!({"phase": "Running", "podIP": "10.244.0.6", "containerStatuses": [
            main(json!({"waiting": {"reason": "CrashLoopBackOff"}}), json!({"restartCount": 17,
                "lastState": {"terminated": {"exitCode": 1, "reason": "Error",
                    "startedAt": scene.ago(50), "finishedAt": scene.ago(40)}}}))]}),
        ),
        None,
    );
    pod(
        scene,
        "pod-completed",
        json!({"restartPolicy": "Never"}),
        Some(
            json!({"phase": "Succeeded", "podIP": "10.244.0.7", "containerStatuses": [
            main(json!({"terminated": {"exitCode": 0, "reason": "Completed",
                "startedAt": scene.ago(890), "finishedAt": scene.ago(800)}}), json!({}))]}),
        ),
        None,
    );
    pod(
        scene,
        "pod-init",
        json!({"initContainers": [container("setup")]}),
        Some(json!({"phase": "Pending",
            "initContainerStatuses": [{"name": "setup", "image": "busybox:1.36", "imageID": "",
                "ready": false, "restartCount": 0,
                "state": {"running": {"startedAt": scene.ago(25)}}}],
            "containerStatuses": [main(json!({"waiting": {"reason": "PodInitializing"}}),
                json!({}))]})),
        None,
    );
    pod(scene, "pod-pending", json!({"nodeName": null}), None, None);
    pod(
        scene,
        "pod-terminating",
        json!({}),
        Some(
            json!({"phase": "Running", "podIP": "10.244.0.8", "containerStatuses": [
            main(json!({"running": {"startedAt": scene.ago(290)}}),
                json!({"ready": true, "started": true}))]}),
        ),
        Some(json!(["capture.kube-gc.io/hold"])),
    );
    let options = DeleteOptions {
        grace_period_seconds: Some(600),
        ..DeleteOptions::default()
    };
    scene
        .server
        .delete(&pods(), Some(NS), "pod-terminating", &options)
        .unwrap();
}

fn make_events(scene: &Scene) {
    let events = Gvr::new("", "v1", "events");
    let involved = |kind: &str, api_version: &str, name: &str, field_path: Option<&str>| {
        let mut reference = json!({"kind": kind, "apiVersion": api_version, "namespace": NS,
            "name": name});
        if let Some(path) = field_path {
            reference["fieldPath"] = json!(path);
        }
        reference
    };
    let event = |name: &str, fields: Value| {
        let mut body = json!({"apiVersion": "v1", "kind": "Event",
            "metadata": {"name": name, "namespace": NS}});
        for (key, value) in fields.as_object().unwrap() {
            body[key] = value.clone();
        }
        scene.server.create(&events, body).unwrap();
    };
    event(
        "pod-running.pulled",
        json!({
        "involvedObject": involved("Pod", "v1", "pod-running", Some("spec.containers{main}")),
        "type": "Normal", "reason": "Pulled",
        "message": "Container image \"busybox:1.36\" already present on machine",
        "source": {"component": "kubelet", "host": "node-a"}, "count": 4,
        "firstTimestamp": scene.ago(3000), "lastTimestamp": scene.ago(125),
        "reportingComponent": "kubelet", "reportingInstance": "node-a"}),
    );
    event(
        "pod-crashloop.backoff",
        json!({
        "involvedObject": involved("Pod", "v1", "pod-crashloop", Some("spec.containers{main}")),
        "type": "Warning", "reason": "BackOff",
        "message": "Back-off restarting failed container main in pod pod-crashloop",
        "source": {"component": "kubelet", "host": "node-a"}, "count": 77,
        "firstTimestamp": scene.ago(7000), "lastTimestamp": scene.ago(40),
        "reportingComponent": "kubelet", "reportingInstance": "node-a"}),
    );
    event(
        "job-complete.completed",
        json!({
        "involvedObject": involved("Job", "batch/v1", "job-complete", None),
        "type": "Normal", "reason": "Completed", "message": "Job completed",
        "source": {"component": "job-controller"}, "count": 1,
        "firstTimestamp": scene.ago(535), "lastTimestamp": scene.ago(535)}),
    );
    event(
        "namespace-wide.note",
        json!({
        "involvedObject": {"kind": "Namespace", "apiVersion": "v1", "namespace": NS},
        "type": "Normal", "reason": "Noted",
        "message": "  an Event with no object name in its namespace, spaces around  ",
        "source": {"component": "kubectl-capture"},
        "firstTimestamp": scene.ago(60), "lastTimestamp": scene.ago(60)}),
    );
    // Written through events.k8s.io/v1 on the real server and listed as v1: here, where the two
    // APIs keep their Events apart, written in both.
    let micro = |seconds: i64| {
        (scene.clock.now() - chrono::Duration::seconds(seconds))
            .to_rfc3339_opts(chrono::SecondsFormat::Micros, true)
    };
    event(
        "job-running.series",
        json!({
        "involvedObject": involved("Job", "batch/v1", "job-running", None),
        "eventTime": micro(400), "series": {"count": 6, "lastObservedTime": micro(20)},
        "reportingComponent": "example.com/job-watcher", "reportingInstance": "job-watcher-0",
        "action": "Observe", "reason": "StillRunning", "type": "Normal",
        "message": "the Job is still running (a series of 6)", "source": {}}),
    );
    scene
        .server
        .create(
            &Gvr::new("events.k8s.io", "v1", "events"),
            json!({"apiVersion": "events.k8s.io/v1", "kind": "Event",
                "metadata": {"name": "job-running.series", "namespace": NS},
                "eventTime": micro(400), "series": {"count": 6, "lastObservedTime": micro(20)},
                "reportingController": "example.com/job-watcher",
                "reportingInstance": "job-watcher-0", "action": "Observe",
                "reason": "StillRunning", "type": "Normal",
                "regarding": involved("Job", "batch/v1", "job-running", None),
                "note": "the Job is still running (a series of 6)"}),
        )
        .unwrap();
}

/// What a column is, without its description (this server's are its own words).
fn shapes(table: &Value) -> Vec<(Value, Value, Value, Value)> {
    table["columnDefinitions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| {
            (
                c["name"].clone(),
                c["type"].clone(),
                c["format"].clone(),
                c["priority"].clone(),
            )
        })
        .collect()
}

fn rows(table: &Value) -> Vec<(Value, Value)> {
    table["rows"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            (
                r["cells"].clone(),
                r.get("conditions").cloned().unwrap_or(Value::Null),
            )
        })
        .collect()
}

async fn kubectl_table(server: &SimServer, path: &str) -> Value {
    let (code, table) = send(client().get(url(server, path)).header("Accept", KUBECTL)).await;
    assert_eq!(code, 200, "{table}");
    assert_eq!(table["kind"], "Table", "{table}");
    assert_eq!(table["apiVersion"], "meta.k8s.io/v1");
    assert!(table["metadata"]["resourceVersion"].is_string());
    for row in table["rows"].as_array().unwrap() {
        assert_eq!(row["object"]["kind"], "PartialObjectMetadata");
        assert!(row["object"]["metadata"]["uid"].is_string(), "{row}");
    }
    table
}

#[tokio::test]
async fn jobs_pods_and_events_print_the_real_servers_columns_and_cells() {
    let scene = Scene::start().await;
    make_jobs(&scene);
    // Pods and Events were all created when the first Jobs were (their age is 3 s).
    scene.clock.set(answered() - chrono::Duration::seconds(3));
    make_pods(&scene);
    make_events(&scene);
    scene.clock.set(answered());

    for (prefix, path) in [
        (
            "275-",
            "/apis/batch/v1/namespaces/kubectl-capture/jobs?limit=500",
        ),
        ("276-", "/api/v1/namespaces/kubectl-capture/pods?limit=500"),
        (
            "277-",
            "/api/v1/namespaces/kubectl-capture/events?limit=500",
        ),
    ] {
        let mut real = captured_body(prefix);
        let mut answer = kubectl_table(&scene.server, path).await;
        assert_eq!(shapes(&answer), shapes(&real), "{prefix}");
        if prefix == "275-" {
            // The real server gives a Job the selector of its own uid when it creates it; this
            // one keeps the selector it is given (none here). `Selector`'s rule has unit tests.
            for table in [&mut real, &mut answer] {
                for row in table["rows"].as_array_mut().unwrap() {
                    row["cells"][6] = Value::Null;
                }
            }
        }
        assert_eq!(rows(&answer), rows(&real), "{prefix}");
    }
    // The events.k8s.io/v1 Event prints as its v1 reading does.
    let real = captured_body("277-");
    let series = kubectl_table(
        &scene.server,
        "/apis/events.k8s.io/v1/namespaces/kubectl-capture/events/job-running.series",
    )
    .await;
    assert_eq!(shapes(&series), shapes(&real));
    assert_eq!(series["rows"][0]["cells"], real["rows"][1]["cells"]);
}

#[tokio::test]
async fn crds_print_their_creation_time_as_a_date() {
    let scene = Scene::start().await;
    let real = captured_body("278-");
    let answer = kubectl_table(
        &scene.server,
        "/apis/apiextensions.k8s.io/v1/customresourcedefinitions?limit=500",
    )
    .await;
    assert_eq!(shapes(&answer), shapes(&real));
    let created = answer["rows"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["cells"][0] == "retentionpolicies.kube-gc.io")
        .map(|r| r["cells"][1].clone())
        .unwrap();
    let at = DateTime::parse_from_rfc3339(created.as_str().unwrap()).unwrap();
    assert!(at.with_timezone(&Utc) <= scene.clock.now(), "{created}");
    // A date, not an age: the shape of the real cell.
    assert_eq!(
        created.as_str().map(str::len),
        real["rows"][0]["cells"][1].as_str().map(str::len)
    );
}
