//! [`Correlator`]: client-go's `EventCorrelator` — what to write to the API server for each event
//! a controller reports, so that a storm of events cannot flood it.
//!
//! Contract, for each incoming [`Event`] at tokio time `now`:
//! 1. **Aggregation**: events alike except for their message (same source, object, type, reason)
//!    are counted per [`AGGREGATE_WINDOW`]; from the [`AGGREGATE_MAX`]th distinct message on,
//!    the event is replaced by one aggregate whose message is prefixed
//!    `(combined from similar events): `, so further variants update one object.
//! 2. **Series**: an event identical to one already written (same key, message included) is
//!    not created again: the earlier object's `count` is incremented and `lastTimestamp`
//!    moved, as a PATCH ([`Write::Patch`]).
//! 3. **Spam filter**: per source + object, a token bucket of [`SPAM_BURST`] refilled one token
//!    per [`SPAM_REFILL`]; an event without a token is dropped ([`Write::Skip`]).
//!
//! Each of the three caches is an [`Lru`] of [`CACHE_SIZE`] entries. The correlator only decides:
//! the recorder performs the write.

use std::collections::HashSet;
use std::time::Duration;

use tokio::time::Instant;

use super::lru::Lru;
use kube_gc_api::{Event, Time};
use kube_gc_workqueue::token_bucket::TokenBucket;

/// Entries per cache (client-go's `maxLruCacheEntries`).
pub const CACHE_SIZE: usize = 4_096;
/// Distinct messages before similar events are aggregated (client-go's
/// `defaultAggregateMaxEvents`).
pub const AGGREGATE_MAX: usize = 10;
/// The window over which similar events are counted (`defaultAggregateIntervalInSeconds`).
pub const AGGREGATE_WINDOW: Duration = Duration::from_secs(600);
/// Events a source may emit about one object in a burst (`defaultSpamBurst`).
pub const SPAM_BURST: u32 = 25;
/// One more event allowed per this long (`defaultSpamQPS` = 1/300).
pub const SPAM_REFILL: Duration = Duration::from_secs(300);
/// The prefix of an aggregated event's message.
pub const AGGREGATE_PREFIX: &str = "(combined from similar events): ";

/// What to do with one event.
#[derive(Clone, Debug, PartialEq)]
pub enum Write {
    /// POST this new Event.
    Create(Event),
    /// PATCH the existing Event `name` to this `count`, `lastTimestamp` and `message` (the full
    /// event is kept to create it again if it was deleted meanwhile).
    Patch(Event),
    /// Drop it (spam filter).
    Skip,
}

/// The parts of an event identifying the object and the source.
fn object_key(event: &Event) -> String {
    let o = &event.involved_object;
    let source = event.source.clone().unwrap_or_default();
    [
        source.component.unwrap_or_default(),
        source.host.unwrap_or_default(),
        o.kind.clone().unwrap_or_default(),
        o.namespace.clone().unwrap_or_default(),
        o.name.clone().unwrap_or_default(),
        o.uid.clone().unwrap_or_default(),
        o.api_version.clone().unwrap_or_default(),
    ]
    .join("\u{0}")
}

/// Object + type + reason: what similar events share.
fn aggregate_key(event: &Event) -> String {
    format!(
        "{}\u{0}{}\u{0}{}",
        object_key(event),
        event.type_.as_deref().unwrap_or_default(),
        event.reason.as_deref().unwrap_or_default()
    )
}

/// Aggregate key + message: what identical events share.
fn event_key(event: &Event) -> String {
    format!(
        "{}\u{0}{}",
        aggregate_key(event),
        event.message.as_deref().unwrap_or_default()
    )
}

struct Similar {
    messages: HashSet<String>,
    last_seen: Instant,
}

/// The series of one event key: how many occurrences, since when, under which object name.
#[derive(Clone, Debug)]
struct Written {
    count: i32,
    first_timestamp: Option<Time>,
    name: String,
}

/// The correlator's state.
pub struct Correlator {
    similar: Lru<String, Similar>,
    written: Lru<String, Written>,
    spam: Lru<String, TokenBucket>,
}

impl std::fmt::Debug for Correlator {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Correlator")
            .field("similar", &self.similar.len())
            .field("written", &self.written.len())
            .field("spam", &self.spam.len())
            .finish()
    }
}

impl Default for Correlator {
    fn default() -> Self {
        Correlator {
            similar: Lru::new(CACHE_SIZE),
            written: Lru::new(CACHE_SIZE),
            spam: Lru::new(CACHE_SIZE),
        }
    }
}

impl Correlator {
    /// Empty caches.
    pub fn new() -> Correlator {
        Correlator::default()
    }

    /// Decides what to write for `event` observed at `now`. The event comes as for a new series:
    /// a generated `metadata.name`, `count` 1, both timestamps now.
    pub fn correlate(&mut self, event: Event, now: Instant) -> Write {
        let (event, key) = self.aggregate(event, now);
        let write = self.observe(event, key);
        let event = match &write {
            Write::Create(event) | Write::Patch(event) => event,
            Write::Skip => return write,
        };
        if self.allowed(object_key(event), now) {
            write
        } else {
            Write::Skip
        }
    }

    /// Step 1: the event and its series key, or the aggregate standing for it and the
    /// aggregate's key (which ignores the message, so all variants share one series).
    fn aggregate(&mut self, mut event: Event, now: Instant) -> (Event, String) {
        let key = aggregate_key(&event);
        let message = event.message.clone().unwrap_or_default();
        let fresh = match self.similar.get_mut(&key) {
            Some(similar) => now.duration_since(similar.last_seen) > AGGREGATE_WINDOW,
            None => true,
        };
        if fresh {
            let similar = Similar {
                messages: HashSet::new(),
                last_seen: now,
            };
            self.similar.insert(key.clone(), similar);
        }
        let Some(similar) = self.similar.get_mut(&key) else {
            return (event.clone(), event_key(&event));
        };
        similar.last_seen = now;
        similar.messages.insert(message.clone());
        if similar.messages.len() < AGGREGATE_MAX {
            let key = event_key(&event);
            return (event, key);
        }
        // Stay at the threshold, so every further variant is aggregated too.
        if let Some(any) = similar.messages.iter().next().cloned() {
            similar.messages.remove(&any);
        }
        event.message = Some(format!("{AGGREGATE_PREFIX}{message}"));
        (event, key)
    }

    /// Step 2: a new series, or the next occurrence of a known one (named as first written).
    fn observe(&mut self, mut event: Event, key: String) -> Write {
        match self.written.get_mut(&key) {
            Some(previous) => {
                previous.count += 1;
                event.count = Some(previous.count);
                event.first_timestamp = previous.first_timestamp;
                event.metadata.name = Some(previous.name.clone());
                Write::Patch(event)
            }
            None => {
                let written = Written {
                    count: event.count.unwrap_or(1),
                    first_timestamp: event.first_timestamp,
                    name: event.metadata.name.clone().unwrap_or_default(),
                };
                self.written.insert(key, written);
                Write::Create(event)
            }
        }
    }

    /// Step 3: whether the source may still write about this object.
    fn allowed(&mut self, key: String, now: Instant) -> bool {
        if self.spam.get_mut(&key).is_none() {
            let qps = 1.0 / SPAM_REFILL.as_secs_f64();
            self.spam
                .insert(key.clone(), TokenBucket::new(qps, SPAM_BURST));
        }
        match self.spam.get_mut(&key) {
            Some(bucket) if bucket.peek(now).is_zero() => {
                bucket.reserve(now);
                true
            }
            _ => false,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use kube_gc_api::{ObjectMeta, ObjectReference};

    fn event(n: usize, reason: &str, message: &str) -> Event {
        Event {
            metadata: ObjectMeta {
                name: Some(format!("pi.{n:x}")),
                ..ObjectMeta::default()
            },
            involved_object: ObjectReference {
                kind: Some("Job".into()),
                namespace: Some("default".into()),
                name: Some("pi".into()),
                uid: Some("u1".into()),
                ..ObjectReference::default()
            },
            reason: Some(reason.into()),
            message: Some(message.into()),
            type_: Some("Warning".into()),
            count: Some(1),
            ..Event::default()
        }
    }

    fn summary(write: &Write) -> (char, String, i32, String) {
        match write {
            Write::Create(e) | Write::Patch(e) => (
                if matches!(write, Write::Create(_)) {
                    'C'
                } else {
                    'P'
                },
                e.metadata.name.clone().unwrap_or_default(),
                e.count.unwrap_or_default(),
                e.message.clone().unwrap_or_default(),
            ),
            Write::Skip => ('S', String::new(), 0, String::new()),
        }
    }

    #[tokio::test(start_paused = true)]
    async fn identical_events_become_one_series() {
        let mut correlator = Correlator::new();
        let now = Instant::now();
        let writes: Vec<_> = (0..3)
            .map(|n| summary(&correlator.correlate(event(n, "Failed", "boom"), now)))
            .collect();
        assert_eq!(
            writes,
            [
                ('C', "pi.0".into(), 1, "boom".into()),
                ('P', "pi.0".into(), 2, "boom".into()),
                ('P', "pi.0".into(), 3, "boom".into()),
            ]
        );
    }

    #[tokio::test(start_paused = true)]
    async fn the_tenth_distinct_message_starts_an_aggregate() {
        let mut correlator = Correlator::new();
        let now = Instant::now();
        let writes: Vec<_> = (0..12)
            .map(|n| summary(&correlator.correlate(event(n, "Failed", &format!("m{n}")), now)))
            .collect();
        assert!(writes[..9].iter().all(|w| w.0 == 'C' && w.2 == 1));
        assert_eq!(
            writes[9],
            ('C', "pi.9".into(), 1, format!("{AGGREGATE_PREFIX}m9"))
        );
        assert_eq!(
            writes[10],
            ('P', "pi.9".into(), 2, format!("{AGGREGATE_PREFIX}m10"))
        );
        assert_eq!(
            writes[11],
            ('P', "pi.9".into(), 3, format!("{AGGREGATE_PREFIX}m11"))
        );

        // After the window, the same reason counts from zero again.
        let later = now + AGGREGATE_WINDOW + Duration::from_secs(1);
        let write = correlator.correlate(event(12, "Failed", "fresh"), later);
        assert_eq!(summary(&write), ('C', "pi.c".into(), 1, "fresh".into()));
    }

    #[tokio::test(start_paused = true)]
    async fn a_source_may_burst_25_events_per_object_then_one_per_five_minutes() {
        let mut correlator = Correlator::new();
        let now = Instant::now();
        let written = (0..30)
            .map(|n| correlator.correlate(event(n, &format!("R{n}"), "x"), now))
            .filter(|w| *w != Write::Skip)
            .count();
        assert_eq!(written, SPAM_BURST as usize);
        let soon = now + Duration::from_secs(299);
        assert_eq!(
            correlator.correlate(event(30, "R30", "x"), soon),
            Write::Skip
        );
        let later = now + SPAM_REFILL;
        assert_ne!(
            correlator.correlate(event(31, "R31", "x"), later),
            Write::Skip
        );
        assert_eq!(
            correlator.correlate(event(32, "R32", "x"), later),
            Write::Skip
        );
        // Another object has its own bucket.
        let mut other = event(33, "R0", "x");
        other.involved_object.uid = Some("u2".into());
        assert_ne!(correlator.correlate(other, later), Write::Skip);
    }
}
