//! Aggregated group versions whose server does not answer (`Stale`), when a test makes one so.
//!
//! Contract:
//! - A `Stale` group version is listed in aggregated discovery with `freshness: Stale` and no
//!   resources (exchange 98), its legacy document answers 503 `service unavailable` in plain text
//!   (exchange 99), and so does every request to its resources (the API server cannot proxy
//!   them).
//! - Nothing is stale unless [`SimServer::set_stale`](crate::SimServer::set_stale) says so.

use std::collections::HashSet;

use http::{Response, StatusCode};
use parking_lot::RwLock;
use serde_json::Value;

use super::response::{self, Body};
use super::route::Target;
use crate::resources::Resources;

/// The plain-text body of a group version whose aggregated server does not answer.
const UNAVAILABLE: &str = "service unavailable\n";

/// The group versions whose aggregated server does not answer.
#[derive(Debug, Default)]
pub struct StaleGroups {
    stale: RwLock<HashSet<(String, String)>>,
}

impl StaleGroups {
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

    /// The 503 a request to `target` gets when its group version is stale.
    pub fn refusal(&self, resources: &Resources, target: &Target) -> Option<Response<Body>> {
        let def = resources.def(target.resource);
        self.is_stale(&def.group, &def.version)
            .then(service_unavailable)
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

#[cfg(test)]
mod tests {
    use super::*;
    use kube_gc_fixtures::exchange;

    #[test]
    fn a_stale_group_version_loses_its_resources_as_in_exchange_98() {
        let stale = StaleGroups::default();
        stale.set_stale("metrics.k8s.io", "v1beta1", true);
        let mut document = serde_json::json!({"items": [
            {"metadata": {"name": "metrics.k8s.io", "creationTimestamp": null},
             "versions": [{"version": "v1beta1", "resources": [{"resource": "pods"}], "freshness": "Current"}]}]});
        stale.mark_stale(&mut document);
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
        stale.set_stale("metrics.k8s.io", "v1beta1", false);
        assert!(!stale.is_stale("metrics.k8s.io", "v1beta1"));
    }
}
