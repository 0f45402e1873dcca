//! The [`Watchdog`] of one watch request: whether the server answers it, whether the watch has
//! stalled, and when a stuck reflector's watch proves to work again.
//!
//! Contract:
//! - A watch request the server does not answer (no response headers) within the stall grace
//!   ([`ReflectorConfig::watch_stall_grace`](super::ReflectorConfig::watch_stall_grace), 30 s)
//!   is given up ([`Watchdog::answer`]): watches have no request timeout, by design, so a server
//!   that accepts the connection and never responds would otherwise hold the reflector forever.
//! - A watch is *stalled* once it has outlived the `timeoutSeconds` it asked for by the grace
//!   ([`stall_deadline`]): the server ends every watch at `timeoutSeconds`, so one still open
//!   after that is a wedged proxy or a connection that is open but silent, and the reflector
//!   would otherwise look synced while it sees nothing. [`Watchdog::stalled`] completes then.
//! - Both are counted (`stalled_watches`) and logged at warn, by the watchdog.
//! - While the watch is open the watchdog keeps its [`SyncHealth`](super::metrics::SyncHealth)
//!   up to date, and a reflector reported stuck says it recovered as soon as the watch proves to
//!   work — an event, or [`MIN_HEALTHY_WATCH`] without an error — not when the watch ends
//!   minutes later. [`report_stuck`] says each change of the stuck state once.
//! - One timer for the whole watch, armed once: a timeout around each read would put a timer in
//!   the runtime's wheel and take it out again whenever the stream had to wait, several times
//!   for every object deleted in a burst.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use tokio::time::{Instant, Sleep};

use super::metrics::{ReflectorMetrics, StuckChange};
use super::MIN_HEALTHY_WATCH;
use kube_gc_core::clock::sleep_until_some;

/// When a watch sent at `started` asking `timeout_seconds` is deemed stalled: the server should
/// have ended it at `timeoutSeconds`; the grace covers clock skew and a slow last read.
pub fn stall_deadline(started: Instant, timeout_seconds: Option<u32>, grace: Duration) -> Instant {
    let timeout = Duration::from_secs(timeout_seconds.unwrap_or_default().into());
    started + timeout + grace
}

/// The server did not answer a watch request within the stall grace.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Unanswered;

/// Watches one watch request, from sending it to the end of its stream.
pub(super) struct Watchdog {
    metrics: Arc<ReflectorMetrics>,
    /// What is reflected, for the logs.
    resource: Arc<str>,
    grace: Duration,
    /// Fires at the stall deadline.
    stall: Pin<Box<Sleep>>,
    /// When to say that a reflector reported stuck works again, if it was reported stuck.
    recovery_due: Option<Instant>,
}

impl Watchdog {
    /// The watchdog of a watch request sent now, asking `timeout_seconds`.
    pub(super) fn new(
        metrics: Arc<ReflectorMetrics>,
        resource: Arc<str>,
        timeout_seconds: Option<u32>,
        grace: Duration,
    ) -> Watchdog {
        let deadline = stall_deadline(Instant::now(), timeout_seconds, grace);
        Watchdog {
            metrics,
            resource,
            grace,
            stall: Box::pin(tokio::time::sleep_until(deadline)),
            recovery_due: None,
        }
    }

    /// The answer to the watch request `request`, or [`Unanswered`] (counted as a stalled
    /// watch) if the server has not answered it within the grace.
    pub(super) async fn answer<T>(
        &self,
        request: impl Future<Output = T>,
    ) -> Result<T, Unanswered> {
        match tokio::time::timeout(self.grace, request).await {
            Ok(answer) => Ok(answer),
            Err(_) => {
                self.metrics.stalled_watch();
                tracing::warn!(
                    grace = ?self.grace,
                    "the API server did not answer a watch request in time"
                );
                Err(Unanswered)
            }
        }
    }

    /// Completes at the stall deadline, once the watch has been counted and logged as stalled
    /// after `events` events. Meanwhile says when a stuck reflector's watch has held long enough
    /// to count as working. Cancel-safe: its state is in `self`, so it can be raced against
    /// each read of the stream.
    pub(super) async fn stalled(&mut self, events: u64) {
        loop {
            tokio::select! {
                biased;
                () = &mut self.stall => break,
                () = sleep_until_some(self.recovery_due) => {
                    self.recovery_due = None;
                    report_stuck(&self.metrics, &self.resource);
                }
            }
        }
        self.metrics.stalled_watch();
        tracing::warn!(
            events,
            grace = ?self.grace,
            "watch outlived its timeoutSeconds: abandoning it as stalled"
        );
    }

    /// The watch's events begin (for a streaming list: after its initial events). A stuck
    /// reflector's recovery is due in [`MIN_HEALTHY_WATCH`], unless an event proves it sooner.
    pub(super) fn watch_opened(&mut self) {
        self.metrics.watch_opened();
        self.recovery_due = self
            .metrics
            .reported_stuck()
            .then(|| Instant::now() + MIN_HEALTHY_WATCH);
    }

    /// An event arrived (not an error): the watch works.
    pub(super) fn event_arrived(&mut self) {
        self.metrics.watch_worked();
        if self.recovery_due.take().is_some() {
            report_stuck(&self.metrics, &self.resource);
        }
    }

    /// The watch is over: if it lasted long enough, it worked until now.
    pub(super) fn watch_ended(&self) {
        self.metrics.watch_ended();
    }
}

/// Says once, at default verbosity, that the reflector became stuck (it cannot see changes) or
/// recovered.
pub(super) fn report_stuck(metrics: &ReflectorMetrics, resource: &str) {
    match metrics.stuck_change() {
        Some(StuckChange::BecameStuck(for_how_long)) => tracing::warn!(
            resource,
            seconds_without_sync = for_how_long.as_secs(),
            "informer is not seeing changes: no list and watch has worked; /readyz fails until it does"
        ),
        Some(StuckChange::Recovered) => {
            tracing::info!(resource, "informer is watching again")
        }
        None => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn watchdog(metrics: &Arc<ReflectorMetrics>, timeout_seconds: u32) -> Watchdog {
        Watchdog::new(
            Arc::clone(metrics),
            "test/v1/things".into(),
            Some(timeout_seconds),
            Duration::from_secs(30),
        )
    }

    #[test]
    fn a_watch_is_stalled_its_grace_after_the_timeout_it_asked_for() {
        let now = Instant::now();
        let grace = Duration::from_secs(30);
        assert_eq!(
            stall_deadline(now, Some(300), grace),
            now + Duration::from_secs(330)
        );
        assert_eq!(stall_deadline(now, None, grace), now + grace);
    }

    #[tokio::test(start_paused = true)]
    async fn a_watch_open_past_its_deadline_is_counted_as_stalled_there() {
        let metrics = Arc::new(ReflectorMetrics::default());
        let mut dog = watchdog(&metrics, 300);
        let started = Instant::now();
        dog.watch_opened();
        dog.stalled(0).await;
        assert_eq!(started.elapsed(), Duration::from_secs(330));
        assert_eq!(metrics.snapshot().stalled_watches, 1);
    }

    #[tokio::test(start_paused = true)]
    async fn an_unanswered_request_is_given_up_after_the_grace() {
        let metrics = Arc::new(ReflectorMetrics::default());
        let dog = watchdog(&metrics, 300);
        let started = Instant::now();
        let answer = dog.answer(std::future::pending::<()>()).await;
        assert_eq!(answer, Err(Unanswered));
        assert_eq!(started.elapsed(), Duration::from_secs(30));
        assert_eq!(metrics.snapshot().stalled_watches, 1);
        assert_eq!(dog.answer(async { 7 }).await, Ok(7));
    }

    #[tokio::test(start_paused = true)]
    async fn a_stuck_reflector_recovers_a_second_into_its_watch_while_waiting_for_a_stall() {
        let metrics = Arc::new(ReflectorMetrics::default());
        metrics.set_stuck_after(Duration::from_secs(60));
        tokio::time::advance(Duration::from_secs(61)).await;
        report_stuck(&metrics, "test/v1/things");
        assert!(metrics.reported_stuck());
        let mut dog = watchdog(&metrics, 300);
        dog.watch_opened();
        let waited = tokio::time::timeout(Duration::from_secs(2), dog.stalled(0)).await;
        assert!(waited.is_err(), "not stalled yet");
        assert!(
            !metrics.reported_stuck(),
            "recovered while the watch is open"
        );
        assert_eq!(metrics.snapshot().stalled_watches, 0);
    }

    #[tokio::test(start_paused = true)]
    async fn an_event_proves_a_stuck_reflectors_watch_at_once() {
        let metrics = Arc::new(ReflectorMetrics::default());
        metrics.set_stuck_after(Duration::from_secs(60));
        tokio::time::advance(Duration::from_secs(61)).await;
        report_stuck(&metrics, "test/v1/things");
        let mut dog = watchdog(&metrics, 300);
        dog.watch_opened();
        dog.event_arrived();
        assert!(!metrics.reported_stuck());
        dog.watch_ended();
        assert_eq!(metrics.since_last_sync(), Duration::ZERO);
    }
}
