//! Go-style duration strings, as kube-controller-manager's flags take them.
//!
//! `15s`, `1m30s`, `1.5h`, `300ms`, `2h45m`, `0`: a sequence of decimal numbers each followed by
//! a unit (`ns`, `us`/`µs`, `ms`, `s`, `m`, `h`), the grammar of Go's `time.ParseDuration`.
//! Operators paste flag values from kube-controller-manager manifests, so kube-gc accepts exactly
//! that grammar rather than another crate's. Negative durations are refused: no kube-gc flag
//! means anything by them. [`parse_duration_or_days`] adds `d`, for flags that look days ahead;
//! [`format_duration`] prints one back.

use std::time::Duration;

/// Why a duration string was refused: the input, what is wrong with it, and the units the
/// flag takes (with or without `d`), so an operator who wrote `1w` learns what to write.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid duration {input:?}: {reason} (units: {units}; e.g. {examples})", units = units(*days), examples = examples(*days))]
pub struct DurationError {
    input: String,
    reason: String,
    days: bool,
}

/// The units a flag takes, as the error lists them.
fn units(days: bool) -> &'static str {
    if days {
        "ns, us (or µs), ms, s, m, h, d"
    } else {
        "ns, us (or µs), ms, s, m, h"
    }
}

fn examples(days: bool) -> &'static str {
    if days {
        "90m, 24h, 7d, 1d12h"
    } else {
        "30s, 1m30s, 1.5h, 300ms"
    }
}

/// Parses a Go-style duration string.
pub fn parse_duration(input: &str) -> Result<Duration, DurationError> {
    parse(input, false)
}

/// Parses a Go-style duration string in which `d` (24 hours) is a unit too, as kube-gc's TTL
/// annotations take it: for flags that look days ahead (`plan --within 7d`).
pub fn parse_duration_or_days(input: &str) -> Result<Duration, DurationError> {
    parse(input, true)
}

/// `duration` the way an operator writes one: whole units from hours down, zero ones left
/// out (`90m` → `1h30m`, `24h`, `45s`, `300ms`, `0s`).
pub fn format_duration(duration: Duration) -> String {
    let mut seconds = duration.as_secs();
    if seconds == 0 {
        let millis = duration.subsec_millis();
        return if millis > 0 {
            format!("{millis}ms")
        } else {
            "0s".to_owned()
        };
    }
    let mut text = String::new();
    for (unit, size) in [("h", 3600), ("m", 60), ("s", 1)] {
        if seconds >= size {
            text.push_str(&format!("{}{unit}", seconds / size));
            seconds %= size;
        }
    }
    text
}

fn parse(input: &str, days: bool) -> Result<Duration, DurationError> {
    let fail = |reason: &str| DurationError {
        input: input.to_owned(),
        reason: reason.to_owned(),
        days,
    };
    let s = input.trim();
    if s.is_empty() {
        return Err(fail("empty"));
    }
    if s.starts_with('-') {
        return Err(fail("negative durations are not allowed"));
    }
    let s = s.strip_prefix('+').unwrap_or(s);
    // Go accepts a bare "0" without a unit, and nothing else without one.
    if s == "0" {
        return Ok(Duration::ZERO);
    }
    let mut rest = s;
    let mut total_nanos: f64 = 0.0;
    while !rest.is_empty() {
        let number_len = rest
            .find(|c: char| !(c.is_ascii_digit() || c == '.'))
            .unwrap_or(rest.len());
        let (number, after) = rest.split_at(number_len);
        if number.is_empty() || number == "." {
            return Err(fail("expected a number"));
        }
        let value: f64 = number.parse().map_err(|_| fail("malformed number"))?;
        let unit_len = after
            .find(|c: char| c.is_ascii_digit() || c == '.')
            .unwrap_or(after.len());
        let (unit, next) = after.split_at(unit_len);
        let nanos_per_unit = match unit {
            "ns" => 1.0,
            "us" | "µs" | "μs" => 1e3,
            "ms" => 1e6,
            "s" => 1e9,
            "m" => 60e9,
            "h" => 3600e9,
            "d" if days => 86_400e9,
            "" => return Err(fail(&format!("missing unit after {number}"))),
            _ => return Err(fail(&format!("unknown unit {unit:?}"))),
        };
        total_nanos += value * nanos_per_unit;
        rest = next;
    }
    // Go rejects durations beyond ~292 years (int64 nanoseconds); so do we.
    if !total_nanos.is_finite() || total_nanos > i64::MAX as f64 {
        return Err(fail("out of range"));
    }
    Ok(Duration::from_nanos(total_nanos.round() as u64))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn accepts_go_forms() {
        let cases = [
            ("0", Duration::ZERO),
            ("15s", Duration::from_secs(15)),
            ("1m30s", Duration::from_secs(90)),
            ("1.5h", Duration::from_secs(5400)),
            ("300ms", Duration::from_millis(300)),
            ("2h45m", Duration::from_secs(2 * 3600 + 45 * 60)),
            ("10us", Duration::from_micros(10)),
            ("10µs", Duration::from_micros(10)),
            ("7ns", Duration::from_nanos(7)),
            ("+5s", Duration::from_secs(5)),
            (".5s", Duration::from_millis(500)),
        ];
        for (input, want) in cases {
            assert_eq!(parse_duration(input), Ok(want), "{input}");
        }
    }

    #[test]
    fn days_only_where_asked_for() {
        assert!(parse_duration("1d").is_err());
        assert_eq!(
            parse_duration_or_days("1d"),
            Ok(Duration::from_secs(86_400))
        );
        assert_eq!(
            parse_duration_or_days("1d12h"),
            Ok(Duration::from_secs(129_600))
        );
        assert_eq!(parse_duration_or_days("90m"), Ok(Duration::from_secs(5400)));
    }

    #[test]
    fn formats_as_an_operator_writes_it() {
        for (seconds, text) in [
            (5400, "1h30m"),
            (86_400, "24h"),
            (45, "45s"),
            (0, "0s"),
            (3661, "1h1m1s"),
        ] {
            assert_eq!(format_duration(Duration::from_secs(seconds)), text);
        }
        assert_eq!(format_duration(Duration::from_millis(300)), "300ms");
    }

    #[test]
    fn refuses_what_go_refuses() {
        for input in [
            "",
            "5",
            "s",
            "-5s",
            "5x",
            "1m30",
            "..5s",
            "1e3s",
            "9999999999h",
        ] {
            let err = parse_duration(input).expect_err(input);
            assert!(err.to_string().contains("invalid duration"), "{err}");
        }
    }

    #[test]
    fn a_refusal_names_the_unit_found_and_the_units_taken() {
        let weeks = parse_duration_or_days("1w").expect_err("no weeks");
        assert_eq!(
            weeks.to_string(),
            "invalid duration \"1w\": unknown unit \"w\" \
             (units: ns, us (or µs), ms, s, m, h, d; e.g. 90m, 24h, 7d, 1d12h)"
        );
        let days = parse_duration("2d").expect_err("no days here");
        assert!(
            days.to_string()
                .contains("unknown unit \"d\" (units: ns, us (or µs), ms, s, m, h;"),
            "{days}"
        );
        let bare = parse_duration("1m30").expect_err("a bare number");
        assert!(bare.to_string().contains("missing unit after 30"), "{bare}");
    }
}
