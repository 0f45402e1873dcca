//! [`Sink`]: one destination — `--notify-webhook-url`, or a policy's Secret — its batch
//! gathering records, and [`deliver`], one round of sending it: resolve the URL, POST, try again
//! with back-off until the next round is due, then give up on the batch (counted, logged once
//! while the destination keeps failing).
//!
//! Contract:
//! - [`Sink::push`] only locks the batch for the time of a push: the deletion path never
//!   waits for a request.
//! - A round runs on its own task, at most one per sink at a time (a sink still sending when
//!   its next round is due keeps gathering instead), and ends by its deadline, whatever the
//!   receiver does: slow, refusing connections, answering 500.
//! - The delivery state — what the policy's `Notifying` condition says — changes only when
//!   something changes: a Secret read or not, a batch accepted or dropped.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use chrono::{DateTime, Utc};
use parking_lot::Mutex;
use tokio::time::Instant;

use kube_gc_client::Client;
use kube_gc_controllers::deleted::{DeletionRecord, Delivery};
use kube_gc_controllers::retention::policy::WebhookSecret;

use super::batch::Batch;
use super::metrics::NotifyMetrics;
use super::payload::{payload, worth_sending, Upcoming, Window};
use super::secret::{read_url, SecretProblem};
use super::webhook::{Sent, Webhook, WebhookUrl};

/// The first wait before trying a batch again; it doubles, up to [`MAX_BACKOFF`].
pub const FIRST_BACKOFF: Duration = Duration::from_secs(1);
/// The longest wait between two tries (a `Retry-After` is held to it too).
pub const MAX_BACKOFF: Duration = Duration::from_secs(60);

/// Where a sink's URL comes from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Target {
    /// `--notify-webhook-url`.
    Fixed(WebhookUrl),
    /// A policy's Secret, read before each round.
    Secret(WebhookSecret),
}

/// What a sink knows about its deliveries.
#[derive(Debug, Default)]
struct State {
    /// What the condition says (`None`: nothing tried yet).
    delivery: Option<Delivery>,
    /// The URL last read, for the last batch at shutdown.
    url: Option<WebhookUrl>,
    /// Batches dropped since the last one accepted: the failure was logged once.
    dropped_since: u64,
}

/// One destination.
pub struct Sink {
    /// `--notify-webhook-url`, or the policy (`ClusterRetentionPolicy/name`): the metrics'
    /// `destination` and the payload's.
    pub name: String,
    target: Mutex<Target>,
    batch: Mutex<Batch>,
    state: Mutex<State>,
    busy: AtomicBool,
}

impl Sink {
    /// A sink for `target`, gathering from `now`, keeping `items` records whole per list.
    pub fn new(name: String, target: Target, now: DateTime<Utc>, items: usize) -> Sink {
        Sink {
            name,
            target: Mutex::new(target),
            batch: Mutex::new(Batch::new(now, items)),
            state: Mutex::new(State::default()),
            busy: AtomicBool::new(false),
        }
    }

    /// Adds a record to the batch.
    pub fn push(&self, record: DeletionRecord) {
        self.batch.lock().push(record);
    }

    /// Points the sink at `target` (a policy's Secret reference changed).
    pub fn retarget(&self, target: Target) {
        let mut current = self.target.lock();
        if *current != target {
            *current = target;
            *self.state.lock() = State::default();
        }
    }

    /// What the policy's `Notifying` condition says.
    pub fn delivery(&self) -> Option<Delivery> {
        self.state.lock().delivery.clone()
    }

    /// The batch so far, if no round is sending: the sink is then busy until the round given
    /// it ends.
    pub fn start_round(self: &Arc<Self>, now: DateTime<Utc>) -> Option<(Round, Batch)> {
        if self.busy.swap(true, Ordering::AcqRel) {
            return None;
        }
        let batch = self.batch.lock().take(now);
        Some((
            Round {
                sink: Arc::clone(self),
            },
            batch,
        ))
    }

    fn set_delivery(&self, delivery: Delivery) {
        self.state.lock().delivery = Some(delivery);
    }
}

/// A round in progress: the sink is free again when it is dropped.
pub struct Round {
    sink: Arc<Sink>,
}

impl Drop for Round {
    fn drop(&mut self) {
        self.sink.busy.store(false, Ordering::Release);
    }
}

/// What one round needs besides its sink and batch.
pub struct RoundContext {
    /// Sends.
    pub webhook: Webhook,
    /// Reads Secrets (`None`: no policy has a destination of its own).
    pub client: Option<Client>,
    /// Counts.
    pub metrics: Arc<NotifyMetrics>,
    /// When the next round is due: this one gives up by then.
    pub deadline: Instant,
    /// The batch's end.
    pub now: DateTime<Utc>,
    /// How far ahead the round tells what comes.
    pub next: Duration,
}

/// Sends `batch` (and what comes, `upcoming`) to `round`'s sink, trying again until the
/// deadline.
pub async fn deliver(round: Round, batch: Batch, upcoming: Upcoming, cx: RoundContext) {
    let sink = &round.sink;
    let Some(url) = resolve(sink, cx.client.as_ref()).await else {
        if worth_sending(&batch, &upcoming) {
            // The condition says why already; the batch cannot go anywhere.
            cx.metrics.dropped(&sink.name);
        }
        return;
    };
    if !worth_sending(&batch, &upcoming) {
        return;
    }
    let window = Window {
        destination: &sink.name,
        to: cx.now,
        next: cx.next,
    };
    let body = payload(&batch, &upcoming, &window);
    let mut backoff = FIRST_BACKOFF;
    loop {
        let (why, after) = match cx.webhook.post(&url, &body).await {
            Sent::Delivered => return delivered(sink, &url, &cx.metrics),
            Sent::Refused { why } => {
                cx.metrics.failed(&sink.name);
                let why = format!("{why}, which trying again would not change");
                return dropped(sink, &url, &why, &cx.metrics);
            }
            Sent::Retry { why, after } => (why, after),
        };
        cx.metrics.failed(&sink.name);
        let wait = after.unwrap_or(backoff).min(MAX_BACKOFF);
        if Instant::now() + wait >= cx.deadline {
            let why = format!("{why}, until the next batch was due");
            return dropped(sink, &url, &why, &cx.metrics);
        }
        tracing::debug!(destination = %sink.name, %url, problem = %why, ?wait, "notification not delivered; trying again");
        tokio::time::sleep(wait).await;
        backoff = (backoff * 2).min(MAX_BACKOFF);
    }
}

/// The sink's URL: the flag's, or read from the policy's Secret now (the condition says what
/// is in the way, if anything).
async fn resolve(sink: &Sink, client: Option<&Client>) -> Option<WebhookUrl> {
    let target = sink.target.lock().clone();
    let secret = match target {
        Target::Fixed(url) => return Some(url),
        Target::Secret(secret) => secret,
    };
    let read = match client {
        Some(client) => read_url(client, &secret).await,
        None => Err(SecretProblem::Unreadable("no API client".to_owned())),
    };
    match read {
        Ok(url) => {
            let mut state = sink.state.lock();
            // A delivery's outcome stands until the next one; a Secret's problem is over.
            let about_the_secret = state
                .delivery
                .as_ref()
                .is_none_or(|d| !matches!(d.reason, "Delivered" | "Undeliverable"));
            if about_the_secret {
                state.delivery = Some(Delivery {
                    delivered: true,
                    reason: "SecretRead",
                    message: format!("batches go to {url}, read from {secret}"),
                });
            }
            state.url = Some(url.clone());
            Some(url)
        }
        Err(problem) => {
            let message = problem.describe(&secret);
            let changed = sink.delivery().is_none_or(|d| d.message != message);
            if changed {
                tracing::warn!(destination = %sink.name, reason = problem.reason(), problem = %message, "notifications cannot be sent");
            }
            sink.set_delivery(Delivery {
                delivered: false,
                reason: problem.reason(),
                message,
            });
            None
        }
    }
}

fn delivered(sink: &Sink, url: &WebhookUrl, metrics: &NotifyMetrics) {
    metrics.sent(&sink.name);
    let mut state = sink.state.lock();
    if state.dropped_since > 0 {
        tracing::info!(destination = %sink.name, %url, dropped = state.dropped_since, "notifications are delivered again");
    }
    state.dropped_since = 0;
    state.delivery = Some(Delivery {
        delivered: true,
        reason: "Delivered",
        message: format!("batches are delivered to {url}"),
    });
}

fn dropped(sink: &Sink, url: &WebhookUrl, why: &str, metrics: &NotifyMetrics) {
    metrics.dropped(&sink.name);
    let mut state = sink.state.lock();
    if state.dropped_since == 0 {
        tracing::warn!(destination = %sink.name, %url, problem = %why,
            "a notification batch could not be delivered and was dropped; until one is, further drops are only counted (kube_gc_notification_batches_dropped_total)");
    }
    state.dropped_since += 1;
    state.delivery = Some(Delivery {
        delivered: false,
        reason: "Undeliverable",
        message: format!("the last batch could not be delivered to {url}: {why}; it was dropped"),
    });
}
