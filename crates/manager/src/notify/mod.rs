//! Notifications: what kube-gc deleted, what policies in `Audit` mode would have deleted, and
//! what it will delete in the next window, sent in batches to webhooks — `--notify-webhook-url`
//! for everything, and each retention policy's own (`spec.notification`, a Secret holding the
//! URL) for its own — as JSON with a Slack-compatible `text` (`payload.rs`).
//!
//! ```text
//!  reconcilers ── record() ──▶ Notifier ──push──▶ Sink (--notify-webhook-url)   ┐ every
//!  (the deletion feed)          │        └─push──▶ Sink (policy's Secret) …      ├─ --notify-interval:
//!  planner ──── route() ───────┘                                                 ┘ a round per sink
//!  controllers' caches ──── PendingCollector ──▶ what comes in the next window ──▶ (own task:
//!                                                                      resolve URL, POST, back off)
//! ```
//!
//! Contract:
//! - Never on the deletion path: [`Notifier`] is a [`DeletionFeed`] whose `record` pushes into
//!   each sink's batch under a short lock and returns; every request is made by [`Notifier::run`]
//!   on tasks of its own.
//! - At most one request per destination per `--notify-interval` (and its retries, with
//!   back-off, within the same interval); nothing is sent when there is nothing to say.
//! - Bounded memory: a batch counts every record and keeps only the first few whole
//!   (`batch.rs`); a destination has one batch gathering and at most one being sent, so a
//!   receiver down for an hour costs the same as one down for a minute — the batches of that
//!   hour are dropped, each counted (`kube_gc_notification_batches_dropped_total`), the failure
//!   logged once until a batch gets through.
//! - A policy's URL is read from its Secret before each round, never logged whole; what is in
//!   the way (no Secret, no right to read it, no key, no URL, a receiver refusing) is the
//!   policy's `Notifying` condition ([`DeletionFeed::delivery`]).
//! - [`Notifier::run`] owns every task it starts; when stopped it stops them, then gives each
//!   destination's last batch one try, bounded by the request timeout.

pub mod batch;
pub mod metrics;
pub mod payload;
pub mod secret;
pub mod sink;
pub mod webhook;

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use parking_lot::RwLock;
use tokio::task::JoinSet;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use crate::metrics::PendingCollector;
use kube_gc_client::Client;
use kube_gc_controllers::deleted::{DeletionFeed, DeletionRecord, Delivery, SharedFeed};
use kube_gc_controllers::pending::Pending;
use kube_gc_controllers::retention::policy::{PolicyId, WebhookSecret};
use kube_gc_core::clock::SharedClock;

pub use metrics::NotifyMetrics;
pub use payload::Upcoming;
pub use sink::{Sink, Target};
pub use webhook::{InvalidUrl, Webhook, WebhookClientError, WebhookUrl};

use sink::{deliver, RoundContext};

/// The `destination` of `--notify-webhook-url`.
pub const FLAG_DESTINATION: &str = "--notify-webhook-url";

/// `--notify-interval`'s default.
pub const DEFAULT_INTERVAL: Duration = Duration::from_secs(60);

/// How notifications are sent.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NotifyOptions {
    /// `--notify-webhook-url`: everything kube-gc does goes there.
    pub webhook: Option<WebhookUrl>,
    /// `--notify-interval`: at most one request per destination per interval.
    pub interval: Duration,
    /// The longest one request may take.
    pub request_timeout: Duration,
    /// Objects listed whole per list of a batch (the rest are counted).
    pub items: usize,
}

impl Default for NotifyOptions {
    fn default() -> Self {
        NotifyOptions {
            webhook: None,
            interval: DEFAULT_INTERVAL,
            request_timeout: Duration::from_secs(10),
            items: 50,
        }
    }
}

/// The notifier: a deletion feed, and the task that sends what it gathers.
#[derive(Clone)]
pub struct Notifier {
    shared: Arc<Shared>,
}

struct Shared {
    options: NotifyOptions,
    webhook: Webhook,
    client: Option<Client>,
    clock: SharedClock,
    pending: PendingCollector,
    metrics: Arc<NotifyMetrics>,
    global: Option<Arc<Sink>>,
    policies: RwLock<BTreeMap<PolicyId, Arc<Sink>>>,
}

impl std::fmt::Debug for Notifier {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Notifier")
            .field("webhook", &self.shared.options.webhook)
            .field("policies", &self.shared.policies.read().len())
            .finish_non_exhaustive()
    }
}

impl Notifier {
    /// A notifier sending with `options`; `client` reads the policies' Secrets, `pending` tells
    /// what comes, `clock` dates it all.
    ///
    /// # Errors
    ///
    /// [`WebhookClientError`] when no HTTPS client can be built (no trust roots).
    pub fn new(
        options: NotifyOptions,
        client: Option<Client>,
        pending: PendingCollector,
        clock: SharedClock,
        metrics: Arc<NotifyMetrics>,
    ) -> Result<Notifier, WebhookClientError> {
        let webhook = Webhook::new(options.request_timeout)?;
        let now = clock.now();
        let global = options.webhook.clone().map(|url| {
            let target = Target::Fixed(url);
            Arc::new(Sink::new(
                FLAG_DESTINATION.to_owned(),
                target,
                now,
                options.items,
            ))
        });
        Ok(Notifier {
            shared: Arc::new(Shared {
                options,
                webhook,
                client,
                clock,
                pending,
                metrics,
                global,
                policies: RwLock::new(BTreeMap::new()),
            }),
        })
    }

    /// The deletion feed the controllers tell.
    pub fn feed(&self) -> SharedFeed {
        Arc::clone(&self.shared) as SharedFeed
    }

    /// Sends a round every interval until `stop`, then the last batches once.
    pub async fn run(self, stop: CancellationToken) {
        let interval = self.shared.options.interval;
        let mut rounds = JoinSet::new();
        loop {
            let due = Instant::now() + interval;
            tokio::select! {
                () = stop.cancelled() => break,
                () = tokio::time::sleep_until(due) => {}
            }
            while rounds.try_join_next().is_some() {}
            self.shared.round(&mut rounds, due + interval);
        }
        // Rounds still trying are given up; what was gathered since gets one try.
        rounds.shutdown().await;
        let timeout = self.shared.options.request_timeout;
        self.shared.round(&mut rounds, Instant::now());
        let last = async { while rounds.join_next().await.is_some() {} };
        if tokio::time::timeout(timeout + Duration::from_secs(1), last)
            .await
            .is_err()
        {
            tracing::warn!("the last notification batches were not sent in time; dropped");
            rounds.shutdown().await;
        }
    }
}

impl Shared {
    /// Every destination and the policy it speaks for (`None`: the flag's, for everything).
    fn sinks(&self) -> Vec<(Arc<Sink>, Option<PolicyId>)> {
        let mut sinks: Vec<_> = self.global.iter().map(|s| (Arc::clone(s), None)).collect();
        sinks.extend(
            self.policies
                .read()
                .iter()
                .map(|(id, sink)| (Arc::clone(sink), Some(id.clone()))),
        );
        sinks
    }

    /// Starts a round for every sink not still sending, each giving up by `deadline`.
    fn round(&self, rounds: &mut JoinSet<()>, deadline: Instant) {
        let sinks = self.sinks();
        if sinks.is_empty() {
            return;
        }
        let (now, next) = (self.clock.now(), self.options.interval);
        let coming = self.pending.read_with(&[next], self.options.items);
        for (sink, policy) in sinks {
            let Some((round, batch)) = sink.start_round(now) else {
                continue;
            };
            let theirs: Vec<Pending> = coming
                .iter()
                .filter(|p| policy.is_none() || p.policy == policy)
                .cloned()
                .collect();
            let upcoming = Upcoming::of(&theirs, self.options.items, now);
            let cx = RoundContext {
                webhook: self.webhook.clone(),
                client: self.client.clone(),
                metrics: Arc::clone(&self.metrics),
                deadline,
                now,
                next,
            };
            rounds.spawn(deliver(round, batch, upcoming, cx));
        }
    }
}

impl DeletionFeed for Shared {
    fn record(&self, record: DeletionRecord) {
        if let Some(global) = &self.global {
            global.push(record.clone());
        }
        if let Some(policy) = &record.policy {
            if let Some(sink) = self.policies.read().get(policy) {
                sink.push(record);
            }
        }
    }

    fn route(&self, wanted: BTreeMap<PolicyId, WebhookSecret>) {
        let mut policies = self.policies.write();
        policies.retain(|id, _| wanted.contains_key(id));
        for (id, secret) in wanted {
            let target = Target::Secret(secret);
            match policies.get(&id) {
                Some(sink) => sink.retarget(target),
                None => {
                    let name = format!("{}/{}", id.kind(), id.path());
                    let sink = Sink::new(name, target, self.clock.now(), self.options.items);
                    policies.insert(id, Arc::new(sink));
                }
            }
        }
    }

    fn delivery(&self, policy: &PolicyId) -> Option<Delivery> {
        self.policies.read().get(policy)?.delivery()
    }
}
