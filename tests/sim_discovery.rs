//! Discovery documents over HTTP, compared with the real server's captures (exchanges 01–07, 46,
//! and the retention CRDs' discovery in `fixtures/retention/crd-validation/05-discovery.json`).

mod sim_support;

use kube_gc::sim::SimConfig;
use serde_json::{json, Value};
use sim_support::*;

/// A discovery entry without what the simulated server does not produce (storage hashes), with
/// verbs sorted (the CRD capture lists them in another order).
fn comparable(entry: &Value) -> Value {
    let mut entry = entry.clone();
    if let Some(map) = entry.as_object_mut() {
        map.remove("storageVersionHash");
        if let Some(Value::Array(verbs)) = map.get_mut("verbs") {
            verbs.sort_by_key(|v| v.as_str().unwrap_or_default().to_string());
        }
    }
    entry
}

fn entry<'a>(doc: &'a Value, name: &str) -> Option<&'a Value> {
    doc["resources"]
        .as_array()?
        .iter()
        .find(|r| r["name"] == name)
}

async fn get(path: &str) -> Value {
    let server = start(SimConfig::default()).await;
    let (code, body) = send(client().get(url(&server, path))).await;
    assert_eq!(code, 200, "{path}");
    body
}

#[tokio::test]
async fn group_version_documents_match_the_captures() {
    for (path, prefix, names) in [
        (
            "/api/v1",
            "03-",
            vec![
                "configmaps",
                "namespaces",
                "namespaces/status",
                "events",
                "secrets",
            ],
        ),
        ("/apis/batch/v1", "05-", vec!["jobs", "jobs/status"]),
        (
            "/apis/apps/v1",
            "06-",
            vec![
                "deployments",
                "deployments/status",
                "replicasets",
                "replicasets/status",
            ],
        ),
        ("/apis/coordination.k8s.io/v1", "07-", vec!["leases"]),
        (
            "/apis/batch.volcano.sh/v1alpha1",
            "46-",
            vec!["jobs", "jobs/status"],
        ),
    ] {
        let ours = get(path).await;
        let real = captured_body(prefix);
        assert_eq!(ours["kind"], real["kind"], "{path}");
        assert_eq!(ours.get("apiVersion"), real.get("apiVersion"), "{path}");
        assert_eq!(ours["groupVersion"], real["groupVersion"], "{path}");
        for name in names {
            let mine = entry(&ours, name).map(comparable);
            let theirs = entry(&real, name).map(comparable);
            assert!(mine.is_some(), "{path} lists {name}");
            assert_eq!(mine, theirs, "{path} {name}");
        }
    }
}

#[tokio::test]
async fn the_retention_policies_are_discovered_like_the_real_crds() {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("fixtures/retention/crd-validation/05-discovery.json");
    let real: Value = serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    let real = &real["response"]["body"];
    let ours = get("/apis/kube-gc.io/v1alpha1").await;
    assert_eq!(ours["groupVersion"], real["groupVersion"]);
    let names = |doc: &Value| -> Vec<Value> {
        let mut names: Vec<Value> = doc["resources"]
            .as_array()
            .map(|r| r.iter().map(|e| e["name"].clone()).collect())
            .unwrap_or_default();
        names.sort_by_key(|n| n.to_string());
        names
    };
    assert_eq!(names(&ours), names(real));
    for name in [
        "retentionpolicies",
        "retentionpolicies/status",
        "clusterretentionpolicies",
        "clusterretentionpolicies/status",
    ] {
        let mine = entry(&ours, name).map(comparable);
        let theirs = entry(real, name).map(comparable);
        assert_eq!(mine, theirs, "{name}");
    }
    let apis = get("/apis").await;
    let group = apis["groups"]
        .as_array()
        .and_then(|g| g.iter().find(|g| g["name"] == "kube-gc.io"));
    assert!(group.is_some(), "/apis lists kube-gc.io");
}

#[tokio::test]
async fn root_documents_have_the_real_shapes() {
    let version = get("/version").await;
    let real = captured_body("01-");
    let keys = |v: &Value| v.as_object().map(|o| o.keys().cloned().collect::<Vec<_>>());
    assert_eq!(keys(&version), keys(&real));
    assert_eq!(version["minor"], "28");

    let api = get("/api").await;
    assert_eq!(keys(&api), keys(&captured_body("02-")));
    assert_eq!(api["versions"], captured_body("02-")["versions"]);

    let apis = get("/apis").await;
    let real = captured_body("04-");
    assert_eq!(apis["kind"], real["kind"]);
    assert_eq!(apis["apiVersion"], real["apiVersion"]);
    let group = |doc: &Value, name: &str| {
        doc["groups"]
            .as_array()
            .and_then(|g| g.iter().find(|g| g["name"] == name))
            .cloned()
    };
    for name in [
        "apps",
        "batch",
        "coordination.k8s.io",
        "events.k8s.io",
        "rbac.authorization.k8s.io",
    ] {
        assert_eq!(group(&apis, name), group(&real, name), "{name}");
    }

    let batch = get("/apis/batch").await;
    assert_eq!(batch["kind"], "APIGroup");
    assert_eq!(batch["preferredVersion"]["groupVersion"], "batch/v1");
}

#[tokio::test]
async fn health_endpoints_answer_ok() {
    let server = start(SimConfig::default()).await;
    for path in ["/healthz", "/livez", "/readyz"] {
        let response = match client().get(url(&server, path)).send().await {
            Ok(r) => r,
            Err(e) => panic!("{e}"),
        };
        assert_eq!(response.status().as_u16(), 200);
        assert_eq!(response.text().await.unwrap_or_default(), "ok");
    }
}

/// A captured exchange's status, content type and body.
fn captured(name: &str) -> (u16, String, String) {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("fixtures/real-apiserver/exchanges")
        .join(format!("{name}.json"));
    let exchange: Value = serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    let response = &exchange["response"];
    let body = match &response["body"] {
        Value::String(text) => text.clone(),
        json => json.to_string(),
    };
    let content_type = response["headers"]["content-type"].as_str().unwrap();
    (
        response["status"].as_u64().unwrap() as u16,
        content_type.to_owned(),
        body,
    )
}

/// What the simulated server answers, in the same terms; a JSON body re-serialized compactly,
/// as `captured` writes it.
async fn answered(server: &kube_gc::sim::SimServer, path: &str) -> (u16, String, String) {
    let response = client().get(url(server, path)).send().await.unwrap();
    let status = response.status().as_u16();
    let content_type = response.headers()["content-type"]
        .to_str()
        .unwrap()
        .to_owned();
    let text = response.text().await.unwrap();
    let body = match serde_json::from_str::<Value>(&text) {
        Ok(json) => json.to_string(),
        Err(_) => text,
    };
    (status, content_type, body)
}

#[tokio::test]
async fn a_group_nobody_serves_gets_the_plain_404_and_a_served_group_a_status_like_64_to_66() {
    let server = start(SimConfig::default()).await;
    let policies = [
        kube_gc::sim::Gvr::new("kube-gc.io", "v1alpha1", "retentionpolicies"),
        kube_gc::sim::Gvr::new("kube-gc.io", "v1alpha1", "clusterretentionpolicies"),
    ];
    for gvr in &policies {
        server.unserve_resource(gvr).unwrap();
    }
    let cases = [
        ("/apis/kube-gc.io/v1alpha1", "64-discovery-group-not-served"),
        (
            "/apis/batch/v9",
            "65-discovery-unknown-version-of-served-group",
        ),
        (
            "/apis/kube-gc.io/v1alpha1/clusterretentionpolicies",
            "66-list-of-group-not-served",
        ),
    ];
    for (path, name) in cases {
        assert_eq!(answered(&server, path).await, captured(name), "{path}");
    }
    // The CRDs created: the same paths are served.
    for gvr in &policies {
        server.serve_resource(gvr).unwrap();
    }
    assert_eq!(answered(&server, "/apis/kube-gc.io/v1alpha1").await.0, 200);
    let (code, _, _) = answered(
        &server,
        "/apis/kube-gc.io/v1alpha1/clusterretentionpolicies",
    )
    .await;
    assert_eq!(code, 200);
}

/// Exchanges 74–76: deleting the definition of a resource in use deletes its objects (a
/// DELETED event to the open watch), ends that watch, and leaves the plain-text 404.
#[tokio::test]
async fn deleting_a_custom_resource_definition_deletes_its_objects_and_ends_its_watches_like_74_to_76(
) {
    let server = start(SimConfig::default()).await;
    let gvr = kube_gc::sim::Gvr::new("kube-gc.io", "v1alpha1", "clusterretentionpolicies");
    let path = "/apis/kube-gc.io/v1alpha1/clusterretentionpolicies";
    server
        .create(
            &gvr,
            json!({"apiVersion": "kube-gc.io/v1alpha1", "kind": "ClusterRetentionPolicy",
                "metadata": {"name": "w1"}, "spec": {"preset": "pods"}}),
        )
        .unwrap();
    let rv = server.resource_version();
    let response = client()
        .get(url(
            &server,
            &format!("{path}?watch=true&resourceVersion={rv}"),
        ))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status().as_u16(), 200);
    let mut watch = Lines::new(response);

    // Both definitions of the group go, so that no resource of it is served, as in the capture.
    server.delete_custom_resource_definition(&gvr).unwrap();
    let namespaced = kube_gc::sim::Gvr::new("kube-gc.io", "v1alpha1", "retentionpolicies");
    server
        .delete_custom_resource_definition(&namespaced)
        .unwrap();

    let real = exchange("74-")["response"]["events"].clone();
    let events = tokio::time::timeout(std::time::Duration::from_secs(5), watch.rest())
        .await
        .expect("the watch ends");
    assert_eq!(
        events.len(),
        real.as_array().map_or(0, Vec::len),
        "{events:?}"
    );
    assert_eq!(events[0]["type"], real[0]["type"]);
    assert_eq!(events[0]["object"]["metadata"]["name"], "w1");
    let listed = answered(&server, path).await;
    assert_eq!(listed, captured("75-list-after-its-crd-is-deleted"));
    let watched = answered(&server, &format!("{path}?watch=true&resourceVersion={rv}")).await;
    assert_eq!(watched, captured("76-watch-after-its-crd-is-deleted"));
    assert!(server.list(&gvr, None).unwrap().is_empty());
}

/// `/openapi/v2`, as kubectl asks before `create -f` (exchange 128): 200 with the real
/// server's `Content-Type`; the document itself is empty (see `response::empty_openapi_v2`).
#[tokio::test]
async fn openapi_v2_answers_as_kubectl_needs_like_exchange_128() {
    let server = start(SimConfig::default()).await;
    let captured = exchange("128-");
    let accept = captured["request"]["headers"]["Accept"].as_str().unwrap();
    let response = client()
        .get(url(&server, "/openapi/v2"))
        .header("Accept", accept)
        .send()
        .await
        .unwrap();
    assert_eq!(
        u64::from(response.status().as_u16()),
        captured["response"]["status"].as_u64().unwrap()
    );
    assert_eq!(
        response.headers()["content-type"].to_str().unwrap(),
        captured["response"]["headers"]["content-type"]
    );
    assert!(response.bytes().await.unwrap().is_empty());
}
