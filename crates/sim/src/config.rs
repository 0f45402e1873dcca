//! How a simulated server is set up.
//!
//! Contract: [`SimConfig::default`] is a plain-HTTP server on `127.0.0.1:<random port>` serving
//! [`default_resources`], with no authentication, every request authorized, no faults, a 100 000-change etcd history
//! compacted every 5 minutes, watch caches sized like the real server's (100 to 102,400 events,
//! keeping 75 s), lists waiting 3 s for a version the server has not reached, bookmarks every
//! 60 s, WatchList off (like a v1.28 server) and the system clock. Each knob has a `with_*`
//! builder method; [`SimConfig::with_workload_custom_resources`] also serves the custom
//! resources of the workloads the retention presets clean up.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use crate::clock::{Clock, SystemClock};
use crate::faults::FaultPlan;
use crate::handlers::authorize::ResourceDenial;
use crate::handlers::reviews::{NonResourceGrant, SimUser};
use crate::resources::{default_resources, workload_custom_resources, ResourceDef};
use crate::store::WatchCacheSizing;

/// The versions of `apidiscovery.k8s.io` `APIGroupDiscoveryList` a server answers `/api` and
/// `/apis` in, by release.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum AggregatedDiscovery {
    /// None: the legacy documents only, as before v1.26.
    None,
    /// `v2beta1`, as v1.26–v1.29 (on by default from v1.27; the v1.28 of the captures).
    #[default]
    V2Beta1,
    /// `v2` and `v2beta1`, as v1.30–v1.32 (`v2` GA).
    Both,
    /// `v2` only, as v1.33 and later (`AggregatedDiscoveryRemoveBetaType` on by default).
    V2,
}

impl AggregatedDiscovery {
    /// Every setting, as `kube-gc sim --aggregated-discovery` names them.
    pub const NAMES: [(&'static str, AggregatedDiscovery); 4] = [
        ("none", AggregatedDiscovery::None),
        ("v2beta1", AggregatedDiscovery::V2Beta1),
        ("both", AggregatedDiscovery::Both),
        ("v2", AggregatedDiscovery::V2),
    ];

    /// Whether `version` (`v2`, `v2beta1`) is served.
    pub fn serves(self, version: &str) -> bool {
        match self {
            AggregatedDiscovery::None => false,
            AggregatedDiscovery::V2Beta1 => version == "v2beta1",
            AggregatedDiscovery::Both => version == "v2" || version == "v2beta1",
            AggregatedDiscovery::V2 => version == "v2",
        }
    }

    /// The setting called `name` (`none`, `v2beta1`, `both`, `v2`).
    pub fn from_name(name: &str) -> Option<AggregatedDiscovery> {
        Self::NAMES
            .iter()
            .find(|(n, _)| *n == name)
            .map(|(_, setting)| *setting)
    }
}

/// kube-apiserver's `--etcd-compaction-interval` default.
pub const DEFAULT_COMPACTION_INTERVAL: Duration = Duration::from_secs(300);

/// Settings of a [`crate::server::SimServer`].
#[derive(Debug, Clone)]
pub struct SimConfig {
    /// The resources served.
    pub resources: Vec<ResourceDef>,
    /// Serve HTTPS (HTTP/1.1 and HTTP/2) with a freshly generated CA.
    pub tls: bool,
    /// Require `Authorization: Bearer <token>` on every request.
    pub token: Option<String>,
    /// Faults to inject (none by default).
    pub fault_plan: FaultPlan,
    /// Changes retained for reads at old resourceVersions (etcd's history; compaction also
    /// bounds it).
    pub history_limit: usize,
    /// How each resource's watch cache sizes its window (watches from before it get 410).
    pub watch_cache: WatchCacheSizing,
    /// How often etcd's history is compacted, to the revision of the previous compaction (the
    /// real server's compactor); `None` never compacts.
    pub compaction_interval: Option<Duration>,
    /// How long a list from the watch cache waits for a resourceVersion the server has not
    /// reached before answering 504.
    pub too_large_wait: Duration,
    /// How long a request may take before the server gives up on it: kube-apiserver's
    /// `--request-timeout` (1 min); a request that needs etcd while it is down waits this long
    /// before its 504.
    pub request_timeout: Duration,
    /// Events a watcher may have queued before it is dropped as too slow.
    pub watch_buffer: usize,
    /// Interval between BOOKMARK events on watches that allow them.
    pub bookmark_interval: Duration,
    /// Serve `sendInitialEvents=true` (WatchList streaming lists).
    pub watch_list_enabled: bool,
    /// Which aggregated forms `/api` and `/apis` answer in when asked: `v2beta1` by default, as
    /// the v1.28 of the captures; `v2` and `v2beta1` as v1.30–v1.32; `v2` alone as v1.33 and
    /// later; none, as before v1.26 (legacy documents to every request).
    pub aggregated_discovery: AggregatedDiscovery,
    /// Source of creation and deletion timestamps.
    pub clock: Arc<dyn Clock>,
    /// Address to listen on (port 0 picks a free port).
    pub bind: SocketAddr,
    /// Requests kept by the journal.
    pub journal_capacity: usize,
    /// Namespaces that exist at start.
    pub namespaces: Vec<String>,
    /// Users known by a bearer token (TokenReview), beside the server's own token's `admin`.
    pub users: Vec<SimUser>,
    /// Non-resource paths users and groups may `get` (SubjectAccessReview).
    pub grants: Vec<NonResourceGrant>,
    /// Verbs on resources users are refused (403), as if no RBAC rule granted them.
    pub denials: Vec<ResourceDenial>,
}

impl Default for SimConfig {
    fn default() -> Self {
        SimConfig {
            resources: default_resources(),
            tls: false,
            token: None,
            fault_plan: FaultPlan::default(),
            history_limit: 100_000,
            watch_cache: WatchCacheSizing::default(),
            compaction_interval: Some(DEFAULT_COMPACTION_INTERVAL),
            too_large_wait: Duration::from_secs(3),
            request_timeout: Duration::from_secs(60),
            watch_buffer: 10_000,
            bookmark_interval: Duration::from_secs(60),
            watch_list_enabled: false,
            aggregated_discovery: AggregatedDiscovery::V2Beta1,
            clock: Arc::new(SystemClock),
            bind: SocketAddr::from(([127, 0, 0, 1], 0)),
            journal_capacity: crate::journal::DEFAULT_CAPACITY,
            namespaces: ["default", "kube-system", "kube-public"]
                .iter()
                .map(|n| n.to_string())
                .collect(),
            users: Vec::new(),
            grants: Vec::new(),
            denials: Vec::new(),
        }
    }
}

impl SimConfig {
    /// Serves these resources instead of the default set.
    pub fn with_resources(mut self, resources: Vec<ResourceDef>) -> Self {
        self.resources = resources;
        self
    }

    /// Also serves [`workload_custom_resources`] (Argo Workflows, Tekton runs, Kubeflow
    /// training jobs, Spark applications, Ray jobs), each unless already served.
    pub fn with_workload_custom_resources(mut self) -> Self {
        for def in workload_custom_resources() {
            let served = self.resources.iter().any(|r| {
                r.group == def.group && r.version == def.version && r.resource == def.resource
            });
            if !served {
                self.resources.push(def);
            }
        }
        self
    }

    /// Serves HTTPS with a generated CA.
    pub fn with_tls(mut self) -> Self {
        self.tls = true;
        self
    }

    /// Requires this bearer token.
    pub fn with_token(mut self, token: impl Into<String>) -> Self {
        self.token = Some(token.into());
        self
    }

    /// Injects these faults.
    pub fn with_fault_plan(mut self, plan: FaultPlan) -> Self {
        self.fault_plan = plan;
        self
    }

    /// Keeps this many changes of history.
    pub fn with_history_limit(mut self, limit: usize) -> Self {
        self.history_limit = limit;
        self
    }

    /// Sizes every watch cache's window so.
    pub fn with_watch_cache(mut self, sizing: WatchCacheSizing) -> Self {
        self.watch_cache = sizing;
        self
    }

    /// Compacts etcd's history at this interval (`None`: never).
    pub fn with_compaction_interval(mut self, interval: Option<Duration>) -> Self {
        self.compaction_interval = interval;
        self
    }

    /// Lets each watcher queue this many events before it is dropped.
    pub fn with_watch_buffer(mut self, events: usize) -> Self {
        self.watch_buffer = events;
        self
    }

    /// Sends bookmarks at this interval.
    pub fn with_bookmark_interval(mut self, interval: Duration) -> Self {
        self.bookmark_interval = interval;
        self
    }

    /// Turns WatchList (`sendInitialEvents=true`) on or off.
    pub fn with_watch_list(mut self, enabled: bool) -> Self {
        self.watch_list_enabled = enabled;
        self
    }

    /// Answers the discovery roots in these aggregated forms, as a server of that release.
    pub fn with_aggregated_discovery(mut self, served: AggregatedDiscovery) -> Self {
        self.aggregated_discovery = served;
        self
    }

    /// Uses this clock for timestamps.
    pub fn with_clock(mut self, clock: Arc<dyn Clock>) -> Self {
        self.clock = clock;
        self
    }

    /// Knows `token` as `username` of `groups` (a TokenReview of it says so).
    pub fn with_user(mut self, token: &str, username: &str, groups: &[&str]) -> Self {
        self.users.push(SimUser {
            token: token.to_owned(),
            username: username.to_owned(),
            groups: groups.iter().map(|g| g.to_string()).collect(),
        });
        self
    }

    /// Lets `subject` (a user's or a group's name) `get` the non-resource `paths` (a trailing
    /// `*`: everything under it), as an RBAC ClusterRole with `nonResourceURLs` bound to it.
    pub fn allowing(mut self, subject: &str, paths: &[&str]) -> Self {
        self.grants.push(NonResourceGrant {
            subject: subject.to_owned(),
            paths: paths.iter().map(|p| p.to_string()).collect(),
        });
        self
    }

    /// Refuses `user` (a [`with_user`](Self::with_user)'s name) the `verbs` (RBAC's: `get`,
    /// `list`, `watch`, `delete`…) on `resource` (its plural, or `plural/subresource`) in
    /// `group` (`""` for the core group), with the 403 a real server answers: as if no RBAC rule
    /// granted them. Every other request of every user is allowed.
    pub fn forbidding(mut self, user: &str, group: &str, resource: &str, verbs: &[&str]) -> Self {
        self.denials.push(ResourceDenial {
            user: user.to_owned(),
            group: group.to_owned(),
            resource: resource.to_owned(),
            verbs: verbs.iter().map(|v| v.to_string()).collect(),
            cluster_scope_only: false,
        });
        self
    }

    /// Like [`forbidding`](Self::forbidding), but only at the cluster scope — across
    /// namespaces, or on a cluster-scoped resource — as for a user granted the verbs by a
    /// RoleBinding in the namespaces it works in.
    pub fn forbidding_cluster_wide(
        mut self,
        user: &str,
        group: &str,
        resource: &str,
        verbs: &[&str],
    ) -> Self {
        self = self.forbidding(user, group, resource, verbs);
        if let Some(denial) = self.denials.last_mut() {
            denial.cluster_scope_only = true;
        }
        self
    }

    /// Gives up on a request after `timeout` (the wait of a request that needs etcd while it
    /// is down).
    pub fn with_request_timeout(mut self, timeout: Duration) -> Self {
        self.request_timeout = timeout;
        self
    }

    /// Listens on `bind` (port 0: a free port).
    pub fn with_bind(mut self, bind: SocketAddr) -> Self {
        self.bind = bind;
        self
    }

    /// Keeps at most this many requests in the journal.
    pub fn with_journal_capacity(mut self, entries: usize) -> Self {
        self.journal_capacity = entries;
        self
    }

    /// Starts with these namespaces instead of `default`, `kube-system` and `kube-public`.
    pub fn with_namespaces(mut self, names: &[&str]) -> Self {
        self.namespaces = names.iter().map(|n| n.to_string()).collect();
        self
    }
}
