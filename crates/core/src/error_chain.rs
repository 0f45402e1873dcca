//! An error and its causes as one line: `outer: inner: innermost`.
//!
//! Contract: [`chain`] is how kube-gc prints an error wherever a person reads it (the CLI's last
//! line, a retry's log line), so the cause is never hidden behind its context — "error sending
//! request" is followed by "Connection refused". A cause whose text the line already holds is
//! not repeated: an error that prints its source itself (thiserror's `{0}` with `#[source]`)
//! still reads once.

use std::error::Error;

/// `error`, then each cause whose text is not in the line yet, joined by `": "`.
pub fn chain(error: &(dyn Error + 'static)) -> String {
    let mut text = error.to_string();
    let mut source = error.source();
    while let Some(cause) = source {
        let cause_text = cause.to_string();
        if !text.contains(&cause_text) {
            text.push_str(": ");
            text.push_str(&cause_text);
        }
        source = cause.source();
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug, thiserror::Error)]
    #[error("error sending request")]
    struct Sending(#[source] std::io::Error);

    #[derive(Debug, thiserror::Error)]
    #[error("connection failed: {0}")]
    struct Says(#[source] Sending);

    #[test]
    fn every_cause_is_said_once() {
        let refused =
            std::io::Error::new(std::io::ErrorKind::ConnectionRefused, "Connection refused");
        assert_eq!(
            chain(&Sending(refused)),
            "error sending request: Connection refused"
        );
        let refused =
            std::io::Error::new(std::io::ErrorKind::ConnectionRefused, "Connection refused");
        // The outer error prints its source already: it is not said twice.
        assert_eq!(
            chain(&Says(Sending(refused))),
            "connection failed: error sending request: Connection refused"
        );
    }
}
