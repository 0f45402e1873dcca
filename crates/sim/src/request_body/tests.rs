//! Each rule against the capture it comes from: the real server's answer to the same bytes,
//! and the audit log's JSON of what it decoded from a client's protobuf body.

use super::*;
use kube_gc_fixtures::{exchange, request_bytes};

const CONFIG_MAP: (&str, &str) = ("v1", "ConfigMap");

/// The `Status` a capture answered with, as the capture script read it from protobuf.
fn captured_refusal(prefix: &str) -> (u64, String, String) {
    let summary = &exchange(prefix)["response"]["status_summary"];
    (
        summary["code"].as_u64().unwrap_or_default(),
        summary["reason"].as_str().unwrap_or_default().to_owned(),
        summary["message"].as_str().unwrap_or_default().to_owned(),
    )
}

fn answer(error: &BodyError) -> (u64, String, String) {
    let (code, body) = error.status();
    (
        u64::from(code.as_u16()),
        body["reason"].as_str().unwrap_or_default().to_owned(),
        body["message"].as_str().unwrap_or_default().to_owned(),
    )
}

fn refused_create(prefix: &str) -> BodyError {
    protobuf_object(&request_bytes(prefix), CONFIG_MAP).expect_err(prefix)
}

#[test]
fn undecodable_creates_are_refused_as_exchanges_257_and_259_to_262() {
    for prefix in ["257-", "259-", "260-", "261-", "262-"] {
        assert_eq!(
            answer(&refused_create(prefix)),
            captured_refusal(prefix),
            "{prefix}"
        );
    }
}

#[test]
fn undecodable_delete_options_are_a_500_without_reason_as_exchange_256() {
    let error = protobuf_delete_options(&request_bytes("256-")).expect_err("garbage");
    assert_eq!(answer(&error), captured_refusal("256-"));
    let (_, body) = error.status();
    assert!(body.get("reason").is_none(), "{body}");
    assert!(body.get("details").is_none(), "{body}");
}

#[test]
fn delete_options_under_any_group_version_as_exchanges_242_265_and_269() {
    let kcm = exchange("242-");
    let decoded = protobuf_delete_options(&request_bytes("242-")).expect("242 decodes");
    let mut audited = kcm["request"]["audit_request_object"].clone();
    // The audit log writes the type the server converted to; the body's own is `batch/v1`.
    if let Some(map) = audited.as_object_mut() {
        map.remove("kind");
        map.remove("apiVersion");
    }
    assert_eq!(decoded, Some(audited));
    for prefix in ["265-", "266-", "269-"] {
        let options = protobuf_delete_options(&request_bytes(prefix))
            .expect(prefix)
            .expect("options");
        assert_eq!(options["propagationPolicy"], "Background", "{prefix}");
        assert!(options["preconditions"]["uid"].is_string(), "{prefix}");
    }
    assert_eq!(protobuf_delete_options(b""), Ok(None));
}

#[test]
fn events_decode_whole_as_exchanges_253_and_293() {
    for prefix in ["253-", "293-"] {
        let decoded = protobuf_object(&request_bytes(prefix), ("v1", "Event")).expect(prefix);
        let audited = &exchange(prefix)["request"]["audit_request_object"];
        assert_eq!(&decoded, audited, "{prefix}");
    }
}

#[test]
fn a_job_status_update_keeps_its_metadata_and_status_as_exchanges_290_and_291() {
    for prefix in ["290-", "291-"] {
        let decoded = protobuf_object(&request_bytes(prefix), ("batch/v1", "Job")).expect(prefix);
        let audited = &exchange(prefix)["request"]["audit_request_object"];
        assert_eq!(decoded["metadata"], audited["metadata"], "{prefix}");
        assert_eq!(decoded["status"], audited["status"], "{prefix}");
        assert_eq!(
            decoded["spec"]["template"]["spec"]["containers"][0]["image"],
            audited["spec"]["template"]["spec"]["containers"][0]["image"],
            "{prefix}"
        );
    }
}

#[test]
fn a_pod_the_job_controller_creates_keeps_what_the_collector_reads_as_exchange_289() {
    let decoded = protobuf_object(&request_bytes("289-"), ("v1", "Pod")).expect("289");
    let audited = &exchange("289-")["request"]["audit_request_object"];
    assert_eq!(decoded["metadata"], audited["metadata"]);
    assert_eq!(
        decoded["spec"]["containers"][0]["name"],
        audited["spec"]["containers"][0]["name"]
    );
    assert_eq!(
        decoded["spec"]["restartPolicy"],
        audited["spec"]["restartPolicy"]
    );
}

#[test]
fn a_configmap_create_decodes_as_exchange_263() {
    let decoded = protobuf_object(&request_bytes("263-"), CONFIG_MAP).expect("263");
    assert_eq!(decoded["kind"], "ConfigMap");
    assert_eq!(decoded["metadata"]["name"], "pb-created");
    assert_eq!(decoded["data"], serde_json::json!({"a": "1"}));
}

#[test]
fn kinds_without_a_table_are_a_clear_415() {
    // Exchange 270's body: a custom resource, which v1.28.7 answers by closing the connection.
    let body = request_bytes("270-");
    let error = protobuf_object(&body, ("batch.volcano.sh/v1alpha1", "Job")).expect_err("270");
    let (code, reason, message) = answer(&error);
    assert_eq!((code, reason.as_str()), (415, "UnsupportedMediaType"));
    assert!(
        message.ends_with("application/json, application/yaml"),
        "{message}"
    );
}

#[test]
fn summaries_follow_upstream() {
    assert_eq!(summarize(b""), "<empty>");
    assert_eq!(summarize(b"{\"a\":1}"), "{\"a\":1}");
    assert_eq!(summarize(&[0xff; 31]), format!("{} ...", "ff".repeat(30)));
    assert_eq!(internal_package("v1"), "core");
    assert_eq!(internal_package("batch/v1"), "batch");
    assert_eq!(version_of("batch/v1"), "v1");
    assert_eq!(
        BodyMedia::of(Some("application/vnd.kubernetes.protobuf; x=y")),
        BodyMedia::Protobuf
    );
    assert_eq!(BodyMedia::of(Some("application/json")), BodyMedia::Json);
    assert_eq!(BodyMedia::of(None), BodyMedia::Json);
}

#[test]
fn a_magic_alone_and_an_envelope_without_object_are_refused() {
    let error = protobuf_object(b"k8s\0", CONFIG_MAP).expect_err("magic only");
    assert!(answer(&error).2.contains("empty body"), "{error}");
    let error = protobuf_delete_options(b"k8s\0\x0a\x00").expect_err("no raw");
    assert_eq!(answer(&error).0, 500);
}

mod arbitrary_bytes {
    use super::*;
    use proptest::prelude::*;

    fn refused_with_a_status(error: &BodyError) {
        let (code, status) = error.status();
        assert!(code.is_client_error() || code.is_server_error(), "{code}");
        assert_eq!(status["kind"], "Status");
    }

    proptest! {
        /// Any bytes, with or without the magic in front: a value or a Status, never a panic
        /// (the fuzz target `sim_request_body` runs the same on far longer inputs).
        #[test]
        fn any_body_is_decoded_or_refused_with_a_status(
            magic in any::<bool>(),
            bytes in proptest::collection::vec(any::<u8>(), 0..300),
        ) {
            let mut body = if magic { envelope::MAGIC.to_vec() } else { Vec::new() };
            body.extend_from_slice(&bytes);
            for expected in [CONFIG_MAP, ("batch/v1", "Job"), ("v1", "Event")] {
                match protobuf_object(&body, expected) {
                    Ok(object) => prop_assert_eq!(&object["kind"], expected.1),
                    Err(error) => refused_with_a_status(&error),
                }
            }
            if let Err(error) = protobuf_delete_options(&body) {
                refused_with_a_status(&error);
            }
        }
    }
}
