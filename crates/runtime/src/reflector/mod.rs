//! The reflector: lists one resource, then watches it, and reports everything it learns to a
//! sink, for as long as it runs (client-go's `Reflector`, kube-rs' `watcher`).
//!
//! Reading order: this contract and its state diagram; [`state`] (the states and the pure
//! decisions between them); then the I/O of each state: `list.rs` (`StreamingList`, `Listing`),
//! `watch.rs` (`Watching`), `watchdog.rs` (stalls and the stuck report of one watch), and
//! [`backoff`] (`BackingOff`); the loop that runs them is [`Reflector::run`] below. Around
//! them: [`source`] (the two requests, behind a trait), [`event`] (what the sink receives),
//! [`metrics`], [`error_handler`]. Tests: `tests.rs` (the scripted harness and the basic loop),
//! then `tests/streaming_list.rs`, `tests/stall.rs`, `tests/relist.rs`.
//!
//! ```text
//!   API server ──LIST / WATCH──▶ Reflector::run ──ReflectorEvent──▶ sink (the informer)
//! ```
//!
//! The states ([`State`]), each named after what the loop waits for. `◇ list{from}` is not a
//! state but a choice ([`ListBy::list`]): `StreamingList{fallback: from}` while streaming lists
//! are enabled and the server has not refused one, else `Listing{from}`.
//!
//! ```text
//!  start ──▶ ◇ list{AnyCached}
//!
//!  StreamingList{fallback} ── refused, failed, unanswered, ──▶ Listing{from} ── 410, or 504 too
//!    │                        stalled or cut short: at once,    │    │          large, asked with
//!    │                        as Listing{fallback}           ok │    │          a version: at once
//!    │ the initial-events-end bookmark:                         │    │          ◇ list{Latest}
//!    │ the same stream goes on as the watch                     │    │
//!    ▼                                                          │    │ any other failure
//!  Watching{rv} ◀───────────────────────────────────────────────┘    │
//!    │ │  ▲                                                          │
//!    │ └──┘ ended (the server's timeout, a cut, a stall):            │
//!    │      at once, from the last rv                                │
//!    │ 410 Expired: at once ◇ list{LastSynced(rv)}                   │
//!    │                                                               │
//!    │ any other failure; or a very short watch, however it ended    │
//!    │                                                               │
//!    ▼                                                               │
//!  BackingOff{delay, then} ◀─────────────────────────────────────────┘
//!    └──▶ then: ◇ list{…}, or Watching{rv} again
//! ```
//!
//! Contract:
//! - The first thing the sink sees is a [`ReflectorEvent::Replaced`] with the complete list;
//!   then watch events in the order the server sent them. After a 410 (the server no longer has
//!   the history to resume from) the sink sees another `Replaced` and computes what changed
//!   meanwhile from the difference; nothing in between is lost or repeated, as long as the
//!   server keeps its promise that a watch from version N delivers every change after N.
//! - Lists ask for resourceVersions as client-go does ([`ListFrom`]) and are paged
//!   ([`ReflectorConfig::page_size`], 500) except a relist at the last synced version, which a
//!   real API server would otherwise read from etcd at exactly that old revision
//!   ([`state::list_limit`]); watches ask for bookmarks and a random timeout between
//!   [`ReflectorConfig::min_watch_timeout`] and twice that (5–10 min), so that many clients do
//!   not all reconnect at the same moment.
//! - With [`ReflectorConfig::use_watch_list`] (off by default: a v1.28 API server refuses
//!   them), a list is a streaming list (WatchList, `sendInitialEvents=true`): one watch request
//!   whose first events are the current objects, ending at a bookmark annotated
//!   `k8s.io/initial-events-end`, after which the same stream is the watch. A server that
//!   refuses it (422/400, the `WatchList` feature gate off) is not asked again; any other
//!   failure falls back to a paged list for this time only.
//! - A watch the server fails to end — a wedged proxy, a connection that stays open but
//!   silent — is given up [`ReflectorConfig::watch_stall_grace`] after the `timeoutSeconds` it
//!   asked for: it ends as if closed, so the next watch resumes from the last resourceVersion
//!   and nothing is lost; it is logged and counted (`stalled_watches`). A streaming list that
//!   stalls before its initial events are complete falls back to a paged LIST. A watch request
//!   the server does not even answer within that grace counts as stalled too, and is retried
//!   after a backoff (a streaming list falls back to LIST).
//! - Failures never end the loop: it backs off ([`Backoff`]: 0.8 s doubling to 30 s, jitter,
//!   `Retry-After` honoured) and tries again. A malformed watch line is logged, counted and
//!   skipped. Only the cancellation token ends [`Reflector::run`].
//! - [`ReflectorMetrics`] counts what happened; a list after the first of the same run counts
//!   as a relist.
//!
//! Time is tokio's and randomness comes from a seed you can set ([`ReflectorConfig::seed`]),
//! so a test on the paused clock can predict every request and delay.
//!
//! ```no_run
//! use std::sync::Arc;
//! use kube_gc_api::Job;
//! use kube_gc_client::{Api, Client};
//! use kube_gc_runtime::reflector::{Reflector, ReflectorConfig, ReflectorEvent, ReflectorSink};
//! use tokio_util::sync::CancellationToken;
//!
//! struct Print;
//! impl ReflectorSink<Job> for Print {
//!     fn apply(&self, event: ReflectorEvent<Job>) {
//!         match event {
//!             ReflectorEvent::Replaced { objects, resource_version } => {
//!                 println!("{} jobs at {resource_version}", objects.len())
//!             }
//!             other => println!("{other:?}"),
//!         }
//!     }
//! }
//!
//! # async fn example(client: Client) {
//! let reflector = Reflector::new(Api::<Job>::all(client), ReflectorConfig::default());
//! let cancel = CancellationToken::new();
//! // The task runs until `cancel` fires; keep the handle to join it.
//! let task = tokio::spawn(reflector.run(Arc::new(Print), cancel.clone()));
//! # cancel.cancel();
//! # let _ = task.await;
//! # }
//! ```

pub mod backoff;
pub mod error_handler;
pub mod event;
mod list;
pub mod metrics;
pub mod source;
pub mod state;
mod watch;
mod watchdog;

#[cfg(test)]
mod tests;

use std::sync::Arc;
use std::time::Duration;

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use crate::cache::Cacheable;
use kube_gc_client::{Availability, Error};
use watch::OpenWatch;
use watchdog::report_stuck;

pub use backoff::{Backoff, BackoffConfig};
pub use error_handler::WatchErrorHandler;
pub use event::{ReflectorEvent, ReflectorSink};
pub use metrics::{MetricsSnapshot, ReflectorMetrics};
pub use source::{Decoded, EventStream, Form, ListWatch, Listed, MetadataOnly};
pub use state::{list_limit, ListBy, ListFrom, Next, State, StreamingListEnd, WatchEnd};

/// A watch shorter than this that delivered nothing counts as a failure (client-go).
pub const MIN_HEALTHY_WATCH: Duration = Duration::from_secs(1);

/// When the API server answers again, a reflector that was backing off because it could not be
/// reached retries after a random part of this, not all at once with every other reflector.
pub const RETURN_SPREAD: Duration = Duration::from_secs(1);

/// How a reflector lists and watches.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ReflectorConfig {
    /// Objects per list page (client-go: 500).
    pub page_size: u32,
    /// Only objects whose labels match.
    pub label_selector: Option<String>,
    /// Only objects whose fields match.
    pub field_selector: Option<String>,
    /// Each watch asks the server to end it after a random time in `[min, 2 × min)` (client-go:
    /// 5 min).
    pub min_watch_timeout: Duration,
    /// How long past its `timeoutSeconds` a watch may go on before it is deemed stalled and
    /// abandoned (the server should have ended it by then); also how long a watch request may
    /// wait for the server's response headers.
    pub watch_stall_grace: Duration,
    /// List with a streaming list (WatchList) when the server supports it.
    pub use_watch_list: bool,
    /// Delays after failures.
    pub backoff: BackoffConfig,
    /// Seed of the jitter and the watch timeouts; `None` seeds from the operating system.
    pub seed: Option<u64>,
}

impl Default for ReflectorConfig {
    fn default() -> Self {
        ReflectorConfig {
            page_size: 500,
            label_selector: None,
            field_selector: None,
            min_watch_timeout: Duration::from_secs(300),
            watch_stall_grace: Duration::from_secs(30),
            use_watch_list: false,
            backoff: BackoffConfig::default(),
            seed: None,
        }
    }
}

/// Lists then watches one resource through a [`ListWatch`], reporting to a sink.
#[derive(Debug)]
pub struct Reflector<L> {
    source: L,
    config: ReflectorConfig,
    metrics: Arc<ReflectorMetrics>,
    on_error: Option<WatchErrorHandler>,
}

impl<L: ListWatch> Reflector<L>
where
    L::Object: Cacheable,
{
    /// A reflector over `source`.
    pub fn new(source: L, config: ReflectorConfig) -> Self {
        let metrics = Arc::new(ReflectorMetrics::default());
        // client-go's reflector gives up nothing; but one that has not synced for two backoff
        // caps is not going to on its own, and an operator must hear of it.
        metrics.set_stuck_after(config.backoff.cap * 2);
        Reflector {
            source,
            config,
            metrics,
            on_error: None,
        }
    }

    /// Counts into `metrics` instead of counters of its own: a source that replaces its
    /// reflector (the [`sources`](crate::sources) hub, when a subscriber joins) keeps
    /// one set of counters for the resource across them.
    pub fn with_metrics(mut self, metrics: Arc<ReflectorMetrics>) -> Self {
        metrics.set_stuck_after(self.config.backoff.cap * 2);
        self.metrics = metrics;
        self
    }

    /// Tells `handler` of every failed list and watch request (see [`WatchErrorHandler`]).
    pub fn on_error(mut self, handler: WatchErrorHandler) -> Self {
        self.on_error = Some(handler);
        self
    }

    /// The counters, shared: they keep counting while [`run`](Self::run) runs.
    pub fn metrics(&self) -> Arc<ReflectorMetrics> {
        Arc::clone(&self.metrics)
    }

    /// Lists, watches, relists and backs off until `cancel` fires, delivering every event to
    /// `sink`. Cancellation takes effect at once, whatever the loop is waiting for.
    pub async fn run<S>(self, sink: Arc<S>, cancel: CancellationToken)
    where
        S: ReflectorSink<L::Object> + ?Sized,
    {
        let mut rng = match self.config.seed {
            Some(seed) => StdRng::seed_from_u64(seed),
            None => StdRng::from_os_rng(),
        };
        let mut run = Run {
            backoff: Backoff::new(self.config.backoff, StdRng::from_rng(&mut rng)),
            availability: self.source.availability().map(|a| a.subscribe()),
            failed_unavailable: false,
            early_retry_armed: true,
            rng,
            list_by: ListBy::configured(self.config.use_watch_list),
            streamed: None,
            server_pages: false,
            listed_before: false,
            resource: self.source.describe().into(),
            source: self.source,
            config: self.config,
            metrics: self.metrics,
            on_error: self.on_error,
            sink: &*sink,
        };
        let mut state = run.list_by.list(ListFrom::AnyCached);
        loop {
            tracing::trace!(?state, "reflector state");
            state = tokio::select! {
                biased;
                () = cancel.cancelled() => return,
                next = run.step(state) => next,
            };
            run.report_stuck();
        }
    }
}

/// The loop's working state: what it owns while it runs.
struct Run<'s, L: ListWatch, S: ?Sized> {
    source: L,
    config: ReflectorConfig,
    metrics: Arc<ReflectorMetrics>,
    on_error: Option<WatchErrorHandler>,
    sink: &'s S,
    backoff: Backoff,
    /// Whether the API server answers, when the source can tell.
    availability: Option<tokio::sync::watch::Receiver<Availability>>,
    /// The last failure was the server's unavailability: its return ends the backoff early.
    failed_unavailable: bool,
    /// A return may still end a backoff early: once per incident, re-armed by a watch that
    /// worked, so a resource the server keeps failing while it answers others (a broken
    /// aggregated API) is not retried at the pace of the returns.
    early_retry_armed: bool,
    /// Draws the watch timeouts.
    rng: StdRng,
    /// Streaming lists while WatchList is enabled and the server has not refused it, else LISTs.
    list_by: ListBy,
    /// The stream of a streaming list whose initial events are complete: the watch that
    /// `Watching`, the state it leads to, follows instead of opening one. (A stream is `Send`
    /// but not `Sync`, so the loop's methods that await take `&mut self`: a `&Run` held across
    /// an await would need `Run: Sync`.)
    streamed: Option<OpenWatch<L::Object>>,
    /// A list at `resourceVersion=0` came back in pages: the server has no watch cache for
    /// this resource, so every list pages (client-go's `paginatedResult`).
    server_pages: bool,
    /// This run has delivered a list: the next one is a relist.
    listed_before: bool,
    /// What is reflected, for the logs.
    resource: Arc<str>,
}

impl<L, S> Run<'_, L, S>
where
    L: ListWatch,
    L::Object: Cacheable,
    S: ReflectorSink<L::Object> + ?Sized,
{
    /// Does what `state` waits for and answers the next state.
    async fn step(&mut self, state: State) -> State {
        match state {
            State::StreamingList { fallback } => self.stream_list(fallback).await,
            State::Listing { from } => self.list(from).await,
            // Right after a complete streaming list, its stream is the watch to follow.
            State::Watching { resource_version } => match self.streamed.take() {
                Some(streamed) => self.follow_streamed(streamed, resource_version).await,
                None => self.watch(resource_version).await,
            },
            State::BackingOff { delay, then } => {
                self.back_off(delay).await;
                *then
            }
        }
    }

    /// Waits out a backoff of `delay` — or, if it follows a failure to reach the API server,
    /// until the server answers again plus a random part of [`RETURN_SPREAD`], if that is
    /// sooner; the backoff then starts over, since the failures of the outage said nothing
    /// about this loop (the relist a restart's 410 calls for comes after 0.8–1.6 s, not after
    /// the 30–60 s the outage had grown the backoff to). client-go waits the whole backoff, and
    /// relists after it; work that resumes the moment the server is back needs its informers
    /// to see changes again as soon.
    async fn back_off(&mut self, delay: Duration) {
        let deadline = Instant::now() + delay;
        let spread = RETURN_SPREAD.mul_f64(self.rng.random::<f64>());
        let availability = match &mut self.availability {
            Some(availability) if self.failed_unavailable && self.early_retry_armed => availability,
            _ => return tokio::time::sleep_until(deadline).await,
        };
        let seen = availability.borrow_and_update().returns;
        tokio::select! {
            () = tokio::time::sleep_until(deadline) => {}
            back = async { availability.wait_for(|now| now.returns > seen).await.is_ok() } => {
                let retry_at = if back { (Instant::now() + spread).min(deadline) } else { deadline };
                self.backoff.reset();
                self.early_retry_armed = false;
                tracing::debug!(resource = %self.resource, "the API server answers again; retrying");
                tokio::time::sleep_until(retry_at).await;
            }
        }
    }

    /// Logs a change of the stuck state, naming the resource.
    fn report_stuck(&self) {
        report_stuck(&self.metrics, &self.resource);
    }

    /// Turns a decision into a state, drawing the delay of a backoff.
    fn resolve(&mut self, next: Next) -> State {
        match next {
            Next::Go(state) => state,
            Next::BackOff { then, retry_after } => {
                self.metrics.backed_off();
                let delay = self.backoff.next_delay(retry_after);
                tracing::debug!(resource = %self.resource, ?delay, next = ?then, "reflector backing off");
                State::BackingOff {
                    delay,
                    then: Box::new(then),
                }
            }
        }
    }

    /// Notes that the server answered a request of this loop (a list, a watch opened, an error
    /// that is not unavailability). If the loop's last failures met an unavailable server, the
    /// backoff they grew says nothing about the loop and starts over, so the failure that
    /// follows — typically the 410 a restarted server sends the first watch — is retried at
    /// once. Waiting for the server's return to be announced is not enough: this very request
    /// may be the one that announced it, before the loop began waiting (real kube-apiserver,
    /// three restarts: informers whose watch got through first waited out 30–60 s backoffs
    /// and were blind for up to 91 s).
    fn answered(&mut self) {
        if std::mem::take(&mut self.failed_unavailable) {
            self.backoff.reset();
        }
    }

    /// Notes how a list or watch request failed, and passes it to the owner's
    /// [`WatchErrorHandler`], if it set one.
    fn tell_owner(&mut self, error: &Error) {
        if error.is_unavailable() {
            self.failed_unavailable = true;
        } else {
            self.answered();
        }
        if let Some(handler) = &self.on_error {
            handler.failed(error);
        }
    }
}
