//! [`LabelSelector`] (`metav1.LabelSelector`): `matchLabels` and `matchExpressions`, and the
//! rules by which it selects a set of labels.
//!
//! Contract (apimachinery's `LabelSelectorAsSelector`):
//! - Every `matchLabels` pair and every expression must hold (AND); an empty selector selects
//!   everything, and an absent one is the caller's choice (a policy reads absent as "all").
//! - `In` / `NotIn` need at least one value, `Exists` / `DoesNotExist` none; `NotIn` and
//!   `DoesNotExist` hold for an object without the key. [`LabelSelector::validate`] reports a
//!   malformed selector by the field at fault, so that nothing is selected on a misreading.
//! - Matching is the workspace's one label matcher, `kube_gc_core::labels` ([`Operator::holds`]):
//!   a `matchLabels` pair is `key=value`, an expression its operator.

use std::collections::BTreeMap;

use kube_gc_core::labels::Operator;
use serde::{Deserialize, Serialize};

use super::defaults::null_as_default;

/// `matchLabels` and `matchExpressions`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct LabelSelector {
    /// Pairs that must all be present.
    #[serde(
        default,
        deserialize_with = "null_as_default",
        skip_serializing_if = "BTreeMap::is_empty"
    )]
    pub match_labels: BTreeMap<String, String>,
    /// Requirements that must all hold.
    #[serde(
        default,
        deserialize_with = "null_as_default",
        skip_serializing_if = "Vec::is_empty"
    )]
    pub match_expressions: Vec<LabelSelectorRequirement>,
}

/// One `matchExpressions` entry.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct LabelSelectorRequirement {
    /// The label's key.
    pub key: String,
    /// `In`, `NotIn`, `Exists` or `DoesNotExist`.
    pub operator: String,
    /// The values `In` / `NotIn` compare with.
    #[serde(
        default,
        deserialize_with = "null_as_default",
        skip_serializing_if = "Vec::is_empty"
    )]
    pub values: Vec<String>,
}

/// A selector that cannot select anything sensibly, by the field at fault.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("matchExpressions[{index}]: {problem}")]
pub struct SelectorError {
    /// Which expression.
    pub index: usize,
    /// What is wrong with it.
    pub problem: String,
}

impl LabelSelector {
    /// Checks the expressions' operators and values.
    ///
    /// # Errors
    ///
    /// The first malformed expression.
    pub fn validate(&self) -> Result<(), SelectorError> {
        for (index, requirement) in self.match_expressions.iter().enumerate() {
            let problem = match (requirement.operator.as_str(), requirement.values.len()) {
                ("In" | "NotIn", 0) => Some("values: must be non-empty for In and NotIn".into()),
                ("Exists" | "DoesNotExist", n) if n > 0 => {
                    Some("values: must be empty for Exists and DoesNotExist".into())
                }
                ("In" | "NotIn" | "Exists" | "DoesNotExist", _) => None,
                (other, _) => Some(format!(
                    "operator: {other:?} is not one of In, NotIn, Exists, DoesNotExist"
                )),
            };
            if let Some(problem) = problem {
                return Err(SelectorError { index, problem });
            }
        }
        Ok(())
    }

    /// Whether `labels` satisfy every requirement. A malformed expression (see
    /// [`validate`](Self::validate)) selects nothing.
    pub fn matches(&self, labels: &BTreeMap<String, String>) -> bool {
        self.matches_lookup(|key| labels.get(key).map(String::as_str))
    }

    /// Like [`matches`](Self::matches), with the labels read through `label` (a key's value),
    /// for labels held in some other map (borrowed from a decoded object, say).
    pub fn matches_lookup<'v>(&self, label: impl Fn(&str) -> Option<&'v str>) -> bool {
        let pairs = self
            .match_labels
            .iter()
            .all(|(k, v)| Operator::Equals.holds(std::slice::from_ref(v), label(k)));
        pairs
            && self
                .match_expressions
                .iter()
                .all(|r| r.matches(label(&r.key)))
    }

    /// Selects everything.
    pub fn is_empty(&self) -> bool {
        self.match_labels.is_empty() && self.match_expressions.is_empty()
    }
}

impl LabelSelectorRequirement {
    /// Whether the value of its key (`None`: no such label) satisfies it.
    fn matches(&self, value: Option<&str>) -> bool {
        Operator::from_set_based(&self.operator).is_some_and(|op| op.holds(&self.values, value))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn labels(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    fn selector(json: &str) -> LabelSelector {
        serde_json::from_str(json).unwrap()
    }

    #[test]
    fn every_pair_and_expression_must_hold() {
        let s = selector(
            r#"{"matchLabels":{"team":"data"},
                "matchExpressions":[{"key":"tier","operator":"In","values":["batch","etl"]},
                                    {"key":"keep","operator":"DoesNotExist"}]}"#,
        );
        assert!(s.matches(&labels(&[("team", "data"), ("tier", "etl")])));
        assert!(!s.matches(&labels(&[("team", "data"), ("tier", "web")])));
        assert!(!s.matches(&labels(&[("team", "data"), ("tier", "etl"), ("keep", "")])));
        assert!(!s.matches(&labels(&[("tier", "etl")])));
    }

    #[test]
    fn not_in_and_does_not_exist_hold_without_the_key_and_empty_selects_all() {
        let s = selector(
            r#"{"matchExpressions":[{"key":"env","operator":"NotIn","values":["prod"]}]}"#,
        );
        assert!(s.matches(&labels(&[])));
        assert!(!s.matches(&labels(&[("env", "prod")])));
        assert!(LabelSelector::default().matches(&labels(&[("a", "b")])));
    }

    #[test]
    fn malformed_expressions_are_named_and_select_nothing() {
        let s = selector(
            r#"{"matchExpressions":[{"key":"a","operator":"Exists"},{"key":"b","operator":"In"}]}"#,
        );
        let err = s.validate().unwrap_err();
        assert_eq!(err.index, 1);
        assert!(err.to_string().starts_with("matchExpressions[1]: values"));
        assert!(!s.matches(&labels(&[("a", "x"), ("b", "y")])));
        let odd = selector(r#"{"matchExpressions":[{"key":"a","operator":"Gt","values":["1"]}]}"#);
        assert!(odd.validate().unwrap_err().problem.contains("\"Gt\""));
        assert!(!odd.matches(&labels(&[("a", "2")])));
    }
}
