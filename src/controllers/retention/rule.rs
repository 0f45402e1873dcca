//! Finish rules (being written on another branch; these two types are its contract).

use chrono::{DateTime, Utc};

/// How a finished object ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Outcome {
    /// It succeeded.
    Succeeded,
    /// It failed.
    Failed,
}

/// A finished object: how, and when (if it says).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Finished {
    /// How it ended.
    pub outcome: Outcome,
    /// When; `None` if the object does not say.
    pub at: Option<DateTime<Utc>>,
}
