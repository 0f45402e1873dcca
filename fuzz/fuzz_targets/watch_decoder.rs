//! The watch stream decoder on arbitrary bytes split into arbitrary chunks.
//!
//! Input layout: the first byte picks the line limit (small limits reach the `LineTooLong`
//! path), the next bytes are chunk lengths until a zero, the rest is the body. Invariants: no
//! panic, and the events decoded are the same however the body is chunked.
#![no_main]

use kube_gc::client::WatchDecoder;
use libfuzzer_sys::fuzz_target;
use serde_json::Value;

/// Every event or error message, in order, plus the end-of-stream error if any.
fn decode(body: &[u8], splits: &[usize], max_line: usize) -> Vec<String> {
    let mut decoder = WatchDecoder::<Value>::with_max_line_bytes(max_line);
    let mut out = Vec::new();
    let mut rest = body;
    let mut cuts = splits.iter().cycle();
    while !rest.is_empty() {
        let n = (*cuts.next().unwrap_or(&rest.len())).clamp(1, rest.len());
        let (chunk, tail) = rest.split_at(n);
        decoder.push(chunk);
        out.extend(decoder.drain().map(describe));
        rest = tail;
    }
    out.extend(decoder.finish().map(|e| format!("end: {e}")));
    out
}

fn describe(r: Result<kube_gc::api::WatchEvent<Value>, kube_gc::client::Error>) -> String {
    match r {
        Ok(event) => format!("{event:?}"),
        // The snippet of a too-long line is what had arrived when the limit was crossed,
        // which depends on the chunking; the limit does not.
        Err(kube_gc::client::Error::LineTooLong { limit, .. }) => format!("too long: {limit}"),
        Err(e) => format!("error: {e}"),
    }
}

fuzz_target!(|data: &[u8]| {
    let Some((&limit, rest)) = data.split_first() else {
        return;
    };
    let max_line = if limit == 0 {
        1 << 20
    } else {
        usize::from(limit)
    };
    let zero = rest
        .iter()
        .position(|&b| b == 0)
        .unwrap_or(rest.len().min(8));
    let splits: Vec<usize> = rest[..zero].iter().map(|&b| usize::from(b)).collect();
    let body = rest.get(zero + 1..).unwrap_or(&[]);
    let whole = decode(body, &[], max_line);
    let split = if splits.is_empty() {
        decode(body, &[1], max_line)
    } else {
        decode(body, &splits, max_line)
    };
    assert_eq!(whole, split, "chunking changed the decoded events");
});
