//! What the simulated server refuses besides authentication, when a test asks it to: a verb on
//! a resource denied as RBAC denies it (403), and an aggregated group version whose server does
//! not answer (`Stale`).
//!
//! Contract:
//! - A denied verb on a resource is answered with the authorization filter's 403 (`status::
//!   forbidden`, user `admin`: the server's own token), before anything else is looked at. The
//!   verbs are RBAC's: `get`, `list`, `watch`, `create`, `update`, `patch`, `delete`,
//!   `deletecollection`.
//! - A `Stale` group version is listed in aggregated discovery with `freshness: Stale` and no
//!   resources (exchange 98), its legacy document answers 503 `service unavailable` in plain text
//!   (exchange 99), and so does every request to its resources (the API server cannot proxy
//!   them).

use std::collections::HashSet;

use http::{Method, Response, StatusCode};
use parking_lot::RwLock;
use serde_json::Value;

use super::response::{self, Body};
use super::route::Target;
use super::Incoming;
use crate::sim::resources::{ResourceId, Resources};
use crate::sim::status;

/// The user every request is made as (the server's own token's, exchange 86).
const USER: &str = "admin";

/// The plain-text body of a group version whose aggregated server does not answer.
const UNAVAILABLE: &str = "service unavailable\n";

/// Denials and stale group versions (see the module documentation).
#[derive(Debug, Default)]
pub struct Access {
    denied: RwLock<HashSet<(String, ResourceId)>>,
    stale: RwLock<HashSet<(String, String)>>,
}

impl Access {
    /// Refuses `verb` on `resource` from now on.
    pub fn deny(&self, verb: &str, resource: ResourceId) {
        self.denied.write().insert((verb.to_owned(), resource));
    }

    /// Allows `verb` on `resource` again.
    pub fn allow(&self, verb: &str, resource: ResourceId) {
        self.denied.write().remove(&(verb.to_owned(), resource));
    }

    /// Marks `group/version` stale (its server does not answer), or answering again.
    pub fn set_stale(&self, group: &str, version: &str, stale: bool) {
        let key = (group.to_owned(), version.to_owned());
        if stale {
            self.stale.write().insert(key);
        } else {
            self.stale.write().remove(&key);
        }
    }

    /// Whether `group/version` is stale.
    pub fn is_stale(&self, group: &str, version: &str) -> bool {
        self.stale
            .read()
            .contains(&(group.to_owned(), version.to_owned()))
    }

    /// The 403 or 503 a request to `target` gets, if it is refused.
    pub fn refusal(
        &self,
        resources: &Resources,
        incoming: &Incoming,
        target: &Target,
    ) -> Option<Response<Body>> {
        let def = resources.def(target.resource);
        if self.is_stale(&def.group, &def.version) {
            return Some(service_unavailable());
        }
        let verb = verb_of(&incoming.method, target.name.is_some(), incoming.is_watch());
        if !self
            .denied
            .read()
            .contains(&(verb.to_owned(), target.resource))
        {
            return None;
        }
        Some(response::status(status::forbidden(
            &def.group_resource(),
            target.name.as_deref().unwrap_or_default(),
            USER,
            verb,
            target.namespace.as_deref(),
        )))
    }

    /// Marks the stale group versions of an aggregated discovery document: `freshness: Stale`
    /// and no resources (exchange 98).
    pub fn mark_stale(&self, document: &mut Value) {
        let stale = self.stale.read();
        if stale.is_empty() {
            return;
        }
        let Some(items) = document.get_mut("items").and_then(Value::as_array_mut) else {
            return;
        };
        for item in items {
            let group = item
                .pointer("/metadata/name")
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_owned();
            let Some(versions) = item.get_mut("versions").and_then(Value::as_array_mut) else {
                continue;
            };
            for version in versions {
                let name = version["version"].as_str().unwrap_or_default().to_owned();
                if stale.contains(&(group.clone(), name.clone())) {
                    *version = serde_json::json!({"version": name, "freshness": "Stale"});
                }
            }
        }
    }
}

/// The 503 of a group version whose aggregated server does not answer (exchange 99).
pub fn service_unavailable() -> Response<Body> {
    response::plain_text(StatusCode::SERVICE_UNAVAILABLE, UNAVAILABLE)
}

/// RBAC's verb for a request.
pub fn verb_of(method: &Method, named: bool, watch: bool) -> &'static str {
    match (method.as_str(), named) {
        ("GET", true) => "get",
        ("GET", false) if watch => "watch",
        ("GET", false) => "list",
        ("POST", _) => "create",
        ("PUT", _) => "update",
        ("PATCH", _) => "patch",
        ("DELETE", true) => "delete",
        ("DELETE", false) => "deletecollection",
        _ => "get",
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_fixtures::exchange;

    #[test]
    fn a_stale_group_version_loses_its_resources_as_in_exchange_98() {
        let access = Access::default();
        access.set_stale("metrics.k8s.io", "v1beta1", true);
        let mut document = serde_json::json!({"items": [
            {"metadata": {"name": "metrics.k8s.io", "creationTimestamp": null},
             "versions": [{"version": "v1beta1", "resources": [{"resource": "pods"}], "freshness": "Current"}]}]});
        access.mark_stale(&mut document);
        let real = exchange("98-")["response"]["body"]["items"]
            .as_array()
            .and_then(|items| {
                items
                    .iter()
                    .find(|i| i["metadata"]["name"] == "metrics.k8s.io")
                    .cloned()
            })
            .unwrap_or_default();
        assert_eq!(document["items"][0], real);
        access.set_stale("metrics.k8s.io", "v1beta1", false);
        assert!(!access.is_stale("metrics.k8s.io", "v1beta1"));
    }

    #[test]
    fn verbs_are_rbacs() {
        assert_eq!(verb_of(&Method::DELETE, false, false), "deletecollection");
        assert_eq!(verb_of(&Method::GET, false, true), "watch");
        assert_eq!(verb_of(&Method::GET, true, false), "get");
    }
}
