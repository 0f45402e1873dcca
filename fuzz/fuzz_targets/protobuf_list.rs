//! The streaming protobuf LIST decoder (`client::protobuf::list::ListStream`) on arbitrary
//! bytes split into arbitrary chunks, and the transcoder on every item it yields.
//!
//! Input layout: chunk lengths until a zero byte, then the body. Invariants: no panic; the
//! same events (type, metadata, item bytes), the same item JSON and the same outcome whether
//! the body comes whole, in the chunks the input names, or a byte at a time. An allocation a
//! length prefix asks for before its bytes arrive is bounded (run with `-malloc_limit_mb`).
#![no_main]

use bytes::Bytes;
use kube_gc::client::protobuf::list::{ListEvent, ListStream};
use kube_gc::client::protobuf::{schema, transcode, Selection};
use libfuzzer_sys::fuzz_target;

/// Every event, as text, in order, and how the body ended.
fn decode(body: &[u8], splits: &[usize]) -> Vec<String> {
    let mut list = ListStream::new();
    let mut out = Vec::new();
    let mut item_kind: Option<(String, String)> = None;
    let mut rest = body;
    let mut cuts = splits.iter().cycle();
    loop {
        loop {
            match list.next_event() {
                Ok(Some(event)) => out.push(describe(event, &mut item_kind)),
                Ok(None) => break,
                Err(e) => {
                    out.push(format!("error: {e}"));
                    return out;
                }
            }
        }
        if rest.is_empty() {
            break;
        }
        let n = (*cuts.next().unwrap_or(&rest.len())).clamp(1, rest.len());
        let (chunk, tail) = rest.split_at(n);
        list.feed(Bytes::copy_from_slice(chunk));
        rest = tail;
    }
    out.push(format!("end: {:?}", list.finish().map_err(|e| e.to_string())));
    out
}

fn describe(event: ListEvent, item_kind: &mut Option<(String, String)>) -> String {
    match event {
        ListEvent::Type { api_version, kind } => {
            let item = schema::list_item_kind(&kind).unwrap_or_default().to_owned();
            *item_kind = Some((api_version.clone(), item));
            format!("type {api_version} {kind}")
        }
        ListEvent::Metadata(meta) => format!("metadata {meta:?}"),
        ListEvent::Item(bytes) => {
            let table = item_kind
                .as_ref()
                .and_then(|(api_version, kind)| schema::for_kind(api_version, kind));
            let json = table.map(|t| {
                transcode::to_json(t, &bytes, None, &Selection::all())
                    .map(|text| {
                        // The transcoder's contract: always valid JSON text.
                        serde_json::from_slice::<serde_json::Value>(&text)
                            .expect("the transcoder wrote invalid JSON");
                        String::from_utf8_lossy(&text).into_owned()
                    })
                    .map_err(|e| e.to_string())
            });
            format!("item {bytes:?} {json:?}")
        }
    }
}

fuzz_target!(|data: &[u8]| {
    let zero = data
        .iter()
        .position(|&b| b == 0)
        .unwrap_or(data.len().min(8));
    let splits: Vec<usize> = data[..zero].iter().map(|&b| usize::from(b)).collect();
    let body = data.get(zero + 1..).unwrap_or(&[]);
    let whole = decode(body, &[]);
    let split = decode(body, if splits.is_empty() { &[1] } else { &splits });
    assert_eq!(whole, split, "chunking changed the decoded list");
    assert_eq!(whole, decode(body, &[1]), "byte-at-a-time changed the decoded list");
});
