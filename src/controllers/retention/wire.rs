//! Decoding an object for judging: only what the policies' rules can read, as a
//! `serde_json::Value` — `metadata` whole (but `managedFields`, about half of a real object's
//! bytes, read by no rule), and of the rest the paths the finish rules, own TTL fields and
//! CEL expressions name ([`Need`]). Everything else is skipped without being built.
//!
//! Contract: a rule evaluated on the pruned object gives what it gives on the whole one
//! (`tests/retention_presets.rs` checks every preset fixture both ways): a path is kept with
//! its whole subtree, a CEL expression keeps each top-level field it reads, and one that uses
//! `object` whole keeps everything.

use std::collections::BTreeMap;
use std::fmt;
use std::sync::Arc;

use serde::de::{DeserializeSeed, Deserializer, IgnoredAny, MapAccess, Visitor};
use serde_json::{Map, Value};

use super::cel::CelExpr;
use super::policy::CompiledPolicy;
use super::rule::{FinishKind, FinishTime};

/// Which parts of an object are needed: all of a subtree, or some of its fields.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub enum Need {
    /// The whole subtree.
    #[default]
    All,
    /// These fields, each with what is needed below it.
    Fields(BTreeMap<String, Need>),
}

impl Need {
    /// Nothing yet; paths are added.
    pub fn nothing() -> Need {
        Need::Fields(BTreeMap::new())
    }

    /// What the rules of `policies` read, plus `metadata`.
    pub fn of(policies: &[Arc<CompiledPolicy>]) -> Need {
        let mut need = Need::nothing();
        need.add(&["metadata".to_owned()]);
        for policy in policies {
            if let Some(expr) = &policy.match_expr {
                need.add_cel(expr);
            }
            need.add_finish(&policy.finish.kind, &policy.finish.time);
            for field in &policy.own_ttl {
                need.add(field.path.keys());
                if let Some(when) = &field.when {
                    need.add(when.path.keys());
                }
            }
        }
        need
    }

    /// Needs the subtree at `path` (an empty path: everything).
    pub fn add<S: AsRef<str>>(&mut self, path: &[S]) {
        let Need::Fields(fields) = self else {
            return;
        };
        let Some((first, rest)) = path.split_first() else {
            *self = Need::All;
            return;
        };
        let child = fields
            .entry(first.as_ref().to_owned())
            .or_insert_with(Need::nothing);
        if rest.is_empty() {
            *child = Need::All;
        } else {
            child.add(rest);
        }
    }

    fn add_cel(&mut self, expr: &CelExpr) {
        match expr.reads() {
            Some(read) => self.merge(read),
            None => *self = Need::All,
        }
    }

    /// Needs also what `other` needs.
    pub fn merge(&mut self, other: &Need) {
        match (&mut *self, other) {
            (Need::All, _) => {}
            (_, Need::All) => *self = Need::All,
            (Need::Fields(mine), Need::Fields(theirs)) => {
                for (key, below) in theirs {
                    mine.entry(key.clone())
                        .or_insert_with(Need::nothing)
                        .merge(below);
                }
            }
        }
    }

    fn add_finish(&mut self, kind: &FinishKind, time: &FinishTime) {
        match kind {
            FinishKind::Conditions(_) => self.add(&["status", "conditions"]),
            FinishKind::Field { path, .. } => self.add(path.keys()),
            FinishKind::Cel { finished, failed } => {
                self.add_cel(finished);
                if let Some(failed) = failed {
                    self.add_cel(failed);
                }
            }
        }
        match time {
            FinishTime::MatchedCondition | FinishTime::Condition(_) => {
                self.add(&["status", "conditions"])
            }
            FinishTime::Field(path) => self.add(path.keys()),
            FinishTime::ContainersTerminated => {
                self.add(&["status", "containerStatuses"]);
                self.add(&["status", "initContainerStatuses"]);
                self.add(&["spec", "initContainers"]);
            }
            FinishTime::Cel(expr) => self.add_cel(expr),
        }
    }
}

/// Decodes one object whole, but for `metadata.managedFields`.
///
/// # Errors
///
/// What `serde_json` says of text that is not a JSON object.
pub fn decode(bytes: &[u8]) -> serde_json::Result<Value> {
    decode_needed(bytes, &Need::All)
}

/// Decodes what `need` names of one object (and never `metadata.managedFields`).
///
/// # Errors
///
/// What `serde_json` says of text that is not a JSON object.
pub fn decode_needed(bytes: &[u8], need: &Need) -> serde_json::Result<Value> {
    if bytes.iter().find(|b| !b.is_ascii_whitespace()) != Some(&b'{') {
        // Not an object: serde says why, as it would of any object decoded here.
        return serde_json::from_slice::<Map<String, Value>>(bytes).map(Value::Object);
    }
    let mut deserializer = serde_json::Deserializer::from_slice(bytes);
    let value = Pruned { need, depth: 0 }.deserialize(&mut deserializer)?;
    deserializer.end()?;
    Ok(value)
}

/// An object pruned to `need`; at depth 1 under `metadata`, `managedFields` is dropped.
struct Pruned<'n> {
    need: &'n Need,
    depth: u8,
}

impl<'de> DeserializeSeed<'de> for Pruned<'_> {
    type Value = Value;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<Value, D::Error> {
        deserializer.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Pruned<'_> {
    type Value = Value;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a JSON object")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Value, A::Error> {
        let mut fields = Map::new();
        while let Some(key) = map.next_key::<String>()? {
            let top = self.depth == 0;
            let value = if top && key == "metadata" {
                map.next_value_seed(Metadata)?
            } else {
                match self.need {
                    Need::All => map.next_value::<Value>()?,
                    Need::Fields(wanted) => match wanted.get(&key) {
                        None => {
                            map.next_value::<IgnoredAny>()?;
                            continue;
                        }
                        Some(Need::All) => map.next_value::<Value>()?,
                        Some(below) => map.next_value_seed(Pruned {
                            need: below,
                            depth: self.depth + 1,
                        })?,
                    },
                }
            };
            fields.insert(key, value);
        }
        Ok(Value::Object(fields))
    }

    // A pruned field that is not an object (a rule expecting one reports it) is kept as is.
    fn visit_unit<E>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }
    fn visit_bool<E>(self, v: bool) -> Result<Value, E> {
        Ok(Value::Bool(v))
    }
    fn visit_i64<E>(self, v: i64) -> Result<Value, E> {
        Ok(Value::from(v))
    }
    fn visit_u64<E>(self, v: u64) -> Result<Value, E> {
        Ok(Value::from(v))
    }
    fn visit_f64<E>(self, v: f64) -> Result<Value, E> {
        Ok(Value::from(v))
    }
    fn visit_str<E>(self, v: &str) -> Result<Value, E> {
        Ok(Value::from(v))
    }
    fn visit_seq<A: serde::de::SeqAccess<'de>>(self, mut seq: A) -> Result<Value, A::Error> {
        let mut items = Vec::new();
        while let Some(item) = seq.next_element::<Value>()? {
            items.push(item);
        }
        Ok(Value::Array(items))
    }
}

/// `metadata`, without `managedFields`.
struct Metadata;

impl<'de> DeserializeSeed<'de> for Metadata {
    type Value = Value;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<Value, D::Error> {
        deserializer.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Metadata {
    type Value = Value;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("an object's metadata")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Value, A::Error> {
        let mut fields = Map::new();
        while let Some(key) = map.next_key::<String>()? {
            if key == "managedFields" {
                map.next_value::<IgnoredAny>()?;
                continue;
            }
            let value = map.next_value::<Value>()?;
            fields.insert(key, value);
        }
        Ok(Value::Object(fields))
    }

    fn visit_unit<E>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn everything_but_managed_fields_is_kept_without_a_need() {
        let text = r#"{"kind":"Pod","metadata":{"name":"a","managedFields":[{"manager":"kubelet"}],
            "labels":{"x":"y"}},"status":{"managedFields":"kept: not metadata"}}"#;
        let value = decode(text.as_bytes()).unwrap();
        assert_eq!(
            value,
            json!({"kind":"Pod","metadata":{"name":"a","labels":{"x":"y"}},
                   "status":{"managedFields":"kept: not metadata"}})
        );
        assert_eq!(
            decode(br#"{"metadata":null}"#).unwrap(),
            json!({"metadata": null})
        );
        assert!(decode(b"[1]").is_err());
        assert!(decode(br#"{"a":1} trailing"#).is_err());
    }

    #[test]
    fn only_the_needed_paths_are_built() {
        let mut need = Need::nothing();
        need.add(&["status", "conditions"]);
        need.add(&["spec", "ttlSecondsAfterFinished"]);
        let text = r#"{"kind":"Job","metadata":{"name":"j"},
            "spec":{"ttlSecondsAfterFinished":5,"template":{"spec":{"containers":[{"name":"c"}]}}},
            "status":{"conditions":[{"type":"Complete"}],"active":0,"startTime":"x"}}"#;
        let value = decode_needed(text.as_bytes(), &need).unwrap();
        assert_eq!(
            value,
            json!({"metadata":{"name":"j"},"spec":{"ttlSecondsAfterFinished":5},
                   "status":{"conditions":[{"type":"Complete"}]}})
        );
        // A scalar where an object was expected is kept, for the rule to report.
        let odd = decode_needed(br#"{"status":"weird"}"#, &need).unwrap();
        assert_eq!(odd, json!({"status": "weird"}));
    }
}
