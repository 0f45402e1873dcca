//! [`ResourceRef`]: which REST resource a request is about, and the URL paths it is served at.
//!
//! Contract:
//! - A resource is named by group, version and lower-case plural (`batch`, `v1`, `jobs`); the
//!   core group is the empty group and is served under `/api` instead of `/apis/{group}`.
//! - Namespaced resources are reached in one namespace (`…/namespaces/{ns}/{plural}`) or across
//!   all of them (`…/{plural}`); cluster-scoped ones never carry a namespace segment, whatever
//!   the caller asks.
//! - Paths are appended to the server URL segment by segment, so a server URL with a path prefix
//!   (a proxy such as `https://host/k8s/clusters/c-1`) keeps its prefix and every segment is
//!   percent-encoded.

use url::Url;

use kube_gc_api::{api_version_of, Resource};

/// A REST resource: group, version, plural, kind and scope.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ResourceRef {
    /// The API group; empty for the core group.
    pub group: String,
    /// The version within the group, e.g. `v1`.
    pub version: String,
    /// The lower-case plural used in URLs, e.g. `jobs`.
    pub plural: String,
    /// The kind of its objects, e.g. `Job`. Metadata-only responses do not carry it, so it is
    /// kept here, taken from the request side.
    pub kind: String,
    /// Whether objects live in a namespace.
    pub namespaced: bool,
}

impl ResourceRef {
    /// A resource from its parts.
    pub fn new(group: &str, version: &str, plural: &str, kind: &str, namespaced: bool) -> Self {
        ResourceRef {
            group: group.to_owned(),
            version: version.to_owned(),
            plural: plural.to_owned(),
            kind: kind.to_owned(),
            namespaced,
        }
    }

    /// The resource a typed object is served at.
    pub fn of<K: Resource>() -> Self {
        Self::new(K::GROUP, K::VERSION, K::PLURAL, K::KIND, K::NAMESPACED)
    }

    /// The `apiVersion` of its objects: `group/version`, or `version` for the core group.
    pub fn api_version(&self) -> String {
        api_version_of(&self.group, &self.version)
    }

    /// Whether `other` names the same resource: group, version and plural (kind and scope
    /// follow from those).
    pub fn is_same_resource(&self, other: &ResourceRef) -> bool {
        self.group == other.group && self.version == other.version && self.plural == other.plural
    }

    /// `apiVersion/plural`, e.g. `batch/v1/jobs` or `v1/pods`: how logs and metrics name it.
    pub fn path_name(&self) -> String {
        format!("{}/{}", self.api_version(), self.plural)
    }

    /// The URL of the collection, in `namespace` or across all namespaces (`None`).
    pub fn collection_url(&self, server: &Url, namespace: Option<&str>) -> Url {
        self.url(server, namespace, None, None)
    }

    /// The URL of one object, or of one of its subresources (`status`).
    pub fn object_url(
        &self,
        server: &Url,
        namespace: Option<&str>,
        name: &str,
        subresource: Option<&str>,
    ) -> Url {
        self.url(server, namespace, Some(name), subresource)
    }

    fn url(
        &self,
        server: &Url,
        namespace: Option<&str>,
        name: Option<&str>,
        subresource: Option<&str>,
    ) -> Url {
        let mut url = server.clone();
        url.set_query(None);
        url.set_fragment(None);
        let mut segments: Vec<&str> = self.group_version_segments();
        if let Some(ns) = namespace.filter(|_| self.namespaced) {
            segments.extend(["namespaces", ns]);
        }
        segments.push(&self.plural);
        segments.extend(name);
        segments.extend(subresource);
        push_segments(&mut url, &segments);
        url
    }

    /// `["api", version]` for the core group, `["apis", group, version]` otherwise.
    fn group_version_segments(&self) -> Vec<&str> {
        if self.group.is_empty() {
            vec!["api", &self.version]
        } else {
            vec!["apis", &self.group, &self.version]
        }
    }
}

/// Appends path segments to `url`, keeping any path prefix it has. A URL that cannot have a
/// path (`mailto:`) never reaches here: [`Client`](super::Client) only accepts http(s) URLs.
pub(crate) fn push_segments(url: &mut Url, segments: &[&str]) {
    if let Ok(mut path) = url.path_segments_mut() {
        path.pop_if_empty().extend(segments);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use kube_gc_api::Job;

    fn server() -> Url {
        Url::parse("https://example.test:6443").unwrap()
    }

    #[test]
    fn core_and_named_groups_have_their_own_prefixes() {
        let pods = ResourceRef::new("", "v1", "pods", "Pod", true);
        assert_eq!(
            pods.object_url(&server(), Some("default"), "p", None)
                .as_str(),
            "https://example.test:6443/api/v1/namespaces/default/pods/p"
        );
        let jobs = ResourceRef::of::<Job>();
        assert_eq!(jobs.api_version(), "batch/v1");
        assert_eq!(
            jobs.collection_url(&server(), None).as_str(),
            "https://example.test:6443/apis/batch/v1/jobs"
        );
        assert_eq!(
            jobs.object_url(&server(), Some("ns"), "j", Some("status"))
                .path(),
            "/apis/batch/v1/namespaces/ns/jobs/j/status"
        );
    }

    #[test]
    fn cluster_scoped_resources_ignore_a_namespace() {
        let ns = ResourceRef::new("", "v1", "namespaces", "Namespace", false);
        assert_eq!(
            ns.object_url(&server(), Some("ignored"), "kube-system", None)
                .path(),
            "/api/v1/namespaces/kube-system"
        );
    }

    #[test]
    fn a_server_path_prefix_is_kept_and_segments_are_escaped() {
        let server = Url::parse("https://rancher.test/k8s/clusters/c-1/").unwrap();
        let cms = ResourceRef::new("", "v1", "configmaps", "ConfigMap", true);
        assert_eq!(
            cms.object_url(&server, Some("a b"), "x/y", None).path(),
            "/k8s/clusters/c-1/api/v1/namespaces/a%20b/configmaps/x%2Fy"
        );
    }
}
