//! What runs kube-gc's controllers, as kube-controller-manager runs its own:
//!
//! - [`selection`]: the controllers' names and which of them `--controllers` enables — read by
//!   the manager that runs them and by `explain`, which speaks for them.
//! - [`manager`]: the controller set, started when the server serves their resources, reporting
//!   readiness, stopped together.
//! - [`explain`]: `kube-gc explain` and `kube-gc plan` — read-only, every verdict from the
//!   controllers' own decision functions — and `/debug/explain` from a running kube-gc's caches.
//! - [`server`]: the health, readiness, metrics and debug endpoints.
//! - [`metrics`]: Prometheus metrics under client-go's and kube-controller-manager's names.
//! - [`shutdown`]: signals and the bounded drain.
//! - [`notify`]: webhooks told what was deleted and what comes, in batches (`--notify-webhook-url`,
//!   a retention policy's own receiver).
//!
//! It stands on the controllers (`kube-gc-controllers`) and the runtime, never on the simulated
//! API server; the `kube-gc` binary puts it behind the command line.

pub mod explain;
pub mod manager;
pub mod metrics;
pub mod notify;
pub mod selection;
pub mod server;
pub mod shutdown;
