//! `/openapi/v3` and `/openapi/v2` of the simulated server against the real server's
//! (exchanges 271–274 and 287 of `fixtures/real-apiserver/`): the index's shape and content
//! type, a document's shape and caching headers, the field trees of a built-in kind (a subset
//! of the real one's: what this server's protobuf tables know) and of kube-gc's own CRDs (the
//! same), a hash that follows the document, and the 304 kubectl's cache is answered.

mod sim_support;

use kube_gc::sim::{Gvr, SimConfig, SimServer};
use serde_json::Value;
use sim_support::*;

async fn get(server: &SimServer, path: &str, headers: &[(&str, &str)]) -> reqwest::Response {
    let mut request = client().get(url(server, path));
    for (name, value) in headers {
        request = request.header(*name, *value);
    }
    request.send().await.unwrap()
}

async fn index(server: &SimServer) -> Value {
    let response = get(
        server,
        "/openapi/v3?timeout=32s",
        &[("Accept", "application/json, */*")],
    )
    .await;
    assert_eq!(response.status(), 200);
    let real = exchange("271-");
    assert_eq!(
        response.headers()["content-type"],
        real["response"]["headers"]["content-type"]
            .as_str()
            .unwrap()
    );
    assert_eq!(
        response.headers()["cache-control"],
        real["response"]["headers"]["cache-control"]
            .as_str()
            .unwrap()
    );
    assert!(response.headers().contains_key("last-modified"));
    serde_json::from_slice(&response.bytes().await.unwrap()).unwrap()
}

fn url_of(index: &Value, path: &str) -> String {
    index["paths"][path]["serverRelativeURL"]
        .as_str()
        .unwrap_or_else(|| panic!("{path} not in {index}"))
        .to_owned()
}

/// The hash of a `serverRelativeURL`.
fn hash_of(url: &str) -> &str {
    url.split_once("?hash=").map(|(_, h)| h).unwrap_or_default()
}

/// `schema` with a `$ref` (alone or the one of an `allOf`) followed in `document`.
fn resolve<'d>(document: &'d Value, schema: &'d Value) -> &'d Value {
    let reference = schema["$ref"]
        .as_str()
        .or_else(|| schema["allOf"][0]["$ref"].as_str());
    match reference.and_then(|r| r.strip_prefix("#/components/schemas/")) {
        Some(name) => &document["components"]["schemas"][name],
        None => schema,
    }
}

/// What a value is, as kubectl explain reads it: the format of a formatted string, else its
/// type (an int-or-string or a quantity has no type of its own on the real server).
fn shape(document: &Value, schema: &Value) -> String {
    let schema = resolve(document, schema);
    match (schema["format"].as_str(), schema["type"].as_str()) {
        (Some(format @ ("date-time" | "int-or-string")), _) => format.to_owned(),
        (_, Some(kind)) => kind.to_owned(),
        _ if schema["oneOf"].is_array() || schema["anyOf"].is_array() => "scalar".to_owned(),
        _ => "object".to_owned(),
    }
}

/// Every field path under `schema` (to `depth`) that `ours` describes and `real` lacks or
/// types otherwise.
/// kube-gc's CRDs gained fields after exchange 273 was captured (`spec.mode`,
/// `spec.notification` and the status that reports them). A field of a kube-gc kind that 273
/// lacks passes only where the real server's definition of the CRDs as they are now, exchange
/// 230, has it: the same check, against the later capture.
fn in_the_later_definition(kind: &str, entry: &str) -> bool {
    let Some(kind_name) = kind.strip_prefix("io.kube-gc.v1alpha1.") else {
        return false;
    };
    let Some(path) = entry
        .strip_suffix(": not on the real server")
        .and_then(|e| e.strip_prefix(kind))
    else {
        return false;
    };
    let definition = exchange("230-");
    let mut schema =
        &definition["response"]["body"]["spec"]["versions"][0]["schema"]["openAPIV3Schema"];
    // 230 is ClusterRetentionPolicy's definition; RetentionPolicy's gained the same fields.
    assert!(matches!(
        kind_name,
        "ClusterRetentionPolicy" | "RetentionPolicy"
    ));
    for field in path.trim_start_matches('.').split('.') {
        schema = &schema["properties"][field];
        if schema.is_null() {
            return false;
        }
    }
    true
}

fn mismatches(
    ours: (&Value, &Value),
    real: (&Value, &Value),
    path: &str,
    depth: usize,
    found: &mut Vec<String>,
) {
    let (our_document, our_schema) = ours;
    let (real_document, real_schema) = real;
    let (mut our_schema, mut real_schema) = (
        resolve(our_document, our_schema),
        resolve(real_document, real_schema),
    );
    if our_schema["type"] == "array" {
        our_schema = resolve(our_document, &our_schema["items"]);
        real_schema = resolve(real_document, &real_schema["items"]);
    }
    let Some(properties) = our_schema["properties"].as_object() else {
        return;
    };
    for (name, our_field) in properties {
        let here = format!("{path}.{name}");
        let real_field = &real_schema["properties"][name];
        if real_field.is_null() {
            found.push(format!("{here}: not on the real server"));
            continue;
        }
        let (ours_is, real_is) = (
            shape(our_document, our_field),
            shape(real_document, real_field),
        );
        // A quantity is a string here, a string or a number there.
        if ours_is != real_is && !(ours_is == "string" && real_is == "scalar") {
            found.push(format!("{here}: {ours_is} here, {real_is} there"));
        }
        if depth > 0 {
            mismatches(
                (our_document, our_field),
                (real_document, real_field),
                &here,
                depth - 1,
                found,
            );
        }
    }
}

fn kind_schema<'d>(document: &'d Value, name: &str) -> &'d Value {
    let schema = &document["components"]["schemas"][name];
    assert!(schema.is_object(), "no {name}");
    schema
}

#[tokio::test]
async fn the_index_and_documents_have_the_real_shape_and_field_trees() {
    let server = start(SimConfig::default()).await;
    let real_index = captured_body("271-");
    let index = index(&server).await;
    for path in ["api/v1", "apis/batch/v1", "apis/kube-gc.io/v1alpha1"] {
        let (ours, real) = (url_of(&index, path), url_of(&real_index, path));
        assert_eq!(
            ours.split_once('?').unwrap().0,
            real.split_once('?').unwrap().0
        );
        assert_eq!(hash_of(&ours).len(), hash_of(&real).len());
        assert!(hash_of(&ours)
            .chars()
            .all(|c| c.is_ascii_digit() || c.is_ascii_uppercase()));
    }

    for (prefix, path, kinds) in [
        ("272-", "apis/batch/v1", &["io.k8s.api.batch.v1.Job"][..]),
        (
            "273-",
            "apis/kube-gc.io/v1alpha1",
            &[
                "io.kube-gc.v1alpha1.ClusterRetentionPolicy",
                "io.kube-gc.v1alpha1.RetentionPolicy",
            ][..],
        ),
    ] {
        let real = exchange(prefix);
        let real_document = &real["response"]["body"];
        let url = url_of(&index, path);
        let response = get(&server, &url, &[("Accept", "application/json")]).await;
        assert_eq!(response.status(), 200, "{path}");
        let headers = response.headers().clone();
        for header in ["cache-control", "content-type", "vary"] {
            assert_eq!(
                headers[header],
                real["response"]["headers"][header].as_str().unwrap(),
                "{path} {header}"
            );
        }
        assert_eq!(headers["etag"], format!("\"{}\"", hash_of(&url)).as_str());
        let expires = headers["expires"].to_str().unwrap();
        assert!(expires.ends_with(" UTC"), "{expires}");
        let document: Value = serde_json::from_slice(&response.bytes().await.unwrap()).unwrap();
        let keys = |v: &Value| v.as_object().unwrap().keys().cloned().collect::<Vec<_>>();
        assert_eq!(keys(&document), keys(real_document), "{path}");
        assert_eq!(document["openapi"], real_document["openapi"]);
        for kind in kinds {
            let (ours, theirs) = (
                kind_schema(&document, kind),
                kind_schema(real_document, kind),
            );
            assert_eq!(
                ours["x-kubernetes-group-version-kind"],
                theirs["x-kubernetes-group-version-kind"]
            );
            let mut found = Vec::new();
            mismatches(
                (&document, ours),
                (real_document, theirs),
                kind,
                8,
                &mut found,
            );
            found.retain(|entry| !in_the_later_definition(kind, entry));
            assert!(found.is_empty(), "{kind}: {found:#?}");
        }
        // Every path served here is one the real server has.
        for served in document["paths"].as_object().unwrap().keys() {
            assert!(real_document["paths"].get(served).is_some(), "{served}");
        }
    }
}

#[tokio::test]
async fn a_changed_document_moves_to_a_new_hash_and_a_cached_one_is_not_sent_again() {
    let server = start(SimConfig::default()).await;
    let before = url_of(&index(&server).await, "apis/kube-gc.io/v1alpha1");
    let etag = format!("\"{}\"", hash_of(&before));
    let again = get(&server, &before, &[("If-None-Match", &etag)]).await;
    assert_eq!(again.status(), 304);
    assert_eq!(again.headers()["etag"], etag.as_str());
    assert!(again.bytes().await.unwrap().is_empty());

    server
        .delete_custom_resource_definition(&Gvr::new(
            "kube-gc.io",
            "v1alpha1",
            "clusterretentionpolicies",
        ))
        .unwrap();
    let after = url_of(&index(&server).await, "apis/kube-gc.io/v1alpha1");
    assert_ne!(hash_of(&before), hash_of(&after));
    // The old URL leads to the new document.
    let moved = client().get(url(&server, &before)).send().await.unwrap();
    let document: Value = serde_json::from_slice(&moved.bytes().await.unwrap()).unwrap();
    let schemas = &document["components"]["schemas"];
    assert!(schemas["io.kube-gc.v1alpha1.ClusterRetentionPolicy"].is_null());
    assert!(schemas["io.kube-gc.v1alpha1.RetentionPolicy"].is_object());
    assert_eq!(
        get(&server, "/openapi/v3/apis/nothing.example/v1", &[])
            .await
            .status(),
        404
    );
}

#[tokio::test]
async fn openapi_v2_is_answered_as_kubectl_asks_it_and_revalidates_it() {
    let server = start(SimConfig::default()).await;
    let first = exchange("287-");
    let accept = first["request"]["headers"]["Accept"].as_str().unwrap();
    let response = get(&server, "/openapi/v2?timeout=32s", &[("Accept", accept)]).await;
    assert_eq!(
        response.status(),
        first["response"]["status"].as_u64().unwrap() as u16
    );
    assert_eq!(
        response.headers()["content-type"],
        first["response"]["headers"]["content-type"]
            .as_str()
            .unwrap()
    );
    let etag = response.headers()["etag"].to_str().unwrap().to_owned();
    let again = exchange("274-");
    let response = get(
        &server,
        "/openapi/v2?timeout=32s",
        &[("Accept", accept), ("If-None-Match", &etag)],
    )
    .await;
    assert_eq!(
        response.status(),
        again["response"]["status"].as_u64().unwrap() as u16
    );
    assert_eq!(response.headers()["etag"], etag.as_str());
    assert_eq!(response.headers()["vary"], "Accept");
}
