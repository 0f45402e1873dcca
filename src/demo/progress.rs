//! The demo's live progress line: Jobs seen, waiting for their TTL, deleted (of those expected),
//! queue depth, and the deleted namespaces finalized (of those deleted), refreshed a few times a
//! second.
//!
//! Contract: on a terminal the line is redrawn in place (`\r`); otherwise (a pipe, a test) one
//! line is printed per second, so logs stay readable. [`Progress::finish`] prints the last state
//! and ends the line. Its counts are true and the cumulative ones never fall: "seen" counts the
//! Jobs the TTL controllers' caches have taken in (not what they still hold, which falls as
//! they delete), and "deleted" is out of every deletion the TTL controllers are expected to make
//! — the owner trees' expired Jobs included — so it ends at N/N, never above; "namespaces
//! finalized" counts the deleted namespaces gone from the server, as the namespace scene last
//! looked.

use std::io::{IsTerminal, Write};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use tokio::time::Instant;

use crate::controllers::ttl::{BatchJob, TtlKind, TtlMetrics, VolcanoJobs};
use crate::manager::ProgressProbe;

/// The counts on the line.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
struct Counts {
    seen: u64,
    waiting: usize,
    deleted: u64,
    expected: usize,
    queued: usize,
    /// Namespaces finalized, and deleted.
    namespaces: (usize, usize),
}

/// The line: the TTL controllers' cumulative counts first (seen, deleted of expected), then the
/// moment's (waiting, queued), then the namespaces finalized.
fn line(elapsed: Duration, c: Counts) -> String {
    let Counts {
        seen,
        waiting,
        deleted,
        expected,
        queued,
        namespaces: (finalized, deleted_namespaces),
    } = c;
    format!(
        "[{:>5.1}s] jobs seen {seen:>5} | deleted {deleted:>4}/{expected} | waiting for TTL {waiting:>4} | queue {queued:>3} | namespaces finalized {finalized}/{deleted_namespaces}",
        elapsed.as_secs_f64(),
    )
}

/// What the line reads from.
pub struct Progress {
    probes: Vec<(String, ProgressProbe)>,
    metrics: Arc<TtlMetrics>,
    expected: usize,
    start: Instant,
    terminal: bool,
    namespaces: (Arc<AtomicUsize>, usize),
}

impl Progress {
    /// A line over the controllers' `probes` and `metrics`, `expected` deletions in all.
    pub fn new(
        probes: Vec<(String, ProgressProbe)>,
        metrics: Arc<TtlMetrics>,
        expected: usize,
        start: Instant,
    ) -> Self {
        Progress {
            probes,
            metrics,
            expected,
            start,
            terminal: std::io::stdout().is_terminal(),
            namespaces: (Arc::new(AtomicUsize::new(0)), 0),
        }
    }

    /// Shows `finalized` of `deleted` namespaces too.
    pub fn with_namespaces(mut self, finalized: Arc<AtomicUsize>, deleted: usize) -> Self {
        self.namespaces = (finalized, deleted);
        self
    }

    /// Deletions so far, both kinds.
    pub fn deleted(&self) -> u64 {
        self.metrics.deletions(BatchJob::KIND) + self.metrics.deletions(VolcanoJobs::KIND)
    }

    fn line(&self) -> String {
        let (mut seen, mut waiting, mut queued) = (0, 0, 0);
        for (_, probe) in &self.probes {
            let p = probe();
            seen += p.seen;
            waiting += p.waiting;
            queued += p.queued;
        }
        let (finalized, deleted_namespaces) = &self.namespaces;
        let counts = Counts {
            seen,
            waiting,
            deleted: self.deleted(),
            expected: self.expected,
            queued,
            namespaces: (finalized.load(Ordering::Relaxed), *deleted_namespaces),
        };
        line(self.start.elapsed(), counts)
    }

    /// Redraws until dropped by the caller (run it in a `select!` or a task it aborts).
    pub async fn show(&self) {
        let every = if self.terminal {
            Duration::from_millis(200)
        } else {
            Duration::from_secs(1)
        };
        let mut ticks = tokio::time::interval(every);
        loop {
            ticks.tick().await;
            self.print(false);
        }
    }

    /// Prints the final state and ends the line.
    pub fn finish(&self) {
        self.print(true);
    }

    fn print(&self, last: bool) {
        let mut out = std::io::stdout().lock();
        let line = self.line();
        // Output errors (a closed pipe) are not worth stopping the demo for.
        let _ = if self.terminal {
            write!(out, "\r{line}\x1b[K{}", if last { "\n" } else { "" })
        } else {
            writeln!(out, "{line}")
        };
        let _ = out.flush();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_line_puts_what_only_grows_first() {
        let counts = Counts {
            seen: 406,
            waiting: 31,
            deleted: 229,
            expected: 229,
            queued: 0,
            namespaces: (2, 3),
        };
        assert_eq!(
            line(Duration::from_millis(3_000), counts),
            "[  3.0s] jobs seen   406 | deleted  229/229 | waiting for TTL   31 | queue   0 | namespaces finalized 2/3"
        );
    }
}
