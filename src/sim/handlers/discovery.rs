//! The discovery documents: what `kubectl` and clients read to learn what the server serves.
//!
//! Contract: `/version`, `/api`, `/api/v1`, `/apis`, `/apis/{group}` and `/apis/{group}/{version}`
//! in the shapes of a v1.28 server (exchanges 01–07, 46), generated from the served
//! [`Resources`]. Aggregated discovery (`as=APIGroupDiscoveryList`) is not produced; clients
//! that offer plain JSON as a fallback (kubectl does) get these legacy documents.

use serde_json::{json, Map, Value};

use super::route::Discovery;
use crate::sim::resources::{ResourceDef, Resources};

/// The document for a discovery path. `server_address` is the `host:port` clients reach the
/// server at (shown in `/api`).
pub fn document(which: &Discovery, resources: &Resources, server_address: &str) -> Value {
    match which {
        Discovery::Version => version(),
        Discovery::CoreVersions => json!({
            "kind": "APIVersions",
            "versions": ["v1"],
            "serverAddressByClientCIDRs": [
                {"clientCIDR": "0.0.0.0/0", "serverAddress": server_address}
            ],
        }),
        Discovery::CoreResources => {
            // The core group's resource list has no apiVersion (exchange 03).
            json!({
                "kind": "APIResourceList",
                "groupVersion": "v1",
                "resources": resource_list(resources, "", "v1"),
            })
        }
        Discovery::Groups => {
            let groups: Vec<Value> = resources
                .groups()
                .iter()
                .map(|(name, versions)| group(name, versions))
                .collect();
            json!({"kind": "APIGroupList", "apiVersion": "v1", "groups": groups})
        }
        Discovery::Group(name) => {
            let versions = resources
                .groups()
                .into_iter()
                .find(|(g, _)| g == name)
                .map(|(_, v)| v)
                .unwrap_or_default();
            let mut doc = group(name, &versions);
            doc["kind"] = json!("APIGroup");
            doc["apiVersion"] = json!("v1");
            doc
        }
        Discovery::GroupResources(group, version) => json!({
            "kind": "APIResourceList",
            "apiVersion": "v1",
            "groupVersion": format!("{group}/{version}"),
            "resources": resource_list(resources, group, version),
        }),
    }
}

fn version() -> Value {
    json!({
        "major": "1",
        "minor": "28",
        "gitVersion": "v1.28.7",
        "gitCommit": "0000000000000000000000000000000000000000",
        "gitTreeState": "clean",
        "buildDate": "2026-01-01T00:00:00Z",
        "goVersion": "go1.21.13",
        "compiler": "gc",
        "platform": "linux/amd64",
    })
}

/// An `APIGroup` entry; the first listed version is the preferred one.
fn group(name: &str, versions: &[String]) -> Value {
    let entries: Vec<Value> = versions
        .iter()
        .map(|v| json!({"groupVersion": format!("{name}/{v}"), "version": v}))
        .collect();
    let preferred = entries.first().cloned().unwrap_or(Value::Null);
    json!({"name": name, "versions": entries, "preferredVersion": preferred})
}

fn resource_list(resources: &Resources, group: &str, version: &str) -> Vec<Value> {
    let mut entries = Vec::new();
    let mut defs: Vec<&ResourceDef> = resources
        .iter()
        .map(|(_, d)| d)
        .filter(|d| d.group == group && d.version == version)
        .collect();
    defs.sort_by(|a, b| a.resource.cmp(&b.resource));
    for def in defs {
        entries.push(resource_entry(def));
        if def.has_status {
            entries.push(json!({
                "name": format!("{}/status", def.resource),
                "singularName": "",
                "namespaced": def.namespaced,
                "kind": def.kind,
                "verbs": ["get", "patch", "update"],
            }));
        }
    }
    entries
}

fn resource_entry(def: &ResourceDef) -> Value {
    let mut entry = Map::new();
    entry.insert("name".into(), json!(def.resource));
    entry.insert("singularName".into(), json!(def.singular));
    entry.insert("namespaced".into(), json!(def.namespaced));
    entry.insert("kind".into(), json!(def.kind));
    entry.insert("verbs".into(), json!(def.verbs));
    if !def.short_names.is_empty() {
        entry.insert("shortNames".into(), json!(def.short_names));
    }
    if !def.categories.is_empty() {
        entry.insert("categories".into(), json!(def.categories));
    }
    Value::Object(entry)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn batch_v1_lists_jobs_and_their_status_subresource() {
        let doc = document(
            &Discovery::GroupResources("batch".into(), "v1".into()),
            &Resources::default(),
            "127.0.0.1:1",
        );
        assert_eq!(doc["kind"], "APIResourceList");
        assert_eq!(doc["groupVersion"], "batch/v1");
        assert_eq!(doc["resources"][0]["name"], "jobs");
        assert_eq!(doc["resources"][0]["namespaced"], true);
        assert_eq!(
            doc["resources"][1],
            json!({"name": "jobs/status", "singularName": "",
            "namespaced": true, "kind": "Job", "verbs": ["get", "patch", "update"]})
        );
    }

    #[test]
    fn core_documents_have_the_real_shapes() {
        let resources = Resources::default();
        let api = document(&Discovery::CoreVersions, &resources, "127.0.0.1:1");
        assert_eq!(
            api["serverAddressByClientCIDRs"][0]["serverAddress"],
            "127.0.0.1:1"
        );
        let v1 = document(&Discovery::CoreResources, &resources, "x");
        assert!(v1.get("apiVersion").is_none());
        let ns = v1["resources"]
            .as_array()
            .and_then(|r| r.iter().find(|e| e["name"] == "namespaces"));
        assert_eq!(ns.map(|e| e["namespaced"].clone()), Some(json!(false)));
        let groups = document(&Discovery::Groups, &resources, "x");
        assert!(groups["groups"]
            .as_array()
            .is_some_and(|g| g.iter().any(|g| g["name"] == "batch.volcano.sh"
                && g["preferredVersion"]["groupVersion"] == "batch.volcano.sh/v1alpha1")));
    }
}
