//! The sim's label and field selector parsers on arbitrary text.
//!
//! Input layout: text up to the first `\n` is the selector, the rest (if JSON) an object to
//! match. Invariants: no panic; parsing is deterministic; matching an object never panics.
#![no_main]

use kube_gc::sim::selectors::{FieldSelector, LabelSelector};
use libfuzzer_sys::fuzz_target;
use serde_json::Value;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let (selector, object) = text.split_once('\n').unwrap_or((text, "{}"));
    let object: Value = serde_json::from_str(object).unwrap_or(Value::Null);
    let labels = object
        .pointer("/metadata/labels")
        .and_then(Value::as_object);

    let label = LabelSelector::parse(selector);
    assert_eq!(label, LabelSelector::parse(selector));
    if let Ok(label) = &label {
        let _ = label.matches(labels);
    }
    let field = FieldSelector::parse(selector);
    assert_eq!(field, FieldSelector::parse(selector));
    if let Ok(field) = &field {
        let _ = field.matches(&object);
    }
});
