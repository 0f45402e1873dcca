//! LIST over HTTP: paging, continue tokens, resourceVersion semantics, selectors and
//! metadata-only lists, compared with the real server's captures.

mod sim_support;

use kube_gc::sim::SimConfig;
use serde_json::{json, Value};
use sim_support::*;

const JOBS: &str = "/apis/batch/v1/namespaces/capture/jobs";
const META_LIST: &str = "application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1";
const META: &str = "application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1";

async fn four_jobs() -> kube_gc::sim::SimServer {
    let server = start(SimConfig::default()).await;
    for name in ["list-a", "list-b", "list-c", "pi"] {
        create_job(&server, name);
    }
    server
}

fn names(list: &Value) -> Vec<String> {
    list["items"]
        .as_array()
        .map(|items| {
            items
                .iter()
                .filter_map(|i| i["metadata"]["name"].as_str().map(str::to_string))
                .collect()
        })
        .unwrap_or_default()
}

#[tokio::test]
async fn pages_like_exchanges_14_and_15() {
    let server = four_jobs().await;
    let http = client();
    let (code, page1) = send(http.get(url(&server, &format!("{JOBS}?limit=2")))).await;
    assert_eq!(code, 200);
    assert_eq!(page1["kind"], "JobList");
    assert_eq!(page1["apiVersion"], "batch/v1");
    assert_eq!(names(&page1), vec!["list-a", "list-b"]);
    assert_eq!(page1["metadata"]["remainingItemCount"], 2);
    // Items of a built-in list carry no kind/apiVersion, as in exchange 14.
    let real_item = &captured_body("14-")["items"][0];
    assert_eq!(
        page1["items"][0].get("kind").is_some(),
        real_item.get("kind").is_some()
    );
    // The token has the real format: base64url JSON naming the version and the last key.
    let token = page1["metadata"]["continue"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    let list_rv = page1["metadata"]["resourceVersion"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    let decoded = base64::Engine::decode(&base64::engine::general_purpose::URL_SAFE_NO_PAD, &token)
        .ok()
        .and_then(|b| serde_json::from_slice::<Value>(&b).ok());
    assert_eq!(
        decoded,
        Some(
            json!({"v": "meta.k8s.io/v1", "rv": list_rv.parse::<u64>().unwrap_or(0), "start": "list-b\u{0}"})
        )
    );

    create_job(&server, "list-b2");
    let (code, page2) =
        send(http.get(url(&server, &format!("{JOBS}?limit=2&continue={token}")))).await;
    assert_eq!(code, 200);
    assert_eq!(
        names(&page2),
        vec!["list-c", "pi"],
        "pages show the first page's version"
    );
    assert_eq!(page2["metadata"]["resourceVersion"], list_rv.as_str());
    assert_eq!(
        page2["metadata"],
        json!({"resourceVersion": list_rv}),
        "last page: no continue"
    );
}

#[tokio::test]
async fn malformed_continue_is_400_like_exchange_16() {
    let server = four_jobs().await;
    let (code, body) =
        send(client().get(url(&server, &format!("{JOBS}?limit=2&continue=garbage")))).await;
    assert_eq!(code, 400);
    let real = captured_body("16-");
    assert_eq!(body["reason"], real["reason"]);
    assert_eq!(body["code"], real["code"]);
    let prefix = "invalid continue token: continue key is not valid: ";
    assert!(body["message"]
        .as_str()
        .is_some_and(|m| m.starts_with(prefix)));
}

#[tokio::test]
async fn resource_version_zero_ignores_limit_like_the_v1_28_watch_cache() {
    let server = four_jobs().await;
    let (code, body) = send(client().get(url(
        &server,
        "/apis/batch/v1/jobs?resourceVersion=0&limit=1",
    )))
    .await;
    assert_eq!(code, 200);
    assert_eq!(names(&body).len(), 4);
    assert!(body["metadata"].get("continue").is_none());
    assert_eq!(
        body["metadata"]["resourceVersion"],
        server.resource_version().to_string()
    );
}

#[tokio::test]
async fn exact_and_too_large_resource_versions() {
    let server = start(SimConfig::default()).await;
    let http = client();
    let first = create_job(&server, "a");
    create_job(&server, "b");
    let at = rv(&first);
    let (code, body) = send(http.get(url(
        &server,
        &format!("{JOBS}?resourceVersion={at}&resourceVersionMatch=Exact"),
    )))
    .await;
    assert_eq!(code, 200);
    assert_eq!(names(&body), vec!["a"]);
    assert_eq!(body["metadata"]["resourceVersion"], at.to_string());

    let (code, body) = send(http.get(url(
        &server,
        &format!("{JOBS}?resourceVersion={at}&resourceVersionMatch=NotOlderThan"),
    )))
    .await;
    assert_eq!(code, 200);
    assert_eq!(names(&body), vec!["a", "b"]);

    let future = server.resource_version() + 10;
    let (code, body) =
        send(http.get(url(&server, &format!("{JOBS}?resourceVersion={future}")))).await;
    assert_eq!(code, 504);
    assert_eq!(body["reason"], "Timeout");
    assert_eq!(
        body["message"],
        format!(
            "Timeout: Too large resource version: {future}, current: {}",
            server.resource_version()
        )
    );
    assert_eq!(
        body["details"]["causes"][0]["reason"],
        "ResourceVersionTooLarge"
    );
}

#[tokio::test]
async fn compacted_versions_are_410_like_exchanges_53_and_54() {
    let server = four_jobs().await;
    let http = client();
    let (_, page1) = send(http.get(url(&server, &format!("{JOBS}?limit=1")))).await;
    let old = page1["metadata"]["resourceVersion"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    let token = page1["metadata"]["continue"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    create_job(&server, "later");
    server.compact();

    let (code, body) = send(http.get(url(
        &server,
        &format!("{JOBS}?resourceVersion={old}&resourceVersionMatch=Exact"),
    )))
    .await;
    assert_eq!(code, 410);
    assert_eq!(body, captured_body("54-"));

    let (code, body) =
        send(http.get(url(&server, &format!("{JOBS}?limit=1&continue={token}")))).await;
    assert_eq!(code, 410);
    let mut expected = captured_body("53-");
    let mut actual = body.clone();
    redact(&mut expected, &["continue"]);
    redact(&mut actual, &["continue"]);
    assert_eq!(actual, expected);
    // The fresh token continues inconsistently from the same key.
    let fresh = body["metadata"]["continue"].as_str().unwrap_or_default();
    let (code, rest) =
        send(http.get(url(&server, &format!("{JOBS}?limit=10&continue={fresh}")))).await;
    assert_eq!(code, 200);
    assert_eq!(names(&rest), vec!["list-b", "list-c", "pi"]);
}

#[tokio::test]
async fn label_and_field_selectors_filter_and_hide_the_remaining_count() {
    let server = four_jobs().await;
    let mut labelled = job("labelled");
    labelled["metadata"]["labels"] = json!({"app": "capture", "tier": "x"});
    if let Err(e) = server.create(&jobs(), labelled) {
        panic!("{e}");
    }
    let http = client();
    let (code, body) =
        send(http.get(url(&server, "/apis/batch/v1/jobs?labelSelector=tier%3Dx"))).await;
    assert_eq!(code, 200);
    assert_eq!(names(&body), vec!["labelled"]);
    let (_, body) = send(http.get(url(
        &server,
        "/apis/batch/v1/jobs?labelSelector=app&limit=2",
    )))
    .await;
    assert_eq!(names(&body).len(), 2);
    assert!(body["metadata"]["continue"].is_string());
    assert!(body["metadata"].get("remainingItemCount").is_none());
    let (_, body) = send(http.get(url(
        &server,
        "/apis/batch/v1/jobs?fieldSelector=metadata.name%3Dpi",
    )))
    .await;
    assert_eq!(names(&body), vec!["pi"]);
    let (code, body) =
        send(http.get(url(&server, "/apis/batch/v1/jobs?fieldSelector=spec.x%3D1"))).await;
    assert_eq!(code, 400);
    assert_eq!(body["reason"], "BadRequest");
    let (code, _) =
        send(http.get(url(&server, "/apis/batch/v1/jobs?labelSelector=a%20in%20("))).await;
    assert_eq!(code, 400);
}

#[tokio::test]
async fn metadata_only_reads_like_exchanges_18_19_40_and_50() {
    let server = four_jobs().await;
    let http = client();
    let (code, list) = send(http.get(url(&server, JOBS)).header("accept", META_LIST)).await;
    assert_eq!(code, 200);
    let real = captured_body("18-");
    assert_eq!(list["kind"], real["kind"]);
    assert_eq!(list["apiVersion"], real["apiVersion"]);
    let item = &list["items"][0];
    let keys: Vec<&String> = item
        .as_object()
        .map(|o| o.keys().collect())
        .unwrap_or_default();
    let real_keys: Vec<&String> = real["items"][0]
        .as_object()
        .map(|o| o.keys().collect())
        .unwrap_or_default();
    assert_eq!(keys, real_keys);
    assert_eq!(item["metadata"]["name"], "list-a");

    let (code, one) = send(
        http.get(url(&server, &format!("{JOBS}/pi")))
            .header("accept", META),
    )
    .await;
    assert_eq!(code, 200);
    assert_eq!(one["kind"], "PartialObjectMetadata");
    assert_eq!(one["apiVersion"], "meta.k8s.io/v1");
    assert!(one.get("spec").is_none() && one.get("status").is_none());

    let (code, all) = send(
        http.get(url(&server, "/api/v1/configmaps?limit=3"))
            .header("accept", META_LIST),
    )
    .await;
    assert_eq!(code, 200);
    assert_eq!(all["kind"], captured_body("40-")["kind"]);

    send(
        http.post(url(
            &server,
            "/apis/batch.volcano.sh/v1alpha1/namespaces/capture/jobs",
        ))
        .json(&exchange("47-")["request"]["body"]),
    )
    .await;
    let (code, vc) = send(
        http.get(url(
            &server,
            "/apis/batch.volcano.sh/v1alpha1/namespaces/capture/jobs",
        ))
        .header("accept", META_LIST),
    )
    .await;
    assert_eq!(code, 200);
    assert_eq!(
        vc["items"][0]["kind"],
        captured_body("50-")["items"][0]["kind"]
    );
    // A full custom-resource list keeps kind/apiVersion on its items.
    let (_, full) = send(http.get(url(
        &server,
        "/apis/batch.volcano.sh/v1alpha1/namespaces/capture/jobs",
    )))
    .await;
    assert_eq!(full["items"][0]["kind"], "Job");
    assert_eq!(full["kind"], "JobList");
}

#[tokio::test]
async fn kubectl_table_requests_fall_back_to_json() {
    let server = four_jobs().await;
    let accept = "application/json;as=Table;v=v1;g=meta.k8s.io,application/json;as=Table;v=v1beta1;g=meta.k8s.io,application/json";
    // Jobs have the real server's Table; a kind without printer columns answers its list.
    let (code, body) = send(client().get(url(&server, JOBS)).header("accept", accept)).await;
    assert_eq!(code, 200);
    assert_eq!(body["kind"], "Table");
    let (code, body) = send(
        client()
            .get(url(&server, "/api/v1/configmaps"))
            .header("accept", accept),
    )
    .await;
    assert_eq!(code, 200);
    assert_eq!(body["kind"], "ConfigMapList");
}

#[tokio::test]
async fn list_option_combinations_the_real_server_refuses() {
    let server = four_jobs().await;
    let http = client();
    let (code, body) =
        send(http.get(url(&server, &format!("{JOBS}?resourceVersionMatch=Exact")))).await;
    assert_eq!(code, 422);
    assert_eq!(
        body["message"],
        "ListOptions.meta.k8s.io \"\" is invalid: resourceVersionMatch: Forbidden: resourceVersionMatch is forbidden unless resourceVersion is provided"
    );
    let (_, page) = send(http.get(url(&server, &format!("{JOBS}?limit=1")))).await;
    let token = page["metadata"]["continue"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    let (code, body) = send(http.get(url(
        &server,
        &format!("{JOBS}?limit=1&continue={token}&resourceVersion=5"),
    )))
    .await;
    assert_eq!(code, 400);
    assert_eq!(
        body["message"],
        "specifying resource version is not allowed when using continue"
    );
    let (code, _) = send(
        http.post(url(&server, "/apis/batch/v1/jobs"))
            .json(&job("x")),
    )
    .await;
    assert_eq!(code, 405);
}

/// Field selectors on Events, as `kubectl describe` sends them (exchanges 124–127): the Events
/// captured from the real server are created here and asked for with the captured requests.
#[tokio::test]
async fn events_select_on_their_involved_object_like_exchanges_124_to_127() {
    let server = start(SimConfig::default()).await;
    let events = kube_gc::sim::Gvr::new("", "v1", "events");
    let namespaces = kube_gc::sim::Gvr::new("", "v1", "namespaces");
    let namespace = json!({"apiVersion": "v1", "kind": "Namespace",
        "metadata": {"name": "capture-protobuf"}});
    server.create(&namespaces, namespace).unwrap();
    for prefix in ["124-", "125-"] {
        for item in exchange(prefix)["response"]["body"]["items"]
            .as_array()
            .unwrap()
        {
            let mut event = item.clone();
            event["apiVersion"] = json!("v1");
            event["kind"] = json!("Event");
            let name = &event["metadata"]["name"];
            let namespace = &event["metadata"]["namespace"];
            event["metadata"] = json!({"name": name, "namespace": namespace});
            server.create(&events, event).unwrap();
        }
    }
    let http = client();
    for prefix in ["124-", "125-", "126-", "127-"] {
        let captured = exchange(prefix);
        let path = captured["request"]["path"].as_str().unwrap();
        let (code, body) = send(http.get(url(&server, path))).await;
        let real = &captured["response"];
        assert_eq!(
            u64::from(code),
            real["status"].as_u64().unwrap(),
            "{prefix}: {body}"
        );
        if code == 200 {
            assert_eq!(names(&body), names(&real["body"]), "{prefix}");
        } else {
            assert_eq!(body, real["body"], "{prefix}");
        }
    }
}
