//! [`LeaderElector`]: competing for a Lease, holding it while renewals succeed, and saying so
//! through a [`Leadership`] watch channel.
//!
//! Contract (client-go's `leaderelection`, Lease lock):
//! - **Acquire**: every `retry_period` (jittered up to `× 2.2`), read the Lease; take it if it
//!   does not exist, is released (empty holder) or has not changed for `lease_duration` *as
//!   observed locally* (the times inside the Lease are never compared with our clock). Taking
//!   over increments `leaseTransitions`.
//! - **Renew**: every `retry_period`, PUT a fresh `renewTime` carrying the `resourceVersion`
//!   last seen; failed attempts are retried every `retry_period` until `renew_deadline` has passed
//!   since the round began, and a request that hangs is cut at that deadline. Then leadership is
//!   lost: the [`Leadership::Leading`] token is cancelled **before** anything else happens, and
//!   [`LeaderElector::run`] returns [`Outcome::Lost`]. The caller must then stop acting — kube-gc
//!   logs "leaderelection lost" and exits 1, like kube-controller-manager.
//! - Because `renew_deadline < lease_duration` and followers count `lease_duration` from the last
//!   change *they* observed, a leader that cannot renew stops leading before any follower can take
//!   over: two replicas never lead at once (given no process pauses longer than the difference).
//! - Acquire attempts are bounded by `renew_deadline` too, so a hung request cannot hold a
//!   candidate forever. If the `run` future is dropped (its task aborted), the leading token is
//!   cancelled all the same.
//! - **Stop**: when the `stop` token is cancelled, the leading token is cancelled and, with
//!   `release_on_cancel`, the Lease is released (empty holder, `leaseDurationSeconds: 1`) so a
//!   follower takes over at its next attempt. Cancel `stop` only once the controllers have
//!   drained, so no other replica starts while in-flight deletions finish.

use std::sync::Arc;
use std::time::Duration;

use tokio::sync::watch;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use super::config::{InvalidConfig, LeaderElectionConfig, JITTER_FACTOR};
use super::lock::{ElectionRecord, LeaseLock};
use kube_gc_api::{Lease, MicroTime};
use kube_gc_client::availability::warn_unless_unavailable;
use kube_gc_client::Client;
use kube_gc_core::clock::{SharedClock, TokioClock};

/// What this candidate knows about the election.
#[derive(Clone, Debug)]
pub enum Leadership {
    /// No attempt has finished yet: readiness must wait.
    Unknown,
    /// Another candidate holds the lease (`holder`), or nobody does and we have not taken it yet.
    Following {
        /// The current holder, if any.
        holder: Option<String>,
    },
    /// We hold the lease. `token` is cancelled the moment we stop holding it.
    Leading {
        /// Run the controllers under this token.
        token: CancellationToken,
    },
    /// The elector has returned (stopped or lost).
    Stopped,
}

impl Leadership {
    /// Whether this candidate leads (its leading token not yet cancelled).
    pub fn is_leader(&self) -> bool {
        matches!(self, Leadership::Leading { token } if !token.is_cancelled())
    }

    /// Whether the election state is known (what `/readyz` waits for).
    pub fn is_known(&self) -> bool {
        !matches!(self, Leadership::Unknown)
    }
}

/// A receiver of [`Leadership`] changes.
#[derive(Clone, Debug)]
pub struct LeadershipWatch {
    receiver: watch::Receiver<Leadership>,
}

impl LeadershipWatch {
    /// The state now.
    pub fn current(&self) -> Leadership {
        self.receiver.borrow().clone()
    }

    /// Waits until this candidate leads and returns the leading token; `None` if the elector
    /// stopped first.
    pub async fn leading(&mut self) -> Option<CancellationToken> {
        let state = self
            .receiver
            .wait_for(|s| matches!(s, Leadership::Leading { .. } | Leadership::Stopped))
            .await
            .ok()?;
        match &*state {
            Leadership::Leading { token } => Some(token.clone()),
            _ => None,
        }
    }

    /// Waits for the next change; `false` once the elector is gone.
    pub async fn changed(&mut self) -> bool {
        self.receiver.changed().await.is_ok()
    }
}

/// How [`LeaderElector::run`] ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Outcome {
    /// `stop` was cancelled (the lease was released if configured and held).
    Stopped,
    /// The lease could not be renewed in time: the process must exit non-zero.
    Lost,
}

/// The last record this candidate read or wrote, and when (on tokio's clock) it changed.
#[derive(Clone, Debug)]
struct Observed {
    lease: Lease,
    record: ElectionRecord,
    at: Instant,
}

/// One candidate in one election.
#[derive(Debug)]
pub struct LeaderElector {
    lock: LeaseLock,
    config: LeaderElectionConfig,
    /// Where the `acquireTime` / `renewTime` written for humans come from; decisions are taken
    /// on tokio's monotonic clock only.
    clock: SharedClock,
    observed: Option<Observed>,
    state: watch::Sender<Leadership>,
}

impl LeaderElector {
    /// A candidate for the Lease of `config`, validated.
    pub fn new(client: Client, config: LeaderElectionConfig) -> Result<Self, InvalidConfig> {
        config.validate()?;
        Ok(LeaderElector {
            lock: LeaseLock::new(client, &config.lease_namespace, &config.lease_name),
            config,
            clock: Arc::new(TokioClock::from_system()),
            observed: None,
            state: watch::Sender::new(Leadership::Unknown),
        })
    }

    /// The same candidate writing Lease times from `clock` (by default the system's wall time
    /// moving with tokio's clock, so on a paused clock the times move as far as a test advances).
    pub fn with_wall_clock(mut self, clock: SharedClock) -> Self {
        self.clock = clock;
        self
    }

    /// Follows this candidate's [`Leadership`].
    pub fn subscribe(&self) -> LeadershipWatch {
        LeadershipWatch {
            receiver: self.state.subscribe(),
        }
    }

    /// Competes for the lease until `stop` is cancelled or leadership is lost (see the module
    /// documentation).
    pub async fn run(mut self, stop: CancellationToken) -> Outcome {
        let lease = self.lock.describe();
        tracing::info!(%lease, identity = %self.config.identity, "attempting to acquire leader lease");
        if !self.acquire(&stop).await {
            self.state.send_replace(Leadership::Stopped);
            return Outcome::Stopped;
        }
        tracing::info!(%lease, identity = %self.config.identity, "successfully acquired lease");
        let token = CancellationToken::new();
        // Should this future be dropped (its task aborted), the controllers stop all the same.
        let _cancel_if_dropped = token.clone().drop_guard();
        self.state.send_replace(Leadership::Leading {
            token: token.clone(),
        });
        let outcome = self.renew(&stop).await;
        token.cancel();
        match outcome {
            Outcome::Lost => {
                tracing::error!(%lease, "failed to renew lease: renew deadline passed")
            }
            Outcome::Stopped if self.config.release_on_cancel => self.release().await,
            Outcome::Stopped => {}
        }
        self.state.send_replace(Leadership::Stopped);
        outcome
    }

    /// Tries every jittered retry period until the lease is ours (`true`) or `stop` (`false`).
    async fn acquire(&mut self, stop: &CancellationToken) -> bool {
        loop {
            let acquired = tokio::select! {
                _ = stop.cancelled() => return false,
                acquired = tokio::time::timeout(self.config.renew_deadline, self.try_acquire_or_renew()) => acquired.unwrap_or(false),
            };
            if acquired {
                return true;
            }
            self.publish_follower();
            let wait = jittered(self.config.retry_period);
            tokio::select! {
                _ = stop.cancelled() => return false,
                _ = tokio::time::sleep(wait) => {}
            }
        }
    }

    /// Renews every retry period until a round misses its deadline ([`Outcome::Lost`]) or `stop`.
    async fn renew(&mut self, stop: &CancellationToken) -> Outcome {
        loop {
            let deadline = Instant::now() + self.config.renew_deadline;
            tokio::select! {
                _ = stop.cancelled() => return Outcome::Stopped,
                renewed = self.renew_before(deadline) => if !renewed { return Outcome::Lost },
            }
            tokio::select! {
                _ = stop.cancelled() => return Outcome::Stopped,
                _ = tokio::time::sleep(self.config.retry_period) => {}
            }
        }
    }

    /// One renewal round: attempts every retry period until one succeeds or `deadline`.
    async fn renew_before(&mut self, deadline: Instant) -> bool {
        loop {
            let attempt = tokio::time::timeout_at(deadline, self.try_acquire_or_renew()).await;
            match attempt {
                Ok(true) => return true,
                Err(_hung_past_deadline) => return false,
                Ok(false) => {}
            }
            let next = Instant::now() + self.config.retry_period;
            if next >= deadline {
                tokio::time::sleep_until(deadline).await;
                return false;
            }
            tokio::time::sleep_until(next).await;
        }
    }

    /// One attempt (client-go's `tryAcquireOrRenew`): `true` if we hold the lease afterwards.
    async fn try_acquire_or_renew(&mut self) -> bool {
        let now = Instant::now();
        let wall = MicroTime(self.clock.now());
        let mut desired = ElectionRecord {
            holder_identity: self.config.identity.clone(),
            lease_duration_seconds: self.config.lease_duration_seconds(),
            acquire_time: Some(wall),
            renew_time: Some(wall),
            lease_transitions: 0,
        };

        // The leader of a still-valid lease writes onto the version it knows, saving a GET; if
        // that fails it reads the lease like anyone else.
        if let Some(observed) = self
            .observed
            .clone()
            .filter(|_| self.holds_valid_lease(now))
        {
            desired.acquire_time = observed.record.acquire_time;
            desired.lease_transitions = observed.record.lease_transitions;
            match self.lock.update(&observed.lease, &desired).await {
                Ok(lease) => return self.observe_written(lease, desired, now),
                Err(e) => {
                    tracing::debug!(error = %e, "renewing the known lease failed; reading it")
                }
            }
        }

        let current = match self.lock.get().await {
            Ok(Some(lease)) => lease,
            Ok(None) => return self.create(desired, now).await,
            Err(e) => {
                warn_unless_unavailable!(e, lease = %self.lock.describe(), err = %e, "error retrieving lease");
                return false;
            }
        };
        let record = ElectionRecord::from_spec(&current.spec);
        self.observe_read(&current, &record, now);
        let ours = record.holder_identity == self.config.identity;
        if !record.holder_identity.is_empty() && !ours && self.lease_valid(now) {
            tracing::debug!(holder = %record.holder_identity, "lease is held by another candidate and has not yet expired");
            return false;
        }
        if ours {
            desired.acquire_time = record.acquire_time;
            desired.lease_transitions = record.lease_transitions;
        } else {
            desired.lease_transitions = record.lease_transitions.saturating_add(1);
        }
        match self.lock.update(&current, &desired).await {
            Ok(lease) => self.observe_written(lease, desired, now),
            Err(e) if e.is_conflict() => {
                tracing::debug!("lease changed while we wrote it; another candidate was faster");
                false
            }
            Err(e) => {
                warn_unless_unavailable!(e, lease = %self.lock.describe(), err = %e, "failed to update lease");
                false
            }
        }
    }

    async fn create(&mut self, desired: ElectionRecord, now: Instant) -> bool {
        match self.lock.create(&desired).await {
            Ok(lease) => self.observe_written(lease, desired, now),
            Err(e) => {
                if !e.is_already_exists() {
                    warn_unless_unavailable!(e, lease = %self.lock.describe(), err = %e, "error initially creating lease");
                }
                false
            }
        }
    }

    /// Remembers a lease we just wrote; always `true` (the write made us the holder).
    fn observe_written(&mut self, lease: Lease, record: ElectionRecord, now: Instant) -> bool {
        self.observed = Some(Observed {
            lease,
            record,
            at: now,
        });
        true
    }

    /// Remembers a lease we read. The observed time only moves when the record changed: an
    /// unchanged record is how a dead holder shows.
    fn observe_read(&mut self, lease: &Lease, record: &ElectionRecord, now: Instant) {
        match &mut self.observed {
            Some(observed) if observed.record == *record => observed.lease = lease.clone(),
            _ => {
                self.observed = Some(Observed {
                    lease: lease.clone(),
                    record: record.clone(),
                    at: now,
                })
            }
        }
    }

    /// Whether the last record seen has not yet expired, counting from when we saw it change.
    fn lease_valid(&self, now: Instant) -> bool {
        self.observed.as_ref().is_some_and(|o| {
            let duration = Duration::from_secs(o.record.lease_duration_seconds.max(0) as u64);
            o.at + duration > now
        })
    }

    fn holds_valid_lease(&self, now: Instant) -> bool {
        self.is_holder() && self.lease_valid(now)
    }

    fn is_holder(&self) -> bool {
        self.observed
            .as_ref()
            .is_some_and(|o| o.record.holder_identity == self.config.identity)
    }

    fn publish_follower(&self) {
        let holder = self
            .observed
            .as_ref()
            .map(|o| o.record.holder_identity.clone())
            .filter(|h| !h.is_empty());
        self.state.send_if_modified(|state| {
            let changed = !matches!(state, Leadership::Following { holder: h } if *h == holder);
            if changed {
                if let Some(holder) = &holder {
                    tracing::info!(%holder, "new leader elected");
                }
                *state = Leadership::Following { holder };
            }
            changed
        });
    }

    /// Gives the lease up so a follower takes it at its next attempt (client-go's `release`).
    async fn release(&mut self) {
        let Some(observed) = self.observed.clone().filter(|_| self.is_holder()) else {
            return;
        };
        let now = MicroTime(self.clock.now());
        let released = ElectionRecord {
            holder_identity: String::new(),
            lease_duration_seconds: 1,
            acquire_time: Some(now),
            renew_time: Some(now),
            lease_transitions: observed.record.lease_transitions,
        };
        let write = self.lock.update(&observed.lease, &released);
        match tokio::time::timeout(self.config.renew_deadline, write).await {
            Ok(Ok(_)) => tracing::info!(lease = %self.lock.describe(), "released leader lease"),
            Ok(Err(e)) => tracing::warn!(error = %e, "failed to release lease"),
            Err(_) => tracing::warn!("failed to release lease: timed out"),
        }
    }
}

/// `base` plus a random extra of up to `JITTER_FACTOR × base` (client-go's `wait.Jitter`).
fn jittered(base: Duration) -> Duration {
    base + base.mul_f64(rand::random::<f64>() * JITTER_FACTOR)
}

#[cfg(test)]
mod tests {
    use super::*;
    use kube_gc_core::clock::Clock;

    #[tokio::test(start_paused = true)]
    async fn lease_times_move_with_tokios_clock() {
        let start = chrono::DateTime::parse_from_rfc3339("2026-11-22T00:00:00Z")
            .map(|t| t.with_timezone(&chrono::Utc))
            .unwrap_or_default();
        let clock = TokioClock::starting_at(start);
        tokio::time::advance(Duration::from_millis(2_500)).await;
        assert_eq!(
            MicroTime(clock.now()).to_wire(),
            "2026-11-22T00:00:02.500000Z"
        );
    }

    #[test]
    fn jitter_stays_within_the_factor() {
        let base = Duration::from_secs(2);
        for _ in 0..100 {
            let wait = jittered(base);
            assert!(wait >= base && wait <= base.mul_f64(1.0 + JITTER_FACTOR));
        }
    }

    #[test]
    fn leadership_is_known_once_anything_happened() {
        assert!(!Leadership::Unknown.is_known());
        assert!(Leadership::Following { holder: None }.is_known());
        let leading = Leadership::Leading {
            token: CancellationToken::new(),
        };
        assert!(leading.is_leader() && leading.is_known());
    }
}
