//! [`FreshRead`]: when the reconciler reads a fresh copy of an object before deleting it — the
//! one difference between kube-gc's request pattern and upstream's (`--ttl-fresh-read`).
//!
//! Either way the decision is made on a copy the server still holds: the fast path proves it
//! with UID and resourceVersion preconditions, the fresh read by reading it.

use std::fmt;
use std::str::FromStr;

/// When to GET a fresh copy of an expired object before deleting it (`--ttl-fresh-read`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum FreshRead {
    /// Only when the fast-path DELETE (UID + resourceVersion preconditions) is refused with a
    /// Conflict: one request per Job when nothing changed.
    #[default]
    OnConflict,
    /// Always, before every DELETE: upstream's exact request pattern (two per Job).
    Always,
}

impl FreshRead {
    /// The flag's spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            FreshRead::OnConflict => "on-conflict",
            FreshRead::Always => "always",
        }
    }
}

impl fmt::Display for FreshRead {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.pad(self.as_str())
    }
}

/// A `--ttl-fresh-read` value that is neither `on-conflict` nor `always`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown fresh-read mode {0:?} (expected on-conflict or always)")]
pub struct UnknownFreshRead(pub String);

impl FromStr for FreshRead {
    type Err = UnknownFreshRead;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "on-conflict" => Ok(FreshRead::OnConflict),
            "always" => Ok(FreshRead::Always),
            other => Err(UnknownFreshRead(other.to_owned())),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fresh_read_round_trips_its_flag_spelling() {
        for mode in [FreshRead::OnConflict, FreshRead::Always] {
            assert_eq!(mode.as_str().parse::<FreshRead>(), Ok(mode));
        }
        assert!("sometimes".parse::<FreshRead>().is_err());
    }
}
