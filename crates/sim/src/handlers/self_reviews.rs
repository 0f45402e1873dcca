//! `kubectl auth can-i`: SelfSubjectAccessReview and SelfSubjectRulesReview (exchanges
//! 280–286), answered from this server's users and its authorization ([`super::authorize`]
//! for resources, [`super::reviews::non_resource_allowed`] for paths).
//!
//! Contract:
//! - **Who asks**: the user of the request's token ([`authorize::user_of`]), else [`ADMIN`]
//!   of `system:masters`; every one of them is in `system:authenticated`, a service account
//!   also in `system:serviceaccounts`.
//! - **Access review**: `resourceAttributes` (`verb`, `group`, `resource`, `subresource`;
//!   `namespace` absent for `--all-namespaces`) is allowed unless a denial refuses that user
//!   that verb — the rule that decides the user's own requests, so `can-i` never disagrees
//!   with what a request then meets; `nonResourceAttributes` (`path`, `verb`) as a
//!   SubjectAccessReview of the same user. 201, the review echoed with `status.allowed`.
//!   Unlike RBAC, nothing here names a binding, so an allowed review carries no `reason`.
//! - **Rules review** of `spec.namespace`: the self-review rules every user has, then what the
//!   user may do there —
//!   `*` on everything while nothing is denied to it, else each served resource (and its
//!   `status`) with the verbs it supports that are not denied, resources with the same verbs
//!   of one group in one rule — and the non-resource rules: everything for `system:masters`,
//!   RBAC's defaults ([`DEFAULT_NON_RESOURCE_RULES`]) and the user's grants. `incomplete:
//!   false`; `spec` answered empty, as the real server does.

use std::collections::BTreeMap;

use http::{Method, Response, StatusCode};
use serde_json::{json, Value};

use super::authorize::{self, is_denied, ADMIN};
use super::response::{self, Body};
use super::reviews::{echoed, non_resource_allowed, DEFAULT_NON_RESOURCE_RULES};
use super::{Context, Incoming};

/// The path a SelfSubjectAccessReview is created at.
pub const ACCESS_REVIEWS: &str = "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews";
/// The path a SelfSubjectRulesReview is created at.
pub const RULES_REVIEWS: &str = "/apis/authorization.k8s.io/v1/selfsubjectrulesreviews";

/// The answer to `incoming` if it creates a self review; `None` for any other request.
pub fn answer(ctx: &Context, incoming: &Incoming) -> Option<Response<Body>> {
    if incoming.method != Method::POST {
        return None;
    }
    match incoming.path.as_str() {
        ACCESS_REVIEWS => Some(echoed(incoming, |spec| access_review(ctx, incoming, spec))),
        RULES_REVIEWS => Some(rules_review(ctx, incoming)),
        _ => None,
    }
}

/// Who a request is from: the user's name and groups.
fn requester(ctx: &Context, incoming: &Incoming) -> (String, Vec<String>) {
    let (name, mut groups) = match authorize::user_of(ctx, incoming) {
        Some(user) => (user.username.clone(), user.groups.clone()),
        None => (ADMIN.to_owned(), vec!["system:masters".to_owned()]),
    };
    groups.push("system:authenticated".to_owned());
    if name.starts_with("system:serviceaccount:") {
        groups.push("system:serviceaccounts".to_owned());
    }
    (name, groups)
}

/// The status of the requester's access review of `spec`.
fn access_review(ctx: &Context, incoming: &Incoming, spec: &Value) -> Value {
    let (user, groups) = requester(ctx, incoming);
    let resource = &spec["resourceAttributes"];
    let path = &spec["nonResourceAttributes"];
    let allowed = if resource.is_object() {
        let text = |key: &str| resource[key].as_str().unwrap_or_default();
        let plural = match text("subresource") {
            "" => text("resource").to_owned(),
            sub => format!("{}/{sub}", text("resource")),
        };
        let namespace = Some(text("namespace")).filter(|n| !n.is_empty());
        let denials = ctx.denials.read();
        !is_denied(
            &denials,
            &user,
            text("group"),
            &plural,
            text("verb"),
            namespace,
        )
    } else if path.is_object() {
        let groups: Vec<&str> = groups.iter().map(String::as_str).collect();
        non_resource_allowed(
            ctx,
            &user,
            &groups,
            path["path"].as_str().unwrap_or_default(),
            path["verb"].as_str().unwrap_or_default(),
        )
    } else {
        false
    };
    json!({"allowed": allowed})
}

/// The requester's rules review.
fn rules_review(ctx: &Context, incoming: &Incoming) -> Response<Body> {
    let (user, groups) = requester(ctx, incoming);
    let mut resource_rules = vec![
        json!({"verbs": ["create"], "apiGroups": ["authorization.k8s.io"],
            "resources": ["selfsubjectaccessreviews", "selfsubjectrulesreviews"]}),
        json!({"verbs": ["create"], "apiGroups": ["authentication.k8s.io"],
            "resources": ["selfsubjectreviews"]}),
    ];
    let namespace = spec_namespace(incoming);
    resource_rules.extend(resource_rules_of(ctx, &user, namespace.as_deref()));
    let mut non_resource_rules = Vec::new();
    if groups.iter().any(|g| g == "system:masters") {
        non_resource_rules.push(json!({"verbs": ["*"], "nonResourceURLs": ["*"]}));
    }
    for (group, paths) in DEFAULT_NON_RESOURCE_RULES {
        if groups.iter().any(|g| g == group) {
            non_resource_rules.push(json!({"verbs": ["get"], "nonResourceURLs": paths}));
        }
    }
    for grant in &ctx.grants {
        if grant.subject == user || groups.contains(&grant.subject) {
            non_resource_rules.push(json!({"verbs": ["get"], "nonResourceURLs": grant.paths}));
        }
    }
    let review = json!({"kind": "SelfSubjectRulesReview",
        "apiVersion": "authorization.k8s.io/v1", "metadata": {"creationTimestamp": null},
        "spec": {}, "status": {"resourceRules": resource_rules,
            "nonResourceRules": non_resource_rules, "incomplete": false}});
    response::json(StatusCode::CREATED, &review)
}

/// The namespace a rules review asks about (its `spec.namespace`).
fn spec_namespace(incoming: &Incoming) -> Option<String> {
    let body = incoming.json_body().ok().flatten()?;
    body["spec"]["namespace"]
        .as_str()
        .filter(|n| !n.is_empty())
        .map(str::to_owned)
}

/// What `user` may do to resources in `namespace` (`None`: at the cluster scope):
/// everything while nothing is denied to it, else each served resource's verbs less the
/// denied ones.
fn resource_rules_of(ctx: &Context, user: &str, namespace: Option<&str>) -> Vec<Value> {
    let denials = ctx.denials.read();
    let applies = |d: &&authorize::ResourceDenial| {
        d.user == user && (!d.cluster_scope_only || namespace.is_none())
    };
    if !denials.iter().any(|d| applies(&d)) {
        return vec![json!({"verbs": ["*"], "apiGroups": ["*"], "resources": ["*"]})];
    }
    let unserved = ctx.unserved.read();
    // (group, verbs) → resources, so that a rule lists every resource it covers.
    let mut rules: BTreeMap<(String, Vec<String>), Vec<String>> = BTreeMap::new();
    for (id, def) in ctx.store.resources().iter() {
        if unserved.contains(&id) {
            continue;
        }
        let mut entries = vec![(def.resource.clone(), def.verbs.clone())];
        if def.has_status {
            let status_verbs = ["get", "patch", "update"].map(str::to_owned).to_vec();
            entries.push((format!("{}/status", def.resource), status_verbs));
        }
        for (resource, verbs) in entries {
            let allowed: Vec<String> = verbs
                .into_iter()
                .filter(|verb| !is_denied(&denials, user, &def.group, &resource, verb, namespace))
                .collect();
            if !allowed.is_empty() {
                let resources = rules.entry((def.group.clone(), allowed)).or_default();
                if !resources.contains(&resource) {
                    resources.push(resource);
                }
            }
        }
    }
    rules
        .into_iter()
        .map(|((group, verbs), resources)| {
            json!({"verbs": verbs, "apiGroups": [group], "resources": resources})
        })
        .collect()
}
