//! The three PATCH flavours kube-apiserver accepts, applied to objects held as JSON values.
//!
//! Contract:
//! - [`apply_merge_patch`] is RFC 7386 JSON merge patch (`application/merge-patch+json`): it
//!   cannot fail, every document is a valid merge patch.
//! - [`apply_json_patch`] is RFC 6902 JSON patch (`application/json-patch+json`) with RFC 6901
//!   pointers. It is atomic: on any error the target is left exactly as it was.
//! - [`apply_strategic_merge_patch`] is the subset of Kubernetes' strategic merge patch
//!   (`application/strategic-merge-patch+json`) that built-in types need; see its doc for what
//!   is covered. It is atomic too. (Custom resources refuse strategic merge patch with a 415; that
//!   is the server's job, not this module's.)
//! - None of them panics, whatever the input.
//!
//! [`PatchError::status`] gives the answer the real server sends for each failure.

use http::StatusCode;
use serde_json::{Map, Value};
use thiserror::Error;

use super::status;

/// Why a patch could not be applied.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum PatchError {
    /// A JSON patch `test` operation found a different value.
    #[error("testing value {path} failed")]
    TestFailed {
        /// The pointer that was tested.
        path: String,
    },
    /// An operation names a location that does not exist.
    #[error("path not found: {path}")]
    PathNotFound {
        /// The pointer that could not be followed.
        path: String,
    },
    /// An operation or directive is invalid: unknown op, missing member, malformed pointer,
    /// list item without its merge key, unknown `$patch` directive...
    #[error("invalid patch: {0}")]
    Invalid(String),
    /// The patch document as a whole has the wrong shape (a JSON patch that is not an array, a
    /// strategic merge patch that is not an object, a `$deleteFromPrimitiveList` that is not a
    /// list).
    #[error("malformed patch document: {0}")]
    Malformed(String),
}

impl PatchError {
    /// The answer of the real server: a malformed document is a 400 `BadRequest` carrying the
    /// reason; a patch that does not apply is a 422 with upstream's generic message
    /// (exchange 37), which does not say why.
    pub fn status(&self) -> (StatusCode, Value) {
        match self {
            PatchError::Malformed(reason) => status::bad_request(reason),
            _ => status::patch_rejected(),
        }
    }
}

// ---------------------------------------------------------------------------------------------
// RFC 7386 JSON merge patch
// ---------------------------------------------------------------------------------------------

/// Applies an RFC 7386 merge patch: objects merge member by member, `null` removes a member,
/// anything else (arrays included) replaces the target.
pub fn apply_merge_patch(target: &mut Value, patch: &Value) {
    let Value::Object(members) = patch else {
        *target = patch.clone();
        return;
    };
    if !target.is_object() {
        *target = Value::Object(Map::new());
    }
    let Value::Object(object) = target else {
        return;
    };
    for (name, value) in members {
        if value.is_null() {
            object.remove(name);
        } else {
            apply_merge_patch(object.entry(name.clone()).or_insert(Value::Null), value);
        }
    }
}

// ---------------------------------------------------------------------------------------------
// RFC 6902 JSON patch
// ---------------------------------------------------------------------------------------------

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

// ---------------------------------------------------------------------------------------------
// Strategic merge patch (subset)
// ---------------------------------------------------------------------------------------------

/// How a list at a known place in a built-in object is merged.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum ListStrategy {
    /// Items are objects identified by this member; patch items merge into the item with the
    /// same key or are appended.
    MergeByKey(&'static str),
    /// Items are scalars; patch items not yet present are appended.
    MergeScalars,
}

/// The lists of built-in types that merge instead of being replaced (their `patchStrategy`
/// upstream), by dotted path from the object root. Items of a keyed list continue the path
/// with the list's name: a container's `env` is `spec.template.spec.containers.env`.
const LIST_STRATEGIES: &[(&str, ListStrategy)] = &[
    ("metadata.ownerReferences", ListStrategy::MergeByKey("uid")),
    ("metadata.finalizers", ListStrategy::MergeScalars),
    ("status.conditions", ListStrategy::MergeByKey("type")),
    ("spec.containers", ListStrategy::MergeByKey("name")),
    ("spec.initContainers", ListStrategy::MergeByKey("name")),
    ("spec.volumes", ListStrategy::MergeByKey("name")),
    ("spec.containers.env", ListStrategy::MergeByKey("name")),
    (
        "spec.template.spec.containers",
        ListStrategy::MergeByKey("name"),
    ),
    (
        "spec.template.spec.initContainers",
        ListStrategy::MergeByKey("name"),
    ),
    (
        "spec.template.spec.volumes",
        ListStrategy::MergeByKey("name"),
    ),
    (
        "spec.template.spec.containers.env",
        ListStrategy::MergeByKey("name"),
    ),
];

fn list_strategy(path: &[&str]) -> Option<ListStrategy> {
    let dotted = path.join(".");
    LIST_STRATEGIES
        .iter()
        .find(|(p, _)| *p == dotted)
        .map(|(_, s)| *s)
}

const DIRECTIVE: &str = "$patch";
const RETAIN_KEYS: &str = "$retainKeys";
const SET_ELEMENT_ORDER: &str = "$setElementOrder/";
const DELETE_FROM_PRIMITIVE_LIST: &str = "$deleteFromPrimitiveList/";

/// What the parent should do with a map after merging a patch into it.
enum MapOutcome {
    Keep,
    /// The patch said `$patch: delete` for this map.
    Delete,
}

/// Applies a strategic merge patch to a built-in object, atomically.
///
/// Covered: JSON-merge semantics for maps (`null` deletes a key); lists merged by key for the
/// paths in `LIST_STRATEGIES` (owner references by `uid`, conditions by `type`, containers,
/// init containers, volumes and env by `name`) and `metadata.finalizers` merged as a set; all
/// other lists replaced; directives `$patch: replace|delete|merge` on maps and on list items,
/// a `{"$patch": "replace"}` item replacing its whole list, `$deleteFromPrimitiveList/<list>`,
/// and `$retainKeys`. `$setElementOrder/<list>` is accepted and ignored: merged lists keep the
/// target's order with new items appended. New values are merged into empty containers, so
/// directives never end up stored in an object.
pub fn apply_strategic_merge_patch(target: &mut Value, patch: &Value) -> Result<(), PatchError> {
    let Value::Object(patch) = patch else {
        return Err(PatchError::Malformed(
            "a strategic merge patch must be a JSON object".to_owned(),
        ));
    };
    let mut working = match target {
        Value::Object(map) => map.clone(),
        _ => Map::new(),
    };
    match merge_map(&mut working, patch, &mut Vec::new())? {
        MapOutcome::Keep => *target = Value::Object(working),
        MapOutcome::Delete => *target = Value::Object(Map::new()),
    }
    Ok(())
}

fn merge_map<'p>(
    original: &mut Map<String, Value>,
    patch: &'p Map<String, Value>,
    path: &mut Vec<&'p str>,
) -> Result<MapOutcome, PatchError> {
    match patch.get(DIRECTIVE) {
        None => {}
        Some(Value::String(d)) if d == "merge" => {}
        Some(Value::String(d)) if d == "delete" => return Ok(MapOutcome::Delete),
        Some(Value::String(d)) if d == "replace" => {
            *original = patch.clone();
            original.remove(DIRECTIVE);
            return Ok(MapOutcome::Keep);
        }
        Some(other) => {
            return Err(PatchError::Invalid(format!(
                "unknown $patch directive {other}"
            )))
        }
    }
    if let Some(retained) = patch.get(RETAIN_KEYS) {
        retain_keys(original, patch, retained)?;
    }
    for (key, value) in patch {
        if key == DIRECTIVE || key == RETAIN_KEYS || key.starts_with(SET_ELEMENT_ORDER) {
            continue;
        }
        if let Some(list) = key.strip_prefix(DELETE_FROM_PRIMITIVE_LIST) {
            delete_from_primitive_list(original, list, value)?;
            continue;
        }
        path.push(key);
        let result = merge_value(original, key, value, path);
        path.pop();
        result?;
    }
    Ok(MapOutcome::Keep)
}

/// Merges the patch's `value` for `key` into `original`; `path` ends with `key`.
fn merge_value<'p>(
    original: &mut Map<String, Value>,
    key: &str,
    value: &'p Value,
    path: &mut Vec<&'p str>,
) -> Result<(), PatchError> {
    match value {
        Value::Null => {
            original.remove(key);
        }
        Value::Object(patch_map) => {
            let mut merged = match original.remove(key) {
                Some(Value::Object(map)) => map,
                _ => Map::new(),
            };
            if let MapOutcome::Keep = merge_map(&mut merged, patch_map, path)? {
                original.insert(key.to_owned(), Value::Object(merged));
            }
        }
        Value::Array(patch_items) => {
            let current = match original.remove(key) {
                Some(Value::Array(items)) => items,
                _ => Vec::new(),
            };
            let merged = merge_list(current, patch_items, path)?;
            original.insert(key.to_owned(), Value::Array(merged));
        }
        scalar => {
            original.insert(key.to_owned(), scalar.clone());
        }
    }
    Ok(())
}

fn merge_list<'p>(
    mut current: Vec<Value>,
    patch: &'p [Value],
    path: &mut Vec<&'p str>,
) -> Result<Vec<Value>, PatchError> {
    let replaces = patch
        .iter()
        .any(|item| directive_of(item) == Some("replace"));
    if replaces {
        let kept = patch.iter().filter(|item| directive_of(item).is_none());
        return Ok(kept.cloned().collect());
    }
    match list_strategy(path) {
        None => Ok(patch.to_vec()),
        Some(ListStrategy::MergeScalars) => {
            for item in patch {
                if !current.contains(item) {
                    current.push(item.clone());
                }
            }
            Ok(current)
        }
        Some(ListStrategy::MergeByKey(merge_key)) => {
            for item in patch {
                merge_keyed_item(&mut current, item, merge_key, path)?;
            }
            Ok(current)
        }
    }
}

fn merge_keyed_item<'p>(
    current: &mut Vec<Value>,
    item: &'p Value,
    merge_key: &str,
    path: &mut Vec<&'p str>,
) -> Result<(), PatchError> {
    let Value::Object(patch_item) = item else {
        return Err(PatchError::Invalid(format!(
            "items of {} must be objects",
            path.join(".")
        )));
    };
    let Some(key_value) = patch_item.get(merge_key) else {
        return Err(PatchError::Invalid(format!(
            "an item of {} does not contain its merge key {merge_key:?}",
            path.join(".")
        )));
    };
    let position = current
        .iter()
        .position(|existing| existing.get(merge_key) == Some(key_value));
    if directive_of(item) == Some("delete") {
        current.retain(|existing| existing.get(merge_key) != Some(key_value));
        return Ok(());
    }
    let mut merged = match position.map(|i| current.remove(i)) {
        Some(Value::Object(map)) => map,
        _ => Map::new(),
    };
    if let MapOutcome::Keep = merge_map(&mut merged, patch_item, path)? {
        let at = position.unwrap_or(current.len());
        current.insert(at, Value::Object(merged));
    }
    Ok(())
}

fn directive_of(item: &Value) -> Option<&str> {
    item.get(DIRECTIVE).and_then(Value::as_str)
}

fn delete_from_primitive_list(
    original: &mut Map<String, Value>,
    list: &str,
    values: &Value,
) -> Result<(), PatchError> {
    let Value::Array(doomed) = values else {
        return Err(PatchError::Malformed(format!(
            "{DELETE_FROM_PRIMITIVE_LIST}{list} must be a list"
        )));
    };
    if let Some(Value::Array(items)) = original.get_mut(list) {
        items.retain(|item| !doomed.contains(item));
    }
    Ok(())
}

/// `$retainKeys`: before merging, clear every key of the original that is not listed. The
/// patch may only set listed keys (upstream refuses the others with a 422).
fn retain_keys(
    original: &mut Map<String, Value>,
    patch: &Map<String, Value>,
    retained: &Value,
) -> Result<(), PatchError> {
    let keys: Option<Vec<&str>> = match retained {
        Value::Array(keys) => keys.iter().map(Value::as_str).collect(),
        _ => None,
    };
    let Some(keys) = keys else {
        return Err(PatchError::Malformed(format!(
            "{RETAIN_KEYS} must be a list of strings"
        )));
    };
    let unlisted = patch
        .iter()
        .filter(|(key, value)| !key.starts_with('$') && !value.is_null())
        .find(|(key, _)| !keys.contains(&key.as_str()));
    if let Some((key, _)) = unlisted {
        return Err(PatchError::Invalid(format!(
            "the patch sets {key:?}, which {RETAIN_KEYS} does not list"
        )));
    }
    original.retain(|key, _| keys.contains(&key.as_str()));
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use serde_json::json;

    // -- RFC 7386 ------------------------------------------------------------------------------

    #[test]
    fn merge_patch_matches_rfc7386_appendix_a() {
        let table = [
            (json!({"a":"b"}), json!({"a":"c"}), json!({"a":"c"})),
            (json!({"a":"b"}), json!({"b":"c"}), json!({"a":"b","b":"c"})),
            (json!({"a":"b"}), json!({"a":null}), json!({})),
            (
                json!({"a":"b","b":"c"}),
                json!({"a":null}),
                json!({"b":"c"}),
            ),
            (json!({"a":["b"]}), json!({"a":"c"}), json!({"a":"c"})),
            (json!({"a":"c"}), json!({"a":["b"]}), json!({"a":["b"]})),
            (
                json!({"a":{"b":"c"}}),
                json!({"a":{"b":"d","c":null}}),
                json!({"a":{"b":"d"}}),
            ),
            (json!({"a":[{"b":"c"}]}), json!({"a":[1]}), json!({"a":[1]})),
            (json!(["a", "b"]), json!(["c", "d"]), json!(["c", "d"])),
            (json!({"a":"b"}), json!(["c"]), json!(["c"])),
            (json!({"a":"foo"}), json!(null), json!(null)),
            (json!({"a":"foo"}), json!("bar"), json!("bar")),
            (json!({"e":null}), json!({"a":1}), json!({"e":null,"a":1})),
            (json!([1, 2]), json!({"a":"b","c":null}), json!({"a":"b"})),
            (
                json!({}),
                json!({"a":{"bb":{"ccc":null}}}),
                json!({"a":{"bb":{}}}),
            ),
        ];
        for (mut target, patch, expected) in table {
            apply_merge_patch(&mut target, &patch);
            assert_eq!(target, expected, "patch {patch}");
        }
    }

    #[test]
    fn merge_patch_removes_all_finalizers_like_kcm_does() {
        let mut job = json!({"metadata": {"name": "pi", "resourceVersion": "7",
            "finalizers": ["foregroundDeletion", "orphan"]}});
        apply_merge_patch(
            &mut job,
            &json!({"metadata": {"resourceVersion": "7", "finalizers": null}}),
        );
        assert_eq!(
            job,
            json!({"metadata": {"name": "pi", "resourceVersion": "7"}})
        );
    }

    // -- RFC 6902 ------------------------------------------------------------------------------

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
        assert_eq!(err.status(), status::patch_rejected());
        // Exchange 38: a uid guard that holds.
        let patch = json!([
            {"op": "test", "path": "/metadata/uid", "value": "u1"},
            {"op": "remove", "path": "/metadata/ownerReferences/0"},
        ]);
        apply_json_patch(&mut doc, &patch).expect("guard holds");
        assert_eq!(doc["metadata"]["ownerReferences"], json!([]));
    }

    // -- Strategic merge patch ----------------------------------------------------------------

    fn strategic(mut doc: Value, patch: Value) -> Result<Value, PatchError> {
        apply_strategic_merge_patch(&mut doc, &patch).map(|()| doc)
    }

    #[test]
    fn strategic_patch_of_exchange_39_adds_a_label() {
        let cm = json!({"kind":"ConfigMap","metadata":{"name":"owner"},"data":{"k":"v"}});
        let patched = strategic(cm, json!({"metadata":{"labels":{"s":"1"}}})).expect("applies");
        assert_eq!(
            patched,
            json!({"kind":"ConfigMap","metadata":{"name":"owner","labels":{"s":"1"}},"data":{"k":"v"}})
        );
    }

    #[test]
    fn strategic_patch_deletes_an_owner_reference_by_uid_like_kcm() {
        let doc = json!({"metadata":{"uid":"me","ownerReferences":[
            {"uid":"a","name":"x"},{"uid":"b","name":"y"},{"uid":"c","name":"z"}]}});
        let patch =
            json!({"metadata":{"ownerReferences":[{"$patch":"delete","uid":"b"}],"uid":"me"}});
        let patched = strategic(doc, patch).expect("applies");
        assert_eq!(
            patched["metadata"]["ownerReferences"],
            json!([{"uid":"a","name":"x"},{"uid":"c","name":"z"}])
        );
    }

    #[test]
    fn strategic_patch_merges_keyed_lists_in_place_and_appends_new_items() {
        let doc = json!({
            "status":{"conditions":[{"type":"Complete","status":"False"},{"type":"Failed","status":"False"}]},
            "spec":{"template":{"spec":{"containers":[
                {"name":"main","image":"a","env":[{"name":"X","value":"1"}]}]}}}
        });
        let patch = json!({
            "$setElementOrder/conditions": [{"type":"Failed"},{"type":"Complete"}],
            "status":{"conditions":[{"type":"Complete","status":"True"},{"type":"Suspended","status":"False"}]},
            "spec":{"template":{"spec":{"containers":[
                {"name":"main","env":[{"name":"Y","value":"2"}]},
                {"name":"side","image":"b"}]}}}
        });
        let patched = strategic(doc, patch).expect("applies");
        assert_eq!(
            patched["status"]["conditions"],
            json!([{"type":"Complete","status":"True"},{"type":"Failed","status":"False"},
                   {"type":"Suspended","status":"False"}])
        );
        assert_eq!(
            patched["spec"]["template"]["spec"]["containers"],
            json!([{"name":"main","image":"a","env":[{"name":"X","value":"1"},{"name":"Y","value":"2"}]},
                   {"name":"side","image":"b"}])
        );
    }

    #[test]
    fn strategic_patch_handles_finalizers_and_directives() {
        let doc = json!({"metadata":{"finalizers":["a","b"],"labels":{"x":"1","y":"2"},
            "annotations":{"k":"v"}},"data":{"l":[1,2]}});
        // Finalizers merge as a set; unknown lists are replaced.
        let patched = strategic(
            doc.clone(),
            json!({"metadata":{"finalizers":["b","c"]},"data":{"l":[3]}}),
        )
        .expect("applies");
        assert_eq!(patched["metadata"]["finalizers"], json!(["a", "b", "c"]));
        assert_eq!(patched["data"]["l"], json!([3]));
        // $deleteFromPrimitiveList removes listed finalizers only.
        let patched = strategic(
            doc.clone(),
            json!({"metadata":{"$deleteFromPrimitiveList/finalizers":["a"]}}),
        )
        .expect("applies");
        assert_eq!(patched["metadata"]["finalizers"], json!(["b"]));
        // A {"$patch":"replace"} item replaces the whole list, even a merging one.
        let patched = strategic(
            doc.clone(),
            json!({"metadata":{"finalizers":["z",{"$patch":"replace"}]}}),
        )
        .expect("applies");
        assert_eq!(patched["metadata"]["finalizers"], json!(["z"]));
        // $patch on maps: replace, delete; null deletes a key.
        let patched = strategic(
            doc.clone(),
            json!({"metadata":{
            "labels":{"$patch":"replace","z":"9"},"annotations":{"$patch":"delete"}}}),
        )
        .expect("applies");
        assert_eq!(patched["metadata"]["labels"], json!({"z":"9"}));
        assert!(patched["metadata"].get("annotations").is_none());
        let patched =
            strategic(doc.clone(), json!({"metadata":{"labels":{"x":null}}})).expect("applies");
        assert_eq!(patched["metadata"]["labels"], json!({"y":"2"}));
        // $retainKeys keeps only the listed keys, and the patch may only set listed ones.
        let err = strategic(
            doc.clone(),
            json!({"metadata":{"labels":{"$retainKeys":["y"],"x":"3"}}}),
        )
        .expect_err("x is not retained");
        assert!(matches!(err, PatchError::Invalid(_)), "{err:?}");
        let patched = strategic(
            doc,
            json!({"metadata":{"labels":{"$retainKeys":["y"],"y":"3"}}}),
        )
        .expect("applies");
        assert_eq!(patched["metadata"]["labels"], json!({"y":"3"}));
    }

    #[test]
    fn strategic_patch_never_stores_directives_in_new_values() {
        let doc = json!({"metadata":{"name":"n"}});
        let patch = json!({"metadata":{"ownerReferences":[{"$patch":"delete","uid":"gone"}],
            "labels":{"a":"1","b":null}}});
        let patched = strategic(doc, patch).expect("applies");
        assert_eq!(
            patched,
            json!({"metadata":{"name":"n","ownerReferences":[],"labels":{"a":"1"}}})
        );
    }

    #[test]
    fn strategic_patch_errors_leave_the_target_alone() {
        let doc = json!({"metadata":{"ownerReferences":[{"uid":"a"}],"labels":{"x":"1"}}});
        let cases = [
            (
                json!({"metadata":{"labels":{"x":"2"},"ownerReferences":[{"name":"no-uid"}]}}),
                "merge key",
            ),
            (
                json!({"metadata":{"labels":{"$patch":"explode"}}}),
                "directive",
            ),
            (
                json!({"metadata":{"ownerReferences":["scalar"]}}),
                "objects",
            ),
        ];
        for (patch, why) in cases {
            let mut target = doc.clone();
            let err = apply_strategic_merge_patch(&mut target, &patch).expect_err(why);
            assert!(matches!(err, PatchError::Invalid(_)), "{why}: {err:?}");
            assert_eq!(target, doc, "{why}");
        }
        let mut target = doc.clone();
        let err = apply_strategic_merge_patch(&mut target, &json!([1])).expect_err("not an object");
        assert!(matches!(err, PatchError::Malformed(_)));
        let err = apply_strategic_merge_patch(
            &mut target,
            &json!({"metadata":{"$deleteFromPrimitiveList/finalizers":"a"}}),
        )
        .expect_err("not a list");
        assert_eq!(err.status().0, StatusCode::BAD_REQUEST);
        assert_eq!(target, doc);
    }

    // -- Properties ----------------------------------------------------------------------------

    fn arb_json() -> impl Strategy<Value = Value> {
        let leaf = prop_oneof![
            Just(Value::Null),
            any::<bool>().prop_map(Value::from),
            (-5i64..5).prop_map(Value::from),
            "[a-c~/]{0,2}".prop_map(Value::from),
        ];
        leaf.prop_recursive(4, 32, 4, |inner| {
            prop_oneof![
                prop::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
                prop::collection::btree_map("[a-c$~/]{1,2}", inner, 0..4)
                    .prop_map(|m| Value::Object(m.into_iter().collect())),
            ]
        })
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
        fn merge_patch_is_idempotent(target in arb_json(), patch in arb_json()) {
            let mut once = target;
            apply_merge_patch(&mut once, &patch);
            let mut twice = once.clone();
            apply_merge_patch(&mut twice, &patch);
            prop_assert_eq!(once, twice);
        }

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

        #[test]
        fn strategic_patch_never_panics_and_is_atomic(target in arb_json(), patch in arb_json()) {
            let mut doc = target.clone();
            if apply_strategic_merge_patch(&mut doc, &patch).is_err() {
                prop_assert_eq!(doc, target);
            }
        }
    }
}
