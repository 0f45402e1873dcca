//! [`OwnerReference`]: the link from a dependent object to an object it belongs to.
//!
//! Contract: all four identity fields are required by the server (a reference with an empty
//! `uid` is rejected with 422); the two flags are optional and omitted when `None`. An owner
//! reference names its owner by `apiVersion`, `kind` and `name` and pins it by `uid`; it carries no
//! namespace, because a namespaced owner must live in the dependent's namespace.

use serde::{Deserialize, Serialize};

/// One entry of `metadata.ownerReferences` (`metav1.OwnerReference`).
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct OwnerReference {
    /// The owner's `group/version` (or `v1` for the core group).
    pub api_version: String,
    /// The owner's kind, e.g. `Job`.
    pub kind: String,
    /// The owner's name.
    pub name: String,
    /// The owner's UID: an owner with the same name but another UID is a different object.
    pub uid: String,
    /// Whether the owner is the managing controller of this object.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub controller: Option<bool>,
    /// With foreground deletion, whether the owner must wait for this dependent to be deleted.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub block_owner_deletion: Option<bool>,
}

impl OwnerReference {
    /// `controller: true`.
    pub fn is_controller(&self) -> bool {
        self.controller == Some(true)
    }

    /// `blockOwnerDeletion: true`.
    pub fn blocks_owner_deletion(&self) -> bool {
        self.block_owner_deletion == Some(true)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn flags_are_omitted_when_unset_and_kept_when_set() {
        let mut r = OwnerReference {
            api_version: "v1".into(),
            kind: "ConfigMap".into(),
            name: "owner".into(),
            uid: "u1".into(),
            ..Default::default()
        };
        assert_eq!(
            serde_json::to_string(&r).ok(),
            Some(r#"{"apiVersion":"v1","kind":"ConfigMap","name":"owner","uid":"u1"}"#.into())
        );
        r.controller = Some(true);
        r.block_owner_deletion = Some(false);
        let json = serde_json::to_value(&r).unwrap();
        assert_eq!(json["controller"], true);
        assert_eq!(json["blockOwnerDeletion"], false);
        assert!(r.is_controller() && !r.blocks_owner_deletion());
    }

    #[test]
    fn a_reference_without_uid_does_not_decode() {
        let err = serde_json::from_str::<OwnerReference>(
            r#"{"apiVersion":"v1","kind":"ConfigMap","name":"owner"}"#,
        );
        assert!(err.is_err());
    }
}
