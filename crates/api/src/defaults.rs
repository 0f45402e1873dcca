//! Serde helpers for absent, `null` and default values.
//!
//! [`null_as_default`]: Go's encoder writes `null` for a nil slice or map that lacks `omitempty` (a BOOKMARK's
//! `"containers": null`, for example). Serde's `#[serde(default)]` only covers a *missing* key, so
//! collection fields that may arrive as `null` use
//! `#[serde(default, deserialize_with = "null_as_default")]`.
//!
//! [`is_default`]: a nested struct whose fields are all unset is omitted on serialization
//! (`skip_serializing_if = "is_default"`) instead of being written as `{}`.

use serde::{Deserialize, Deserializer};

/// Deserializes `T`, turning a JSON `null` into `T::default()`.
pub fn null_as_default<'de, D, T>(deserializer: D) -> Result<T, D::Error>
where
    D: Deserializer<'de>,
    T: Deserialize<'de> + Default,
{
    Ok(Option::<T>::deserialize(deserializer)?.unwrap_or_default())
}

/// Whether `value` equals its type's default (used to omit empty nested structs).
pub(crate) fn is_default<T: Default + PartialEq>(value: &T) -> bool {
    *value == T::default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Deserialize)]
    struct Holder {
        #[serde(default, deserialize_with = "null_as_default")]
        items: Vec<u8>,
    }

    #[test]
    fn null_missing_and_present_all_decode() {
        let null: Holder = serde_json::from_str(r#"{"items":null}"#).unwrap();
        let missing: Holder = serde_json::from_str("{}").unwrap();
        let present: Holder = serde_json::from_str(r#"{"items":[1,2]}"#).unwrap();
        assert!(null.items.is_empty());
        assert!(missing.items.is_empty());
        assert_eq!(present.items, vec![1, 2]);
    }
}
