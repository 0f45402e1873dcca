//! RFC 7386 JSON merge patch (`application/merge-patch+json`).
//!
//! Contract: objects merge member by member, `null` removes a member, anything else (arrays
//! included) replaces the target. Every JSON document is a valid merge patch, so applying one
//! cannot fail.

use serde_json::{Map, Value};

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

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use serde_json::json;

    use crate::patch::arb_json;

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

    proptest! {
        #[test]
        fn merge_patch_is_idempotent(target in arb_json(), patch in arb_json()) {
            let mut once = target;
            apply_merge_patch(&mut once, &patch);
            let mut twice = once.clone();
            apply_merge_patch(&mut twice, &patch);
            prop_assert_eq!(once, twice);
        }
    }
}
