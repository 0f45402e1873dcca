//! Field selectors: `metadata.name=pi,metadata.namespace!=kube-system`, parsed like
//! apimachinery's `fields.ParseSelector` and then checked against the fields every resource
//! can be selected on, as the server's default field-label conversion does.

use serde_json::Value;

use super::SelectorError;

/// A field every resource can be selected on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SelectableField {
    /// `metadata.name`.
    Name,
    /// `metadata.namespace` (empty for cluster-scoped objects).
    Namespace,
}

impl SelectableField {
    fn from_label(label: &str) -> Option<Self> {
        match label {
            "metadata.name" => Some(SelectableField::Name),
            "metadata.namespace" => Some(SelectableField::Namespace),
            _ => None,
        }
    }

    fn read(self, object: &Value) -> &str {
        let key = match self {
            SelectableField::Name => "name",
            SelectableField::Namespace => "namespace",
        };
        object["metadata"][key].as_str().unwrap_or("")
    }
}

/// One term of a field selector: the field equals (or, when `negated`, differs from) the value.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FieldTerm {
    /// The field compared.
    pub field: SelectableField,
    /// `!=` rather than `=`/`==`.
    pub negated: bool,
    /// The value, unescaped.
    pub value: String,
}

/// A parsed field selector: all terms must hold. The empty selector matches everything.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct FieldSelector {
    terms: Vec<FieldTerm>,
}

impl FieldSelector {
    /// Parses the `fieldSelector` query parameter: first the syntax of every term (upstream's
    /// `fields.ParseSelector`), then whether each field can be selected on.
    pub fn parse(s: &str) -> Result<FieldSelector, SelectorError> {
        let mut parts = split_terms(s);
        parts.sort_unstable();
        let mut parsed = Vec::new();
        for part in parts.into_iter().filter(|p| !p.is_empty()) {
            let Some((label, negated, raw)) = split_term(part) else {
                return Err(SelectorError::FieldSyntax(format!(
                    "invalid selector: '{s}'; can't understand '{part}'"
                )));
            };
            let value = unescape_value(raw).map_err(SelectorError::FieldSyntax)?;
            parsed.push((label, negated, value));
        }
        let terms = parsed
            .into_iter()
            .map(|(label, negated, value)| {
                let field = SelectableField::from_label(label).ok_or_else(|| {
                    SelectorError::UnknownField {
                        label: label.to_owned(),
                    }
                })?;
                Ok(FieldTerm {
                    field,
                    negated,
                    value,
                })
            })
            .collect::<Result<_, SelectorError>>()?;
        Ok(FieldSelector { terms })
    }

    /// Whether the object satisfies every term.
    pub fn matches(&self, object: &Value) -> bool {
        self.terms
            .iter()
            .all(|t| (t.field.read(object) == t.value) != t.negated)
    }

    /// The terms, in sorted order of their text.
    pub fn terms(&self) -> &[FieldTerm] {
        &self.terms
    }
}

/// Splits on commas that are not escaped by a backslash; escapes stay in the terms.
fn split_terms(s: &str) -> Vec<&str> {
    if s.is_empty() {
        return Vec::new();
    }
    let mut terms = Vec::new();
    let mut start = 0;
    let mut escaped = false;
    for (i, c) in s.char_indices() {
        match c {
            _ if escaped => escaped = false,
            '\\' => escaped = true,
            ',' => {
                terms.push(&s[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    terms.push(&s[start..]);
    terms
}

/// Splits `lhs op rhs` at the first operator (`!=`, `==` or `=`); returns `(lhs, negated, rhs)`.
fn split_term(term: &str) -> Option<(&str, bool, &str)> {
    term.char_indices().find_map(|(i, _)| {
        let rest = &term[i..];
        if let Some(rhs) = rest.strip_prefix("!=") {
            Some((&term[..i], true, rhs))
        } else if let Some(rhs) = rest.strip_prefix("==") {
            Some((&term[..i], false, rhs))
        } else {
            rest.strip_prefix('=').map(|rhs| (&term[..i], false, rhs))
        }
    })
}

/// Resolves `\\`, `\,` and `\=`; any other escape, or a bare `,` or `=`, is an error.
fn unescape_value(raw: &str) -> Result<String, String> {
    let mut value = String::with_capacity(raw.len());
    let mut escaped = false;
    for c in raw.chars() {
        if escaped {
            if !matches!(c, '\\' | ',' | '=') {
                return Err(format!(
                    "invalid field selector: invalid escape sequence: \\{c}"
                ));
            }
            value.push(c);
            escaped = false;
            continue;
        }
        match c {
            '\\' => escaped = true,
            // Go prints the rune with %v, i.e. as its code point number.
            ',' | '=' => {
                return Err(format!(
                    "invalid field selector: unescaped character in value: {}",
                    u32::from(c)
                ))
            }
            _ => value.push(c),
        }
    }
    if escaped {
        return Err("invalid field selector: invalid escape sequence: \\".to_owned());
    }
    Ok(value)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use serde_json::json;

    #[test]
    fn field_selectors_match_name_and_namespace() {
        let object = json!({"metadata": {"name": "pi", "namespace": "ns"}});
        let cluster_scoped = json!({"metadata": {"name": "node-1"}});
        let table: &[(&str, bool)] = &[
            ("", true),
            ("metadata.name=pi", true),
            ("metadata.name==pi", true),
            ("metadata.name!=pi", false),
            ("metadata.name=pi,metadata.namespace=ns", true),
            ("metadata.name=pi,metadata.namespace!=ns", false),
            ("metadata.namespace=other", false),
            (",metadata.name=pi,", true),
        ];
        for (text, expected) in table {
            let selector = FieldSelector::parse(text).expect(text);
            assert_eq!(selector.matches(&object), *expected, "{text:?}");
        }
        let selector = FieldSelector::parse("metadata.namespace=").expect("valid");
        assert!(selector.matches(&cluster_scoped));
        let escaped = FieldSelector::parse(r"metadata.name=a\,b\=c\\d").expect("valid");
        assert_eq!(escaped.terms()[0].value, r"a,b=c\d");
    }

    #[test]
    fn invalid_field_selectors_give_upstream_messages() {
        let table = [
            ("metadata.name", "invalid selector: 'metadata.name'; can't understand 'metadata.name'"),
            ("metadata.name=a=b", "invalid field selector: unescaped character in value: 61"),
            (r"metadata.name=a\x", r"invalid field selector: invalid escape sequence: \x"),
            (r"metadata.name=a\", r"invalid field selector: invalid escape sequence: \"),
            ("spec.x=1", "\"spec.x\" is not a known field selector: only \"metadata.name\", \"metadata.namespace\""),
            ("metadata.name =a", "\"metadata.name \" is not a known field selector: only \"metadata.name\", \"metadata.namespace\""),
        ];
        for (text, message) in table {
            let err = FieldSelector::parse(text).expect_err(text);
            assert_eq!(err.to_string(), message, "selector {text:?}");
        }
        // Syntax is checked for every term before any field is.
        let err = FieldSelector::parse("spec.x=1,zzz").expect_err("syntax");
        assert!(matches!(err, SelectorError::FieldSyntax(_)), "{err:?}");
    }

    proptest! {
        #[test]
        fn field_parser_never_panics(s in "[a-z.=!,\\\\é]{0,30}") {
            if let Ok(selector) = FieldSelector::parse(&s) {
                let _ = selector.matches(&json!({}));
            }
        }
    }
}
