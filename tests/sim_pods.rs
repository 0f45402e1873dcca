//! The simulated server replays exchanges 165–194 (`fixtures/real-apiserver/capture/
//! capture_podgc.py`) — Nodes, Pod graceful deletion, the pod garbage collector's status patch,
//! the PVC/PV protection finalizers — and answers as the real v1.28.7 server did: the same
//! status codes, the same fields the pod garbage collector and the protection controllers read,
//! the same `Status` bodies. Each captured request is sent as it was, its uids and
//! resourceVersions translated to the sim's; the clock is frozen, so a grace period shows as
//! an exact offset from the creation time.

mod sim_support;

use std::collections::HashMap;
use std::sync::Arc;

use chrono::{DateTime, Utc};
use kube_gc::sim::clock::ManualClock;
use kube_gc::sim::{Gvr, SimConfig, SimServer};
use serde_json::{json, Value};
use sim_support::*;

const NS: &str = "pgc-capture";

/// A sim at a frozen time with the capture's namespace, and the translation of the capture's
/// uids and resourceVersions into the sim's.
struct Replay {
    server: SimServer,
    http: reqwest::Client,
    /// Captured value → the sim's, for every uid and resourceVersion answered so far.
    seen: HashMap<String, String>,
}

impl Replay {
    async fn start() -> Replay {
        let clock = ManualClock::new(at("2026-11-29T02:54:26Z"));
        let config = SimConfig::default()
            .with_clock(Arc::new(clock))
            .with_namespaces(&[NS]);
        Replay {
            server: start(config).await,
            http: client(),
            seen: HashMap::new(),
        }
    }

    /// Sends exchange `prefix`'s request (translated) and checks the status code is the
    /// captured one; answers the sim's body.
    async fn replay(&mut self, prefix: &str) -> Value {
        let captured = exchange(prefix);
        let request = &captured["request"];
        let method = request["method"].as_str().unwrap_or("GET");
        let path = request["path"].as_str().unwrap_or_default();
        let method = reqwest::Method::from_bytes(method.as_bytes()).expect("a method");
        let mut builder = self.http.request(method, url(&self.server, path));
        if let Some(body) = request.get("body") {
            let content_type = request["headers"]["Content-Type"]
                .as_str()
                .unwrap_or("application/json");
            let body = self.translate(body.clone());
            builder = builder
                .header("Content-Type", content_type)
                .body(body.to_string());
        }
        let (code, body) = send(builder).await;
        let response = &captured["response"];
        assert_eq!(
            u64::from(code),
            response["status"].as_u64().unwrap_or_default(),
            "{prefix}: {body}"
        );
        self.learn(&response["body"], &body);
        body
    }

    /// Records the captured body's uids and resourceVersions against the sim's.
    fn learn(&mut self, captured: &Value, ours: &Value) {
        for field in ["uid", "resourceVersion"] {
            let theirs = captured["metadata"][field].as_str();
            let mine = ours["metadata"][field].as_str();
            if let (Some(theirs), Some(mine)) = (theirs, mine) {
                self.seen.insert(theirs.to_owned(), mine.to_owned());
            }
        }
    }

    fn translate(&self, value: Value) -> Value {
        match value {
            Value::String(text) => Value::String(self.seen.get(&text).cloned().unwrap_or(text)),
            Value::Array(items) => items.into_iter().map(|v| self.translate(v)).collect(),
            Value::Object(map) => map
                .into_iter()
                .map(|(k, v)| (k, self.translate(v)))
                .collect(),
            other => other,
        }
    }

    /// Creates an object as the capture script's unrecorded steps did.
    fn create(&self, resource: &str, obj: Value) -> Value {
        self.server
            .create(&Gvr::new("", "v1", resource), obj)
            .unwrap_or_else(|e| panic!("creating a {resource}: {e}"))
    }

    fn get(&self, resource: &str, name: &str) -> Option<Value> {
        let namespace = (resource != "nodes" && resource != "persistentvolumes").then_some(NS);
        self.server
            .get(&Gvr::new("", "v1", resource), namespace, name)
            .ok()
    }

    async fn delete(&self, path: &str, body: Value) {
        let (code, answer) = send(self.http.delete(url(&self.server, path)).json(&body)).await;
        assert_eq!(code, 200, "{answer}");
    }
}

fn at(text: &str) -> DateTime<Utc> {
    DateTime::parse_from_rfc3339(text)
        .map(|t| t.with_timezone(&Utc))
        .unwrap_or_default()
}

/// Seconds from an object's creation to its `deletionTimestamp`.
fn grace_offset(obj: &Value) -> i64 {
    let time = |field: &str| at(obj["metadata"][field].as_str().unwrap_or_default());
    (time("deletionTimestamp") - time("creationTimestamp")).num_seconds()
}

/// A `Status` body without the uid of its details (the sim's differ).
fn status_body(status: &Value) -> Value {
    let mut status = status.clone();
    if let Some(details) = status["details"].as_object_mut() {
        details.remove("uid");
    }
    status
}

fn pod(name: &str, node: &str) -> Value {
    json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": NS},
        "spec": {"nodeName": node, "containers": [{"name": "c", "image": "busybox:1.36"}]}})
}

#[tokio::test]
async fn nodes_are_created_tainted_not_ready_and_their_status_and_taints_written_like_165_to_168() {
    let mut sim = Replay::start().await;
    let created = sim.replay("165-").await;
    let real = captured_body("165-");
    assert_eq!(created["spec"]["taints"], real["spec"]["taints"]);
    for prefix in ["166-", "167-"] {
        let written = sim.replay(prefix).await;
        assert_eq!(
            written["status"]["conditions"],
            captured_body(prefix)["status"]["conditions"]
        );
    }
    let tainted = sim.replay("168-").await;
    assert_eq!(tainted["spec"], captured_body("168-")["spec"]);
    sim.create(
        "nodes",
        json!({"metadata": {"name": "pgc-node-b",
        "labels": {"kube-gc.io/capture": "podgc"}}}),
    );
    let deleted = sim.replay("194-").await;
    assert_eq!(status_body(&deleted), status_body(&captured_body("194-")));
    assert!(sim.get("nodes", "pgc-node-b").is_none());
}

#[tokio::test]
async fn a_bound_pod_is_deleted_gracefully_like_170_to_175() {
    let mut sim = Replay::start().await;
    let created = sim.replay("170-").await;
    assert_eq!(created["spec"]["terminationGracePeriodSeconds"], 30);
    assert_eq!(created["status"]["phase"], "Pending");

    // Kept, marked 30 s ahead with a 30 s grace period.
    let marked = sim.replay("171-").await;
    assert_eq!(marked["metadata"]["deletionGracePeriodSeconds"], 30);
    assert_eq!(grace_offset(&marked), 30);
    assert!(sim.get("pods", "pgc-graceful").is_some());

    // Deleted again: nothing written.
    let again = sim.replay("172-").await;
    assert_eq!(rv(&again), rv(&marked));

    // A shorter period moves the mark.
    let shorter = sim.replay("173-").await;
    assert_eq!(shorter["metadata"]["deletionGracePeriodSeconds"], 5);
    assert_eq!(grace_offset(&shorter), 5);

    // Zero, guarded: the mark then the removal, answered at the removal's version.
    let forced = sim.replay("174-").await;
    assert_eq!(forced["metadata"]["deletionGracePeriodSeconds"], 0);
    assert_eq!(grace_offset(&forced), 0);
    assert_eq!(rv(&forced), rv(&shorter) + 2);
    let gone = sim.replay("175-").await;
    assert_eq!(gone, captured_body("175-"));
}

#[tokio::test]
async fn a_watch_sees_the_mark_the_shortened_mark_and_the_deletion_like_176() {
    let sim = Replay::start().await;
    let path = format!(
        "/api/v1/namespaces/{NS}/pods?watch=1&fieldSelector=metadata.name%3Dpgc-watched&timeoutSeconds=10"
    );
    let response = sim.http.get(url(&sim.server, &path)).send().await;
    let mut lines = Lines::new(response.expect("the watch"));
    let mut watched = pod("pgc-watched", "pgc-node-a");
    watched["spec"]["terminationGracePeriodSeconds"] = json!(20);
    sim.create("pods", watched);
    let pods = format!("/api/v1/namespaces/{NS}/pods/pgc-watched");
    sim.delete(&pods, json!({})).await;
    sim.delete(&pods, json!({"gracePeriodSeconds": 0})).await;
    let real = exchange("176-");
    let events = real["response"]["events"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    let expected: Vec<Value> = events
        .iter()
        .map(|e| {
            json!([
                e["type"],
                e["object"]["metadata"]["deletionGracePeriodSeconds"]
            ])
        })
        .collect();
    // As many events as the real server sent (a missing one ends the watch at its timeout).
    let mut seen = Vec::new();
    while seen.len() < expected.len() {
        let Some(event) = lines.next().await else {
            break;
        };
        let meta = &event["object"]["metadata"];
        seen.push(json!([event["type"], meta["deletionGracePeriodSeconds"]]));
    }
    assert_eq!(seen, expected);
}

#[tokio::test]
async fn terminated_pods_go_at_once_and_the_pod_gcs_status_patch_is_guarded_like_169_and_177_to_179(
) {
    let mut sim = Replay::start().await;
    let done = sim.create("pods", pod("pgc-succeeded", "pgc-node-a"));
    let mut succeeded = done.clone();
    succeeded["status"] = json!({"phase": "Succeeded"});
    sim.server
        .update_status(&Gvr::new("", "v1", "pods"), succeeded)
        .expect("status written");
    let removed = sim.replay("177-").await;
    assert_eq!(removed["metadata"]["deletionGracePeriodSeconds"], 0);
    assert!(sim.get("pods", "pgc-succeeded").is_none());

    let orphan = sim.create("pods", pod("pgc-orphan", "pgc-node-gone"));
    let theirs = exchange("178-")["request"]["body"]["metadata"]["uid"].clone();
    let ours = orphan["metadata"]["uid"].as_str().unwrap_or_default();
    sim.seen
        .insert(theirs.as_str().unwrap_or_default().into(), ours.into());
    let patched = sim.replay("178-").await;
    // The real server also writes what the sim does not model: a `qosClass`, and the Go
    // zero value of the condition's `lastProbeTime` as `null`.
    let mut real_status = captured_body("178-")["status"].clone();
    real_status.as_object_mut().map(|s| s.remove("qosClass"));
    real_status["conditions"][0]
        .as_object_mut()
        .map(|c| c.remove("lastProbeTime"));
    assert_eq!(patched["status"], real_status);

    // A resourceVersion it no longer has: refused, as a precondition.
    let stale = sim.replay("169-").await;
    assert_eq!(stale, captured_body("169-"));
    let refused = sim.replay("179-").await;
    assert_eq!(refused, captured_body("179-"));
}

#[tokio::test]
async fn finalizers_hold_a_pod_only_past_its_grace_period_like_180_to_183() {
    let mut sim = Replay::start().await;
    let mut held = pod("pgc-held", "pgc-node-a");
    held["metadata"]["finalizers"] = json!(["kube-gc.io/capture-hold"]);
    let created = sim.create("pods", held.clone());
    let theirs = exchange("181-")["request"]["body"][0]["value"].clone();
    let ours = created["metadata"]["uid"].as_str().unwrap_or_default();
    sim.seen
        .insert(theirs.as_str().unwrap_or_default().into(), ours.into());
    let kept = sim.replay("180-").await;
    assert_eq!(
        kept["metadata"]["finalizers"],
        json!(["kube-gc.io/capture-hold"])
    );
    assert_eq!(kept["metadata"]["deletionGracePeriodSeconds"], 0);
    sim.replay("181-").await;
    assert!(sim.get("pods", "pgc-held").is_none());

    held["metadata"]["name"] = json!("pgc-held-graceful");
    sim.create("pods", held);
    let path = format!("/api/v1/namespaces/{NS}/pods/pgc-held-graceful");
    sim.delete(&path, json!({})).await;
    let stays = sim.replay("182-").await;
    assert_eq!(stays["metadata"]["deletionGracePeriodSeconds"], 30);
    assert!(stays["metadata"].get("finalizers").is_none());
    assert!(sim.get("pods", "pgc-held-graceful").is_some());

    let refused = sim.replay("183-").await;
    assert_eq!(refused, captured_body("183-"));
}

#[tokio::test]
async fn claims_and_volumes_are_protected_and_released_like_184_to_193() {
    let mut sim = Replay::start().await;
    for prefix in ["184-", "185-", "186-"] {
        let created = sim.replay(prefix).await;
        let real = captured_body(prefix);
        assert_eq!(
            created["metadata"]["finalizers"],
            real["metadata"]["finalizers"]
        );
        assert_eq!(created["status"], real["status"]);
    }
    let terminating = sim.replay("187-").await;
    let real = captured_body("187-");
    for field in ["finalizers", "deletionGracePeriodSeconds"] {
        assert_eq!(terminating["metadata"][field], real["metadata"][field]);
    }
    assert!(sim.get("persistentvolumeclaims", "pgc-claim").is_some());

    let stale = sim.replay("188-").await;
    assert_eq!(stale, captured_body("188-"));

    let watch = format!(
        "/api/v1/namespaces/{NS}/persistentvolumeclaims?watch=1&fieldSelector=metadata.name%3Dpgc-claim&timeoutSeconds=10"
    );
    let response = sim.http.get(url(&sim.server, &watch)).send().await;
    let mut lines = Lines::new(response.expect("the watch"));
    let released = sim.replay("190-").await;
    assert!(released["metadata"].get("finalizers").is_none());
    assert!(sim.get("persistentvolumeclaims", "pgc-claim").is_none());
    let real = exchange("189-");
    let events = real["response"]["events"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    let expected: Vec<Value> = events.iter().map(|e| e["type"].clone()).collect();
    let mut types = Vec::new();
    while types.len() < expected.len() {
        let Some(event) = lines.next().await else {
            break;
        };
        types.push(event["type"].clone());
    }
    assert_eq!(types, expected);

    let kept = sim.replay("191-").await;
    assert_eq!(
        kept["metadata"]["finalizers"],
        json!(["kubernetes.io/pv-protection"])
    );
    sim.replay("192-").await;
    let gone = sim.replay("193-").await;
    assert_eq!(gone, captured_body("193-"));
}
