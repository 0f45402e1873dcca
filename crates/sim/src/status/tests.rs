//! The builders against the captured bodies of a real v1.28 kube-apiserver.

use super::*;

/// The response (status, body, or first decoded watch event) of a captured exchange.
fn captured(prefix: &str) -> (u16, Value) {
    let exchange = kube_gc_fixtures::exchange(prefix);
    let response = &exchange["response"];
    let status = response["status"].as_u64().expect("status") as u16;
    let body = match response.get("body") {
        Some(body) => body.clone(),
        None => response["events"][0].clone(),
    };
    (status, body)
}

fn assert_matches_capture(prefix: &str, built: (StatusCode, Value)) {
    let (status, body) = captured(prefix);
    assert_eq!(built.0.as_u16(), status, "status of exchange {prefix}");
    assert_eq!(built.1, body, "body of exchange {prefix}");
}

fn jobs() -> GroupResource {
    GroupResource::new("batch", "jobs")
}

#[test]
fn group_resource_and_kind_render_like_the_server() {
    assert_eq!(jobs().to_string(), "jobs.batch");
    assert_eq!(
        GroupResource::new("", "configmaps").to_string(),
        "configmaps"
    );
    assert_eq!(GroupKind::new("batch", "Job").to_string(), "Job.batch");
    assert_eq!(GroupKind::new("", "ConfigMap").to_string(), "ConfigMap");
}

#[test]
fn already_exists_matches_exchange_10() {
    assert_matches_capture("10-", already_exists(&jobs(), "pi"));
}

#[test]
fn not_found_matches_exchanges_13_28_31() {
    assert_matches_capture("13-", not_found(&jobs(), "nope"));
    assert_matches_capture("31-", not_found(&jobs(), "nope"));
    let (_, body28) = captured("28-");
    let name = body28["details"]["name"].as_str().expect("name").to_owned();
    assert_matches_capture("28-", not_found(&jobs(), &name));
}

#[test]
fn bad_request_matches_exchange_16() {
    let message = "invalid continue token: continue key is not valid: invalid character '\\u0081' looking for beginning of value";
    assert_matches_capture("16-", bad_request(message));
}

#[test]
fn uid_precondition_matches_exchange_24() {
    let built = precondition_failed_uid(
        &GroupKind::new("batch", "Job"),
        "pi",
        "00000000-0000-0000-0000-000000000000",
        "085ad5ab-19e7-4b4b-9240-0c88f7b0971e",
    );
    assert_matches_capture("24-", built);
}

#[test]
fn rv_precondition_has_the_conflict_shape() {
    let (code, body) = precondition_failed_rv(&GroupKind::new("batch", "Job"), "pi", "5", "7");
    assert_eq!(code, StatusCode::CONFLICT);
    assert_eq!(body["reason"], "Conflict");
    assert_eq!(
        body["details"],
        json!({"name": "pi", "group": "batch", "kind": "Job"})
    );
    assert_eq!(
        body["message"],
        "Operation cannot be fulfilled on Job.batch \"pi\": the ResourceVersion in the precondition (5) does not match the ResourceVersion in record (7). The object might have been modified"
    );
}

#[test]
fn success_deleted_matches_exchange_29() {
    let built = success_deleted(&jobs(), "list-a", "19297836-5c0d-40c2-9153-263638eb844d");
    assert_matches_capture("29-", built);
}

#[test]
fn invalid_matches_exchange_35() {
    let cause = Cause::invalid(
        "metadata.ownerReferences.uid",
        json!(""),
        "uid must not be empty",
    );
    let built = invalid(&GroupKind::new("", "ConfigMap"), "bad", &[cause]);
    assert_matches_capture("35-", built);
}

#[test]
fn invalid_aggregates_several_causes() {
    let causes = [
        Cause::required("metadata.name", "name or generateName is required"),
        Cause::invalid("spec.ttlSecondsAfterFinished", json!(-1), "must be >= 0"),
    ];
    let (code, body) = invalid(&GroupKind::new("batch", "Job"), "x", &causes);
    assert_eq!(code, StatusCode::UNPROCESSABLE_ENTITY);
    assert_eq!(
        body["message"],
        "Job.batch \"x\" is invalid: [metadata.name: Required value: name or generateName is required, spec.ttlSecondsAfterFinished: Invalid value: -1: must be >= 0]"
    );
    assert_eq!(body["details"]["causes"][0]["reason"], "FieldValueRequired");
    assert_eq!(body["details"]["group"], "batch");
}

#[test]
fn repeated_causes_appear_once_in_the_message_but_all_in_details() {
    let cause = Cause::required("metadata.name", "");
    let (_, body) = invalid(
        &GroupKind::new("", "ConfigMap"),
        "",
        &[cause.clone(), cause],
    );
    assert_eq!(
        body["message"],
        "ConfigMap \"\" is invalid: metadata.name: Required value"
    );
    assert_eq!(body["details"]["causes"].as_array().map(Vec::len), Some(2));
    assert_eq!(aggregate_causes(&[]), None);
}

#[test]
fn conflict_modified_matches_exchanges_36_44() {
    let cm = GroupResource::new("", "configmaps");
    assert_matches_capture("36-", conflict_modified(&cm, "dependent"));
    let leases = GroupResource::new("coordination.k8s.io", "leases");
    assert_matches_capture("44-", conflict_modified(&leases, "kube-gc"));
}

#[test]
fn patch_rejected_matches_exchange_37() {
    assert_matches_capture("37-", patch_rejected());
}

#[test]
fn generic_failures_pair_each_code_with_its_reason() {
    assert_matches_capture("37-", generic_failure(StatusCode::UNPROCESSABLE_ENTITY, ""));
    let reasons = [
        (400, "BadRequest"),
        (401, "Unauthorized"),
        (403, "Forbidden"),
        (404, "NotFound"),
        (409, "Conflict"),
        (429, "TooManyRequests"),
        (500, "InternalError"),
        (502, "InternalError"),
        (503, "ServiceUnavailable"),
        (504, "Timeout"),
        (418, "Unknown"),
    ];
    for (code, reason) in reasons {
        let code = StatusCode::from_u16(code).expect("valid code");
        let (answered, body) = generic_failure(code, "boom");
        assert_eq!(answered, code);
        assert_eq!(body["reason"], reason, "{code}");
        assert_eq!(body["code"], code.as_u16());
        assert_eq!(body["details"], json!({}));
    }
    let (_, body) = generic_failure(StatusCode::BAD_GATEWAY, "boom");
    assert_eq!(
        body["message"],
        "an error on the server (\"boom\") has prevented the request from succeeding"
    );
    let (_, body) = generic_failure(StatusCode::IM_A_TEAPOT, "");
    assert_eq!(
        body["message"],
        "the server responded with the status code 418 but did not return more information"
    );
}

#[test]
fn unauthorized_matches_exchange_41() {
    assert_matches_capture("41-", unauthorized());
}

#[test]
fn unsupported_media_type_matches_exchange_49() {
    assert_matches_capture("49-", unsupported_media_type(&CUSTOM_RESOURCE_PATCH_TYPES));
}

#[test]
fn gone_expired_matches_exchanges_53_54() {
    let token = "eyJ2IjoibWV0YS5rOHMuaW8vdjEiLCJydiI6LTEsInN0YXJ0Ijoia2VlcC0xXHUwMDAwIn0";
    let built = gone_expired(CONTINUE_EXPIRED_MESSAGE, Some(token.to_owned()));
    assert_matches_capture("53-", built);
    assert_matches_capture(
        "54-",
        gone_expired(LIST_RESOURCE_VERSION_EXPIRED_MESSAGE, None),
    );
}

#[test]
fn watch_error_event_matches_exchange_55() {
    let message = too_old_resource_version_message(300, 557);
    let (_, status) = gone_expired(&message, None);
    let (code, event) = captured("55-");
    assert_eq!(code, 200);
    assert_eq!(watch_error_event(status), event);
}

#[test]
fn update_uid_precondition_wraps_the_storage_error() {
    let cm = GroupResource::new("", "configmaps");
    let (code, body) = conflict_precondition_uid_update(&cm, Some("ns"), "x", "a", "b");
    assert_eq!(code, StatusCode::CONFLICT);
    assert_eq!(
        body["message"],
        "Operation cannot be fulfilled on configmaps \"x\": StorageError: invalid object, Code: 4, Key: /registry/configmaps/ns/x, ResourceVersion: 0, AdditionalErrorMsg: Precondition failed: UID in precondition: a, UID in object meta: b"
    );
    assert_eq!(body["details"], json!({"name": "x", "kind": "configmaps"}));
    let vcjobs = GroupResource::new("batch.volcano.sh", "jobs");
    assert_eq!(
        storage_key(&vcjobs, Some("ns"), "v"),
        "/registry/batch.volcano.sh/jobs/ns/v"
    );
    assert_eq!(storage_key(&jobs(), Some("ns"), "j"), "/registry/jobs/ns/j");
    let leases = GroupResource::new("coordination.k8s.io", "leases");
    assert_eq!(
        storage_key(&leases, Some("ns"), "l"),
        "/registry/leases/ns/l"
    );
    let namespaces = GroupResource::new("", "namespaces");
    assert_eq!(
        storage_key(&namespaces, None, "ns"),
        "/registry/namespaces/ns"
    );
}

#[test]
fn too_large_resource_version_is_a_retryable_timeout() {
    let (code, body) = too_large_resource_version(900, 557, 1);
    assert_eq!(code.as_u16(), 504);
    assert_eq!(
        body,
        json!({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
            "message": "Timeout: Too large resource version: 900, current: 557",
            "reason": "Timeout", "code": 504,
            "details": {"causes": [{"reason": "ResourceVersionTooLarge",
                "message": "Too large resource version"}], "retryAfterSeconds": 1}})
    );
    // From etcd the retry is 0, which the Status leaves out.
    let (_, body) = too_large_resource_version(900, 557, 0);
    assert_eq!(body["details"].get("retryAfterSeconds"), None);
}

#[test]
fn forbidden_names_user_verb_resource_and_scope() {
    let (code, body) = forbidden(&jobs(), None, "pi", "bob", "delete", Some("ns"));
    assert_eq!(code, StatusCode::FORBIDDEN);
    assert_eq!(
        body,
        json!({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
            "message": "jobs.batch \"pi\" is forbidden: User \"bob\" cannot delete resource \"jobs\" in API group \"batch\" in the namespace \"ns\"",
            "reason": "Forbidden", "details": {"name": "pi", "group": "batch", "kind": "jobs"},
            "code": 403})
    );
    let namespaces = GroupResource::new("", "namespaces");
    let (_, body) = forbidden(&namespaces, None, "", "system:anonymous", "list", None);
    assert_eq!(
        body["message"],
        "namespaces is forbidden: User \"system:anonymous\" cannot list resource \"namespaces\" in API group \"\" at the cluster scope"
    );
    assert_eq!(body["details"], json!({"kind": "namespaces"}));
    let (_, body) = forbidden(&namespaces, None, "", "<script>", "list", None);
    assert!(body["message"]
        .as_str()
        .is_some_and(|m| m.contains("&lt;script&gt;")));
}

#[test]
fn forbidden_matches_exchanges_200_to_206() {
    let user = "system:serviceaccount:rd-capture-forbidden:rd-capture";
    let configmaps = GroupResource::new("", "configmaps");
    assert_matches_capture("200-", forbidden(&configmaps, None, "", user, "list", None));
    assert_matches_capture(
        "202-",
        forbidden(&configmaps, None, "", user, "watch", None),
    );
    assert_matches_capture(
        "204-",
        forbidden(
            &configmaps,
            None,
            "rd-kept",
            user,
            "delete",
            Some("rd-capture-forbidden"),
        ),
    );
    assert_matches_capture("205-", forbidden(&jobs(), None, "", user, "list", None));
    let policies = GroupResource::new("kube-gc.io", "retentionpolicies");
    assert_matches_capture("206-", forbidden(&policies, None, "", user, "list", None));
    // A subresource is named in the sentence only (upstream's `forbiddenMessage`).
    let (_, body) = forbidden(&policies, Some("status"), "p", "u", "patch", Some("a"));
    assert_eq!(
        body["message"],
        "retentionpolicies.kube-gc.io \"p\" is forbidden: User \"u\" cannot patch resource \"retentionpolicies/status\" in API group \"kube-gc.io\" in the namespace \"a\""
    );
}

#[test]
fn remaining_builders_have_upstream_shapes() {
    let (code, body) = too_many_requests(3);
    assert_eq!(code.as_u16(), 429);
    assert_eq!(body["reason"], "TooManyRequests");
    assert_eq!(body["details"], json!({"retryAfterSeconds": 3}));

    let (code, body) = internal_error("boom");
    assert_eq!(code.as_u16(), 500);
    assert_eq!(body["message"], "Internal error occurred: boom");
    assert_eq!(body["details"]["causes"], json!([{"message": "boom"}]));

    let (code, body) = service_unavailable("etcd is down");
    assert_eq!(code.as_u16(), 503);
    assert_eq!(body["reason"], "ServiceUnavailable");
    assert!(body.get("details").is_none());

    let (code, body) = method_not_allowed(&jobs(), "deletecollection");
    assert_eq!(code.as_u16(), 405);
    assert_eq!(
        body["message"],
        "deletecollection is not supported on resources of kind \"jobs.batch\""
    );
    assert_eq!(body["details"], json!({"group": "batch", "kind": "jobs"}));

    let (code, body) = not_found_path();
    assert_eq!(code.as_u16(), 404);
    assert_eq!(body["details"], json!({}));
}

#[test]
fn a_request_past_its_deadline_while_etcd_is_down_matches_exchange_77() {
    assert_matches_capture("77-", request_deadline_exceeded());
}
