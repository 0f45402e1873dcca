//! [`DelegatedAuth`]: who may read the secure port, asked of the API server as
//! kube-controller-manager asks it — a TokenReview of the request's bearer token ("whose is
//! it?"), then a SubjectAccessReview of the path ("may they GET it?") — each answer cached for
//! a while. `/metrics` and `/debug/*` name the objects kube-gc handles: they are not for anyone
//! who can reach the port.
//!
//! Contract:
//! - Paths in `--authorization-always-allow-paths` (default `/healthz`, `/readyz`, `/livez`,
//!   which kubelet probes without credentials) are served to anyone; a path ending in `*`
//!   allows everything under it.
//! - Any other request without `Authorization: Bearer <token>`, or with a token the API server
//!   does not know, gets 401 — the API server's own `Unauthorized` Status (exchange 41). A
//!   review the server could not answer is a 401 too, and logged.
//! - An authenticated user without the right (RBAC: `nonResourceURLs` with verb `get`) gets 403,
//!   naming user, verb and path as the API server's own 403 does. An authorization the server
//!   could not answer is a 500, and logged.
//! - Answers are remembered for `--authentication-token-webhook-cache-ttl` (by a keyed hash of
//!   the token: the cache holds no token) and `--authorization-webhook-cache-authorized-ttl` /
//!   `-unauthorized-ttl` (by user, verb and path), 10 s each by default, as kcm's.
//! - Client certificates (kcm's `--client-ca-file`) are not accepted: a scraper presents its
//!   service account's token.

mod cache;

use std::collections::hash_map::RandomState;
use std::hash::BuildHasher;
use std::time::Duration;

use bytes::Bytes;
use http::{header, HeaderMap, Method, Response, StatusCode};
use http_body_util::Full;
use parking_lot::Mutex;
use serde_json::json;
use tokio::time::Instant;

use kube_gc_api::{SubjectAccessReview, TokenReview, UserInfo};
use kube_gc_client::availability::warn_unless_unavailable;
use kube_gc_client::{Api, Client, PostParams};

pub use cache::ExpiringCache;

/// kube-controller-manager's `--authorization-always-allow-paths`.
pub const DEFAULT_ALWAYS_ALLOW_PATHS: [&str; 3] = ["/healthz", "/readyz", "/livez"];

/// How long answers are remembered by default (kcm's 10 s for each).
pub const DEFAULT_CACHE_TTL: Duration = Duration::from_secs(10);

/// Answers remembered at most, of each kind.
const CACHE_CAPACITY: usize = 4096;

/// How the secure port decides, from the flags.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AuthOptions {
    /// Paths served without authentication or authorization (`*` at the end: a prefix).
    pub always_allow_paths: Vec<String>,
    /// How long a token's review is remembered.
    pub token_ttl: Duration,
    /// How long an allowed access is remembered.
    pub authorized_ttl: Duration,
    /// How long a denied access is remembered.
    pub unauthorized_ttl: Duration,
}

impl Default for AuthOptions {
    fn default() -> Self {
        AuthOptions {
            always_allow_paths: DEFAULT_ALWAYS_ALLOW_PATHS.map(str::to_owned).to_vec(),
            token_ttl: DEFAULT_CACHE_TTL,
            authorized_ttl: DEFAULT_CACHE_TTL,
            unauthorized_ttl: DEFAULT_CACHE_TTL,
        }
    }
}

impl AuthOptions {
    /// Whether `path` is served to anyone.
    pub fn always_allows(&self, path: &str) -> bool {
        self.always_allow_paths
            .iter()
            .any(|allowed| match allowed.strip_suffix('*') {
                Some(prefix) => path.starts_with(prefix),
                None => path == allowed,
            })
    }
}

/// What became of a request.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Verdict {
    /// Serve it.
    Allowed,
    /// No credentials, or none the API server knows: 401.
    Unauthenticated,
    /// The user may not `verb` the path: 403.
    Forbidden {
        /// Who asked.
        user: String,
        /// What for (`get`).
        verb: String,
        /// Where.
        path: String,
    },
    /// The API server could not say whether the user may: 500.
    Undecided(String),
}

/// A token, as the cache knows it: two independent keyed hashes of it, never the token.
type TokenKey = (u64, u64);

/// Delegated authentication and authorization of the secure port's requests.
pub struct DelegatedAuth {
    tokens: Api<TokenReview>,
    access: Api<SubjectAccessReview>,
    options: AuthOptions,
    /// Who each token was, or `None` for a token nobody owns.
    users: Mutex<ExpiringCache<TokenKey, Option<UserInfo>>>,
    decisions: Mutex<ExpiringCache<(UserInfo, String, String), bool>>,
    keys: (RandomState, RandomState),
}

impl std::fmt::Debug for DelegatedAuth {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DelegatedAuth")
            .field("options", &self.options)
            .finish_non_exhaustive()
    }
}

impl DelegatedAuth {
    /// Asks the API server behind `client` (which needs `create` on `tokenreviews` and
    /// `subjectaccessreviews`: the `system:auth-delegator` ClusterRole).
    pub fn new(client: Client, options: AuthOptions) -> Self {
        DelegatedAuth {
            tokens: Api::all(client.clone()),
            access: Api::all(client),
            options,
            users: Mutex::new(ExpiringCache::new(CACHE_CAPACITY)),
            decisions: Mutex::new(ExpiringCache::new(CACHE_CAPACITY)),
            keys: (RandomState::new(), RandomState::new()),
        }
    }

    /// Whether a `method` request for `path` with `headers` may be served.
    pub async fn check(&self, method: &Method, path: &str, headers: &HeaderMap) -> Verdict {
        if self.options.always_allows(path) {
            return Verdict::Allowed;
        }
        let Some(token) = bearer_token(headers) else {
            return Verdict::Unauthenticated;
        };
        let Some(user) = self.user(token).await else {
            return Verdict::Unauthenticated;
        };
        let verb = verb_of(method);
        match self.may(&user, &verb, path).await {
            Ok(true) => Verdict::Allowed,
            Ok(false) => Verdict::Forbidden {
                user: user.username,
                verb,
                path: path.to_owned(),
            },
            Err(why) => Verdict::Undecided(why),
        }
    }

    /// Who `token` belongs to; `None` if nobody (or the review failed).
    async fn user(&self, token: &str) -> Option<UserInfo> {
        let key = (self.keys.0.hash_one(token), self.keys.1.hash_one(token));
        if let Some(known) = self.users.lock().get(&key, Instant::now()) {
            return known;
        }
        match self
            .tokens
            .create(&PostParams::default(), &TokenReview::of(token))
            .await
        {
            Ok(review) => {
                let user = review.status.authenticated.then_some(review.status.user);
                let ttl = self.options.token_ttl;
                self.users
                    .lock()
                    .insert(key, user.clone(), ttl, Instant::now());
                user
            }
            Err(e) => {
                warn_unless_unavailable!(e, err = %e, "could not review a token presented to the secure port; answering 401");
                None
            }
        }
    }

    /// Whether `user` may `verb` the non-resource `path`.
    async fn may(&self, user: &UserInfo, verb: &str, path: &str) -> Result<bool, String> {
        let key = (user.clone(), verb.to_owned(), path.to_owned());
        if let Some(known) = self.decisions.lock().get(&key, Instant::now()) {
            return Ok(known);
        }
        let review = SubjectAccessReview::non_resource(user, path, verb);
        match self.access.create(&PostParams::default(), &review).await {
            Ok(answer) => {
                let allowed = answer.status.allowed;
                let ttl = if allowed {
                    self.options.authorized_ttl
                } else {
                    self.options.unauthorized_ttl
                };
                self.decisions
                    .lock()
                    .insert(key, allowed, ttl, Instant::now());
                Ok(allowed)
            }
            Err(e) => {
                warn_unless_unavailable!(e, err = %e, "could not review an access to the secure port; answering 500");
                Err(e.to_string())
            }
        }
    }
}

/// The token of an `Authorization: Bearer <token>` header.
fn bearer_token(headers: &HeaderMap) -> Option<&str> {
    let value = headers.get(header::AUTHORIZATION)?.to_str().ok()?;
    let (scheme, token) = value.split_once(' ')?;
    let token = token.trim();
    (scheme.eq_ignore_ascii_case("bearer") && !token.is_empty()).then_some(token)
}

/// The verb a request is authorized as, the API server's way: GET and HEAD are `get`, any other
/// method its own name in lower case.
fn verb_of(method: &Method) -> String {
    if *method == Method::HEAD {
        "get".to_owned()
    } else {
        method.as_str().to_ascii_lowercase()
    }
}

/// The answer to a request that may not be served: the API server's own Status for it.
pub fn refusal(verdict: &Verdict) -> Option<Response<Full<Bytes>>> {
    let (code, body) = refusal_status(verdict)?;
    let mut response = Response::new(Full::new(Bytes::from(body.to_string())));
    *response.status_mut() = code;
    response.headers_mut().insert(
        header::CONTENT_TYPE,
        header::HeaderValue::from_static("application/json"),
    );
    Some(response)
}

/// The status code and `Status` body of a refusal (401 as exchange 41's).
fn refusal_status(verdict: &Verdict) -> Option<(StatusCode, serde_json::Value)> {
    let (code, reason, message) = match verdict {
        Verdict::Allowed => return None,
        Verdict::Unauthenticated => (
            StatusCode::UNAUTHORIZED,
            "Unauthorized",
            "Unauthorized".to_owned(),
        ),
        Verdict::Forbidden { user, verb, path } => (
            StatusCode::FORBIDDEN,
            "Forbidden",
            format!("forbidden: User {user:?} cannot {verb} path {path:?}"),
        ),
        Verdict::Undecided(why) => (
            StatusCode::INTERNAL_SERVER_ERROR,
            "InternalError",
            format!("Internal error occurred: cannot authorize the request: {why}"),
        ),
    };
    let mut body = json!({"kind": "Status", "apiVersion": "v1", "metadata": {},
        "status": "Failure", "message": message, "reason": reason, "code": code.as_u16()});
    if code == StatusCode::FORBIDDEN {
        body["details"] = json!({});
    }
    Some((code, body))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn always_allowed_paths_are_exact_unless_they_end_in_a_star() {
        let options = AuthOptions {
            always_allow_paths: vec!["/healthz".into(), "/debug/pprof/*".into()],
            ..AuthOptions::default()
        };
        assert!(options.always_allows("/healthz"));
        assert!(!options.always_allows("/healthz/extra"));
        assert!(options.always_allows("/debug/pprof/heap"));
        assert!(!options.always_allows("/metrics"));
        let defaults = AuthOptions::default();
        for path in ["/healthz", "/readyz", "/livez"] {
            assert!(defaults.always_allows(path), "{path}");
        }
        assert!(!defaults.always_allows("/metrics"));
        assert!(!defaults.always_allows("/debug/workqueue"));
    }

    #[test]
    fn only_a_bearer_token_is_a_credential() {
        let mut headers = HeaderMap::new();
        assert_eq!(bearer_token(&headers), None);
        headers.insert(header::AUTHORIZATION, "Basic YWRtaW46cHc=".parse().unwrap());
        assert_eq!(bearer_token(&headers), None);
        headers.insert(header::AUTHORIZATION, "Bearer abc.def".parse().unwrap());
        assert_eq!(bearer_token(&headers), Some("abc.def"));
        headers.insert(header::AUTHORIZATION, "bearer  ".parse().unwrap());
        assert_eq!(bearer_token(&headers), None);
    }

    #[test]
    fn refusals_are_the_api_servers_own_statuses() {
        let text = std::fs::read_to_string(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../../fixtures/real-apiserver/exchanges/41-unauthorized.json"
        ))
        .expect("exchange 41");
        let captured: serde_json::Value = serde_json::from_str(&text).expect("JSON");
        let (code, body) = refusal_status(&Verdict::Unauthenticated).expect("a refusal");
        assert_eq!(code.as_u16(), 401);
        assert_eq!(body, captured["response"]["body"], "exchange 41");
        let unauthorized = refusal(&Verdict::Unauthenticated).expect("a refusal");
        assert_eq!(unauthorized.status(), StatusCode::UNAUTHORIZED);
        let forbidden = refusal(&Verdict::Forbidden {
            user: "system:serviceaccount:monitoring:prometheus".into(),
            verb: "get".into(),
            path: "/metrics".into(),
        })
        .expect("a refusal");
        assert_eq!(forbidden.status(), StatusCode::FORBIDDEN);
        assert!(refusal(&Verdict::Allowed).is_none());
        assert_eq!(verb_of(&Method::HEAD), "get");
        assert_eq!(verb_of(&Method::POST), "post");
    }
}
