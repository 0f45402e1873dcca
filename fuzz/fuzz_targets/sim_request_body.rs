//! The simulated server's request-body decoder (`sim::request_body`) on arbitrary bytes: the
//! body of a create or update of each kind the tables describe, and of a DELETE.
//!
//! Input layout: the first byte picks the resource the body is sent to, the rest is the body.
//! The server takes a request body whole (it has no streaming form), so there is no chunking
//! to vary; the invariants are: no panic; every refusal is a `Status` with a 4xx or 5xx code;
//! an object decoded is a JSON object of the expected type that the sim's encoder writes again
//! and the decoder reads back unchanged (what the sim stores is what it would answer) — up to
//! Go's zero values against absent members, which the transcoder's contract holds equal (a
//! field without `omitempty` absent from the wire is left out, the encoder writes it as Go
//! does, empty — `metadata: {}`, `reportingInstance: ""`, a `Time` read back as `null`).
#![no_main]

use kube_gc::client::protobuf::encode;
use kube_gc::sim::request_body::{protobuf_delete_options, protobuf_object, BodyError};
use libfuzzer_sys::fuzz_target;
use serde_json::Value;

const KINDS: [(&str, &str); 6] = [
    ("v1", "ConfigMap"),
    ("v1", "Pod"),
    ("batch/v1", "Job"),
    ("v1", "Event"),
    ("v1", "Namespace"),
    ("batch.volcano.sh/v1alpha1", "Job"),
];

/// `value` without its members that hold Go's zero value (`null`, `""`, `0`, `false`, `{}`,
/// `[]`, once their own zero members are gone), at any depth.
fn without_zeros(value: &Value) -> Value {
    fn is_zero(value: &Value) -> bool {
        match value {
            Value::Null => true,
            Value::Bool(b) => !b,
            Value::Number(n) => n.as_f64() == Some(0.0),
            Value::String(s) => s.is_empty(),
            Value::Array(items) => items.is_empty(),
            Value::Object(map) => map.is_empty(),
        }
    }
    match value {
        Value::Object(map) => Value::Object(
            map.iter()
                .map(|(k, v)| (k.clone(), without_zeros(v)))
                .filter(|(_, v)| !is_zero(v))
                .collect(),
        ),
        Value::Array(items) => Value::Array(items.iter().map(without_zeros).collect()),
        other => other.clone(),
    }
}

fn refused_properly(error: &BodyError) {
    let (code, status) = error.status();
    assert!(code.is_client_error() || code.is_server_error(), "{code}");
    assert_eq!(status["kind"], "Status");
    assert!(status["message"].as_str().is_some_and(|m| !m.is_empty()));
}

fuzz_target!(|data: &[u8]| {
    let Some((&pick, body)) = data.split_first() else {
        return;
    };
    let (api_version, kind) = KINDS[usize::from(pick) % KINDS.len()];
    match protobuf_object(body, (api_version, kind)) {
        Ok(object) => {
            assert_eq!(object["kind"], kind);
            assert_eq!(object["apiVersion"], api_version);
            let written = encode::object_as(api_version, kind, &object)
                .expect("the sim cannot write what it decoded");
            let again = protobuf_object(&written, (api_version, kind))
                .expect("the sim cannot read what it wrote");
            assert_eq!(
                without_zeros(&object),
                without_zeros(&again),
                "a decoded object changed on its way through the encoder"
            );
        }
        Err(error) => refused_properly(&error),
    }
    match protobuf_delete_options(body) {
        Ok(Some(options)) => assert!(options.is_object()),
        Ok(None) => assert!(body.is_empty()),
        Err(error) => refused_properly(&error),
    }
});
