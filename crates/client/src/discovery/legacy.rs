//! The legacy discovery documents, one request per group version: `/api` (`APIVersions`),
//! `/apis` (`APIGroupList`) and `/api/{v}`, `/apis/{g}/{v}` (`APIResourceList`, in the shapes of
//! exchanges 01–07). Every server serves them; [`super::Discovery::run`] reads them when the
//! server does not answer `/api` and `/apis` in the aggregated form ([`super::aggregated`]), and a
//! group version's own document is always this one (exchange 97).

use serde::Deserialize;

use super::super::error::Error;
use super::super::request::ApiRequest;
use super::super::resource_ref::push_segments;
use super::super::transport::Client;
use kube_gc_api::api_version_of;

/// One group version to read.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) struct GroupVersion {
    pub(super) group: String,
    pub(super) version: String,
    pub(super) preferred: bool,
}

impl GroupVersion {
    /// Every version of a group, the preferred one flagged (the first listed when the server
    /// names none, as client-go assumes).
    pub(super) fn all_of(group: &ApiGroup) -> Vec<GroupVersion> {
        let preferred = group
            .preferred_version
            .as_ref()
            .or(group.versions.first())
            .map(|v| v.version.as_str());
        group
            .versions
            .iter()
            .map(|v| GroupVersion {
                group: group.name.clone(),
                version: v.version.clone(),
                preferred: Some(v.version.as_str()) == preferred,
            })
            .collect()
    }

    /// The core group's versions from `/api`, the first preferred.
    pub(super) fn core(versions: &ApiVersions) -> Vec<GroupVersion> {
        versions
            .versions
            .iter()
            .enumerate()
            .map(|(i, v)| GroupVersion {
                group: String::new(),
                version: v.clone(),
                preferred: i == 0,
            })
            .collect()
    }

    pub(super) fn api_version(&self) -> String {
        api_version_of(&self.group, &self.version)
    }

    pub(super) async fn fetch(&self, client: &Client) -> Result<ApiResourceList, Error> {
        if self.group.is_empty() {
            get_document(client, &["api", &self.version]).await
        } else {
            get_document(client, &["apis", &self.group, &self.version]).await
        }
    }
}

pub(super) async fn get_document<T: serde::de::DeserializeOwned>(
    client: &Client,
    segments: &[&str],
) -> Result<T, Error> {
    let mut url = client.server().clone();
    push_segments(&mut url, segments);
    client.send_for_json(&ApiRequest::get(url)).await
}

/// `/api`: `APIVersions`.
#[derive(Debug, Deserialize)]
pub(super) struct ApiVersions {
    #[serde(default)]
    pub(super) versions: Vec<String>,
}

/// `/apis`: `APIGroupList`.
#[derive(Debug, Deserialize)]
pub(super) struct ApiGroupList {
    #[serde(default)]
    pub(super) groups: Vec<ApiGroup>,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct ApiGroup {
    pub(super) name: String,
    #[serde(default)]
    pub(super) versions: Vec<VersionForDiscovery>,
    #[serde(default)]
    pub(super) preferred_version: Option<VersionForDiscovery>,
}

#[derive(Debug, Deserialize)]
pub(super) struct VersionForDiscovery {
    pub(super) version: String,
}

/// `/api/{v}`, `/apis/{g}/{v}`: `APIResourceList`.
#[derive(Debug, Deserialize)]
pub(super) struct ApiResourceList {
    #[serde(default)]
    pub(super) resources: Vec<ApiResourceEntry>,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct ApiResourceEntry {
    pub(super) name: String,
    #[serde(default)]
    pub(super) namespaced: bool,
    #[serde(default)]
    pub(super) kind: String,
    #[serde(default)]
    pub(super) verbs: Vec<String>,
    #[serde(default)]
    pub(super) short_names: Vec<String>,
}
