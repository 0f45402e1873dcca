//! Shutdown: SIGTERM/SIGINT handling and the bounded drain that follows.
//!
//! Contract (kube-controller-manager's behaviour):
//! - The first SIGTERM or SIGINT cancels the process's shutdown token: controllers stop taking
//!   work and finish what they hold.
//! - A second signal exits the process at once with status 1 (an operator pressing Ctrl-C twice,
//!   or a kubelet that gave up waiting).
//! - Draining is bounded by `--shutdown-grace-period` (default 30 s, below the pod's default
//!   `terminationGracePeriodSeconds` of 30 s plus the preStop margin): [`drain_within`] gives the
//!   drain that long and reports whether it finished.

use std::future::Future;
use std::time::Duration;

use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

/// The default `--shutdown-grace-period`.
pub const DEFAULT_GRACE_PERIOD: Duration = Duration::from_secs(30);

/// A termination request.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Signal {
    /// SIGTERM (what the kubelet sends).
    Terminate,
    /// SIGINT (Ctrl-C).
    Interrupt,
}

/// Where termination requests come from: the operating system, or a test.
pub trait SignalSource: Send + 'static {
    /// The next request; `None` when no more can come.
    fn next(&mut self) -> impl Future<Output = Option<Signal>> + Send;
}

/// SIGTERM and SIGINT of this process.
#[derive(Debug)]
pub struct OsSignals {
    terminate: tokio::signal::unix::Signal,
    interrupt: tokio::signal::unix::Signal,
}

impl OsSignals {
    /// Installs the handlers (from now on the signals no longer kill the process by default).
    pub fn install() -> std::io::Result<OsSignals> {
        use tokio::signal::unix::{signal, SignalKind};
        Ok(OsSignals {
            terminate: signal(SignalKind::terminate())?,
            interrupt: signal(SignalKind::interrupt())?,
        })
    }
}

impl SignalSource for OsSignals {
    async fn next(&mut self) -> Option<Signal> {
        tokio::select! {
            s = self.terminate.recv() => s.map(|_| Signal::Terminate),
            s = self.interrupt.recv() => s.map(|_| Signal::Interrupt),
        }
    }
}

impl SignalSource for tokio::sync::mpsc::Receiver<Signal> {
    async fn next(&mut self) -> Option<Signal> {
        self.recv().await
    }
}

/// Installs SIGTERM/SIGINT handling: the first signal cancels `shutdown`, a second exits 1.
/// The returned task runs for the life of the process; abort it to stop listening.
pub fn handle_signals(shutdown: CancellationToken) -> std::io::Result<JoinHandle<()>> {
    let signals = OsSignals::install()?;
    Ok(tokio::spawn(on_signals(signals, shutdown, || {
        std::process::exit(1)
    })))
}

/// The signal logic, with the source and the forced exit injectable for tests.
pub async fn on_signals<S: SignalSource>(
    mut signals: S,
    shutdown: CancellationToken,
    exit_now: impl FnOnce(),
) {
    let Some(first) = signals.next().await else {
        return;
    };
    tracing::info!(signal = ?first, "shutting down; a second signal exits at once");
    shutdown.cancel();
    if let Some(second) = signals.next().await {
        tracing::warn!(signal = ?second, "second signal: exiting at once");
        exit_now();
    }
}

/// How a bounded drain ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Drain {
    /// Everything finished in time.
    Completed,
    /// The grace period ran out; what was left was abandoned.
    TimedOut,
}

/// Runs `drain` for at most `grace`.
pub async fn drain_within(grace: Duration, drain: impl Future<Output = ()>) -> Drain {
    match tokio::time::timeout(grace, drain).await {
        Ok(()) => Drain::Completed,
        Err(_) => {
            tracing::warn!(
                ?grace,
                "shutdown grace period over; abandoning unfinished work"
            );
            Drain::TimedOut
        }
    }
}

/// The shutdown flag, to flatten into a command.
#[derive(Clone, Debug, PartialEq, Eq, clap::Args)]
pub struct ShutdownArgs {
    /// How long to let in-flight work finish after SIGTERM before exiting anyway.
    #[arg(long = "shutdown-grace-period", value_name = "DURATION", default_value = "30s", value_parser = kube_gc_core::duration::parse_duration)]
    pub grace_period: Duration,
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::sync::Arc;
    use tokio::sync::mpsc;

    #[tokio::test]
    async fn first_signal_cancels_and_second_exits() {
        let (send, receive) = mpsc::channel(2);
        let shutdown = CancellationToken::new();
        let exited = Arc::new(AtomicBool::new(false));
        let flag = exited.clone();
        let task = tokio::spawn(on_signals(receive, shutdown.clone(), move || {
            flag.store(true, Ordering::SeqCst)
        }));
        send.send(Signal::Terminate).await.unwrap();
        shutdown.cancelled().await;
        assert!(!exited.load(Ordering::SeqCst));
        send.send(Signal::Interrupt).await.unwrap();
        task.await.unwrap();
        assert!(exited.load(Ordering::SeqCst));
    }

    #[tokio::test(start_paused = true)]
    async fn a_drain_is_bounded_by_the_grace_period() {
        let quick = drain_within(
            DEFAULT_GRACE_PERIOD,
            tokio::time::sleep(Duration::from_secs(29)),
        );
        assert_eq!(quick.await, Drain::Completed);
        let start = tokio::time::Instant::now();
        let stuck = drain_within(DEFAULT_GRACE_PERIOD, std::future::pending());
        assert_eq!(stuck.await, Drain::TimedOut);
        assert_eq!(start.elapsed(), DEFAULT_GRACE_PERIOD);
    }

    #[test]
    fn the_flag_defaults_to_30_seconds() {
        use clap::Parser;
        #[derive(clap::Parser)]
        struct Command {
            #[command(flatten)]
            shutdown: ShutdownArgs,
        }
        let parsed = Command::parse_from(["kube-gc"]).shutdown;
        assert_eq!(parsed.grace_period, DEFAULT_GRACE_PERIOD);
        let parsed = Command::parse_from(["kube-gc", "--shutdown-grace-period=5s"]).shutdown;
        assert_eq!(parsed.grace_period, Duration::from_secs(5));
    }
}
