//! A DELETE that asks for `PartialObjectMetadata` first, as kube-gc's deleting controllers do,
//! compared with the real server's exchanges 69–71.

mod sim_support;

use kube_gc::sim::SimConfig;
use serde_json::{json, Value};
use sim_support::*;

/// The `Accept` header of the captures (and of `kube_gc::client::Api::delete_for_metadata`).
const METADATA_FIRST: &str =
    "application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1,application/json";

fn request_of(prefix: &str) -> (String, Value) {
    let real = exchange(prefix);
    let accept = real["request"]["headers"]["Accept"]
        .as_str()
        .unwrap_or_default()
        .to_owned();
    (accept, real["request"]["body"].clone())
}

/// Creates `object` in `collection`, then deletes it as exchange `prefix` did (its `Accept`
/// header and DeleteOptions): the answer's status code and body.
async fn create_then_delete_like(
    server: &kube_gc::sim::SimServer,
    collection: &str,
    object: Value,
    prefix: &str,
) -> (u16, Value) {
    let http = client();
    let name = object["metadata"]["name"]
        .as_str()
        .unwrap_or_default()
        .to_owned();
    let (code, _) = send(http.post(url(server, collection)).json(&object)).await;
    assert_eq!(code, 201, "create {name}");
    let (accept, body) = request_of(prefix);
    assert_eq!(accept, METADATA_FIRST);
    send(
        http.delete(url(server, &format!("{collection}/{name}")))
            .header("Accept", &accept)
            .json(&body),
    )
    .await
}

/// The top-level keys and the metadata keys the simulated server can know (it keeps no
/// `managedFields`), of an answer.
fn shape(body: &Value) -> (Vec<String>, Vec<String>) {
    let keys = |v: &Value| -> Vec<String> {
        v.as_object()
            .map(|m| m.keys().cloned().collect())
            .unwrap_or_default()
    };
    let mut top = keys(body);
    top.sort();
    let mut metadata: Vec<String> = keys(&body["metadata"])
        .into_iter()
        .filter(|k| k != "managedFields")
        .collect();
    metadata.sort();
    (top, metadata)
}

#[tokio::test]
async fn a_delete_asking_for_metadata_answers_like_exchanges_69_to_71() {
    let server = start(SimConfig::default()).await;

    // 69: a Pod's answer, the deleted Pod, as its metadata only.
    let pod = json!({"apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": "meta-gone", "labels": {"app": "capture"}},
        "spec": {"restartPolicy": "Never", "containers": [{"name": "c", "image": "busybox"}]}});
    let (code, answer) =
        create_then_delete_like(&server, "/api/v1/namespaces/capture/pods", pod, "69-").await;
    let real = exchange("69-");
    assert_eq!(Some(u64::from(code)), real["response"]["status"].as_u64());
    let real = &real["response"]["body"];
    assert_eq!(answer["kind"], "PartialObjectMetadata");
    assert_eq!(answer["apiVersion"], real["apiVersion"]);
    assert_eq!(shape(&answer), shape(real), "{answer}");
    assert_eq!(answer["metadata"]["deletionGracePeriodSeconds"], 0);

    // 70: a ConfigMap's answer stays its Status.
    let cm = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "meta-cm"},
        "data": {"a": "b"}});
    let (code, answer) =
        create_then_delete_like(&server, "/api/v1/namespaces/capture/configmaps", cm, "70-").await;
    let real = &exchange("70-")["response"];
    assert_eq!(Some(u64::from(code)), real["status"].as_u64());
    for field in ["kind", "apiVersion", "status"] {
        assert_eq!(answer[field], real["body"][field], "{field}");
    }
    assert_eq!(answer["details"]["name"], "meta-cm");

    // 71: a Job kept by Foreground answers its marked metadata, finalizer and all.
    let job = json!({"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "meta-job"},
        "spec": {"template": {"spec": {"restartPolicy": "Never",
            "containers": [{"name": "c", "image": "busybox"}]}}}});
    let (code, answer) = create_then_delete_like(
        &server,
        "/apis/batch/v1/namespaces/capture/jobs",
        job,
        "71-",
    )
    .await;
    let real = exchange("71-");
    assert_eq!(Some(u64::from(code)), real["response"]["status"].as_u64());
    let real = &real["response"]["body"];
    assert_eq!(answer["kind"], "PartialObjectMetadata");
    // The real Job has labels the simulated server does not write: batch/v1 defaults a Job's
    // labels to its template's, where the server put `controller-uid` and `job-name` — Job
    // defaulting, not what this exchange is about.
    let (top, mut metadata) = shape(real);
    metadata.retain(|k| k != "labels");
    assert_eq!(shape(&answer), (top, metadata), "{answer}");
    assert_eq!(
        answer["metadata"]["finalizers"],
        real["metadata"]["finalizers"]
    );
    assert_eq!(
        answer["metadata"]["generation"],
        real["metadata"]["generation"]
    );
}
