//! Authorization of resource requests, reduced to what tests of a refused controller need: a
//! user may be denied verbs on a resource ([`SimConfig::forbidding`], or at run time
//! [`SimServer::deny`](crate::SimServer::deny)); everything else is allowed.
//!
//! Contract:
//! - Who asks: the [`SimUser`] whose token the request carries; the server's own token, a
//!   client certificate, or no token on a server that requires none is [`ADMIN`] of
//!   `system:masters`, which a real server never refuses; here it is refused only what a test
//!   denies it with [`SimServer::deny`](crate::SimServer::deny), standing for a kube-gc
//!   whose role lacks a rule.
//! - What is asked: the request's verb as RBAC names it (`get`, `list`, `watch`, `create`,
//!   `update`, `patch`, `delete`, `deletecollection`) on the resource,
//!   `<plural>/<subresource>` for a subresource.
//! - [`SimServer::grant`](crate::SimServer::grant) lifts a user's denials on a resource
//!   while the server runs, as binding a role that grants them would.
//! - A denied request is answered before it reaches the store, with the 403 `Forbidden`
//!   `Status` a real server's authorization filter writes (exchanges 200–206: the resource
//!   group-qualified, the user, the verb, the scope — `at the cluster scope` or `in the
//!   namespace "<ns>"` — and the object's name when there is one); a watch is refused before
//!   any stream (202).
//!
//! [`SimConfig::with_user`]: crate::SimConfig::with_user
//! [`SimConfig::forbidding`]: crate::SimConfig::forbidding

use http::header::AUTHORIZATION;
use http::Response;

use super::response::{self, Body};
use super::reviews::SimUser;
use super::route::Target;
use super::{Context, Incoming};
use crate::faults::Verb;
use crate::status;

/// The user of the server's own token and of client certificates (exchange 86).
pub const ADMIN: &str = "admin";

/// Verbs on one resource that one user is not granted.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ResourceDenial {
    /// The user's name (`system:serviceaccount:kube-system:kube-gc`).
    pub user: String,
    /// The resource's API group (`""` for the core group).
    pub group: String,
    /// The plural, or `<plural>/<subresource>`.
    pub resource: String,
    /// RBAC's verbs (`list`, `watch`, `delete`…).
    pub verbs: Vec<String>,
    /// Refused only at the cluster scope (a request or review without a namespace: a list
    /// across namespaces, a cluster-scoped resource), as for a user whose grant is a
    /// RoleBinding in each namespace it works in (exchanges 282, 284).
    pub cluster_scope_only: bool,
}

/// The user a request's bearer token belongs to, if it is one of [`Context::users`].
pub fn user_of<'c>(ctx: &'c Context, incoming: &Incoming) -> Option<&'c SimUser> {
    let token = incoming
        .header(AUTHORIZATION)
        .and_then(|v| v.strip_prefix("Bearer "))?;
    ctx.users.iter().find(|user| user.token == token)
}

/// The 403 for a request to `target` its user is denied; `None` when it is allowed.
pub fn refusal(
    ctx: &Context,
    incoming: &Incoming,
    target: &Target,
    verb: Verb,
) -> Option<Response<Body>> {
    let user = user_of(ctx, incoming).map_or(ADMIN, |user| user.username.as_str());
    let verb = rbac_verb(verb, target.name.is_some())?;
    let def = ctx.store.resources().def(target.resource);
    let resource = match &target.subresource {
        Some(sub) => format!("{}/{sub}", def.resource),
        None => def.resource.clone(),
    };
    let namespace = target.namespace.as_deref();
    if !is_denied(
        &ctx.denials.read(),
        user,
        &def.group,
        &resource,
        verb,
        namespace,
    ) {
        return None;
    }
    let refused = status::forbidden(
        &def.group_resource(),
        target.subresource.as_deref(),
        target.name.as_deref().unwrap_or_default(),
        user,
        verb,
        target.namespace.as_deref(),
    );
    Some(response::status(refused))
}

/// Whether `denials` refuse `user` the `verb` on `resource` (`<plural>[/<subresource>]`) of
/// `group` in `namespace` (`None`: at the cluster scope) — the one rule behind a request's 403
/// and a `SelfSubjectAccessReview`'s answer.
pub fn is_denied(
    denials: &[ResourceDenial],
    user: &str,
    group: &str,
    resource: &str,
    verb: &str,
    namespace: Option<&str>,
) -> bool {
    denials.iter().any(|d| {
        d.user == user
            && d.group == group
            && d.resource == resource
            && d.verbs.iter().any(|v| v == verb)
            && (!d.cluster_scope_only || namespace.is_none())
    })
}

/// RBAC's name of a request's verb (a DELETE without a name is a `deletecollection`); `None`
/// for discovery, which RBAC grants by path.
fn rbac_verb(verb: Verb, named: bool) -> Option<&'static str> {
    Some(match verb {
        Verb::Get => "get",
        Verb::List => "list",
        Verb::Watch => "watch",
        Verb::Create => "create",
        Verb::Update => "update",
        Verb::Patch => "patch",
        Verb::Delete if named => "delete",
        Verb::Delete => "deletecollection",
        Verb::Discovery => return None,
    })
}
