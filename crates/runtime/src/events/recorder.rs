//! [`ApiEventRecorder`]: the [`EventRecorder`] that writes core/v1 Events to the API server, the
//! way client-go's recorder does, from a background task it owns.
//!
//! Contract:
//! - [`EventRecorder::record`] never blocks: the event joins a queue of [`QUEUE_CAPACITY`]; when
//!   the queue is full the event is dropped (and counted in a debug log), as client-go's
//!   broadcaster drops when its channel is full.
//! - The task turns each record into an old-style Event (`source.component`, `count`,
//!   `firstTimestamp`/`lastTimestamp`, `reportingComponent`/`reportingInstance`), named
//!   `<object>.<hex nanoseconds>` in the object's namespace (`default` for cluster-scoped
//!   objects), runs it through the [`Correlator`], and performs the write: POST a new Event, or
//!   a merge PATCH of `count`, `lastTimestamp` and `message` for the next occurrence (a POST if
//!   the Event was deleted meanwhile).
//! - A write failing with a retryable error is retried every [`RETRY_INTERVAL`], at most
//!   [`MAX_TRIES`] tries (client-go's `maxTriesPerEvent`); other failures drop the event.
//! - The task stops when the shutdown token is cancelled or every recorder handle is dropped;
//!   whoever starts it holds its `JoinHandle`.

use std::sync::Arc;
use std::time::Duration;

use serde_json::json;
use tokio::sync::mpsc;
use tokio::task::JoinHandle;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use super::correlator::{Correlator, Write};
use super::{EventRecord, EventRecorder};
use kube_gc_api::{Event, EventSource, ObjectMeta, Resource, Time, TypeMeta};
use kube_gc_client::availability::warn_unless_unavailable;
use kube_gc_client::{Api, Client, Error, Patch, PostParams};
use kube_gc_core::clock::{SharedClock, TokioClock};

/// Events waiting to be written before new ones are dropped.
pub const QUEUE_CAPACITY: usize = 1_000;
/// Tries per event (client-go's `maxTriesPerEvent`).
pub const MAX_TRIES: u32 = 12;
/// The wait between two tries (client-go's `sleepDuration`).
pub const RETRY_INTERVAL: Duration = Duration::from_secs(10);

/// Who reports: `source.component` / `reportingComponent` (e.g. `kube-gc`) and
/// `reportingInstance` (the leader election identity or host name).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Reporter {
    /// The component.
    pub component: String,
    /// The instance.
    pub instance: String,
}

/// A handle controllers record through; clones share the queue.
#[derive(Clone, Debug)]
pub struct ApiEventRecorder {
    queue: mpsc::Sender<EventRecord>,
}

impl EventRecorder for ApiEventRecorder {
    fn record(&self, event: EventRecord) {
        if let Err(e) = self.queue.try_send(event) {
            tracing::debug!(reason = %e, "event queue full or closed; dropping an event");
        }
    }
}

impl ApiEventRecorder {
    /// Starts the writing task; returns the recorder and the task's handle.
    pub fn start(
        client: Client,
        reporter: Reporter,
        shutdown: CancellationToken,
    ) -> (ApiEventRecorder, JoinHandle<()>) {
        Self::start_with_clock(
            client,
            reporter,
            shutdown,
            Arc::new(TokioClock::from_system()),
        )
    }

    /// [`start`](Self::start) with Event timestamps taken from `clock`.
    pub fn start_with_clock(
        client: Client,
        reporter: Reporter,
        shutdown: CancellationToken,
        clock: SharedClock,
    ) -> (ApiEventRecorder, JoinHandle<()>) {
        let (sender, receiver) = mpsc::channel(QUEUE_CAPACITY);
        let writer = Writer {
            client,
            reporter,
            clock,
            correlator: Correlator::new(),
            last_name_nanos: 0,
        };
        let task = tokio::spawn(writer.run(receiver, shutdown));
        (ApiEventRecorder { queue: sender }, task)
    }

    /// The recorder as controllers hold it.
    pub fn shared(self) -> super::SharedRecorder {
        Arc::new(self)
    }
}

struct Writer {
    client: Client,
    reporter: Reporter,
    clock: SharedClock,
    correlator: Correlator,
    /// Names must be unique even for two events in the same nanosecond (or on a paused clock).
    last_name_nanos: i64,
}

impl Writer {
    async fn run(mut self, mut queue: mpsc::Receiver<EventRecord>, shutdown: CancellationToken) {
        loop {
            let record = tokio::select! {
                _ = shutdown.cancelled() => return,
                record = queue.recv() => match record {
                    Some(record) => record,
                    None => return,
                },
            };
            let event = self.new_event(record);
            let write = self.correlator.correlate(event, Instant::now());
            tokio::select! {
                _ = shutdown.cancelled() => return,
                _ = self.write_with_retries(write) => {}
            }
        }
    }

    /// A new-series Event for `record`, stamped now.
    fn new_event(&mut self, record: EventRecord) -> Event {
        let now = self.clock.now();
        let nanos = now
            .timestamp_nanos_opt()
            .unwrap_or_default()
            .max(self.last_name_nanos + 1);
        self.last_name_nanos = nanos;
        let object = record.regarding;
        let namespace = object
            .namespace
            .clone()
            .filter(|ns| !ns.is_empty())
            .unwrap_or_else(|| "default".to_owned());
        let name = format!("{}.{nanos:x}", object.name.as_deref().unwrap_or_default());
        let time = Time::from(now);
        Event {
            types: TypeMeta::new(Event::API_VERSION, Event::KIND),
            metadata: ObjectMeta {
                name: Some(name),
                namespace: Some(namespace),
                ..ObjectMeta::default()
            },
            involved_object: object,
            reason: Some(record.reason),
            message: Some(record.message),
            source: Some(EventSource {
                component: Some(self.reporter.component.clone()),
                host: None,
            }),
            first_timestamp: Some(time),
            last_timestamp: Some(time),
            count: Some(1),
            type_: Some(record.event_type.as_str().to_owned()),
            reporting_component: Some(self.reporter.component.clone()),
            reporting_instance: Some(self.reporter.instance.clone()),
            ..Event::default()
        }
    }

    async fn write_with_retries(&self, write: Write) {
        for attempt in 1..=MAX_TRIES {
            let result = match &write {
                Write::Skip => return,
                Write::Create(event) => self.create(event).await,
                Write::Patch(event) => self.patch(event).await,
            };
            match result {
                Ok(()) => return,
                Err(e) if e.is_retryable() && attempt < MAX_TRIES => {
                    tracing::debug!(error = %e, attempt, "writing an event failed; retrying");
                    tokio::time::sleep(RETRY_INTERVAL).await;
                }
                Err(e) => {
                    warn_unless_unavailable!(e, err = %e, "could not write an event; dropping it");
                    return;
                }
            }
        }
    }

    fn api(&self, event: &Event) -> Api<Event> {
        let namespace = event.metadata.namespace.as_deref().unwrap_or("default");
        Api::namespaced(self.client.clone(), namespace)
    }

    async fn create(&self, event: &Event) -> Result<(), Error> {
        match self.api(event).create(&PostParams::default(), event).await {
            // Written before by a try whose answer was lost.
            Err(e) if e.is_already_exists() => Ok(()),
            other => other.map(drop),
        }
    }

    async fn patch(&self, event: &Event) -> Result<(), Error> {
        let name = event.metadata.name.as_deref().unwrap_or_default();
        let patch = Patch::Merge(json!({
            "count": event.count,
            "lastTimestamp": event.last_timestamp,
            "message": event.message,
        }));
        match self
            .api(event)
            .patch(name, &PostParams::default(), &patch)
            .await
        {
            // Deleted meanwhile (events expire after an hour): start it again.
            Err(e) if e.is_not_found() => self.create(event).await,
            other => other.map(drop),
        }
    }
}
