use serde_json::{json, Value};

use super::*;
use crate::schema::{CONFIG_MAP, JOB, JOB_SPEC, OBJECT_META, POD_SPEC};
use crate::wire::{put_len_field, put_tag, put_varint, put_varint_field};
use kube_gc_fixtures::response_bytes;

fn json_of(message: &'static Message, bytes: &[u8], selection: &Selection) -> Value {
    let text = to_json(message, bytes, None, selection).expect("transcodes");
    serde_json::from_slice(&text).expect("the output is JSON")
}

fn time(seconds: u64) -> Vec<u8> {
    let mut out = Vec::new();
    put_varint_field(&mut out, 1, seconds);
    put_varint_field(&mut out, 2, 0);
    out
}

#[test]
fn members_follow_the_table_whatever_the_wire_order() {
    let mut meta = Vec::new();
    put_len_field(&mut meta, 5, b"u-1");
    put_len_field(&mut meta, 14, b"f1");
    put_len_field(&mut meta, 1, b"pi");
    put_len_field(&mut meta, 14, b"f2"); // Interleaved with another field: still one array.
    put_len_field(&mut meta, 2, b""); // generateName "": omitempty drops it.
    put_varint_field(&mut meta, 7, 0); // generation 0: dropped too.
    let text = to_json(&OBJECT_META, &meta, None, &Selection::all()).expect("transcodes");
    assert_eq!(
        String::from_utf8(text).expect("UTF-8"),
        r#"{"name":"pi","uid":"u-1","finalizers":["f1","f2"]}"#
    );
}

#[test]
fn a_pointer_keeps_its_zero_and_the_last_singular_value_wins() {
    let mut spec = Vec::new();
    put_varint_field(&mut spec, 8, 30);
    put_varint_field(&mut spec, 8, 0); // Last wins: 0, which for a pointer means "at once".
    put_varint_field(&mut spec, 10, 0); // suspend: false, set.
    put_varint_field(&mut spec, 1, u64::MAX); // parallelism -1 as a sign-extended int32.
    assert_eq!(
        json_of(&JOB_SPEC, &spec, &Selection::all()),
        json!({"parallelism": -1, "ttlSecondsAfterFinished": 0, "suspend": false})
    );
}

#[test]
fn times_maps_quantities_and_inlined_structs() {
    let mut meta = Vec::new();
    put_len_field(&mut meta, 8, &time(1_795_319_132));
    put_len_field(&mut meta, 9, &[]); // A set but zero *Time: null.
    let mut entry = Vec::new();
    put_len_field(&mut entry, 1, b"app");
    put_len_field(&mut entry, 2, b"x\"y");
    put_len_field(&mut meta, 11, &entry);
    assert_eq!(
        json_of(&OBJECT_META, &meta, &Selection::all()),
        json!({"creationTimestamp": "2026-11-22T03:45:32Z", "deletionTimestamp": null,
               "labels": {"app": "x\"y"}})
    );

    // A container's resources (map of Quantity) and an emptyDir volume (VolumeSource inlined).
    let mut quantity = Vec::new();
    put_len_field(&mut quantity, 1, b"500m");
    let mut limit = Vec::new();
    put_len_field(&mut limit, 1, b"cpu");
    put_len_field(&mut limit, 2, &quantity);
    let mut resources = Vec::new();
    put_len_field(&mut resources, 1, &limit);
    let mut container = Vec::new();
    put_len_field(&mut container, 1, b"c");
    put_len_field(&mut container, 8, &resources);
    let mut empty_dir = Vec::new();
    put_len_field(&mut empty_dir, 1, b"");
    let mut source = Vec::new();
    put_len_field(&mut source, 2, &empty_dir);
    let mut volume = Vec::new();
    put_len_field(&mut volume, 1, b"scratch");
    put_len_field(&mut volume, 2, &source);
    let mut spec = Vec::new();
    put_len_field(&mut spec, 2, &container);
    put_len_field(&mut spec, 1, &volume);
    assert_eq!(
        json_of(&POD_SPEC, &spec, &Selection::all()),
        json!({"volumes": [{"name": "scratch", "emptyDir": {}}],
               "containers": [{"name": "c", "resources": {"limits": {"cpu": "500m"}}}]})
    );
}

#[test]
fn bytes_are_base64_and_fields_v1_is_inserted_as_json() {
    let mut entry = Vec::new();
    put_len_field(&mut entry, 1, b"bin");
    put_len_field(&mut entry, 2, b"\x00\xff");
    let mut config_map = Vec::new();
    put_len_field(&mut config_map, 3, &entry);
    assert_eq!(
        json_of(&CONFIG_MAP, &config_map, &Selection::all()),
        json!({"binaryData": {"bin": "AP8="}})
    );

    let mut fields_v1 = Vec::new();
    put_len_field(&mut fields_v1, 1, br#"{"f:metadata":{}}"#);
    let mut managed = Vec::new();
    put_len_field(&mut managed, 1, b"kubectl");
    put_len_field(&mut managed, 7, &fields_v1);
    let mut meta = Vec::new();
    put_len_field(&mut meta, 17, &managed);
    assert_eq!(
        json_of(&OBJECT_META, &meta, &Selection::all()),
        json!({"managedFields": [{"manager": "kubectl", "fieldsV1": {"f:metadata": {}}}]})
    );
    // Not JSON: an error naming where, never invalid output.
    let mut bad = Vec::new();
    put_len_field(&mut bad, 1, b"{nope");
    let mut managed = Vec::new();
    put_len_field(&mut managed, 7, &bad);
    let mut meta = Vec::new();
    put_len_field(&mut meta, 17, &managed);
    let err = to_json(&OBJECT_META, &meta, None, &Selection::all()).unwrap_err();
    assert!(matches!(err, TranscodeError::RawJson { .. }), "{err}");
    assert!(err.to_string().contains("managedFields.fieldsV1"), "{err}");
}

#[test]
fn packed_and_unpacked_numbers_are_both_read() {
    let mut context = Vec::new();
    put_varint_field(&mut context, 4, 1);
    let mut packed = Vec::new();
    put_varint(&mut packed, 2);
    put_varint(&mut packed, 3);
    put_len_field(&mut context, 4, &packed);
    let mut spec = Vec::new();
    put_len_field(&mut spec, 14, &context);
    assert_eq!(
        json_of(&POD_SPEC, &spec, &Selection::all()),
        json!({"securityContext": {"supplementalGroups": [1, 2, 3]}})
    );
}

#[test]
fn a_selection_leaves_out_whole_subtrees() {
    let body = response_bytes("112-");
    let envelope = Envelope::decode(&body).expect("an envelope");
    let wanted = Selection::paths([
        "metadata.name",
        "spec.ttlSecondsAfterFinished",
        "status.conditions",
    ]);
    let text = object_to_json(&envelope, &wanted).expect("transcodes");
    let value: Value = serde_json::from_slice(&text).expect("JSON");
    assert_eq!(
        value,
        json!({"kind": "Job", "apiVersion": "batch/v1", "metadata": {"name": "pb-done"},
               "spec": {"ttlSecondsAfterFinished": 100},
               "status": {"conditions": [{"type": "Complete", "status": "True",
                   "lastProbeTime": "2026-11-26T19:31:02Z",
                   "lastTransitionTime": "2026-11-26T19:31:02Z",
                   "reason": "Done", "message": "captured"}]}})
    );
}

#[test]
fn malformed_input_names_the_path() {
    // An ownerReference whose `controller` (a bool) arrives length-delimited.
    let mut owner = Vec::new();
    put_len_field(&mut owner, 6, b"x");
    let mut meta = Vec::new();
    put_len_field(&mut meta, 13, &owner);
    let err = to_json(&OBJECT_META, &meta, None, &Selection::all()).unwrap_err();
    assert_eq!(
        err.to_string(),
        "meta.v1.ObjectMeta ownerReferences.controller: field 6 is length-delimited (2) on the \
         wire, but its schema says varint (0)"
    );
    // A nested message cut short: the offset counts from the object's start.
    let mut job = Vec::new();
    put_len_field(&mut job, 1, &meta);
    put_tag(&mut job, 2, WireType::Len);
    put_varint(&mut job, 40);
    job.extend_from_slice(b"short");
    let err = to_json(&JOB, &job, None, &Selection::all()).unwrap_err();
    assert!(matches!(err, TranscodeError::Wire { .. }), "{err}");
    assert!(
        err.to_string()
            .starts_with("batch.v1.Job: truncated field 2"),
        "{err}"
    );
}

#[test]
fn an_unknown_kind_is_named() {
    let body = crate::envelope::encode("example.com/v1", "Widget", b"");
    let err = body_to_json(&body, &Selection::all()).unwrap_err();
    assert_eq!(
        err.to_string(),
        "no protobuf schema for example.com/v1 Widget"
    );
}

/// A `fieldsV1` whose bytes break UTF-8 inside a JSON string, or hold a lone surrogate escape,
/// is refused: inserted as it was, the object around it would not be JSON (the fuzz target
/// `protobuf_list` found the first; `fuzz/regressions/protobuf_list/` keeps its input).
#[test]
fn a_fields_v1_that_is_not_strict_json_is_refused() {
    for raw in [&b"{\"f:a\xe2\x28\":{}}"[..], br#"{"f:\ud800":{}}"#] {
        let mut fields_v1 = Vec::new();
        put_len_field(&mut fields_v1, 1, raw);
        let mut entry = Vec::new();
        put_len_field(&mut entry, 7, &fields_v1);
        let mut meta = Vec::new();
        put_len_field(&mut meta, 17, &entry);
        let error = to_json(&OBJECT_META, &meta, None, &Selection::all()).expect_err("refused");
        assert!(matches!(error, TranscodeError::RawJson { .. }), "{error}");
        assert!(error.to_string().contains("managedFields"), "{error}");
    }
    let mut fields_v1 = Vec::new();
    put_len_field(&mut fields_v1, 1, br#"{"f:caf\u00e9":{}}"#);
    let mut entry = Vec::new();
    put_len_field(&mut entry, 7, &fields_v1);
    let mut meta = Vec::new();
    put_len_field(&mut meta, 17, &entry);
    let text = to_json(&OBJECT_META, &meta, None, &Selection::all()).expect("accepted");
    assert!(serde_json::from_slice::<Value>(&text).is_ok());
}
