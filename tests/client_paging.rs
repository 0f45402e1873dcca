//! Paged lists against the simulated API server: many pages, the pager's one-page-at-a-time
//! view, and the restart after the snapshot's continue token expired.

mod client_support;

use std::collections::BTreeSet;

use client_support::{configmap, configmaps, requests_to, seed, start};
use kube_gc::client::{Api, ListParams, ResourceRef};
use kube_gc::sim::faults::{FaultPlan, Verb};
use serde_json::Value;

const OBJECTS: usize = 1_234;
const PATH: &str = "/api/v1/namespaces/default/configmaps";

fn api(h: &client_support::Harness) -> Api<Value> {
    let cms = ResourceRef::new("", "v1", "configmaps", "ConfigMap", true);
    Api::dynamic(h.client.clone(), cms, Some("default"))
}

async fn start_with_objects() -> client_support::Harness {
    let h = start().await;
    for i in 0..OBJECTS {
        seed(
            &h.sim,
            &configmaps(),
            configmap("default", &format!("cm-{i:05}")),
        );
    }
    h
}

fn names(items: &[Value]) -> Vec<String> {
    items
        .iter()
        .map(|o| {
            o["metadata"]["name"]
                .as_str()
                .unwrap_or_default()
                .to_owned()
        })
        .collect()
}

#[tokio::test]
async fn a_list_of_1234_objects_is_read_in_13_pages_of_at_most_100() {
    let h = start_with_objects().await;
    let list = api(&h)
        .list(&ListParams::default().with_limit(100))
        .await
        .unwrap();

    let names = names(&list.items);
    assert_eq!(names.len(), OBJECTS);
    let unique: BTreeSet<&String> = names.iter().collect();
    assert_eq!(unique.len(), OBJECTS, "no object twice");
    assert_eq!(list.next_page(), None);
    assert!(list.metadata.resource_version.is_some());

    let requests = requests_to(&h.sim, PATH);
    assert_eq!(requests.len(), 13);
    assert!(requests
        .iter()
        .all(|r| r.query_value("limit") == Some("100")));
    assert_eq!(requests[0].query_value("continue"), None);
    // Continue pages carry the token and never a resourceVersion.
    for request in &requests[1..] {
        assert!(request.query_value("continue").is_some());
        assert_eq!(request.query_value("resourceVersion"), None);
    }
}

#[tokio::test]
async fn the_pager_hands_out_one_page_at_a_time() {
    let h = start_with_objects().await;
    let mut pager = api(&h).pager(ListParams::default().with_limit(500));
    let mut sizes = Vec::new();
    let mut snapshot_versions = BTreeSet::new();
    while let Some(page) = pager.next_page().await {
        let page = page.unwrap();
        assert!(!page.restarted);
        sizes.push(page.list.items.len());
        snapshot_versions.insert(page.list.metadata.resource_version.clone());
    }
    assert_eq!(sizes, vec![500, 500, 234]);
    assert_eq!(
        snapshot_versions.len(),
        1,
        "every page is the same snapshot"
    );
    assert!(pager.next_page().await.is_none(), "done stays done");
}

#[tokio::test]
async fn an_expired_continue_token_restarts_the_list_from_a_new_snapshot() {
    let h = start_with_objects().await;
    let api = api(&h);
    let mut pager = api.pager(ListParams::default().with_limit(100));
    let first = pager.next_page().await.unwrap().unwrap();
    assert_eq!(first.list.items.len(), 100);

    // A change and a compaction while the list is half read: the token's snapshot is gone.
    // (A compaction with no change since the snapshot would keep it readable.)
    seed(&h.sim, &configmaps(), configmap("default", "zz-late"));
    h.sim.compact();

    let restarted = pager.next_page().await.unwrap().unwrap();
    assert!(restarted.restarted, "the caller must drop earlier pages");
    assert_eq!(names(&restarted.list.items), names(&first.list.items));
    let requests = requests_to(&h.sim, PATH);
    assert_eq!(requests[1].status, 410);
    assert_eq!(requests[2].query_value("continue"), None);

    // Collecting the rest sees the new snapshot, late object included, each object once.
    let rest = pager.collect().await.unwrap();
    let mut all = names(&restarted.list.items);
    all.extend(names(&rest.items));
    assert_eq!(all.len(), OBJECTS + 1);
    assert!(all.contains(&"zz-late".to_owned()));
}

#[tokio::test]
async fn list_collects_across_a_restart_without_duplicates() {
    let h = start_with_objects().await;
    let api = api(&h);
    let mut pager = api.pager(ListParams::default().with_limit(100));
    pager.next_page().await.unwrap().unwrap();
    seed(&h.sim, &configmaps(), configmap("default", "zz-late"));
    h.sim.compact();
    let all = pager.collect().await.unwrap();
    // `collect` restarted once and gathered exactly the new snapshot; the page read before
    // the restart is not part of it.
    let statuses: Vec<u16> = requests_to(&h.sim, PATH).iter().map(|r| r.status).collect();
    assert_eq!(statuses.iter().filter(|s| **s == 410).count(), 1);
    let names = names(&all.items);
    let unique: BTreeSet<&String> = names.iter().collect();
    assert_eq!((names.len(), unique.len()), (OBJECTS + 1, OBJECTS + 1));
}

#[tokio::test]
async fn a_410_on_the_first_page_is_returned_not_retried() {
    let h = start_with_objects().await;
    h.sim
        .faults()
        .set_plan(FaultPlan::new(1).fail(Verb::List, 1.0, &[410]));
    let err = api(&h)
        .list(&ListParams::default().with_limit(100))
        .await
        .unwrap_err();
    assert!(err.is_gone(), "{err}");
    assert_eq!(requests_to(&h.sim, PATH).len(), 1);
}

#[tokio::test]
async fn without_a_limit_the_list_is_one_request() {
    let h = start_with_objects().await;
    let list = api(&h).list(&ListParams::default()).await.unwrap();
    assert_eq!(list.items.len(), OBJECTS);
    assert_eq!(requests_to(&h.sim, PATH).len(), 1);
}

#[tokio::test]
async fn a_list_that_keeps_expiring_gives_up_after_three_restarts() {
    let h = start_with_objects().await;
    let api = api(&h);
    let mut pager = api.pager(ListParams::default().with_limit(100));
    let mut restarts = 0;
    let outcome = loop {
        match pager.next_page().await {
            Some(Ok(page)) => {
                restarts += usize::from(page.restarted);
                // Compact after every page: each continue token expires before it is used.
                seed(
                    &h.sim,
                    &configmaps(),
                    configmap("default", &format!("churn-{restarts}")),
                );
                h.sim.compact();
            }
            Some(Err(e)) => break e,
            None => panic!("the list cannot complete while every token expires"),
        }
    };
    assert!(outcome.is_gone(), "{outcome}");
    assert_eq!(restarts, kube_gc::client::pager::MAX_RESTARTS as usize);
    assert!(pager.next_page().await.is_none());
}
