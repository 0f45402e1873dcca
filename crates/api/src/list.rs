//! Lists: [`ListMeta`] and the generic [`List<T>`] a LIST request returns.
//!
//! Contract: `items` may be missing or `null` (an empty list); items inside a list usually carry
//! no `apiVersion`/`kind` of their own. `continue` and `remainingItemCount` are present only on a
//! paged response that has more pages.

use serde::{Deserialize, Serialize};

use super::defaults::null_as_default;
use super::meta::TypeMeta;

/// The `metadata` of a list, and of a [`Status`](super::Status) (`metav1.ListMeta`).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ListMeta {
    /// The resourceVersion the list is consistent with; a watch started from it misses nothing.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resource_version: Option<String>,
    /// Opaque token for the next page; `None` on the last page.
    #[serde(rename = "continue", default, skip_serializing_if = "Option::is_none")]
    pub continue_token: Option<String>,
    /// An estimate of how many items remain after this page.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub remaining_item_count: Option<i64>,
}

/// A list of objects of one type (`JobList`, `PartialObjectMetadataList`, ...).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(bound(deserialize = "T: Deserialize<'de>"))]
pub struct List<T> {
    /// e.g. `batch/v1` + `JobList`.
    #[serde(flatten)]
    pub types: TypeMeta,
    /// The list's resourceVersion and paging state.
    #[serde(default)]
    pub metadata: ListMeta,
    /// The objects, in the server's order.
    #[serde(default = "Vec::new", deserialize_with = "null_as_default")]
    pub items: Vec<T>,
}

impl<T> Default for List<T> {
    fn default() -> Self {
        List {
            types: TypeMeta::default(),
            metadata: ListMeta::default(),
            items: Vec::new(),
        }
    }
}

impl<T> List<T> {
    /// The continue token for the next page, if there is one (an empty token means none).
    pub fn next_page(&self) -> Option<&str> {
        self.metadata
            .continue_token
            .as_deref()
            .filter(|t| !t.is_empty())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn null_or_missing_items_is_an_empty_list() {
        for body in [r#"{"metadata":{}}"#, r#"{"items":null}"#, "{}"] {
            let list: List<serde_json::Value> = serde_json::from_str(body).unwrap();
            assert!(list.items.is_empty(), "{body}");
        }
    }

    #[test]
    fn continue_token_round_trips_under_its_wire_name() {
        let list: List<u8> = serde_json::from_str(
            r#"{"metadata":{"continue":"abc","remainingItemCount":2},"items":[1]}"#,
        )
        .unwrap();
        assert_eq!(list.next_page(), Some("abc"));
        assert_eq!(list.metadata.remaining_item_count, Some(2));
        let back = serde_json::to_value(&list).unwrap();
        assert_eq!(back["metadata"]["continue"], "abc");
        let last: List<u8> = serde_json::from_str(r#"{"metadata":{"continue":""}}"#).unwrap();
        assert_eq!(last.next_page(), None);
    }
}
