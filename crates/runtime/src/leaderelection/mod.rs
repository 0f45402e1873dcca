//! Leader election on a coordination.k8s.io/v1 Lease, so that of several kube-gc replicas exactly
//! one runs controllers.
//!
//! - [`config`]: [`LeaderElectionConfig`] (timings, validated as client-go does), the flags
//!   ([`LeaderElectionArgs`]) and the candidate identity (host name + random suffix).
//! - [`lock`]: [`LeaseLock`], the record inside the Lease and its optimistic PUTs.
//! - [`elector`]: [`LeaderElector`], the acquire / renew / release loop, reporting
//!   [`Leadership`] through a watch channel.
//!
//! How `kube-gc run` is meant to wire it:
//!
//! ```no_run
//! # async fn run(client: kube_gc_client::Client, signals: tokio_util::sync::CancellationToken) -> i32 {
//! use kube_gc_runtime::leaderelection::{hostname, unique_identity, LeaderElectionConfig, LeaderElector, Outcome};
//! use tokio_util::sync::CancellationToken;
//!
//! let config = LeaderElectionConfig::new(unique_identity(&hostname()));
//! let elector = LeaderElector::new(client, config).expect("valid timings");
//! let mut leadership = elector.subscribe(); // also the readiness source
//! let stop_election = CancellationToken::new();
//! let election = tokio::spawn(elector.run(stop_election.clone()));
//! if let Some(leading) = leadership.leading().await {
//!     tokio::select! {
//!         _ = leading.cancelled() => {}           // lost: stop everything at once
//!         _ = signals.cancelled() => { /* drain controllers within the grace period */ }
//!     }
//! }
//! stop_election.cancel(); // releases the lease if we hold it
//! match election.await {
//!     Ok(Outcome::Lost) => { tracing::error!("leaderelection lost"); 1 }
//!     _ => 0,
//! }
//! # }
//! ```

pub mod config;
pub mod elector;
pub mod lock;

pub use config::{
    hostname, unique_identity, InvalidConfig, LeaderElectionArgs, LeaderElectionConfig,
    DEFAULT_LEASE_NAME, DEFAULT_LEASE_NAMESPACE,
};
pub use elector::{LeaderElector, Leadership, LeadershipWatch, Outcome};
pub use lock::{ElectionRecord, LeaseLock};
