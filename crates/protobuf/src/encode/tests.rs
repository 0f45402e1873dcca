use serde_json::json;

use super::*;
use crate::selection::Selection;
use crate::transcode::{body_to_json, to_json};
use kube_gc_fixtures::response_bytes;

fn round_trip(message: &'static Message, value: &Value) -> Value {
    let bytes = message_bytes(message, value).expect("encodes");
    let text = to_json(message, &bytes, None, &Selection::all()).expect("transcodes");
    serde_json::from_slice(&text).expect("JSON")
}

/// The strongest check of the tables: a captured object, read and written again, is the
/// server's own bytes — every field the server wrote is known, numbered and shaped right.
#[test]
fn captured_objects_are_written_back_byte_for_byte() {
    for prefix in ["112-", "115-"] {
        let body = response_bytes(prefix);
        let json: Value =
            serde_json::from_slice(&body_to_json(&body, &Selection::all()).expect("transcodes"))
                .expect("JSON");
        let written = object(&json).expect("encodes");
        assert_eq!(written, body, "exchange {prefix}");
    }
}

#[test]
fn a_job_round_trips_through_the_tables() {
    let job = json!({
        "metadata": {"name": "pi", "namespace": "ns", "uid": "u", "resourceVersion": "9",
            "generation": 2, "creationTimestamp": "2026-11-22T03:45:32Z",
            "deletionTimestamp": "2026-11-22T03:46:00Z", "deletionGracePeriodSeconds": 0,
            "labels": {"b": "2", "a": "1"}, "finalizers": ["foregroundDeletion"],
            "ownerReferences": [{"apiVersion": "batch/v1", "kind": "CronJob", "name": "c",
                "uid": "o", "controller": true, "blockOwnerDeletion": false}]},
        "spec": {"ttlSecondsAfterFinished": 0, "backoffLimit": 6, "suspend": false,
            "completionMode": "NonIndexed",
            "selector": {"matchLabels": {"job-name": "pi"}},
            "template": {"metadata": {"creationTimestamp": null},
                "spec": {"containers": [{"name": "c", "image": "busybox",
                    "resources": {"limits": {"cpu": "2"}},
                    "env": [{"name": "N", "valueFrom": {"secretKeyRef": {"name": "s", "key": "k"}}}]}],
                    "restartPolicy": "Never"}}},
        "status": {"conditions": [{"type": "Failed", "status": "True",
            "lastProbeTime": "2026-11-22T03:45:32Z", "lastTransitionTime": "2026-11-22T03:45:32Z",
            "reason": "BackoffLimitExceeded"}], "failed": 7, "ready": 0}
    });
    // Every member is known and non-empty (or a pointer, or a struct), so all come back.
    assert_eq!(round_trip(&schema::JOB, &job), job);
}

#[test]
fn plain_values_are_written_even_when_absent_and_pointers_only_when_set() {
    let bytes = message_bytes(&schema::OWNER_REFERENCE, &json!({})).expect("encodes");
    // kind (1), name (3), uid (4), apiVersion (5): empty strings, in field-number order.
    assert_eq!(bytes, [0x0a, 0, 0x1a, 0, 0x22, 0, 0x2a, 0]);
    let bytes =
        message_bytes(&schema::JOB_SPEC, &json!({"ttlSecondsAfterFinished": 0})).expect("encodes");
    // template (6) always, as an empty-ish PodTemplateSpec; ttl (8) = 0 because it was set.
    assert!(bytes.ends_with(&[0x40, 0]), "{bytes:02x?}");
    assert_eq!(bytes.first(), Some(&0x32));
}

#[test]
fn wrong_json_types_name_the_member() {
    let err = message_bytes(
        &schema::JOB,
        &json!({"spec": {"ttlSecondsAfterFinished": "soon"}}),
    )
    .unwrap_err();
    assert_eq!(
        err.to_string(),
        "batch.v1.Job spec.ttlSecondsAfterFinished: expected an integer, found \"soon\""
    );
    let err =
        message_bytes(&schema::JOB, &json!({"spec": {"completions": 1u64 << 40}})).unwrap_err();
    assert!(err.to_string().contains("a 32-bit integer"), "{err}");
    let err = message_bytes(
        &schema::OBJECT_META,
        &json!({"creationTimestamp": "yesterday"}),
    )
    .unwrap_err();
    assert!(matches!(err, EncodeError::Time { .. }), "{err}");
    let err = object(&json!({"apiVersion": "v9", "kind": "Nope"})).unwrap_err();
    assert_eq!(err.to_string(), "no protobuf schema for v9 Nope");
}
