//! A policy's `finished` and `groupBy` fields, checked and turned into a [`FinishRule`] and a
//! [`GroupBy`] ([`finish_rule`], [`group_by`]), or the field at fault ([`FieldError`], named
//! from the object's root). Here, in the policy layer, because it reads the CRD's wire types:
//! the finish rules (`finish.rs`) know nothing of how a policy spells them.
//!
//! Contract (what `docs/retention.md` promises users):
//! - Exactly one of `conditions`, `field` and `cel`.
//! - A condition needs a `type`; its `status` defaults to `"True"` and must be `"True"` or
//!   `"False"` (`Unknown` never finishes); its `outcome` defaults to `Succeeded` and must be
//!   `Succeeded` or `Failed`.
//! - A field rule needs a path that parses and at least one value; no value may be both
//!   succeeded and failed.
//! - CEL must compile ([`CelExpr::compile`]'s message is passed on).
//! - `finishTime` is optional with `conditions` (the matched condition's
//!   `lastTransitionTime`) and required with `field` and `cel`; when given it holds exactly one
//!   of `field`, `condition` and `cel`.

use crate::retention::cel::CelExpr;
use crate::retention::finish::{
    ConditionRule, FinishKind, FinishRule, FinishTime, GroupBy, Outcome,
};
use crate::retention::path::FieldPath;

use super::spec::{
    CelFinishedSpec, ConditionSpec, FieldSpec, FinishTimeSpec, FinishedSpec, GroupBySpec,
};
use super::FieldError;

/// Checks `spec`, found at `field` in the policy (`spec.finished`), and builds the rule.
///
/// # Errors
///
/// [`FieldError`] naming the first field at fault.
pub fn finish_rule(spec: &FinishedSpec, field: &str) -> Result<FinishRule, FieldError> {
    let kinds = [
        !spec.conditions.is_empty(),
        spec.field.is_some(),
        spec.cel.is_some(),
    ];
    if kinds.iter().filter(|set| **set).count() != 1 {
        return Err(FieldError::new(
            field,
            "exactly one of conditions, field and cel",
        ));
    }
    let kind = if let Some(f) = &spec.field {
        field_kind(f, &format!("{field}.field"))?
    } else if let Some(cel) = &spec.cel {
        cel_kind(cel, &format!("{field}.cel"))?
    } else {
        conditions_kind(&spec.conditions, &format!("{field}.conditions"))?
    };
    let time_field = format!("{field}.finishTime");
    let time = match (&spec.finish_time, &kind) {
        (None, FinishKind::Conditions(_)) => FinishTime::MatchedCondition,
        (None, _) => {
            return Err(FieldError::new(time_field, "required with field and cel"));
        }
        (Some(time), _) => finish_time(time, &time_field)?,
    };
    Ok(FinishRule { kind, time })
}

/// Checks a policy's `groupBy`, found at `field`: `owner` or `{label: <key>}`.
///
/// # Errors
///
/// [`FieldError`] for another keyword or an empty label key.
pub fn group_by(spec: &GroupBySpec, field: &str) -> Result<GroupBy, FieldError> {
    match spec {
        GroupBySpec::Keyword(word) if word == "owner" => Ok(GroupBy::Owner),
        GroupBySpec::Keyword(word) => Err(FieldError::new(
            field,
            format!("{word:?} is not a grouping: owner, or {{label: <key>}}"),
        )),
        GroupBySpec::Label { label } if label.is_empty() => {
            Err(FieldError::new(format!("{field}.label"), "required"))
        }
        GroupBySpec::Label { label } => Ok(GroupBy::Label(label.clone())),
    }
}

fn conditions_kind(specs: &[ConditionSpec], field: &str) -> Result<FinishKind, FieldError> {
    specs
        .iter()
        .enumerate()
        .map(|(i, spec)| condition_rule(spec, &format!("{field}[{i}]")))
        .collect::<Result<Vec<_>, _>>()
        .map(FinishKind::Conditions)
}

fn condition_rule(spec: &ConditionSpec, field: &str) -> Result<ConditionRule, FieldError> {
    if spec.type_.is_empty() {
        return Err(FieldError::new(format!("{field}.type"), "required"));
    }
    let status = spec.status.as_deref().unwrap_or("True");
    if status != "True" && status != "False" {
        return Err(FieldError::new(
            format!("{field}.status"),
            format!("must be True or False, not {status:?} (Unknown never finishes)"),
        ));
    }
    Ok(ConditionRule {
        type_: spec.type_.clone(),
        status: status.to_owned(),
        outcome: outcome(spec.outcome.as_deref(), &format!("{field}.outcome"))?,
    })
}

fn outcome(text: Option<&str>, field: &str) -> Result<Outcome, FieldError> {
    let Some(text) = text else {
        return Ok(Outcome::Succeeded);
    };
    Outcome::parse(text)
        .ok_or_else(|| FieldError::new(field, format!("must be Succeeded or Failed, not {text:?}")))
}

fn path(text: &str, field: &str) -> Result<FieldPath, FieldError> {
    FieldPath::parse(text).map_err(|message| FieldError::new(field, message))
}

fn field_kind(spec: &FieldSpec, field: &str) -> Result<FinishKind, FieldError> {
    let path = path(&spec.path, &format!("{field}.path"))?;
    if spec.succeeded.is_empty() && spec.failed.is_empty() {
        return Err(FieldError::new(field, "lists no succeeded or failed value"));
    }
    if let Some(both) = spec.succeeded.iter().find(|v| spec.failed.contains(v)) {
        return Err(FieldError::new(
            field,
            format!("{both:?} is listed as both succeeded and failed"),
        ));
    }
    Ok(FinishKind::Field {
        path,
        succeeded: spec.succeeded.clone(),
        failed: spec.failed.clone(),
    })
}

fn cel(source: &str, field: &str) -> Result<CelExpr, FieldError> {
    CelExpr::compile(source).map_err(|e| FieldError::new(field, e.to_string()))
}

fn cel_kind(spec: &CelFinishedSpec, field: &str) -> Result<FinishKind, FieldError> {
    let finished = cel(&spec.finished, &format!("{field}.finished"))?;
    let failed = match &spec.failed {
        Some(source) => Some(cel(source, &format!("{field}.failed"))?),
        None => None,
    };
    Ok(FinishKind::Cel { finished, failed })
}

fn finish_time(spec: &FinishTimeSpec, field: &str) -> Result<FinishTime, FieldError> {
    match (&spec.field, &spec.condition, &spec.cel) {
        (Some(text), None, None) => Ok(FinishTime::Field(path(text, &format!("{field}.field"))?)),
        (None, Some(type_), None) if type_.is_empty() => {
            Err(FieldError::new(format!("{field}.condition"), "empty"))
        }
        (None, Some(type_), None) => Ok(FinishTime::Condition(type_.clone())),
        (None, None, Some(source)) => Ok(FinishTime::Cel(cel(source, &format!("{field}.cel"))?)),
        _ => Err(FieldError::new(
            field,
            "exactly one of field, condition and cel",
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn finished(json: &str) -> FinishedSpec {
        serde_json::from_str(json).unwrap()
    }

    fn error(json: &str) -> String {
        finish_rule(&finished(json), "spec.finished")
            .unwrap_err()
            .to_string()
    }

    #[test]
    fn conditions_default_to_true_succeeded_and_the_matched_time() {
        let rule = finish_rule(
            &finished(
                r#"{"conditions":[{"type":"Complete"},{"type":"Failed","outcome":"Failed"}]}"#,
            ),
            "spec.finished",
        )
        .unwrap();
        assert_eq!(rule.time, FinishTime::MatchedCondition);
        let FinishKind::Conditions(rules) = rule.kind else {
            panic!("{:?}", rule.kind)
        };
        assert_eq!(
            rules,
            [
                ConditionRule {
                    type_: "Complete".into(),
                    status: "True".into(),
                    outcome: Outcome::Succeeded
                },
                ConditionRule {
                    type_: "Failed".into(),
                    status: "True".into(),
                    outcome: Outcome::Failed
                },
            ]
        );
    }

    #[test]
    fn a_field_rule_with_its_time() {
        let rule = finish_rule(
            &finished(
                r#"{"field":{"path":"status.phase","succeeded":["Succeeded"],"failed":["Failed"]},
                    "finishTime":{"field":"metadata.annotations['x.io/done']"}}"#,
            ),
            "spec.finished",
        )
        .unwrap();
        assert_eq!(
            rule.time,
            FinishTime::Field(FieldPath::new(["metadata", "annotations", "x.io/done"]))
        );
        assert!(matches!(rule.kind, FinishKind::Field { .. }));
    }

    #[test]
    fn a_cel_rule_with_a_condition_time() {
        let rule = finish_rule(
            &finished(
                r#"{"cel":{"finished":"object.status.done","failed":"object.status.bad"},
                    "finishTime":{"condition":"Done"}}"#,
            ),
            "spec.finished",
        )
        .unwrap();
        assert_eq!(rule.time, FinishTime::Condition("Done".into()));
        assert!(matches!(
            rule.kind,
            FinishKind::Cel {
                failed: Some(_),
                ..
            }
        ));
    }

    #[test]
    fn each_mistake_names_its_field() {
        for (json, says) in [
            (
                r#"{}"#,
                "spec.finished: exactly one of conditions, field and cel",
            ),
            (
                r#"{"conditions":[{"type":"A"}],"cel":{"finished":"true"}}"#,
                "spec.finished: exactly one of",
            ),
            (
                r#"{"conditions":[{"type":""}]}"#,
                "spec.finished.conditions[0].type: required",
            ),
            (
                r#"{"conditions":[{"type":"A"},{"type":"B","status":"Unknown"}]}"#,
                "spec.finished.conditions[1].status: must be True or False",
            ),
            (
                r#"{"conditions":[{"type":"A","outcome":"Errored"}]}"#,
                "spec.finished.conditions[0].outcome: must be Succeeded or Failed, not \"Errored\"",
            ),
            (
                r#"{"field":{"path":"status..phase","succeeded":["x"]},"finishTime":{"field":"a"}}"#,
                "spec.finished.field.path: empty key at offset 7",
            ),
            (
                r#"{"field":{"path":"status.phase"},"finishTime":{"field":"a"}}"#,
                "spec.finished.field: lists no succeeded or failed value",
            ),
            (
                r#"{"field":{"path":"s","succeeded":["x"],"failed":["x"]},"finishTime":{"field":"a"}}"#,
                "spec.finished.field: \"x\" is listed as both",
            ),
            (
                r#"{"field":{"path":"status.phase","succeeded":["x"]}}"#,
                "spec.finished.finishTime: required with field and cel",
            ),
            (
                r#"{"cel":{"finished":"object.(("},"finishTime":{"field":"a"}}"#,
                "spec.finished.cel.finished: does not compile",
            ),
            (
                r#"{"cel":{"finished":"true","failed":"self.x"},"finishTime":{"field":"a"}}"#,
                "spec.finished.cel.failed: reads an unknown variable \"self\"",
            ),
            (
                r#"{"cel":{"finished":"true"},"finishTime":{"field":"a","condition":"B"}}"#,
                "spec.finished.finishTime: exactly one of field, condition and cel",
            ),
            (
                r#"{"cel":{"finished":"true"},"finishTime":{}}"#,
                "spec.finished.finishTime: exactly one of",
            ),
            (
                r#"{"cel":{"finished":"true"},"finishTime":{"field":"a["}}"#,
                "spec.finished.finishTime.field: ",
            ),
            (
                r#"{"cel":{"finished":"true"},"finishTime":{"cel":"now +"}}"#,
                "spec.finished.finishTime.cel: does not compile",
            ),
            (
                r#"{"conditions":[{"type":"A"}],"finishTime":{"condition":""}}"#,
                "spec.finished.finishTime.condition: empty",
            ),
        ] {
            let got = error(json);
            assert!(
                got.starts_with(says),
                "{json}\n  got: {got}\n  want: {says}"
            );
        }
    }

    #[test]
    fn group_by_owner_or_a_label() {
        let owner = GroupBySpec::Keyword("owner".into());
        assert_eq!(group_by(&owner, "spec.groupBy"), Ok(GroupBy::Owner));
        let label = GroupBySpec::Label {
            label: "tekton.dev/pipeline".into(),
        };
        assert_eq!(
            group_by(&label, "spec.groupBy"),
            Ok(GroupBy::Label("tekton.dev/pipeline".into()))
        );
        let bad = GroupBySpec::Keyword("namespace".into());
        assert_eq!(
            group_by(&bad, "spec.groupBy").unwrap_err().field,
            "spec.groupBy"
        );
        let empty = GroupBySpec::Label {
            label: String::new(),
        };
        assert_eq!(
            group_by(&empty, "spec.groupBy").unwrap_err().to_string(),
            "spec.groupBy.label: required"
        );
    }
}
