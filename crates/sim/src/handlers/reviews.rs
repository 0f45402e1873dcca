//! TokenReview and SubjectAccessReview, as a real API server answers them (exchanges 86–92):
//! created with a POST, answered at once with 201 and a `status`, stored nowhere.
//!
//! - **Tokens.** The server's own token (`SimConfig::with_token`) belongs to `admin` of
//!   `system:masters`, as the kit's static token does (exchange 86); each token of
//!   [`SimConfig::with_user`](crate::SimConfig::with_user) to its user; every authenticated
//!   user is also in `system:authenticated`. Any other token belongs to no one: no
//!   `authenticated`, an empty user and `invalid bearer token` (exchange 88).
//! - **Access.** Only to non-resource paths. `system:masters` may do anything (exchange 92);
//!   otherwise a user, or one of its groups, may `get` the paths
//!   [`SimConfig::allowing`](crate::SimConfig::allowing) grants it, a trailing `*`
//!   matching everything under it — RBAC's `nonResourceURLs` rule (exchanges 89–91) — and
//!   every authenticated user the discovery, health and version paths RBAC's default roles
//!   grant them ([`DEFAULT_NON_RESOURCE_RULES`], exchange 286).
//! - **Self reviews** (`kubectl auth can-i`) are the `self_reviews` module's, which answers
//!   them with [`echoed`] and [`non_resource_allowed`].

use http::{Method, Response, StatusCode};
use serde_json::{json, Value};

use super::response::{self, Body};
use super::{Context, Incoming};
use crate::status;

/// The path a TokenReview is created at.
pub const TOKEN_REVIEWS: &str = "/apis/authentication.k8s.io/v1/tokenreviews";
/// The path a SubjectAccessReview is created at.
pub const ACCESS_REVIEWS: &str = "/apis/authorization.k8s.io/v1/subjectaccessreviews";

/// A user the simulated server knows by a bearer token.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SimUser {
    /// The token.
    pub token: String,
    /// The user's name.
    pub username: String,
    /// The user's groups (`system:authenticated` is added).
    pub groups: Vec<String>,
}

/// A grant of `get` on non-resource paths to a user or a group.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NonResourceGrant {
    /// A user's name or a group's.
    pub subject: String,
    /// The paths (a trailing `*`: everything under it).
    pub paths: Vec<String>,
}

/// The non-resource paths RBAC's default cluster roles let every authenticated user `get`
/// (`system:discovery`, `system:public-info-viewer`), and service accounts the issuer
/// discovery paths too (`system:service-account-issuer-discovery`), in the order a rules
/// review lists them (exchange 286).
pub const DEFAULT_NON_RESOURCE_RULES: [(&str, &[&str]); 3] = [
    (
        "system:authenticated",
        &[
            "/api",
            "/api/*",
            "/apis",
            "/apis/*",
            "/healthz",
            "/livez",
            "/openapi",
            "/openapi/*",
            "/readyz",
            "/version",
            "/version/",
        ],
    ),
    (
        "system:serviceaccounts",
        &[
            "/.well-known/openid-configuration",
            "/.well-known/openid-configuration/",
            "/openid/v1/jwks",
            "/openid/v1/jwks/",
        ],
    ),
    (
        "system:authenticated",
        &["/healthz", "/livez", "/readyz", "/version", "/version/"],
    ),
];

/// The answer to `incoming` if it creates a TokenReview or a SubjectAccessReview; `None` for
/// any other request.
pub fn answer(ctx: &Context, incoming: &Incoming) -> Option<Response<Body>> {
    if incoming.method != Method::POST {
        return None;
    }
    let review = match incoming.path.as_str() {
        TOKEN_REVIEWS => token_review,
        ACCESS_REVIEWS => access_review,
        _ => return None,
    };
    Some(echoed(incoming, |spec| review(ctx, spec)))
}

/// A review's answer: 201, the review sent with `status` judged from its `spec`, stored
/// nowhere; a body that is not a review is a 400.
pub fn echoed(incoming: &Incoming, status: impl FnOnce(&Value) -> Value) -> Response<Body> {
    let body = match incoming.json_body() {
        Ok(Some(body)) => body,
        Ok(None) => return response::status(status::bad_request("no review in the body")),
        Err(e) => return response::status(status::bad_request(&e.to_string())),
    };
    let mut answer = body.clone();
    answer["metadata"] = json!({"creationTimestamp": null});
    answer["status"] = status(&body["spec"]);
    response::json(StatusCode::CREATED, &answer)
}

/// Whose the token of `spec` is.
fn token_review(ctx: &Context, spec: &Value) -> Value {
    let token = spec["token"].as_str().unwrap_or_default();
    let owner = if ctx.token.as_deref() == Some(token) && !token.is_empty() {
        Some((
            "admin",
            "admin-uid".to_owned(),
            vec!["system:masters".to_owned()],
        ))
    } else {
        ctx.users
            .iter()
            .find(|user| user.token == token)
            .map(|user| {
                (
                    user.username.as_str(),
                    format!("{}-uid", user.username),
                    user.groups.clone(),
                )
            })
    };
    match owner {
        Some((username, uid, mut groups)) => {
            groups.push("system:authenticated".to_owned());
            json!({"authenticated": true,
                "user": {"username": username, "uid": uid, "groups": groups},
                "audiences": ["https://kubernetes.default.svc"]})
        }
        None => json!({"user": {}, "error": "invalid bearer token"}),
    }
}

/// Whether the user of `spec` may do its verb on its non-resource path.
fn access_review(ctx: &Context, spec: &Value) -> Value {
    let user = spec["user"].as_str().unwrap_or_default();
    let groups: Vec<&str> = spec["groups"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .collect();
    let path = spec["nonResourceAttributes"]["path"].as_str();
    let verb = spec["nonResourceAttributes"]["verb"].as_str();
    let allowed = match (path, verb) {
        (Some(path), Some(verb)) => non_resource_allowed(ctx, user, &groups, path, verb),
        _ => groups.contains(&"system:masters"),
    };
    json!({"allowed": allowed})
}

/// Whether `user` of `groups` may `verb` the non-resource `path`: `system:masters` anything,
/// others `get` on what [`DEFAULT_NON_RESOURCE_RULES`] give their groups and what
/// [`SimConfig::allowing`](crate::SimConfig::allowing) grants them.
pub fn non_resource_allowed(
    ctx: &Context,
    user: &str,
    groups: &[&str],
    path: &str,
    verb: &str,
) -> bool {
    if groups.contains(&"system:masters") {
        return true;
    }
    if verb != "get" {
        return false;
    }
    let by_default = DEFAULT_NON_RESOURCE_RULES
        .iter()
        .any(|(group, paths)| groups.contains(group) && paths.iter().any(|p| covers(p, path)));
    by_default
        || ctx.grants.iter().any(|grant| {
            (grant.subject == user || groups.contains(&grant.subject.as_str()))
                && grant.paths.iter().any(|p| covers(p, path))
        })
}

/// Whether the RBAC `nonResourceURLs` entry `granted` covers `path`.
fn covers(granted: &str, path: &str) -> bool {
    match granted.strip_suffix('*') {
        Some(prefix) => path.starts_with(prefix),
        None => granted == path,
    }
}
