//! Protobuf over HTTP: the simulated server negotiates `Accept` for LIST, GET, WATCH and error
//! `Status` bodies as a real kube-apiserver v1.28.7 does, each rule compared with its capture
//! (`fixtures/real-apiserver/exchanges/100`–`117`): the same status, the same `Content-Type`,
//! and a body that decodes (with `kube_gc::client::protobuf`) to the objects the server holds.

mod sim_support;

use bytes::Bytes;
use kube_gc::client::protobuf::list::{ListEvent, ListStream};
use kube_gc::client::protobuf::{schema, transcode, Envelope, Selection, WatchFrames};
use kube_gc::sim::{DeleteOptions, Gvr, Propagation, SimConfig, SimServer};
use serde_json::{json, Value};
use sim_support::*;

const KCM: &str = "application/vnd.kubernetes.protobuf,application/json";
const PROTOBUF: &str = "application/vnd.kubernetes.protobuf";
const META_LIST: &str = "application/vnd.kubernetes.protobuf;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1,application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1,application/json";
const META: &str = "application/vnd.kubernetes.protobuf;as=PartialObjectMetadata;g=meta.k8s.io;v=v1,application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1,application/json";
const JOBS: &str = "/apis/batch/v1/namespaces/capture/jobs";
const VCJOBS: &str = "/apis/batch.volcano.sh/v1alpha1/namespaces/capture/jobs";

// ---------------------------------------------------------------- helpers

/// Status, `Content-Type` and body of a GET.
async fn get(server: &SimServer, path: &str, accept: &str) -> (u16, String, Vec<u8>) {
    let response = client()
        .get(url(server, path))
        .header("accept", accept)
        .send()
        .await
        .expect("the request is answered");
    let code = response.status().as_u16();
    let content_type = header(&response, "content-type");
    let body = response.bytes().await.expect("a body").to_vec();
    (code, content_type, body)
}

fn header(response: &reqwest::Response, name: &str) -> String {
    response
        .headers()
        .get(name)
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default()
        .to_owned()
}

/// The captured status and `Content-Type` of exchange `prefix`.
fn captured(prefix: &str) -> (u16, String) {
    let response = &exchange(prefix)["response"];
    let code = response["status"].as_u64().expect("a status") as u16;
    let content_type = response["headers"]["content-type"]
        .as_str()
        .expect("a type");
    (code, content_type.to_owned())
}

/// A decoded protobuf list: its type, its `ListMeta` and its items as JSON.
struct List {
    api_version: String,
    kind: String,
    metadata: Value,
    items: Vec<Value>,
}

fn decode_list(body: &[u8]) -> List {
    let mut stream = ListStream::new();
    stream.feed(Bytes::copy_from_slice(body));
    let mut list = List {
        api_version: String::new(),
        kind: String::new(),
        metadata: Value::Null,
        items: Vec::new(),
    };
    while let Some(event) = stream.next_event().expect("a protobuf list") {
        match event {
            ListEvent::Type { api_version, kind } => {
                (list.api_version, list.kind) = (api_version, kind)
            }
            ListEvent::Metadata(meta) => list.metadata = serde_json::to_value(meta).expect("JSON"),
            ListEvent::Item(bytes) => {
                let item_kind = schema::list_item_kind(&list.kind).expect("a list kind");
                let table = schema::for_kind(&list.api_version, item_kind).expect("a table");
                let text = transcode::to_json(table, &bytes, None, &Selection::all()).expect("ok");
                list.items
                    .push(serde_json::from_slice(&text).expect("JSON"));
            }
        }
    }
    stream.finish().expect("the list ends whole");
    list
}

/// A whole protobuf body: its type and its object as JSON.
fn decode_object(body: &[u8]) -> (String, String, Value) {
    let envelope = Envelope::decode(body).expect("an envelope");
    let text = transcode::body_to_json(body, &Selection::all()).expect("transcodes");
    let object = serde_json::from_slice(&text).expect("JSON");
    (
        envelope.api_version.to_owned(),
        envelope.kind.to_owned(),
        object,
    )
}

/// Every frame of a protobuf watch until the server ends it: type, envelope type, object.
async fn frames(response: reqwest::Response) -> Vec<(String, String, Value)> {
    let mut response = response;
    let mut decoder = WatchFrames::new();
    let mut out = Vec::new();
    while let Some(chunk) = response.chunk().await.expect("the stream reads") {
        decoder.feed(chunk);
        while let Some(frame) = decoder.next_frame().expect("whole frames") {
            let envelope = frame.envelope().expect("an envelope");
            let kind = format!("{} {}", envelope.api_version, envelope.kind);
            let text = frame.to_json(&Selection::all()).expect("transcodes");
            let object = serde_json::from_slice(&text).expect("JSON");
            out.push((frame.event_type.clone(), kind, object));
        }
    }
    decoder.finish().expect("the stream ends between frames");
    out
}

fn is_empty(value: &Value) -> bool {
    match value {
        Value::Null => true,
        Value::Bool(b) => !b,
        Value::Object(m) => m.values().all(is_empty),
        Value::Array(a) => a.is_empty(),
        Value::String(s) => s.is_empty(),
        Value::Number(n) => n.as_f64() == Some(0.0),
    }
}

/// Whether `pb` (decoded from protobuf) says what `json` (the stored object) says: every JSON
/// member is in `pb` with the same value unless it is empty or a type member (protobuf objects
/// carry no type), and `pb` has nothing more than empty plain values (Go writes those).
fn agree(pb: &Value, json: &Value, path: &str, problems: &mut Vec<String>) {
    match (pb, json) {
        (Value::Object(p), Value::Object(j)) => {
            for (key, value) in j {
                let at = format!("{path}.{key}");
                match p.get(key) {
                    Some(pv) => agree(pv, value, &at, problems),
                    None if is_empty(value) || (path.is_empty() && is_type(key)) => {}
                    None => problems.push(format!("{at}: missing, JSON has {value}")),
                }
            }
            for (key, value) in p.iter().filter(|(k, _)| !j.contains_key(*k)) {
                if !is_empty(value) {
                    problems.push(format!("{path}.{key}: only in protobuf: {value}"));
                }
            }
        }
        (Value::Array(p), Value::Array(j)) if p.len() == j.len() => {
            for (pv, jv) in p.iter().zip(j) {
                agree(pv, jv, path, problems);
            }
        }
        (p, j) if p == j => {}
        (p, j) => problems.push(format!("{path}: protobuf {p} ≠ JSON {j}")),
    }
}

fn is_type(key: &str) -> bool {
    key == "kind" || key == "apiVersion"
}

fn assert_agree(pb: &Value, json: &Value) {
    let mut problems = Vec::new();
    agree(pb, json, "", &mut problems);
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

fn pods() -> Gvr {
    Gvr::new("", "v1", "pods")
}

fn vcjobs() -> Gvr {
    Gvr::new("batch.volcano.sh", "v1alpha1", "jobs")
}

/// Jobs like exchange 100's: one with an ownerReference, an annotation, a TTL and a finished
/// status; one with a zero TTL; one with a finalizer.
fn create_jobs(server: &SimServer) {
    let mut done = job("pb-done");
    done["metadata"]["annotations"] = json!({"note": "done"});
    done["metadata"]["ownerReferences"] = json!([{"apiVersion": "v1", "kind": "ConfigMap",
        "name": "pb-owner", "uid": "6e2e3ae2-eff3-46c6-8320-f74153493c6e"}]);
    done["spec"]["ttlSecondsAfterFinished"] = json!(100);
    done["status"] = json!({"succeeded": 1, "conditions": [{"type": "Complete",
        "status": "True", "lastProbeTime": "2026-11-26T19:31:02Z",
        "lastTransitionTime": "2026-11-26T19:31:02Z"}]});
    let mut running = job("pb-running");
    running["spec"]["ttlSecondsAfterFinished"] = json!(0);
    let mut held = job("pb-deleting");
    held["metadata"]["finalizers"] = json!(["capture.kube-gc.io/hold"]);
    for object in [done, running, held] {
        server.create(&jobs(), object).expect("created");
    }
}

fn create_vcjob(server: &SimServer) {
    let vcjob = json!({"apiVersion": "batch.volcano.sh/v1alpha1", "kind": "Job",
        "metadata": {"name": "pb-vc", "namespace": "capture", "labels": {"app": "capture"}},
        "spec": {"minAvailable": 1, "queue": "default", "schedulerName": "volcano"}});
    server.create(&vcjobs(), vcjob).expect("created");
}

fn stored(server: &SimServer, gvr: &Gvr) -> Vec<Value> {
    server.list(gvr, Some("capture")).expect("listed")
}

// ---------------------------------------------------------------- lists and objects

#[tokio::test]
async fn a_job_list_is_protobuf_like_exchange_100() {
    let server = start(SimConfig::default()).await;
    create_jobs(&server);
    let (code, content_type, body) = get(&server, JOBS, KCM).await;
    assert_eq!((code, content_type), captured("100-"));
    let list = decode_list(&body);
    assert_eq!(
        (list.api_version.as_str(), list.kind.as_str()),
        ("batch/v1", "JobList")
    );
    assert_eq!(
        list.metadata["resourceVersion"],
        server.resource_version().to_string()
    );
    let jobs = stored(&server, &jobs());
    assert_eq!(list.items.len(), 3);
    for (pb, json) in list.items.iter().zip(&jobs) {
        assert_agree(pb, json);
    }
    assert_eq!(list.items[1]["spec"]["ttlSecondsAfterFinished"], 100);
    assert_eq!(list.items[2]["spec"]["ttlSecondsAfterFinished"], 0);
    let entry = server.journal().entries().pop().expect("recorded");
    assert_eq!(entry.header("accept"), Some(KCM));
    assert_eq!(entry.content_type.as_deref(), Some(PROTOBUF));
}

#[tokio::test]
async fn the_same_list_asked_in_json_is_answered_as_before_like_exchange_101() {
    let server = start(SimConfig::default()).await;
    create_jobs(&server);
    for accept in [
        "application/json",
        "*/*",
        "application/json,application/vnd.kubernetes.protobuf",
    ] {
        let (code, content_type, body) = get(&server, JOBS, accept).await;
        assert_eq!((code, content_type), captured("101-"), "{accept}");
        let list: Value = serde_json::from_slice(&body).expect("JSON");
        assert_eq!(list["kind"], "JobList");
        let mut expected = stored(&server, &jobs());
        // Built-in lists leave out each item's type, as the real server's do.
        for item in &mut expected {
            item.as_object_mut()
                .map(|o| (o.remove("kind"), o.remove("apiVersion")));
        }
        assert_eq!(list["items"], json!(expected), "{accept}");
    }
    let entry = server.journal().entries().pop().expect("recorded");
    assert_eq!(entry.content_type.as_deref(), Some("application/json"));
}

#[tokio::test]
async fn a_page_carries_continue_and_the_remaining_count_like_exchange_102() {
    let server = start(SimConfig::default()).await;
    create_jobs(&server);
    let (code, content_type, body) = get(&server, &format!("{JOBS}?limit=2"), KCM).await;
    assert_eq!((code, content_type), captured("102-"));
    let list = decode_list(&body);
    assert_eq!(list.items.len(), 2);
    assert!(list.metadata["continue"]
        .as_str()
        .is_some_and(|c| !c.is_empty()));
    assert_eq!(list.metadata["remainingItemCount"], 1);
    let captured = decode_list(&captured_bytes("102-"));
    assert_eq!(captured.metadata["remainingItemCount"], 1);
}

#[tokio::test]
async fn one_job_a_namespace_pods_and_config_maps_like_exchanges_112_to_116() {
    let server = start(SimConfig::default()).await;
    create_jobs(&server);
    let (code, content_type, body) = get(&server, &format!("{JOBS}/pb-done"), KCM).await;
    assert_eq!((code, content_type), captured("112-"));
    let (api_version, kind, job) = decode_object(&body);
    assert_eq!((api_version.as_str(), kind.as_str()), ("batch/v1", "Job"));
    let stored_job = server
        .get(&jobs(), Some("capture"), "pb-done")
        .expect("stored");
    assert_agree(&job, &stored_job);

    let (code, content_type, body) = get(&server, "/api/v1/namespaces/capture", KCM).await;
    assert_eq!((code, content_type), captured("115-"));
    let (api_version, kind, namespace) = decode_object(&body);
    assert_eq!((api_version.as_str(), kind.as_str()), ("v1", "Namespace"));
    let stored_namespace = server
        .get(&Gvr::new("", "v1", "namespaces"), None, "capture")
        .expect("stored");
    assert_agree(&namespace, &stored_namespace);

    let pod = json!({"apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": "pb-pod", "namespace": "capture", "labels": {"app": "capture"}},
        "spec": {"restartPolicy": "Never", "containers": [{"name": "c", "image": "busybox:1.36",
            "command": ["true"]}]},
        "status": {"phase": "Succeeded"}});
    server.create(&pods(), pod).expect("created");
    let config_map = json!({"apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": "pb-owner", "namespace": "capture"}, "data": {"k": "v"}});
    server.create(&configmaps(), config_map).expect("created");
    for (path, gvr, prefix, list_kind) in [
        ("/api/v1/namespaces/capture/pods", pods(), "113-", "PodList"),
        (
            "/api/v1/namespaces/capture/configmaps",
            configmaps(),
            "116-",
            "ConfigMapList",
        ),
    ] {
        let (code, content_type, body) = get(&server, path, KCM).await;
        assert_eq!((code, content_type), captured(prefix));
        let list = decode_list(&body);
        assert_eq!(list.kind, list_kind);
        let expected = stored(&server, &gvr);
        assert_eq!(list.items.len(), expected.len());
        for (pb, json) in list.items.iter().zip(&expected) {
            assert_agree(pb, json);
        }
    }
}

#[tokio::test]
async fn metadata_lists_are_protobuf_for_every_resource_like_exchanges_105_and_107() {
    let server = start(SimConfig::default()).await;
    create_jobs(&server);
    create_vcjob(&server);
    for (path, gvr, prefix) in [(JOBS, jobs(), "105-"), (VCJOBS, vcjobs(), "107-")] {
        let (code, content_type, body) = get(&server, path, META_LIST).await;
        assert_eq!((code, content_type), captured(prefix));
        let list = decode_list(&body);
        assert_eq!(
            (list.api_version.as_str(), list.kind.as_str()),
            ("meta.k8s.io/v1", "PartialObjectMetadataList")
        );
        let expected = stored(&server, &gvr);
        assert_eq!(list.items.len(), expected.len());
        for (pb, json) in list.items.iter().zip(&expected) {
            assert_eq!(pb.as_object().map(|o| o.len()), Some(1), "metadata only");
            assert_agree(&pb["metadata"], &json["metadata"]);
        }
    }
    // A metadata-only GET too, with the watch's and GET's `as=PartialObjectMetadata`.
    let (code, content_type, body) = get(&server, &format!("{VCJOBS}/pb-vc"), META).await;
    assert_eq!((code, content_type.as_str()), (200, PROTOBUF));
    let (api_version, kind, object) = decode_object(&body);
    assert_eq!(
        (api_version.as_str(), kind.as_str()),
        ("meta.k8s.io/v1", "PartialObjectMetadata")
    );
    assert_eq!(object["metadata"]["name"], "pb-vc");
}

#[tokio::test]
async fn a_custom_resource_is_406_in_protobuf_alone_and_json_otherwise_like_109_and_110() {
    let server = start(SimConfig::default()).await;
    create_vcjob(&server);
    let (code, content_type, body) = get(&server, VCJOBS, PROTOBUF).await;
    assert_eq!((code, content_type), captured("109-"));
    // The Status names no object: the server's bytes exactly.
    assert_eq!(body, captured_bytes("109-"));

    let (code, content_type, body) = get(&server, VCJOBS, KCM).await;
    assert_eq!((code, content_type), captured("110-"));
    let list: Value = serde_json::from_slice(&body).expect("JSON");
    let real = captured_body("110-");
    assert_eq!(list["kind"], real["kind"]);
    assert_eq!(list["apiVersion"], real["apiVersion"]);
    assert_eq!(list["items"][0]["metadata"]["name"], "pb-vc");
    assert_eq!(list["items"][0]["kind"], real["items"][0]["kind"]);
}

#[tokio::test]
async fn a_missing_job_is_a_protobuf_status_like_exchange_111() {
    let server = start(SimConfig::default()).await;
    let (code, content_type, body) = get(&server, &format!("{JOBS}/pb-missing"), KCM).await;
    assert_eq!((code, content_type), captured("111-"));
    assert_eq!(body, captured_bytes("111-"));
    // Asked in JSON (or metadata first: errors skip `as=`), the JSON Status as before.
    for accept in ["application/json", META] {
        let (code, content_type, body) = get(&server, &format!("{JOBS}/pb-missing"), accept).await;
        assert_eq!((code, content_type.as_str()), (404, "application/json"));
        let status: Value = serde_json::from_slice(&body).expect("JSON");
        assert_eq!(status["reason"], "NotFound");
    }
    // A custom resource missing is 404 too, not 406: the server fails to encode only objects.
    let (code, content_type, _) = get(&server, &format!("{VCJOBS}/nope"), PROTOBUF).await;
    assert_eq!((code, content_type.as_str()), (404, PROTOBUF));
}

#[tokio::test]
async fn a_built_in_kind_without_tables_answers_json_or_406() {
    let server = start(SimConfig::default()).await;
    let lease = json!({"apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
        "metadata": {"name": "l", "namespace": "capture"}, "spec": {"holderIdentity": "a"}});
    let leases = Gvr::new("coordination.k8s.io", "v1", "leases");
    server.create(&leases, lease).expect("created");
    let path = "/apis/coordination.k8s.io/v1/namespaces/capture/leases";
    let (code, content_type, body) = get(&server, path, KCM).await;
    assert_eq!((code, content_type.as_str()), (200, "application/json"));
    let list: Value = serde_json::from_slice(&body).expect("JSON");
    assert_eq!(list["items"][0]["spec"]["holderIdentity"], "a");
    let (code, content_type, _) = get(&server, path, PROTOBUF).await;
    assert_eq!((code, content_type.as_str()), (406, PROTOBUF));
    // Its metadata is protobuf, as for every resource.
    let (code, content_type, _) = get(&server, path, META_LIST).await;
    assert_eq!((code, content_type.as_str()), (200, PROTOBUF));
}

// ---------------------------------------------------------------- watches

fn create_touch_delete(server: &SimServer, name: &str) {
    let created = create_job(server, name);
    let mut touched = created.clone();
    touched["metadata"]["labels"]["touched"] = json!("yes");
    server.update(&jobs(), touched).expect("updated");
    let background = DeleteOptions::propagation(Propagation::Background);
    server
        .delete(&jobs(), Some("capture"), name, &background)
        .expect("deleted");
}

async fn watch(server: &SimServer, path: &str, query: &str, accept: &str) -> reqwest::Response {
    let response = client()
        .get(url(server, &format!("{path}?{query}")))
        .header("accept", accept)
        .send()
        .await
        .expect("the watch is answered");
    assert_eq!(response.status().as_u16(), 200);
    response
}

#[tokio::test(start_paused = true)]
async fn a_protobuf_watch_sends_frames_like_exchange_103() {
    let server = start(SimConfig::default()).await;
    let from = server.resource_version();
    create_touch_delete(&server, "pb-watched");
    let query = format!("watch=1&resourceVersion={from}&allowWatchBookmarks=true&timeoutSeconds=4");
    let response = watch(&server, JOBS, &query, KCM).await;
    let (_, real_type) = captured("103-");
    assert_eq!(header(&response, "content-type"), real_type);
    let events = frames(response).await;
    let last = server.resource_version().to_string();
    let seen: Vec<(&str, &str, &str)> = events
        .iter()
        .map(|(t, kind, o)| {
            (
                t.as_str(),
                kind.as_str(),
                o["metadata"]["name"].as_str().unwrap_or(""),
            )
        })
        .collect();
    assert_eq!(
        seen,
        [
            ("ADDED", "batch/v1 Job", "pb-watched"),
            ("MODIFIED", "batch/v1 Job", "pb-watched"),
            ("DELETED", "batch/v1 Job", "pb-watched"),
            ("BOOKMARK", "batch/v1 Job", ""),
        ]
    );
    assert_eq!(events[1].2["metadata"]["labels"]["touched"], "yes");
    assert_eq!(events[2].2["metadata"]["resourceVersion"], last.as_str());
    assert_eq!(events[3].2["metadata"]["resourceVersion"], last.as_str());
    // The same events asked in JSON: lines, as before.
    let response = watch(&server, JOBS, &query, "application/json").await;
    assert_eq!(header(&response, "content-type"), "application/json");
    let lines = Lines::new(response).rest().await;
    assert_eq!(lines.len(), 4);
    assert_agree(&events[1].2, &lines[1]["object"]);
}

#[tokio::test(start_paused = true)]
async fn a_pods_graceful_deletion_is_two_frames_with_their_own_versions() {
    let server = start(SimConfig::default()).await;
    let pod = json!({"apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": "p", "namespace": "capture"},
        "spec": {"containers": [{"name": "c", "image": "busybox:1.36"}]}});
    server.create(&pods(), pod).expect("created");
    let from = server.resource_version();
    server
        .delete(&pods(), Some("capture"), "p", &DeleteOptions::default())
        .expect("deleted");
    let query = format!("watch=1&resourceVersion={from}&timeoutSeconds=2");
    for accept in [KCM, META] {
        let events =
            frames(watch(&server, "/api/v1/namespaces/capture/pods", &query, accept).await).await;
        let seen: Vec<(&str, String, bool)> = events
            .iter()
            .map(|(t, _, o)| {
                let meta = &o["metadata"];
                let rv = meta["resourceVersion"].as_str().unwrap_or("").to_owned();
                (t.as_str(), rv, meta["deletionTimestamp"].is_string())
            })
            .collect();
        assert_eq!(
            seen,
            [
                ("MODIFIED", (from + 1).to_string(), true),
                ("DELETED", (from + 2).to_string(), true),
            ],
            "{accept}"
        );
    }
}

#[tokio::test(start_paused = true)]
async fn metadata_watches_are_protobuf_for_every_resource_like_exchanges_106_and_108() {
    let server = start(SimConfig::default()).await;
    create_vcjob(&server);
    let from = server.resource_version();
    create_touch_delete(&server, "pb-meta");
    let mut vcjob = server
        .get(&vcjobs(), Some("capture"), "pb-vc")
        .expect("stored");
    vcjob["metadata"]["labels"]["touched"] = json!("yes");
    server.update(&vcjobs(), vcjob).expect("updated");
    let query = format!("watch=1&resourceVersion={from}&allowWatchBookmarks=true&timeoutSeconds=3");
    for (path, prefix, expected) in [
        (
            JOBS,
            "106-",
            vec!["ADDED", "MODIFIED", "DELETED", "BOOKMARK"],
        ),
        (VCJOBS, "108-", vec!["MODIFIED", "BOOKMARK"]),
    ] {
        let response = watch(&server, path, &query, META).await;
        assert_eq!(header(&response, "content-type"), captured(prefix).1);
        let events = frames(response).await;
        let types: Vec<&str> = events.iter().map(|(t, _, _)| t.as_str()).collect();
        assert_eq!(types, expected, "{path}");
        for (_, kind, object) in &events {
            assert_eq!(kind, "meta.k8s.io/v1 PartialObjectMetadata");
            let mut members: Vec<&String> = object.as_object().expect("an object").keys().collect();
            members.sort();
            assert_eq!(members, ["apiVersion", "kind", "metadata"], "metadata only");
        }
    }
}

#[tokio::test]
async fn a_watch_from_too_old_a_version_gets_one_error_frame_like_exchange_104() {
    let server = start(SimConfig::default()).await;
    let old = server.resource_version();
    create_job(&server, "a");
    // After a restart the watch cache starts at the current revision (exchanges 55, 59).
    server.restart();
    let query = format!("watch=1&resourceVersion={old}&allowWatchBookmarks=true&timeoutSeconds=10");
    let response = watch(&server, JOBS, &query, KCM).await;
    assert_eq!(header(&response, "content-type"), captured("104-").1);
    let events = frames(response).await;
    assert_eq!(events.len(), 1, "one frame, then the end");
    let (event_type, kind, status) = &events[0];
    assert_eq!((event_type.as_str(), kind.as_str()), ("ERROR", "v1 Status"));
    // The captured frame's Status, with this server's versions in its message.
    let mut real = WatchFrames::new();
    real.feed(Bytes::from(captured_chunks("104-").concat()));
    let frame = real.next_frame().expect("decodes").expect("a frame");
    let mut expected: Value =
        serde_json::from_slice(&frame.to_json(&Selection::all()).expect("ok")).expect("JSON");
    expected["message"] = json!(format!(
        "too old resource version: {old} ({})",
        server.resource_version()
    ));
    assert_eq!(status, &expected);
    assert_eq!(status["code"], 410);
}

#[tokio::test]
async fn an_object_the_tables_cannot_write_is_json_when_acceptable_else_500() {
    let server = start(SimConfig::default()).await;
    // The sim does not validate specs; a real server would have refused this Job.
    let mut odd = job("pb-odd");
    odd["spec"]["completions"] = json!("three");
    server.create(&jobs(), odd).expect("created");
    let path = format!("{JOBS}/pb-odd");
    let (code, content_type, body) = get(&server, &path, KCM).await;
    assert_eq!((code, content_type.as_str()), (200, "application/json"));
    let answered: Value = serde_json::from_slice(&body).expect("JSON");
    assert_eq!(answered["spec"]["completions"], "three");
    let (code, content_type, body) = get(&server, &path, PROTOBUF).await;
    assert_eq!((code, content_type.as_str()), (500, PROTOBUF));
    let (_, kind, status) = decode_object(&body);
    assert_eq!(kind, "Status");
    assert_eq!(status["reason"], "InternalError");
    let message = status["message"].as_str().unwrap_or_default();
    assert!(message.contains("spec.completions"), "{message}");
    // A watch meeting it ends, as the real server's does when an event fails to encode.
    let response = watch(&server, JOBS, "watch=1&timeoutSeconds=30", KCM).await;
    let events = tokio::time::timeout(std::time::Duration::from_secs(10), frames(response))
        .await
        .expect("the watch ends at the object it cannot write");
    assert!(events.is_empty(), "{events:?}");
}

/// A streaming list (WatchList) asked as client-go asks a built-in type: the v1.28 server, its
/// `WatchList` gate off by default, refuses it before any stream with a 422 whose `Status` is a
/// protobuf body, not a watch frame (exchange 118); asked in JSON, the JSON `Status` (119).
#[tokio::test]
async fn a_refused_streaming_list_is_a_protobuf_status_like_exchange_118() {
    let server = start(SimConfig::default()).await;
    let path = format!(
        "{JOBS}?allowWatchBookmarks=true&resourceVersionMatch=NotOlderThan&sendInitialEvents=true&timeoutSeconds=4&watch=true"
    );
    let (code, content_type, body) = get(&server, &path, KCM).await;
    assert_eq!((code, content_type), captured("118-"));
    assert_eq!(body, captured_bytes("118-"));
    let (code, content_type, body) = get(&server, &path, "application/json").await;
    assert_eq!((code, content_type), captured("119-"));
    let body: Value = serde_json::from_slice(&body).expect("a JSON Status");
    assert_eq!(body, exchange("119-")["response"]["body"]);
}
