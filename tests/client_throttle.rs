//! Client-side throttling against the simulated API server, on tokio's paused clock: requests
//! at `qps` / `burst` take exactly the virtual time the token bucket dictates, whether sent one
//! after another or all at once, and watches take one token to start and none while they
//! stream.
//!
//! The clients here have no timeouts (`without_timeouts`): on a paused clock any pending timer
//! would fire as soon as the test waits on a socket, and the only timers must be the throttle's.

mod client_support;

use std::time::Duration;

use client_support::{job, jobs, requests_to, seed, start_with, unthrottled};
use futures_util::StreamExt;
use kube_gc::api::{Job, WatchEvent};
use kube_gc::client::{Api, ClientOptions, WatchParams};
use kube_gc::sim::SimConfig;
use tokio::time::Instant;

const QPS: f64 = 10.0;
const BURST: u32 = 5;

fn throttled() -> ClientOptions {
    unthrottled().without_timeouts().with_rate(QPS, BURST)
}

async fn harness() -> client_support::Harness {
    let h = start_with(SimConfig::default(), throttled()).await;
    seed(&h.sim, &jobs(), job("default", "j"));
    h
}

/// `requests` requests at QPS / BURST starting with a full bucket: the burst is free and each
/// further one waits 1/QPS.
fn expected(requests: u32) -> Duration {
    Duration::from_secs_f64(f64::from(requests.saturating_sub(BURST)) / QPS)
}

#[tokio::test(start_paused = true)]
async fn sequential_requests_take_the_time_the_bucket_dictates() {
    let h = harness().await;
    let api: Api<Job> = Api::namespaced(h.client.clone(), "default");
    let started = Instant::now();
    for _ in 0..25 {
        api.get("j").await.unwrap();
    }
    assert_eq!(started.elapsed(), expected(25));
    assert_eq!(expected(25), Duration::from_secs(2));
}

#[tokio::test(start_paused = true)]
async fn concurrent_requests_share_the_budget_of_one_client() {
    let h = harness().await;
    let started = Instant::now();
    let tasks: Vec<_> = (0..25)
        .map(|_| {
            // Clones of the client, and handles built from them, share one bucket.
            let api: Api<Job> = Api::namespaced(h.client.clone(), "default");
            tokio::spawn(async move { api.get("j").await.map(|_| ()) })
        })
        .collect();
    for task in tasks {
        task.await.unwrap().unwrap();
    }
    assert_eq!(started.elapsed(), expected(25));
}

#[tokio::test(start_paused = true)]
async fn watches_take_a_token_to_start_and_none_while_streaming() {
    let h = harness().await;
    let api: Api<Job> = Api::namespaced(h.client.clone(), "default");
    let started = Instant::now();

    // Five watches spend the whole burst …
    let from = h.sim.resource_version().to_string();
    let mut watches = Vec::new();
    for _ in 0..BURST {
        watches.push(
            api.watch(&WatchParams::from_version(from.clone(), 3600))
                .await
                .unwrap(),
        );
    }
    assert_eq!(started.elapsed(), Duration::ZERO);

    // … and while they stay open and stream events, ten more requests proceed at the refill
    // rate: an open watch holds nothing back.
    for i in 0..10 {
        seed(&h.sim, &jobs(), job("default", &format!("e{i}")));
        for watch in &mut watches {
            match watch.next().await {
                Some(Ok(WatchEvent::Added(_))) => {}
                other => panic!("expected ADDED, got {other:?}"),
            }
        }
        api.get("j").await.unwrap();
    }
    assert_eq!(started.elapsed(), expected(BURST + 10));
    assert_eq!(
        requests_to(&h.sim, "/apis/batch/v1/namespaces/default/jobs").len(),
        (BURST + 10) as usize
    );
}

#[tokio::test(start_paused = true)]
async fn the_default_rate_is_20_per_second_with_bursts_of_30() {
    let options = ClientOptions::default().without_timeouts();
    let h = start_with(SimConfig::default(), options).await;
    seed(&h.sim, &jobs(), job("default", "j"));
    let api: Api<Job> = Api::namespaced(h.client.clone(), "default");
    let started = Instant::now();
    for _ in 0..50 {
        api.get("j").await.unwrap();
    }
    // 30 free, then 20 more at 20 per second.
    assert_eq!(started.elapsed(), Duration::from_secs(1));
}

/// Each component's client has a bucket of its own. With the informers' bucket
/// drained (a hundred requests queued behind it), a request of the leader election's client,
/// and of the garbage collector's (at twice the rate), goes out at once; each sends its own
/// `User-Agent`.
#[tokio::test(start_paused = true)]
async fn components_have_buckets_of_their_own_and_say_who_they_are() {
    let h = harness().await;
    let informers = h.client.for_component("metadata-informers", 1.0);
    let election = h.client.for_component("leader-election", 1.0);
    let collector = h.client.for_component("garbagecollector", 2.0);
    let started = Instant::now();
    // Drain the informers' bucket: 100 requests at 10/s, burst 5, is 9.5 s of waiting.
    for _ in 0..100 {
        let _ = informers.throttle().acquire().await;
    }
    assert_eq!(started.elapsed(), expected(100));
    let queued = tokio::spawn({
        let api: Api<Job> = Api::namespaced(informers.clone(), "default");
        async move { api.get("j").await.map(|_| Instant::now()) }
    });
    let sent_at = Instant::now();
    let api: Api<Job> = Api::namespaced(election.clone(), "default");
    api.get("j").await.unwrap();
    assert_eq!(
        sent_at.elapsed(),
        Duration::ZERO,
        "not behind the informers"
    );
    // Twice the rate and burst: ten requests fit in the garbage collector's burst.
    let api: Api<Job> = Api::namespaced(collector.clone(), "default");
    for _ in 0..10 {
        api.get("j").await.unwrap();
    }
    assert_eq!(sent_at.elapsed(), Duration::ZERO, "2 × burst");
    // The informers' own request still waits its turn.
    let informer_sent = queued.await.unwrap().unwrap();
    assert_eq!(informer_sent - sent_at, Duration::from_millis(100));

    let agents: Vec<String> = h
        .sim
        .journal()
        .entries()
        .iter()
        .filter_map(|e| e.header("user-agent").map(str::to_owned))
        .collect();
    let base = h.client.user_agent().to_owned();
    for component in ["leader-election", "garbagecollector", "metadata-informers"] {
        let agent = format!("{base}/{component}");
        assert!(agents.contains(&agent), "{agent} in {agents:?}");
    }
}
