//! The reflector: lists one resource, then watches it, and reports everything it learns to a
//! sink, for as long as it runs (client-go's `Reflector`, kube-rs' `watcher`).
//!
//! ```text
//!   API server ──LIST / WATCH──▶ Reflector::run ──ReflectorEvent──▶ sink (the informer)
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
//! - With [`ReflectorConfig::use_watch_list`], a list is a streaming list (WatchList,
//!   `sendInitialEvents=true`): one watch request whose first events are the current objects,
//!   ending at a bookmark annotated `k8s.io/initial-events-end`, after which the same stream is
//!   the watch. A server that refuses it (422/400, the `WatchList` feature gate off) is not
//!   asked again; any other failure falls back to a paged list for this time only.
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
//! - The states and the decisions between them are in [`state`], pure and tested without I/O;
//!   this module does the I/O. [`ReflectorMetrics`] counts what happened.
//!
//! Time is tokio's and randomness comes from a seed you can set ([`ReflectorConfig::seed`]),
//! so a test on the paused clock can predict every request and delay.
//!
//! ```no_run
//! use std::sync::Arc;
//! use kube_gc::api::Job;
//! use kube_gc::client::{Api, Client};
//! use kube_gc::runtime::reflector::{Reflector, ReflectorConfig, ReflectorEvent, ReflectorSink};
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
pub mod metrics;
pub mod source;
pub mod state;

#[cfg(test)]
mod tests;

use std::sync::Arc;
use std::time::Duration;

use futures_util::StreamExt;
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use crate::api::WatchEvent;
use crate::client::availability::warn_unless_unavailable;
use crate::client::Availability;
use crate::client::{ApiErrorKind, Error, ListParams, WatchParams};
use crate::clock::sleep_until_some;
use crate::runtime::cache::Cacheable;

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
    /// reflector (the [`sources`](crate::runtime::sources) hub, when a subscriber joins) keeps
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
            resource: self.source.describe(),
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
    /// `Watching`, the state it leads to, follows instead of opening one.
    streamed: Option<StreamedWatch<L::Object>>,
    /// A list at `resourceVersion=0` came back in pages: the server has no watch cache for
    /// this resource, so every list pages (client-go's `paginatedResult`).
    server_pages: bool,
    /// This run has delivered a list: the next one is a relist.
    listed_before: bool,
    /// What is reflected, for the logs.
    resource: String,
}

/// A watch stream a streaming list opened, handed on to `Watching`. (A stream is `Send` but not
/// `Sync`, so the loop's methods that await take `&mut self`: a `&Run` held across an await
/// would need `Run: Sync`.)
struct StreamedWatch<T> {
    stream: EventStream<T>,
    /// When it is deemed stalled: set when the streaming list was sent.
    deadline: Instant,
}

/// What became of a watch request.
enum Opened<T> {
    /// The server answered with a stream.
    Stream(EventStream<T>),
    /// The server answered with an error, or could not be reached.
    Failed(Error),
    /// The server did not answer within the stall grace (counted as a stalled watch).
    Unanswered,
}

/// How following a watch stream ended.
struct Followed {
    /// The last resourceVersion seen.
    resource_version: String,
    end: WatchEnd,
    /// Events received, bookmarks included.
    events: u64,
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

    /// `Listing`: a paged LIST.
    async fn list(&mut self, from: ListFrom) -> State {
        let params = ListParams {
            label_selector: self.config.label_selector.clone(),
            field_selector: self.config.field_selector.clone(),
            limit: state::list_limit(&from, self.config.page_size, self.server_pages),
            resource_version: from.resource_version().map(str::to_owned),
            ..ListParams::default()
        };
        let next = match self.source.list(&params).await {
            Ok(Listed { list, paged }) => {
                self.answered();
                if paged && from == ListFrom::AnyCached {
                    self.server_pages = true;
                }
                let resource_version = list.metadata.resource_version.unwrap_or_default();
                self.deliver_list(list.items, resource_version.clone());
                state::after_list(&from, Ok(resource_version), self.list_by)
            }
            Err(e) => {
                warn_unless_unavailable!(e, resource = %self.resource, err = %e, ?from, "reflector list failed");
                self.tell_owner(&e);
                state::after_list(&from, Err(&e), self.list_by)
            }
        };
        self.resolve(next)
    }

    fn deliver_list(&mut self, objects: Vec<L::Object>, resource_version: String) {
        // A relist is a list this run needed because its watch could not resume. The first
        // list of a run is not one, even when the run is a shared source restarting for a
        // subscriber that joined late (the counters outlive the run).
        self.metrics.listed(self.listed_before);
        self.listed_before = true;
        self.sink.apply(ReflectorEvent::Replaced {
            objects,
            resource_version,
        });
    }

    /// `StreamingList`: the initial events of a streaming list, delivered as one list, and
    /// the stream kept for `Watching`; or, if they cannot be had, a fallback to `Listing`.
    async fn stream_list(&mut self, fallback: ListFrom) -> State {
        let end = self.streaming_list().await;
        if end == StreamingListEnd::Incomplete {
            self.metrics.watch_list_fell_back();
        }
        state::after_streaming_list(fallback, end)
    }

    /// Sends a streaming list and reads its initial events; if they end at their bookmark,
    /// delivers them and keeps the stream in `self.streamed`.
    async fn streaming_list(&mut self) -> StreamingListEnd {
        self.metrics.watch_list_started();
        self.metrics.watch_started();
        let started = Instant::now();
        let params = WatchParams {
            send_initial_events: true,
            ..self.watch_params(None)
        };
        let mut stream = match self.open_watch(&params).await {
            Opened::Stream(stream) => {
                self.answered();
                stream
            }
            Opened::Failed(e) => {
                if refuses_watch_list(&e) {
                    tracing::info!(error = %e, "the API server refuses streaming lists; using LIST from now on");
                    self.list_by = ListBy::Paging;
                } else {
                    warn_unless_unavailable!(e, resource = %self.resource, err = %e, "streaming list failed; falling back to LIST");
                }
                return StreamingListEnd::Incomplete;
            }
            Opened::Unanswered => return StreamingListEnd::Incomplete,
        };
        let deadline = self.stall_deadline(started, &params);
        let Some((objects, resource_version)) = self.initial_events(&mut stream, deadline).await
        else {
            return StreamingListEnd::Incomplete;
        };
        self.deliver_list(objects, resource_version.clone());
        self.metrics.watch_worked();
        self.streamed = Some(StreamedWatch { stream, deadline });
        StreamingListEnd::Complete { resource_version }
    }

    /// The objects of a streaming list and the version of the bookmark that ends them; `None`
    /// if anything else comes first, or nothing comes by `deadline`. Even a malformed line ends
    /// it: skipping it would leave an object missing from the cache until it next changes.
    async fn initial_events(
        &mut self,
        stream: &mut EventStream<L::Object>,
        deadline: Instant,
    ) -> Option<(Vec<L::Object>, String)> {
        let mut objects = Vec::new();
        loop {
            let Ok(next) = tokio::time::timeout_at(deadline, stream.next()).await else {
                self.stalled(objects.len() as u64);
                return None;
            };
            match next {
                Some(Ok(WatchEvent::Added(object))) => objects.push(object),
                Some(Ok(WatchEvent::Bookmark(b))) if b.is_initial_events_end() => {
                    return Some((objects, b.metadata.resource_version));
                }
                // An ordinary bookmark's version means nothing before the set is complete.
                Some(Ok(WatchEvent::Bookmark(_))) => {}
                other => {
                    if matches!(&other, Some(Err(e)) if is_malformed(e)) {
                        self.metrics.malformed_event();
                    }
                    let event = other.map(|item| item.map(|e| e.event_type()));
                    tracing::warn!(
                        ?event,
                        "streaming list ended before its initial events did; falling back to LIST"
                    );
                    return None;
                }
            }
        }
    }

    /// `Watching` the stream a streaming list opened, after its initial events.
    async fn follow_streamed(
        &mut self,
        streamed: StreamedWatch<L::Object>,
        resource_version: String,
    ) -> State {
        let followed = self
            .follow(streamed.stream, resource_version, streamed.deadline)
            .await;
        // Its initial events arrived, so this watch was not a "very short" one. Unlike a watch
        // `watch` opened, it leaves the backoff and the early retry as they are (as it always
        // has; whether it should reset them too is an open question).
        self.resolve(state::after_watch(
            followed.resource_version,
            followed.end,
            true,
            self.list_by,
        ))
    }

    /// `Watching`: opens a watch from `resource_version` and follows it to its end.
    async fn watch(&mut self, resource_version: String) -> State {
        self.metrics.watch_started();
        let params = self.watch_params(Some(resource_version.clone()));
        let started = Instant::now();
        let next = match self.open_watch(&params).await {
            Opened::Unanswered => {
                let end = WatchEnd::Retryable { retry_after: None };
                state::after_watch(resource_version, end, false, self.list_by)
            }
            Opened::Stream(stream) => {
                self.answered();
                let deadline = self.stall_deadline(started, &params);
                let followed = self.follow(stream, resource_version, deadline).await;
                let healthy = followed.events > 0 || started.elapsed() >= MIN_HEALTHY_WATCH;
                if healthy {
                    // The loop worked: whatever ended this watch is a new incident.
                    self.backoff.reset();
                    self.early_retry_armed = true;
                }
                state::after_watch(
                    followed.resource_version,
                    followed.end,
                    healthy,
                    self.list_by,
                )
            }
            Opened::Failed(e) => {
                warn_unless_unavailable!(e, resource = %self.resource, err = %e, %resource_version, "reflector watch failed");
                self.tell_owner(&e);
                let end = WatchEnd::from_error(&e);
                state::after_watch(resource_version, end, false, self.list_by)
            }
        };
        self.resolve(next)
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

    /// Sends a watch request and waits for its answer, but no longer than the stall grace.
    /// Without this a server that accepts the connection and never responds would hold the
    /// reflector forever: watches have no request timeout, by design.
    async fn open_watch(&mut self, params: &WatchParams) -> Opened<L::Object> {
        let grace = self.config.watch_stall_grace;
        match tokio::time::timeout(grace, self.source.watch(params)).await {
            Ok(Ok(stream)) => Opened::Stream(stream),
            Ok(Err(e)) => Opened::Failed(e),
            Err(_) => {
                self.metrics.stalled_watch();
                tracing::warn!(
                    ?grace,
                    "the API server did not answer a watch request in time"
                );
                Opened::Unanswered
            }
        }
    }

    fn watch_params(&mut self, resource_version: Option<String>) -> WatchParams {
        let min = self.config.min_watch_timeout.as_secs_f64();
        let timeout = min * (1.0 + self.rng.random::<f64>());
        WatchParams {
            label_selector: self.config.label_selector.clone(),
            field_selector: self.config.field_selector.clone(),
            resource_version,
            timeout_seconds: Some(timeout as u32),
            allow_bookmarks: true,
            send_initial_events: false,
        }
    }

    /// When a watch started at `started` with `params` is deemed stalled: the server should
    /// have ended it at `timeoutSeconds`; the grace covers clock skew and a slow last read.
    fn stall_deadline(&self, started: Instant, params: &WatchParams) -> Instant {
        let timeout = Duration::from_secs(params.timeout_seconds.unwrap_or_default().into());
        started + timeout + self.config.watch_stall_grace
    }

    /// Counts and reports a watch abandoned at its stall deadline after `events` events.
    fn stalled(&self, events: u64) {
        self.metrics.stalled_watch();
        tracing::warn!(
            events,
            grace = ?self.config.watch_stall_grace,
            "watch outlived its timeoutSeconds: abandoning it as stalled"
        );
    }

    /// Delivers the events of `stream` until it ends, or until `deadline` (then it counts as
    /// stalled and ends as closed), tracking the last resourceVersion.
    async fn follow(
        &mut self,
        mut stream: EventStream<L::Object>,
        mut resource_version: String,
        deadline: Instant,
    ) -> Followed {
        let mut events = 0;
        self.metrics.watch_opened();
        // A stuck reflector says it recovered as soon as this watch proves to work (an event,
        // or a second without an error), not when the watch ends minutes later.
        let mut recovery_check = self
            .metrics
            .reported_stuck()
            .then(|| Instant::now() + MIN_HEALTHY_WATCH);
        // One timer for the whole watch, armed once: a timeout around each read would put a
        // timer in the runtime's wheel and take it out again whenever the stream had to wait,
        // several times for every object deleted in a burst.
        let stall = tokio::time::sleep_until(deadline);
        tokio::pin!(stall);
        let end = loop {
            let next = tokio::select! {
                biased;
                next = stream.next() => next,
                () = &mut stall => {
                    self.stalled(events);
                    break WatchEnd::Closed;
                }
                () = sleep_until_some(recovery_check) => {
                    recovery_check = None;
                    self.report_stuck();
                    continue;
                }
            };
            let event = match next {
                None => break WatchEnd::Closed,
                Some(Ok(event)) => event,
                Some(Err(e)) if is_malformed(&e) => {
                    self.metrics.malformed_event();
                    tracing::warn!(error = %e, "skipping a malformed watch event");
                    continue;
                }
                Some(Err(e)) => {
                    // The connection broke: the stream is over, the resourceVersion still good.
                    tracing::debug!(resource = %self.resource, err = %e, "watch stream ended by an error");
                    break WatchEnd::Closed;
                }
            };
            self.metrics.event(event.event_type());
            let delivered = match event {
                WatchEvent::Added(o) => ReflectorEvent::Added(o),
                WatchEvent::Modified(o) => ReflectorEvent::Modified(o),
                WatchEvent::Deleted(o) => ReflectorEvent::Deleted(o),
                WatchEvent::Bookmark(b) => ReflectorEvent::Bookmark {
                    resource_version: b.metadata.resource_version,
                },
                WatchEvent::Error(status) => {
                    let error = Error::from(*status);
                    tracing::debug!(resource = %self.resource, err = %error, "watch ended by an ERROR event");
                    // Not counted in `events`: a watch refused at once is still a short one.
                    break WatchEnd::from_error(&error);
                }
            };
            events += 1;
            self.metrics.watch_worked();
            if recovery_check.take().is_some() {
                self.report_stuck();
            }
            if let Some(rv) = resource_version_of(&delivered).filter(|rv| !rv.is_empty()) {
                rv.clone_into(&mut resource_version);
            }
            self.sink.apply(delivered);
        };
        self.metrics.watch_ended();
        Followed {
            resource_version,
            end,
            events,
        }
    }
}

/// Says once, at default verbosity, that the reflector became stuck (it cannot see changes) or
/// recovered.
fn report_stuck(metrics: &ReflectorMetrics, resource: &str) {
    match metrics.stuck_change() {
        Some(metrics::StuckChange::BecameStuck(for_how_long)) => tracing::warn!(
            resource,
            seconds_without_sync = for_how_long.as_secs(),
            "informer is not seeing changes: no list and watch has worked; /readyz fails until it does"
        ),
        Some(metrics::StuckChange::Recovered) => {
            tracing::info!(resource, "informer is watching again")
        }
        None => {}
    }
}

/// The resourceVersion a watch event moves the reflector to.
fn resource_version_of<T: Cacheable>(event: &ReflectorEvent<T>) -> Option<&str> {
    match event {
        ReflectorEvent::Added(o) | ReflectorEvent::Modified(o) | ReflectorEvent::Deleted(o) => {
            Some(o.resource_version())
        }
        ReflectorEvent::Bookmark { resource_version } => Some(resource_version),
        ReflectorEvent::Replaced { .. } => None,
    }
}

/// A watch item that is bad input, not a broken connection: skip it and read on.
fn is_malformed(error: &Error) -> bool {
    matches!(error, Error::Decode { .. } | Error::LineTooLong { .. })
}

/// The server does not serve streaming lists (the `WatchList` feature gate is off): it rejects
/// `sendInitialEvents` as an invalid or bad parameter.
fn refuses_watch_list(error: &Error) -> bool {
    matches!(
        error.kind(),
        Some(ApiErrorKind::Invalid | ApiErrorKind::BadRequest)
    )
}
