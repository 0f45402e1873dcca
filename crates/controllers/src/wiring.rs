//! What a controller shares with the rest of the process: its wiring.
//!
//! Contract: a [`Wiring`] says where a controller's lists and watches come from (the process's
//! [`Sources`], one list and one watch per resource whichever controllers read it), where it
//! reads wall time, where its Events go, where its workqueues report, and where it tells each
//! deletion. The default is a controller on its own: sources of its own over its client, the
//! system clock, Events dropped, no queue metrics, deletions told nowhere. Every controller
//! takes one — the TTL, retention and pod GC builders through `wiring`, the others in their
//! options — so the manager builds it once for all of them. What differs between controllers
//! (their options, their metrics) stays with each.

use std::sync::Arc;

use crate::deleted::{NoFeed, SharedFeed};
use kube_gc_client::Client;
use kube_gc_core::clock::{SharedClock, SystemClock};
use kube_gc_runtime::events::{NoopRecorder, SharedRecorder};
use kube_gc_runtime::reflector::ReflectorConfig;
use kube_gc_runtime::sources::Sources;
use kube_gc_runtime::workqueue::{MetricsProvider, WorkQueue, WorkQueueBuilder};

/// Where a controller's reads come from and where what it does goes.
#[derive(Clone)]
pub struct Wiring {
    /// The process's sources; `None`: sources of its own over the controller's client.
    pub sources: Option<Sources>,
    /// Where wall time is read.
    pub clock: SharedClock,
    /// Where Events go.
    pub recorder: SharedRecorder,
    /// Where the workqueues report their metrics.
    pub queue_metrics: Option<Arc<dyn MetricsProvider>>,
    /// Where each deletion (and each one an `Audit` policy would make) is told.
    pub feed: SharedFeed,
}

impl Default for Wiring {
    fn default() -> Self {
        Wiring {
            sources: None,
            clock: Arc::new(SystemClock),
            recorder: Arc::new(NoopRecorder),
            queue_metrics: None,
            feed: Arc::new(NoFeed),
        }
    }
}

impl std::fmt::Debug for Wiring {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Wiring")
            .field("shared_sources", &self.sources.is_some())
            .field("queue_metrics", &self.queue_metrics.is_some())
            .finish_non_exhaustive()
    }
}

impl Wiring {
    /// Reads through the process's `sources`.
    pub fn sources(mut self, sources: Sources) -> Self {
        self.sources = Some(sources);
        self
    }

    /// Reads wall time from `clock`.
    pub fn clock(mut self, clock: SharedClock) -> Self {
        self.clock = clock;
        self
    }

    /// Sends Events to `recorder`.
    pub fn recorder(mut self, recorder: SharedRecorder) -> Self {
        self.recorder = recorder;
        self
    }

    /// Has the workqueues report to `provider`, if any.
    pub fn queue_metrics(mut self, provider: Option<Arc<dyn MetricsProvider>>) -> Self {
        self.queue_metrics = provider;
        self
    }

    /// Tells each deletion to `feed`.
    pub fn feed(mut self, feed: SharedFeed) -> Self {
        self.feed = feed;
        self
    }

    /// The sources to read through: the process's, or new ones over `client` listing and
    /// watching as `reflector` says.
    pub(crate) fn sources_or_own(&self, client: &Client, reflector: &ReflectorConfig) -> Sources {
        self.sources
            .clone()
            .unwrap_or_else(|| Sources::new(client.clone(), reflector.clone()))
    }

    /// A workqueue named `name` (its metrics' `name` label), reporting where this wiring says;
    /// the caller may give it a rate limiter of its own before building it.
    pub(crate) fn queue<T>(&self, name: &str) -> WorkQueueBuilder<T>
    where
        T: Clone + Eq + std::hash::Hash + Send + 'static,
    {
        let builder = WorkQueue::builder(name);
        match &self.queue_metrics {
            Some(provider) => builder.metrics(Arc::clone(provider)),
            None => builder,
        }
    }
}
