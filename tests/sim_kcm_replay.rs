//! kube-controller-manager v1.28.7 against the simulated server, by replay: every request kcm's
//! TTL-after-finished, garbage-collector and Job controllers sent in two recorded runs against
//! the real server (exchanges 240 and 288, recorded through a proxy, protobuf bodies byte for
//! byte), with the scene's own requests between them, sent to the sim in the recorded order,
//! and each answer compared with the real server's. CI has no Go toolchain to run kcm itself;
//! the recorded requests are what kcm decided from what the real server told it, so a sim that
//! answers them as the real server did would have led kcm to the same decisions.
//!
//! What is compared, and why:
//! - the status code, for every request but watches (a watch is kcm's input, not its decision:
//!   what it learnt from one is in the requests that follow);
//! - the media type of the answer (protobuf or JSON): client-go reads what it is sent;
//! - `kind` and `apiVersion` of the answer, and of a `Status` its `status` and `reason`;
//! - of an object answered, its identity (`metadata.name`, `namespace`, and its uid mapped
//!   onto the sim's) and whether it is marked for deletion, its `finalizers` and
//!   `ownerReferences` — what the collector and the TTL controller decide on;
//! - the fields the write set: every leaf of the request's body (a JSON patch document, a
//!   DeleteOptions, a protobuf Pod, Event or Job status), read in both answers — so a sim that
//!   accepted a write but dropped or changed what it wrote is caught;
//! - of a LIST, the names of the items in the run's own namespaces (the real server also
//!   holds the cluster's system objects, which the sim does not).
//!
//! Not compared literally: uids, resourceVersions and generated names differ between the two
//! servers; each real one is mapped onto the sim's as answers reveal them (walking both
//! answers side by side), and mapped in every later request (a protobuf body is decoded,
//! mapped and encoded again). Timestamps are left out (the replay is not timed like the run).
//!
//! Every difference found is either a sim defect (the test fails and lists it) or one of the
//! named allowances below, each an entry of `kube_gc::sim::differences` (the list `kube-gc
//! sim --help` shows), so a new difference cannot pass unnamed.

mod sim_support;

use std::collections::{BTreeMap, BTreeSet, HashMap};

use base64::Engine as _;
use kube_gc::sim::{differences, SimConfig, SimServer};
use kube_gc_protobuf::{encode, schema, transcode, Envelope, Selection, MEDIA_TYPE};
use serde_json::Value;
use sim_support::*;

/// Keys whose values are timestamps: never compared (the replay is not timed as the run was).
const TIMESTAMP_KEYS: [&str; 9] = [
    "creationTimestamp",
    "deletionTimestamp",
    "firstTimestamp",
    "lastTimestamp",
    "eventTime",
    "startTime",
    "completionTime",
    "lastProbeTime",
    "lastTransitionTime",
];

/// One answer, read whatever its encoding.
#[derive(Debug)]
struct Answer {
    code: u16,
    protobuf: bool,
    /// The body as JSON; for a protobuf body of a kind without a table, only its type.
    body: Value,
}

/// A place where the sim answered otherwise than the real server.
#[derive(Debug)]
struct Finding {
    seq: u64,
    client: String,
    method: String,
    path: String,
    aspect: String,
    real: String,
    sim: String,
    /// The real answer's `apiVersion` and `kind`.
    real_type: (String, String),
}

impl std::fmt::Display for Finding {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "#{} {} {} {}: {}: real {} / sim {}",
            self.seq, self.client, self.method, self.path, self.aspect, self.real, self.sim
        )
    }
}

/// Real uids, resourceVersions and generated names → the sim's.
#[derive(Default)]
struct Mapping {
    to_sim: HashMap<String, String>,
}

impl Mapping {
    fn map_str(&self, s: &str) -> String {
        self.to_sim.get(s).cloned().unwrap_or_else(|| s.to_owned())
    }

    /// `value` with every string the mapping knows replaced by the sim's.
    fn map_value(&self, value: &Value) -> Value {
        match value {
            Value::String(s) => Value::String(self.map_str(s)),
            Value::Array(items) => Value::Array(items.iter().map(|v| self.map_value(v)).collect()),
            Value::Object(map) => Value::Object(
                map.iter()
                    .map(|(k, v)| (self.map_str(k), self.map_value(v)))
                    .collect(),
            ),
            other => other.clone(),
        }
    }

    fn map_path(&self, path: &str) -> String {
        let (path, query) = path.split_once('?').unwrap_or((path, ""));
        let segments: Vec<String> = path.split('/').map(|s| self.map_str(s)).collect();
        let mut mapped = segments.join("/");
        if !query.is_empty() {
            mapped.push('?');
            mapped.push_str(query);
        }
        mapped
    }

    /// Learns from two answers to the same request, walked side by side.
    fn learn(&mut self, real: &Value, sim: &Value, under_metadata: bool) {
        let (Value::Object(r), Value::Object(s)) = (real, sim) else {
            return;
        };
        if let (Some(Value::Array(ri)), Some(Value::Array(si))) = (r.get("items"), s.get("items")) {
            let by_name: HashMap<(String, String), &Value> =
                si.iter().map(|item| (identity(item), item)).collect();
            for item in ri {
                if let Some(sim_item) = by_name.get(&identity(item)) {
                    self.learn(item, sim_item, false);
                }
            }
        }
        for (key, rv) in r {
            let Some(sv) = s.get(key) else { continue };
            let identifying = matches!(key.as_str(), "uid" | "resourceVersion")
                || (under_metadata && key == "name");
            match (rv, sv) {
                (Value::String(a), Value::String(b)) if identifying && a != b => {
                    self.to_sim.entry(a.clone()).or_insert_with(|| b.clone());
                }
                (Value::Object(_), Value::Object(_)) => self.learn(rv, sv, key == "metadata"),
                (Value::Array(a), Value::Array(b)) if key != "items" && a.len() == b.len() => {
                    for (x, y) in a.iter().zip(b) {
                        self.learn(x, y, false);
                    }
                }
                _ => {}
            }
        }
    }
}

fn identity(item: &Value) -> (String, String) {
    let meta = &item["metadata"];
    (
        meta["namespace"].as_str().unwrap_or_default().to_owned(),
        meta["name"].as_str().unwrap_or_default().to_owned(),
    )
}

fn bytes_of(text: &Value) -> Vec<u8> {
    base64::engine::general_purpose::STANDARD
        .decode(text.as_str().unwrap_or_default())
        .unwrap_or_default()
}

/// A protobuf body as JSON: the object when a table describes it, else its type alone.
fn protobuf_json(bytes: &[u8]) -> Value {
    if let Ok(text) = transcode::body_to_json(bytes, &Selection::all()) {
        if let Ok(value) = serde_json::from_slice(&text) {
            return value;
        }
    }
    match Envelope::decode(bytes) {
        Ok(envelope) => {
            serde_json::json!({"kind": envelope.kind, "apiVersion": envelope.api_version, "opaque": true})
        }
        Err(e) => serde_json::json!({"undecodable": e.to_string()}),
    }
}

/// The real answer of `exchange`, its body looked up where it is stored once for several.
fn real_answer(exchange: &Value, by_seq: &BTreeMap<u64, &Value>) -> Answer {
    let mut response = &exchange["response"];
    if let Some(seq) = response["body_same_as_seq"].as_u64() {
        if let Some(earlier) = by_seq.get(&seq) {
            let code = response["status"].as_u64().unwrap_or_default() as u16;
            let mut answer = real_answer(earlier, by_seq);
            answer.code = code;
            return answer;
        }
    }
    let code = response["status"].as_u64().unwrap_or_default() as u16;
    let content_type = header(&response["headers"], "content-type");
    let protobuf = content_type.starts_with(MEDIA_TYPE);
    let body = if protobuf {
        protobuf_json(&bytes_of(&response["body_base64"]))
    } else {
        response = &exchange["response"];
        response["body"].clone()
    };
    Answer {
        code,
        protobuf,
        body,
    }
}

fn header(headers: &Value, name: &str) -> String {
    headers
        .as_object()
        .and_then(|h| h.iter().find(|(k, _)| k.eq_ignore_ascii_case(name)))
        .and_then(|(_, v)| v.as_str())
        .unwrap_or_default()
        .to_owned()
}

/// The request body as the sim should receive it: its bytes, with the real server's uids and
/// resourceVersions mapped onto the sim's; and the body as JSON, for the fields it sets.
fn request_body(request: &Value, mapping: &Mapping) -> (Vec<u8>, Value) {
    if let Some(text) = request["body_text"].as_str() {
        return match serde_json::from_str::<Value>(text) {
            Ok(value) => {
                let mapped = mapping.map_value(&value);
                let mut bytes = serde_json::to_vec(&mapped).unwrap_or_default();
                if text.ends_with('\n') {
                    bytes.push(b'\n');
                }
                (bytes, mapped)
            }
            Err(_) => (text.as_bytes().to_vec(), Value::Null),
        };
    }
    if request["body_base64"].is_null() {
        return (Vec::new(), Value::Null);
    }
    let bytes = bytes_of(&request["body_base64"]);
    let decoded = protobuf_json(&bytes);
    let mapped = mapping.map_value(&decoded);
    if mapped == decoded {
        return (bytes, decoded);
    }
    // Re-encoded under the envelope's own type (a DeleteOptions keeps its `batch/v1`).
    let envelope = Envelope::decode(&bytes).expect("a body that decoded has an envelope");
    let mut object = mapped.clone();
    if let Some(map) = object.as_object_mut() {
        map.remove("kind");
        map.remove("apiVersion");
    }
    let encoded = encode::object_as(envelope.api_version, envelope.kind, &object)
        .expect("a decoded body encodes again");
    (encoded, mapped)
}

struct Replay {
    server: SimServer,
    http: reqwest::Client,
    mapping: Mapping,
    findings: Vec<Finding>,
    namespaces: BTreeSet<String>,
    tally: Tally,
}

/// What a replay did, so that a run that compared nothing cannot pass.
#[derive(Debug, Default)]
struct Tally {
    /// Requests sent to the sim.
    sent: usize,
    /// Of those, with a protobuf body.
    protobuf_bodies: usize,
    /// Answers the sim wrote in protobuf.
    protobuf_answers: usize,
    /// Fields a write set, compared in both answers.
    written_fields: usize,
    /// Objects whose identity, finalizers and owners were compared.
    objects: usize,
}

impl Replay {
    async fn send(&self, request: &Value, body: Vec<u8>) -> Answer {
        let method =
            reqwest::Method::from_bytes(request["method"].as_str().unwrap_or("GET").as_bytes())
                .expect("a method");
        let path = self
            .mapping
            .map_path(request["path"].as_str().unwrap_or("/"));
        let mut builder = self.http.request(method, url(&self.server, &path));
        for name in ["Accept", "Content-Type", "User-Agent"] {
            let value = header(&request["headers"], name);
            if !value.is_empty() {
                builder = builder.header(name, value);
            }
        }
        if !body.is_empty() || !request["body_text"].is_null() {
            builder = builder.body(body);
        }
        let response = builder.send().await.expect("the sim answers");
        let code = response.status().as_u16();
        let protobuf = response
            .headers()
            .get("content-type")
            .and_then(|v| v.to_str().ok())
            .is_some_and(|v| v.starts_with(MEDIA_TYPE));
        let bytes = response.bytes().await.unwrap_or_default();
        let body = if protobuf {
            protobuf_json(&bytes)
        } else {
            serde_json::from_slice(&bytes).unwrap_or(Value::Null)
        };
        Answer {
            code,
            protobuf,
            body,
        }
    }

    async fn replay(&mut self, exchange: &Value, by_seq: &BTreeMap<u64, &Value>) {
        let request = &exchange["request"];
        let path = request["path"].as_str().unwrap_or_default();
        if path.contains("watch=true") {
            return;
        }
        let (body, written) = request_body(request, &self.mapping);
        let real = real_answer(exchange, by_seq);
        let sim = self.send(request, body).await;
        self.tally.sent += 1;
        self.tally.protobuf_bodies += usize::from(!request["body_base64"].is_null());
        self.tally.protobuf_answers += usize::from(sim.protobuf);
        let real_type = (real.body["apiVersion"].clone(), real.body["kind"].clone());
        let mut finding = |aspect: &str, real: String, sim: String| {
            self.findings.push(Finding {
                seq: exchange["seq"].as_u64().unwrap_or_default(),
                client: exchange["client"]
                    .as_str()
                    .unwrap_or_default()
                    .rsplit('/')
                    .next()
                    .unwrap_or_default()
                    .to_owned(),
                method: request["method"].as_str().unwrap_or_default().to_owned(),
                path: path.to_owned(),
                aspect: aspect.to_owned(),
                real,
                sim,
                real_type: (
                    real_type.0.as_str().unwrap_or_default().to_owned(),
                    real_type.1.as_str().unwrap_or_default().to_owned(),
                ),
            })
        };
        if real.code != sim.code {
            finding(
                "code",
                real.code.to_string(),
                format!("{} {}", sim.code, sim.body["message"]),
            );
            return;
        }
        if real.protobuf != sim.protobuf {
            finding("media", media(real.protobuf), media(sim.protobuf));
        }
        for key in ["kind", "apiVersion"] {
            let sim_value = &sim.body[key];
            if !real.body[key].is_null() && &real.body[key] != sim_value {
                finding(key, real.body[key].to_string(), sim_value.to_string());
            }
        }
        if real.body["kind"] == "Status" {
            for key in ["status", "reason"] {
                if real.body[key] != sim.body[key] {
                    finding(key, real.body[key].to_string(), sim.body[key].to_string());
                }
            }
        }
        let real_mapped = self.mapping.map_value(&real.body);
        if real.body["items"].is_array() && !real.body["opaque"].is_boolean() {
            let names = |v: &Value| -> BTreeSet<(String, String)> {
                v["items"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .map(identity)
                    .filter(|(ns, _)| self.namespaces.contains(ns))
                    .collect()
            };
            let (r, s) = (names(&real_mapped), names(&sim.body));
            if r != s {
                finding("items", format!("{r:?}"), format!("{s:?}"));
            }
        } else if real.body["metadata"].is_object() && real.body["kind"] != "Status" {
            let generated = !written["metadata"]["generateName"].is_null();
            let real_uid = real.body["metadata"]["uid"].as_str().unwrap_or_default();
            let uid_known = self.mapping.to_sim.contains_key(real_uid);
            for key in ["name", "namespace", "uid", "finalizers", "ownerReferences"] {
                // A uid or generated name seen for the first time is learnt, not compared.
                if (key == "uid" && !uid_known) || (key == "name" && generated) {
                    continue;
                }
                let (r, s) = (&real_mapped["metadata"][key], &sim.body["metadata"][key]);
                if r != s {
                    finding(&format!("metadata.{key}"), r.to_string(), s.to_string());
                }
            }
            let marked = |v: &Value| !v["metadata"]["deletionTimestamp"].is_null();
            if marked(&real.body) != marked(&sim.body) {
                finding(
                    "metadata.deletionTimestamp",
                    marked(&real.body).to_string(),
                    marked(&sim.body).to_string(),
                );
            }
            let mut leaves = Vec::new();
            written_leaves(&written, &mut Vec::new(), &mut leaves);
            if path
                .split('?')
                .next()
                .unwrap_or_default()
                .ends_with("/status")
            {
                // A PUT or PATCH of /status writes the status alone: the server keeps the rest
                // of the object as stored, whatever the body says.
                leaves.retain(|leaf| leaf.first().is_some_and(|k| k == "status"));
            }
            if written["kind"] == "Secret" {
                // Written into `data` by the conversion; compared there.
                leaves.retain(|leaf| leaf.first().is_none_or(|k| k != "stringData"));
            }
            self.tally.objects += 1;
            self.tally.written_fields += leaves.len();
            for leaf in leaves {
                let (r, s) = (at(&real_mapped, &leaf), at(&sim.body, &leaf));
                if r != s {
                    finding(&leaf.join("."), show(r), show(s));
                }
            }
        }
        self.mapping.learn(&real.body, &sim.body, false);
    }
}

fn media(protobuf: bool) -> String {
    if protobuf { "protobuf" } else { "JSON" }.to_owned()
}

fn show(value: Option<&Value>) -> String {
    value.map_or_else(|| "absent".to_owned(), Value::to_string)
}

/// The paths of what a request body sets: its leaves (array elements by index), where a
/// `null` (a merge patch's removal) or a directive (`$patch`, `$deleteFromPrimitiveList/…`)
/// ends the path at the member it changes. Type, identity and timestamps are compared
/// elsewhere or not at all.
fn written_leaves(value: &Value, path: &mut Vec<String>, out: &mut Vec<Vec<String>>) {
    match value {
        Value::Object(map) => {
            for (key, v) in map {
                if path.is_empty() && matches!(key.as_str(), "kind" | "apiVersion") {
                    continue;
                }
                if TIMESTAMP_KEYS.contains(&key.as_str())
                    || matches!(
                        key.as_str(),
                        "uid" | "resourceVersion" | "managedFields" | "generation"
                    )
                {
                    continue;
                }
                if let Some(member) = key.strip_prefix("$deleteFromPrimitiveList/") {
                    let mut leaf = path.clone();
                    leaf.push(member.to_owned());
                    out.push(leaf);
                    continue;
                }
                if key.starts_with('$') {
                    continue;
                }
                path.push(key.clone());
                written_leaves(v, path, out);
                path.pop();
            }
        }
        Value::Array(items) if items.iter().any(|i| i.get("$patch").is_some()) => {
            out.push(path.clone())
        }
        Value::Array(items) => {
            for (i, item) in items.iter().enumerate() {
                path.push(i.to_string());
                written_leaves(item, path, out);
                path.pop();
            }
        }
        _ if !path.is_empty() => out.push(path.clone()),
        _ => {}
    }
}

/// The value at `path` (array elements by index), `None` when absent or `null`.
fn at<'v>(value: &'v Value, path: &[String]) -> Option<&'v Value> {
    let mut here = value;
    for key in path {
        here = match (here, key.parse::<usize>()) {
            (Value::Array(items), Ok(i)) => items.get(i)?,
            _ => here.get(key.as_str())?,
        };
    }
    (!here.is_null()).then_some(here)
}

/// Which named allowance, if any, explains a finding: `(name, applies)`. Each name is an entry
/// of `kube_gc::sim::differences`.
type Allowance = (&'static str, fn(&Finding) -> bool);

const ALLOWANCES: &[Allowance] = &[
    ("fixed-catalogue", |f| {
        // kcm's informers list every resource discovery shows; the sim serves its catalogue.
        // Only a 404 for the resource itself, never for an object of a served one.
        let unserved = f.sim.starts_with("404 null")
            || f.sim == "404 \"the server could not find the requested resource\"";
        f.aspect == "code" && (f.real == "200" || f.real == "201") && unserved
    }),
    ("protobuf-only-for-tabled-kinds", |f| {
        let (api_version, kind) = &f.real_type;
        f.aspect == "media"
            && f.real == "protobuf"
            && f.sim == "JSON"
            && schema::for_kind(api_version, kind).is_none()
    }),
];

async fn replay_run(prefix: &str) -> (Tally, Vec<Finding>) {
    let run = exchange(prefix);
    let exchanges = run["exchanges"].as_array().expect("a run holds exchanges");
    let by_seq: BTreeMap<u64, &Value> = exchanges
        .iter()
        .filter_map(|e| e["seq"].as_u64().map(|s| (s, e)))
        .collect();
    let namespaces: BTreeSet<String> = exchanges
        .iter()
        .filter_map(|e| e["request"]["path"].as_str())
        .filter_map(|p| p.split("/namespaces/").nth(1))
        .filter_map(|rest| rest.split(['/', '?']).next())
        .map(str::to_owned)
        .collect();
    let names: Vec<&str> = namespaces.iter().map(String::as_str).collect();
    let server = start(SimConfig::default().with_namespaces(&names)).await;
    let mut replay = Replay {
        server,
        http: client(),
        mapping: Mapping::default(),
        findings: Vec::new(),
        namespaces,
        tally: Tally::default(),
    };
    // In the order the real server answered: requests that overlapped (the scene listing Pods
    // while the Job controller created one) took effect in that order, and every request a
    // controller sent depends on answers that came before it.
    let mut order: Vec<&Value> = exchanges.iter().collect();
    order.sort_by(|a, b| {
        let at = |e: &Value| {
            (
                e["t_response_s"].as_f64().unwrap_or(f64::MAX),
                e["seq"].as_u64(),
            )
        };
        at(a)
            .partial_cmp(&at(b))
            .unwrap_or(std::cmp::Ordering::Equal)
    });
    for exchange in order {
        replay.replay(exchange, &by_seq).await;
    }
    replay.server.shutdown().await;
    (replay.tally, replay.findings)
}

fn unexplained(findings: Vec<Finding>) -> (Vec<Finding>, BTreeMap<&'static str, usize>) {
    let mut allowed = BTreeMap::new();
    let mut left = Vec::new();
    for finding in findings {
        match ALLOWANCES.iter().find(|(_, applies)| applies(&finding)) {
            Some((name, _)) => *allowed.entry(*name).or_insert(0) += 1,
            None => left.push(finding),
        }
    }
    (left, allowed)
}

async fn check_run(prefix: &str) {
    let (tally, findings) = replay_run(prefix).await;
    let (left, allowed) = unexplained(findings);
    eprintln!("run {prefix}: {tally:?}; allowed differences: {allowed:?}");
    assert!(
        tally.protobuf_bodies > 0 && tally.protobuf_answers > 0 && tally.written_fields > 50,
        "run {prefix} compared too little: {tally:?}"
    );
    let listed: Vec<String> = left.iter().map(ToString::to_string).collect();
    assert!(
        left.is_empty(),
        "run {prefix}: {} answers differ from the real server's:\n{}",
        left.len(),
        listed.join("\n")
    );
}

#[tokio::test]
async fn kcm_ttl_and_garbage_collector_run_240_replays_as_on_the_real_server() {
    check_run("240-").await;
}

#[tokio::test]
async fn kcm_job_controller_run_288_replays_as_on_the_real_server() {
    check_run("288-").await;
}

#[test]
fn a_write_sets_its_leaves_and_directives_name_the_member_they_change() {
    let patch = serde_json::json!({
        "metadata": {"resourceVersion": "7", "finalizers": null,
            "ownerReferences": [{"$patch": "delete", "uid": "u"}],
            "$deleteFromPrimitiveList/finalizers": ["f"]},
        "spec": {"containers": [{"name": "c", "image": "i"}]},
        "status": {"startTime": "2026-01-01T00:00:00Z", "active": 1}
    });
    let mut leaves = Vec::new();
    written_leaves(&patch, &mut Vec::new(), &mut leaves);
    let mut joined: Vec<String> = leaves.iter().map(|l| l.join(".")).collect();
    joined.sort();
    assert_eq!(
        joined,
        [
            "metadata.finalizers",
            "metadata.finalizers",
            "metadata.ownerReferences",
            "spec.containers.0.image",
            "spec.containers.0.name",
            "status.active"
        ]
    );
    let answer = serde_json::json!({"spec": {"containers": [{"name": "c"}]}});
    let path: Vec<String> = ["spec", "containers", "0", "name"]
        .map(String::from)
        .to_vec();
    assert_eq!(at(&answer, &path), Some(&Value::from("c")));
}

#[test]
fn answers_walked_side_by_side_map_uids_versions_and_generated_names() {
    let real = serde_json::json!({"kind": "PodList", "items": [
        {"metadata": {"name": "p-abcde", "namespace": "n", "uid": "real-1", "resourceVersion": "10"}},
        {"metadata": {"name": "q", "namespace": "n", "uid": "real-2"}}]});
    let sim = serde_json::json!({"kind": "PodList", "items": [
        {"metadata": {"name": "q", "namespace": "n", "uid": "sim-2"}}]});
    let mut mapping = Mapping::default();
    mapping.learn(&real, &sim, false);
    assert_eq!(mapping.map_str("real-2"), "sim-2");
    assert_eq!(
        mapping.map_str("real-1"),
        "real-1",
        "an item the sim lacks maps nothing"
    );
    let created_real = serde_json::json!({"metadata": {"name": "p-abcde", "uid": "real-1"}});
    let created_sim = serde_json::json!({"metadata": {"name": "p-xyz12", "uid": "sim-1"}});
    mapping.learn(&created_real, &created_sim, false);
    assert_eq!(
        mapping.map_path("/api/v1/namespaces/n/pods/p-abcde?x=1"),
        "/api/v1/namespaces/n/pods/p-xyz12?x=1"
    );
}

#[test]
fn every_allowance_is_a_listed_difference() {
    for (name, _) in ALLOWANCES {
        assert!(
            differences::KNOWN.iter().any(|d| d.name == *name),
            "allowance {name} is not in the sim's known differences"
        );
    }
}
