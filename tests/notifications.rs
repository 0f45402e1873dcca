//! The notifier against a local webhook receiver, on tokio's paused clock: a batch per interval
//! saying what was deleted, what an `Audit` policy would have deleted and what comes; a receiver
//! that answers 500, takes its time, refuses connections or refuses the batch for good is tried
//! again with back-off within the interval and the batch then dropped, counted; the deletion
//! path never waits; the last batch goes out at shutdown.

mod notify_support;

use std::sync::Arc;
use std::time::Duration;

use chrono::{DateTime, Utc};
use kube_gc::clock::{SharedClock, TokioClock};
use kube_gc::controllers::deleted::{DeletionRecord, SharedFeed};
use kube_gc::controllers::pending::{Pending, PendingDeletion, PendingQuery, SharedPendingSource};
use kube_gc::controllers::retention::policy::PolicyId;
use kube_gc::metrics::PendingCollector;
use kube_gc::notify::{Notifier, NotifyMetrics, NotifyOptions, WebhookUrl, FLAG_DESTINATION};
use notify_support::{refusing_url, Answer, Receiver};
use parking_lot::Mutex;
use tokio::task::JoinHandle;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

fn epoch() -> DateTime<Utc> {
    DateTime::parse_from_rfc3339("2026-11-22T08:00:00Z")
        .map(|t| t.with_timezone(&Utc))
        .unwrap_or_default()
}

fn record(name: &str, audit: bool) -> DeletionRecord {
    DeletionRecord {
        controller: "retention",
        policy: Some(PolicyId::cluster("nightly")),
        audit,
        kind: "Pod".into(),
        namespace: Some("ci".into()),
        name: name.into(),
        uid: format!("uid-{name}"),
        reason: "ttl",
        at: epoch(),
    }
}

/// A notifier sending to `url` every minute, what comes read from `coming`.
struct Running {
    feed: SharedFeed,
    metrics: Arc<NotifyMetrics>,
    stop: CancellationToken,
    task: JoinHandle<()>,
    started: Instant,
}

impl Running {
    async fn stop(self) {
        self.stop.cancel();
        self.task.await.expect("the notifier's task");
    }

    /// Sleeps until `seconds` after the start.
    async fn until(&self, seconds: u64) {
        tokio::time::sleep_until(self.started + Duration::from_secs(seconds)).await;
    }
}

fn start(url: &str, coming: Arc<Mutex<Vec<Pending>>>) -> Running {
    let clock: SharedClock = Arc::new(TokioClock::starting_at(epoch()));
    let pending = PendingCollector::default();
    let source: SharedPendingSource =
        Arc::new(move |_: &PendingQuery| -> Vec<Pending> { coming.lock().clone() });
    pending.add(source, Arc::clone(&clock));
    let metrics = Arc::new(NotifyMetrics::default());
    let options = NotifyOptions {
        webhook: Some(WebhookUrl::parse(url).expect("url")),
        interval: Duration::from_secs(60),
        request_timeout: Duration::from_secs(10),
        items: 5,
    };
    let notifier =
        Notifier::new(options, None, pending, clock, Arc::clone(&metrics)).expect("the notifier");
    let feed = notifier.feed();
    let stop = CancellationToken::new();
    let task = tokio::spawn(notifier.run(stop.clone()));
    Running {
        feed,
        metrics,
        stop,
        task,
        started: Instant::now(),
    }
}

/// A Job the TTL controller deletes 30 s after the first round.
fn a_job_due_soon() -> Pending {
    Pending {
        controller: "ttl-after-finished",
        policy: None,
        audit: false,
        due_now: 0,
        within: vec![1],
        earliest: vec![PendingDeletion {
            kind: "Job".into(),
            namespace: Some("default".into()),
            name: "nightly-1".into(),
            uid: "uid-job".into(),
            at: Some(epoch() + chrono::Duration::seconds(90)),
            reason: "ttl",
        }],
    }
}

#[tokio::test(start_paused = true)]
async fn a_batch_a_minute_says_what_was_deleted_would_have_been_and_comes() {
    let receiver = Receiver::start(Answer::Accept).await;
    let coming = Arc::new(Mutex::new(vec![a_job_due_soon()]));
    let running = start(&receiver.url(), Arc::clone(&coming));
    for name in ["a", "b", "c"] {
        running.feed.record(record(name, false));
    }
    running.feed.record(record("trial", true));
    running.until(59).await;
    assert!(
        receiver.received().is_empty(),
        "nothing before the interval"
    );
    running.until(61).await;
    let received = receiver.received();
    assert_eq!(received.len(), 1);
    let sent = &received[0];
    assert_eq!(sent.path, "/services/T000/B000/s3cr3t");
    assert_eq!(sent.content_type, "application/json");
    let body = &sent.body;
    assert_eq!(body["destination"], FLAG_DESTINATION);
    assert_eq!(body["deleted"]["total"], 3);
    assert_eq!(body["wouldDelete"]["total"], 1);
    assert_eq!(body["upcoming"]["total"], 1);
    assert_eq!(body["upcoming"]["items"][0]["name"], "nightly-1");
    assert_eq!(
        body["upcoming"]["items"][0]["deletesAt"],
        "2026-11-22T08:01:30Z"
    );
    let text = body["text"].as_str().expect("text");
    assert!(
        text.contains("3 deleted in the last 1m; 1 would have been deleted by policies in Audit mode (kept); 1 due in the next 1m"),
        "{text}"
    );
    assert_eq!(running.metrics.sent_count(FLAG_DESTINATION), 1);

    // Nothing done and nothing coming: no request.
    coming.lock().clear();
    running.until(181).await;
    assert_eq!(receiver.received().len(), 1);
    running.stop().await;
}

#[tokio::test(start_paused = true)]
async fn a_receiver_answering_500_is_tried_again_with_back_off_then_the_batch_is_dropped() {
    let receiver = Receiver::start(Answer::Status(500, None)).await;
    let running = start(&receiver.url(), Arc::default());
    running.feed.record(record("lost", false));
    running.until(125).await;
    // Tried at 60 s, then 1, 2, 4, 8 and 16 s apart; 32 s more would pass the next round.
    let at: Vec<u64> = receiver
        .received()
        .iter()
        .map(|r| (r.at - running.started).as_secs())
        .collect();
    assert_eq!(at, [60, 61, 63, 67, 75, 91]);
    assert_eq!(running.metrics.dropped_count(FLAG_DESTINATION), 1);
    assert_eq!(running.metrics.failed_count(FLAG_DESTINATION), 6);

    // The receiver is back: the next batch gets through, with only what came since.
    receiver.answer(Answer::Accept);
    running.feed.record(record("kept", false));
    running.until(185).await;
    let last = receiver.received().pop().expect("a request");
    assert_eq!(last.body["deleted"]["total"], 1);
    assert_eq!(last.body["deleted"]["items"][0]["name"], "kept");
    assert_eq!(running.metrics.sent_count(FLAG_DESTINATION), 1);
    running.stop().await;
}

#[tokio::test(start_paused = true)]
async fn a_slow_receiver_never_holds_up_the_deletions_and_a_batch_is_sent_at_most_once_a_round() {
    let receiver = Receiver::start(Answer::Slowly(Duration::from_secs(30))).await;
    let running = start(&receiver.url(), Arc::default());
    running.feed.record(record("first", false));
    running.until(65).await;
    // A round is waiting on the receiver: recording still returns at once, into the next batch.
    let before = Instant::now();
    for i in 0..10_000 {
        running.feed.record(record(&format!("during-{i}"), false));
    }
    assert_eq!(before.elapsed(), Duration::ZERO);
    running.until(130).await;
    // Each try timed out after 10 s: 60, 71, 83, 97, 115; the round then gave up.
    assert_eq!(receiver.received().len(), 5);
    assert_eq!(running.metrics.dropped_count(FLAG_DESTINATION), 1);
    // The round due at 120 s found the sink still sending and left its batch gathering; the
    // next takes everything since the first.
    receiver.answer(Answer::Accept);
    running.until(185).await;
    let last = receiver.received().pop().expect("a request");
    assert_eq!(last.body["deleted"]["total"], 10_000);
    assert_eq!(
        last.body["deleted"]["items"].as_array().map(Vec::len),
        Some(5)
    );
    assert_eq!(last.body["deleted"]["omitted"], 9_995);
    running.stop().await;
}

#[tokio::test(start_paused = true)]
async fn a_refused_connection_is_tried_again_and_a_refused_batch_is_not() {
    let url = refusing_url().await;
    let running = start(&url, Arc::default());
    running.feed.record(record("a", false));
    running.until(125).await;
    assert_eq!(running.metrics.dropped_count(FLAG_DESTINATION), 1);
    assert!(running.metrics.failed_count(FLAG_DESTINATION) >= 5);
    running.stop().await;

    // A 404 (a revoked Slack webhook) will be a 404 again: one request, dropped.
    let receiver = Receiver::start(Answer::Status(404, None)).await;
    let running = start(&receiver.url(), Arc::default());
    running.feed.record(record("a", false));
    running.until(125).await;
    assert_eq!(receiver.received().len(), 1);
    assert_eq!(running.metrics.dropped_count(FLAG_DESTINATION), 1);
    running.stop().await;
}

#[tokio::test(start_paused = true)]
async fn a_retry_after_is_waited_for() {
    let receiver = Receiver::start(Answer::Status(429, Some(20))).await;
    let running = start(&receiver.url(), Arc::default());
    running.feed.record(record("a", false));
    running.until(61).await;
    receiver.answer(Answer::Accept);
    running.until(100).await;
    let at: Vec<u64> = receiver
        .received()
        .iter()
        .map(|r| (r.at - running.started).as_secs())
        .collect();
    assert_eq!(at, [60, 80]);
    assert_eq!(running.metrics.sent_count(FLAG_DESTINATION), 1);
    running.stop().await;
}

#[tokio::test(start_paused = true)]
async fn the_last_batch_is_sent_once_when_stopped() {
    let receiver = Receiver::start(Answer::Accept).await;
    let running = start(&receiver.url(), Arc::default());
    running.feed.record(record("last", false));
    running.until(10).await;
    running.stop().await;
    let received = receiver.received();
    assert_eq!(received.len(), 1);
    assert_eq!(received[0].body["deleted"]["items"][0]["name"], "last");
}
