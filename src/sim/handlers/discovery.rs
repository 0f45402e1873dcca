//! The discovery documents: what `kubectl` and clients read to learn what the server serves.
//!
//! Contract: `/version`, `/api`, `/api/v1`, `/apis`, `/apis/{group}` and `/apis/{group}/{version}`
//! in the shapes of a v1.28 server (exchanges 01–07, 46), generated from the served
//! [`Resources`]. `/api` and `/apis` also answer in the aggregated form
//! (`apidiscovery.k8s.io/v2beta1` `APIGroupDiscoveryList`, exchanges 93, 94) when the request's
//! `Accept` asks for it before anything else the server can produce ([`root_form`]): plain JSON
//! first, or an aggregated version v1.28 does not serve (`v2`) followed by plain JSON, gets the
//! legacy document (95); nothing producible gets 406 (96). Every other discovery path answers
//! its legacy document whatever is asked (97). [`SimConfig::aggregated_discovery`] off makes
//! the roots legacy-only, as a server before v1.26.
//!
//! [`SimConfig::aggregated_discovery`]: crate::sim::SimConfig::aggregated_discovery

use http::header::{HeaderValue, CACHE_CONTROL, CONTENT_TYPE, VARY};
use http::{Response, StatusCode};
use serde_json::{json, Map, Value};

use super::encoding;
use super::response::{self, Body};
use super::route::Discovery;
use crate::sim::resources::{ResourceDef, Resources};
use crate::sim::status;

/// The `Content-Type` of an aggregated discovery answer (exchange 93).
pub const AGGREGATED_CONTENT_TYPE: &str =
    "application/json;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList";

/// The form a discovery root is answered in.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RootForm {
    /// `APIGroupDiscoveryList`.
    Aggregated,
    /// `APIVersions` / `APIGroupList`.
    Legacy,
    /// 406: the request accepts nothing the server produces.
    NotAcceptable,
}

/// Which form `/api` or `/apis` is answered in, for a request's `Accept` (its media types in
/// the server's order, [`encoding::media_types`]): the first one the server can produce wins.
/// Plain `application/json` (or a wildcard) is the legacy document; `application/json` with
/// `g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList` the aggregated one, when served;
/// JSON with any other `as` is skipped; other media types (YAML, protobuf) are skipped too, as
/// this server writes discovery in JSON only.
pub fn root_form(accept: Option<&str>, aggregated_served: bool) -> RootForm {
    let Some(accept) = accept else {
        return RootForm::Legacy;
    };
    let mut skipped_json = false;
    for media_type in encoding::media_types(accept) {
        let essence = media_type.essence();
        if essence == "*/*" || essence == "application/*" {
            return RootForm::Legacy;
        }
        if essence != "application/json" {
            continue;
        }
        let param = |name: &str| media_type.param(name);
        match param("as") {
            None => return RootForm::Legacy,
            Some("APIGroupDiscoveryList")
                if aggregated_served
                    && param("g") == Some("apidiscovery.k8s.io")
                    && param("v") == Some("v2beta1") =>
            {
                return RootForm::Aggregated
            }
            Some(_) => skipped_json = true,
        }
    }
    if skipped_json {
        RootForm::NotAcceptable
    } else {
        RootForm::Legacy
    }
}

/// The answer to a discovery request: the aggregated form, the legacy document or 406, as
/// [`root_form`] decides for `/api` and `/apis`; the legacy document for every other path.
pub fn respond(
    which: &Discovery,
    resources: &Resources,
    server_address: &str,
    accept: Option<&str>,
    aggregated_served: bool,
    access: &super::access::Access,
) -> Response<Body> {
    let root = matches!(which, Discovery::CoreVersions | Discovery::Groups);
    let form = if root {
        root_form(accept, aggregated_served)
    } else {
        RootForm::Legacy
    };
    match form {
        RootForm::Legacy => {
            response::json(StatusCode::OK, &document(which, resources, server_address))
        }
        RootForm::NotAcceptable => response::status(status::not_acceptable()),
        RootForm::Aggregated => {
            let core = matches!(which, Discovery::CoreVersions);
            let mut document = aggregated(resources, core);
            access.mark_stale(&mut document);
            let mut answer = response::json(StatusCode::OK, &document);
            let headers = answer.headers_mut();
            headers.insert(
                CONTENT_TYPE,
                HeaderValue::from_static(AGGREGATED_CONTENT_TYPE),
            );
            headers.insert(CACHE_CONTROL, HeaderValue::from_static("public"));
            headers.insert(VARY, HeaderValue::from_static("Accept"));
            answer
        }
    }
}

/// The aggregated document of `/api` (`core`: the core group alone, its item unnamed) or of
/// `/apis` (every other group, versions preferred first).
pub fn aggregated(resources: &Resources, core: bool) -> Value {
    let items: Vec<Value> = if core {
        let versions = vec![aggregated_version(resources, "", "v1")];
        vec![json!({"metadata": {"creationTimestamp": null}, "versions": versions})]
    } else {
        resources
            .groups()
            .iter()
            .map(|(name, versions)| {
                let versions: Vec<Value> = versions
                    .iter()
                    .map(|v| aggregated_version(resources, name, v))
                    .collect();
                json!({"metadata": {"name": name, "creationTimestamp": null}, "versions": versions})
            })
            .collect()
    };
    json!({
        "kind": "APIGroupDiscoveryList",
        "apiVersion": "apidiscovery.k8s.io/v2beta1",
        "metadata": {},
        "items": items,
    })
}

fn aggregated_version(resources: &Resources, group: &str, version: &str) -> Value {
    let entries: Vec<Value> = defs_of(resources, group, version)
        .into_iter()
        .map(aggregated_resource)
        .collect();
    json!({"version": version, "resources": entries, "freshness": "Current"})
}

/// One `APIResourceDiscovery`. A built-in kind's `responseKind` leaves group and version empty,
/// a custom resource's names them (exchange 93).
fn aggregated_resource(def: &ResourceDef) -> Value {
    let response_kind = if def.is_custom {
        json!({"group": def.group, "version": def.version, "kind": def.kind})
    } else {
        json!({"group": "", "version": "", "kind": def.kind})
    };
    let mut entry = Map::new();
    entry.insert("resource".into(), json!(def.resource));
    entry.insert("responseKind".into(), response_kind.clone());
    let scope = if def.namespaced {
        "Namespaced"
    } else {
        "Cluster"
    };
    entry.insert("scope".into(), json!(scope));
    entry.insert("singularResource".into(), json!(def.singular));
    entry.insert("verbs".into(), json!(def.verbs));
    if !def.short_names.is_empty() {
        entry.insert("shortNames".into(), json!(def.short_names));
    }
    if !def.categories.is_empty() {
        entry.insert("categories".into(), json!(def.categories));
    }
    let mut subresources = Vec::new();
    if is_namespaces(def) {
        subresources.push(
            json!({"subresource": "finalize", "responseKind": response_kind,
            "verbs": ["update"]}),
        );
    }
    if def.has_status {
        subresources.push(
            json!({"subresource": "status", "responseKind": response_kind,
            "verbs": ["get", "patch", "update"]}),
        );
    }
    if !subresources.is_empty() {
        entry.insert("subresources".into(), Value::Array(subresources));
    }
    Value::Object(entry)
}

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

/// The resources served in one group version, by name.
fn defs_of<'r>(resources: &'r Resources, group: &str, version: &str) -> Vec<&'r ResourceDef> {
    let mut defs: Vec<&ResourceDef> = resources
        .iter()
        .map(|(_, d)| d)
        .filter(|d| d.group == group && d.version == version)
        .collect();
    defs.sort_by(|a, b| a.resource.cmp(&b.resource));
    defs
}

/// Namespaces have a `finalize` subresource (exchanges 03, 94).
fn is_namespaces(def: &ResourceDef) -> bool {
    crate::sim::store::namespace::is_namespaces(def)
}

fn resource_list(resources: &Resources, group: &str, version: &str) -> Vec<Value> {
    let mut entries = Vec::new();
    for def in defs_of(resources, group, version) {
        entries.push(resource_entry(def));
        if is_namespaces(def) {
            entries.push(json!({
                "name": format!("{}/finalize", def.resource),
                "singularName": "",
                "namespaced": def.namespaced,
                "kind": def.kind,
                "verbs": ["update"],
            }));
        }
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

    use crate::test_fixtures::exchange as captured;

    fn accept_of(exchange: &Value) -> Option<&str> {
        exchange["request"]["headers"]["Accept"].as_str()
    }

    #[test]
    fn the_accept_header_picks_the_form_as_the_real_server_does() {
        for (exchange, form) in [
            ("93-discovery-apis-aggregated", RootForm::Aggregated),
            ("94-discovery-api-aggregated", RootForm::Aggregated),
            ("95-discovery-apis-v2-falls-back", RootForm::Legacy),
            ("96-discovery-apis-v2-only", RootForm::NotAcceptable),
            ("04-discovery-apis", RootForm::Legacy),
        ] {
            assert_eq!(
                root_form(accept_of(&captured(exchange)), true),
                form,
                "{exchange}"
            );
        }
        assert_eq!(root_form(None, true), RootForm::Legacy);
        // A server without aggregated discovery answers the fallback.
        let asked = captured("93-discovery-apis-aggregated");
        assert_eq!(root_form(accept_of(&asked), false), RootForm::Legacy);
    }

    #[test]
    fn the_not_acceptable_answer_is_the_real_one() {
        let real = captured("96-discovery-apis-v2-only");
        let (code, body) = status::not_acceptable();
        assert_eq!(
            code.as_u16() as u64,
            real["response"]["status"].as_u64().unwrap()
        );
        assert_eq!(body, real["response"]["body"]);
    }

    #[test]
    fn the_aggregated_documents_have_the_captured_shape() {
        let resources = Resources::default();
        let apis = aggregated(&resources, false);
        let real = &captured("93-discovery-apis-aggregated")["response"]["body"];
        for key in ["kind", "apiVersion", "metadata"] {
            assert_eq!(apis[key], real[key], "{key}");
        }
        let group = |doc: &Value, name: &str| {
            doc["items"]
                .as_array()
                .unwrap()
                .iter()
                .find(|g| g["metadata"]["name"] == name)
                .cloned()
                .unwrap()
        };
        // batch/v1 jobs, field for field as the real server lists them (verbs as a set).
        let jobs_of = |doc: &Value| {
            let batch = group(doc, "batch");
            let mut jobs = batch["versions"][0]["resources"]
                .as_array()
                .unwrap()
                .iter()
                .find(|r| r["resource"] == "jobs")
                .cloned()
                .unwrap();
            let mut verbs: Vec<String> = serde_json::from_value(jobs["verbs"].take()).unwrap();
            verbs.sort();
            jobs["verbs"] = json!(verbs);
            (jobs, batch["versions"][0]["freshness"].clone())
        };
        assert_eq!(jobs_of(&apis), jobs_of(real));
        // The core group: one unnamed item.
        let api = aggregated(&resources, true);
        let real_api = &captured("94-discovery-api-aggregated")["response"]["body"];
        assert_eq!(
            api["items"][0]["metadata"],
            real_api["items"][0]["metadata"]
        );
        assert_eq!(api["items"].as_array().unwrap().len(), 1);
    }
}
