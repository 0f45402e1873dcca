//! The words every explanation shares: times (RFC 3339 and "in 3h12m") and a decision that
//! states a verdict and nothing more — below `decide`, `namespace` and `plan`, which all speak
//! them, so none of them imports another for its vocabulary.

use chrono::{DateTime, SecondsFormat, Utc};

use super::{Decision, VerdictKind};

/// An RFC 3339 time, to the second.
pub fn rfc3339(at: DateTime<Utc>) -> String {
    at.to_rfc3339_opts(SecondsFormat::Secs, true)
}

/// "in 3h12m", "2m5s ago".
pub fn relative(at: DateTime<Utc>, now: DateTime<Utc>) -> String {
    let seconds = (at - now).num_seconds();
    let span = human(seconds.unsigned_abs());
    if seconds >= 0 {
        format!("in {span}")
    } else {
        format!("{span} ago")
    }
}

pub(crate) fn human(seconds: u64) -> String {
    let (d, h, m, s) = (
        seconds / 86_400,
        seconds / 3600 % 24,
        seconds / 60 % 60,
        seconds % 60,
    );
    match (d, h, m) {
        (0, 0, 0) => format!("{s}s"),
        (0, 0, _) => format!("{m}m{s}s"),
        (0, _, _) => format!("{h}h{m}m"),
        _ => format!("{d}d{h}h"),
    }
}

/// A decision with no time and no details.
pub(crate) fn decision(
    controller: &str,
    governs: bool,
    verdict: VerdictKind,
    summary: String,
) -> Decision {
    Decision {
        controller: controller.to_owned(),
        governs,
        verdict,
        delete_at: None,
        summary,
        details: Vec::new(),
    }
}
