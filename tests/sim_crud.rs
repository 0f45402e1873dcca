//! Create, read, update, patch and delete over HTTP, compared with the real server's captures.

mod sim_support;

use kube_gc::sim::SimConfig;
use serde_json::{json, Value};
use sim_support::*;

const JOBS: &str = "/apis/batch/v1/namespaces/capture/jobs";
const CONFIGMAPS: &str = "/api/v1/namespaces/capture/configmaps";

fn request_body(prefix: &str) -> Value {
    exchange(prefix)["request"]["body"].clone()
}

#[tokio::test]
async fn create_then_create_again_matches_exchanges_09_and_10() {
    let server = start(SimConfig::default()).await;
    let http = client();
    let (code, created) = send(http.post(url(&server, JOBS)).json(&request_body("09-"))).await;
    assert_eq!(code, 201);
    let real = captured_body("09-");
    assert_eq!(created["kind"], real["kind"]);
    assert_eq!(created["apiVersion"], real["apiVersion"]);
    for field in ["name", "namespace", "generation", "labels"] {
        assert_eq!(
            created["metadata"][field], real["metadata"][field],
            "metadata.{field}"
        );
    }
    for field in ["uid", "resourceVersion", "creationTimestamp"] {
        assert!(
            created["metadata"][field].is_string(),
            "metadata.{field} is set"
        );
    }
    assert_eq!(created["status"], json!({}));

    let (code, again) = send(http.post(url(&server, JOBS)).json(&request_body("10-"))).await;
    assert_eq!(code, 409);
    assert_eq!(again, captured_body("10-"));
}

#[tokio::test]
async fn get_missing_and_namespace_missing_are_404s() {
    let server = start(SimConfig::default()).await;
    let http = client();
    let (code, body) = send(http.get(url(&server, &format!("{JOBS}/nope")))).await;
    assert_eq!(code, 404);
    assert_eq!(body, captured_body("13-"));

    let (code, body) = send(
        http.post(url(&server, "/apis/batch/v1/namespaces/missing/jobs"))
            .json(&json!({"metadata": {"name": "x"}})),
    )
    .await;
    assert_eq!(code, 404);
    assert_eq!(body["message"], "namespaces \"missing\" not found");

    // A body naming another namespace than the URL is a bad request.
    let (code, body) = send(
        http.post(url(&server, "/apis/batch/v1/namespaces/default/jobs"))
            .json(&job("x")),
    )
    .await;
    assert_eq!(code, 400);
    assert_eq!(
        body["message"],
        "the namespace of the provided object does not match the namespace sent on the request"
    );

    // An unknown resource of a served group is a NotFound Status; anything under a group
    // nothing serves, the not-found handler's plain text (exchanges 65 and 66).
    let (code, body) = send(http.get(url(&server, "/apis/batch/v1/things"))).await;
    assert_eq!(code, 404);
    assert_eq!(body["reason"], "NotFound");
    let response = http
        .get(url(&server, "/apis/nothing.example/v1/things"))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 404);
    assert_eq!(response.text().await.unwrap(), "404 page not found\n");
}

#[tokio::test]
async fn generate_name_gets_a_random_suffix_like_exchange_45() {
    let server = start(SimConfig::default()).await;
    let (code, body) = send(
        client()
            .post(url(&server, "/api/v1/namespaces/capture/events"))
            .json(&request_body("45-")),
    )
    .await;
    assert_eq!(code, 201);
    let name = body["metadata"]["name"].as_str().unwrap_or_default();
    assert!(
        name.starts_with("dependent.") && name.len() == "dependent.nqkg7".len(),
        "{name}"
    );
    assert_eq!(body["metadata"]["generateName"], "dependent.");
    assert!(
        body["metadata"].get("generation").is_none(),
        "events have no generation"
    );
}

#[tokio::test]
async fn invalid_owner_reference_is_422_like_exchange_35() {
    let server = start(SimConfig::default()).await;
    let (code, body) = send(
        client()
            .post(url(&server, CONFIGMAPS))
            .json(&request_body("35-")),
    )
    .await;
    assert_eq!(code, 422);
    assert_eq!(body, captured_body("35-"));
}

#[tokio::test]
async fn stale_update_is_409_like_exchange_36_and_no_op_writes_keep_the_version() {
    let server = start(SimConfig::default()).await;
    let http = client();
    let owner = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "dependent"}, "data": {"k": "v"}});
    let (_, created) = send(http.post(url(&server, CONFIGMAPS)).json(&owner)).await;
    let mut changed = created.clone();
    changed["data"]["k"] = json!("w");
    let path = url(&server, &format!("{CONFIGMAPS}/dependent"));
    let (code, updated) = send(http.put(&path).json(&changed)).await;
    assert_eq!(code, 200);
    assert!(rv(&updated) > rv(&created));

    // The same stale body again: conflict, as in exchange 36.
    let (code, body) = send(http.put(&path).json(&changed)).await;
    assert_eq!(code, 409);
    assert_eq!(body, captured_body("36-"));

    // Writing what is already stored changes nothing.
    let before = server.resource_version();
    let (code, same) = send(http.put(&path).json(&updated)).await;
    assert_eq!(code, 200);
    assert_eq!(rv(&same), rv(&updated));
    assert_eq!(server.resource_version(), before);
}

#[tokio::test]
async fn a_body_uid_that_differs_is_a_conflict_on_put_and_invalid_on_patch() {
    let server = start(SimConfig::default()).await;
    let http = client();
    let cm = json!({"metadata": {"name": "dependent"}, "data": {"k": "v"}});
    let (_, created) = send(http.post(url(&server, CONFIGMAPS)).json(&cm)).await;
    let other = "00000000-0000-0000-0000-000000000000";
    let path = url(&server, &format!("{CONFIGMAPS}/dependent"));
    // A PUT makes the body's uid a storage precondition: 409.
    let mut replaced = created.clone();
    replaced["metadata"]["uid"] = json!(other);
    let (code, body) = send(http.put(&path).json(&replaced)).await;
    assert_eq!(code, 409);
    assert_eq!(body["reason"], "Conflict");
    assert!(body["message"]
        .as_str()
        .is_some_and(|m| m.contains("Precondition failed: UID in precondition")));
    // A PATCH changing it is refused as a change of an immutable field, cause listed twice,
    // as a real server answers it (exchanges 179 and 183, on Pods; the same on ConfigMaps).
    let patch = json!({"metadata": {"uid": other}});
    let (code, body) = send(
        http.patch(&path)
            .header("content-type", "application/merge-patch+json")
            .json(&patch),
    )
    .await;
    assert_eq!(code, 422);
    assert_eq!(body["reason"], "Invalid");
    let causes = body["details"]["causes"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    assert_eq!(causes.len(), 2);
    assert_eq!(causes[0]["field"], "metadata.uid");
    assert_eq!(
        body["message"],
        format!("ConfigMap \"dependent\" is invalid: metadata.uid: Invalid value: \"{other}\": field is immutable")
    );
}

#[tokio::test]
async fn patches_of_each_kind_like_exchanges_37_to_39_and_49() {
    let server = start(SimConfig::default()).await;
    let http = client();
    for name in ["owner", "dependent"] {
        let cm = json!({"metadata": {"name": name, "ownerReferences": [
            {"apiVersion": "v1", "kind": "ConfigMap", "name": "x", "uid": "u-1"}]}, "data": {"k": "v"}});
        send(http.post(url(&server, CONFIGMAPS)).json(&cm)).await;
    }
    let dependent = url(&server, &format!("{CONFIGMAPS}/dependent"));
    let json_patch = |body: Value| {
        http.patch(&dependent)
            .header("content-type", "application/json-patch+json")
            .json(&body)
    };
    let (code, body) = send(json_patch(request_body("37-"))).await;
    assert_eq!(code, 422);
    assert_eq!(body, captured_body("37-"));

    let current = server
        .get(&configmaps(), Some("capture"), "dependent")
        .unwrap_or_default();
    let guarded = json!([
        {"op": "test", "path": "/metadata/uid", "value": current["metadata"]["uid"]},
        {"op": "remove", "path": "/metadata/ownerReferences/0"}]);
    let (code, body) = send(json_patch(guarded)).await;
    assert_eq!(code, 200);
    // Exchange 38: the emptied list is omitted, as Go's `omitempty` writes it.
    assert!(body["metadata"].get("ownerReferences").is_none(), "{body}");

    let (code, body) = send(
        http.patch(url(&server, &format!("{CONFIGMAPS}/owner")))
            .header("content-type", "application/strategic-merge-patch+json")
            .json(&request_body("39-")),
    )
    .await;
    assert_eq!(code, 200);
    assert_eq!(body["metadata"]["labels"], json!({"s": "1"}));

    let (code, _) = send(
        http.post(url(
            &server,
            "/apis/batch.volcano.sh/v1alpha1/namespaces/capture/jobs",
        ))
        .json(&request_body("47-")),
    )
    .await;
    assert_eq!(code, 201);
    let (code, body) = send(
        http.patch(url(
            &server,
            "/apis/batch.volcano.sh/v1alpha1/namespaces/capture/jobs/vc",
        ))
        .header("content-type", "application/strategic-merge-patch+json")
        .json(&request_body("49-")),
    )
    .await;
    assert_eq!(code, 415);
    assert_eq!(body, captured_body("49-"));
}

#[tokio::test]
async fn status_subresource_like_exchanges_11_and_48() {
    let server = start(SimConfig::default()).await;
    let http = client();
    create_job(&server, "pi");
    let (code, body) = send(
        http.patch(url(&server, &format!("{JOBS}/pi/status")))
            .header("content-type", "application/merge-patch+json")
            .json(&request_body("11-")),
    )
    .await;
    assert_eq!(code, 200);
    assert_eq!(body["status"], captured_body("11-")["status"]);
    assert_eq!(body["metadata"]["generation"], 1);

    // The main resource ignores status.
    let mut put = body.clone();
    put["status"] = json!({});
    put["metadata"]["labels"]["more"] = json!("x");
    let (code, body) = send(http.put(url(&server, &format!("{JOBS}/pi"))).json(&put)).await;
    assert_eq!(code, 200);
    assert_eq!(body["status"]["succeeded"], 1);
    assert_eq!(body["metadata"]["labels"]["more"], "x");

    let (code, _) = send(
        http.post(url(
            &server,
            "/apis/batch.volcano.sh/v1alpha1/namespaces/capture/jobs",
        ))
        .json(&request_body("47-")),
    )
    .await;
    assert_eq!(code, 201);
    let (code, body) = send(
        http.patch(url(
            &server,
            "/apis/batch.volcano.sh/v1alpha1/namespaces/capture/jobs/vc/status",
        ))
        .header("content-type", "application/merge-patch+json")
        .json(&request_body("48-")),
    )
    .await;
    assert_eq!(code, 200);
    assert_eq!(body["status"], captured_body("48-")["status"]);
}

#[tokio::test]
async fn deletes_like_exchanges_24_to_32() {
    let server = start(SimConfig::default()).await;
    let http = client();
    for name in ["pi", "list-a", "list-b", "list-c"] {
        create_job(&server, name);
    }
    let path = |name: &str| url(&server, &format!("{JOBS}/{name}"));

    let (code, body) = send(http.delete(path("pi")).json(&request_body("24-"))).await;
    assert_eq!(code, 409);
    let mut expected = captured_body("24-");
    let mut actual = body.clone();
    // The record's uid differs from the capture's.
    for v in [&mut expected, &mut actual] {
        let message = v["message"].as_str().unwrap_or_default();
        let cut = message.find("UID in record").unwrap_or(0);
        v["message"] = json!(message[..cut].to_string());
    }
    assert_eq!(actual, expected);

    let uid = server
        .get(&jobs(), Some("capture"), "pi")
        .unwrap_or_default()["metadata"]["uid"]
        .clone();
    let foreground = json!({"propagationPolicy": "Foreground", "preconditions": {"uid": uid}});
    let (code, body) = send(http.delete(path("pi")).json(&foreground)).await;
    assert_eq!(code, 200);
    assert_eq!(
        body["metadata"]["finalizers"],
        json!(["foregroundDeletion"])
    );
    assert_eq!(body["metadata"]["deletionGracePeriodSeconds"], 0);
    assert_eq!(body["metadata"]["generation"], 2);
    assert!(body["metadata"]["deletionTimestamp"].is_string());

    let (code, body) = send(
        http.patch(path("pi"))
            .header("content-type", "application/merge-patch+json")
            .json(&request_body("27-")),
    )
    .await;
    assert_eq!(code, 200);
    assert!(body["metadata"].get("finalizers").is_none());
    let (code, body) = send(http.get(path("pi"))).await;
    assert_eq!(code, 404);
    assert_eq!(body, captured_body("28-"));

    let (code, body) = send(http.delete(path("list-a")).json(&request_body("29-"))).await;
    assert_eq!(code, 200);
    let mut expected = captured_body("29-");
    let mut actual = body;
    redact(&mut expected, &["uid"]);
    redact(&mut actual, &["uid"]);
    assert_eq!(actual, expected);

    let (code, body) = send(http.delete(path("list-b")).json(&request_body("30-"))).await;
    assert_eq!(code, 200);
    assert_eq!(body["metadata"]["finalizers"], json!(["orphan"]));

    let response = http.delete(path("list-c")).send().await;
    let response = match response {
        Ok(r) => r,
        Err(e) => panic!("{e}"),
    };
    let warning = response
        .headers()
        .get("warning")
        .and_then(|v| v.to_str().ok())
        .map(str::to_string);
    assert_eq!(
        warning.as_deref(),
        exchange("32-")["response"]["headers"]["warning"].as_str()
    );
    let (code, body) = status_and_json(response).await;
    assert_eq!(code, 200);
    assert_eq!(body["metadata"]["finalizers"], json!(["orphan"]));

    let (code, body) = send(http.delete(path("nope")).json(&request_body("31-"))).await;
    assert_eq!(code, 404);
    assert_eq!(body, captured_body("31-"));

    // Foreground delete of a custom resource (exchange 51).
    send(
        http.post(url(
            &server,
            "/apis/batch.volcano.sh/v1alpha1/namespaces/capture/jobs",
        ))
        .json(&request_body("47-")),
    )
    .await;
    let (code, body) = send(
        http.delete(url(
            &server,
            "/apis/batch.volcano.sh/v1alpha1/namespaces/capture/jobs/vc",
        ))
        .json(&json!({"propagationPolicy": "Foreground"})),
    )
    .await;
    assert_eq!(code, 200);
    assert_eq!(
        body["metadata"]["finalizers"],
        json!(["foregroundDeletion"])
    );
    assert_eq!(body["metadata"]["generation"], 2);
}

#[tokio::test]
async fn deleting_twice_switches_gc_finalizers_and_new_finalizers_are_refused() {
    let server = start(SimConfig::default()).await;
    let http = client();
    create_job(&server, "pi");
    let path = url(&server, &format!("{JOBS}/pi"));
    let (_, first) = send(
        http.delete(&path)
            .json(&json!({"propagationPolicy": "Orphan"})),
    )
    .await;
    let (code, second) = send(
        http.delete(&path)
            .json(&json!({"propagationPolicy": "Foreground"})),
    )
    .await;
    assert_eq!(code, 200);
    assert_eq!(
        second["metadata"]["finalizers"],
        json!(["foregroundDeletion"])
    );
    assert_eq!(
        second["metadata"]["deletionTimestamp"],
        first["metadata"]["deletionTimestamp"]
    );

    let (code, body) = send(
        http.patch(&path)
            .header("content-type", "application/merge-patch+json")
            .json(&json!({"metadata": {"finalizers": ["foregroundDeletion", "example.com/x"]}})),
    )
    .await;
    assert_eq!(code, 422);
    assert_eq!(body["details"]["causes"][0]["field"], "metadata.finalizers");
}

#[tokio::test]
async fn dry_run_changes_nothing() {
    let server = start(SimConfig::default()).await;
    let http = client();
    let before = server.resource_version();
    let (code, body) = send(
        http.post(url(&server, &format!("{JOBS}?dryRun=All")))
            .json(&job("dry")),
    )
    .await;
    assert_eq!(code, 201);
    assert_eq!(body["metadata"]["name"], "dry");
    create_job(&server, "real");
    let after_create = server.resource_version();
    let (code, _) = send(
        http.delete(url(&server, &format!("{JOBS}/real?dryRun=All")))
            .json(&json!({"propagationPolicy": "Background"})),
    )
    .await;
    assert_eq!(code, 200);
    assert_eq!(server.resource_version(), after_create);
    assert_eq!(after_create, before + 1);
    assert!(server.get(&jobs(), Some("capture"), "dry").is_err());
}

#[tokio::test]
async fn a_configured_token_is_required_like_exchange_41() {
    let server = start(SimConfig::default().with_token("s3cret")).await;
    let http = client();
    let (code, body) = send(
        http.get(url(&server, "/api/v1/namespaces"))
            .bearer_auth("wrong"),
    )
    .await;
    assert_eq!(code, 401);
    assert_eq!(body, captured_body("41-"));
    let (code, _) = send(http.get(url(&server, "/api/v1/namespaces"))).await;
    assert_eq!(code, 401);
    let (code, body) = send(
        http.get(url(&server, "/api/v1/namespaces"))
            .bearer_auth("s3cret"),
    )
    .await;
    assert_eq!(code, 200);
    assert_eq!(body["kind"], "NamespaceList");
}

#[tokio::test]
async fn lease_renewals_conflict_like_exchanges_42_to_44() {
    let server = start(SimConfig::default()).await;
    let http = client();
    let leases = "/apis/coordination.k8s.io/v1/namespaces/capture/leases";
    let (code, created) = send(http.post(url(&server, leases)).json(&request_body("42-"))).await;
    assert_eq!(code, 201);
    assert_eq!(created["spec"], captured_body("42-")["spec"]);
    let mut renew = created.clone();
    renew["spec"]["renewTime"] = json!("2026-11-22T00:00:02.000000Z");
    let path = url(&server, &format!("{leases}/kube-gc"));
    let (code, _) = send(http.put(&path).json(&renew)).await;
    assert_eq!(code, 200);
    let (code, body) = send(http.put(&path).json(&renew)).await;
    assert_eq!(code, 409);
    assert_eq!(body, captured_body("44-"));
}

#[tokio::test]
async fn namespace_creation_like_exchange_08() {
    // Without the `capture` namespace the other tests start with.
    let server = match kube_gc::sim::SimServer::start(SimConfig::default()).await {
        Ok(server) => server,
        Err(e) => panic!("{e}"),
    };
    let (code, body) = send(
        client()
            .post(url(&server, "/api/v1/namespaces"))
            .json(&request_body("08-")),
    )
    .await;
    assert_eq!(code, 201);
    let real = captured_body("08-");
    for field in ["kind", "apiVersion", "spec", "status"] {
        assert_eq!(body[field], real[field], "{field}");
    }
    assert_eq!(body["metadata"]["labels"], real["metadata"]["labels"]);
    assert!(body["metadata"].get("namespace").is_none());
    let (code, _) = send(client().get(url(&server, "/api/v1/namespaces/capture"))).await;
    assert_eq!(code, 200);
}

#[tokio::test]
async fn a_resource_version_in_a_patch_is_a_precondition() {
    let server = start(SimConfig::default()).await;
    let created = create_job(&server, "pi");
    let patch = |rv: String| {
        client()
            .patch(url(&server, &format!("{JOBS}/pi")))
            .header("content-type", "application/merge-patch+json")
            .json(&json!({"metadata": {"resourceVersion": rv, "labels": {"x": "y"}}}))
    };
    let (code, body) = send(patch("1".to_string())).await;
    assert_eq!(code, 409);
    assert_eq!(body["reason"], "Conflict");
    let (code, body) = send(patch(rv(&created).to_string())).await;
    assert_eq!(code, 200);
    assert_eq!(body["metadata"]["labels"]["x"], "y");
    assert!(rv(&body) > rv(&created));
}

#[tokio::test]
async fn delete_resource_version_precondition_and_query_parameters() {
    let server = start(SimConfig::default()).await;
    let created = create_job(&server, "pi");
    let http = client();
    let path = url(&server, &format!("{JOBS}/pi"));
    let stale =
        json!({"preconditions": {"resourceVersion": "1"}, "propagationPolicy": "Background"});
    let (code, body) = send(http.delete(&path).json(&stale)).await;
    assert_eq!(code, 409);
    assert_eq!(
        body["message"],
        format!(
            "Operation cannot be fulfilled on Job.batch \"pi\": the ResourceVersion in the precondition (1) does not match the ResourceVersion in record ({}). The object might have been modified",
            rv(&created)
        )
    );
    let (code, body) = send(http.delete(format!("{path}?propagationPolicy=Sideways"))).await;
    assert_eq!(code, 422);
    assert_eq!(
        body["details"]["causes"][0]["reason"],
        "FieldValueNotSupported"
    );
    let (code, body) = send(http.delete(format!("{path}?propagationPolicy=Background"))).await;
    assert_eq!(code, 200);
    assert_eq!(body["status"], "Success");
}

#[tokio::test]
async fn malformed_bodies_and_missing_objects() {
    let server = start(SimConfig::default()).await;
    let http = client();
    let (code, body) = send(
        http.post(url(&server, JOBS))
            .header("content-type", "application/json")
            .body("{not json"),
    )
    .await;
    assert_eq!(code, 400);
    assert_eq!(body["reason"], "BadRequest");
    let (code, body) = send(
        http.put(url(&server, &format!("{JOBS}/nope")))
            .json(&job("nope")),
    )
    .await;
    assert_eq!(code, 404);
    assert_eq!(body, captured_body("13-"));
    let (code, body) = send(
        http.put(url(&server, &format!("{JOBS}/other")))
            .json(&job("nope")),
    )
    .await;
    assert_eq!(code, 400);
    assert_eq!(
        body["message"],
        "the name of the object (nope) does not match the name on the URL (other)"
    );
    create_job(&server, "pi");
    let (code, _) = send(
        http.patch(url(&server, &format!("{JOBS}/pi")))
            .header("content-type", "application/apply-patch+yaml")
            .body("metadata: {}"),
    )
    .await;
    assert_eq!(code, 415);
}

#[tokio::test]
async fn metadata_a_real_server_could_not_decode_is_refused_with_400() {
    let server = start(SimConfig::default()).await;
    let http = client();

    let mut numeric_label = job("numeric-label");
    numeric_label["metadata"]["labels"] = json!({"team": 5});
    let (code, status) = send(http.post(url(&server, JOBS)).json(&numeric_label)).await;
    assert_eq!(code, 400);
    assert_eq!(status["reason"], "BadRequest");
    assert_eq!(
        status["message"],
        "Job in version \"v1\" cannot be handled as a Job: json: cannot unmarshal number into \
         Go struct field ObjectMeta.metadata.labels of type string"
    );

    create_job(&server, "patched");
    let patch = http
        .patch(url(&server, &format!("{JOBS}/patched")))
        .header("Content-Type", "application/merge-patch+json")
        .body(r#"{"metadata":{"finalizers":"not-a-list"}}"#);
    let (code, status) = send(patch).await;
    assert_eq!(code, 400);
    assert!(
        status["message"]
            .as_str()
            .is_some_and(|m| m.contains("ObjectMeta.metadata.finalizers of type []string")),
        "{status}"
    );
    let stored = server
        .get(&jobs(), Some("capture"), "patched")
        .expect("still there");
    assert!(
        stored["metadata"].get("finalizers").is_none(),
        "nothing was written"
    );
}

#[tokio::test]
async fn a_pod_delete_answers_with_the_deleted_pod_like_exchange_67_and_68() {
    let server = start(SimConfig::default()).await;
    let http = client();
    let pods = "/api/v1/namespaces/capture/pods";
    let pod = json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "gone"},
        "spec": {"restartPolicy": "Never", "containers": [{"name": "c", "image": "busybox"}]}});
    let (code, created) = send(http.post(url(&server, pods)).json(&pod)).await;
    assert_eq!(code, 201);
    let created_rv: u64 = created["metadata"]["resourceVersion"]
        .as_str()
        .unwrap()
        .parse()
        .unwrap();
    let (code, answer) = send(
        http.delete(url(&server, &format!("{pods}/gone")))
            .json(&request_body("67-")),
    )
    .await;
    let real = exchange("67-");
    assert_eq!(code, real["response"]["status"].as_u64().unwrap() as u16);
    let real = &real["response"]["body"];
    assert_eq!(answer["kind"], real["kind"]);
    assert_eq!(answer["metadata"]["deletionGracePeriodSeconds"], 0);
    assert!(
        answer["metadata"]["deletionTimestamp"].is_string(),
        "{answer}"
    );
    let rv: u64 = answer["metadata"]["resourceVersion"]
        .as_str()
        .unwrap()
        .parse()
        .unwrap();
    assert!(rv > created_rv, "at the deletion's own resourceVersion");
    // A watch sees what exchange 68 shows: MODIFIED (the two fields written), then DELETED
    // one revision later, both carrying them.
    let body = http
        .get(url(
            &server,
            &format!("{pods}?watch=1&resourceVersion={created_rv}&timeoutSeconds=1"),
        ))
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    let seen: Vec<Value> = body
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let real: Vec<Value> = exchange("68-")["response"]["events"]
        .as_array()
        .unwrap()
        .clone();
    let shape = |events: &[Value]| -> Vec<(String, Value, bool)> {
        events
            .iter()
            .map(|e| {
                let meta = &e["object"]["metadata"];
                (
                    e["type"].as_str().unwrap().to_owned(),
                    meta["deletionGracePeriodSeconds"].clone(),
                    meta["deletionTimestamp"].is_string(),
                )
            })
            .collect()
    };
    assert_eq!(shape(&seen), shape(&real), "{body}");
    let rv = |e: &Value| -> u64 {
        e["object"]["metadata"]["resourceVersion"]
            .as_str()
            .unwrap()
            .parse()
            .unwrap()
    };
    assert_eq!(rv(&seen[1]), rv(&seen[0]) + 1);
    // Otherwise the two objects are the same (the server writes the DELETED line from the
    // MODIFIED one's text, handlers/watch_line.rs).
    let mut final_state = seen[1]["object"].clone();
    final_state["metadata"]["resourceVersion"] =
        seen[0]["object"]["metadata"]["resourceVersion"].clone();
    assert_eq!(final_state, seen[0]["object"]);
    assert_eq!(
        rv(&seen[1]).to_string(),
        answer["metadata"]["resourceVersion"].as_str().unwrap()
    );
    // A Job still answers a Status (exchange 27).
    let (code, _) = send(http.post(url(&server, JOBS)).json(&request_body("09-"))).await;
    assert_eq!(code, 201);
    let name = request_body("09-")["metadata"]["name"]
        .as_str()
        .unwrap()
        .to_owned();
    let (code, status) = send(
        http.delete(url(&server, &format!("{JOBS}/{name}")))
            .json(&json!({"propagationPolicy": "Background"})),
    )
    .await;
    assert_eq!(code, 200);
    assert_eq!(status["kind"], "Status");
}
