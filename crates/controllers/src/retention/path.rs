//! [`FieldPath`]: a path into an object's JSON, as retention policies and presets write it.
//!
//! Contract:
//! - The text is dotted keys (`status.phase`, `status.applicationState.state`); a key holding
//!   a dot, a slash or any other awkward character is written in brackets with single or
//!   double quotes (`metadata.annotations['kube-gc.io/ttl']`, `metadata.labels["a.b/c"]`).
//! - [`FieldPath::parse`] rejects empty keys, unbalanced or unquoted brackets and text after a
//!   bracket that is neither `.`, `[` nor the end, with a message saying what and where.
//! - [`FieldPath::lookup`] walks JSON objects only: a key under a non-object, or a missing key,
//!   is `None` (arrays are not indexed: every preset and rule reads named fields).
//! - [`Display`](fmt::Display) writes text that parses back to the same path.

use std::fmt;

use serde_json::Value;

/// A parsed path: its keys, outermost first.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct FieldPath {
    keys: Vec<String>,
}

impl FieldPath {
    /// A path from keys known at compile time (the presets'), which need no parsing.
    pub fn new<I, S>(keys: I) -> FieldPath
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        FieldPath {
            keys: keys.into_iter().map(Into::into).collect(),
        }
    }

    /// Parses `status.phase` or `metadata.annotations['kube-gc.io/ttl']`.
    ///
    /// # Errors
    ///
    /// A message naming what is wrong (an empty key, a bad bracket) and its byte offset.
    pub fn parse(text: &str) -> Result<FieldPath, String> {
        if text.is_empty() {
            return Err("empty path".to_owned());
        }
        let mut parser = Parser { text, at: 0 };
        let mut keys = Vec::new();
        loop {
            keys.push(parser.key()?);
            if parser.done() {
                return Ok(FieldPath { keys });
            }
            parser.separator()?;
        }
    }

    /// The keys, outermost first.
    pub fn keys(&self) -> &[String] {
        &self.keys
    }

    /// The value at this path in `object`, if every key along it is present.
    pub fn lookup<'a>(&self, object: &'a Value) -> Option<&'a Value> {
        self.keys
            .iter()
            .try_fold(object, |value, key| value.as_object()?.get(key))
    }
}

/// A cursor over the path's text.
struct Parser<'t> {
    text: &'t str,
    at: usize,
}

impl<'t> Parser<'t> {
    fn rest(&self) -> &'t str {
        &self.text[self.at..]
    }

    fn done(&self) -> bool {
        self.at == self.text.len()
    }

    /// One key: a bare word up to the next `.` or `[`, or a bracketed, quoted one.
    fn key(&mut self) -> Result<String, String> {
        if self.rest().starts_with('[') {
            return self.bracketed();
        }
        let end = self.rest().find(['.', '[']).unwrap_or(self.rest().len());
        let word = &self.rest()[..end];
        if word.is_empty() {
            return Err(format!("empty key at offset {}", self.at));
        }
        if let Some(bad) = word.find([']', '\'', '"']) {
            return Err(format!(
                "unexpected {:?} at offset {} (quote keys in brackets: ['a.b'])",
                &word[bad..=bad],
                self.at + bad
            ));
        }
        self.at += end;
        Ok(word.to_owned())
    }

    /// `['key']` or `["key"]`.
    fn bracketed(&mut self) -> Result<String, String> {
        let start = self.at;
        let quote = match self.rest().chars().nth(1) {
            Some(q @ ('\'' | '"')) => q,
            _ => {
                return Err(format!(
                    "a bracket at offset {start} must hold a quoted key"
                ))
            }
        };
        let body = &self.rest()[2..];
        let Some(len) = body.find(quote) else {
            return Err(format!("unterminated quote at offset {}", start + 1));
        };
        if !body[len + 1..].starts_with(']') {
            return Err(format!("missing ']' at offset {}", start + 2 + len + 1));
        }
        let key = &body[..len];
        if key.is_empty() {
            return Err(format!("empty key at offset {start}"));
        }
        self.at += 2 + len + 2;
        Ok(key.to_owned())
    }

    /// Between keys: `.` before any key, or nothing before a bracket.
    fn separator(&mut self) -> Result<(), String> {
        if self.rest().starts_with('[') {
            return Ok(());
        }
        if self.rest().starts_with('.') {
            self.at += 1;
            if self.done() {
                return Err(format!("empty key at offset {}", self.at));
            }
            return Ok(());
        }
        Err(format!(
            "expected '.' or '[' at offset {}, found {:?}",
            self.at,
            self.rest().chars().next().unwrap_or(' ')
        ))
    }
}

/// Whether a key can be written bare: it holds nothing the parser splits on or rejects.
fn is_bare(key: &str) -> bool {
    !key.is_empty() && !key.contains(['.', '[', ']', '\'', '"', '/'])
}

impl fmt::Display for FieldPath {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, key) in self.keys.iter().enumerate() {
            if is_bare(key) {
                if i > 0 {
                    f.write_str(".")?;
                }
                f.write_str(key)?;
            } else if key.contains('\'') {
                write!(f, "[\"{key}\"]")?;
            } else {
                write!(f, "['{key}']")?;
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn keys(text: &str) -> Vec<String> {
        FieldPath::parse(text).unwrap().keys().to_vec()
    }

    #[test]
    fn dotted_paths_split_on_dots() {
        assert_eq!(keys("status.phase"), ["status", "phase"]);
        assert_eq!(
            keys("status.applicationState.state"),
            ["status", "applicationState", "state"]
        );
        assert_eq!(keys("spec"), ["spec"]);
    }

    #[test]
    fn brackets_hold_keys_with_dots_and_slashes() {
        assert_eq!(
            keys("metadata.annotations['kube-gc.io/ttl']"),
            ["metadata", "annotations", "kube-gc.io/ttl"]
        );
        assert_eq!(
            keys(r#"metadata.labels["it's"].x"#),
            ["metadata", "labels", "it's", "x"]
        );
        assert_eq!(keys("['a.b']['c']"), ["a.b", "c"]);
        assert_eq!(keys("a.['b']"), ["a", "b"]);
    }

    #[test]
    fn malformed_paths_are_errors_that_say_where() {
        for (text, says) in [
            ("", "empty path"),
            ("status.", "empty key at offset 7"),
            (".status", "empty key at offset 0"),
            ("status..phase", "empty key at offset 7"),
            ("a[b]", "must hold a quoted key"),
            ("a['b", "unterminated quote"),
            ("a['b'", "missing ']'"),
            ("a['']", "empty key"),
            ("a['b']c", "expected '.' or '['"),
            ("a]b", "unexpected \"]\""),
            ("a'b", "unexpected \"'\""),
        ] {
            let error = FieldPath::parse(text).unwrap_err();
            assert!(error.contains(says), "{text:?}: {error}");
        }
    }

    #[test]
    fn display_parses_back_to_the_same_path() {
        for text in [
            "status.phase",
            "metadata.annotations['kube-gc.io/ttl']",
            r#"metadata.labels["it's"]"#,
            "['a.b'].c",
        ] {
            let path = FieldPath::parse(text).unwrap();
            assert_eq!(path.to_string(), text);
            assert_eq!(FieldPath::parse(&path.to_string()).unwrap(), path);
        }
        assert_eq!(
            FieldPath::new(["status", "a/b"]).to_string(),
            "status['a/b']"
        );
    }

    #[test]
    fn lookup_walks_objects_only() {
        let object = json!({
            "status": {"phase": "Succeeded", "conditions": [{"type": "Ready"}]},
            "metadata": {"annotations": {"kube-gc.io/ttl": "60"}}
        });
        let at = |text: &str| FieldPath::parse(text).unwrap().lookup(&object).cloned();
        assert_eq!(at("status.phase"), Some(json!("Succeeded")));
        assert_eq!(
            at("metadata.annotations['kube-gc.io/ttl']"),
            Some(json!("60"))
        );
        assert_eq!(at("status.missing"), None);
        assert_eq!(at("status.phase.deeper"), None);
        assert_eq!(at("status.conditions.type"), None);
        assert_eq!(at("status").map(|s| s.is_object()), Some(true));
    }
}
