//! Aggregated discovery: `/api` and `/apis` answering every group, version and resource in one
//! `APIGroupDiscoveryList` — two requests per discovery instead of one per group version. Servers
//! serve it as `apidiscovery.k8s.io/v2beta1` from v1.26 (on by default from v1.27; the v1.28 of
//! the captures), as `v2` too from v1.30, where it is GA, and as `v2` only from v1.33, whose
//! `AggregatedDiscoveryRemoveBetaType` gate is on by default.
//!
//! Contract, as client-go's discovery client reads it (v0.30–v0.33, the releases between v2's
//! arrival and v2beta1's removal):
//! - Ask with [`ACCEPT`]: `v2` first, then `v2beta1`, then plain JSON. A server takes the first
//!   it serves and skips the others: a v1.33 server answers `v2`, a v1.28 server, which knows no
//!   `v2`, answers `v2beta1` (exchange 209), and one without aggregated discovery the legacy
//!   document (exchange 95: the same rule, one form earlier) — one request in every case.
//! - Decide by what the server answered, never by what was asked: the response's `Content-Type`
//!   names the aggregated kind and its version in its parameters (`g`, `v`, `as`, in any order),
//!   else the body is the legacy document ([`answered_aggregated`]). Both versions have the same
//!   shape for everything read here.
//! - A group's versions are listed in order of preference; the preferred one is the first that
//!   is not `Stale`. A `Stale` version (an aggregated API whose server does not answer, exchange
//!   98) is a failure of that group version, as the 503 of its legacy document is (exchange 99):
//!   `outcomes` reports it as that 503, so the rest of discovery treats both forms alike.
//! - A resource without a `responseKind` kind is left out (client-go does the same); an empty
//!   `responseKind` group and version (every built-in resource in v1.28) mean the group version
//!   it is listed under. Subresources are nested here and not resources of their own.

use http::HeaderMap;
use serde::Deserialize;

use super::super::error::{ApiError, Error};
use super::legacy::{ApiResourceEntry, ApiResourceList, GroupVersion};

/// The `Accept` of a discovery root request: aggregated `v2`, else `v2beta1`, else plain JSON
/// (client-go's `acceptDiscoveryFormats`, v0.30–v0.33). The parameters go in the order `g`, `v`,
/// `as`, which servers expect in an `Accept`.
pub const ACCEPT: &str = "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList,\
application/json;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList,application/json";

/// The versions of `APIGroupDiscoveryList` read, newest first.
pub const VERSIONS: [&str; 2] = ["v2", "v2beta1"];

/// Whether a response's `Content-Type` says its body is an aggregated `APIGroupDiscoveryList`
/// (`v2` or `v2beta1`).
pub fn answered_aggregated(content_type: &str) -> bool {
    let mut parts = content_type.split(';').map(str::trim);
    if !parts
        .next()
        .is_some_and(|essence| essence.eq_ignore_ascii_case("application/json"))
    {
        return false;
    }
    let (mut group, mut version, mut kind) = (false, false, false);
    for (name, value) in parts.filter_map(|p| p.split_once('=')) {
        match name.trim() {
            "g" => group = value == "apidiscovery.k8s.io",
            "v" => version = VERSIONS.contains(&value),
            "as" => kind = value == "APIGroupDiscoveryList",
            _ => {}
        }
    }
    group && version && kind
}

/// `APIGroupDiscoveryList`.
#[derive(Debug, Deserialize)]
pub(super) struct ApiGroupDiscoveryList {
    #[serde(default)]
    items: Vec<ApiGroupDiscovery>,
}

#[derive(Debug, Deserialize)]
struct ApiGroupDiscovery {
    #[serde(default)]
    metadata: GroupName,
    #[serde(default)]
    versions: Vec<ApiVersionDiscovery>,
}

/// The core group's item has no name (exchange 94).
#[derive(Debug, Default, Deserialize)]
struct GroupName {
    #[serde(default)]
    name: String,
}

#[derive(Debug, Deserialize)]
struct ApiVersionDiscovery {
    version: String,
    #[serde(default)]
    resources: Vec<ApiResourceDiscovery>,
    #[serde(default)]
    freshness: Option<String>,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
struct ApiResourceDiscovery {
    resource: String,
    #[serde(default)]
    response_kind: Option<ResponseKind>,
    #[serde(default)]
    scope: String,
    #[serde(default)]
    verbs: Vec<String>,
    #[serde(default)]
    short_names: Vec<String>,
}

#[derive(Debug, Deserialize)]
struct ResponseKind {
    #[serde(default)]
    kind: String,
}

/// Every group version of an aggregated document, with its resources — or, for a `Stale` one,
/// the failure its legacy document would have been.
pub(super) fn outcomes(
    list: ApiGroupDiscoveryList,
) -> Vec<(GroupVersion, Result<ApiResourceList, Error>)> {
    let mut outcomes = Vec::new();
    for group in list.items {
        let mut preferred_taken = false;
        for version in group.versions {
            let stale = version.freshness.as_deref() == Some("Stale");
            let gv = GroupVersion {
                group: group.metadata.name.clone(),
                version: version.version,
                preferred: !stale && !preferred_taken,
            };
            preferred_taken |= gv.preferred;
            let outcome = if stale {
                Err(stale_error(&gv))
            } else {
                Ok(resource_list(version.resources))
            };
            outcomes.push((gv, outcome));
        }
    }
    outcomes
}

fn resource_list(resources: Vec<ApiResourceDiscovery>) -> ApiResourceList {
    let resources = resources
        .into_iter()
        .filter_map(|r| {
            let kind = r.response_kind.map(|k| k.kind).unwrap_or_default();
            (!kind.is_empty()).then(|| ApiResourceEntry {
                name: r.resource,
                namespaced: r.scope == "Namespaced",
                kind,
                verbs: r.verbs,
                short_names: r.short_names,
            })
        })
        .collect();
    ApiResourceList { resources }
}

/// A `Stale` group version as the 503 its legacy document answers (exchange 99).
fn stale_error(gv: &GroupVersion) -> Error {
    let message = format!(
        "aggregated discovery marks {} Stale: the API server behind it does not answer",
        gv.api_version()
    );
    ApiError::from_response(503, &HeaderMap::new(), message.as_bytes()).into()
}

#[cfg(test)]
mod tests {
    use super::*;

    use kube_gc_fixtures::{exchange as captured, response_body};

    fn outcomes_of(exchange: &str) -> Vec<(GroupVersion, Result<ApiResourceList, Error>)> {
        outcomes(response_body(exchange))
    }

    #[test]
    fn the_content_type_decides_not_the_accept() {
        for exchange in [
            "93-discovery-apis-aggregated",
            "94-discovery-api-aggregated",
            "209-discovery-apis-v2-then-v2beta1",
        ] {
            let answer = captured(exchange);
            let content_type = answer["response"]["headers"]["content-type"]
                .as_str()
                .unwrap();
            assert!(answered_aggregated(content_type), "{exchange}");
        }
        // v1.28's client-go asked v2beta1 then JSON (93, 94); asked as kube-gc asks now, v2 first,
        // a v1.28 server skips the v2 it does not serve and answers v2beta1 (209).
        let v1_28 = "application/json;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList,application/json";
        assert_eq!(captured("93-")["request"]["headers"]["Accept"], v1_28);
        assert!(ACCEPT.ends_with(v1_28));
        let now = captured("209-");
        assert_eq!(now["request"]["headers"]["Accept"], ACCEPT);
        assert_eq!(
            now["response"]["body"]["apiVersion"],
            "apidiscovery.k8s.io/v2beta1"
        );
        // Asked for v2 then plain JSON, v1.28 answers plain JSON (exchange 95).
        let legacy = captured("95-discovery-apis-v2-falls-back");
        assert!(!answered_aggregated(
            legacy["response"]["headers"]["content-type"]
                .as_str()
                .unwrap()
        ));
        assert!(answered_aggregated(
            "application/json; as=APIGroupDiscoveryList;v=v2beta1; g=apidiscovery.k8s.io"
        ));
        // What a v1.30 or later server answers to v2.
        assert!(answered_aggregated(
            "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList"
        ));
        assert!(!answered_aggregated(
            "application/json;g=apidiscovery.k8s.io;v=v3;as=APIGroupDiscoveryList"
        ));
        assert!(!answered_aggregated(
            "application/yaml;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList"
        ));
    }

    #[test]
    fn every_group_version_of_the_captured_server_with_its_preferred_version() {
        let outcomes = outcomes_of("93-discovery-apis-aggregated");
        let versions: Vec<(String, bool)> = outcomes
            .iter()
            .filter(|(gv, _)| gv.group == "autoscaling")
            .map(|(gv, _)| (gv.version.clone(), gv.preferred))
            .collect();
        assert_eq!(versions, [("v2".into(), true), ("v1".into(), false)]);
        let (_, batch) = outcomes
            .iter()
            .find(|(gv, _)| gv.group == "batch" && gv.version == "v1")
            .unwrap();
        let jobs = batch
            .as_ref()
            .unwrap()
            .resources
            .iter()
            .find(|r| r.name == "jobs")
            .unwrap();
        assert_eq!((jobs.kind.as_str(), jobs.namespaced), ("Job", true));
        assert!(jobs.verbs.iter().any(|v| v == "delete"));
        let (_, volcano) = outcomes
            .iter()
            .find(|(gv, _)| gv.group == "batch.volcano.sh")
            .unwrap();
        let vcjobs = &volcano.as_ref().unwrap().resources[0];
        assert_eq!(vcjobs.short_names, ["vcjob", "vj"]);
        // Subresources are nested, never resources of their own.
        assert!(outcomes
            .iter()
            .filter_map(|(_, o)| o.as_ref().ok())
            .flat_map(|l| &l.resources)
            .all(|r| !r.name.contains('/')));
    }

    #[test]
    fn the_core_group_has_the_empty_name_and_cluster_scope_is_read() {
        let outcomes = outcomes_of("94-discovery-api-aggregated");
        assert_eq!(outcomes.len(), 1);
        let (gv, list) = &outcomes[0];
        assert_eq!(
            (gv.group.as_str(), gv.version.as_str(), gv.preferred),
            ("", "v1", true)
        );
        let list = list.as_ref().unwrap();
        let namespaces = list
            .resources
            .iter()
            .find(|r| r.name == "namespaces")
            .unwrap();
        assert!(!namespaces.namespaced);
        assert_eq!(namespaces.kind, "Namespace");
    }

    #[test]
    fn a_stale_group_version_fails_as_its_legacy_document_does() {
        let outcomes = outcomes_of("98-discovery-apis-aggregated-stale");
        let (gv, outcome) = outcomes
            .iter()
            .find(|(gv, _)| gv.group == "metrics.k8s.io")
            .unwrap();
        assert!(!gv.preferred, "a stale version is never the preferred one");
        let error = outcome.as_ref().unwrap_err();
        let legacy = captured("99-discovery-unavailable-aggregated-group-version");
        assert_eq!(
            Some(legacy["response"]["status"].as_u64().unwrap() as u16),
            error.code()
        );
        assert!(error.is_unavailable());
        // The other groups of the same answer are unaffected.
        assert!(outcomes
            .iter()
            .filter(|(gv, _)| gv.group != "metrics.k8s.io")
            .all(|(_, o)| o.is_ok()));
    }

    #[test]
    fn a_resource_without_a_kind_is_left_out() {
        let list: ApiGroupDiscoveryList = serde_json::from_value(serde_json::json!({
            "items": [{"metadata": {"name": "example.com"}, "versions": [{"version": "v1",
                "resources": [
                    {"resource": "widgets", "scope": "Namespaced", "verbs": ["list"]},
                    {"resource": "gadgets", "responseKind": {"group": "", "version": "", "kind": "Gadget"},
                     "scope": "Cluster", "verbs": ["list"]}
                ], "freshness": "Current"}]}]
        }))
        .unwrap();
        let outcomes = outcomes(list);
        let names: Vec<&str> = outcomes[0]
            .1
            .as_ref()
            .unwrap()
            .resources
            .iter()
            .map(|r| r.name.as_str())
            .collect();
        assert_eq!(names, ["gadgets"]);
    }
}
