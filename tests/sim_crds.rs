//! The simulated server's CustomResourceDefinitions, each rule pinned to an exchange captured
//! from kube-apiserver v1.28.7 (`fixtures/real-apiserver/exchanges/130`–`136`).

mod sim_support;

use kube_gc::sim::{Gvr, SimConfig};
use serde_json::{json, Value};
use sim_support::*;

const DEFINITIONS: &str = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions";

fn crds() -> Gvr {
    Gvr::new("apiextensions.k8s.io", "v1", "customresourcedefinitions")
}

fn pipelineruns() -> Gvr {
    Gvr::new("tekton.dev", "v1", "pipelineruns")
}

/// A condition as compared: what it says, not when.
fn conditions(definition: &Value) -> Vec<(String, String, String, String)> {
    let list = definition["status"]["conditions"].as_array().cloned();
    list.unwrap_or_default()
        .iter()
        .map(|c| {
            let text = |k: &str| c[k].as_str().unwrap_or_default().to_owned();
            (
                text("type"),
                text("status"),
                text("reason"),
                text("message"),
            )
        })
        .collect()
}

/// The Tekton PipelineRun definition a user would apply, shaped like 131's request.
fn pipelinerun_definition(name: &str) -> Value {
    json!({"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": name},
        "spec": {"group": "tekton.dev", "scope": "Namespaced",
            "names": {"plural": "pipelineruns", "singular": "pipelinerun", "kind": "PipelineRun",
                      "listKind": "PipelineRunList"},
            "versions": [{"name": "v1", "served": true, "storage": true,
                "subresources": {"status": {}},
                "schema": {"openAPIV3Schema": {"type": "object",
                    "x-kubernetes-preserve-unknown-fields": true}}}]}})
}

/// Exchange 230 (208 before `mode`, `notification` and the audit status fields, 130 before
/// the `unknown` status field): kube-gc's ClusterRetentionPolicy definition is what `kubectl
/// apply -k deploy/crds/` leaves on a real server — the same spec, the same last-applied
/// annotation byte for byte, and the status of an established definition.
#[tokio::test]
async fn kube_gcs_definitions_are_served_as_kubectl_apply_leaves_them_like_230() {
    let server = start(SimConfig::default()).await;
    let name = "clusterretentionpolicies.kube-gc.io";
    let (code, served) = send(client().get(url(&server, &format!("{DEFINITIONS}/{name}")))).await;
    let real = captured_body("230-");
    assert_eq!(code, 200);
    assert_eq!(served["spec"], real["spec"]);
    assert_eq!(served["metadata"]["labels"], real["metadata"]["labels"]);
    let applied = "kubectl.kubernetes.io/last-applied-configuration";
    assert_eq!(
        served["metadata"]["annotations"][applied],
        real["metadata"]["annotations"][applied]
    );
    assert_eq!(conditions(&served), conditions(&real));
    assert_eq!(
        served["status"]["acceptedNames"],
        real["status"]["acceptedNames"]
    );
    assert_eq!(
        served["status"]["storedVersions"],
        real["status"]["storedVersions"]
    );
    assert_eq!(served["metadata"]["generation"], 1);
}

/// Every other declared custom resource has an established definition built from the catalogue.
#[tokio::test]
async fn every_served_custom_resource_has_an_established_definition() {
    let server = start(SimConfig::default().with_workload_custom_resources()).await;
    let definitions = server.list(&crds(), None).unwrap();
    let names: Vec<&str> = definitions
        .iter()
        .filter_map(|d| d["metadata"]["name"].as_str())
        .collect();
    for expected in [
        "jobs.batch.volcano.sh",
        "retentionpolicies.kube-gc.io",
        "pipelineruns.tekton.dev",
        "workflows.argoproj.io",
        "rayjobs.ray.io",
    ] {
        assert!(names.contains(&expected), "{expected} in {names:?}");
    }
    let established = conditions(&captured_body("132-"));
    for definition in &definitions {
        assert_eq!(conditions(definition), established, "{definition}");
    }
    let tekton = definitions
        .iter()
        .find(|d| d["metadata"]["name"] == "pipelineruns.tekton.dev")
        .unwrap();
    assert_eq!(tekton["spec"]["scope"], "Namespaced");
    assert_eq!(
        tekton["spec"]["versions"][0]["subresources"],
        json!({"status": {}})
    );
    assert_eq!(tekton["status"]["storedVersions"], json!(["v1"]));
}

/// Exchanges 131–133: a definition of a declared resource not served yet is created with the
/// registry's initial status (what the POST answers), then established, and its resource is
/// served; a second one is 409.
#[tokio::test]
async fn creating_a_definition_serves_its_resource_like_131_to_133() {
    let server = start(SimConfig::default().with_workload_custom_resources()).await;
    server.unserve_resource(&pipelineruns()).unwrap();
    let runs = "/apis/tekton.dev/v1/namespaces/capture/pipelineruns";
    assert_eq!(send(client().get(url(&server, runs))).await.0, 404);
    let name = "pipelineruns.tekton.dev";
    assert!(
        server.get(&crds(), None, name).is_err(),
        "no definition while unserved"
    );

    let body = pipelinerun_definition(name);
    let (code, created) = send(client().post(url(&server, DEFINITIONS)).json(&body)).await;
    let real = captured_body("131-");
    assert_eq!(code, 201);
    assert_eq!(created["status"], real["status"]);
    assert_eq!(created["spec"]["conversion"], real["spec"]["conversion"]);
    assert_eq!(created["metadata"]["generation"], 1);

    let (code, established) =
        send(client().get(url(&server, &format!("{DEFINITIONS}/{name}")))).await;
    assert_eq!(code, 200);
    assert_eq!(conditions(&established), conditions(&captured_body("132-")));
    assert_eq!(
        established["status"]["acceptedNames"],
        body["spec"]["names"]
    );
    assert_eq!(send(client().get(url(&server, runs))).await.0, 200);

    let (code, conflict) = send(client().post(url(&server, DEFINITIONS)).json(&body)).await;
    let real = captured_body("133-");
    assert_eq!(code, 409);
    let message = real["message"]
        .as_str()
        .unwrap()
        .replace("widgets.capture.example.com", name);
    assert_eq!(conflict["message"], message.as_str());
    assert_eq!(conflict["reason"], real["reason"]);
}

/// Exchange 134, and what the sim cannot do: a name other than `<plural>.<group>` is refused as
/// a real server refuses it; a resource the sim does not declare is refused naming what it
/// serves, rather than stored as established while its resource answers 404.
#[tokio::test]
async fn definitions_the_sim_cannot_serve_are_refused_with_the_reason() {
    let server = start(SimConfig::default()).await;
    let mut wrong = pipelinerun_definition("gadgets.tekton.dev");
    let (code, refused) = send(client().post(url(&server, DEFINITIONS)).json(&wrong)).await;
    let real = captured_body("134-");
    assert_eq!(code, 422);
    assert_eq!(
        refused["message"],
        real["message"]
            .as_str()
            .unwrap()
            .replace("gadgets.capture.example.com", "gadgets.tekton.dev")
            .as_str()
    );
    assert_eq!(refused["details"]["causes"][0]["field"], "metadata.name");

    // Tekton is declared only with --workload-crds.
    wrong["metadata"]["name"] = json!("pipelineruns.tekton.dev");
    let (code, refused) = send(client().post(url(&server, DEFINITIONS)).json(&wrong)).await;
    assert_eq!(code, 422);
    let message = refused["message"].as_str().unwrap_or_default();
    assert!(
        message.contains("not in it") && message.contains("--workload-crds"),
        "{message}"
    );
    assert!(server
        .get(&crds(), None, "pipelineruns.tekton.dev")
        .is_err());
}

/// Exchanges 135, 136 (and 74–76): deleting a definition answers with it Terminating, deletes
/// its objects, stops serving its resource, and then the definition is gone.
#[tokio::test]
async fn deleting_a_definition_answers_terminating_and_removes_everything_like_135_136() {
    let server = start(SimConfig::default().with_workload_custom_resources()).await;
    server
        .create(
            &pipelineruns(),
            json!({"apiVersion": "tekton.dev/v1", "kind": "PipelineRun",
                "metadata": {"name": "run-1", "namespace": "capture"}}),
        )
        .unwrap();
    let name = "pipelineruns.tekton.dev";
    let path = format!("{DEFINITIONS}/{name}");
    let (code, terminating) = send(client().delete(url(&server, &path))).await;
    let real = captured_body("135-");
    assert_eq!(code, 200);
    assert_eq!(
        terminating["metadata"]["finalizers"],
        real["metadata"]["finalizers"]
    );
    assert!(terminating["metadata"]["deletionTimestamp"].is_string());
    let last = |d: &Value| conditions(d).last().cloned();
    assert_eq!(last(&terminating), last(&real));

    let (code, gone) = send(client().get(url(&server, &path))).await;
    let real = captured_body("136-");
    assert_eq!(code, 404);
    assert_eq!(
        gone["message"],
        real["message"]
            .as_str()
            .unwrap()
            .replace("widgets.capture.example.com", name)
            .as_str()
    );
    let runs = "/apis/tekton.dev/v1/namespaces/capture/pipelineruns";
    assert_eq!(send(client().get(url(&server, runs))).await.0, 404);
    assert!(server
        .deletions()
        .iter()
        .any(|d| d.name == "run-1" && d.gvr == pipelineruns()));
}
