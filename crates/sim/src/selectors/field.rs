//! Field selectors: `metadata.name=pi,metadata.namespace!=kube-system`, parsed like
//! apimachinery's `fields.ParseSelector` and then checked against the fields the kind can be
//! selected on: `metadata.name` and `metadata.namespace` for every kind (the server's default
//! field-label conversion, exchange 127), and for core/v1 Events also the fields the events
//! registry selects on (`involvedObject.*`, `reason`, `type`, `source`, `reportingComponent`:
//! `kubectl describe` finds an object's Events this way, exchanges 124–126).

use serde_json::Value;

use super::SelectorError;

/// Which fields a kind's objects can be selected on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum FieldSet {
    /// `metadata.name` and `metadata.namespace`: every kind.
    #[default]
    ObjectMeta,
    /// Those and the events registry's own (`pkg/registry/core/event/strategy.go`,
    /// `ToSelectableFields`).
    Event,
}

/// The Event fields beside the metadata, as labels.
const EVENT_FIELDS: &[&str] = &[
    "involvedObject.kind",
    "involvedObject.namespace",
    "involvedObject.name",
    "involvedObject.uid",
    "involvedObject.apiVersion",
    "involvedObject.resourceVersion",
    "involvedObject.fieldPath",
    "reason",
    "reportingComponent",
    "source",
    "type",
];

/// A field an object can be selected on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SelectableField {
    /// `metadata.name`.
    Name,
    /// `metadata.namespace` (empty for cluster-scoped objects).
    Namespace,
    /// One of [`EVENT_FIELDS`], by its label.
    Event(&'static str),
}

impl SelectableField {
    fn from_label(label: &str, set: FieldSet) -> Option<Self> {
        match label {
            "metadata.name" => Some(SelectableField::Name),
            "metadata.namespace" => Some(SelectableField::Namespace),
            _ if set == FieldSet::Event => EVENT_FIELDS
                .iter()
                .find(|known| **known == label)
                .map(|known| SelectableField::Event(known)),
            _ => None,
        }
    }

    fn read(self, object: &Value) -> &str {
        fn text(value: &Value) -> &str {
            value.as_str().unwrap_or("")
        }
        match self {
            SelectableField::Name => text(&object["metadata"]["name"]),
            SelectableField::Namespace => text(&object["metadata"]["namespace"]),
            SelectableField::Event(label) => match label.split_once('.') {
                Some((_, member)) => text(&object["involvedObject"][member]),
                // core/v1 Events store the reporting controller as `reportingComponent`
                // (events.k8s.io/v1's `reportingController`), and `source` falls back to it
                // when `source.component` is empty.
                None if label == "reportingComponent" => text(&object["reportingComponent"]),
                None if label == "source" => match text(&object["source"]["component"]) {
                    "" => text(&object["reportingComponent"]),
                    component => component,
                },
                None => text(&object[label]),
            },
        }
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
    /// Parses the `fieldSelector` query parameter of a kind selectable on metadata only.
    pub fn parse(s: &str) -> Result<FieldSelector, SelectorError> {
        FieldSelector::parse_for(s, FieldSet::ObjectMeta)
    }

    /// Parses the `fieldSelector` query parameter: first the syntax of every term (upstream's
    /// `fields.ParseSelector`), then whether each field can be selected on in `set`. The two
    /// sets refuse an unknown field in their own words, as the server's two conversions do.
    pub fn parse_for(s: &str, set: FieldSet) -> Result<FieldSelector, SelectorError> {
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
                let field = SelectableField::from_label(label, set).ok_or_else(|| {
                    let label = label.to_owned();
                    match set {
                        FieldSet::ObjectMeta => SelectorError::UnknownField { label },
                        FieldSet::Event => SelectorError::UnsupportedFieldLabel { label },
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
    fn events_select_on_their_own_fields_and_refuse_others_in_their_own_words() {
        let event = json!({"metadata": {"name": "e", "namespace": "ns"},
            "involvedObject": {"kind": "Pod", "name": "p", "uid": "u1"},
            "reason": "Failed", "type": "Warning", "reportingComponent": "kube-gc"});
        let matches = |s: &str| {
            FieldSelector::parse_for(s, FieldSet::Event)
                .unwrap()
                .matches(&event)
        };
        assert!(matches(
            "involvedObject.kind=Pod,involvedObject.name=p,involvedObject.uid=u1"
        ));
        assert!(matches("type=Warning,reason=Failed,metadata.namespace=ns"));
        // `source` is source.component, else the reporting controller.
        assert!(matches("source=kube-gc,reportingComponent=kube-gc"));
        assert!(!matches("involvedObject.name=q"));
        let refused = FieldSelector::parse_for("message=x", FieldSet::Event).unwrap_err();
        assert_eq!(refused.to_string(), "field label not supported: message");
        let elsewhere = FieldSelector::parse("involvedObject.name=p").unwrap_err();
        assert!(elsewhere
            .to_string()
            .contains("is not a known field selector"));
    }

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
