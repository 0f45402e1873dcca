//! [`LogSink`]: where log lines go — standard error, until its reader goes away.
//!
//! Contract: a line that cannot be written because the reader went away
//! (`kube-gc run 2>&1 | head -1`) is dropped, as is every later one, and the sink is *closed*:
//! [`LogSink::closed`] resolves, so a command that would otherwise run on blind can end (`run`
//! stops as on SIGTERM; kube-controller-manager, in Go, is killed by SIGPIPE at that write). No
//! panic and no message on the dead stream. Any other failure to write drops that line only.

use std::io::{ErrorKind, Write};

use tokio_util::sync::CancellationToken;
use tracing_subscriber::fmt::MakeWriter;

/// Standard error for log lines, and whether its reader has gone away. Clones share the state.
#[derive(Clone, Debug, Default)]
pub struct LogSink {
    closed: CancellationToken,
}

impl LogSink {
    /// A sink over standard error, open.
    pub fn new() -> LogSink {
        LogSink::default()
    }

    /// Whether the reader has gone away.
    pub fn is_closed(&self) -> bool {
        self.closed.is_cancelled()
    }

    /// Resolves once the reader has gone away (never, while it reads).
    pub async fn closed(&self) {
        self.closed.cancelled().await;
    }

    /// A writer into `inner` that closes this sink when `inner`'s reader goes away.
    fn writer<W: Write>(&self, inner: W) -> SinkWriter<W> {
        SinkWriter {
            inner,
            closed: self.closed.clone(),
        }
    }
}

impl<'a> MakeWriter<'a> for LogSink {
    type Writer = SinkWriter<std::io::Stderr>;

    fn make_writer(&'a self) -> Self::Writer {
        self.writer(std::io::stderr())
    }
}

/// One log line's writer (see [`LogSink`]).
#[derive(Debug)]
pub struct SinkWriter<W> {
    inner: W,
    closed: CancellationToken,
}

impl<W: Write> SinkWriter<W> {
    /// `result`, unless it says the reader went away: then the sink closes and the bytes count
    /// as written, so nobody retries or reports them.
    fn unless_gone<T>(&self, result: std::io::Result<T>, written: T) -> std::io::Result<T> {
        match result {
            Err(e) if e.kind() == ErrorKind::BrokenPipe => {
                self.closed.cancel();
                Ok(written)
            }
            other => other,
        }
    }
}

impl<W: Write> Write for SinkWriter<W> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        if self.closed.is_cancelled() {
            return Ok(buf.len());
        }
        let result = self.inner.write(buf);
        self.unless_gone(result, buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        if self.closed.is_cancelled() {
            return Ok(());
        }
        let result = self.inner.flush();
        self.unless_gone(result, ())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Accepts `open` writes, then fails as a pipe whose reader has gone.
    struct Pipe {
        open: usize,
        written: Vec<u8>,
    }

    impl Write for Pipe {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            if self.open == 0 {
                return Err(ErrorKind::BrokenPipe.into());
            }
            self.open -= 1;
            self.written.extend_from_slice(buf);
            Ok(buf.len())
        }

        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    #[tokio::test(start_paused = true)]
    async fn a_reader_going_away_closes_the_sink_and_later_lines_are_dropped() {
        let sink = LogSink::new();
        let mut writer = sink.writer(Pipe {
            open: 1,
            written: Vec::new(),
        });
        writer.write_all(b"first\n").expect("written");
        assert!(!sink.is_closed());
        writer
            .write_all(b"second\n")
            .expect("dropped, not an error");
        assert!(sink.is_closed());
        writer.write_all(b"third\n").expect("dropped");
        assert_eq!(writer.inner.written, b"first\n");
        // `closed` has resolved for whoever waits on it (a clone shares the state).
        tokio::time::timeout(std::time::Duration::from_secs(1), sink.clone().closed())
            .await
            .expect("closed");
    }

    #[test]
    fn another_failure_drops_the_line_only() {
        struct Full;
        impl Write for Full {
            fn write(&mut self, _: &[u8]) -> std::io::Result<usize> {
                Err(ErrorKind::StorageFull.into())
            }
            fn flush(&mut self) -> std::io::Result<()> {
                Ok(())
            }
        }
        let sink = LogSink::new();
        let mut writer = sink.writer(Full);
        assert!(writer.write_all(b"line\n").is_err());
        assert!(!sink.is_closed());
    }
}
