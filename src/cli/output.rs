//! A command's output, written as kubectl writes it: when the reader has gone away
//! (`kube-gc plan -o yaml | head -1`, `kube-gc run 2>&1 | head -1`), the command ends quietly
//! instead of panicking.
//!
//! Rust's `print!` and `eprint!` panic on a closed pipe (the runtime ignores SIGPIPE, so the
//! write fails with `EPIPE` instead of ending the process as it ends kubectl). [`print`] takes
//! that failure as "nobody reads any more": it writes nothing more and reports success.
//! [`eprint`] does the same on standard error, where a failure has nowhere to be reported at
//! all. Log lines have their own writer, which also ends `run` ([`super::logging`]).

use std::io::{ErrorKind, Write};

/// Writes `text` to standard output and flushes it; a reader that went away is not an error.
///
/// # Errors
///
/// Any other failure to write (a full disk behind a redirection).
pub fn print(text: &str) -> std::io::Result<()> {
    write_quietly(&mut std::io::stdout().lock(), text)
}

/// Writes `text` to standard error and flushes it. Nothing is reported if that fails: standard
/// error is where a failure would be reported.
pub fn eprint(text: &str) {
    let _ = write_quietly(&mut std::io::stderr().lock(), text);
}

/// Writes and flushes `text`, taking a reader that went away as success.
fn write_quietly(out: &mut impl Write, text: &str) -> std::io::Result<()> {
    match out.write_all(text.as_bytes()).and_then(|()| out.flush()) {
        Err(e) if e.kind() == ErrorKind::BrokenPipe => Ok(()),
        other => other,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A writer whose reader is gone, or whose disk is full.
    struct Failing(ErrorKind);

    impl Write for Failing {
        fn write(&mut self, _: &[u8]) -> std::io::Result<usize> {
            Err(self.0.into())
        }

        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    #[test]
    fn a_reader_that_went_away_is_no_error_and_a_full_disk_is() {
        assert!(write_quietly(&mut Failing(ErrorKind::BrokenPipe), "x").is_ok());
        let full = write_quietly(&mut Failing(ErrorKind::StorageFull), "x");
        assert_eq!(full.map_err(|e| e.kind()), Err(ErrorKind::StorageFull));
    }
}
