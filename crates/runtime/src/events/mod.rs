//! Kubernetes Events: how controllers report something an operator should see on an object.
//!
//! Contract: a controller calls [`EventRecorder::record`] and carries on; recording never blocks,
//! never fails and never awaits, because an event is a courtesy to the operator and must not slow
//! or stop a deletion. Whether the event reaches the API server, and how a storm of identical
//! events is aggregated and rate limited (as client-go's `EventCorrelator` does), is the
//! recorder's business, not the caller's.
//!
//! [`NoopRecorder`] drops everything (the default when no recorder is configured);
//! [`CollectingRecorder`] keeps events in memory so tests can assert what a controller reported;
//! [`ApiEventRecorder`] ([`recorder`]) writes them to the API server through the
//! [`Correlator`] ([`correlator`]: aggregation, series counting, spam filter), keeping its state
//! in [`Lru`] caches ([`lru`]).

pub mod correlator;
pub mod lru;
pub mod recorder;

pub use correlator::Correlator;
pub use lru::Lru;
pub use recorder::{ApiEventRecorder, Reporter};

use std::sync::Arc;

use parking_lot::Mutex;

use kube_gc_api::ObjectReference;

/// The two event types the API server accepts.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum EventType {
    /// Something normal worth knowing.
    Normal,
    /// Something an operator may have to act on.
    Warning,
}

impl EventType {
    /// The value of the Event's `type` field.
    pub fn as_str(self) -> &'static str {
        match self {
            EventType::Normal => "Normal",
            EventType::Warning => "Warning",
        }
    }
}

/// One event as a controller reports it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct EventRecord {
    /// The object the event is about.
    pub regarding: ObjectReference,
    /// Normal or Warning.
    pub event_type: EventType,
    /// A short UpperCamelCase reason, e.g. `OwnerRefInvalidNamespace`.
    pub reason: String,
    /// A human-readable message.
    pub message: String,
}

/// Where controllers send events.
pub trait EventRecorder: Send + Sync {
    /// Reports one event; returns at once whatever becomes of it.
    fn record(&self, event: EventRecord);
}

/// A shared recorder, as controllers hold it.
pub type SharedRecorder = Arc<dyn EventRecorder>;

/// A recorder that drops every event.
#[derive(Clone, Copy, Debug, Default)]
pub struct NoopRecorder;

impl EventRecorder for NoopRecorder {
    fn record(&self, _event: EventRecord) {}
}

/// A recorder that keeps every event in memory, for tests.
#[derive(Debug, Default)]
pub struct CollectingRecorder {
    events: Mutex<Vec<EventRecord>>,
}

impl CollectingRecorder {
    /// An empty recorder.
    pub fn new() -> CollectingRecorder {
        CollectingRecorder::default()
    }

    /// Every event recorded so far, oldest first.
    pub fn events(&self) -> Vec<EventRecord> {
        self.events.lock().clone()
    }
}

impl EventRecorder for CollectingRecorder {
    fn record(&self, event: EventRecord) {
        self.events.lock().push(event);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn collecting_recorder_keeps_events_in_order() {
        let recorder = CollectingRecorder::new();
        for reason in ["First", "Second"] {
            recorder.record(EventRecord {
                regarding: ObjectReference::default(),
                event_type: EventType::Warning,
                reason: reason.to_string(),
                message: String::new(),
            });
        }
        let reasons: Vec<String> = recorder.events().into_iter().map(|e| e.reason).collect();
        assert_eq!(reasons, ["First", "Second"]);
        assert_eq!(EventType::Warning.as_str(), "Warning");
    }
}
