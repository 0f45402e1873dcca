//! The streaming protobuf WATCH decoder (`client::protobuf::watch::WatchFrames`) on arbitrary
//! bytes split into arbitrary chunks, and each frame's envelope, JSON and Status readings.
//!
//! Input layout: chunk lengths until a zero byte, then the stream. Invariants: no panic; the
//! same frames and readings and the same outcome whether the stream comes whole, in the chunks
//! the input names, or a byte at a time. A frame length is bounded before its bytes are held
//! (run with `-malloc_limit_mb`).
#![no_main]

use bytes::Bytes;
use kube_gc::client::protobuf::watch::{WatchFrame, WatchFrames};
use kube_gc::client::protobuf::Selection;
use libfuzzer_sys::fuzz_target;

fn decode(body: &[u8], splits: &[usize]) -> Vec<String> {
    let mut frames = WatchFrames::new();
    let mut out = Vec::new();
    let mut rest = body;
    let mut cuts = splits.iter().cycle();
    loop {
        loop {
            match frames.next_frame() {
                Ok(Some(frame)) => out.push(describe(&frame)),
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
        frames.feed(Bytes::copy_from_slice(chunk));
        rest = tail;
    }
    out.push(format!("end: {:?}", frames.finish().map_err(|e| e.to_string())));
    out
}

fn describe(frame: &WatchFrame) -> String {
    let envelope = frame
        .envelope()
        .map(|e| format!("{} {} {}", e.api_version, e.kind, e.raw.len()))
        .map_err(|e| e.to_string());
    let json = frame.to_json(&Selection::all()).map(|text| {
        serde_json::from_slice::<serde_json::Value>(&text)
            .expect("the transcoder wrote invalid JSON");
        String::from_utf8_lossy(&text).into_owned()
    });
    let status = if frame.event_type == "ERROR" {
        format!("{:?}", frame.status().map_err(|e| e.to_string()))
    } else {
        String::new()
    };
    format!(
        "{} {:?} {envelope:?} {:?} {status}",
        frame.event_type,
        frame.object,
        json.map_err(|e| e.to_string())
    )
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
    assert_eq!(whole, split, "chunking changed the decoded frames");
    assert_eq!(whole, decode(body, &[1]), "byte-at-a-time changed the decoded frames");
});
