//! Every verb of `Api<K>` against the simulated API server over a real socket: what the client
//! sends (method, path, query, headers, body — read back from the server's request journal) and
//! what it makes of the answers.

mod client_support;

use client_support::{configmap, configmaps, job, jobs, last_request, seed, start};
use kube_gc::api::{
    DeleteOptions, Job, PartialObjectMetadata, ACCEPT_PARTIAL_OBJECT_METADATA,
    ACCEPT_PARTIAL_OBJECT_METADATA_LIST,
};
use kube_gc::client::{Api, DeleteResponse, ListParams, Patch, PostParams, ResourceRef};
use serde_json::{json, Value};

fn configmap_ref() -> ResourceRef {
    ResourceRef::new("", "v1", "configmaps", "ConfigMap", true)
}

fn volcano_jobs() -> ResourceRef {
    ResourceRef::new("batch.volcano.sh", "v1alpha1", "jobs", "Job", true)
}

#[tokio::test]
async fn get_decodes_a_typed_object_and_sends_json_accept_and_user_agent() {
    let h = start().await;
    seed(&h.sim, &jobs(), job("default", "pi"));
    let api: Api<Job> = Api::namespaced(h.client.clone(), "default");

    let got = api.get("pi").await.unwrap();
    assert_eq!(got.metadata.name.as_deref(), Some("pi"));
    assert_eq!(got.types.kind, "Job");

    let request = last_request(&h.sim);
    assert_eq!(request.method, "GET");
    assert_eq!(request.path, "/apis/batch/v1/namespaces/default/jobs/pi");
    assert_eq!(request.header("accept"), Some("application/json"));
    assert_eq!(
        request.header("user-agent"),
        Some(concat!("kube-gc/", env!("CARGO_PKG_VERSION")))
    );
    assert_eq!(request.status, 200);

    assert_eq!(api.get_opt("absent").await.unwrap(), None);
    assert!(api.get("absent").await.unwrap_err().is_not_found());
}

#[tokio::test]
async fn create_then_create_again_is_already_exists() {
    let h = start().await;
    let api: Api<Value> = Api::dynamic(h.client.clone(), configmap_ref(), Some("default"));

    let created = api
        .create(&PostParams::default(), &configmap("default", "cm"))
        .await
        .unwrap();
    assert!(created["metadata"]["uid"].is_string());
    assert!(created["metadata"]["resourceVersion"].is_string());
    let request = last_request(&h.sim);
    assert_eq!(
        (request.method.as_str(), request.path.as_str()),
        ("POST", "/api/v1/namespaces/default/configmaps")
    );
    assert_eq!(request.header("content-type"), Some("application/json"));
    assert_eq!(request.body.as_ref().unwrap()["data"]["k"], "v");

    let again = api
        .create(&PostParams::default(), &configmap("default", "cm"))
        .await
        .unwrap_err();
    assert!(again.is_already_exists(), "{again}");
    assert_eq!(again.code(), Some(409));
}

#[tokio::test]
async fn dry_run_create_persists_nothing() {
    let h = start().await;
    let api: Api<Value> = Api::dynamic(h.client.clone(), configmap_ref(), Some("default"));
    let params = PostParams {
        dry_run: true,
        field_manager: Some("kube-gc".into()),
    };
    api.create(&params, &configmap("default", "dry"))
        .await
        .unwrap();
    let request = last_request(&h.sim);
    assert_eq!(request.query_value("dryRun"), Some("All"));
    assert_eq!(request.query_value("fieldManager"), Some("kube-gc"));
    assert_eq!(api.get_opt("dry").await.unwrap(), None);
}

#[tokio::test]
async fn replace_is_conditional_on_the_resource_version() {
    let h = start().await;
    let created = seed(&h.sim, &configmaps(), configmap("default", "cm"));
    let api: Api<Value> = Api::dynamic(h.client.clone(), configmap_ref(), Some("default"));

    let mut changed = created.clone();
    changed["data"]["k"] = json!("v2");
    let replaced = api
        .replace("cm", &PostParams::default(), &changed)
        .await
        .unwrap();
    assert_eq!(replaced["data"]["k"], "v2");
    assert_ne!(
        replaced["metadata"]["resourceVersion"],
        created["metadata"]["resourceVersion"]
    );
    assert_eq!(last_request(&h.sim).method, "PUT");

    // `changed` still carries the old resourceVersion.
    let stale = api
        .replace("cm", &PostParams::default(), &changed)
        .await
        .unwrap_err();
    assert!(stale.is_conflict(), "{stale}");
    assert!(!stale.is_retryable());
}

#[tokio::test]
async fn patches_are_sent_with_their_content_types() {
    let h = start().await;
    seed(&h.sim, &configmaps(), configmap("default", "cm"));
    let api: Api<Value> = Api::dynamic(h.client.clone(), configmap_ref(), Some("default"));
    let params = PostParams::default();

    let merged = api
        .patch(
            "cm",
            &params,
            &Patch::Merge(json!({"metadata": {"labels": {"a": "1"}}})),
        )
        .await
        .unwrap();
    assert_eq!(merged["metadata"]["labels"]["a"], "1");
    let request = last_request(&h.sim);
    assert_eq!(request.method, "PATCH");
    assert_eq!(
        request.header("content-type"),
        Some("application/merge-patch+json")
    );

    let json_patched = api
        .patch(
            "cm",
            &params,
            &Patch::Json(json!([{"op": "replace", "path": "/data/k", "value": "j"}])),
        )
        .await
        .unwrap();
    assert_eq!(json_patched["data"]["k"], "j");
    assert_eq!(
        last_request(&h.sim).header("content-type"),
        Some("application/json-patch+json")
    );

    let strategic = api
        .patch(
            "cm",
            &params,
            &Patch::Strategic(json!({"data": {"s": "x"}})),
        )
        .await
        .unwrap();
    assert_eq!(strategic["data"]["s"], "x");
    assert_eq!(
        last_request(&h.sim).header("content-type"),
        Some("application/strategic-merge-patch+json")
    );

    let failed_test = api
        .patch(
            "cm",
            &params,
            &Patch::Json(json!([{"op": "test", "path": "/data/k", "value": "nope"}])),
        )
        .await
        .unwrap_err();
    assert!(failed_test.is_invalid(), "{failed_test}");
    assert_eq!(failed_test.code(), Some(422));
}

#[tokio::test]
async fn a_strategic_merge_patch_on_a_custom_resource_is_unsupported_media_type() {
    let h = start().await;
    let api: Api<Value> = Api::dynamic(h.client.clone(), volcano_jobs(), Some("default"));
    let vcjob = json!({"apiVersion": "batch.volcano.sh/v1alpha1", "kind": "Job",
        "metadata": {"name": "vc", "namespace": "default"}, "spec": {"minAvailable": 1}});
    api.create(&PostParams::default(), &vcjob).await.unwrap();

    let refused = api
        .patch(
            "vc",
            &PostParams::default(),
            &Patch::Strategic(json!({"metadata": {"labels": {"a": "b"}}})),
        )
        .await
        .unwrap_err();
    assert!(refused.is_unsupported_media_type(), "{refused}");
    // The fallback the garbage collector uses works.
    let merged = api
        .patch(
            "vc",
            &PostParams::default(),
            &Patch::Merge(json!({"metadata": {"labels": {"a": "b"}}})),
        )
        .await
        .unwrap();
    assert_eq!(merged["metadata"]["labels"]["a"], "b");
}

#[tokio::test]
async fn delete_answers_the_object_while_finalizers_wait_and_a_status_once_gone() {
    let h = start().await;
    let created = seed(&h.sim, &jobs(), job("default", "fg"));
    seed(&h.sim, &jobs(), job("default", "bg"));
    let api: Api<Job> = Api::namespaced(h.client.clone(), "default");

    let uid = created["metadata"]["uid"].as_str().unwrap().to_owned();
    let foreground = api
        .delete("fg", &DeleteOptions::foreground().with_uid(uid.clone()))
        .await
        .unwrap();
    match foreground {
        DeleteResponse::Pending(job) => {
            assert!(job.metadata.deletion_timestamp.is_some());
            assert!(job
                .metadata
                .finalizers
                .contains(&"foregroundDeletion".to_owned()));
        }
        DeleteResponse::Deleted(status) => panic!("expected the object, got {status:?}"),
    }
    let request = last_request(&h.sim);
    assert_eq!(request.method, "DELETE");
    assert_eq!(request.header("content-type"), Some("application/json"));
    assert_eq!(
        request.body,
        Some(json!({"preconditions": {"uid": uid}, "propagationPolicy": "Foreground"}))
    );

    let background = api
        .delete("bg", &DeleteOptions::background())
        .await
        .unwrap();
    match background {
        DeleteResponse::Deleted(status) => assert!(status.is_success()),
        DeleteResponse::Pending(job) => panic!("expected a Status, got {job:?}"),
    }
    assert!(api
        .delete("bg", &DeleteOptions::background())
        .await
        .unwrap_err()
        .is_not_found());
}

#[tokio::test]
async fn delete_preconditions_that_do_not_hold_are_conflicts() {
    let h = start().await;
    seed(&h.sim, &jobs(), job("default", "j"));
    let api: Api<Job> = Api::namespaced(h.client.clone(), "default");

    let wrong_uid = api
        .delete(
            "j",
            &DeleteOptions::background().with_uid("00000000-0000-0000-0000-000000000000"),
        )
        .await
        .unwrap_err();
    assert!(wrong_uid.is_conflict(), "{wrong_uid}");
    let wrong_rv = api
        .delete("j", &DeleteOptions::background().with_resource_version("1"))
        .await
        .unwrap_err();
    assert!(wrong_rv.is_conflict(), "{wrong_rv}");
    assert!(api.get_opt("j").await.unwrap().is_some());
}

#[tokio::test]
async fn the_status_subresource_changes_only_the_status() {
    let h = start().await;
    seed(&h.sim, &jobs(), job("default", "j"));
    let api: Api<Value> = Api::dynamic(h.client.clone(), ResourceRef::of::<Job>(), Some("default"));

    let mut object = api.get_status("j").await.unwrap();
    assert_eq!(
        last_request(&h.sim).path,
        "/apis/batch/v1/namespaces/default/jobs/j/status"
    );
    object["status"] = json!({"succeeded": 1});
    object["metadata"]["labels"] = json!({"ignored": "yes"});
    let replaced = api
        .replace_status("j", &PostParams::default(), &object)
        .await
        .unwrap();
    assert_eq!(replaced["status"]["succeeded"], 1);
    assert!(replaced["metadata"]["labels"].get("ignored").is_none());
    assert_eq!(last_request(&h.sim).method, "PUT");

    let patched = api
        .patch_status(
            "j",
            &PostParams::default(),
            &Patch::Merge(json!({"status": {"failed": 2}})),
        )
        .await
        .unwrap();
    assert_eq!(patched["status"]["failed"], 2);
    assert_eq!(
        last_request(&h.sim).path,
        "/apis/batch/v1/namespaces/default/jobs/j/status"
    );
}

#[tokio::test]
async fn metadata_only_get_and_list_send_the_partial_object_metadata_accept() {
    let h = start().await;
    for name in ["a", "b"] {
        seed(&h.sim, &jobs(), job("default", name));
    }
    let all: Api<Job> = Api::all(h.client.clone());
    let meta: PartialObjectMetadata = all.within("default").get_metadata("a").await.unwrap();
    assert_eq!(meta.types.kind, "PartialObjectMetadata");
    assert_eq!(meta.metadata.name.as_deref(), Some("a"));
    assert_eq!(
        last_request(&h.sim).header("accept"),
        Some(ACCEPT_PARTIAL_OBJECT_METADATA)
    );

    let list = all.list_metadata(&ListParams::default()).await.unwrap();
    assert_eq!(list.types.kind, "PartialObjectMetadataList");
    assert_eq!(list.items.len(), 2);
    let request = last_request(&h.sim);
    assert_eq!(request.path, "/apis/batch/v1/jobs");
    assert_eq!(
        request.header("accept"),
        Some(ACCEPT_PARTIAL_OBJECT_METADATA_LIST)
    );
}

#[tokio::test]
async fn cluster_scoped_resources_and_selectors() {
    let h = start().await;
    let namespaces: Api<Value> = Api::dynamic(
        h.client.clone(),
        ResourceRef::new("", "v1", "namespaces", "Namespace", false),
        Some("ignored"),
    );
    let all = namespaces.list(&ListParams::default()).await.unwrap();
    let names: Vec<&str> = all
        .items
        .iter()
        .filter_map(|n| n["metadata"]["name"].as_str())
        .collect();
    assert!(names.contains(&"kube-system"), "{names:?}");
    assert_eq!(last_request(&h.sim).path, "/api/v1/namespaces");

    let one = namespaces
        .list(&ListParams::default().with_fields("metadata.name=default"))
        .await
        .unwrap();
    assert_eq!(one.items.len(), 1);
    assert_eq!(
        last_request(&h.sim).query_value("fieldSelector"),
        Some("metadata.name=default")
    );
}
