//! For unit tests: the HTTP exchanges captured from a real kube-apiserver v1.28.7
//! (`fixtures/real-apiserver/exchanges/`), read by the start of their file name (`93-`,
//! `93-discovery-apis-aggregated`).

use serde_json::Value;

/// The whole exchange (`note`, `request`, `response`) whose file name starts with `prefix`.
pub fn exchange(prefix: &str) -> Value {
    let dir = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/fixtures/real-apiserver/exchanges"
    );
    let path = std::fs::read_dir(dir)
        .expect("the fixtures directory is part of the repository")
        .filter_map(Result::ok)
        .map(|e| e.path())
        .find(|p| {
            p.file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| n.starts_with(prefix))
        })
        .unwrap_or_else(|| panic!("no exchange {prefix}"));
    let text = std::fs::read_to_string(&path).expect("the exchange is readable");
    serde_json::from_str(&text).expect("the exchange is JSON")
}

/// The response body of that exchange, decoded as `T`.
pub fn response_body<T: serde::de::DeserializeOwned>(prefix: &str) -> T {
    serde_json::from_value(exchange(prefix)["response"]["body"].clone())
        .unwrap_or_else(|e| panic!("exchange {prefix}: {e}"))
}

/// The binary response body of that exchange (`response.body_base64`: a protobuf body).
pub fn response_bytes(prefix: &str) -> Vec<u8> {
    base64_field(&exchange(prefix)["response"]["body_base64"], prefix)
}

/// The chunks of that exchange's binary streamed body (`response.chunks_base64`: a protobuf
/// watch), split as they arrived.
pub fn response_chunks(prefix: &str) -> Vec<Vec<u8>> {
    let exchange = exchange(prefix);
    let chunks = exchange["response"]["chunks_base64"]
        .as_array()
        .unwrap_or_else(|| panic!("exchange {prefix} has no chunks_base64"));
    chunks.iter().map(|c| base64_field(c, prefix)).collect()
}

fn base64_field(value: &Value, prefix: &str) -> Vec<u8> {
    use base64::Engine as _;
    let text = value
        .as_str()
        .unwrap_or_else(|| panic!("exchange {prefix}: no base64 text"));
    base64::engine::general_purpose::STANDARD
        .decode(text)
        .unwrap_or_else(|e| panic!("exchange {prefix}: {e}"))
}
