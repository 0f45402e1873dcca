//! The RBAC in `deploy/` as data: every manifest parsed, the rules bound to kube-gc's service
//! account, and the question "may kube-gc make this request?" — answered for a hand-written list
//! of requests or for a simulated API server's request journal (see [`Request::from_journal`]).
#![allow(dead_code)]

pub mod kustomize;

use std::path::{Path, PathBuf};

use kube_gc::sim::journal::JournalEntry;
use serde_json::Value;

/// The service account the Deployment runs as.
pub const SERVICE_ACCOUNT: (&str, &str) = ("kube-system", "kube-gc");

/// Every Kubernetes object in every `*.yaml` under `deploy/` (at any depth, kustomizations
/// left out), with its file name relative to `deploy/` (`base/rbac-events.yaml`,
/// `crds/kube-gc.io_retentionpolicies.yaml`).
pub fn manifests() -> Vec<(String, Value)> {
    let root = deploy_root();
    let mut documents = Vec::new();
    for name in manifest_files() {
        documents.extend(
            kustomize::parse_file(&root.join(&name))
                .into_iter()
                .map(|d| (name.clone(), d)),
        );
    }
    documents
}

/// The `*.yaml` files under `deploy/` at any depth, but the kustomizations, relative to
/// `deploy/`, sorted.
pub fn manifest_files() -> Vec<String> {
    let root = deploy_root();
    let mut files: Vec<String> = kustomize::yaml_files_under(&root)
        .into_iter()
        .filter(|path| path.file_name().is_some_and(|n| n != "kustomization.yaml"))
        .map(|path| {
            path.strip_prefix(&root)
                .unwrap()
                .to_string_lossy()
                .into_owned()
        })
        .collect();
    files.sort();
    files
}

/// `deploy/` in this checkout.
pub fn deploy_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("deploy")
}

/// The CustomResourceDefinition of this kind in `deploy/crds/`.
pub fn crd(kind: &str) -> Value {
    manifests()
        .into_iter()
        .map(|(_, d)| d)
        .find(|d| d["kind"] == "CustomResourceDefinition" && d["spec"]["names"]["kind"] == kind)
        .unwrap_or_else(|| panic!("no CRD for {kind} in deploy/crds/"))
}

/// The paths (`spec.finished.field.path`) in `value` that `schema` (an OpenAPI v3 schema
/// node) has no property for; map values are checked against `additionalProperties`, array
/// items against `items`, and a node preserving unknown fields accepts only what its own
/// `properties` list in an object.
pub fn missing_from_schema(value: &Value, schema: &Value, path: &str) -> Vec<String> {
    let mut missing = Vec::new();
    match value {
        Value::Object(fields) => {
            for (key, field) in fields {
                let at = if path.is_empty() {
                    key.clone()
                } else {
                    format!("{path}.{key}")
                };
                let property = &schema["properties"][key];
                if !property.is_null() {
                    missing.extend(missing_from_schema(field, property, &at));
                } else if schema["additionalProperties"].is_object() {
                    missing.extend(missing_from_schema(
                        field,
                        &schema["additionalProperties"],
                        &at,
                    ));
                } else {
                    missing.push(at);
                }
            }
        }
        Value::Array(items) => {
            for (i, item) in items.iter().enumerate() {
                missing.extend(missing_from_schema(
                    item,
                    &schema["items"],
                    &format!("{path}[{i}]"),
                ));
            }
        }
        _ => {}
    }
    missing
}

/// One request as RBAC sees it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Request {
    /// A resource request.
    Resource {
        /// `get`, `list`, `watch`, `create`, `update`, `patch`, `delete`, `deletecollection`.
        verb: String,
        /// The API group (`""` for core).
        group: String,
        /// The resource, with `/subresource` if any.
        resource: String,
        /// The namespace, `None` for cluster-scoped or all-namespace requests.
        namespace: Option<String>,
        /// The object's name, for single-object requests.
        name: Option<String>,
    },
    /// A non-resource request such as discovery.
    NonResource {
        /// `get`.
        verb: String,
        /// The path.
        path: String,
    },
}

impl Request {
    /// A resource request.
    pub fn resource(verb: &str, group: &str, resource: &str, namespace: Option<&str>) -> Request {
        Request::Resource {
            verb: verb.into(),
            group: group.into(),
            resource: resource.into(),
            namespace: namespace.map(str::to_owned),
            name: None,
        }
    }

    /// The same request on one named object.
    pub fn named(self, object: &str) -> Request {
        match self {
            Request::Resource {
                verb,
                group,
                resource,
                namespace,
                ..
            } => Request::Resource {
                verb,
                group,
                resource,
                namespace,
                name: Some(object.into()),
            },
            other => other,
        }
    }

    /// How the API server's authorizer classifies a journal entry (method, path, `watch`).
    pub fn from_journal(entry: &JournalEntry) -> Request {
        let segments: Vec<&str> = entry.path.trim_matches('/').split('/').collect();
        let rest = match segments.as_slice() {
            ["api", "v1", rest @ ..] if !rest.is_empty() => ("", rest),
            ["apis", group, _version, rest @ ..] if !rest.is_empty() => (*group, rest),
            _ => {
                return Request::NonResource {
                    verb: entry.method.to_lowercase(),
                    path: entry.path.clone(),
                }
            }
        };
        let (group, mut parts) = (rest.0, rest.1);
        let mut namespace = None;
        // `namespaces/{name}/status` and `/finalize` are a namespace's own subresources, the
        // authorizer's only exceptions to `namespaces/{namespace}/{resource}` (upstream's
        // `namespaceSubresources`).
        if parts.len() >= 2 && parts[0] == "namespaces" {
            namespace = Some(parts[1].to_owned());
            if parts.len() >= 3 && !["status", "finalize"].contains(&parts[2]) {
                parts = &parts[2..];
            }
        }
        let resource = match parts {
            [resource, _, sub] => format!("{resource}/{sub}"),
            [resource, ..] => resource.to_string(),
            [] => String::new(),
        };
        let name = parts.get(1).map(|n| n.to_string());
        let watching = matches!(entry.query_value("watch"), Some("1" | "true"));
        let verb = match (entry.method.as_str(), name.is_some()) {
            ("GET", _) if watching => "watch",
            ("GET", true) => "get",
            ("GET", false) => "list",
            ("POST", _) => "create",
            ("PUT", _) => "update",
            ("PATCH", _) => "patch",
            ("DELETE", true) => "delete",
            ("DELETE", false) => "deletecollection",
            (other, _) => {
                return Request::NonResource {
                    verb: other.to_lowercase(),
                    path: entry.path.clone(),
                }
            }
        };
        Request::Resource {
            verb: verb.into(),
            group: group.into(),
            resource,
            namespace,
            name,
        }
    }
}

/// A rule and where it applies (`None`: every namespace and cluster scope).
#[derive(Clone, Debug)]
pub struct Grant {
    /// The namespace of a Role's rule.
    pub namespace: Option<String>,
    /// The PolicyRule.
    pub rule: Value,
    /// Which file granted it.
    pub source: String,
}

fn strings(value: &Value) -> Vec<String> {
    value
        .as_array()
        .map(|a| {
            a.iter()
                .filter_map(|v| v.as_str().map(str::to_owned))
                .collect()
        })
        .unwrap_or_default()
}

fn matches(list: &[String], value: &str) -> bool {
    list.iter().any(|item| item == "*" || item == value)
}

/// The built-in ClusterRoles `deploy/` binds without defining, as every API server's bootstrap
/// policy defines them (`plugin/pkg/auth/authorizer/rbac/bootstrappolicy/policy.go`, v1.28).
fn built_in_roles() -> Vec<(String, Value)> {
    let auth_delegator = serde_json::json!({
        "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
        "metadata": {"name": "system:auth-delegator"},
        "rules": [
            {"apiGroups": ["authentication.k8s.io"], "resources": ["tokenreviews"], "verbs": ["create"]},
            {"apiGroups": ["authorization.k8s.io"], "resources": ["subjectaccessreviews"], "verbs": ["create"]}
        ]
    });
    vec![("(built in)".to_owned(), auth_delegator)]
}

/// Every rule granted to kube-gc's service account by the bindings anywhere in `deploy/` (what
/// the standalone overlay installs, and more).
pub fn grants() -> Vec<Grant> {
    grants_in(manifests())
}

/// Every rule granted to kube-gc's service account by the bindings among `documents` (with the
/// file each came from), roles resolved among them and the built-in ones.
pub fn grants_in(mut documents: Vec<(String, Value)>) -> Vec<Grant> {
    documents.extend(built_in_roles());
    let find_role = |kind: &str, name: &str, namespace: Option<&str>| {
        documents.iter().find(|(_, d)| {
            d["kind"] == kind
                && d["metadata"]["name"] == name
                && (namespace.is_none() || d["metadata"]["namespace"].as_str() == namespace)
        })
    };
    let mut grants = Vec::new();
    for (file, binding) in &documents {
        let kind = binding["kind"].as_str().unwrap_or_default();
        if kind != "ClusterRoleBinding" && kind != "RoleBinding" {
            continue;
        }
        let binds_us = binding["subjects"]
            .as_array()
            .into_iter()
            .flatten()
            .any(|s| {
                s["kind"] == "ServiceAccount"
                    && s["namespace"] == SERVICE_ACCOUNT.0
                    && s["name"] == SERVICE_ACCOUNT.1
            });
        if !binds_us {
            continue;
        }
        let binding_namespace = binding["metadata"]["namespace"].as_str();
        let role_kind = binding["roleRef"]["kind"].as_str().unwrap_or_default();
        let role_name = binding["roleRef"]["name"].as_str().unwrap_or_default();
        let role_namespace = if role_kind == "Role" {
            binding_namespace
        } else {
            None
        };
        let (_, role) = find_role(role_kind, role_name, role_namespace)
            .unwrap_or_else(|| panic!("{file}: {role_kind} {role_name} is not defined beside it"));
        for rule in role["rules"].as_array().into_iter().flatten() {
            grants.push(Grant {
                namespace: if kind == "RoleBinding" {
                    binding_namespace.map(str::to_owned)
                } else {
                    None
                },
                rule: rule.clone(),
                source: file.clone(),
            });
        }
    }
    grants
}

/// Whether one of `grants` allows `request` (RBAC's rule matching, wildcards included).
pub fn allowed(grants: &[Grant], request: &Request) -> bool {
    grants.iter().any(|grant| {
        let rule = &grant.rule;
        match request {
            Request::NonResource { verb, path } => {
                grant.namespace.is_none()
                    && matches(&strings(&rule["verbs"]), verb)
                    && strings(&rule["nonResourceURLs"]).iter().any(|pattern| {
                        pattern == path
                            || pattern
                                .strip_suffix('*')
                                .is_some_and(|prefix| path.starts_with(prefix))
                    })
            }
            Request::Resource {
                verb,
                group,
                resource,
                namespace,
                name,
            } => {
                let in_scope = match &grant.namespace {
                    None => true,
                    Some(ns) => namespace.as_deref() == Some(ns),
                };
                let names = strings(&rule["resourceNames"]);
                let name_ok = names.is_empty() || name.as_ref().is_some_and(|n| names.contains(n));
                in_scope
                    && name_ok
                    && matches(&strings(&rule["verbs"]), verb)
                    && matches(&strings(&rule["apiGroups"]), group)
                    && matches(&strings(&rule["resources"]), resource)
            }
        }
    })
}

/// The requests among `requests` that `deploy/` does not allow.
pub fn denied(requests: &[Request]) -> Vec<Request> {
    let grants = grants();
    requests
        .iter()
        .filter(|r| !allowed(&grants, r))
        .cloned()
        .collect()
}

/// The requests of a journal that `deploy/` does not allow (deduplicated).
pub fn denied_in_journal(entries: &[JournalEntry]) -> Vec<Request> {
    let mut requests: Vec<Request> = Vec::new();
    for entry in entries {
        let request = Request::from_journal(entry);
        if !requests.contains(&request) {
            requests.push(request);
        }
    }
    denied(&requests)
}
