//! The simulated server's protobuf bodies (`sim::handlers::protobuf`) against the real server's
//! bytes: each capture is read with the client's decoder, put back as the stored JSON a
//! simulated server would hold, and written again; the result must be the captured bytes.

use std::sync::Arc;

use bytes::Bytes;
use serde_json::Value;

use kube_gc::client::protobuf::list::{ListEvent, ListStream};
use kube_gc::client::protobuf::{schema, transcode, Selection, WatchFrames};
use kube_gc::sim::handlers::protobuf::{error_frame, list, stamped, status, FrameEncoder};
use kube_gc::sim::handlers::response::Representation;
use kube_gc::sim::resources::ResourceDef;
use kube_gc::sim::stamped::Stamped;
use kube_gc::sim::status;
use kube_gc::sim::store::ListPage;
use kube_gc_fixtures::{response_bytes, response_chunks};

fn jobs() -> ResourceDef {
    ResourceDef::new("batch", "v1", "jobs", "Job")
}

/// A captured list body as the page a simulated server would answer it from.
fn page_of(body: &[u8]) -> ListPage {
    let mut stream = ListStream::new();
    stream.feed(Bytes::copy_from_slice(body));
    let (mut item_kind, mut api_version) = (String::new(), String::new());
    let mut page = ListPage {
        items: Vec::new(),
        resource_version: 0,
        continue_token: None,
        remaining_item_count: None,
    };
    while let Some(event) = stream.next_event().expect("decodes") {
        match event {
            ListEvent::Type {
                api_version: v,
                kind,
            } => {
                api_version = v;
                item_kind = schema::list_item_kind(&kind).expect("a list").to_owned();
            }
            ListEvent::Metadata(meta) => {
                let meta = serde_json::to_value(meta).expect("JSON");
                page.resource_version = meta["resourceVersion"]
                    .as_str()
                    .and_then(|rv| rv.parse().ok())
                    .expect("a version");
                page.continue_token = meta["continue"].as_str().map(str::to_owned);
                page.remaining_item_count = meta["remainingItemCount"].as_u64();
            }
            ListEvent::Item(bytes) => {
                let table = schema::for_kind(&api_version, &item_kind).expect("a table");
                let text = transcode::to_json(table, &bytes, None, &Selection::all()).expect("ok");
                page.items
                    .push(Arc::new(serde_json::from_slice(&text).expect("JSON")));
            }
        }
    }
    page
}

#[test]
fn lists_are_the_servers_bytes() {
    let pods = ResourceDef::new("", "v1", "pods", "Pod");
    let config_maps = ResourceDef::new("", "v1", "configmaps", "ConfigMap");
    let cases = [
        ("100-", &jobs(), Representation::Full),
        ("102-", &jobs(), Representation::Full),
        ("105-", &jobs(), Representation::MetadataOnly),
        ("113-", &pods, Representation::Full),
        ("116-", &config_maps, Representation::Full),
    ];
    for (prefix, def, representation) in cases {
        let captured = response_bytes(prefix);
        let page = page_of(&captured);
        let written = list(def, representation, &page).expect("encodes");
        assert_eq!(written, captured, "exchange {prefix}");
    }
}

/// Every frame of a captured watch written again from its object (or, for a BOOKMARK, from its
/// resourceVersion alone).
fn assert_frames_rewritten(prefix: &str, representation: Representation) {
    let encoder = FrameEncoder::new(&jobs(), representation);
    let mut frames = WatchFrames::new();
    let mut count = 0;
    // One frame per chunk in these captures: each chunk is a whole frame's bytes.
    for chunk in response_chunks(prefix) {
        frames.feed(Bytes::from(chunk.clone()));
        let frame = frames
            .next_frame()
            .expect("decodes")
            .expect("a whole frame");
        let object: Value =
            serde_json::from_slice(&frame.to_json(&Selection::all()).expect("ok")).expect("JSON");
        let written = if frame.event_type == "BOOKMARK" {
            let rv = object["metadata"]["resourceVersion"].as_str().expect("rv");
            encoder.bookmark(rv.parse().expect("a number"), false)
        } else {
            encoder.event(&frame.event_type, &Stamped::stored(Arc::new(object)))
        };
        assert_eq!(
            &written.expect("encodes")[..],
            &chunk[..],
            "{prefix} frame {count}"
        );
        count += 1;
    }
    assert!(count >= 2, "{prefix}: {count} frames");
}

#[test]
fn watch_frames_are_the_servers_bytes() {
    assert_frames_rewritten("103-", Representation::Full);
    assert_frames_rewritten("106-", Representation::MetadataOnly);
}

#[test]
fn statuses_and_the_error_frame_are_the_servers_bytes() {
    let (_, not_found) = status::not_found(&jobs().group_resource(), "pb-missing");
    assert_eq!(status(&not_found).expect("ok"), response_bytes("111-"));
    let (_, not_acceptable) = status::not_acceptable();
    assert_eq!(status(&not_acceptable).expect("ok"), response_bytes("109-"));
    let message = status::too_old_resource_version_message(1, 5235);
    let (_, expired) = status::gone_expired(&message, None);
    assert_eq!(
        &error_frame(&expired).expect("ok")[..],
        &response_chunks("104-").concat()[..]
    );
}

#[test]
fn a_deletions_presented_state_is_written_with_its_own_version() {
    let job = Arc::new(serde_json::json!({"apiVersion": "batch/v1", "kind": "Job",
        "metadata": {"name": "a", "namespace": "n", "resourceVersion": "7"}, "spec": {}}));
    let deleted = Stamped::stored(Arc::clone(&job)).presented_at(9);
    for representation in [Representation::Full, Representation::MetadataOnly] {
        let body = stamped(&jobs(), representation, &deleted).expect("encodes");
        let text = transcode::body_to_json(&body, &Selection::all()).expect("transcodes");
        let value: Value = serde_json::from_slice(&text).expect("JSON");
        assert_eq!(
            value["metadata"]["resourceVersion"], "9",
            "{representation:?}"
        );
        assert_eq!(value["metadata"]["name"], "a");
    }
}
