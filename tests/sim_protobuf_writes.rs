//! Protobuf request bodies over HTTP: the bytes a client sent the real server (exchanges
//! 256–270) sent to the sim, and its answers compared with the real ones — the code, the media
//! type, and the `Status` (read from protobuf as the capture script read the real one) or the
//! object written. Uids and resourceVersions in a body are the sim's own objects' (the body is
//! decoded, given them, and encoded again).

mod sim_support;

use kube_gc::sim::{Gvr, SimConfig, SimServer};
use kube_gc_protobuf::{encode, transcode, Selection, MEDIA_TYPE};
use serde_json::{json, Value};
use sim_support::*;

const NAMESPACE: &str = "pb-writes-capture";
const CONFIGMAPS: &str = "/api/v1/namespaces/pb-writes-capture/configmaps";
const PROTOBUF_ACCEPT: &str = "application/vnd.kubernetes.protobuf, */*";

/// Code, whether the answer was protobuf, and its body as JSON.
async fn send_bytes(
    server: &SimServer,
    method: reqwest::Method,
    path: &str,
    accept: &str,
    body: Vec<u8>,
) -> (u16, bool, Value) {
    let response = client()
        .request(method, url(server, path))
        .header("accept", accept)
        .header("content-type", MEDIA_TYPE)
        .body(body)
        .send()
        .await
        .expect("the sim answers");
    let code = response.status().as_u16();
    let protobuf = response
        .headers()
        .get("content-type")
        .is_some_and(|v| v.as_bytes().starts_with(MEDIA_TYPE.as_bytes()));
    let bytes = response.bytes().await.unwrap_or_default();
    let body = if protobuf {
        let text = transcode::body_to_json(&bytes, &Selection::all()).expect("a protobuf body");
        serde_json::from_slice(&text).expect("JSON text")
    } else {
        serde_json::from_slice(&bytes).unwrap_or(Value::Null)
    };
    (code, protobuf, body)
}

/// The captured request's bytes.
fn sent(prefix: &str) -> Vec<u8> {
    kube_gc_fixtures::request_bytes(prefix)
}

/// The captured body decoded, changed by `edit`, and encoded again under its own type.
fn sent_with(prefix: &str, edit: impl FnOnce(&mut Value)) -> Vec<u8> {
    let bytes = sent(prefix);
    let envelope = kube_gc_protobuf::Envelope::decode(&bytes).expect("an envelope");
    let message = kube_gc_protobuf::schema::for_kind(envelope.api_version, envelope.kind)
        .expect("a table for the captured body");
    let text = transcode::to_json(message, envelope.raw, None, &Selection::all()).expect("JSON");
    let mut value: Value = serde_json::from_slice(&text).expect("JSON text");
    edit(&mut value);
    encode::object_as(envelope.api_version, envelope.kind, &value).expect("encodes")
}

/// The real answer's `Status`, as the capture script read it from protobuf.
fn real_status(prefix: &str) -> (u16, String, String) {
    let summary = &exchange(prefix)["response"]["status_summary"];
    (
        exchange(prefix)["response"]["status"]
            .as_u64()
            .unwrap_or_default() as u16,
        summary["reason"].as_str().unwrap_or_default().to_owned(),
        summary["message"].as_str().unwrap_or_default().to_owned(),
    )
}

fn status_of(code: u16, body: &Value) -> (u16, String, String) {
    (
        code,
        body["reason"].as_str().unwrap_or_default().to_owned(),
        body["message"].as_str().unwrap_or_default().to_owned(),
    )
}

async fn server_with_target() -> (SimServer, String) {
    let server = start(SimConfig::default().with_namespaces(&[NAMESPACE])).await;
    let target = server
        .create(
            &configmaps(),
            json!({"metadata": {"name": "pb-target", "namespace": NAMESPACE}, "data": {"a": "1"}}),
        )
        .expect("created");
    let uid = target["metadata"]["uid"]
        .as_str()
        .unwrap_or_default()
        .to_owned();
    (server, uid)
}

#[tokio::test]
async fn undecodable_bodies_are_refused_as_exchanges_256_to_262() {
    let (server, _) = server_with_target().await;
    let target = format!("{CONFIGMAPS}/pb-target");
    let (code, protobuf, body) = send_bytes(
        &server,
        reqwest::Method::DELETE,
        &target,
        PROTOBUF_ACCEPT,
        sent("256-"),
    )
    .await;
    assert!(protobuf, "the Status in protobuf, as asked");
    assert_eq!(status_of(code, &body), real_status("256-"));
    assert!(
        server
            .get(&configmaps(), Some(NAMESPACE), "pb-target")
            .is_ok(),
        "nothing deleted"
    );
    for prefix in ["257-", "259-", "260-", "261-", "262-"] {
        let (code, protobuf, body) = send_bytes(
            &server,
            reqwest::Method::POST,
            CONFIGMAPS,
            PROTOBUF_ACCEPT,
            sent(prefix),
        )
        .await;
        assert!(protobuf, "{prefix}");
        assert_eq!(status_of(code, &body), real_status(prefix), "{prefix}");
    }
    let (code, protobuf, body) = send_bytes(
        &server,
        reqwest::Method::PATCH,
        &target,
        PROTOBUF_ACCEPT,
        sent("258-"),
    )
    .await;
    assert!(protobuf);
    assert_eq!(status_of(code, &body), real_status("258-"));
    server.shutdown().await;
}

#[tokio::test]
async fn protobuf_creates_answer_as_asked_as_exchanges_263_and_264() {
    let (server, _) = server_with_target().await;
    let (code, protobuf, created) = send_bytes(
        &server,
        reqwest::Method::POST,
        CONFIGMAPS,
        PROTOBUF_ACCEPT,
        sent("263-"),
    )
    .await;
    assert_eq!((code, protobuf), (201, true));
    assert_eq!(created["kind"], "ConfigMap");
    assert_eq!(created["metadata"]["name"], "pb-created");
    assert_eq!(
        created["metadata"]["labels"],
        json!({"made-by": "protobuf"})
    );
    assert_eq!(created["data"], json!({"a": "1"}));
    let (code, protobuf, created) = send_bytes(
        &server,
        reqwest::Method::POST,
        CONFIGMAPS,
        "application/json",
        sent("264-"),
    )
    .await;
    let real = captured_body("264-");
    assert_eq!((code, protobuf), (201, false));
    assert_eq!(created["metadata"]["name"], real["metadata"]["name"]);
    assert_eq!(created["data"], real["data"]);
    server.shutdown().await;
}

#[tokio::test]
async fn protobuf_delete_options_as_exchanges_265_and_266() {
    let (server, uid) = server_with_target().await;
    let target = format!("{CONFIGMAPS}/pb-target");
    let (code, protobuf, body) = send_bytes(
        &server,
        reqwest::Method::DELETE,
        &target,
        PROTOBUF_ACCEPT,
        sent("265-"),
    )
    .await;
    assert!(protobuf);
    let (real_code, reason, message) = real_status("265-");
    let real_uid = "3f97c776-b5b4-4518-9027-07e6a2dc9769";
    assert_eq!(
        status_of(code, &body),
        (real_code, reason, message.replace(real_uid, &uid))
    );
    let right = sent_with("266-", |options| {
        options["preconditions"]["uid"] = Value::from(uid.as_str())
    });
    let (code, protobuf, body) = send_bytes(
        &server,
        reqwest::Method::DELETE,
        &target,
        PROTOBUF_ACCEPT,
        right,
    )
    .await;
    assert_eq!((code, protobuf), (200, true));
    assert_eq!(body["status"], "Success");
    assert_eq!(body["details"]["name"], "pb-target");
    assert_eq!(body["details"]["uid"], Value::from(uid.as_str()));
    assert!(server
        .get(&configmaps(), Some(NAMESPACE), "pb-target")
        .is_err());
    server.shutdown().await;
}

#[tokio::test]
async fn a_protobuf_status_update_as_exchanges_267_and_268() {
    let server = start(SimConfig::default().with_namespaces(&[NAMESPACE])).await;
    let mut job = job("pb-job");
    job["metadata"]["namespace"] = Value::from(NAMESPACE);
    let created = server.create(&jobs(), job).expect("created");
    let path = format!("/apis/batch/v1/namespaces/{NAMESPACE}/jobs/pb-job/status");
    let ours = |rv: &str| {
        let uid = created["metadata"]["uid"].clone();
        let rv = rv.to_owned();
        move |job: &mut Value| {
            job["metadata"]["uid"] = uid;
            job["metadata"]["resourceVersion"] = Value::from(rv);
        }
    };
    let stale = sent_with("267-", ours("1"));
    let (code, protobuf, body) =
        send_bytes(&server, reqwest::Method::PUT, &path, PROTOBUF_ACCEPT, stale).await;
    assert!(protobuf);
    assert_eq!(status_of(code, &body), real_status("267-"));
    let current = created["metadata"]["resourceVersion"]
        .as_str()
        .unwrap_or_default()
        .to_owned();
    let fresh = sent_with("268-", ours(&current));
    let (code, protobuf, updated) =
        send_bytes(&server, reqwest::Method::PUT, &path, PROTOBUF_ACCEPT, fresh).await;
    assert_eq!((code, protobuf), (200, true));
    let real = transcode::body_to_json(&captured_bytes("268-"), &Selection::all())
        .map(|t| serde_json::from_slice::<Value>(&t).expect("JSON"))
        .expect("268's answer");
    assert_eq!(updated["status"]["succeeded"], real["status"]["succeeded"]);
    assert_eq!(
        updated["status"]["conditions"][0]["type"],
        real["status"]["conditions"][0]["type"]
    );
    assert_eq!(
        updated["status"]["completionTime"],
        real["status"]["completionTime"]
    );
    server.shutdown().await;
}

#[tokio::test]
async fn custom_resources_take_protobuf_delete_options_but_not_protobuf_objects_269_270() {
    let server = start(SimConfig::default().with_namespaces(&[NAMESPACE])).await;
    let vcjobs = Gvr::new("batch.volcano.sh", "v1alpha1", "jobs");
    let created = server
        .create(
            &vcjobs,
            json!({"apiVersion": "batch.volcano.sh/v1alpha1", "kind": "Job",
                "metadata": {"name": "pb-vc", "namespace": NAMESPACE}, "spec": {}}),
        )
        .expect("created");
    let uid = created["metadata"]["uid"].clone();
    let options = sent_with("269-", |o| o["preconditions"]["uid"] = uid.clone());
    let path = format!("/apis/batch.volcano.sh/v1alpha1/namespaces/{NAMESPACE}/jobs");
    let (code, protobuf, body) = send_bytes(
        &server,
        reqwest::Method::DELETE,
        &format!("{path}/pb-vc"),
        PROTOBUF_ACCEPT,
        options,
    )
    .await;
    let real = captured_body("269-");
    assert_eq!(
        (code, protobuf),
        (200, false),
        "a JSON Status whatever was accepted"
    );
    assert_eq!(body["status"], real["status"]);
    assert_eq!(body["details"]["kind"], real["details"]["kind"]);
    // 270: the real server panics and closes the connection; the sim says why it cannot.
    let (code, _, body) = send_bytes(
        &server,
        reqwest::Method::POST,
        &path,
        PROTOBUF_ACCEPT,
        sent("270-"),
    )
    .await;
    assert_eq!(code, 415);
    assert_eq!(body["reason"], "UnsupportedMediaType");
    server.shutdown().await;
}
