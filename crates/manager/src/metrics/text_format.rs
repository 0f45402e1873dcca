//! The Prometheus text format 0.0.4, for scrapers that ask for `text/plain` and not for
//! OpenMetrics (older Prometheus servers, other agents): written from the OpenMetrics text
//! [`Metrics::encode`](super::Metrics::encode) produces, since the two differ only in framing.
//!
//! Contract — the differences, each undone here:
//! - A counter's family is named without `_total` in OpenMetrics (`# TYPE x counter`, sample
//!   `x_total`), an info's without `_info`; in 0.0.4 the family is the sample's name
//!   (`# TYPE x_total counter`).
//! - OpenMetrics types 0.0.4 lacks (`unknown`, `info`, `stateset`, `gaugehistogram`) become
//!   `untyped`; `# UNIT` lines and the final `# EOF` are dropped.
//! - Samples themselves are the same lines.

use std::collections::BTreeMap;

/// The `Content-Type` of the 0.0.4 text format.
pub const CONTENT_TYPE: &str = "text/plain; version=0.0.4; charset=utf-8";

/// Whether an `Accept` header asks for the 0.0.4 text format: it names `text/plain` and not
/// OpenMetrics (which every Prometheus since 2.5 asks for first).
pub fn wants_text(accept: Option<&str>) -> bool {
    accept.is_some_and(|accept| {
        let accept = accept.to_ascii_lowercase();
        accept.contains("text/plain") && !accept.contains("application/openmetrics-text")
    })
}

/// `openmetrics` (one exposition) in the 0.0.4 text format.
pub fn from_openmetrics(openmetrics: &str) -> String {
    // Families whose samples carry a suffix the family name lacks: `_total`, `_info`.
    let suffixed: BTreeMap<&str, &str> = openmetrics
        .lines()
        .filter_map(|line| line.strip_prefix("# TYPE "))
        .filter_map(|rest| match rest.rsplit_once(' ') {
            Some((family, "counter")) => Some((family, "_total")),
            Some((family, "info")) => Some((family, "_info")),
            _ => None,
        })
        .collect();
    let mut text = String::with_capacity(openmetrics.len());
    for line in openmetrics.lines() {
        let converted = match line.strip_prefix("# ") {
            Some("EOF") => continue,
            Some(rest) if rest.starts_with("UNIT ") => continue,
            Some(rest) => comment(rest, &suffixed),
            None => line.to_owned(),
        };
        text.push_str(&converted);
        text.push('\n');
    }
    text
}

/// A `# TYPE` or `# HELP` line, its family renamed (counters) and its type mapped.
fn comment(rest: &str, suffixed: &BTreeMap<&str, &str>) -> String {
    let Some((keyword, rest)) = rest.split_once(' ') else {
        return format!("# {rest}");
    };
    let (family, tail) = rest.split_once(' ').unwrap_or((rest, ""));
    let family = format!("{family}{}", suffixed.get(family).unwrap_or(&""));
    let tail = match (keyword, tail) {
        ("TYPE", "unknown" | "info" | "stateset" | "gaugehistogram") => "untyped",
        _ => tail,
    };
    format!("# {keyword} {family} {tail}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counters_take_their_sample_name_and_the_framing_goes() {
        let openmetrics = "# HELP deletions Deletions.\n# TYPE deletions counter\n\
                           deletions_total{kind=\"Job\"} 3\n\
                           # HELP depth Depth.\n# TYPE depth gauge\ndepth 2\n\
                           # TYPE secs histogram\n# UNIT secs seconds\n\
                           secs_bucket{le=\"+Inf\"} 1\nsecs_sum 0.5\nsecs_count 1\n\
                           # TYPE build info\nbuild_info{v=\"1\"} 1\n# EOF\n";
        assert_eq!(
            from_openmetrics(openmetrics),
            "# HELP deletions_total Deletions.\n# TYPE deletions_total counter\n\
             deletions_total{kind=\"Job\"} 3\n\
             # HELP depth Depth.\n# TYPE depth gauge\ndepth 2\n\
             # TYPE secs histogram\n\
             secs_bucket{le=\"+Inf\"} 1\nsecs_sum 0.5\nsecs_count 1\n\
             # TYPE build_info untyped\nbuild_info{v=\"1\"} 1\n"
        );
    }

    #[test]
    fn text_only_when_asked_for_and_openmetrics_is_not() {
        assert!(wants_text(Some("text/plain;version=0.0.4")));
        assert!(!wants_text(Some(
            "application/openmetrics-text;version=1.0.0,text/plain;version=0.0.4;q=0.5"
        )));
        assert!(!wants_text(Some("*/*")));
        assert!(!wants_text(None));
    }
}
