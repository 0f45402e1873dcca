//! Discovery against the simulated API server: the documents read (two where aggregated
//! discovery is served — as `v2beta1` by v1.28, `v2` and `v2beta1` by v1.30–v1.32, `v2` alone by
//! v1.33 and later — one per group version more where it is not, with the same result), the
//! deletable set, the kind → resource mapping, and group versions that fail without failing
//! discovery.

mod client_support;

use client_support::{start_with, unthrottled};
use kube_gc::client::{Discovery, ResourceRef};
use kube_gc::sim::faults::{FaultPlan, Verb};
use kube_gc::sim::{AggregatedDiscovery, SimConfig};

fn describe(r: &ResourceRef) -> String {
    format!("{}/{}", r.api_version(), r.plural)
}

/// Discovery of a simulated server, and the paths it read.
async fn discover(config: SimConfig) -> (Discovery, Vec<String>) {
    let h = start_with(config, unthrottled()).await;
    let discovery = Discovery::run(&h.client).await.unwrap();
    let paths = h
        .sim
        .journal()
        .by_verb(Verb::Discovery)
        .iter()
        .map(|e| e.path.clone())
        .collect();
    (discovery, paths)
}

/// Every resource as one line, sorted: what a discovery found.
fn found(discovery: &Discovery) -> Vec<String> {
    let mut lines: Vec<String> = discovery
        .resources()
        .iter()
        .map(|r| {
            format!(
                "{:?} {:?} {:?} {}",
                r.resource, r.verbs, r.short_names, r.preferred
            )
        })
        .collect();
    lines.sort();
    lines
}

#[tokio::test]
async fn aggregated_discovery_reads_two_documents_and_finds_what_the_legacy_documents_say() {
    let (aggregated, paths) = discover(SimConfig::default()).await;
    assert_eq!(paths, ["/api", "/apis"]);
    let (legacy, legacy_paths) =
        discover(SimConfig::default().with_aggregated_discovery(AggregatedDiscovery::None)).await;
    for expected in [
        "/api",
        "/apis",
        "/api/v1",
        "/apis/batch/v1",
        "/apis/batch.volcano.sh/v1alpha1",
    ] {
        assert!(
            legacy_paths.contains(&expected.to_owned()),
            "{expected} not read: {legacy_paths:?}"
        );
    }
    assert_eq!(
        legacy_paths.len(),
        11,
        "the roots and 9 group versions: {legacy_paths:?}"
    );
    assert!(aggregated.failures().is_empty() && legacy.failures().is_empty());
    assert_eq!(found(&aggregated), found(&legacy));
}

/// Every release's server is read in two requests, each answered in the newest form it serves,
/// and says what the legacy documents say: a v1.33 server (`v2` only) no longer sends kube-gc
/// to the one-request-per-group-version fallback.
#[tokio::test]
async fn every_release_is_read_in_two_requests_in_the_newest_form_it_serves() {
    let (legacy, _) =
        discover(SimConfig::default().with_aggregated_discovery(AggregatedDiscovery::None)).await;
    for (served, answered) in [
        (AggregatedDiscovery::V2Beta1, "v=v2beta1"),
        (AggregatedDiscovery::Both, "v=v2;"),
        (AggregatedDiscovery::V2, "v=v2;"),
    ] {
        let h = start_with(
            SimConfig::default().with_aggregated_discovery(served),
            unthrottled(),
        )
        .await;
        let discovery = Discovery::run(&h.client).await.unwrap();
        let journal = h.sim.journal().by_verb(Verb::Discovery);
        let paths: Vec<&str> = journal.iter().map(|e| e.path.as_str()).collect();
        assert_eq!(paths, ["/api", "/apis"], "{served:?}");
        for entry in &journal {
            let content_type = entry.content_type.as_deref().unwrap_or_default();
            assert!(
                content_type.contains("as=APIGroupDiscoveryList")
                    && content_type.contains(answered),
                "{served:?}: {content_type}"
            );
        }
        assert!(discovery.failures().is_empty(), "{served:?}");
        assert_eq!(found(&discovery), found(&legacy), "{served:?}");
    }
}

#[tokio::test]
async fn discovery_finds_every_served_resource_with_kind_scope_and_verbs() {
    let (discovery, _) = discover(SimConfig::default()).await;
    assert!(discovery.failures().is_empty());

    let deletable: Vec<String> = discovery.deletable().into_iter().map(describe).collect();
    for expected in [
        "v1/pods",
        "v1/configmaps",
        "v1/namespaces",
        "batch/v1/jobs",
        "apps/v1/replicasets",
        "coordination.k8s.io/v1/leases",
        "rbac.authorization.k8s.io/v1/clusterroles",
        "batch.volcano.sh/v1alpha1/jobs",
    ] {
        assert!(
            deletable.contains(&expected.to_owned()),
            "{expected} missing: {deletable:?}"
        );
    }
    assert!(deletable.iter().all(|r| !r.contains("/status")));

    // Two kinds named Job, told apart by apiVersion, as an ownerReference does.
    let batch = discovery.resource_for_kind("batch/v1", "Job").unwrap();
    assert_eq!(batch.resource.plural, "jobs");
    assert_eq!(batch.resource.group, "batch");
    let volcano = discovery
        .resource_for_kind("batch.volcano.sh/v1alpha1", "Job")
        .unwrap();
    assert_eq!(volcano.resource.group, "batch.volcano.sh");
    assert!(volcano.short_names.contains(&"vcjob".to_owned()));
    let role = discovery
        .resource_for_kind("rbac.authorization.k8s.io/v1", "ClusterRole")
        .unwrap();
    assert!(!role.resource.namespaced);
    assert!(discovery.resource_for_kind("v1", "Widget").is_none());
}

#[tokio::test]
async fn failing_group_versions_are_reported_and_the_rest_is_kept() {
    // Group versions have documents of their own only where discovery is not aggregated.
    let h = start_with(
        SimConfig::default().with_aggregated_discovery(AggregatedDiscovery::None),
        unthrottled(),
    )
    .await;
    // Seed 6 with a 30% failure rate passes `/api` and `/apis` (the first two decisions) and
    // fails exactly one of the group-version documents read after them.
    h.sim
        .faults()
        .set_plan(FaultPlan::new(6).fail(Verb::Discovery, 0.3, &[503]));
    let discovery = Discovery::run(&h.client).await.unwrap();

    // Which document gets which decision depends on arrival order, but how many fail does not.
    let failed = discovery.failures();
    assert_eq!(failed.len(), 1);
    let served = discovery.resources().len();
    assert!(served > 0, "the groups that answered are kept");
    for failure in failed {
        assert!(failure.error.is_retryable(), "{}", failure.error);
        let group = failure
            .group_version
            .rsplit_once('/')
            .map_or("", |(g, _)| g);
        assert!(discovery.group_failed(group));
        assert!(discovery
            .resources()
            .iter()
            .all(|r| r.resource.api_version() != failure.group_version));
    }
}

#[tokio::test]
async fn a_failing_root_document_fails_discovery() {
    let h = start_with(SimConfig::default(), unthrottled()).await;
    h.sim
        .faults()
        .set_plan(FaultPlan::new(1).fail(Verb::Discovery, 1.0, &[500]));
    let err = Discovery::run(&h.client).await.unwrap_err();
    assert_eq!(err.code(), Some(500));
}
