//! The two reviews a component delegates its HTTP authentication and authorization to:
//! authentication.k8s.io/v1 [`TokenReview`] ("whose is this bearer token?") and
//! authorization.k8s.io/v1 [`SubjectAccessReview`] ("may this user GET this path?"), as
//! kube-controller-manager does for its secure port.
//!
//! Contract: both are created (POST) and answered in the same response, 201 with a `status`
//! (exchanges 86–92); nothing is stored. A token no authenticator knows is not an error: its
//! status has no `authenticated` (false) and an `error` message (exchange 88). A denial has
//! `allowed` false and often no reason (exchange 89). Only the fields kube-gc sends or reads are
//! kept.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::defaults::null_as_default;
use super::meta::{ObjectMeta, TypeMeta};
use super::resource::{HasMetadata, Resource};

/// A TokenReview: the token to review, and what the server found.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct TokenReview {
    /// `authentication.k8s.io/v1` + `TokenReview`.
    #[serde(flatten)]
    pub types: TypeMeta,
    /// Always empty: a review is not stored.
    #[serde(default, skip_serializing_if = "is_empty_meta")]
    pub metadata: ObjectMeta,
    /// The token.
    pub spec: TokenReviewSpec,
    /// The answer.
    #[serde(default, deserialize_with = "null_as_default", skip_serializing)]
    pub status: TokenReviewStatus,
}

/// What to review. Its `Debug` does not show the token.
#[derive(Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct TokenReviewSpec {
    /// The bearer token, as the client presented it.
    pub token: String,
}

impl std::fmt::Debug for TokenReviewSpec {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TokenReviewSpec")
            .field("token", &"<redacted>")
            .finish()
    }
}

/// The server's answer to a [`TokenReview`].
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct TokenReviewStatus {
    /// Whether the token belongs to someone (absent: no).
    #[serde(default)]
    pub authenticated: bool,
    /// Whose it is.
    #[serde(default, deserialize_with = "null_as_default")]
    pub user: UserInfo,
    /// Why it could not be reviewed or belongs to no one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

/// A user as the API server knows it: name, uid, groups and extras.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct UserInfo {
    /// e.g. `system:serviceaccount:monitoring:prometheus`.
    #[serde(default)]
    pub username: String,
    /// Unique across time.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub uid: String,
    /// e.g. `system:serviceaccounts`, `system:authenticated`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub groups: Vec<String>,
    /// What authenticators add (the pod a service account token is bound to...).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub extra: BTreeMap<String, Vec<String>>,
}

impl TokenReview {
    /// A review of `token`.
    pub fn of(token: impl Into<String>) -> Self {
        TokenReview {
            types: TypeMeta::new(Self::API_VERSION, Self::KIND),
            metadata: ObjectMeta::default(),
            spec: TokenReviewSpec {
                token: token.into(),
            },
            status: TokenReviewStatus::default(),
        }
    }
}

/// A SubjectAccessReview of a non-resource path: may this user do this verb on this path?
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct SubjectAccessReview {
    /// `authorization.k8s.io/v1` + `SubjectAccessReview`.
    #[serde(flatten)]
    pub types: TypeMeta,
    /// Always empty: a review is not stored.
    #[serde(default, skip_serializing_if = "is_empty_meta")]
    pub metadata: ObjectMeta,
    /// Who asks for what.
    pub spec: SubjectAccessReviewSpec,
    /// The answer.
    #[serde(default, deserialize_with = "null_as_default", skip_serializing)]
    pub status: SubjectAccessReviewStatus,
}

/// Who asks for what.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SubjectAccessReviewSpec {
    /// The path and verb asked for.
    pub non_resource_attributes: NonResourceAttributes,
    /// The user's name.
    pub user: String,
    /// The user's groups.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub groups: Vec<String>,
    /// The user's uid.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub uid: String,
    /// The user's extras.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub extra: BTreeMap<String, Vec<String>>,
}

/// A non-resource path and the verb on it (`get` for a GET or HEAD).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct NonResourceAttributes {
    /// e.g. `/metrics`.
    pub path: String,
    /// e.g. `get`.
    pub verb: String,
}

/// The answer to a [`SubjectAccessReview`].
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct SubjectAccessReviewStatus {
    /// Whether the action is allowed.
    #[serde(default)]
    pub allowed: bool,
    /// Why, when the authorizer says (RBAC names the binding that allowed it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// An error met while authorizing.
    #[serde(
        default,
        rename = "evaluationError",
        skip_serializing_if = "Option::is_none"
    )]
    pub evaluation_error: Option<String>,
}

impl SubjectAccessReview {
    /// A review of whether `user` may do `verb` on the non-resource `path`.
    pub fn non_resource(user: &UserInfo, path: &str, verb: &str) -> Self {
        SubjectAccessReview {
            types: TypeMeta::new(Self::API_VERSION, Self::KIND),
            metadata: ObjectMeta::default(),
            spec: SubjectAccessReviewSpec {
                non_resource_attributes: NonResourceAttributes {
                    path: path.to_owned(),
                    verb: verb.to_owned(),
                },
                user: user.username.clone(),
                groups: user.groups.clone(),
                uid: user.uid.clone(),
                extra: user.extra.clone(),
            },
            status: SubjectAccessReviewStatus::default(),
        }
    }
}

fn is_empty_meta(meta: &ObjectMeta) -> bool {
    *meta == ObjectMeta::default()
}

macro_rules! cluster_review {
    ($type:ty, $group:literal, $kind:literal, $plural:literal) => {
        impl HasMetadata for $type {
            fn metadata(&self) -> &ObjectMeta {
                &self.metadata
            }
            fn metadata_mut(&mut self) -> &mut ObjectMeta {
                &mut self.metadata
            }
        }

        impl Resource for $type {
            const GROUP: &'static str = $group;
            const VERSION: &'static str = "v1";
            const API_VERSION: &'static str = concat!($group, "/v1");
            const KIND: &'static str = $kind;
            const PLURAL: &'static str = $plural;
            const NAMESPACED: bool = false;
        }
    };
}

cluster_review!(
    TokenReview,
    "authentication.k8s.io",
    "TokenReview",
    "tokenreviews"
);
cluster_review!(
    SubjectAccessReview,
    "authorization.k8s.io",
    "SubjectAccessReview",
    "subjectaccessreviews"
);

#[cfg(test)]
mod tests {
    use super::*;

    use kube_gc_fixtures::exchange as captured;

    #[test]
    fn token_reviews_read_as_the_real_server_answers_them() {
        let admin: TokenReview =
            serde_json::from_value(captured("86-")["response"]["body"].clone()).expect("86");
        assert!(admin.status.authenticated);
        assert_eq!(admin.status.user.username, "admin");
        assert_eq!(admin.status.user.uid, "admin-uid");
        assert_eq!(
            admin.status.user.groups,
            ["system:masters", "system:authenticated"]
        );
        let service_account: TokenReview =
            serde_json::from_value(captured("87-")["response"]["body"].clone()).expect("87");
        assert_eq!(
            service_account.status.user.username,
            "system:serviceaccount:capture-authn:scraper"
        );
        let unknown: TokenReview =
            serde_json::from_value(captured("88-")["response"]["body"].clone()).expect("88");
        assert!(!unknown.status.authenticated);
        assert_eq!(
            unknown.status.error.as_deref(),
            Some("invalid bearer token")
        );
    }

    #[test]
    fn token_reviews_are_sent_as_the_real_server_takes_them() {
        let sent = serde_json::to_value(TokenReview::of("<redacted>")).expect("encode");
        assert_eq!(sent, captured("86-")["request"]["body"]);
        assert!(!format!("{:?}", TokenReview::of("s3cr3t")).contains("s3cr3t"));
    }

    #[test]
    fn subject_access_reviews_match_exchanges_89_to_92() {
        let user = UserInfo {
            username: "system:serviceaccount:capture-authn:scraper".into(),
            groups: vec![
                "system:serviceaccounts".into(),
                "system:serviceaccounts:capture-authn".into(),
                "system:authenticated".into(),
            ],
            ..UserInfo::default()
        };
        let sent =
            serde_json::to_value(SubjectAccessReview::non_resource(&user, "/metrics", "get"))
                .expect("encode");
        assert_eq!(sent, captured("89-")["request"]["body"]);
        for (prefix, allowed) in [("89-", false), ("90-", true), ("91-", false), ("92-", true)] {
            let answer: SubjectAccessReview =
                serde_json::from_value(captured(prefix)["response"]["body"].clone())
                    .expect("answer");
            assert_eq!(answer.status.allowed, allowed, "{prefix}");
        }
    }
}
