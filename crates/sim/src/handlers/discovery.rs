//! The discovery documents: what `kubectl` and clients read to learn what the server serves.
//!
//! Contract: `/version`, `/api`, `/api/v1`, `/apis`, `/apis/{group}` and `/apis/{group}/{version}`
//! in the shapes of a v1.28 server (exchanges 01–07, 46), generated from the served
//! [`Resources`]. `/api` and `/apis` also answer in an aggregated form (an
//! `APIGroupDiscoveryList`, exchanges 93, 94, 209, 210) when the request's `Accept` asks for one
//! the server serves before anything else it can produce ([`root_form`]): plain JSON first, or
//! an aggregated version the server does not serve followed by plain JSON, gets the legacy
//! document (95); nothing producible gets 406 (96). Every other discovery path answers its
//! legacy document whatever is asked (97). Which versions are served is
//! [`SimConfig::aggregated_discovery`]: `v2beta1` as v1.28, `v2` and `v2beta1` as v1.30–v1.32,
//! `v2` alone as v1.33 and later (upstream's `IsAggregatedDiscoveryGVK`, which the
//! `AggregatedDiscoveryRemoveBetaType` gate narrows to `v2`), or none as before v1.26. The two
//! versions' documents differ only in their `apiVersion` and `Content-Type`; the rest of the
//! server stays v1.28's.
//!
//! [`SimConfig::aggregated_discovery`]: crate::SimConfig::aggregated_discovery

use http::header::{HeaderValue, CACHE_CONTROL, CONTENT_TYPE, VARY};
use http::{Response, StatusCode};
use serde_json::{json, Map, Value};

use super::encoding;
use super::response::{self, Body};
use super::route::Discovery;
use crate::config::AggregatedDiscovery;
use crate::resources::{ResourceDef, Resources};
use crate::status;

/// The `Content-Type` of an aggregated discovery answer in `version` (exchange 93: `v2beta1`).
pub fn aggregated_content_type(version: AggregatedVersion) -> &'static str {
    match version {
        AggregatedVersion::V2 => {
            "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList"
        }
        AggregatedVersion::V2Beta1 => {
            "application/json;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList"
        }
    }
}

/// A version of `apidiscovery.k8s.io` `APIGroupDiscoveryList`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AggregatedVersion {
    /// `v2` (GA in v1.30).
    V2,
    /// `v2beta1` (v1.26–v1.32).
    V2Beta1,
}

impl AggregatedVersion {
    /// `v2` or `v2beta1`.
    pub fn name(self) -> &'static str {
        match self {
            AggregatedVersion::V2 => "v2",
            AggregatedVersion::V2Beta1 => "v2beta1",
        }
    }

    fn named(version: &str) -> Option<AggregatedVersion> {
        match version {
            "v2" => Some(AggregatedVersion::V2),
            "v2beta1" => Some(AggregatedVersion::V2Beta1),
            _ => None,
        }
    }
}

/// The form a discovery root is answered in.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RootForm {
    /// `APIGroupDiscoveryList` in this version.
    Aggregated(AggregatedVersion),
    /// `APIVersions` / `APIGroupList`.
    Legacy,
    /// 406: the request accepts nothing the server produces.
    NotAcceptable,
}

/// Which form `/api` or `/apis` is answered in, for a request's `Accept` (its media types in
/// the server's order, [`encoding::media_types`]): the first one the server can produce wins.
/// Plain `application/json` (or a wildcard) is the legacy document; `application/json` with
/// `g=apidiscovery.k8s.io;v=<version>;as=APIGroupDiscoveryList` the aggregated one in that
/// version, when `served`; JSON with any other `as` or an unserved version is skipped; other
/// media types (YAML, protobuf) are skipped too, as this server writes discovery in JSON only.
pub fn root_form(accept: Option<&str>, served: AggregatedDiscovery) -> RootForm {
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
        let served_version = param("v")
            .filter(|v| served.serves(v))
            .and_then(AggregatedVersion::named);
        match (param("as"), served_version) {
            (None, _) => return RootForm::Legacy,
            (Some("APIGroupDiscoveryList"), Some(version))
                if param("g") == Some("apidiscovery.k8s.io") =>
            {
                return RootForm::Aggregated(version)
            }
            (Some(_), _) => skipped_json = true,
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
    served: AggregatedDiscovery,
    stale: &super::stale::StaleGroups,
) -> Response<Body> {
    let root = matches!(which, Discovery::CoreVersions | Discovery::Groups);
    let form = if root {
        root_form(accept, served)
    } else {
        RootForm::Legacy
    };
    match form {
        RootForm::Legacy => {
            response::json(StatusCode::OK, &document(which, resources, server_address))
        }
        RootForm::NotAcceptable => response::status(status::not_acceptable()),
        RootForm::Aggregated(version) => {
            let core = matches!(which, Discovery::CoreVersions);
            let mut document = aggregated(resources, core, version);
            stale.mark_stale(&mut document);
            let mut answer = response::json(StatusCode::OK, &document);
            let headers = answer.headers_mut();
            headers.insert(
                CONTENT_TYPE,
                HeaderValue::from_static(aggregated_content_type(version)),
            );
            headers.insert(CACHE_CONTROL, HeaderValue::from_static("public"));
            headers.insert(VARY, HeaderValue::from_static("Accept"));
            answer
        }
    }
}

/// The aggregated document of `/api` (`core`: the core group alone, its item unnamed) or of
/// `/apis` (every other group, versions preferred first), in `version`.
pub fn aggregated(resources: &Resources, core: bool, version: AggregatedVersion) -> Value {
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
        "apiVersion": format!("apidiscovery.k8s.io/{}", version.name()),
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
    crate::store::namespace::is_namespaces(def)
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

    use kube_gc_fixtures::exchange as captured;

    fn accept_of(exchange: &Value) -> Option<&str> {
        exchange["request"]["headers"]["Accept"].as_str()
    }

    #[test]
    fn the_accept_header_picks_the_form_as_the_real_server_does() {
        let v1_28 = AggregatedDiscovery::V2Beta1;
        let beta = RootForm::Aggregated(AggregatedVersion::V2Beta1);
        for (exchange, form) in [
            ("93-discovery-apis-aggregated", beta),
            ("94-discovery-api-aggregated", beta),
            ("95-discovery-apis-v2-falls-back", RootForm::Legacy),
            ("96-discovery-apis-v2-only", RootForm::NotAcceptable),
            ("04-discovery-apis", RootForm::Legacy),
            ("209-discovery-apis-v2-then-v2beta1", beta),
            ("210-discovery-api-v2-then-v2beta1", beta),
        ] {
            assert_eq!(
                root_form(accept_of(&captured(exchange)), v1_28),
                form,
                "{exchange}"
            );
        }
        assert_eq!(root_form(None, v1_28), RootForm::Legacy);
        // A server without aggregated discovery answers the fallback.
        let asked = captured("93-discovery-apis-aggregated");
        assert_eq!(
            root_form(accept_of(&asked), AggregatedDiscovery::None),
            RootForm::Legacy
        );
    }

    /// The same requests to the servers of later releases: v1.30–v1.32 serve both versions and
    /// answer the first asked; v1.33 and later serve `v2` alone, so a client asking `v2beta1`
    /// then JSON (client-go before v0.30, kubectl v1.28) gets the legacy document.
    #[test]
    fn later_releases_answer_the_first_version_they_serve() {
        let v2 = RootForm::Aggregated(AggregatedVersion::V2);
        let beta = RootForm::Aggregated(AggregatedVersion::V2Beta1);
        for (exchange, both, v2_only) in [
            ("93-discovery-apis-aggregated", beta, RootForm::Legacy),
            ("95-discovery-apis-v2-falls-back", v2, v2),
            ("96-discovery-apis-v2-only", v2, v2),
            ("209-discovery-apis-v2-then-v2beta1", v2, v2),
            ("04-discovery-apis", RootForm::Legacy, RootForm::Legacy),
        ] {
            let accept = captured(exchange);
            let accept = accept_of(&accept);
            assert_eq!(
                root_form(accept, AggregatedDiscovery::Both),
                both,
                "{exchange}"
            );
            assert_eq!(
                root_form(accept, AggregatedDiscovery::V2),
                v2_only,
                "{exchange}"
            );
        }
        let beta_only = "application/json;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList";
        assert_eq!(
            root_form(Some(beta_only), AggregatedDiscovery::V2),
            RootForm::NotAcceptable
        );
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
        let apis = aggregated(&resources, false, AggregatedVersion::V2Beta1);
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
        let api = aggregated(&resources, true, AggregatedVersion::V2Beta1);
        let real_api = &captured("94-discovery-api-aggregated")["response"]["body"];
        assert_eq!(
            api["items"][0]["metadata"],
            real_api["items"][0]["metadata"]
        );
        assert_eq!(api["items"].as_array().unwrap().len(), 1);
    }
}
