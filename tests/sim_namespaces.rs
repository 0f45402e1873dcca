//! A namespace's lifecycle over HTTP, replaying the requests of exchanges 137–164 (a real
//! v1.28.7 server without kube-controller-manager) and comparing the simulated server's answers
//! with the real ones: DELETE and the `Terminating` phase, what a namespace being deleted
//! refuses and serves, `/status`, `/finalize`, `deletecollection`, and what a finalize leaves
//! behind.

mod sim_support;

use kube_gc::sim::{Gvr, SimConfig, SimServer};
use serde_json::{json, Value};
use sim_support::*;

const NSP: &str = "/api/v1/namespaces";
const META_LIST: &str =
    "application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1,application/json";

/// A body without what differs from run to run (uids, versions, times) or what the simulated
/// server does not write (`managedFields`).
fn comparable(value: &Value) -> Value {
    let mut value = value.clone();
    strip_managed_fields(&mut value);
    redact(
        &mut value,
        &[
            "uid",
            "resourceVersion",
            "creationTimestamp",
            "deletionTimestamp",
            "lastTransitionTime",
        ],
    );
    value
}

fn strip_managed_fields(value: &mut Value) {
    match value {
        Value::Object(map) => {
            map.remove("managedFields");
            map.values_mut().for_each(strip_managed_fields);
        }
        Value::Array(items) => items.iter_mut().for_each(strip_managed_fields),
        _ => {}
    }
}

fn request_body(prefix: &str) -> Value {
    exchange(prefix)["request"]["body"].clone()
}

fn response(prefix: &str) -> (u16, Value) {
    let captured = exchange(prefix);
    let code = captured["response"]["status"].as_u64().unwrap_or_default() as u16;
    (code, captured["response"]["body"].clone())
}

/// Sends `method path` with the captured exchange's body, as JSON (or a JSON patch).
async fn replay(server: &SimServer, prefix: &str, accept: &str) -> (u16, Value) {
    let captured = exchange(prefix);
    let method = captured["request"]["method"].as_str().unwrap_or("GET");
    let path = captured["request"]["path"].as_str().unwrap_or_default();
    let content_type = captured["request"]["headers"]["Content-Type"]
        .as_str()
        .unwrap_or("application/json");
    let method = reqwest::Method::from_bytes(method.as_bytes()).unwrap();
    let mut request = client()
        .request(method, url(server, path))
        .header("Accept", accept);
    if let Some(body) = captured["request"].get("body") {
        request = request
            .header("Content-Type", content_type)
            .body(body.to_string());
    }
    send(request).await
}

/// Sends the captured exchange's request and asserts the answer is the captured one (up to
/// [`comparable`]).
async fn replay_matches(server: &SimServer, prefix: &str, accept: &str) -> Value {
    let (code, body) = replay(server, prefix, accept).await;
    let (real_code, real_body) = response(prefix);
    assert_eq!(code, real_code, "{prefix}: {body}");
    assert_eq!(comparable(&body), comparable(&real_body), "{prefix}");
    body
}

fn namespaces() -> Gvr {
    Gvr::new("", "v1", "namespaces")
}

async fn server_with(names: &[&str]) -> SimServer {
    let server = start(SimConfig::default()).await;
    for name in names {
        server
            .create(&namespaces(), json!({"metadata": {"name": name}}))
            .unwrap();
    }
    server
}

fn create(server: &SimServer, gvr: &Gvr, object: Value) -> Value {
    server.create(gvr, object).unwrap()
}

fn configmap(namespace: &str, name: &str, finalizers: &[&str]) -> Value {
    json!({"metadata": {"name": name, "namespace": namespace, "finalizers": finalizers},
        "data": {"k": "v"}})
}

/// The PUT bodies of `/finalize` and `/status` carry the object as read: the captured body, with
/// the identity of the simulated server's namespace.
fn with_identity_of(mut body: Value, namespace: &Value) -> Value {
    body["metadata"]["uid"] = namespace["metadata"]["uid"].clone();
    body["metadata"]["resourceVersion"] = namespace["metadata"]["resourceVersion"].clone();
    body
}

async fn put(server: &SimServer, path: &str, body: &Value) -> (u16, Value) {
    send(client().put(url(server, path)).json(body)).await
}

#[tokio::test]
async fn a_delete_marks_the_namespace_terminating_like_exchanges_137_to_142() {
    let server = start(SimConfig::default()).await;
    let created = replay_matches(&server, "137-", "application/json").await;
    let from = rv(&created);
    let watch = client()
        .get(url(
            &server,
            &format!(
                "{NSP}?watch=1&resourceVersion={from}&fieldSelector=metadata.name%3Dns-capture-a"
            ),
        ))
        .send()
        .await
        .unwrap();
    let deleted = replay_matches(&server, "140-", "application/json").await;
    assert!(deleted["metadata"]
        .get("deletionGracePeriodSeconds")
        .is_none());
    let mut events = Lines::new(watch);
    let event = events.next().await.unwrap();
    let real = &exchange("139-")["response"]["events"][0];
    assert_eq!(comparable(&event), comparable(real));
    assert_eq!(event["object"], deleted);
    // A second DELETE answers it unchanged (141); it stays Terminating (142).
    let again = replay_matches(&server, "141-", "application/json").await;
    assert_eq!(again, deleted);
    let (code, got) = send(client().get(url(&server, &format!("{NSP}/ns-capture-a")))).await;
    assert_eq!(code, 200);
    assert_eq!(comparable(&got), comparable(&response("142-").1));
}

#[tokio::test]
async fn creates_are_refused_in_missing_and_terminating_namespaces_like_138_and_143() {
    let server = server_with(&["ns-capture-a"]).await;
    let (code, body) = replay(&server, "138-", "application/json").await;
    assert_eq!((code, body), response("138-"));
    create(
        &server,
        &configmaps(),
        configmap("ns-capture-a", "cm-x", &[]),
    );
    server
        .delete(&namespaces(), None, "ns-capture-a", &Default::default())
        .unwrap();
    let (code, body) = replay(&server, "143-", "application/json").await;
    assert_eq!((code, body), response("143-"));
    // What is there is still served (144).
    let (code, list) = replay(&server, "144-", "application/json").await;
    assert_eq!(code, 200);
    assert_eq!(list["kind"], "ConfigMapList");
    assert_eq!(list["items"][0]["metadata"]["name"], "cm-x");
}

#[tokio::test]
async fn the_namespace_ignores_spec_finalizers_and_status_its_status_takes_conditions() {
    let server = server_with(&["ns-capture-a"]).await;
    server
        .delete(&namespaces(), None, "ns-capture-a", &Default::default())
        .unwrap();
    let stored = server.get(&namespaces(), None, "ns-capture-a").unwrap();
    // 145: spec.finalizers [] and status Active are ignored, the label is written.
    let body = with_identity_of(request_body("145-"), &stored);
    let (code, answer) = put(&server, &format!("{NSP}/ns-capture-a"), &body).await;
    assert_eq!(code, 200);
    assert_eq!(comparable(&answer), comparable(&response("145-").1));
    // 146: /status stores the conditions as sent.
    let body = with_identity_of(request_body("146-"), &answer);
    let (code, answer) = put(&server, &format!("{NSP}/ns-capture-a/status"), &body).await;
    assert_eq!(code, 200);
    assert_eq!(comparable(&answer), comparable(&response("146-").1));
}

#[tokio::test]
async fn deletecollection_answers_what_it_deleted_as_it_was_like_147_to_151() {
    let server = server_with(&["ns-capture-a"]).await;
    let pods = Gvr::new("", "v1", "pods");
    let pod = |name: &str, finalizers: &[&str]| {
        json!({"metadata": {"name": name, "namespace": "ns-capture-a", "finalizers": finalizers},
            "spec": {"containers": [{"name": "c", "image": "busybox:1.36"}]}})
    };
    create(
        &server,
        &pods,
        pod("pod-held", &["capture.kube-gc.io/hold"]),
    );
    create(&server, &pods, pod("pod-plain", &[]));
    for (name, finalizers) in [
        ("cm-held", &["capture.kube-gc.io/hold"][..]),
        ("cm-other", &[]),
        ("cm-plain", &[]),
    ] {
        create(
            &server,
            &configmaps(),
            configmap("ns-capture-a", name, finalizers),
        );
    }
    // 147: the Pods, as metadata, as they were before; the one a finalizer holds stays.
    let answer = replay(&server, "147-", META_LIST).await;
    let real = response("147-");
    assert_eq!(answer.0, real.0);
    assert_eq!(comparable(&answer.1), comparable(&real.1));
    let left = server.list(&pods, Some("ns-capture-a")).unwrap();
    assert_eq!(left.len(), 1);
    assert_eq!(left[0]["metadata"]["name"], "pod-held");
    assert!(left[0]["metadata"]["deletionTimestamp"].is_string());

    // 148, 149: the ConfigMaps, watched while they go.
    let from = server.resource_version();
    let watch = client()
        .get(url(
            &server,
            &format!("/api/v1/namespaces/ns-capture-a/configmaps?watch=1&resourceVersion={from}"),
        ))
        .send()
        .await
        .unwrap();
    let answer = replay(&server, "149-", "application/json").await;
    let real = response("149-");
    assert_eq!(answer.0, real.0);
    assert_eq!(comparable(&answer.1), comparable(&real.1));
    let mut seen = Lines::new(watch).take(3).await;
    let mut real_events = exchange("148-")["response"]["events"]
        .as_array()
        .unwrap()
        .clone();
    // The real server deletes them concurrently: compare them by name.
    let by_name = |e: &Value| {
        e["object"]["metadata"]["name"]
            .as_str()
            .unwrap_or_default()
            .to_owned()
    };
    seen.sort_by_key(by_name);
    real_events.sort_by_key(by_name);
    assert_eq!(
        seen.iter().map(comparable).collect::<Vec<_>>(),
        real_events.iter().map(comparable).collect::<Vec<_>>()
    );

    // 150: nothing to delete is `items: null`; 151: the metadata LIST of what remains.
    let (code, empty) = replay(&server, "150-", META_LIST).await;
    assert_eq!(code, 200);
    assert_eq!(comparable(&empty), comparable(&response("150-").1));
    let (code, left) = replay(&server, "151-", META_LIST).await;
    assert_eq!(code, 200);
    assert_eq!(comparable(&left), comparable(&response("151-").1));
}

#[tokio::test]
async fn finalize_checks_version_and_uid_writes_spec_and_metadata_not_status_like_152_to_155() {
    let server = server_with(&["ns-capture-a", "ns-capture-b"]).await;
    server
        .delete(&namespaces(), None, "ns-capture-a", &Default::default())
        .unwrap();
    let stored = server.get(&namespaces(), None, "ns-capture-a").unwrap();
    let path = format!("{NSP}/ns-capture-a/finalize");
    // 152: a stale resourceVersion.
    let mut stale = with_identity_of(request_body("152-"), &stored);
    stale["metadata"]["resourceVersion"] = json!((rv(&stored) - 1).to_string());
    assert_eq!(put(&server, &path, &stale).await, response("152-"));
    // 153: another uid, as a namespace re-created under the same name has.
    let mut wrong = with_identity_of(request_body("153-"), &stored);
    wrong["metadata"]["uid"] = json!("00000000-0000-0000-0000-000000000000");
    let (code, refused) = put(&server, &path, &wrong).await;
    let (real_code, real) = response("153-");
    assert_eq!(code, real_code);
    let real_uid = exchange("152-")["request"]["body"]["metadata"]["uid"].clone();
    let message = real["message"].as_str().unwrap().replace(
        real_uid.as_str().unwrap(),
        stored["metadata"]["uid"].as_str().unwrap(),
    );
    assert_eq!(refused["message"], message.as_str());
    assert_eq!(refused["reason"], real["reason"]);
    // 154: spec.finalizers and metadata as sent, status kept.
    let mut more = with_identity_of(request_body("154-"), &stored);
    more["metadata"]["labels"]["capture"] = json!("finalize-put");
    let (code, answer) = put(&server, &path, &more).await;
    assert_eq!(code, 200);
    let mut real = response("154-").1;
    // The capture's namespace had conditions written by 146 before.
    real["status"] = json!({"phase": "Terminating"});
    real["metadata"]["labels"] = answer["metadata"]["labels"].clone();
    assert_eq!(comparable(&answer), comparable(&real));
    assert_eq!(answer["metadata"]["labels"]["capture"], "finalize-put");
    // 155: on a namespace that is not being deleted.
    let active = server.get(&namespaces(), None, "ns-capture-b").unwrap();
    let body = with_identity_of(request_body("155-"), &active);
    let (code, answer) = put(&server, &format!("{NSP}/ns-capture-b/finalize"), &body).await;
    assert_eq!(code, 200);
    assert_eq!(comparable(&answer), comparable(&response("155-").1));
    // Only PUT writes it.
    let (code, _) = send(client().get(url(&server, &path))).await;
    assert_eq!(code, 405);
}

#[tokio::test]
async fn a_namespace_goes_when_marked_with_no_finalizer_of_either_kind_like_156_to_160() {
    let server = server_with(&["ns-capture-b"]).await;
    // No finalizers: the first DELETE only marks it (156), the second removes it (157).
    let active = server.get(&namespaces(), None, "ns-capture-b").unwrap();
    let mut emptied = active.clone();
    emptied["spec"]["finalizers"] = json!([]);
    server.finalize_namespace(emptied).unwrap();
    replay_matches(&server, "156-", "application/json").await;
    let before = server.resource_version();
    let gone = replay_matches(&server, "157-", "application/json").await;
    assert_eq!(rv(&gone), before + 1, "answered at the deletion's version");
    assert!(server.get(&namespaces(), None, "ns-capture-b").is_err());

    // A metadata finalizer holds it after /finalize (158); removing it removes the namespace
    // (159, 160).
    let held =
        json!({"metadata": {"name": "ns-capture-c", "finalizers": ["capture.kube-gc.io/hold"]}});
    create(&server, &namespaces(), held);
    server
        .delete(&namespaces(), None, "ns-capture-c", &Default::default())
        .unwrap();
    let stored = server.get(&namespaces(), None, "ns-capture-c").unwrap();
    let body = with_identity_of(request_body("158-"), &stored);
    let (code, kept) = put(&server, &format!("{NSP}/ns-capture-c/finalize"), &body).await;
    assert_eq!(code, 200);
    assert_eq!(comparable(&kept), comparable(&response("158-").1));
    let from = rv(&kept);
    let watch = client()
        .get(url(
            &server,
            &format!(
                "{NSP}?watch=1&resourceVersion={from}&fieldSelector=metadata.name%3Dns-capture-c"
            ),
        ))
        .send()
        .await
        .unwrap();
    let answer = replay_matches(&server, "160-", "application/json").await;
    assert_eq!(rv(&answer), from, "answered at the version it had");
    let event = Lines::new(watch).next().await.unwrap();
    let real = &exchange("159-")["response"]["events"][0];
    assert_eq!(comparable(&event), comparable(real));
    assert_eq!(rv(&event["object"]), from + 1);
    assert_eq!(
        event["object"]["metadata"]["finalizers"],
        json!(["capture.kube-gc.io/hold"])
    );
    assert!(server.get(&namespaces(), None, "ns-capture-c").is_err());
}

#[tokio::test]
async fn a_finalize_does_not_check_content_and_strands_it_like_161_to_164() {
    let server = server_with(&["ns-capture-d"]).await;
    create(
        &server,
        &configmaps(),
        configmap("ns-capture-d", "cm-left", &["capture.kube-gc.io/hold"]),
    );
    server
        .delete(&namespaces(), None, "ns-capture-d", &Default::default())
        .unwrap();
    let stored = server.get(&namespaces(), None, "ns-capture-d").unwrap();
    let from = rv(&stored);
    let watch = client()
        .get(url(
            &server,
            &format!(
                "{NSP}?watch=1&resourceVersion={from}&fieldSelector=metadata.name%3Dns-capture-d"
            ),
        ))
        .send()
        .await
        .unwrap();
    let body = with_identity_of(request_body("162-"), &stored);
    let (code, answer) = put(&server, &format!("{NSP}/ns-capture-d/finalize"), &body).await;
    assert_eq!(code, 200);
    assert_eq!(comparable(&answer), comparable(&response("162-").1));
    let event = Lines::new(watch).next().await.unwrap();
    let real = &exchange("161-")["response"]["events"][0];
    assert_eq!(comparable(&event), comparable(real));
    // The ConfigMap is still there (163) and cannot be released (164).
    let (code, list) = replay(&server, "163-", "application/json").await;
    assert_eq!(code, 200);
    assert_eq!(comparable(&list), comparable(&response("163-").1));
    let (code, refused) = replay(&server, "164-", "application/json").await;
    assert_eq!((code, refused), response("164-"));
}
