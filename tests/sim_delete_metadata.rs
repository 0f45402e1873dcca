//! A DELETE that asks for `PartialObjectMetadata` first, as client-go's metadata client and
//! kube-gc's deleting controllers do, compared with the real server's exchanges 69–71.

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
    let http = client();

    // 69: a Pod's answer, the deleted Pod, as its metadata only.
    let pods = "/api/v1/namespaces/capture/pods";
    let pod = json!({"apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": "meta-gone", "labels": {"app": "capture"}},
        "spec": {"restartPolicy": "Never", "containers": [{"name": "c", "image": "busybox"}]}});
    let (code, _) = send(http.post(url(&server, pods)).json(&pod)).await;
    assert_eq!(code, 201);
    let (accept, body) = request_of("69-");
    assert_eq!(accept, METADATA_FIRST);
    let (code, answer) = send(
        http.delete(url(&server, &format!("{pods}/meta-gone")))
            .header("Accept", &accept)
            .json(&body),
    )
    .await;
    let real = exchange("69-");
    assert_eq!(Some(u64::from(code)), real["response"]["status"].as_u64());
    let real = &real["response"]["body"];
    assert_eq!(answer["kind"], "PartialObjectMetadata");
    assert_eq!(answer["apiVersion"], real["apiVersion"]);
    assert_eq!(shape(&answer), shape(real), "{answer}");
    assert_eq!(answer["metadata"]["deletionGracePeriodSeconds"], 0);

    // 70: a ConfigMap's answer stays its Status.
    let configmaps = "/api/v1/namespaces/capture/configmaps";
    let cm = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "meta-cm"},
        "data": {"a": "b"}});
    let (code, _) = send(http.post(url(&server, configmaps)).json(&cm)).await;
    assert_eq!(code, 201);
    let (accept, body) = request_of("70-");
    let (code, answer) = send(
        http.delete(url(&server, &format!("{configmaps}/meta-cm")))
            .header("Accept", &accept)
            .json(&body),
    )
    .await;
    let real = &exchange("70-")["response"];
    assert_eq!(Some(u64::from(code)), real["status"].as_u64());
    for field in ["kind", "apiVersion", "status"] {
        assert_eq!(answer[field], real["body"][field], "{field}");
    }
    assert_eq!(answer["details"]["name"], "meta-cm");

    // 71: a Job kept by Foreground answers its marked metadata, finalizer and all.
    let jobs = "/apis/batch/v1/namespaces/capture/jobs";
    let job = json!({"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "meta-job"},
        "spec": {"template": {"spec": {"restartPolicy": "Never",
            "containers": [{"name": "c", "image": "busybox"}]}}}});
    let (code, _) = send(http.post(url(&server, jobs)).json(&job)).await;
    assert_eq!(code, 201);
    let (accept, body) = request_of("71-");
    let (code, answer) = send(
        http.delete(url(&server, &format!("{jobs}/meta-job")))
            .header("Accept", &accept)
            .json(&body),
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
