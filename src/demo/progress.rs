//! The demo's live progress line: objects cached, waiting for their TTL, deleted (of those
//! expected), and queue depth, refreshed a few times a second.
//!
//! Contract: on a terminal the line is redrawn in place (`\r`); otherwise (a pipe, a test) one
//! line is printed per second, so logs stay readable. [`Progress::finish`] prints the last state
//! and ends the line.

use std::io::{IsTerminal, Write};
use std::sync::Arc;
use std::time::Duration;

use tokio::time::Instant;

use crate::controllers::ttl::{BatchJob, TtlKind, TtlMetrics, VolcanoJobs};
use crate::manager::ProgressProbe;

/// What the line reads from.
pub struct Progress {
    probes: Vec<(String, ProgressProbe)>,
    metrics: Arc<TtlMetrics>,
    expected: usize,
    start: Instant,
    terminal: bool,
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
        }
    }

    /// Deletions so far, both kinds.
    pub fn deleted(&self) -> u64 {
        self.metrics.deletions(BatchJob::KIND) + self.metrics.deletions(VolcanoJobs::KIND)
    }

    fn line(&self) -> String {
        let (mut cached, mut waiting, mut queued) = (0, 0, 0);
        for (_, probe) in &self.probes {
            let p = probe();
            cached += p.cached;
            waiting += p.waiting;
            queued += p.queued;
        }
        format!(
            "[{:>5.1}s] jobs seen {cached:>5} | waiting for TTL {waiting:>4} | deleted {:>4}/{} | queue {queued:>3}",
            self.start.elapsed().as_secs_f64(),
            self.deleted(),
            self.expected
        )
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
