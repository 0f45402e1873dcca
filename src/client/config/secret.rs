//! [`Secret`]: a value that must never reach a log line or `Debug` output.
//!
//! Tokens, passwords and private keys are wrapped in `Secret` as soon as they are read, so a
//! stray `{:?}` or `tracing::debug!(?config)` prints `<redacted>` instead of the credential.
//! Reading the value takes an explicit call to [`Secret::expose`], which is easy to find in review.

use std::fmt;

/// A credential whose `Debug` output is `<redacted>`; it has no `Display` on purpose.
#[derive(Clone, PartialEq, Eq)]
pub struct Secret<T>(T);

impl<T> Secret<T> {
    /// Wraps a credential.
    pub fn new(value: T) -> Self {
        Secret(value)
    }

    /// The credential itself; call only where it is sent or handed to TLS.
    pub fn expose(&self) -> &T {
        &self.0
    }
}

impl<T> fmt::Debug for Secret<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("<redacted>")
    }
}

impl<'de, T: serde::Deserialize<'de>> serde::Deserialize<'de> for Secret<T> {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        T::deserialize(deserializer).map(Secret)
    }
}

impl<T> From<T> for Secret<T> {
    fn from(value: T) -> Self {
        Secret(value)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn debug_output_hides_the_value() {
        let secret = Secret::new(String::from("hunter2"));
        let shown = format!("{secret:?} {:?}", Some(&secret));
        assert!(!shown.contains("hunter2"), "{shown}");
        assert_eq!(shown, "<redacted> Some(<redacted>)");
        assert_eq!(secret.expose(), "hunter2");
    }
}
