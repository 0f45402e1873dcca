//! The sim's patch appliers (RFC 6902 JSON patch, plus merge and strategic merge patch).
//!
//! Input: a JSON array `[target, patch]`. Invariants: no panic; a failing JSON patch or
//! strategic merge patch leaves the target unchanged; every error maps to an HTTP status.
#![no_main]

use kube_gc::sim::patch::{apply_json_patch, apply_merge_patch, apply_strategic_merge_patch};
use libfuzzer_sys::fuzz_target;
use serde_json::Value;

fuzz_target!(|data: &[u8]| {
    let Ok(Value::Array(pair)) = serde_json::from_slice::<Value>(data) else {
        return;
    };
    let [target, patch] = <[Value; 2]>::try_from(pair).unwrap_or([Value::Null, Value::Null]);

    let mut json = target.clone();
    if let Err(e) = apply_json_patch(&mut json, &patch) {
        assert_eq!(json, target, "a failed JSON patch changed the target");
        let _ = e.status();
    }

    let mut strategic = target.clone();
    if let Err(e) = apply_strategic_merge_patch(&mut strategic, &patch) {
        let _ = e.status();
    }

    let mut merge = target;
    apply_merge_patch(&mut merge, &patch);
});
