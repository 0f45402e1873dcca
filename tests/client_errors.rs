//! Error mapping through real responses of the simulated API server: every error a controller
//! asks about (`is_not_found()`, `is_gone()`, `retry_after()`…) comes from an actual HTTP
//! exchange here, plus the transport's own failures (timeouts, refused connections) and the
//! client's `Retry-After` retries.

mod client_support;

use std::time::Duration;

use client_support::{configmap, job, jobs, requests_to, seed, start, start_with, unthrottled};
use kube_gc::api::Job;
use kube_gc::client::config::Auth;
use kube_gc::client::{
    Api, ApiErrorKind, Client, Error, ListParams, PostParams, ResourceRef, VersionMatch,
};
use kube_gc::sim::faults::{FaultPlan, Verb};
use kube_gc::sim::SimConfig;
use serde_json::{json, Value};

const JOBS: &str = "/apis/batch/v1/namespaces/default/jobs";

fn configmaps_in_default(client: &Client) -> Api<Value> {
    let cms = ResourceRef::new("", "v1", "configmaps", "ConfigMap", true);
    Api::dynamic(client.clone(), cms, Some("default"))
}

#[tokio::test]
async fn not_found_carries_the_status_details() {
    let h = start().await;
    let api: Api<Job> = Api::namespaced(h.client.clone(), "default");
    let err = api.get("missing").await.unwrap_err();
    assert!(err.is_not_found());
    assert_eq!(err.code(), Some(404));
    let status = err.status().unwrap();
    assert_eq!(
        status.details.as_ref().unwrap().name.as_deref(),
        Some("missing")
    );
    assert!(!err.is_retryable());
}

#[tokio::test]
async fn a_malformed_continue_token_is_a_bad_request() {
    let h = start().await;
    let api: Api<Job> = Api::namespaced(h.client.clone(), "default");
    let params = ListParams {
        continue_token: Some("not-a-token".into()),
        limit: Some(10),
        ..Default::default()
    };
    let err = api.list_page(&params).await.unwrap_err();
    assert!(err.is_bad_request(), "{err}");
}

#[tokio::test]
async fn an_exact_read_of_a_compacted_version_is_expired() {
    let h = start().await;
    let old = h.sim.resource_version().to_string();
    seed(&h.sim, &jobs(), job("default", "j"));
    h.sim.compact();
    let api: Api<Job> = Api::namespaced(h.client.clone(), "default");
    let params = ListParams {
        resource_version: Some(old),
        resource_version_match: Some(VersionMatch::Exact),
        ..Default::default()
    };
    let err = api.list(&params).await.unwrap_err();
    assert!(err.is_gone() && err.is_expired(), "{err}");
    assert_eq!(err.code(), Some(410));
}

#[tokio::test(start_paused = true)]
async fn a_version_from_the_future_is_too_large_resource_version() {
    let h = start_with(SimConfig::default(), unthrottled().without_timeouts()).await;
    let ahead = (h.sim.resource_version() + 1000).to_string();
    let api: Api<Job> = Api::namespaced(h.client.clone(), "default");
    let params = ListParams {
        resource_version: Some(ahead),
        resource_version_match: Some(VersionMatch::NotOlderThan),
        ..Default::default()
    };
    let err = api.list_page(&params).await.unwrap_err();
    assert!(err.is_too_large_resource_version(), "{err}");
    assert!(err.is_retryable());
}

#[tokio::test]
async fn an_invalid_object_lists_its_causes() {
    let h = start().await;
    let api = configmaps_in_default(&h.client);
    let mut bad = configmap("default", "bad-owner");
    bad["metadata"]["ownerReferences"] =
        json!([{"apiVersion": "v1", "kind": "ConfigMap", "name": "owner", "uid": ""}]);
    let err = api.create(&PostParams::default(), &bad).await.unwrap_err();
    assert!(err.is_invalid(), "{err}");
    assert_eq!(err.code(), Some(422));
    let causes = err.status().unwrap().causes();
    assert!(!causes.is_empty());
    assert!(causes
        .iter()
        .any(|c| c.field.as_deref().is_some_and(|f| f.contains("uid"))));
}

#[tokio::test]
async fn a_missing_token_is_unauthorized_and_not_retried_for_a_static_credential() {
    let h = start_with(SimConfig::default().with_token("s3cret"), unthrottled()).await;
    let mut config = client_support::config_for(&h.sim, &h.dir);
    // The kubeconfig's token works …
    let with_token = Client::new(&config, &unthrottled()).unwrap();
    configmaps_in_default(&with_token)
        .list(&ListParams::default())
        .await
        .unwrap();
    // … and without it the server answers 401, once.
    config.auth = Auth::None;
    let anonymous = Client::new(&config, &unthrottled()).unwrap();
    let before = h.sim.journal().len();
    let err = configmaps_in_default(&anonymous)
        .list(&ListParams::default())
        .await
        .unwrap_err();
    assert!(err.is_unauthorized(), "{err}");
    assert_eq!(err.code(), Some(401));
    assert_eq!(h.sim.journal().len(), before + 1);
}

#[tokio::test]
async fn server_errors_are_typed_and_retryable_but_not_retried_without_retry_after() {
    let h = start().await;
    let api: Api<Job> = Api::namespaced(h.client.clone(), "default");
    for (code, kind) in [
        (500, ApiErrorKind::InternalError),
        (503, ApiErrorKind::ServiceUnavailable),
    ] {
        h.sim
            .faults()
            .set_plan(FaultPlan::new(7).fail(Verb::Get, 1.0, &[code]));
        h.sim.journal().clear();
        let err = api.get("any").await.unwrap_err();
        assert_eq!(err.kind(), Some(kind), "{err}");
        assert!(err.is_retryable());
        assert_eq!(h.sim.journal().len(), 1, "no retry without Retry-After");
    }
}

/// On a paused clock: each 429 with `Retry-After: 2` is waited out and the request is sent
/// again; after the client's limit of 10 retries the 429 is returned with its wait.
#[tokio::test(start_paused = true)]
async fn too_many_requests_is_retried_after_the_wait_the_server_asks_for() {
    let h = start_with(SimConfig::default(), unthrottled().without_timeouts()).await;
    seed(&h.sim, &jobs(), job("default", "j"));
    let api: Api<Job> = Api::namespaced(h.client.clone(), "default");

    h.sim.faults().set_plan(FaultPlan::new(3).throttle(1.0, 2));
    let started = tokio::time::Instant::now();
    let err = api.get("j").await.unwrap_err();
    assert!(err.is_too_many_requests(), "{err}");
    assert_eq!(err.retry_after(), Some(Duration::from_secs(2)));
    assert_eq!(requests_to(&h.sim, JOBS).len(), 11);
    assert_eq!(started.elapsed(), Duration::from_secs(20));

    // Throttled half of the time: the request gets through after some waits.
    h.sim.journal().clear();
    h.sim.faults().set_plan(FaultPlan::new(11).throttle(0.5, 1));
    let job = api.get("j").await.unwrap();
    assert_eq!(job.metadata.name.as_deref(), Some("j"));
    let statuses: Vec<u16> = requests_to(&h.sim, JOBS).iter().map(|r| r.status).collect();
    assert_eq!(statuses.last(), Some(&200));
    assert!(statuses[..statuses.len() - 1].iter().all(|s| *s == 429));
}

/// On a paused clock: a server slower than the request timeout is a client-side timeout.
#[tokio::test(start_paused = true)]
async fn a_slow_answer_is_a_timeout() {
    let mut options = unthrottled().without_timeouts();
    options.request_timeout = Some(Duration::from_secs(1));
    let plan = FaultPlan::new(5).latency(Duration::from_secs(5), Duration::from_secs(5));
    let h = start_with(SimConfig::default().with_fault_plan(plan), options).await;
    let api: Api<Job> = Api::namespaced(h.client.clone(), "default");
    let err = api.get("j").await.unwrap_err();
    assert!(matches!(err, Error::Timeout { .. }), "{err:?}");
    assert!(err.is_timeout() && err.is_retryable());
}

#[tokio::test]
async fn a_refused_connection_is_a_connection_error() {
    let h = start().await;
    let mut config = client_support::config_for(&h.sim, &h.dir);
    // A port nothing listens on: bind one, note it, close it.
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    drop(listener);
    config.server.set_port(Some(port)).unwrap();
    let client = Client::new(&config, &unthrottled()).unwrap();
    let err = configmaps_in_default(&client).get("x").await.unwrap_err();
    assert!(matches!(err, Error::Connection { .. }), "{err:?}");
    assert!(err.is_retryable() && err.code().is_none());
    // Nothing reached the simulated server.
    assert!(requests_to(&h.sim, "/api/v1").is_empty());
}
