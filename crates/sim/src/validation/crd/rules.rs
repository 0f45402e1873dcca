//! The `x-kubernetes-validations` CEL rules of a schema, evaluated as apiextensions'
//! validator does: `self` bound to the node, a node's own rules before its children's, only on
//! nodes that are present and of their schema's type.

use serde_json::Value;

use super::schema::{Rule, Schema};
use super::{cause, child, has_type};
use crate::status::{Cause, CauseType};

/// A copy of `value` without `null` members, which the real server prunes before rules run.
fn without_nulls(value: &Value) -> Value {
    match value {
        Value::Object(members) => Value::Object(
            members
                .iter()
                .filter(|(_, v)| !v.is_null())
                .map(|(k, v)| (k.clone(), without_nulls(v)))
                .collect(),
        ),
        Value::Array(items) => Value::Array(items.iter().map(without_nulls).collect()),
        other => other.clone(),
    }
}

/// The `x-kubernetes-validations` rules of `schema` and of the nodes below it, a node's own
/// rules before its children's (as apiextensions' CEL validator walks).
pub(super) fn check_rules(schema: &Schema, value: &Value, path: &str, causes: &mut Vec<Cause>) {
    if value.is_null() || schema.kind.as_deref().is_some_and(|k| !has_type(k, value)) {
        // Absent, or already refused for its type: a rule would read nonsense.
        return;
    }
    if !schema.rules.is_empty() {
        let this = without_nulls(value);
        for rule in &schema.rules {
            if let Some(failure) = evaluate(rule, &this) {
                causes.push(cause(
                    CauseType::Invalid,
                    path,
                    Value::from(schema.kind.as_deref().unwrap_or("")),
                    failure,
                ));
            }
        }
    }
    match value {
        Value::Object(members) => {
            for (name, property) in &schema.properties.0 {
                if let Some(member) = members.get(name) {
                    check_rules(property, member, &child(path, name), causes);
                }
            }
            if let Some(additional) = &schema.additional_properties {
                let declared = |name: &str| schema.properties.0.iter().any(|(n, _)| n == name);
                for (name, member) in members.iter().filter(|(n, _)| !declared(n)) {
                    check_rules(additional, member, &child(path, name), causes);
                }
            }
        }
        Value::Array(items) => {
            if let Some(item_schema) = &schema.items {
                for (i, item) in items.iter().enumerate() {
                    check_rules(item_schema, item, &format!("{path}[{i}]"), causes);
                }
            }
        }
        _ => {}
    }
}

/// Evaluates one rule with `self` bound to `this`: `None` when it holds, else the detail of
/// the cause.
fn evaluate(rule: &Rule, this: &Value) -> Option<String> {
    // `schema::load` compiles every rule or fails as a whole, so a loaded rule has a program.
    let program = rule.program.as_ref()?;
    let mut context = cel::Context::default();
    if let Err(e) = context.add_variable("self", this) {
        return Some(format!("{e} evaluating rule: {}", rule.name()));
    }
    match program.execute(&context) {
        Ok(cel::Value::Bool(true)) => None,
        Ok(cel::Value::Bool(false)) => Some(rule.failure()),
        Ok(other) => Some(format!(
            "rule evaluated to {other:?}, not a bool, evaluating rule: {}",
            rule.name()
        )),
        Err(e) => Some(format!("{e} evaluating rule: {}", rule.name())),
    }
}
