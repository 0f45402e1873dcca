//! The protobuf crate's output read by this client: a transcoded object as the client's types
//! read it, and the encoder's frames as the client's watch decoder splits them.

use serde_json::json;

use super::encode::{list, object_as, watch_frame};
use super::envelope::Envelope;
use super::transcode::body_to_json;
use super::watch::WatchFrames;
use super::Selection;
use kube_gc_fixtures::response_bytes;

#[test]
fn a_captured_job_reads_as_its_json() {
    let body = response_bytes("112-");
    let text = body_to_json(&body, &Selection::all()).expect("transcodes");
    let job: kube_gc_api::Job = serde_json::from_slice(&text).expect("reads as a Job");
    assert_eq!(job.metadata.name.as_deref(), Some("pb-done"));
    assert_eq!(job.spec.ttl_seconds_after_finished, Some(100));
    assert_eq!(job.status.conditions.len(), 1);
    assert_eq!(job.metadata.owner_references.len(), 1);
    assert_eq!(job.types.kind, "Job");
}

#[test]
fn a_captured_not_found_is_a_status() {
    let body = response_bytes("111-");
    let text = body_to_json(&body, &Selection::all()).expect("transcodes");
    let status: kube_gc_api::Status = serde_json::from_slice(&text).expect("a Status");
    assert_eq!(status.code, Some(404));
    assert_eq!(status.reason, kube_gc_api::StatusReason::NotFound);
    let details = status.details.expect("details");
    assert_eq!(details.name.as_deref(), Some("pb-missing"));
}

#[test]
fn lists_and_watch_frames_have_the_servers_shape() {
    let items = [
        json!({"metadata": {"name": "a"}}),
        json!({"metadata": {"name": "b"}}),
    ];
    let body = list(
        "batch/v1",
        "JobList",
        &json!({"resourceVersion": "5"}),
        &items,
    )
    .expect("encodes");
    let envelope = Envelope::decode(&body).expect("an envelope");
    assert_eq!(
        (envelope.api_version, envelope.kind),
        ("batch/v1", "JobList")
    );

    let object = object_as("batch/v1", "Job", &items[0]).expect("encodes");
    let frame = watch_frame("ADDED", &object);
    assert_eq!(
        u32::from_be_bytes([frame[0], frame[1], frame[2], frame[3]]) as usize,
        frame.len() - 4
    );
    let mut frames = WatchFrames::new();
    frames.feed(bytes::Bytes::from(frame));
    let decoded = frames.next_frame().expect("decodes").expect("one frame");
    assert_eq!(decoded.event_type, "ADDED");
    assert_eq!(&decoded.object[..], &object[..]);
    frames.finish().expect("ends between frames");
}
