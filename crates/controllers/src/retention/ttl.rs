//! How long an object is kept, and who said so: the policy, the object's own TTL field, or its
//! `kube-gc.io/ttl` / `kube-gc.io/expires-at` annotation — pure.
//!
//! Contract:
//! - Precedence, most specific first: `kube-gc.io/expires-at` (a time, RFC 3339), then
//!   `kube-gc.io/ttl` (a duration: Go's syntax, `90s`, `1h30m`, plus `d` and `w`), then the
//!   object's own TTL field (`spec.ttlSecondsAfterFinished` and the like), then the policy.
//! - An annotation changes *how long*, never *from when*: under a policy counting from creation
//!   `kube-gc.io/ttl` counts from creation, otherwise from the finish. An own TTL field always
//!   counts from the finish, as its kind defines it. An `expires-at` on an object under a
//!   finish-based policy still waits for the object to finish: an annotation never makes
//!   kube-gc delete something still running.
//! - A malformed annotation is an [`AnnotationError`] naming it: the engine keeps the object and
//!   reports a Warning Event on it; it never falls back to the policy's TTL silently.

use chrono::{DateTime, Duration, Utc};

/// Overrides the TTL's length for one object: `kube-gc.io/ttl: 36h`.
pub const TTL_ANNOTATION: &str = "kube-gc.io/ttl";
/// Sets the expiry time of one object: `kube-gc.io/expires-at: 2026-12-01T00:00:00Z`.
pub const EXPIRES_AT_ANNOTATION: &str = "kube-gc.io/expires-at";

/// When the clock starts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Since {
    /// When the object finished.
    Finished,
    /// When the object was created.
    Created,
}

/// The retention an object gets.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Ttl {
    /// No TTL: only a history limit (or nothing) can delete it.
    None,
    /// This long after `since`.
    After {
        /// From when.
        since: Since,
        /// How long.
        length: Duration,
    },
    /// At this time; with `since: Finished`, not before the object has finished.
    At {
        /// Not before finishing (finish-based policy) or regardless (creation-based).
        since: Since,
        /// When.
        at: DateTime<Utc>,
    },
}

/// Where the TTL came from, for logs and Events.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TtlSource {
    /// The policy's `ttlSecondsAfterFinished` / `ttlSecondsAfterCreation`.
    Policy,
    /// The object's own field: its index in the policy's own TTL fields.
    OwnField(u8),
    /// `kube-gc.io/ttl`.
    TtlAnnotation,
    /// `kube-gc.io/expires-at`.
    ExpiresAtAnnotation,
}

/// A `kube-gc.io/*` annotation that does not parse.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("annotation {annotation}={value:?}: {problem}")]
pub struct AnnotationError {
    /// Which annotation.
    pub annotation: &'static str,
    /// Its value.
    pub value: String,
    /// What is wrong with it.
    pub problem: String,
}

/// What the policy says, in the form [`effective`] takes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PolicyTtl {
    /// From when the policy counts.
    pub since: Since,
    /// Its length, if it sets one (a policy may set only history limits).
    pub length: Option<Duration>,
}

/// Combines the policy, the object's own field and its annotations into the TTL it gets.
///
/// # Errors
///
/// [`AnnotationError`] for a malformed `kube-gc.io/ttl` or `kube-gc.io/expires-at`.
pub fn effective(
    policy: PolicyTtl,
    own_field: Option<(u8, i64)>,
    ttl_annotation: Option<&str>,
    expires_at_annotation: Option<&str>,
) -> Result<(Ttl, TtlSource), AnnotationError> {
    let since = policy.since;
    if let Some(value) = expires_at_annotation {
        let at = parse_expires_at(value)?;
        return Ok((Ttl::At { since, at }, TtlSource::ExpiresAtAnnotation));
    }
    if let Some(value) = ttl_annotation {
        let length = parse_duration(value).map_err(|problem| AnnotationError {
            annotation: TTL_ANNOTATION,
            value: value.to_owned(),
            problem,
        })?;
        return Ok((Ttl::After { since, length }, TtlSource::TtlAnnotation));
    }
    if let Some((field, seconds)) = own_field {
        // Every kind's own TTL field counts from the finish (`ttlSecondsAfterFinished`,
        // Argo's `secondsAfterCompletion`, Spark's `timeToLiveSeconds` after termination),
        // whatever the policy counts from.
        let own = Ttl::After {
            since: Since::Finished,
            length: Duration::seconds(seconds),
        };
        return Ok((own, TtlSource::OwnField(field)));
    }
    Ok(match policy.length {
        Some(length) => (Ttl::After { since, length }, TtlSource::Policy),
        None => (Ttl::None, TtlSource::Policy),
    })
}

fn parse_expires_at(value: &str) -> Result<DateTime<Utc>, AnnotationError> {
    DateTime::parse_from_rfc3339(value.trim())
        .map(|t| t.with_timezone(&Utc))
        .map_err(|e| AnnotationError {
            annotation: EXPIRES_AT_ANNOTATION,
            value: value.to_owned(),
            problem: format!("not an RFC 3339 time ({e})"),
        })
}

/// Parses a duration as Go's `time.ParseDuration` does (`300ms`, `1.5h`, `2h45m`), plus days
/// (`d`, 24 h) and weeks (`w`, 7 d) as kube-janitor accepts. Negative durations are refused.
pub fn parse_duration(text: &str) -> Result<Duration, String> {
    let text = text.trim();
    if text.is_empty() {
        return Err("empty duration".into());
    }
    if text == "0" {
        return Ok(Duration::zero());
    }
    let mut rest = text;
    let mut nanos: f64 = 0.0;
    while !rest.is_empty() {
        let number_len = rest
            .find(|c: char| !(c.is_ascii_digit() || c == '.'))
            .ok_or_else(|| format!("{text:?}: missing unit after the last number"))?;
        if number_len == 0 {
            return Err(format!("{text:?}: expected a number at {rest:?}"));
        }
        let number: f64 = rest[..number_len]
            .parse()
            .map_err(|_| format!("{text:?}: bad number {:?}", &rest[..number_len]))?;
        rest = &rest[number_len..];
        let unit_len = rest
            .find(|c: char| c.is_ascii_digit() || c == '.')
            .unwrap_or(rest.len());
        let unit = unit_nanos(&rest[..unit_len])
            .ok_or_else(|| format!("{text:?}: unknown unit {:?}", &rest[..unit_len]))?;
        nanos += number * unit;
        rest = &rest[unit_len..];
    }
    if !nanos.is_finite() || nanos > i64::MAX as f64 {
        return Err(format!("{text:?}: too long"));
    }
    Ok(Duration::nanoseconds(nanos as i64))
}

fn unit_nanos(unit: &str) -> Option<f64> {
    const SECOND: f64 = 1e9;
    Some(match unit {
        "ns" => 1.0,
        "us" | "µs" | "μs" => 1e3,
        "ms" => 1e6,
        "s" => SECOND,
        "m" => 60.0 * SECOND,
        "h" => 3600.0 * SECOND,
        "d" => 86_400.0 * SECOND,
        "w" => 7.0 * 86_400.0 * SECOND,
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn policy(seconds: Option<i64>) -> PolicyTtl {
        PolicyTtl {
            since: Since::Finished,
            length: seconds.map(Duration::seconds),
        }
    }

    #[test]
    fn durations_parse_as_go_does_plus_days_and_weeks() {
        assert_eq!(parse_duration("90s"), Ok(Duration::seconds(90)));
        assert_eq!(parse_duration("1h30m"), Ok(Duration::minutes(90)));
        assert_eq!(parse_duration("1.5h"), Ok(Duration::minutes(90)));
        assert_eq!(parse_duration("300ms"), Ok(Duration::milliseconds(300)));
        assert_eq!(parse_duration("2d"), Ok(Duration::hours(48)));
        assert_eq!(parse_duration("1w"), Ok(Duration::days(7)));
        assert_eq!(parse_duration("0"), Ok(Duration::zero()));
        for bad in ["", "10", "-5m", "5 m", "h", "5x", "1..5h"] {
            assert!(parse_duration(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn annotations_then_own_field_then_policy() {
        let own = Some((0, 60));
        let at = "2026-12-01T00:00:00Z";
        let (ttl, source) = effective(policy(Some(3600)), own, Some("2h"), Some(at)).unwrap();
        assert_eq!(source, TtlSource::ExpiresAtAnnotation);
        assert!(matches!(
            ttl,
            Ttl::At {
                since: Since::Finished,
                ..
            }
        ));
        let (ttl, source) = effective(policy(Some(3600)), own, Some("2h"), None).unwrap();
        assert_eq!(
            (ttl, source),
            (
                Ttl::After {
                    since: Since::Finished,
                    length: Duration::hours(2)
                },
                TtlSource::TtlAnnotation
            )
        );
        let (ttl, source) = effective(policy(Some(3600)), own, None, None).unwrap();
        assert_eq!(source, TtlSource::OwnField(0));
        assert_eq!(
            ttl,
            Ttl::After {
                since: Since::Finished,
                length: Duration::seconds(60)
            }
        );
        assert_eq!(
            effective(policy(None), None, None, None).unwrap(),
            (Ttl::None, TtlSource::Policy)
        );
    }

    #[test]
    fn an_own_field_counts_from_the_finish_even_under_a_creation_based_policy() {
        let created = PolicyTtl {
            since: Since::Created,
            length: Some(Duration::hours(8)),
        };
        let own = Some((0, 60));
        let (ttl, _) = effective(created, own, None, None).unwrap();
        assert_eq!(
            ttl,
            Ttl::After {
                since: Since::Finished,
                length: Duration::seconds(60)
            }
        );
    }

    #[test]
    fn a_creation_based_policy_keeps_counting_from_creation() {
        let created = PolicyTtl {
            since: Since::Created,
            length: Some(Duration::hours(8)),
        };
        let (ttl, _) = effective(created, None, Some("1h"), None).unwrap();
        assert_eq!(
            ttl,
            Ttl::After {
                since: Since::Created,
                length: Duration::hours(1)
            }
        );
    }

    #[test]
    fn a_malformed_annotation_is_an_error_not_a_fallback() {
        let err = effective(policy(Some(60)), None, Some("soon"), None).unwrap_err();
        assert_eq!(err.annotation, TTL_ANNOTATION);
        assert!(err
            .to_string()
            .starts_with("annotation kube-gc.io/ttl=\"soon\""));
        let err = effective(policy(Some(60)), None, None, Some("tomorrow")).unwrap_err();
        assert_eq!(err.annotation, EXPIRES_AT_ANNOTATION);
    }
}
