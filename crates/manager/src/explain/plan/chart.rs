//! The plan's chart: deletions per time bucket, the bucket scaled to the window so that a
//! window of minutes or of weeks both print a screenful — `now`, then at most
//! [`MAX_BUCKETS`] lines of a round size (5m, 1h, 6h, 1d, 7d…).
//!
//! Contract: pure. [`bucket_size`] picks the smallest round size that covers the window in at
//! most [`MAX_BUCKETS`] lines; [`Chart::count`] files each deletion in the bucket its time falls
//! in (due ones in `now`, one past the window — none are given — in the last).

use chrono::{DateTime, Utc};
use serde::Serialize;

/// The most lines after `now`.
pub const MAX_BUCKETS: u64 = 24;

/// Round bucket sizes, in seconds, smallest first. No 12h: a window of days reads better by
/// the day than in 14 half-days.
const SIZES: [u64; 15] = [
    60,
    5 * 60,
    10 * 60,
    15 * 60,
    30 * 60,
    3600,
    2 * 3600,
    3 * 3600,
    6 * 3600,
    86_400,
    2 * 86_400,
    7 * 86_400,
    14 * 86_400,
    30 * 86_400,
    365 * 86_400,
];

/// The bucket size for a window of `within` seconds.
pub fn bucket_size(within: u64) -> u64 {
    SIZES
        .into_iter()
        .find(|size| within.div_ceil(*size) <= MAX_BUCKETS)
        .unwrap_or(SIZES[SIZES.len() - 1])
}

/// The unit a bucket of `size` seconds is counted in: its largest whole one.
fn unit(size: u64) -> (u64, &'static str) {
    if size.is_multiple_of(86_400) {
        (86_400, "d")
    } else if size.is_multiple_of(3600) {
        (3600, "h")
    } else {
        (60, "m")
    }
}

/// `30m`, `6h`, `2d`: `seconds` in the unit of buckets of `size` seconds.
fn span(seconds: u64, size: u64) -> String {
    let (length, name) = unit(size);
    format!("{}{name}", seconds / length)
}

/// Deletions per bucket.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Chart {
    /// Each bucket's size, in seconds.
    pub bucket_seconds: u64,
    /// `now` (due ones), then one line per bucket from the plan's moment: its start (`+0h`,
    /// `+6h`) and its deletions.
    pub buckets: Vec<(String, usize)>,
}

impl Chart {
    /// An empty chart of a window of `within` seconds.
    pub fn new(within: u64) -> Chart {
        let size = bucket_size(within);
        let mut buckets = vec![("now".to_owned(), 0)];
        let lines = within.div_ceil(size);
        buckets.extend((0..lines).map(|i| (format!("+{}", span(i * size, size)), 0)));
        Chart {
            bucket_seconds: size,
            buckets,
        }
    }

    /// Counts a deletion at `at` (`None`: due now), planned at `now`.
    pub fn count(&mut self, at: Option<DateTime<Utc>>, now: DateTime<Utc>) {
        let last = self.buckets.len() - 1;
        let index = match at {
            None => 0,
            Some(at) => {
                let offset = u64::try_from((at - now).num_seconds()).unwrap_or(0);
                let bucket = usize::try_from(offset / self.bucket_seconds).unwrap_or(usize::MAX);
                bucket.saturating_add(1).min(last)
            }
        };
        self.buckets[index].1 += 1;
    }

    /// `6h`: the size, as the chart's title says it.
    pub fn size(&self) -> String {
        span(self.bucket_seconds, self.bucket_seconds)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_window_is_a_screenful_of_round_buckets() {
        let lines = |within: u64| Chart::new(within).buckets.len() - 1;
        // A week: 7 days, not 168 hours.
        assert_eq!(bucket_size(7 * 86_400), 86_400);
        assert_eq!(lines(7 * 86_400), 7);
        assert_eq!(bucket_size(86_400), 3600);
        assert_eq!(lines(86_400), 24);
        assert_eq!(bucket_size(2 * 3600), 5 * 60);
        assert_eq!(bucket_size(30 * 86_400), 2 * 86_400);
        assert_eq!(bucket_size(90 * 60), 5 * 60);
        for within in [1, 59, 3600, 25 * 3600, 10 * 86_400, 400 * 86_400] {
            assert!(lines(within) as u64 <= MAX_BUCKETS, "{within}");
        }
        // No window: only what is due now.
        assert_eq!(Chart::new(0).buckets, [("now".to_owned(), 0)]);
    }

    #[test]
    fn each_deletion_falls_in_the_bucket_of_its_time() {
        let now = DateTime::parse_from_rfc3339("2026-01-01T00:00:00Z")
            .map(|t| t.with_timezone(&Utc))
            .unwrap_or_default();
        let mut chart = Chart::new(7 * 86_400);
        chart.count(None, now);
        chart.count(Some(now + chrono::Duration::hours(30)), now);
        chart.count(Some(now + chrono::Duration::days(30)), now);
        let labels: Vec<&str> = chart.buckets.iter().map(|(l, _)| l.as_str()).collect();
        assert_eq!(
            labels,
            ["now", "+0d", "+1d", "+2d", "+3d", "+4d", "+5d", "+6d"]
        );
        let counts: Vec<usize> = chart.buckets.iter().map(|(_, n)| *n).collect();
        assert_eq!(counts, [1, 0, 1, 0, 0, 0, 0, 1]);
        assert_eq!(chart.size(), "1d");
    }
}
