//! The decoder: an object's JSON text to a `serde_json::Value` holding only what a [`Need`]
//! names, never `metadata.managedFields` (about half of a real object's bytes); everything
//! else is skipped without being built. It knows only the field tree: which fields a decision
//! reads is said above it (`assessment::needed`: the metadata an assessment reads, plus the
//! paths the policies' finish rules, own TTL fields and CEL expressions name).
//!
//! Contract: a rule evaluated on the pruned object gives what it gives on the whole one
//! (`tests/retention_presets.rs` checks every preset fixture both ways): a path is kept with
//! its whole subtree, a CEL expression keeps each top-level field it reads, and one that uses
//! `object` whole keeps everything.

use std::borrow::Cow;
use std::fmt;

use serde::de::{DeserializeSeed, Deserializer, IgnoredAny, MapAccess, Visitor};
use serde_json::{Map, Value};

use super::need::Need;

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
    expect_object(bytes)?;
    let mut deserializer = serde_json::Deserializer::from_slice(bytes);
    let value = Pruned {
        need,
        at: Level::Top,
    }
    .deserialize(&mut deserializer)?;
    deserializer.end()?;
    Ok(value)
}

/// Refuses text that is not a JSON object before a visitor or a derived struct sees it (serde
/// would take an array for a struct): serde says why, as it would of any object decoded here.
pub(super) fn expect_object(bytes: &[u8]) -> serde_json::Result<()> {
    if bytes.iter().find(|b| !b.is_ascii_whitespace()) != Some(&b'{') {
        serde_json::from_slice::<Map<String, Value>>(bytes)?;
    }
    Ok(())
}

/// What of the tree being decoded is built: the part `need` names. Arrays are transparent: a
/// [`Need::Fields`] on an array applies to each element (paths do not index arrays, so only
/// the assessment's own `metadata.ownerReferences` need uses this).
#[derive(Clone, Copy)]
struct Pruned<'n> {
    need: &'n Need,
    at: Level,
}

/// Where in the object a map is: its top, its `metadata` (whose `managedFields` is never
/// built), or anywhere else.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Level {
    Top,
    Metadata,
    Below,
}

impl<'n> Pruned<'n> {
    /// How the value of `key` in this map is decoded: skipped (`None`), built whole, or pruned.
    fn child(&self, key: &str) -> Option<Pruned<'n>> {
        if self.at == Level::Metadata && key == "managedFields" {
            return None;
        }
        let need = match self.need {
            Need::All => self.need,
            Need::Fields(wanted) => wanted.get(key)?,
        };
        let at = if self.at == Level::Top && key == "metadata" {
            Level::Metadata
        } else {
            Level::Below
        };
        Some(Pruned { need, at })
    }
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
        while let Some(key) = map.next_key_seed(Key)? {
            let value = match self.child(&key) {
                None => {
                    map.next_value::<IgnoredAny>()?;
                    continue;
                }
                // Only `metadata` needs this visitor under a whole need (for managedFields).
                Some(child) if child.at == Level::Below && *child.need == Need::All => {
                    map.next_value::<Value>()?
                }
                Some(child) => map.next_value_seed(child)?,
            };
            fields.insert(key.into_owned(), value);
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
        let element = Pruned {
            need: self.need,
            at: Level::Below,
        };
        let mut items = Vec::new();
        while let Some(item) = seq.next_element_seed(element)? {
            items.push(item);
        }
        Ok(Value::Array(items))
    }
}

/// A map key, borrowed from the input where it can be: most keys are of skipped fields, and
/// copying each into a `String` only to drop it cost more than building what is kept.
struct Key;

impl<'de> DeserializeSeed<'de> for Key {
    type Value = Cow<'de, str>;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<Self::Value, D::Error> {
        deserializer.deserialize_str(self)
    }
}

impl<'de> Visitor<'de> for Key {
    type Value = Cow<'de, str>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a field name")
    }

    fn visit_borrowed_str<E>(self, v: &'de str) -> Result<Self::Value, E> {
        Ok(Cow::Borrowed(v))
    }

    // A key with escapes is unescaped into a buffer the input does not hold.
    fn visit_str<E>(self, v: &str) -> Result<Self::Value, E> {
        Ok(Cow::Owned(v.to_owned()))
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
            json!({"spec":{"ttlSecondsAfterFinished":5},
                   "status":{"conditions":[{"type":"Complete"}]}})
        );
        // A scalar where an object was expected is kept, for the rule to report.
        let odd = decode_needed(br#"{"status":"weird"}"#, &need).unwrap();
        assert_eq!(odd, json!({"status": "weird"}));
    }
}
