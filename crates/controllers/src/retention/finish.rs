//! Finish rules: has an object finished, how ([`Outcome`]) and when ([`Finished::at`]); and
//! the object's own TTL fields ([`own_ttl`]). Pure functions of the object's JSON and the time.
//!
//! Contract:
//! - [`FinishRule::evaluate`] is `Ok(None)` while the object runs, `Ok(Some(Finished))` once it
//!   has finished. A finished object whose time cannot be read (absent, `null`, containers not
//!   all terminated) has `at: None`: the engine never deletes it on a guess.
//! - [`FinishKind::Conditions`]: the rules are tried in order; the first whose condition is in
//!   `status.conditions` with exactly that status (`"True"`, `"False"`) gives the outcome.
//!   `Unknown` never finishes anything. Malformed entries are skipped, as a Job's are.
//! - [`FinishKind::Field`]: the field's value (a string; a number or bool as its JSON text) is
//!   looked up in `succeeded`, then `failed`; absent or `null` is still running.
//! - [`FinishKind::Cel`]: `finished` true means finished; then `failed` true means it failed.
//! - [`FinishKind::Never`]: nothing says when it finishes, so it never has — a `resource`
//!   policy whose `ttlSecondsAfterCreation` alone decides ([`FinishRule::never`]).
//! - Anything the object holds that cannot be read the rule's way — a field of the wrong type, a
//!   time that is not RFC 3339, a CEL error — is a [`RuleError`] naming the path or expression.
//!   The engine counts it and keeps the object.
//! - [`own_ttl`]: the first [`TtlField`] that applies to the outcome and is present gives the
//!   TTL; it must be a non-negative integer.
//!
//! The time readers are in `finish/time.rs`. A rule is built from a policy's `finished` field by
//! `policy/finish.rs`: this module knows nothing of policies.

mod time;

use chrono::{DateTime, Utc};
use serde_json::Value;

use super::cel::{CelEvalError, CelExpr};
use super::need::Need;
use super::path::FieldPath;

/// How a finished object ended: which history limit it counts against.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Outcome {
    /// It did what it was for.
    Succeeded,
    /// It did not (failed, errored, was stopped or terminated).
    Failed,
}

impl Outcome {
    /// `Succeeded` or `Failed`, as policies and fixtures spell them.
    pub fn parse(text: &str) -> Option<Outcome> {
        match text {
            "Succeeded" => Some(Outcome::Succeeded),
            "Failed" => Some(Outcome::Failed),
            _ => None,
        }
    }

    /// The spelling [`Outcome::parse`] reads.
    pub fn as_str(self) -> &'static str {
        match self {
            Outcome::Succeeded => "Succeeded",
            Outcome::Failed => "Failed",
        }
    }
}

/// A finished object: how, and when if the object says.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Finished {
    /// How it ended.
    pub outcome: Outcome,
    /// When; `None`: finished, time unknown (never deleted on a guess).
    pub at: Option<DateTime<Utc>>,
}

/// Whether, how and when an object finished.
#[derive(Clone, Debug, PartialEq)]
pub struct FinishRule {
    /// Whether and how.
    pub kind: FinishKind,
    /// When.
    pub time: FinishTime,
}

/// What says an object has finished.
#[derive(Clone, Debug, PartialEq)]
pub enum FinishKind {
    /// A condition with a given status; the first rule that matches wins.
    Conditions(Vec<ConditionRule>),
    /// A field with one of the listed values.
    Field {
        /// Where the value is.
        path: FieldPath,
        /// Values meaning it succeeded.
        succeeded: Vec<String>,
        /// Values meaning it failed.
        failed: Vec<String>,
    },
    /// CEL predicates.
    Cel {
        /// True once finished.
        finished: CelExpr,
        /// True if a finished object failed (absent: all succeed).
        failed: Option<CelExpr>,
    },
    /// No rule: the object never counts as finished.
    Never,
}

/// `status.conditions[]` holds `type_` with `status`: finished, with `outcome`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ConditionRule {
    /// The condition's type (`Complete`).
    pub type_: String,
    /// Its status, exactly (`True` or `False`).
    pub status: String,
    /// What it means.
    pub outcome: Outcome,
}

/// Where the finish time is read.
#[derive(Clone, Debug, PartialEq)]
pub enum FinishTime {
    /// The `lastTransitionTime` of the condition that matched (with [`FinishKind::Conditions`]).
    MatchedCondition,
    /// The `lastTransitionTime` of the condition of this type, whatever its status.
    Condition(String),
    /// An RFC 3339 time at this path.
    Field(FieldPath),
    /// Pods: when the last container stopped (see `finish/time.rs` for which containers).
    ContainersTerminated,
    /// A CEL expression giving a timestamp.
    Cel(CelExpr),
}

/// How finished objects are grouped for history limits.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum GroupBy {
    /// By controlling owner (objects without one form a group of their own per namespace).
    Owner,
    /// By the value of this label.
    Label(String),
}

/// An object's own TTL field, which overrides a policy's TTL for that object.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TtlField {
    /// Where the seconds are.
    pub path: FieldPath,
    /// Applies only to objects that finished this way (`None`: to all).
    pub outcome: Option<Outcome>,
    /// Applies only when another field has a given value: Argo's `secondsAfterFailure` is for
    /// phase `Failed` only and `secondsAfterError` for `Error`, both [`Outcome::Failed`].
    pub when: Option<FieldEquals>,
}

/// `path` holds the string `value`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FieldEquals {
    /// The field.
    pub path: FieldPath,
    /// The value it must hold.
    pub value: String,
}

impl TtlField {
    /// A field that applies whatever the outcome.
    pub fn any(path: FieldPath) -> TtlField {
        TtlField {
            path,
            outcome: None,
            when: None,
        }
    }

    /// A field that applies to one outcome only.
    pub fn on(outcome: Outcome, path: FieldPath) -> TtlField {
        TtlField {
            outcome: Some(outcome),
            ..TtlField::any(path)
        }
    }

    /// Narrows it further to objects whose `path` holds `value`.
    pub fn when(self, path: FieldPath, value: &str) -> TtlField {
        TtlField {
            when: Some(FieldEquals {
                path,
                value: value.to_owned(),
            }),
            ..self
        }
    }

    /// Adds to `need` the fields [`own_ttl`] reads through this one.
    pub fn add_reads_to(&self, need: &mut Need) {
        need.add(self.path.keys());
        if let Some(when) = &self.when {
            need.add(when.path.keys());
        }
    }

    fn applies(&self, object: &Value, outcome: Option<Outcome>) -> bool {
        let outcome_ok = self.outcome.is_none() || self.outcome == outcome;
        let when_ok = self.when.as_ref().is_none_or(|w| {
            w.path.lookup(object).and_then(Value::as_str) == Some(w.value.as_str())
        });
        outcome_ok && when_ok
    }
}

/// Why a rule could not be applied to one object.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum RuleError {
    /// A CEL expression failed or gave the wrong kind of value.
    #[error(transparent)]
    Cel(#[from] CelEvalError),
    /// A field holds a value of the wrong type.
    #[error("{path}: expected {expected}, found {found}")]
    WrongType {
        /// The field.
        path: String,
        /// What the rule reads there.
        expected: &'static str,
        /// What it holds (JSON).
        found: String,
    },
    /// A time that is not RFC 3339.
    #[error("{path}: {value:?} is not an RFC 3339 time")]
    BadTime {
        /// The field.
        path: String,
        /// What it holds.
        value: String,
    },
    /// A TTL below zero.
    #[error("{path}: a TTL cannot be negative ({value})")]
    NegativeTtl {
        /// The field.
        path: String,
        /// Its value.
        value: i64,
    },
}

impl RuleError {
    fn wrong_type(path: impl ToString, expected: &'static str, found: &Value) -> RuleError {
        RuleError::WrongType {
            path: path.to_string(),
            expected,
            found: found.to_string(),
        }
    }

    /// The same error, its path prefixed with where the value sits (`status.conditions[..]`).
    fn under(self, prefix: &str) -> RuleError {
        match self {
            RuleError::WrongType {
                path,
                expected,
                found,
            } => RuleError::WrongType {
                path: format!("{prefix}.{path}"),
                expected,
                found,
            },
            RuleError::BadTime { path, value } => RuleError::BadTime {
                path: format!("{prefix}.{path}"),
                value,
            },
            other => other,
        }
    }
}

impl FinishRule {
    /// The rule of a policy that says nothing of finishing: nothing ever finishes under it
    /// (its time is never read).
    pub fn never() -> FinishRule {
        FinishRule {
            kind: FinishKind::Never,
            time: FinishTime::MatchedCondition,
        }
    }

    /// Whether, how and when `object` finished; `now` is CEL's `now`.
    ///
    /// # Errors
    ///
    /// [`RuleError`] if the object holds something the rule cannot read.
    pub fn evaluate(
        &self,
        object: &Value,
        now: DateTime<Utc>,
    ) -> Result<Option<Finished>, RuleError> {
        let Some((outcome, matched)) = self.kind.evaluate(object, now)? else {
            return Ok(None);
        };
        let at = self.time.read(object, matched, now)?;
        Ok(Some(Finished { outcome, at }))
    }

    /// Adds to `need` what [`FinishRule::evaluate`] reads, so that the decoder keeps it: a rule
    /// evaluated on the pruned object must give what it gives on the whole one.
    pub fn add_reads_to(&self, need: &mut Need) {
        match &self.kind {
            // Nothing is read: not even the time, which is never looked at.
            FinishKind::Never => return,
            FinishKind::Conditions(_) => need.add(&["status", "conditions"]),
            FinishKind::Field { path, .. } => need.add(path.keys()),
            FinishKind::Cel { finished, failed } => {
                finished.add_reads_to(need);
                if let Some(failed) = failed {
                    failed.add_reads_to(need);
                }
            }
        }
        self.time.add_reads_to(need);
    }
}

impl FinishTime {
    fn add_reads_to(&self, need: &mut Need) {
        match self {
            FinishTime::MatchedCondition | FinishTime::Condition(_) => {
                need.add(&["status", "conditions"])
            }
            FinishTime::Field(path) => need.add(path.keys()),
            FinishTime::ContainersTerminated => {
                need.add(&["status", "containerStatuses"]);
                need.add(&["status", "initContainerStatuses"]);
                // Only what tells a sidecar (`finish::time::sidecar_names`): a container's
                // protobuf table is partial, its statuses' tables complete, so a Pod read for
                // this is asked in protobuf.
                need.add(&["spec", "initContainers", "name"]);
                need.add(&["spec", "initContainers", "restartPolicy"]);
            }
            FinishTime::Cel(expr) => expr.add_reads_to(need),
        }
    }
}

impl FinishKind {
    /// The outcome, and the condition that matched (for [`FinishTime::MatchedCondition`]).
    fn evaluate<'a>(
        &self,
        object: &'a Value,
        now: DateTime<Utc>,
    ) -> Result<Option<(Outcome, Option<&'a Value>)>, RuleError> {
        match self {
            FinishKind::Conditions(rules) => Ok(match_conditions(rules, object)?
                .map(|(outcome, condition)| (outcome, Some(condition)))),
            FinishKind::Field {
                path,
                succeeded,
                failed,
            } => Ok(field_outcome(path, succeeded, failed, object)?.map(|o| (o, None))),
            FinishKind::Cel { finished, failed } => {
                if !finished.eval_bool(object, now)? {
                    return Ok(None);
                }
                let failed = match failed {
                    Some(expr) => expr.eval_bool(object, now)?,
                    None => false,
                };
                let outcome = if failed {
                    Outcome::Failed
                } else {
                    Outcome::Succeeded
                };
                Ok(Some((outcome, None)))
            }
            FinishKind::Never => Ok(None),
        }
    }
}

/// `status.conditions`, or an empty list if absent or `null`.
fn conditions(object: &Value) -> Result<&[Value], RuleError> {
    let path = FieldPath::new(["status", "conditions"]);
    match path.lookup(object) {
        None | Some(Value::Null) => Ok(&[]),
        Some(Value::Array(items)) => Ok(items),
        Some(other) => Err(RuleError::wrong_type(path, "an array", other)),
    }
}

/// The condition of type `type_`, if any (the first, should a writer have put two).
fn condition_of_type<'a>(items: &'a [Value], type_: &str) -> Option<&'a Value> {
    items
        .iter()
        .find(|c| c.get("type").and_then(Value::as_str) == Some(type_))
}

fn match_conditions<'a>(
    rules: &[ConditionRule],
    object: &'a Value,
) -> Result<Option<(Outcome, &'a Value)>, RuleError> {
    let items = conditions(object)?;
    let found = rules.iter().find_map(|rule| {
        let condition = condition_of_type(items, &rule.type_)?;
        let status = condition.get("status").and_then(Value::as_str)?;
        // `Unknown` is "not decided yet", whatever a rule says.
        (status == rule.status && status != "Unknown").then_some((rule.outcome, condition))
    });
    Ok(found)
}

fn field_outcome(
    path: &FieldPath,
    succeeded: &[String],
    failed: &[String],
    object: &Value,
) -> Result<Option<Outcome>, RuleError> {
    let text = match path.lookup(object) {
        None | Some(Value::Null) => return Ok(None),
        Some(Value::String(s)) => s.clone(),
        Some(v @ (Value::Bool(_) | Value::Number(_))) => v.to_string(),
        Some(other) => return Err(RuleError::wrong_type(path, "a string", other)),
    };
    if succeeded.contains(&text) {
        Ok(Some(Outcome::Succeeded))
    } else if failed.contains(&text) {
        Ok(Some(Outcome::Failed))
    } else {
        Ok(None)
    }
}

/// The object's own TTL: the first of `fields` that applies to `outcome` (`None`: not
/// finished, so only fields for every outcome) and is present and not `null`.
///
/// # Errors
///
/// [`RuleError`] if that field is not an integer, or is negative.
pub fn own_ttl(
    fields: &[TtlField],
    object: &Value,
    outcome: Option<Outcome>,
) -> Result<Option<i64>, RuleError> {
    Ok(own_ttl_field(fields, object, outcome)?.map(|(_, seconds)| seconds))
}

/// [`own_ttl`], with the index in `fields` of the field it was read from (what the logs and
/// `explain` name; an index, so that the assessments that keep it stay small).
///
/// # Errors
///
/// As [`own_ttl`].
pub fn own_ttl_field(
    fields: &[TtlField],
    object: &Value,
    outcome: Option<Outcome>,
) -> Result<Option<(usize, i64)>, RuleError> {
    let Some((index, field, value)) = fields
        .iter()
        .enumerate()
        .filter(|(_, f)| f.applies(object, outcome))
        .find_map(|(i, f)| {
            f.path
                .lookup(object)
                .filter(|v| !v.is_null())
                .map(|v| (i, f, v))
        })
    else {
        return Ok(None);
    };
    let Some(seconds) = value.as_i64() else {
        return Err(RuleError::wrong_type(&field.path, "an integer", value));
    };
    if seconds < 0 {
        return Err(RuleError::NegativeTtl {
            path: field.path.to_string(),
            value: seconds,
        });
    }
    Ok(Some((index, seconds)))
}

#[cfg(test)]
mod tests;
