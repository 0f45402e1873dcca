use super::*;
use crate::protobuf::wire::{put_len_field, put_varint_field};
use kube_gc_api::{Job, PartialObjectMetadata, StatusReason};
use kube_gc_fixtures::response_chunks;

/// Every frame of `pieces`, or the first error (including a stream cut mid-frame).
fn frames(pieces: &[Vec<u8>]) -> Result<Vec<WatchFrame>, WatchError> {
    let mut decoder = WatchFrames::new();
    let mut out = Vec::new();
    for piece in pieces {
        decoder.feed(Bytes::copy_from_slice(piece));
        while let Some(frame) = decoder.next_frame()? {
            out.push(frame);
        }
    }
    decoder.finish()?;
    Ok(out)
}

fn types(frames: &[WatchFrame]) -> Vec<&str> {
    frames.iter().map(|f| f.event_type.as_str()).collect()
}

#[test]
fn a_captured_job_watch_has_every_event_type_with_enveloped_objects() {
    let frames = frames(&response_chunks("103-")).expect("decodes");
    assert_eq!(
        types(&frames),
        ["ADDED", "MODIFIED", "DELETED", "BOOKMARK", "BOOKMARK"]
    );
    for frame in &frames {
        let envelope = frame.envelope().expect("raw is a whole protobuf body");
        assert_eq!((envelope.api_version, envelope.kind), ("batch/v1", "Job"));
    }
    let json = frames[1].to_json(&Selection::all()).expect("transcodes");
    let job: Job = serde_json::from_slice(&json).expect("a Job");
    assert_eq!(job.metadata.name.as_deref(), Some("pb-watched"));
    assert_eq!(
        job.metadata.labels.get("step").map(String::as_str),
        Some("modified")
    );
    let bookmark: Job =
        serde_json::from_slice(&frames[3].to_json(&Selection::all()).expect("transcodes"))
            .expect("a Job");
    assert!(bookmark.metadata.resource_version.is_some());
    assert_eq!(bookmark.metadata.name, None);
}

#[test]
fn a_metadata_watch_carries_partial_object_metadata() {
    for prefix in ["106-", "108-"] {
        let frames = frames(&response_chunks(prefix)).expect("decodes");
        assert!(!frames.is_empty(), "{prefix}");
        for frame in &frames {
            let envelope = frame.envelope().expect("an envelope");
            assert_eq!(envelope.kind, "PartialObjectMetadata", "{prefix}");
            let json = frame.to_json(&Selection::all()).expect("transcodes");
            let meta: PartialObjectMetadata = serde_json::from_slice(&json).expect("metadata");
            assert!(meta.metadata.resource_version.is_some(), "{prefix}");
        }
    }
}

#[test]
fn a_too_old_watch_gets_one_error_frame_with_a_410() {
    let frames = frames(&response_chunks("104-")).expect("decodes");
    assert_eq!(types(&frames), ["ERROR"]);
    let status = frames[0].status().expect("a Status");
    assert_eq!(status.code, Some(410));
    assert_eq!(status.reason, StatusReason::Expired);
    assert!(frames[0].status().is_ok());
}

#[test]
fn the_same_frames_come_out_whatever_the_split() {
    let chunks = response_chunks("103-");
    let whole = frames(&chunks).expect("decodes");
    let stream: Vec<u8> = chunks.concat();
    let bytes: Vec<Vec<u8>> = stream.chunks(1).map(<[u8]>::to_vec).collect();
    assert_eq!(frames(&bytes).expect("decodes"), whole);
    for cut in (0..=stream.len()).step_by(7) {
        let (a, b) = stream.split_at(cut);
        assert_eq!(frames(&[a.to_vec(), b.to_vec()]).expect("decodes"), whole);
    }
}

#[test]
fn a_stream_cut_inside_a_frame_says_which_and_how_much() {
    let stream = response_chunks("103-").concat();
    let err = frames(&[stream[..2].to_vec()]).unwrap_err();
    assert_eq!(
        err.to_string(),
        "protobuf watch stream ended after 2 bytes, inside frame 0 (2 of 4 bytes received)"
    );
    let err = frames(&[stream[..1000].to_vec()]).unwrap_err();
    assert!(
        matches!(
            err,
            WatchError::Truncated {
                frame: 0,
                received: 996,
                ..
            }
        ),
        "{err}"
    );
}

#[test]
fn malformed_frames_are_refused() {
    let err = frames(&[vec![0xff, 0xff, 0xff, 0xff]]).unwrap_err();
    assert!(
        matches!(err, WatchError::TooLarge { frame: 0, .. }),
        "{err}"
    );
    // A WatchEvent whose type is a number.
    let mut event = Vec::new();
    put_varint_field(&mut event, 1, 7);
    let mut stream = (event.len() as u32).to_be_bytes().to_vec();
    stream.extend_from_slice(&event);
    let err = frames(&[stream]).unwrap_err();
    assert_eq!(
        err.to_string(),
        "protobuf watch frame 0: the WatchEvent's type is malformed"
    );
    // An object without the magic cannot say its type.
    let mut extension = Vec::new();
    put_len_field(&mut extension, 1, b"\x0a\x00");
    let mut event = Vec::new();
    put_len_field(&mut event, 1, b"ADDED");
    put_len_field(&mut event, 2, &extension);
    let mut stream = (event.len() as u32).to_be_bytes().to_vec();
    stream.extend_from_slice(&event);
    let frame = frames(&[stream]).expect("a frame").remove(0);
    assert!(matches!(
        frame.envelope(),
        Err(EnvelopeError::NoMagic { .. })
    ));
    assert!(frame.status().is_err());
}
