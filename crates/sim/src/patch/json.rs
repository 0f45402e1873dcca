//! RFC 6902 JSON patch (`application/json-patch+json`), with RFC 6901 JSON pointers.
//!
//! Contract: the operations `add`, `remove`, `replace`, `move`, `copy` and `test` are applied
//! in order to a copy of the target, which replaces the target only if all of them succeed: on
//! any error the target is unchanged.

use serde_json::{Map, Value};

use super::PatchError;

/// Applies an RFC 6902 JSON patch (an array of operations) atomically.
pub fn apply_json_patch(target: &mut Value, patch: &Value) -> Result<(), PatchError> {
    let Value::Array(operations) = patch else {
        return Err(PatchError::Malformed(
            "a JSON patch must be an array of operations".to_owned(),
        ));
    };
    let mut working = target.clone();
    for operation in operations {
        apply_operation(&mut working, operation)?;
    }
    *target = working;
    Ok(())
}

fn apply_operation(doc: &mut Value, operation: &Value) -> Result<(), PatchError> {
    let Value::Object(op) = operation else {
        return Err(PatchError::Malformed(
            "each JSON patch operation must be an object".to_owned(),
        ));
    };
    let name = string_member(op, "op")?;
    let path = string_member(op, "path")?;
    let tokens = parse_pointer(path)?;
    match name {
        "add" => add(doc, path, &tokens, value_member(op)?.clone()),
        "remove" => remove(doc, path, &tokens).map(drop),
        "replace" => {
            let value = value_member(op)?.clone();
            *get_mut(doc, path, &tokens)? = value;
            Ok(())
        }
        "move" => {
            let from = string_member(op, "from")?;
            let from_tokens = parse_pointer(from)?;
            if from_tokens == tokens {
                return get(doc, from, &from_tokens).map(drop);
            }
            if tokens.starts_with(&from_tokens) {
                return Err(PatchError::Invalid(format!(
                    "cannot move {from} into its own child {path}"
                )));
            }
            let value = remove(doc, from, &from_tokens)?;
            add(doc, path, &tokens, value)
        }
        "copy" => {
            let from = string_member(op, "from")?;
            let value = get(doc, from, &parse_pointer(from)?)?.clone();
            add(doc, path, &tokens, value)
        }
        "test" => {
            if json_equal(get(doc, path, &tokens)?, value_member(op)?) {
                Ok(())
            } else {
                Err(PatchError::TestFailed {
                    path: path.to_owned(),
                })
            }
        }
        other => Err(PatchError::Invalid(format!("unknown operation {other:?}"))),
    }
}

fn string_member<'a>(op: &'a Map<String, Value>, member: &str) -> Result<&'a str, PatchError> {
    op.get(member)
        .and_then(Value::as_str)
        .ok_or_else(|| PatchError::Invalid(format!("operation has no string {member:?} member")))
}

/// The `value` member; it must be present, though it may be `null`.
fn value_member(op: &Map<String, Value>) -> Result<&Value, PatchError> {
    op.get("value")
        .ok_or_else(|| PatchError::Invalid("operation has no \"value\" member".to_owned()))
}

/// Splits an RFC 6901 pointer into unescaped reference tokens (`~1` is `/`, `~0` is `~`).
fn parse_pointer(pointer: &str) -> Result<Vec<String>, PatchError> {
    if pointer.is_empty() {
        return Ok(Vec::new());
    }
    let Some(rest) = pointer.strip_prefix('/') else {
        return Err(PatchError::Invalid(format!(
            "JSON pointer {pointer:?} must start with '/'"
        )));
    };
    rest.split('/')
        .map(|t| unescape_token(pointer, t))
        .collect()
}

fn unescape_token(pointer: &str, token: &str) -> Result<String, PatchError> {
    let mut out = String::with_capacity(token.len());
    let mut chars = token.chars();
    while let Some(c) = chars.next() {
        if c != '~' {
            out.push(c);
            continue;
        }
        // Decoding `~1` before `~0` would turn `~01` into `/` instead of `~1`; one pass avoids it.
        match chars.next() {
            Some('0') => out.push('~'),
            Some('1') => out.push('/'),
            _ => {
                return Err(PatchError::Invalid(format!(
                    "JSON pointer {pointer:?} has an invalid '~' escape"
                )))
            }
        }
    }
    Ok(out)
}

/// An array index token: `0` or digits without a leading zero. `-` (the slot after the last
/// item) only exists for `add`, which handles it before calling this.
fn parse_index(pointer: &str, token: &str) -> Result<usize, PatchError> {
    if token == "-" {
        return Err(not_found(pointer));
    }
    let well_formed = !token.is_empty()
        && token.bytes().all(|b| b.is_ascii_digit())
        && (token == "0" || !token.starts_with('0'));
    let index = well_formed.then(|| token.parse::<usize>().ok()).flatten();
    index.ok_or_else(|| {
        PatchError::Invalid(format!(
            "JSON pointer {pointer:?}: {token:?} is not an array index"
        ))
    })
}

fn not_found(pointer: &str) -> PatchError {
    PatchError::PathNotFound {
        path: pointer.to_owned(),
    }
}

fn get<'a>(doc: &'a Value, pointer: &str, tokens: &[String]) -> Result<&'a Value, PatchError> {
    let mut current = doc;
    for token in tokens {
        current = match current {
            Value::Object(map) => map.get(token),
            Value::Array(items) => items.get(parse_index(pointer, token)?),
            _ => None,
        }
        .ok_or_else(|| not_found(pointer))?;
    }
    Ok(current)
}

fn get_mut<'a>(
    doc: &'a mut Value,
    pointer: &str,
    tokens: &[String],
) -> Result<&'a mut Value, PatchError> {
    let mut current = doc;
    for token in tokens {
        current = match current {
            Value::Object(map) => map.get_mut(token),
            Value::Array(items) => items.get_mut(parse_index(pointer, token)?),
            _ => None,
        }
        .ok_or_else(|| not_found(pointer))?;
    }
    Ok(current)
}

fn add(doc: &mut Value, pointer: &str, tokens: &[String], value: Value) -> Result<(), PatchError> {
    let Some((last, parent_tokens)) = tokens.split_last() else {
        *doc = value;
        return Ok(());
    };
    match get_mut(doc, pointer, parent_tokens)? {
        Value::Object(map) => {
            map.insert(last.clone(), value);
            Ok(())
        }
        Value::Array(items) if last == "-" => {
            items.push(value);
            Ok(())
        }
        Value::Array(items) => {
            let index = parse_index(pointer, last)?;
            if index > items.len() {
                return Err(not_found(pointer));
            }
            items.insert(index, value);
            Ok(())
        }
        _ => Err(not_found(pointer)),
    }
}

fn remove(doc: &mut Value, pointer: &str, tokens: &[String]) -> Result<Value, PatchError> {
    let Some((last, parent_tokens)) = tokens.split_last() else {
        return Err(PatchError::Invalid(
            "cannot remove the whole document".to_owned(),
        ));
    };
    match get_mut(doc, pointer, parent_tokens)? {
        Value::Object(map) => map.remove(last).ok_or_else(|| not_found(pointer)),
        Value::Array(items) => {
            let index = parse_index(pointer, last)?;
            if index >= items.len() {
                return Err(not_found(pointer));
            }
            Ok(items.remove(index))
        }
        _ => Err(not_found(pointer)),
    }
}

/// JSON equality as RFC 6902 `test` defines it: numbers compare by value (`1` equals `1.0`),
/// objects ignore member order.
fn json_equal(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => {
            match (x.as_i64(), y.as_i64(), x.as_u64(), y.as_u64()) {
                (Some(x), Some(y), _, _) => x == y,
                (_, _, Some(x), Some(y)) => x == y,
                _ => x.as_f64() == y.as_f64(),
            }
        }
        (Value::Array(x), Value::Array(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(x, y)| json_equal(x, y))
        }
        (Value::Object(x), Value::Object(y)) => {
            x.len() == y.len()
                && x.iter()
                    .all(|(k, v)| y.get(k).is_some_and(|w| json_equal(v, w)))
        }
        _ => a == b,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use serde_json::json;

    use http::StatusCode;

    use crate::patch::arb_json;

    fn json_patch(mut doc: Value, patch: Value) -> Result<Value, PatchError> {
        apply_json_patch(&mut doc, &patch).map(|()| doc)
    }

    #[test]
    fn json_patch_matches_rfc6902_appendix_a() {
        let ok = [
            // A.1 adding an object member
            (
                json!({"foo":"bar"}),
                json!([{"op":"add","path":"/baz","value":"qux"}]),
                json!({"baz":"qux","foo":"bar"}),
            ),
            // A.2 adding an array element
            (
                json!({"foo":["bar","baz"]}),
                json!([{"op":"add","path":"/foo/1","value":"qux"}]),
                json!({"foo":["bar","qux","baz"]}),
            ),
            // A.3 removing an object member
            (
                json!({"baz":"qux","foo":"bar"}),
                json!([{"op":"remove","path":"/baz"}]),
                json!({"foo":"bar"}),
            ),
            // A.4 removing an array element
            (
                json!({"foo":["bar","qux","baz"]}),
                json!([{"op":"remove","path":"/foo/1"}]),
                json!({"foo":["bar","baz"]}),
            ),
            // A.5 replacing a value
            (
                json!({"baz":"qux","foo":"bar"}),
                json!([{"op":"replace","path":"/baz","value":"boo"}]),
                json!({"baz":"boo","foo":"bar"}),
            ),
            // A.6 moving a value
            (
                json!({"foo":{"bar":"baz","waldo":"fred"},"qux":{"corge":"grault"}}),
                json!([{"op":"move","from":"/foo/waldo","path":"/qux/thud"}]),
                json!({"foo":{"bar":"baz"},"qux":{"corge":"grault","thud":"fred"}}),
            ),
            // A.7 moving an array element
            (
                json!({"foo":["all","grass","cows","eat"]}),
                json!([{"op":"move","from":"/foo/1","path":"/foo/3"}]),
                json!({"foo":["all","cows","eat","grass"]}),
            ),
            // A.8 testing a value: success
            (
                json!({"baz":"qux","foo":["a",2,"c"]}),
                json!([{"op":"test","path":"/baz","value":"qux"},{"op":"test","path":"/foo/1","value":2}]),
                json!({"baz":"qux","foo":["a",2,"c"]}),
            ),
            // A.10 adding a nested member object
            (
                json!({"foo":"bar"}),
                json!([{"op":"add","path":"/child","value":{"grandchild":{}}}]),
                json!({"foo":"bar","child":{"grandchild":{}}}),
            ),
            // A.11 ignoring unrecognized elements
            (
                json!({"foo":"bar"}),
                json!([{"op":"add","path":"/baz","value":"qux","xyz":123}]),
                json!({"foo":"bar","baz":"qux"}),
            ),
            // A.14 ~ escape ordering
            (
                json!({"/":9,"~1":10}),
                json!([{"op":"test","path":"/~01","value":10}]),
                json!({"/":9,"~1":10}),
            ),
            // A.16 adding an array value
            (
                json!({"foo":["bar"]}),
                json!([{"op":"add","path":"/foo/-","value":["abc","def"]}]),
                json!({"foo":["bar",["abc","def"]]}),
            ),
            // Beyond the appendix: copy, whole-document replace, numeric equality in test.
            (
                json!({"a":{"b":1}}),
                json!([{"op":"copy","from":"/a","path":"/c"}]),
                json!({"a":{"b":1},"c":{"b":1}}),
            ),
            (
                json!({"a":1}),
                json!([{"op":"replace","path":"","value":[1]}]),
                json!([1]),
            ),
            (
                json!({"n":1}),
                json!([{"op":"test","path":"/n","value":1.0}]),
                json!({"n":1}),
            ),
        ];
        for (doc, patch, expected) in ok {
            assert_eq!(
                json_patch(doc, patch.clone()),
                Ok(expected),
                "patch {patch}"
            );
        }

        // A.9 testing a value: error
        let err = json_patch(
            json!({"baz":"qux"}),
            json!([{"op":"test","path":"/baz","value":"bar"}]),
        );
        assert_eq!(
            err,
            Err(PatchError::TestFailed {
                path: "/baz".into()
            })
        );
        // A.12 adding to a nonexistent target
        let err = json_patch(
            json!({"foo":"bar"}),
            json!([{"op":"add","path":"/baz/bat","value":"qux"}]),
        );
        assert_eq!(
            err,
            Err(PatchError::PathNotFound {
                path: "/baz/bat".into()
            })
        );
        // A.15 comparing strings and numbers
        let err = json_patch(
            json!({"/":9,"~1":10}),
            json!([{"op":"test","path":"/~01","value":"10"}]),
        );
        assert_eq!(
            err,
            Err(PatchError::TestFailed {
                path: "/~01".into()
            })
        );
    }

    #[test]
    fn json_patch_rejects_invalid_operations() {
        let doc = json!({"a":[1,2],"b":{}});
        let invalid = [
            json!([{"op":"add","path":"/x"}]),
            json!([{"op":"frobnicate","path":"/a"}]),
            json!([{"path":"/a"}]),
            json!([{"op":"remove","path":"a"}]),
            json!([{"op":"remove","path":"/a/01"}]),
            json!([{"op":"remove","path":"/a/x"}]),
            json!([{"op":"remove","path":"/b/~2"}]),
            json!([{"op":"remove","path":""}]),
            json!([{"op":"move","from":"/b","path":"/b/c"}]),
            json!([{"op":"copy","path":"/c"}]),
        ];
        for patch in invalid {
            let err = json_patch(doc.clone(), patch.clone()).expect_err("invalid");
            assert!(matches!(err, PatchError::Invalid(_)), "{patch}: {err:?}");
            assert_eq!(err.status().0, StatusCode::UNPROCESSABLE_ENTITY);
        }
        let missing = [
            json!([{"op":"remove","path":"/a/2"}]),
            json!([{"op":"add","path":"/a/3","value":0}]),
            json!([{"op":"replace","path":"/zz","value":0}]),
            json!([{"op":"remove","path":"/a/-"}]),
            json!([{"op":"test","path":"/zz","value":0}]),
            json!([{"op":"add","path":"/a/0/x","value":0}]),
        ];
        for patch in missing {
            let err = json_patch(doc.clone(), patch.clone()).expect_err("missing");
            assert!(
                matches!(err, PatchError::PathNotFound { .. }),
                "{patch}: {err:?}"
            );
        }
        let malformed = json_patch(doc.clone(), json!({"op":"add"})).expect_err("not an array");
        assert!(matches!(malformed, PatchError::Malformed(_)));
        assert_eq!(malformed.status().0, StatusCode::BAD_REQUEST);
        assert!(json_patch(doc, json!([1])).is_err());
    }

    #[test]
    fn json_patch_is_atomic_and_reproduces_exchanges_37_38() {
        // Exchange 37: the test fails, so the removal before it must not stick either.
        let original = json!({"metadata": {"resourceVersion": "219", "uid": "u1",
            "ownerReferences": [{"uid": "o1"}]}});
        let mut doc = original.clone();
        let patch = json!([
            {"op": "remove", "path": "/metadata/ownerReferences/0"},
            {"op": "test", "path": "/metadata/resourceVersion", "value": "1"},
        ]);
        let err = apply_json_patch(&mut doc, &patch).expect_err("test fails");
        assert_eq!(doc, original);
        assert_eq!(err.status(), crate::status::patch_rejected());
        // Exchange 38: a uid guard that holds.
        let patch = json!([
            {"op": "test", "path": "/metadata/uid", "value": "u1"},
            {"op": "remove", "path": "/metadata/ownerReferences/0"},
        ]);
        apply_json_patch(&mut doc, &patch).expect("guard holds");
        assert_eq!(doc["metadata"]["ownerReferences"], json!([]));
    }

    fn arb_pointer() -> impl Strategy<Value = String> {
        prop::collection::vec("[a-c0-2~/-]{0,2}", 0..4)
            .prop_map(|tokens| tokens.iter().map(|t| format!("/{t}")).collect::<String>())
    }

    fn arb_operation() -> impl Strategy<Value = Value> {
        let op = prop_oneof![
            Just("add"),
            Just("remove"),
            Just("replace"),
            Just("move"),
            Just("copy"),
            Just("test"),
            Just("bogus"),
        ];
        (op, arb_pointer(), arb_pointer(), arb_json()).prop_map(|(op, path, from, value)| {
            serde_json::json!({"op": op, "path": path, "from": from, "value": value})
        })
    }

    proptest! {
        #[test]
        fn json_patch_changes_nothing_when_it_fails(
            target in arb_json(),
            ops in prop::collection::vec(arb_operation(), 0..5),
        ) {
            let mut doc = target.clone();
            if apply_json_patch(&mut doc, &Value::Array(ops)).is_err() {
                prop_assert_eq!(doc, target);
            }
        }
    }
}
