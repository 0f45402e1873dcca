//! The API event recorder against the simulated API server on tokio's paused clock: what Events
//! exist afterwards, and which requests wrote them (from the server's journal).

mod ops_support;

use std::time::Duration;

use kube_gc::api::ObjectReference;
use kube_gc::events::correlator::AGGREGATE_PREFIX;
use kube_gc::events::{ApiEventRecorder, EventRecord, EventRecorder, EventType, Reporter};
use kube_gc::sim::faults::{FaultPlan, Verb};
use kube_gc::sim::Gvr;
use ops_support::Cluster;
use serde_json::Value;
use tokio_util::sync::CancellationToken;

fn job(name: &str) -> ObjectReference {
    ObjectReference {
        api_version: Some("batch/v1".into()),
        kind: Some("Job".into()),
        namespace: Some("kube-system".into()),
        name: Some(name.into()),
        uid: Some(format!("uid-{name}")),
        ..ObjectReference::default()
    }
}

fn warning(regarding: ObjectReference, reason: &str, message: &str) -> EventRecord {
    EventRecord {
        regarding,
        event_type: EventType::Warning,
        reason: reason.into(),
        message: message.into(),
    }
}

/// The Events about object `name` the server holds, oldest first.
fn events_about(cluster: &Cluster, namespace: &str, name: &str) -> Vec<Value> {
    let events = Gvr::new("", "v1", "events");
    let mut found: Vec<Value> = cluster
        .sim
        .list(&events, Some(namespace))
        .unwrap()
        .into_iter()
        .filter(|e| e["involvedObject"]["name"] == name)
        .collect();
    found.sort_by_key(|e| {
        e["metadata"]["resourceVersion"]
            .as_str()
            .unwrap()
            .parse::<u64>()
            .unwrap()
    });
    found
}

/// Lets the recorder work (paused clock: time only moves while everything waits).
async fn settle(seconds: u64) {
    tokio::time::sleep(Duration::from_secs(seconds)).await;
}

fn start(
    cluster: &Cluster,
) -> (
    ApiEventRecorder,
    tokio::task::JoinHandle<()>,
    CancellationToken,
) {
    let shutdown = CancellationToken::new();
    let reporter = Reporter {
        component: "kube-gc".into(),
        instance: "host_1".into(),
    };
    let (recorder, task) =
        ApiEventRecorder::start(cluster.client("recorder", None), reporter, shutdown.clone());
    (recorder, task, shutdown)
}

#[tokio::test(start_paused = true)]
async fn repeats_update_one_event_and_storms_are_aggregated_and_filtered() {
    let cluster = Cluster::start().await;
    let (recorder, task, shutdown) = start(&cluster);

    for _ in 0..3 {
        recorder.record(warning(job("repeat"), "TTLUnknown", "finish time unknown"));
    }
    for n in 0..12 {
        recorder.record(warning(job("variants"), "Failed", &format!("attempt {n}")));
    }
    for n in 0..30 {
        recorder.record(warning(job("spam"), &format!("Reason{n}"), "x"));
    }
    let cluster_scoped = ObjectReference {
        api_version: Some("v1".into()),
        kind: Some("Namespace".into()),
        name: Some("gone".into()),
        ..ObjectReference::default()
    };
    recorder.record(warning(cluster_scoped, "Invalid", "y"));
    settle(5).await;

    let repeat = events_about(&cluster, "kube-system", "repeat");
    assert_eq!(repeat.len(), 1, "{repeat:#?}");
    let e = &repeat[0];
    assert_eq!(e["count"], 3);
    assert_eq!(e["type"], "Warning");
    assert_eq!(e["source"]["component"], "kube-gc");
    assert_eq!(e["reportingComponent"], "kube-gc");
    assert_eq!(e["reportingInstance"], "host_1");
    assert_eq!(e["involvedObject"]["uid"], "uid-repeat");
    assert!(e["metadata"]["name"]
        .as_str()
        .unwrap()
        .starts_with("repeat."));
    assert!(e["firstTimestamp"].is_string() && e["lastTimestamp"].is_string());

    let variants = events_about(&cluster, "kube-system", "variants");
    assert_eq!(variants.len(), 10, "9 single events and one aggregate");
    let aggregate = &variants[9];
    assert_eq!(aggregate["count"], 3);
    assert_eq!(
        aggregate["message"],
        format!("{AGGREGATE_PREFIX}attempt 11")
    );

    assert_eq!(events_about(&cluster, "kube-system", "spam").len(), 25);
    assert_eq!(events_about(&cluster, "default", "gone").len(), 1);

    // Writes: one POST per series, PATCHes for repeats (2 + 2), nothing else.
    let journal = cluster.sim.journal();
    let patches = journal.by_verb(Verb::Patch);
    assert_eq!(patches.len(), 4);
    assert!(patches
        .iter()
        .all(|p| p.header("content-type") == Some("application/merge-patch+json")));
    assert_eq!(journal.by_verb(Verb::Create).len(), 1 + 10 + 25 + 1);

    shutdown.cancel();
    task.await.unwrap();
}

#[tokio::test(start_paused = true)]
async fn a_failing_write_is_retried_every_ten_seconds() {
    let cluster = Cluster::start().await;
    cluster
        .sim
        .faults()
        .set_plan(FaultPlan::new(1).fail(Verb::Create, 1.0, &[503]));
    let (recorder, task, shutdown) = start(&cluster);
    recorder.record(warning(job("retried"), "Failed", "boom"));
    settle(25).await;
    assert!(events_about(&cluster, "kube-system", "retried").is_empty());
    let tries = cluster.sim.journal().by_verb(Verb::Create).len();
    assert_eq!(tries, 3, "at 0 s, 10 s and 20 s");

    cluster.sim.faults().set_plan(FaultPlan::default());
    settle(10).await;
    assert_eq!(events_about(&cluster, "kube-system", "retried").len(), 1);

    // Dropping every handle ends the task too; here the token does.
    shutdown.cancel();
    task.await.unwrap();
    drop(recorder);
}
