//! Turning a request path into what it names.
//!
//! Contract: [`Route::parse`] understands the API server's URL layout —
//! `/healthz`, `/livez`, `/readyz`, `/openapi/v2`, `/openapi/v3[/...]`, `/version`, `/api`, `/api/v1`, `/apis`, `/apis/{group}`, `/apis/{group}/{version}` for
//! discovery, and for resources `/api/v1/...` or `/apis/{group}/{version}/...` followed by
//! `{resource}[/{name}[/{subresource}]]` or `namespaces/{ns}/{resource}[/{name}[/{subresource}]]`.
//! Paths naming nothing served parse to [`Route::NotFound`].

use crate::resources::{ResourceId, Resources};

/// A discovery document.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Discovery {
    /// `/version`
    Version,
    /// `/api`
    CoreVersions,
    /// `/api/v1`
    CoreResources,
    /// `/apis`
    Groups,
    /// `/apis/{group}`
    Group(String),
    /// `/apis/{group}/{version}`
    GroupResources(String, String),
}

/// The object or collection a resource path names.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Target {
    /// The resource.
    pub resource: ResourceId,
    /// The namespace from the path (`None` for cluster-scoped and all-namespaces requests).
    pub namespace: Option<String>,
    /// The object name (`None` for a collection).
    pub name: Option<String>,
    /// The subresource (`status`).
    pub subresource: Option<String>,
}

/// What a path names.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Route {
    /// `/healthz`, `/livez` or `/readyz`.
    Health,
    /// `/openapi/v2`, which kubectl reads before it creates or applies a file.
    OpenApiV2,
    /// `/openapi/v3` (`None`: the index) or a group version's document under it.
    OpenApiV3(Option<String>),
    /// A discovery document.
    Discovery(Discovery),
    /// An object or collection.
    Resource(Target),
    /// Nothing this server serves.
    NotFound,
    /// Under `/apis/{group}` for a group nothing serves: the real server's handler chain falls
    /// through to its not-found handler, a plain-text `404 page not found` (exchanges 64, 66),
    /// where an unknown version or resource of a served group is a `NotFound` Status (65).
    GroupNotServed,
}

impl Route {
    /// Parses a request path (without query).
    pub fn parse(path: &str, resources: &Resources) -> Route {
        let segments: Vec<&str> = path.trim_matches('/').split('/').collect();
        match segments.as_slice() {
            ["healthz" | "livez" | "readyz"] => Route::Health,
            ["openapi", "v2"] => Route::OpenApiV2,
            ["openapi", "v3"] => Route::OpenApiV3(None),
            ["openapi", "v3", document @ ..] => Route::OpenApiV3(Some(document.join("/"))),
            ["version"] => Route::Discovery(Discovery::Version),
            ["api"] => Route::Discovery(Discovery::CoreVersions),
            ["api", "v1"] => Route::Discovery(Discovery::CoreResources),
            ["apis"] => Route::Discovery(Discovery::Groups),
            ["apis", group] if is_served_group(resources, group) => {
                Route::Discovery(Discovery::Group(group.to_string()))
            }
            ["apis", group, version] if is_served_version(resources, group, version) => {
                Route::Discovery(Discovery::GroupResources(
                    group.to_string(),
                    version.to_string(),
                ))
            }
            ["api", "v1", rest @ ..] => resource_route(resources, "", "v1", rest),
            ["apis", group, version, rest @ ..] => resource_route(resources, group, version, rest),
            _ => Route::NotFound,
        }
    }
}

/// The group a path under `/apis/` names, if it names one.
pub fn group_of_path(path: &str) -> Option<&str> {
    let mut segments = path.trim_matches('/').split('/');
    match (segments.next(), segments.next()) {
        (Some("apis"), Some(group)) if !group.is_empty() => Some(group),
        _ => None,
    }
}

fn is_served_group(resources: &Resources, group: &str) -> bool {
    resources
        .iter()
        .any(|(_, d)| d.group == group && !group.is_empty())
}

fn is_served_version(resources: &Resources, group: &str, version: &str) -> bool {
    resources
        .iter()
        .any(|(_, d)| d.group == group && d.version == version && !group.is_empty())
}

fn resource_route(resources: &Resources, group: &str, version: &str, rest: &[&str]) -> Route {
    if rest.iter().any(|s| s.is_empty()) {
        return Route::NotFound;
    }
    // `namespaces/{ns}/{resource}/...` names a namespaced resource when `{resource}` is one;
    // otherwise `namespaces/{name}[/{subresource}]` is the cluster-scoped namespace itself.
    if let ["namespaces", namespace, resource, tail @ ..] = rest {
        if let Some(id) = resources.find(group, version, resource) {
            if resources.def(id).namespaced {
                return target(resources, id, Some(namespace), tail);
            }
        }
    }
    let [resource, tail @ ..] = rest else {
        return Route::NotFound;
    };
    let Some(id) = resources.find(group, version, resource) else {
        return Route::NotFound;
    };
    if resources.def(id).namespaced && !tail.is_empty() {
        // A namespaced object must be addressed through its namespace.
        return Route::NotFound;
    }
    target(resources, id, None, tail)
}

fn target(
    resources: &Resources,
    resource: ResourceId,
    namespace: Option<&str>,
    tail: &[&str],
) -> Route {
    let (name, subresource) = match tail {
        [] => (None, None),
        [name] => (Some(*name), None),
        // `status` where the resource has one, and a namespace's `finalize`.
        [name, "status"] if resources.def(resource).has_status => (Some(*name), Some("status")),
        [name, "finalize"] if crate::store::namespace::is_namespaces(resources.def(resource)) => {
            (Some(*name), Some("finalize"))
        }
        _ => return Route::NotFound,
    };
    Route::Resource(Target {
        resource,
        namespace: namespace.map(str::to_string),
        name: name.map(str::to_string),
        subresource: subresource.map(str::to_string),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn resources() -> Resources {
        Resources::default()
    }

    fn id(group: &str, version: &str, resource: &str) -> ResourceId {
        resources()
            .find(group, version, resource)
            .unwrap_or(ResourceId(usize::MAX))
    }

    #[test]
    fn discovery_paths() {
        let r = resources();
        assert_eq!(
            Route::parse("/version", &r),
            Route::Discovery(Discovery::Version)
        );
        assert_eq!(
            Route::parse("/api", &r),
            Route::Discovery(Discovery::CoreVersions)
        );
        assert_eq!(
            Route::parse("/api/v1", &r),
            Route::Discovery(Discovery::CoreResources)
        );
        assert_eq!(
            Route::parse("/apis/", &r),
            Route::Discovery(Discovery::Groups)
        );
        assert_eq!(
            Route::parse("/apis/batch/v1", &r),
            Route::Discovery(Discovery::GroupResources("batch".into(), "v1".into()))
        );
        assert_eq!(Route::parse("/apis/nothing/v1", &r), Route::NotFound);
        assert_eq!(Route::parse("/healthz/x", &r), Route::NotFound);
    }

    #[test]
    fn namespaced_and_cluster_paths() {
        let r = resources();
        let jobs = id("batch", "v1", "jobs");
        assert_eq!(
            Route::parse("/apis/batch/v1/namespaces/capture/jobs/pi/status", &r),
            Route::Resource(Target {
                resource: jobs,
                namespace: Some("capture".into()),
                name: Some("pi".into()),
                subresource: Some("status".into()),
            })
        );
        assert_eq!(
            Route::parse("/apis/batch/v1/jobs", &r),
            Route::Resource(Target {
                resource: jobs,
                namespace: None,
                name: None,
                subresource: None
            })
        );
        assert_eq!(Route::parse("/apis/batch/v1/jobs/pi", &r), Route::NotFound);
        let namespaces = id("", "v1", "namespaces");
        assert_eq!(
            Route::parse("/api/v1/namespaces/capture", &r),
            Route::Resource(Target {
                resource: namespaces,
                namespace: None,
                name: Some("capture".into()),
                subresource: None,
            })
        );
        assert_eq!(
            Route::parse("/api/v1/namespaces/capture/status", &r),
            Route::Resource(Target {
                resource: namespaces,
                namespace: None,
                name: Some("capture".into()),
                subresource: Some("status".into()),
            })
        );
        assert_eq!(
            Route::parse("/api/v1/namespaces/capture/widgets", &r),
            Route::NotFound
        );
    }
}
