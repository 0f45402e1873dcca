//! An informer over [`Decoded`]: whole objects of any resource come off the wire and only what a
//! runtime item decoder makes of them is cached — as a retention policy caches its judgement of
//! each object, never the object.
//!
//! Against the simulated API server over real sockets, on tokio's paused clock (as
//! `tests/informer_sim.rs`): objects created before the informer starts arrive through the list
//! (the pager with the decoder), later ones through the watch (`watch_with`), and an object the
//! decoder refuses is logged, counted and skipped without stopping the informer.

mod client_support;

use std::sync::Arc;
use std::time::Duration;

use kube_gc::client::{Api, ItemDecoder, ListParams, ResourceRef};
use kube_gc::runtime::cache::{Cacheable, Deleted, ObjectKey, Store};
use kube_gc::runtime::informer::{EventHandler, SharedInformer};
use kube_gc::runtime::reflector::{Decoded, Reflector, ReflectorConfig};
use kube_gc::sim::SimConfig;
use serde::Deserialize;
use serde_json::{json, Value};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use client_support::{configmaps, seed, start_with, unthrottled};

/// Virtual time: a bound on waits that would otherwise hang a broken test forever.
const PATIENCE: Duration = Duration::from_secs(600);

/// The annotation the "policy" of this test reads.
const RETAIN_DAYS: &str = "example.com/retain-days";

/// The judgement cached per object: its identity and how many days it is kept.
#[derive(Debug, PartialEq)]
struct Retained {
    key: ObjectKey,
    resource_version: String,
    uid: String,
    days: u32,
}

impl Cacheable for Retained {
    fn cache_key(&self) -> ObjectKey {
        self.key.clone()
    }
    fn resource_version(&self) -> &str {
        &self.resource_version
    }
    fn uid(&self) -> &str {
        &self.uid
    }
}

/// The fields the judgement reads, borrowed from the object's text; the rest is skipped.
#[derive(Deserialize)]
struct Wire<'a> {
    #[serde(borrow)]
    metadata: WireMeta<'a>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct WireMeta<'a> {
    name: &'a str,
    #[serde(default)]
    namespace: &'a str,
    resource_version: String,
    uid: String,
    #[serde(default, borrow)]
    annotations: std::collections::BTreeMap<&'a str, &'a str>,
}

/// A decoder with a runtime rule: `days` comes from the annotation `annotation`, which must be
/// a number (an object with anything else there cannot be judged).
fn retention(annotation: &'static str) -> ItemDecoder<Retained> {
    Arc::new(move |bytes: &[u8]| {
        let meta = serde_json::from_slice::<Wire<'_>>(bytes)?.metadata;
        let days = meta.annotations.get(annotation).copied().unwrap_or("0");
        let days = days.parse().map_err(|_| {
            serde::de::Error::custom(format!("{annotation} is not a number of days: {days:?}"))
        })?;
        Ok(Retained {
            key: ObjectKey::new(meta.namespace, meta.name),
            resource_version: meta.resource_version,
            uid: meta.uid,
            days,
        })
    })
}

fn configmap(name: &str, days: &str) -> Value {
    json!({"apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": name, "namespace": "default", "annotations": {RETAIN_DAYS: days}},
        "data": {"big": "x".repeat(512)}})
}

fn configmaps_api(harness: &client_support::Harness) -> Api<Value> {
    let resource = ResourceRef::new("", "v1", "configmaps", "ConfigMap", true);
    Api::dynamic(harness.client.clone(), resource, None)
}

/// Writes each add as `add namespace/name days`.
struct Recorder(mpsc::UnboundedSender<String>);

impl EventHandler<Retained> for Recorder {
    async fn on_add(&mut self, judged: Arc<Retained>) {
        let _ = self.0.send(format!("add {} {}", judged.key, judged.days));
    }
    async fn on_update(&mut self, _old: Arc<Retained>, _new: Arc<Retained>) {}
    async fn on_delete(&mut self, _deleted: Deleted<Retained>) {}
}

async fn next_line(lines: &mut mpsc::UnboundedReceiver<String>) -> String {
    match tokio::time::timeout(PATIENCE, lines.recv()).await {
        Ok(Some(line)) => line,
        Ok(None) => panic!("the handler is gone"),
        Err(_) => panic!("no notification within {PATIENCE:?}"),
    }
}

#[tokio::test(start_paused = true)]
async fn an_informer_caches_the_decoders_judgements_and_skips_what_it_refuses() {
    let harness = start_with(SimConfig::default(), unthrottled().without_timeouts()).await;
    let sim = &harness.sim;
    seed(sim, &configmaps(), configmap("a", "1"));
    seed(sim, &configmaps(), configmap("b", "2"));

    let source = Decoded::new(configmaps_api(&harness), retention(RETAIN_DAYS));
    let config = ReflectorConfig {
        seed: Some(7),
        ..ReflectorConfig::default()
    };
    let informer = SharedInformer::builder("configmaps", Store::new())
        .reflector(Reflector::new(source, config))
        .build();
    let (lines_tx, mut lines) = mpsc::unbounded_channel();
    informer.add_handler(Recorder(lines_tx));
    let shutdown = CancellationToken::new();
    let running = tokio::spawn(informer.clone().run(shutdown.clone()));

    // Before the start: through the list.
    tokio::time::timeout(PATIENCE, informer.synced().wait(&shutdown))
        .await
        .expect("synced in time")
        .expect("not cancelled");
    let mut initial = vec![next_line(&mut lines).await, next_line(&mut lines).await];
    initial.sort();
    assert_eq!(initial, ["add default/a 1", "add default/b 2"]);

    // After the start: through the watch; the object the decoder refuses is skipped.
    seed(sim, &configmaps(), configmap("c", "3"));
    seed(sim, &configmaps(), configmap("bad", "soon"));
    seed(sim, &configmaps(), configmap("d", "4"));
    assert_eq!(next_line(&mut lines).await, "add default/c 3");
    assert_eq!(next_line(&mut lines).await, "add default/d 4");

    let store = informer.store();
    let c = store
        .get(&ObjectKey::new("default", "c"))
        .expect("c cached");
    assert_eq!(c.days, 3);
    assert!(!c.uid.is_empty() && !c.resource_version.is_empty(), "{c:?}");
    assert!(store.get(&ObjectKey::new("default", "bad")).is_none());
    assert_eq!(store.keys().len(), 4);
    let metrics = informer
        .reflector_metrics()
        .expect("built with a reflector");
    assert_eq!(
        metrics.snapshot().malformed_events,
        1,
        "{:?}",
        metrics.snapshot()
    );

    shutdown.cancel();
    running.await.unwrap();
    harness.sim.shutdown().await;
}

#[tokio::test(start_paused = true)]
async fn a_pager_with_a_decoder_pages_like_the_typed_one_and_names_a_refused_item() {
    let harness = start_with(SimConfig::default(), unthrottled().without_timeouts()).await;
    let sim = &harness.sim;
    for (name, days) in [("a", "1"), ("b", "2"), ("c", "3")] {
        seed(sim, &configmaps(), configmap(name, days));
    }
    let api = configmaps_api(&harness);

    let params = ListParams::default().with_limit(2);
    let pager = api.pager_with(params.clone(), retention(RETAIN_DAYS));
    let (list, pages) = pager.collect_pages().await.expect("lists");
    let days: Vec<u32> = list.items.iter().map(|r| r.days).collect();
    assert_eq!((days, pages), (vec![1, 2, 3], 2));
    let typed = api.pager(params).collect_pages().await.expect("lists");
    assert_eq!(typed.1, pages);
    assert_eq!(
        typed.0.metadata.resource_version,
        list.metadata.resource_version
    );

    // A list holding an object the decoder refuses fails, naming the item (a, b, b2: index 2).
    seed(sim, &configmaps(), configmap("b2", "soon"));
    let refused = api
        .pager_with(ListParams::default(), retention(RETAIN_DAYS))
        .collect()
        .await
        .expect_err("b2 cannot be judged");
    let message = refused.to_string();
    assert!(message.contains("list item 2"), "{message}");
    assert!(message.contains("not a number of days"), "{message}");

    harness.sim.shutdown().await;
}
