//! [`Discovery`]: which resources the API server serves, with their verbs, kind and scope.
//!
//! Contract:
//! - Read in two requests where the server serves aggregated discovery (v1.26 and later):
//!   `/api` and `/apis` asked for the aggregated form, each answering every group version with
//!   its resources ([`aggregated`]). A server that does not answers the same requests with the
//!   legacy documents, and then each group version's own document is read as well
//!   (`/api/{v}`, `/apis/{group}/{version}`: [`legacy`]), concurrently (each request is still
//!   throttled). Which form a response is in is read from its `Content-Type`. Every version of
//!   every group is kept, because an ownerReference may name a version that is not the
//!   preferred one.
//! - Subresources (`pods/status`, `jobs/status`) are not resources of their own and are left
//!   out; a resource's verbs are its own.
//! - A group version whose resources cannot be read — its document fails or does not decode,
//!   or the aggregated answer marks it `Stale` — is recorded in [`Discovery::failures`] and the
//!   rest is still returned: an aggregated API that is down must not stop the garbage collector
//!   (it keeps that group's monitors). Only a failure of `/api` or `/apis` themselves is an
//!   error.
//! - [`Discovery::deletable`] is the garbage collector's monitor set: preferred versions only,
//!   resources whose verbs include `delete`, `list` and `watch`.
//! - [`Discovery::resource_for_kind`] maps an ownerReference's `apiVersion` + `kind` to the
//!   resource to GET the owner from.

pub mod aggregated;
pub mod legacy;

use std::collections::HashMap;

use futures_util::future::join_all;
use http::header::CONTENT_TYPE;
use serde::de::DeserializeOwned;

use super::availability::warn_unless_unavailable;
use super::error::Error;
use super::request::ApiRequest;
use super::resource_ref::{push_segments, ResourceRef};
use super::transport::Client;
use aggregated::ApiGroupDiscoveryList;
use legacy::{ApiGroupList, ApiResourceList, ApiVersions, GroupVersion};

/// One resource the server serves, in one group version.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DiscoveredResource {
    /// Group, version, plural, kind and scope.
    pub resource: ResourceRef,
    /// The verbs it supports (`get`, `list`, `watch`, `delete`…).
    pub verbs: Vec<String>,
    /// Short names (`cm`, `vcjob`).
    pub short_names: Vec<String>,
    /// Whether its version is its group's preferred version.
    pub preferred: bool,
}

impl DiscoveredResource {
    /// Whether `verb` is supported.
    pub fn supports(&self, verb: &str) -> bool {
        self.verbs.iter().any(|v| v == verb)
    }

    /// Whether the garbage collector can watch and delete it: verbs include `delete`, `list`
    /// and `watch`.
    pub fn is_deletable(&self) -> bool {
        ["delete", "list", "watch"].iter().all(|v| self.supports(v))
    }
}

/// A group version whose discovery document could not be read.
#[derive(Debug)]
pub struct DiscoveryFailure {
    /// e.g. `metrics.k8s.io/v1beta1`.
    pub group_version: String,
    /// Why.
    pub error: Error,
}

/// The server's resources, as discovered at one point in time.
#[derive(Debug, Default)]
pub struct Discovery {
    resources: Vec<DiscoveredResource>,
    failures: Vec<DiscoveryFailure>,
    /// (apiVersion, kind) → index in `resources`.
    by_kind: HashMap<(String, String), usize>,
}

impl Discovery {
    /// Reads what the server serves: `/api` and `/apis`, and, if they did not answer in the
    /// aggregated form, every group version's own document.
    pub async fn run(client: &Client) -> Result<Discovery, Error> {
        let mut outcomes = Vec::new();
        let mut to_read = Vec::new();
        match get_root::<ApiVersions>(client, "api").await? {
            Root::Aggregated(list) => outcomes.extend(aggregated::outcomes(list)),
            Root::Legacy(core) => to_read.extend(GroupVersion::core(&core)),
        }
        match get_root::<ApiGroupList>(client, "apis").await? {
            Root::Aggregated(list) => outcomes.extend(aggregated::outcomes(list)),
            Root::Legacy(groups) => {
                to_read.extend(groups.groups.iter().flat_map(GroupVersion::all_of))
            }
        }
        if !to_read.is_empty() {
            tracing::debug!(
                group_versions = to_read.len(),
                "no aggregated discovery: reading each group version"
            );
        }
        let documents = join_all(to_read.iter().map(|gv| gv.fetch(client))).await;
        outcomes.extend(to_read.into_iter().zip(documents));
        Ok(Self::assemble(outcomes))
    }

    /// Builds the result from each group version's outcome.
    fn assemble(
        outcomes: impl IntoIterator<Item = (GroupVersion, Result<ApiResourceList, Error>)>,
    ) -> Discovery {
        let mut discovery = Discovery::default();
        for (gv, outcome) in outcomes {
            match outcome {
                Ok(list) => discovery.add(&gv, list),
                Err(error) => {
                    warn_unless_unavailable!(error, group_version = %gv.api_version(), err = %error, "discovery failed for a group version");
                    discovery.failures.push(DiscoveryFailure {
                        group_version: gv.api_version(),
                        error,
                    });
                }
            }
        }
        discovery
    }

    fn add(&mut self, gv: &GroupVersion, list: ApiResourceList) {
        for entry in list.resources {
            if entry.name.contains('/') {
                continue;
            }
            let resource = ResourceRef::new(
                &gv.group,
                &gv.version,
                &entry.name,
                &entry.kind,
                entry.namespaced,
            );
            let key = (gv.api_version(), entry.kind.clone());
            self.by_kind.entry(key).or_insert(self.resources.len());
            self.resources.push(DiscoveredResource {
                resource,
                verbs: entry.verbs,
                short_names: entry.short_names,
                preferred: gv.preferred,
            });
        }
    }

    /// Reads one group version's document only (`/apis/{group}/{version}`, `/api/{version}`)
    /// — a cheap check for one API, where [`run`](Self::run) reads every group. A group version
    /// that is not served is an empty result, not an error: a real server answers `NotFound`
    /// (plain text when nothing serves the group, exchanges 64–66). Its resources are not
    /// marked preferred: one document cannot tell.
    pub async fn group_version(
        client: &Client,
        group: &str,
        version: &str,
    ) -> Result<Discovery, Error> {
        let gv = GroupVersion {
            group: group.to_owned(),
            version: version.to_owned(),
            preferred: false,
        };
        let mut discovery = Discovery::default();
        match gv.fetch(client).await {
            Ok(list) => discovery.add(&gv, list),
            Err(e) if e.is_not_found() => {}
            Err(e) => return Err(e),
        }
        Ok(discovery)
    }

    /// Whether `resource` (group, version and plural) is served with the verbs a controller
    /// needs to list, watch and delete it.
    pub fn serves(&self, resource: &ResourceRef) -> bool {
        self.resources
            .iter()
            .any(|r| r.resource.is_same_resource(resource) && r.is_deletable())
    }

    /// Every resource of every version served.
    pub fn resources(&self) -> &[DiscoveredResource] {
        &self.resources
    }

    /// Resources in their group's preferred version.
    pub fn preferred(&self) -> impl Iterator<Item = &DiscoveredResource> {
        self.resources.iter().filter(|r| r.preferred)
    }

    /// The resources the garbage collector monitors: preferred versions, deletable.
    pub fn deletable(&self) -> Vec<&ResourceRef> {
        self.preferred()
            .filter(|r| r.is_deletable())
            .map(|r| &r.resource)
            .collect()
    }

    /// The resource serving `kind` in `api_version` (`v1`, `batch/v1`), e.g. for an
    /// ownerReference.
    pub fn resource_for_kind(&self, api_version: &str, kind: &str) -> Option<&DiscoveredResource> {
        let index = self
            .by_kind
            .get(&(api_version.to_owned(), kind.to_owned()))?;
        self.resources.get(*index)
    }

    /// This discovery, with what `previous` knew of each group version that failed this time:
    /// a group version that could not be read this time is not known to be gone (an
    /// aggregated API down, a request refused in passing), so its resources, and the kinds they
    /// map, stay as they were. The failures are still reported.
    pub fn keeping_failed_from(mut self, previous: &Discovery) -> Discovery {
        let failed: Vec<&str> = self
            .failures
            .iter()
            .map(|f| f.group_version.as_str())
            .collect();
        let kept: Vec<DiscoveredResource> = previous
            .resources
            .iter()
            .filter(|r| failed.contains(&r.resource.api_version().as_str()))
            .cloned()
            .collect();
        for resource in kept {
            let key = (
                resource.resource.api_version(),
                resource.resource.kind.clone(),
            );
            self.by_kind.entry(key).or_insert(self.resources.len());
            self.resources.push(resource);
        }
        self
    }

    /// Takes the group versions whose discovery failed out of this result.
    pub fn take_failures(&mut self) -> Vec<DiscoveryFailure> {
        std::mem::take(&mut self.failures)
    }

    /// Group versions whose discovery failed.
    pub fn failures(&self) -> &[DiscoveryFailure] {
        &self.failures
    }

    /// Whether discovery of `group` failed for at least one of its versions, so its resources
    /// may be missing from this result.
    pub fn group_failed(&self, group: &str) -> bool {
        self.failures
            .iter()
            .any(|f| group_of(&f.group_version) == group)
    }
}

/// What a discovery root (`/api`, `/apis`) answered.
enum Root<L> {
    /// Every group version with its resources.
    Aggregated(ApiGroupDiscoveryList),
    /// The legacy document: the versions or groups only.
    Legacy(L),
}

/// GETs `/{segment}` offering the aggregated form first, and decodes what came back by its
/// `Content-Type`.
async fn get_root<L: DeserializeOwned>(client: &Client, segment: &str) -> Result<Root<L>, Error> {
    let mut url = client.server().clone();
    push_segments(&mut url, &[segment]);
    let request = ApiRequest::get(url).with_accept(aggregated::ACCEPT);
    let response = client.send(&request).await?;
    let is_aggregated = response
        .headers()
        .get(CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(aggregated::answered_aggregated);
    let body = response.bytes().await?;
    let decoded = if is_aggregated {
        serde_json::from_slice(&body).map(Root::Aggregated)
    } else {
        serde_json::from_slice(&body).map(Root::Legacy)
    };
    decoded.map_err(|e| Error::decode("discovery document", &body, e))
}

/// The group of an `apiVersion` (`batch/v1` → `batch`, `v1` → the core group).
fn group_of(api_version: &str) -> &str {
    api_version.rsplit_once('/').map_or("", |(group, _)| group)
}

#[cfg(test)]
mod tests {
    use super::legacy::{ApiGroupList, ApiVersions};
    use super::*;

    use kube_gc_fixtures::response_body as captured;

    fn gv(group: &str, version: &str, preferred: bool) -> GroupVersion {
        GroupVersion {
            group: group.into(),
            version: version.into(),
            preferred,
        }
    }

    /// Discovery of the captured server: core v1, batch/v1, apps/v1, coordination and Volcano.
    fn real_discovery() -> Discovery {
        Discovery::assemble([
            (gv("", "v1", true), Ok(captured("03-discovery-api-v1"))),
            (
                gv("batch", "v1", true),
                Ok(captured("05-discovery-apis-batch-v1")),
            ),
            (
                gv("apps", "v1", true),
                Ok(captured("06-discovery-apis-apps-v1")),
            ),
            (
                gv("coordination.k8s.io", "v1", true),
                Ok(captured("07-discovery-apis-coordination.k8s.io-v1")),
            ),
            (
                gv("batch.volcano.sh", "v1alpha1", true),
                Ok(captured("46-discovery-apis-batch.volcano.sh-v1alpha1")),
            ),
        ])
    }

    #[test]
    fn the_captured_groups_and_their_preferred_versions() {
        let groups: ApiGroupList = captured("04-discovery-apis");
        let autoscaling = groups
            .groups
            .iter()
            .find(|g| g.name == "autoscaling")
            .unwrap();
        let versions = GroupVersion::all_of(autoscaling);
        assert_eq!(
            versions,
            vec![
                gv("autoscaling", "v2", true),
                gv("autoscaling", "v1", false)
            ]
        );
        let core: ApiVersions = captured("02-discovery-api");
        assert_eq!(core.versions, vec!["v1"]);
    }

    #[test]
    fn deletable_resources_exclude_subresources_and_read_only_resources() {
        let discovery = real_discovery();
        let deletable: Vec<String> = discovery
            .deletable()
            .iter()
            .map(|r| r.path_name())
            .collect();
        for expected in [
            "v1/pods",
            "v1/configmaps",
            "batch/v1/jobs",
            "batch/v1/cronjobs",
            "apps/v1/deployments",
            "coordination.k8s.io/v1/leases",
            "batch.volcano.sh/v1alpha1/jobs",
        ] {
            assert!(
                deletable.contains(&expected.to_owned()),
                "{expected} missing"
            );
        }
        // `bindings` is create-only, `componentstatuses` get/list only.
        assert!(!deletable.iter().any(|r| r.ends_with("/bindings")));
        assert!(!deletable.iter().any(|r| r.ends_with("/componentstatuses")));
        assert!(!deletable.iter().any(|r| r.contains("/status")));
        assert!(discovery
            .resources()
            .iter()
            .all(|r| !r.resource.plural.contains('/')));
    }

    #[test]
    fn kinds_map_to_resources_by_api_version() {
        let discovery = real_discovery();
        let job = discovery.resource_for_kind("batch/v1", "Job").unwrap();
        assert_eq!(
            job.resource,
            ResourceRef::new("batch", "v1", "jobs", "Job", true)
        );
        let vcjob = discovery
            .resource_for_kind("batch.volcano.sh/v1alpha1", "Job")
            .unwrap();
        assert_eq!(vcjob.short_names, vec!["vcjob", "vj"]);
        let namespace = discovery.resource_for_kind("v1", "Namespace").unwrap();
        assert!(!namespace.resource.namespaced);
        assert_eq!(namespace.resource.plural, "namespaces");
        assert!(discovery.resource_for_kind("batch/v2", "Job").is_none());
        assert!(discovery.resource_for_kind("v1", "Nope").is_none());
    }

    #[test]
    fn a_failed_group_is_reported_and_the_rest_is_kept() {
        let broken: Error =
            crate::ApiError::from_response(503, &http::HeaderMap::new(), b"service unavailable")
                .into();
        let discovery = Discovery::assemble([
            (
                gv("batch", "v1", true),
                Ok(captured("05-discovery-apis-batch-v1")),
            ),
            (gv("metrics.k8s.io", "v1beta1", true), Err(broken)),
        ]);
        assert_eq!(discovery.failures().len(), 1);
        assert_eq!(
            discovery.failures()[0].group_version,
            "metrics.k8s.io/v1beta1"
        );
        assert!(discovery.group_failed("metrics.k8s.io"));
        assert!(!discovery.group_failed("batch"));
        assert!(discovery.resource_for_kind("batch/v1", "Job").is_some());
    }

    #[test]
    fn a_group_version_that_failed_this_time_keeps_what_the_last_discovery_knew_of_it() {
        let refused = || -> Error {
            crate::ApiError::from_response(503, &http::HeaderMap::new(), b"").into()
        };
        let before = real_discovery();
        let now = Discovery::assemble([
            (
                gv("batch", "v1", true),
                Ok(captured("05-discovery-apis-batch-v1")),
            ),
            (gv("apps", "v1", true), Err(refused())),
        ]);
        assert!(now.resource_for_kind("apps/v1", "ReplicaSet").is_none());
        let merged = now.keeping_failed_from(&before);
        let replicasets = merged
            .resource_for_kind("apps/v1", "ReplicaSet")
            .expect("kept from the last discovery");
        assert!(replicasets.preferred);
        assert!(merged
            .deletable()
            .iter()
            .any(|r| r.path_name() == "apps/v1/deployments"));
        assert!(merged.group_failed("apps"), "the failure is still reported");
        // A group that was read this time is not topped up: what is gone from it is gone.
        assert!(merged.resource_for_kind("v1", "Pod").is_none());
    }

    #[test]
    fn the_aggregated_answer_says_what_the_legacy_documents_say() {
        let aggregated_of =
            |exchange: &str| aggregated::outcomes(captured::<ApiGroupDiscoveryList>(exchange));
        let mut outcomes = aggregated_of("94-discovery-api-aggregated");
        outcomes.extend(aggregated_of("93-discovery-apis-aggregated"));
        let from_aggregated = Discovery::assemble(outcomes);
        let from_legacy = real_discovery();
        let described = |discovery: &Discovery, api_version: &str| {
            let mut resources: Vec<String> = discovery
                .resources()
                .iter()
                .filter(|r| r.resource.api_version() == api_version)
                .map(|r| {
                    let mut verbs = r.verbs.clone();
                    verbs.sort();
                    format!(
                        "{:?} {verbs:?} {:?} {}",
                        r.resource, r.short_names, r.preferred
                    )
                })
                .collect();
            resources.sort();
            resources
        };
        for api_version in [
            "v1",
            "batch/v1",
            "apps/v1",
            "coordination.k8s.io/v1",
            "batch.volcano.sh/v1alpha1",
        ] {
            let legacy = described(&from_legacy, api_version);
            assert!(!legacy.is_empty(), "{api_version}");
            assert_eq!(
                described(&from_aggregated, api_version),
                legacy,
                "{api_version}"
            );
        }
        assert!(from_aggregated.failures().is_empty());
    }
}
