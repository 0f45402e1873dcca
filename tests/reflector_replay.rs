//! The reflector fed recorded streams (`fixtures/watch/*.jsonl`) by the replay server: each
//! fixture states the exact sequence of events the sink must see and the objects it must end
//! up holding, and the replay server checks every request the reflector makes against the
//! script (kind, query parameters, `Accept`).

mod reflector_support;

use std::time::Duration;

use kube_gc::api::Job;
use kube_gc::client::{Api, Client, ClientOptions, ResourceRef};
use kube_gc::runtime::cache::Cacheable;
use kube_gc::runtime::reflector::{ListWatch, MetadataOnly};
use kube_gc::sim::kubeconfig::KubeconfigSpec;
use kube_gc::sim::replay::{ReplayServer, Script};
use kube_gc::sim::Connect as _;
use reflector_support::{config, spawn, Seen};

/// A client for the replay server, configured through a kubeconfig as a user's would be.
fn client_for(server: &ReplayServer, dir: &tempfile::TempDir) -> Client {
    let spec = KubeconfigSpec {
        server: server.url().clone(),
        ca_pem: None,
        token: None,
        client_cert: None,
        namespace: None,
        context_name: "replay".into(),
    };
    let config = spec.client_config(&dir.path().join("kubeconfig")).unwrap();
    let options = ClientOptions::default()
        .with_rate(0.0, 1)
        .without_timeouts();
    Client::new(&config, &options).unwrap()
}

/// Replays `fixture` to a reflector built by `source`, and checks what the fixture expects.
async fn replay<L>(fixture: &str, source: impl FnOnce(Client) -> L)
where
    L: ListWatch,
    L::Object: Cacheable + Send + Sync,
{
    let path = format!("{}/fixtures/watch/{fixture}", env!("CARGO_MANIFEST_DIR"));
    let text = std::fs::read_to_string(&path).unwrap();
    let script = Script::parse(&text).unwrap();
    let expect = script
        .expect
        .clone()
        .expect("the fixture states what to expect");
    let responses = script.len();
    let server = ReplayServer::start(script).await.unwrap();
    let dir = tempfile::tempdir().unwrap();
    let running = spawn(source(client_for(&server, &dir)), config());

    let finished = tokio::time::timeout(Duration::from_secs(3600), server.exhausted()).await;
    assert!(
        finished.is_ok(),
        "{fixture}: the reflector stopped after {} of {responses} responses; mismatches: {:?}",
        server.served(),
        server.mismatches()
    );
    assert_eq!(server.mismatches(), Vec::<String>::new(), "{fixture}");
    let events: Vec<String> = running.sink.log().iter().map(Seen::summary).collect();
    assert_eq!(events, expect.events, "{fixture}: events");
    assert_eq!(
        running.sink.read(|m| m.versions()),
        expect.objects,
        "{fixture}: objects"
    );
    assert_eq!(
        running.metrics.snapshot().malformed_events,
        expect.malformed_events,
        "{fixture}: malformed lines"
    );
    running.stop().await;
    server.shutdown().await;
}

fn jobs(client: Client) -> Api<Job> {
    Api::namespaced(client, "capture")
}

/// The ConfigMaps of exchanges 56–60.
fn configmaps(client: Client) -> Api<serde_json::Value> {
    let configmaps = ResourceRef::new("", "v1", "configmaps", "ConfigMap", true);
    Api::dynamic(client, configmaps, Some("capture-relist2"))
}

#[tokio::test(start_paused = true)]
async fn add_update_delete() {
    replay("add-update-delete.jsonl", jobs).await;
}

#[tokio::test(start_paused = true)]
async fn paging_with_an_expired_continue_token() {
    replay("paging.jsonl", jobs).await;
}

#[tokio::test(start_paused = true)]
async fn bookmarks() {
    replay("bookmarks.jsonl", jobs).await;
}

#[tokio::test(start_paused = true)]
async fn a_watch_cut_and_resumed() {
    replay("watch-cut-resume.jsonl", jobs).await;
}

#[tokio::test(start_paused = true)]
async fn a_410_mid_stream_relists_and_drops_what_vanished() {
    replay("relist-after-410.jsonl", jobs).await;
}

#[tokio::test(start_paused = true)]
async fn after_a_real_restart_the_relist_is_unpaged_and_sees_the_present() {
    replay("relist-after-restart.jsonl", configmaps).await;
}

#[tokio::test(start_paused = true)]
async fn duplicates_and_out_of_order_events_pass_through() {
    replay("duplicates-out-of-order.jsonl", jobs).await;
}

#[tokio::test(start_paused = true)]
async fn malformed_lines_are_skipped_and_counted() {
    replay("malformed-line.jsonl", jobs).await;
}

#[tokio::test(start_paused = true)]
async fn metadata_only() {
    replay("metadata-only.jsonl", |client| MetadataOnly(jobs(client))).await;
}

/// Every fixture parses, states an expectation, and has a test above.
#[test]
fn every_fixture_is_replayed() {
    let dir = format!("{}/fixtures/watch", env!("CARGO_MANIFEST_DIR"));
    let source = include_str!("reflector_replay.rs");
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().and_then(|e| e.to_str()) != Some("jsonl") {
            continue;
        }
        let script = Script::parse(&std::fs::read_to_string(&path).unwrap()).unwrap();
        assert!(script.expect.is_some(), "{path:?} states no expectation");
        let name = path.file_name().unwrap().to_str().unwrap();
        assert!(
            source.contains(&format!("\"{name}\"")),
            "{name} is not replayed"
        );
    }
}
