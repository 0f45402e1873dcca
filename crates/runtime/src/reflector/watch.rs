//! The watch phase: the I/O of [`State::Watching`](super::State::Watching).
//!
//! Contract:
//! - A watch asks for bookmarks and a random `timeoutSeconds` between
//!   [`ReflectorConfig::min_watch_timeout`](super::ReflectorConfig::min_watch_timeout) and twice
//!   that (5–10 min), so that many clients do not all reconnect at the same moment.
//! - Every event is delivered to the sink in the order the server sent it, and moves the
//!   resourceVersion the next watch resumes from to its own; so does a bookmark, which changes
//!   no object.
//! - How the watch ended is a [`WatchEnd`]; [`state::after_watch`] says where to go from there.
//!   A watch that delivered nothing and lasted under [`MIN_HEALTHY_WATCH`] is not healthy.
//! - A malformed line is logged, counted and skipped; a broken connection ends the watch as
//!   closed (the resourceVersion is still good); an `ERROR` event ends it as its status says.
//! - The [`Watchdog`] bounds the wait for the server's answer and for the stream's end.

use std::sync::Arc;

use futures_util::StreamExt;
use rand::Rng;
use tokio::time::Instant;

use super::state::{self, State, WatchEnd};
use super::watchdog::{Unanswered, Watchdog};
use super::{EventStream, ListWatch, ReflectorEvent, ReflectorSink, Run, MIN_HEALTHY_WATCH};
use crate::cache::Cacheable;
use kube_gc_api::WatchEvent;
use kube_gc_client::availability::warn_unless_unavailable;
use kube_gc_client::{Error, WatchParams};

/// A watch stream open and answered, with the watchdog of its request.
pub(super) struct OpenWatch<T> {
    pub(super) stream: EventStream<T>,
    pub(super) watchdog: Watchdog,
}

/// What became of a watch request.
pub(super) enum Opened<T> {
    /// The server answered with a stream.
    Stream(OpenWatch<T>),
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

/// One item read from a watch stream, judged.
enum Received<T> {
    /// An event to deliver.
    Event(ReflectorEvent<T>),
    /// Bad input, not a broken connection: read on.
    Skipped,
    /// The watch is over.
    Ended(WatchEnd),
}

impl<L, S> Run<'_, L, S>
where
    L: ListWatch,
    L::Object: Cacheable,
    S: ReflectorSink<L::Object> + ?Sized,
{
    /// `Watching`: opens a watch from `resource_version` and follows it to its end.
    pub(super) async fn watch(&mut self, resource_version: String) -> State {
        self.metrics.watch_started();
        let params = self.watch_params(Some(resource_version.clone()));
        let started = Instant::now();
        let next = match self.open_watch(&params).await {
            Opened::Unanswered => {
                let end = WatchEnd::Retryable { retry_after: None };
                state::after_watch(resource_version, end, false, self.list_by)
            }
            Opened::Stream(open) => {
                self.answered();
                let followed = self.follow(open, resource_version).await;
                let healthy = followed.events > 0 || started.elapsed() >= MIN_HEALTHY_WATCH;
                if healthy {
                    // The loop worked: whatever ended this watch is a new incident.
                    self.backoff.reset();
                    self.early_retry_armed = true;
                }
                let end = followed.end;
                state::after_watch(followed.resource_version, end, healthy, self.list_by)
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

    /// `Watching` the stream a streaming list opened, after its initial events.
    pub(super) async fn follow_streamed(
        &mut self,
        streamed: OpenWatch<L::Object>,
        resource_version: String,
    ) -> State {
        let followed = self.follow(streamed, resource_version).await;
        // Its initial events arrived, so this watch was not a "very short" one. Unlike a watch
        // `watch` opened, it leaves the backoff and the early retry as they are (as it always
        // has; whether it should reset them too is an open question).
        let end = followed.end;
        let next = state::after_watch(followed.resource_version, end, true, self.list_by);
        self.resolve(next)
    }

    /// Sends a watch request under a new [`Watchdog`] and waits for the answer.
    pub(super) async fn open_watch(&mut self, params: &WatchParams) -> Opened<L::Object> {
        let watchdog = Watchdog::new(
            Arc::clone(&self.metrics),
            Arc::clone(&self.resource),
            params.timeout_seconds,
            self.config.watch_stall_grace,
        );
        match watchdog.answer(self.source.watch(params)).await {
            Ok(Ok(stream)) => Opened::Stream(OpenWatch { stream, watchdog }),
            Ok(Err(e)) => Opened::Failed(e),
            Err(Unanswered) => Opened::Unanswered,
        }
    }

    /// The parameters of a watch from `resource_version`, its timeout drawn at random.
    pub(super) fn watch_params(&mut self, resource_version: Option<String>) -> WatchParams {
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

    /// Delivers the events of `open` until it ends, or until its watchdog finds it stalled
    /// (then it ends as closed, so the next watch resumes where it stopped), tracking the last
    /// resourceVersion.
    async fn follow(&mut self, open: OpenWatch<L::Object>, resource_version: String) -> Followed {
        let OpenWatch {
            mut stream,
            mut watchdog,
        } = open;
        let mut resource_version = resource_version;
        let mut events = 0;
        watchdog.watch_opened();
        let end = loop {
            let item = tokio::select! {
                biased;
                item = stream.next() => item,
                () = watchdog.stalled(events) => break WatchEnd::Closed,
            };
            let event = match self.receive(item) {
                Received::Event(event) => event,
                Received::Skipped => continue,
                Received::Ended(end) => break end,
            };
            events += 1;
            watchdog.event_arrived();
            if let Some(rv) = resource_version_of(&event).filter(|rv| !rv.is_empty()) {
                rv.clone_into(&mut resource_version);
            }
            self.sink.apply(event);
        };
        watchdog.watch_ended();
        Followed {
            resource_version,
            end,
            events,
        }
    }

    /// Judges one item of a watch stream (`None`: the stream ended), counting and logging it.
    fn receive(&self, item: Option<Result<WatchEvent<L::Object>, Error>>) -> Received<L::Object> {
        let event = match item {
            None => return Received::Ended(WatchEnd::Closed),
            Some(Ok(event)) => event,
            Some(Err(e)) if is_malformed(&e) => {
                self.metrics.malformed_event();
                tracing::warn!(error = %e, "skipping a malformed watch event");
                return Received::Skipped;
            }
            Some(Err(e)) => {
                // The connection broke: the stream is over, the resourceVersion still good.
                tracing::debug!(resource = %self.resource, err = %e, "watch stream ended by an error");
                return Received::Ended(WatchEnd::Closed);
            }
        };
        self.metrics.event(event.event_type());
        Received::Event(match event {
            WatchEvent::Added(o) => ReflectorEvent::Added(o),
            WatchEvent::Modified(o) => ReflectorEvent::Modified(o),
            WatchEvent::Deleted(o) => ReflectorEvent::Deleted(o),
            WatchEvent::Bookmark(b) => ReflectorEvent::Bookmark {
                resource_version: b.metadata.resource_version,
            },
            // A real API server says a watch's resourceVersion is too old with HTTP 200 and one
            // ERROR event carrying a 410 `Expired` Status, then ends the stream (exchange 55).
            // Not counted as an event: a watch refused at once is still a short one.
            WatchEvent::Error(status) => {
                let error = Error::from(*status);
                tracing::debug!(resource = %self.resource, err = %error, "watch ended by an ERROR event");
                return Received::Ended(WatchEnd::from_error(&error));
            }
        })
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
pub(super) fn is_malformed(error: &Error) -> bool {
    matches!(error, Error::Decode { .. } | Error::LineTooLong { .. })
}
