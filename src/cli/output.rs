//! A command's result on standard output, written as kubectl writes it: when the reader has gone
//! away (`kube-gc plan -o yaml | head -1`), the command ends quietly instead of panicking.
//!
//! Rust's `print!` panics on a closed pipe (the runtime ignores SIGPIPE, so the write fails with
//! `EPIPE` instead of ending the process as it ends kubectl). [`print`] takes that failure as
//! "nobody reads any more": it writes nothing more and reports success.

use std::io::{ErrorKind, Write};

/// Writes `text` to standard output and flushes it; a reader that went away is not an error.
///
/// # Errors
///
/// Any other failure to write (a full disk behind a redirection).
pub fn print(text: &str) -> std::io::Result<()> {
    let mut out = std::io::stdout().lock();
    match out.write_all(text.as_bytes()).and_then(|()| out.flush()) {
        Err(e) if e.kind() == ErrorKind::BrokenPipe => Ok(()),
        other => other,
    }
}
