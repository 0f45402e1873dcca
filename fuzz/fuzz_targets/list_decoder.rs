//! The streaming list decoder on arbitrary bytes split into arbitrary chunks.
//!
//! Input layout: chunk lengths until a zero byte, then the body. Invariants: no panic; the
//! decoder agrees with `serde_json::from_slice::<List<Value>>` of the whole body on
//! success/failure and, on success, on the items, however the body is chunked.
#![no_main]

use kube_gc::api::List;
use kube_gc::client::ListDecoder;
use libfuzzer_sys::fuzz_target;
use serde_json::Value;

fn decode(body: &[u8], splits: &[usize]) -> Result<List<Value>, String> {
    let mut decoder = ListDecoder::<Value>::new();
    let mut rest = body;
    let mut cuts = splits.iter().cycle();
    while !rest.is_empty() {
        let n = (*cuts.next().unwrap_or(&rest.len())).clamp(1, rest.len());
        let (chunk, tail) = rest.split_at(n);
        decoder.feed(chunk).map_err(|e| e.to_string())?;
        rest = tail;
    }
    decoder.finish().map_err(|e| e.to_string())
}

fuzz_target!(|data: &[u8]| {
    let zero = data
        .iter()
        .position(|&b| b == 0)
        .unwrap_or(data.len().min(8));
    let splits: Vec<usize> = data[..zero].iter().map(|&b| usize::from(b)).collect();
    let body = data.get(zero + 1..).unwrap_or(&[]);
    let streamed = decode(body, if splits.is_empty() { &[1] } else { &splits });
    let whole = decode(body, &[]);
    let reference = serde_json::from_slice::<List<Value>>(body);
    match (&streamed, &whole) {
        (Ok(a), Ok(b)) => assert_eq!(a.items, b.items),
        (Err(_), Err(_)) => {}
        _ => panic!("chunking changed the outcome: {streamed:?} vs {whole:?}"),
    }
    // A Status body is an error for the decoder but a (field-less) list for serde, so only
    // compare lists serde reads as something other than a Status.
    if let Ok(expected) = reference {
        if expected.types.kind != "Status" {
            let got = whole.expect("serde reads this list but the decoder does not");
            assert_eq!(got.items, expected.items);
        }
    }
});
