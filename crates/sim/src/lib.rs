//! The simulated Kubernetes API server that tests, benchmarks and the demo run against.
//!
//! It speaks HTTP/1.1 (and HTTP/2 over TLS), JSON and protobuf like a v1.28 kube-apiserver,
//! stores every object as `serde_json::Value`, and shares no code with [`crate::api`] or
//! [`crate::client`]: it is the other side of the wire, and sharing decoding would mirror bugs
//! instead of catching them.
//!
//! One exception: its protobuf bodies are written by `client::protobuf::encode`
//! ([`handlers::protobuf`]), driven by the client's descriptor tables — a second copy of those
//! tables here would double the chances of a wrong field number rather than catch one. What
//! guards against a misreading mirrored on both sides is the real server's bytes: the encoder
//! writes the captured bodies back byte for byte (`client::protobuf::encode`'s tests), and the
//! sim's lists, watch frames and `Status` bodies are compared byte for byte with exchanges
//! 100–111 (`handlers::protobuf`'s tests) and over HTTP by `tests/sim_protobuf.rs`.
//!
//! Layers, from the wire inwards:
//! - [`server`]: `SimServer` — sockets, TLS, connections, lifecycle, the in-process API;
//!   configured by [`config`]'s `SimConfig`.
//! - [`handlers`]: one HTTP request → one store operation → one response (router, discovery,
//!   watch streaming, Status bodies for errors).
//! - [`store`]: objects, the global resourceVersion, etcd's history, the watch caches, watchers;
//!   the rules of writes and deletions and the LIST table.
//! - Building blocks: [`resources`] (what is served), [`crds`] (the CustomResourceDefinitions
//!   of the custom resources served, created and deleted as on a real server), [`history`] (the change log),
//!   [`filter`] (selectors applied to objects), [`object`] (metadata access), [`validation`],
//!   [`clock`].
//!
//! Self-contained parts, each usable and tested on its own:
//! - [`status`]: the `Status` bodies the real server answers errors with.
//! - [`selectors`]: label and field selectors, parsed and matched like the real server.
//! - [`patch`]: JSON merge patch, JSON patch and strategic merge patch on JSON values.
//! - [`journal`]: a bounded log of the requests the server received, for tests to assert on.
//! - [`faults`]: seeded, reproducible fault injection (errors, 429s, latency, watch cuts).
//! - [`tls`]: a throw-away CA and server certificate, and the rustls configuration using them.
//! - [`kubeconfig`]: kubeconfig files pointing a client at a simulated server.
//!
//! # Starting one
//!
//! ```no_run
//! # async fn demo() -> Result<(), kube_gc_sim::SimError> {
//! use kube_gc_sim::{Gvr, SimConfig, SimServer};
//! let server = SimServer::start(SimConfig::default().with_tls().with_token("t")).await?;
//! server.write_kubeconfig(std::path::Path::new("sim-kubeconfig"))?;
//! let job = serde_json::json!({"metadata": {"name": "pi", "namespace": "default"}, "spec": {}});
//! server.create(&Gvr::new("batch", "v1", "jobs"), job)?;
//! server.shutdown().await;
//! # Ok(()) }
//! ```
//!
//! # Known differences from a real kube-apiserver
//!
//! Deliberate simplifications; none of them is something a controller should rely on:
//! - No `managedFields`, no defaulting of spec fields (a Job's selector, pod template defaults,
//!   a Node's `status.nodeInfo`, a claim's `volumeMode`, …) but a Pod's
//!   `terminationGracePeriodSeconds`, which its deletion reads; a new Pod's status is
//!   `{phase: Pending}` without the `qosClass` a real server computes; no schema validation
//!   beyond names, ownerReferences, finalizers and kube-gc's own retention policies (checked
//!   against their CRDs: [`validation::crd`]). Of the admission plugins, TaintNodesByCondition
//!   (new Nodes are tainted `not-ready`), StorageObjectInUseProtection (the
//!   `kubernetes.io/pvc-protection` and `pv-protection` finalizers) and NamespaceLifecycle
//!   are modelled (`store::built_in`, `store::namespace`), no other.
//! - No server-side apply (`application/apply-patch+yaml` → 415), no
//!   YAML (JSON instead); `as=Table` only for kube-gc's retention policies and namespaces ([`table`]; other
//!   resources answer the JSON clients offer as a fallback); `/openapi/v2` is an empty document
//!   (enough for `kubectl create/apply -f`, which then skips its client-side validation) and
//!   `/openapi/v3` a 404.
//!   Protobuf is negotiated for GET, LIST, WATCH and error `Status` bodies
//!   ([`handlers::encoding`]) but written only for the kinds `client::protobuf`'s tables
//!   describe (Job, Pod, Namespace, ConfigMap, `Status`, `PartialObjectMetadata`): another
//!   built-in kind asked for in protobuf is answered in JSON when JSON is acceptable, 406 when
//!   not, where the real server writes protobuf; only members the tables describe are written;
//!   write verbs (create, update, patch, delete) answer their objects and success `Status` in
//!   JSON whatever is asked (their errors are negotiated). Aggregated
//!   discovery is served (`apidiscovery.k8s.io/v2beta1`, as v1.28; `v2` too, or alone, or
//!   neither, as other releases: `SimConfig::aggregated_discovery`), but no group is ever
//!   `Stale` unless a test makes it so ([`SimServer::set_stale`]): no aggregated API servers.
//! - Pods are deleted gracefully as on a real server (a bound, running Pod is kept marked for
//!   its grace period: exchanges 170–183), but no kubelet ever finishes that deletion: a Pod
//!   stays marked until someone deletes it with `gracePeriodSeconds: 0`, as on an API server
//!   whose nodes are gone. Core/v1 and events.k8s.io/v1 Events are two separate stores (a
//!   `deletecollection` of one leaves the other's). Namespaces follow the real lifecycle
//!   (`store::namespace`: a DELETE marks them `Terminating`, `/finalize` and the last finalizer
//!   remove them, creates in them are refused), but nothing in the sim deletes their content or
//!   finalizes them: as on a server without kube-controller-manager, that is kube-gc's
//!   namespace controller's job.
//! - `deletecollection` ignores `limit` and `continue` and honours preconditions per object.
//! - Like the real server, watches are served from a watch cache per resource (sized by the
//!   real rule, rebuilt by [`SimServer::restart`]) and exact reads and continue tokens from etcd's
//!   history (compacted every 5 minutes by default); the LIST table is the real one
//!   (`store::list`). Its history is also bounded by a count, for memory.
//! - The cache's waiting (3 s for a version it has not seen) is on tokio's clock, so tests on
//!   the paused clock do not wait in real time.
//! - BOOKMARKs come every `bookmark_interval` on watches that allow them; a real v1.28 server is
//!   less regular (exchange 23).
//! - The resources served are a catalogue fixed at start ([`resources`]; `kube-gc sim
//!   --workload-crds` adds the workloads' custom resources): creating the definition of one the
//!   catalogue declares serves it, one it does not declare is refused (422) where a real server
//!   would serve it, and a changed definition is stored without changing how its resource is
//!   served or validated ([`crds`]).
//! - Authentication is the server's bearer token, a known user's token or any client certificate
//!   signed by the server's CA; authorization only refuses the verbs a test denies a user on a
//!   resource (`SimConfig::forbidding`, [`SimServer::deny`]), with the real server's 403.

pub mod clock;
pub mod config;
pub mod crds;
pub mod faults;
pub mod filter;
pub mod handlers;
pub mod history;
pub mod journal;
pub mod kubeconfig;
pub mod object;
pub mod openapi;
pub mod patch;
pub mod replay;
pub mod resources;
pub mod selectors;
pub mod server;
pub mod stamped;
pub mod status;
pub mod store;
pub mod table;
pub mod tls;
pub mod validation;

pub use config::{AggregatedDiscovery, SimConfig};
pub use resources::Gvr;
pub use server::{SimError, SimServer};
pub use store::{DeleteOptions, DeleteOutcome, Propagation};
