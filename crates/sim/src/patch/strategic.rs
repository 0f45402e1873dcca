//! Kubernetes strategic merge patch (`application/strategic-merge-patch+json`), the subset
//! built-in types need.
//!
//! Contract: see [`apply_strategic_merge_patch`]. Upstream reads each list's merge strategy
//! from the Go struct tags of the type; here the few lists kube-gc's objects need are listed in
//! `LIST_STRATEGIES`. Applying is atomic: on any error the target is unchanged.

use serde_json::{Map, Value};

use super::PatchError;

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

    use http::StatusCode;

    use crate::patch::arb_json;

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

    proptest! {
        #[test]
        fn strategic_patch_never_panics_and_is_atomic(target in arb_json(), patch in arb_json()) {
            let mut doc = target.clone();
            if apply_strategic_merge_patch(&mut doc, &patch).is_err() {
                prop_assert_eq!(doc, target);
            }
        }
    }
}
