//! Leader election end to end: candidates against the simulated API server over real sockets,
//! on tokio's paused clock. Who led when is recorded in a timeline and checked against the
//! server's request journal.

mod ops_support;

use std::time::Duration;

use kube_gc::api::Job;
use kube_gc::client::{Api, Client};
use kube_gc::leaderelection::{Leadership, Outcome};
use kube_gc::sim::faults::{FaultPlan, Verb};
use ops_support::{
    wait_until, Candidate, Cluster, StallingProxy, Timeline, LEASE_DURATION, MAX_ACQUIRE_WAIT,
    RENEW_DEADLINE, RETRY_PERIOD,
};
use tokio::task::JoinSet;
use tokio::time::Instant;

/// Starts `a` and `b` and waits until one of them leads; returns them leader first.
async fn elect(cluster: &Cluster, timeline: &Timeline) -> (Candidate, Candidate) {
    let a = Candidate::start("a", cluster.client("a", None), timeline);
    let b = Candidate::start("b", cluster.client("b", None), timeline);
    wait_until(MAX_ACQUIRE_WAIT, || a.is_leader() || b.is_leader()).await;
    if a.is_leader() {
        (a, b)
    } else {
        (b, a)
    }
}

#[tokio::test(start_paused = true)]
async fn two_candidates_elect_exactly_one_and_it_keeps_renewing() {
    let cluster = Cluster::start().await;
    let timeline = Timeline::default();
    let (leader, follower) = elect(&cluster, &timeline).await;

    // A minute of steady state: same leader, renewing about every retry period.
    tokio::time::sleep(Duration::from_secs(60)).await;
    assert!(leader.is_leader() && !follower.is_leader());
    match follower.leadership.current() {
        Leadership::Following { holder } => assert_eq!(holder.as_deref(), Some(&*leader.name)),
        other => panic!("the follower should know the holder, got {other:?}"),
    }
    let spec = cluster.lease_spec();
    assert_eq!(spec["holderIdentity"], leader.name.as_str());
    assert_eq!(spec["leaseDurationSeconds"], 15);
    assert_eq!(spec["leaseTransitions"], 0);
    // MicroTime: six fractional digits.
    let renew = spec["renewTime"].as_str().unwrap();
    assert_eq!(renew.len(), "2026-11-22T00:00:00.000000Z".len(), "{renew}");

    let writes = cluster.lease_writes();
    assert!(writes
        .iter()
        .all(|(agent, holder)| *agent == leader.name && *holder == leader.name));
    // One create, then one PUT per renewal (retry period 2 s, so ~30 in a minute).
    assert!((28..=33).contains(&writes.len()), "{} writes", writes.len());
    // The leader renews onto the version it knows, without reading the lease first.
    let leader_gets = cluster
        .sim
        .journal()
        .by_verb(Verb::Get)
        .iter()
        .filter(|e| e.header("user-agent") == Some(&*leader.name))
        .count();
    assert!(
        leader_gets <= 2,
        "the leader read the lease {leader_gets} times"
    );
    timeline.assert_never_two_leaders();
    leader.kill().await;
    follower.kill().await;
}

#[tokio::test(start_paused = true)]
async fn a_killed_leader_is_replaced_after_the_lease_duration() {
    let cluster = Cluster::start().await;
    let timeline = Timeline::default();
    let (leader, follower) = elect(&cluster, &timeline).await;
    tokio::time::sleep(Duration::from_secs(7)).await;

    let killed_at = Instant::now();
    leader.kill().await;
    let took = wait_until(Duration::from_secs(30), || follower.is_leader()).await;

    // Not before the lease can have expired (its last renewal was at most one retry period
    // before the kill), and at most one jittered attempt after the follower saw that renewal
    // plus the lease duration.
    assert!(
        took >= LEASE_DURATION - RETRY_PERIOD,
        "took over after {took:?}"
    );
    assert!(
        took <= LEASE_DURATION + MAX_ACQUIRE_WAIT * 2,
        "took over after {took:?}"
    );
    let spec = cluster.lease_spec();
    assert_eq!(spec["holderIdentity"], follower.name.as_str());
    assert_eq!(spec["leaseTransitions"], 1);
    assert!(timeline.started_leading(&follower.name).unwrap() > killed_at);
    timeline.assert_never_two_leaders();
    follower.kill().await;
}

#[tokio::test(start_paused = true)]
async fn a_stalled_leader_stops_leading_before_the_other_takes_over() {
    let cluster = Cluster::start().await;
    let timeline = Timeline::default();
    let address = format!(
        "{}:{}",
        cluster.sim.url().host_str().unwrap(),
        cluster.sim.url().port().unwrap()
    );
    let proxy = StallingProxy::start(address).await;
    let a = Candidate::start("a", cluster.client("a", Some(&proxy.url)), &timeline);
    wait_until(MAX_ACQUIRE_WAIT, || a.is_leader()).await;
    let b = Candidate::start("b", cluster.client("b", None), &timeline);
    tokio::time::sleep(Duration::from_secs(5)).await;
    assert!(a.is_leader() && !b.is_leader());

    let stalled_at = Instant::now();
    proxy.stall();
    wait_until(Duration::from_secs(40), || b.is_leader()).await;
    let a_stopped = timeline
        .entries()
        .into_iter()
        .find(|(_, name, leading)| name == "a" && !leading)
        .map(|(at, _, _)| at)
        .expect("a stopped leading");
    // A hung renewal is cut at the renew deadline (plus at most one retry period before the
    // round began).
    assert!(a_stopped - stalled_at <= RENEW_DEADLINE + RETRY_PERIOD);
    assert_eq!(a.outcome().await, Outcome::Lost);
    timeline.assert_never_two_leaders();
    assert_eq!(cluster.lease_spec()["holderIdentity"], "b");
    b.kill().await;
}

#[tokio::test(start_paused = true)]
async fn failing_renewals_lose_leadership_at_the_renew_deadline() {
    let cluster = Cluster::start().await;
    let timeline = Timeline::default();
    let a = Candidate::start("a", cluster.client("a", None), &timeline);
    wait_until(MAX_ACQUIRE_WAIT, || a.is_leader()).await;
    tokio::time::sleep(Duration::from_secs(3)).await;

    let failing =
        FaultPlan::new(7)
            .fail(Verb::Update, 1.0, &[500, 503])
            .fail(Verb::Get, 1.0, &[500]);
    let faults_at = Instant::now();
    cluster.sim.faults().set_plan(failing);
    let mut leadership = a.leadership.clone();
    let token = leadership.leading().await.unwrap();
    token.cancelled().await;
    let lost_after = faults_at.elapsed();
    // The last good renewal was at most one retry period before the faults; the round after it
    // starts one retry period later and gives up renew_deadline after that.
    assert!(
        lost_after >= RENEW_DEADLINE - RETRY_PERIOD,
        "{lost_after:?}"
    );
    assert!(
        lost_after <= RENEW_DEADLINE + RETRY_PERIOD,
        "{lost_after:?}"
    );
    assert_eq!(a.outcome().await, Outcome::Lost);
    assert!(cluster.sim.faults().injected().errors > 0);
}

#[tokio::test(start_paused = true)]
async fn a_released_lease_is_taken_over_at_the_next_attempt() {
    let cluster = Cluster::start().await;
    let timeline = Timeline::default();
    let (leader, follower) = elect(&cluster, &timeline).await;
    tokio::time::sleep(Duration::from_secs(5)).await;

    let released_at = Instant::now();
    let leader_name = leader.name.clone();
    leader.stop.cancel();
    assert_eq!(leader.outcome().await, Outcome::Stopped);
    let released = cluster.lease_spec();
    assert_eq!(released["holderIdentity"], "");
    assert_eq!(released["leaseDurationSeconds"], 1);

    let took = wait_until(MAX_ACQUIRE_WAIT * 2, || follower.is_leader()).await;
    assert!(
        released_at.elapsed() <= MAX_ACQUIRE_WAIT + Duration::from_millis(200),
        "{took:?}"
    );
    let spec = cluster.lease_spec();
    assert_eq!(spec["holderIdentity"], follower.name.as_str());
    assert_eq!(spec["leaseTransitions"], 1);
    assert!(timeline.started_leading(&follower.name).is_some());
    assert_ne!(leader_name, follower.name);
    timeline.assert_never_two_leaders();
    follower.kill().await;
}

#[tokio::test(start_paused = true)]
async fn aborting_the_elector_cancels_the_leading_token() {
    let cluster = Cluster::start().await;
    let timeline = Timeline::default();
    let a = Candidate::start("a", cluster.client("a", None), &timeline);
    let mut leadership = a.leadership.clone();
    let token = leadership.leading().await.unwrap();
    assert!(!token.is_cancelled());
    a.kill().await;
    assert!(token.is_cancelled());
    assert!(!leadership.current().is_leader());
}

/// Keeps `client`'s token bucket empty: `callers` tasks each sending GETs back to back, as the
/// garbage collector's monitors do when they all retry their watches at once.
fn exhaust(client: &Client, callers: usize) -> JoinSet<()> {
    let mut tasks = JoinSet::new();
    for _ in 0..callers {
        let api: Api<Job> = Api::namespaced(client.clone(), "default");
        tasks.spawn(async move {
            loop {
                let _ = api.get_opt("absent").await;
            }
        });
    }
    tasks
}

/// Successful renewals (PUTs of the Lease) sent with `agent`.
fn renewals_by(cluster: &Cluster, agent: &str) -> usize {
    cluster
        .sim
        .journal()
        .by_verb(Verb::Update)
        .iter()
        .filter(|e| e.status < 300 && e.header("user-agent") == Some(agent))
        .count()
}

/// One bucket per client: with the informers' limiter exhausted, the leader still renews on time, because
/// leader election has a bucket of its own (as in kube-controller-manager). The same elector on
/// the informers' client loses the Lease: the test would catch a shared bucket.
#[tokio::test(start_paused = true)]
async fn renewals_go_out_while_the_informers_limiter_is_exhausted() {
    // 1 request/s, burst 1: twenty waiting callers put each new request 20 s back.
    let (qps, burst, callers) = (1.0, 1, 20);

    let cluster = Cluster::start().await;
    let timeline = Timeline::default();
    let base = cluster.throttled_client("a", qps, burst);
    let informers = base.for_component("metadata-informers", 1.0);
    let a = Candidate::start("a", base.for_component("leader-election", 1.0), &timeline);
    wait_until(MAX_ACQUIRE_WAIT, || a.is_leader()).await;
    let started = Instant::now();
    let mut hammer = exhaust(&informers, callers);
    tokio::time::sleep(Duration::from_secs(60)).await;
    assert!(a.is_leader(), "lost the lease behind the informers");
    // A renewal every retry period (2 s) on its own bucket of 1/s: about 30 in the minute.
    let renewals = renewals_by(&cluster, "a/leader-election");
    assert!((28..=31).contains(&renewals), "{renewals} renewals");
    // And the informers' bucket was empty all along: about one GET a second got out.
    let informer_gets = cluster.sim.journal().count_sent_by("metadata-informers");
    let elapsed = started.elapsed().as_secs() as usize;
    assert!(
        informer_gets <= elapsed + 2,
        "{informer_gets} GETs in {elapsed} s"
    );
    assert!(informer_gets >= elapsed - 2, "the hammer did not run");
    hammer.abort_all();
    a.kill().await;

    // The control: the same elector sharing the informers' bucket misses its renew deadline.
    let cluster = Cluster::start().await;
    let timeline = Timeline::default();
    let shared = cluster
        .throttled_client("b", qps, burst)
        .for_component("metadata-informers", 1.0);
    let b = Candidate::start("b", shared.clone(), &timeline);
    wait_until(MAX_ACQUIRE_WAIT, || b.is_leader()).await;
    let mut hammer = exhaust(&shared, callers);
    let mut leadership = b.leadership.clone();
    let token = leadership.leading().await.unwrap();
    let lost = tokio::time::timeout(Duration::from_secs(60), token.cancelled()).await;
    assert!(lost.is_ok(), "a shared bucket should have cost the lease");
    assert_eq!(b.outcome().await, Outcome::Lost);
    hammer.abort_all();
}
