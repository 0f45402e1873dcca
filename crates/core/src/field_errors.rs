//! Field errors worded as apimachinery's `field.Error` words them, and their aggregation into
//! one message: the causes of an API server's 422 `Invalid` answer, and the refusals of a label
//! selector that names an invalid key or value ([`crate::labels`]).
//!
//! Contract: [`Cause`]'s `Display` is upstream's `field: Invalid value: "x": detail`;
//! [`aggregate_causes`] lists several as Go's aggregated error does. Values are quoted as Go's
//! `%q` quotes them ([`quote`]).

use std::fmt;

use serde_json::{json, Value};

/// `s` quoted the way Go's `%q` quotes it; for the printable text of names, values and
/// messages this is JSON string quoting.
pub fn quote(s: &str) -> String {
    Value::String(s.to_owned()).to_string()
}

/// The kind of a validation failure, as `metav1.CauseType` spells it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CauseType {
    /// `FieldValueInvalid`: the value is present but wrong.
    Invalid,
    /// `FieldValueRequired`: the field is missing or empty.
    Required,
    /// `FieldValueDuplicate`: the value repeats one already given.
    Duplicate,
    /// `FieldValueForbidden`: the field may not be set.
    Forbidden,
    /// `FieldValueNotSupported`: the value is not one of the allowed ones.
    NotSupported,
    /// `FieldValueTypeInvalid`: the value has the wrong type (a custom resource's schema).
    TypeInvalid,
}

impl CauseType {
    /// The `reason` string of the cause in the `Status` body.
    pub fn reason(self) -> &'static str {
        match self {
            CauseType::Invalid => "FieldValueInvalid",
            CauseType::Required => "FieldValueRequired",
            CauseType::Duplicate => "FieldValueDuplicate",
            CauseType::Forbidden => "FieldValueForbidden",
            CauseType::NotSupported => "FieldValueNotSupported",
            CauseType::TypeInvalid => "FieldValueTypeInvalid",
        }
    }

    /// The words that open the cause's message (`field.ErrorType.String()` upstream).
    fn label(self) -> &'static str {
        match self {
            CauseType::Invalid => "Invalid value",
            CauseType::Required => "Required value",
            CauseType::Duplicate => "Duplicate value",
            CauseType::Forbidden => "Forbidden",
            CauseType::NotSupported => "Unsupported value",
            CauseType::TypeInvalid => "Invalid value",
        }
    }
}

/// One field-level validation failure of a 422 `Invalid` answer.
#[derive(Debug, Clone, PartialEq)]
pub struct Cause {
    /// What is wrong.
    pub kind: CauseType,
    /// The JSON path of the field, e.g. `metadata.ownerReferences.uid`.
    pub field: String,
    /// The offending value, shown in the message for value errors; ignored for `Required` and
    /// `Forbidden`, which upstream reports without the value.
    pub value: Value,
    /// A human explanation appended after the value, e.g. `uid must not be empty`.
    pub detail: String,
}

impl Cause {
    /// A `FieldValueInvalid` cause.
    pub fn invalid(field: impl Into<String>, value: Value, detail: impl Into<String>) -> Self {
        Cause {
            kind: CauseType::Invalid,
            field: field.into(),
            value,
            detail: detail.into(),
        }
    }

    /// A `FieldValueRequired` cause.
    pub fn required(field: impl Into<String>, detail: impl Into<String>) -> Self {
        Cause {
            kind: CauseType::Required,
            field: field.into(),
            value: Value::Null,
            detail: detail.into(),
        }
    }

    /// The cause's message without the field: `Invalid value: "": uid must not be empty`.
    pub fn body(&self) -> String {
        let mut text = match self.kind {
            CauseType::Required | CauseType::Forbidden => self.kind.label().to_owned(),
            _ => format!("{}: {}", self.kind.label(), go_value(&self.value)),
        };
        if !self.detail.is_empty() {
            text.push_str(": ");
            text.push_str(&self.detail);
        }
        text
    }

    /// The cause as a `Status` body lists it: `reason`, `message`, `field`.
    pub fn to_json(&self) -> Value {
        json!({ "reason": self.kind.reason(), "message": self.body(), "field": self.field })
    }
}

impl fmt::Display for Cause {
    /// `field: body`, the way an aggregated validation error lists it.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.field, self.body())
    }
}

/// Several causes as one message, like Go's aggregated `field.ErrorList`: repeated messages
/// appear once, a single message stands alone, several are listed as `[a, b]`. `None` when
/// there is no cause.
pub fn aggregate_causes(causes: &[Cause]) -> Option<String> {
    let mut messages: Vec<String> = Vec::with_capacity(causes.len());
    for cause in causes {
        let message = cause.to_string();
        if !messages.contains(&message) {
            messages.push(message);
        }
    }
    match messages.as_slice() {
        [] => None,
        [only] => Some(only.clone()),
        many => Some(format!("[{}]", many.join(", "))),
    }
}

/// Renders a value the way apimachinery's field errors print a bad value: strings quoted,
/// numbers and booleans bare, `null` as `null`, maps and lists in Go syntax (`%#v` of an
/// unstructured value: `map[string]interface {}{"foo":1}`, exchange 14 of
/// `fixtures/retention/crd-validation/`).
fn go_value(value: &Value) -> String {
    match value {
        Value::String(s) => quote(s),
        Value::Array(_) | Value::Object(_) => go_syntax(value),
        other => other.to_string(),
    }
}

/// Go's `%#v` of a decoded JSON value inside an `interface{}`: maps with their keys sorted,
/// as `fmt` prints them.
fn go_syntax(value: &Value) -> String {
    match value {
        Value::Null => "interface {}(nil)".to_owned(),
        Value::String(s) => quote(s),
        Value::Array(items) => {
            let items: Vec<String> = items.iter().map(go_syntax).collect();
            format!("[]interface {{}}{{{}}}", items.join(", "))
        }
        Value::Object(members) => {
            let mut entries: Vec<(&String, &Value)> = members.iter().collect();
            entries.sort_by(|a, b| a.0.cmp(b.0));
            let entries: Vec<String> = entries
                .into_iter()
                .map(|(k, v)| format!("{}:{}", quote(k), go_syntax(v)))
                .collect();
            format!("map[string]interface {{}}{{{}}}", entries.join(", "))
        }
        other => other.to_string(),
    }
}
