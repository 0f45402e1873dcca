//! [`LeaderElectionConfig`]: who competes for which Lease, and the three timings, validated as
//! client-go validates them; [`LeaderElectionArgs`]: the same as kube-controller-manager's flags.
//!
//! Contract: a config that passes [`LeaderElectionConfig::validate`] satisfies
//! `lease_duration > renew_deadline > 1.2 × retry_period` (client-go's `JitterFactor` is 1.2, so a
//! renewal retried with the largest jitter still fits in the deadline) and has a non-empty
//! identity, lease name and namespace.

use std::time::Duration;

use kube_gc_core::duration::parse_duration;

/// client-go's jitter factor: a wait of `retry_period` becomes up to `(1 + 1.2) × retry_period`
/// while acquiring.
pub const JITTER_FACTOR: f64 = 1.2;

/// kube-controller-manager's defaults.
pub const DEFAULT_LEASE_DURATION: Duration = Duration::from_secs(15);
/// How long the leader keeps retrying a renewal before it gives up leadership.
pub const DEFAULT_RENEW_DEADLINE: Duration = Duration::from_secs(10);
/// How long to wait between attempts.
pub const DEFAULT_RETRY_PERIOD: Duration = Duration::from_secs(2);
/// The Lease kube-gc competes for unless told otherwise.
pub const DEFAULT_LEASE_NAME: &str = "kube-gc";
/// The namespace of that Lease unless told otherwise.
pub const DEFAULT_LEASE_NAMESPACE: &str = "kube-system";

/// Everything a [`LeaderElector`](super::LeaderElector) needs besides a client.
#[derive(Clone, Debug, PartialEq)]
pub struct LeaderElectionConfig {
    /// Namespace of the Lease.
    pub lease_namespace: String,
    /// Name of the Lease.
    pub lease_name: String,
    /// This candidate's identity (see [`unique_identity`]); written to `holderIdentity`.
    pub identity: String,
    /// How long a follower waits, from the last change it saw, before taking the lease over.
    pub lease_duration: Duration,
    /// How long the leader keeps retrying a failing renewal before it stops leading.
    pub renew_deadline: Duration,
    /// The wait between two attempts to acquire or renew.
    pub retry_period: Duration,
    /// Whether to give the lease up (empty holder, 1 s duration) when stopped cleanly, so a
    /// follower takes over at once instead of after `lease_duration`.
    pub release_on_cancel: bool,
}

/// Why a configuration is refused.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum InvalidConfig {
    /// Timings violating `lease_duration > renew_deadline > 1.2 × retry_period`.
    #[error("leader election timings must satisfy lease duration ({lease:?}) > renew deadline ({renew:?}) > 1.2 × retry period ({retry:?})")]
    Timings {
        /// The lease duration.
        lease: Duration,
        /// The renew deadline.
        renew: Duration,
        /// The retry period.
        retry: Duration,
    },
    /// A zero retry period would spin.
    #[error("leader election retry period must be positive")]
    ZeroRetryPeriod,
    /// The lease duration must fit `leaseDurationSeconds` (a whole number of seconds ≥ 1).
    #[error("leader election lease duration {0:?} must be at least 1 s and at most i32::MAX s")]
    LeaseDurationRange(Duration),
    /// An empty identity, name or namespace.
    #[error("leader election {0} must not be empty")]
    Empty(&'static str),
}

impl LeaderElectionConfig {
    /// kube-controller-manager's timings for `identity`, on the default Lease.
    pub fn new(identity: impl Into<String>) -> LeaderElectionConfig {
        LeaderElectionConfig {
            lease_namespace: DEFAULT_LEASE_NAMESPACE.to_owned(),
            lease_name: DEFAULT_LEASE_NAME.to_owned(),
            identity: identity.into(),
            lease_duration: DEFAULT_LEASE_DURATION,
            renew_deadline: DEFAULT_RENEW_DEADLINE,
            retry_period: DEFAULT_RETRY_PERIOD,
            release_on_cancel: true,
        }
    }

    /// The same config on Lease `namespace/name`.
    pub fn with_lease(mut self, namespace: &str, name: &str) -> Self {
        self.lease_namespace = namespace.to_owned();
        self.lease_name = name.to_owned();
        self
    }

    /// Checks the invariants of the module contract.
    pub fn validate(&self) -> Result<(), InvalidConfig> {
        for (what, value) in [
            ("identity", &self.identity),
            ("resource name", &self.lease_name),
            ("resource namespace", &self.lease_namespace),
        ] {
            if value.is_empty() {
                return Err(InvalidConfig::Empty(what));
            }
        }
        if self.retry_period.is_zero() {
            return Err(InvalidConfig::ZeroRetryPeriod);
        }
        let seconds = self.lease_duration.as_secs();
        if seconds < 1 || seconds > i32::MAX as u64 {
            return Err(InvalidConfig::LeaseDurationRange(self.lease_duration));
        }
        let jittered_retry = self.retry_period.mul_f64(JITTER_FACTOR);
        if self.lease_duration <= self.renew_deadline || self.renew_deadline <= jittered_retry {
            return Err(InvalidConfig::Timings {
                lease: self.lease_duration,
                renew: self.renew_deadline,
                retry: self.retry_period,
            });
        }
        Ok(())
    }

    /// `leaseDurationSeconds` as written to the Lease (whole seconds, validated to fit).
    pub fn lease_duration_seconds(&self) -> i32 {
        i32::try_from(self.lease_duration.as_secs()).unwrap_or(i32::MAX)
    }
}

/// `hostname` + `_` + a random UUID-shaped suffix, as kube-controller-manager builds its
/// identity, so two processes on one host (or a restarted pod reusing its name) never share one.
pub fn unique_identity(hostname: &str) -> String {
    let n: u128 = rand::random();
    let hex = format!("{n:032x}");
    format!(
        "{hostname}_{}-{}-{}-{}-{}",
        &hex[0..8],
        &hex[8..12],
        &hex[12..16],
        &hex[16..20],
        &hex[20..32]
    )
}

/// This machine's host name: `$HOSTNAME` (set in every pod), else `/etc/hostname`, else
/// `localhost`.
pub fn hostname() -> String {
    std::env::var("HOSTNAME")
        .ok()
        .filter(|h| !h.trim().is_empty())
        .or_else(|| std::fs::read_to_string("/etc/hostname").ok())
        .map(|h| h.trim().to_owned())
        .filter(|h| !h.is_empty())
        .unwrap_or_else(|| "localhost".to_owned())
}

/// kube-controller-manager's leader election flags, to flatten into a command.
#[derive(Clone, Debug, PartialEq, clap::Args)]
pub struct LeaderElectionArgs {
    /// Elect a leader among replicas with a Lease before running controllers (bare
    /// `--leader-elect` means true, as kube-controller-manager takes it).
    #[arg(long = "leader-elect", value_name = "BOOL", default_value_t = true, action = clap::ArgAction::Set, num_args = 0..=1, require_equals = true, default_missing_value = "true")]
    pub leader_elect: bool,
    /// How long followers wait, after the last renewal they saw, before taking the lease.
    #[arg(long = "leader-elect-lease-duration", value_name = "DURATION", default_value = "15s", value_parser = parse_duration)]
    pub lease_duration: Duration,
    /// How long the leader retries a failing renewal before it stops leading.
    #[arg(long = "leader-elect-renew-deadline", value_name = "DURATION", default_value = "10s", value_parser = parse_duration)]
    pub renew_deadline: Duration,
    /// The wait between attempts to acquire or renew the lease.
    #[arg(long = "leader-elect-retry-period", value_name = "DURATION", default_value = "2s", value_parser = parse_duration)]
    pub retry_period: Duration,
    /// Name of the Lease (default: kube-gc, followed by the controllers when --controllers
    /// runs fewer than all, e.g. kube-gc.retention.volcano-job-ttl).
    #[arg(long = "leader-elect-resource-name", value_name = "NAME")]
    pub resource_name: Option<String>,
    /// Namespace of the Lease (default: --namespace if given, else kube-system).
    #[arg(long = "leader-elect-resource-namespace", value_name = "NAMESPACE")]
    pub resource_namespace: Option<String>,
}

impl LeaderElectionArgs {
    /// The config for `identity`, validated, with the Lease in `namespace` named `name` unless
    /// the flags say otherwise; `None` when `--leader-elect=false`.
    pub fn to_config(
        &self,
        identity: &str,
        namespace: &str,
        name: &str,
    ) -> Result<Option<LeaderElectionConfig>, InvalidConfig> {
        if !self.leader_elect {
            return Ok(None);
        }
        let namespace = self.resource_namespace.as_deref().unwrap_or(namespace);
        let name = self.resource_name.as_deref().unwrap_or(name);
        let config = LeaderElectionConfig {
            lease_duration: self.lease_duration,
            renew_deadline: self.renew_deadline,
            retry_period: self.retry_period,
            ..LeaderElectionConfig::new(identity).with_lease(namespace, name)
        };
        config.validate()?;
        Ok(Some(config))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_are_valid_and_bad_timings_are_refused() {
        let config = LeaderElectionConfig::new("me");
        assert_eq!(config.validate(), Ok(()));
        assert_eq!(config.lease_duration_seconds(), 15);
        let renew_too_long = LeaderElectionConfig {
            renew_deadline: Duration::from_secs(15),
            ..config.clone()
        };
        assert!(matches!(
            renew_too_long.validate(),
            Err(InvalidConfig::Timings { .. })
        ));
        // 1.2 × 2 s = 2.4 s: a 2.4 s deadline is not strictly greater.
        let retry_too_long = LeaderElectionConfig {
            renew_deadline: Duration::from_millis(2_400),
            ..config.clone()
        };
        assert!(matches!(
            retry_too_long.validate(),
            Err(InvalidConfig::Timings { .. })
        ));
        let nameless = LeaderElectionConfig::new("");
        assert_eq!(nameless.validate(), Err(InvalidConfig::Empty("identity")));
    }

    #[test]
    fn identities_are_unique_per_process_start() {
        let a = unique_identity("node-1");
        let b = unique_identity("node-1");
        assert!(a.starts_with("node-1_"), "{a}");
        assert_ne!(a, b);
    }

    #[test]
    fn flags_have_kube_controller_managers_defaults() {
        use clap::Parser;
        #[derive(clap::Parser)]
        struct Command {
            #[command(flatten)]
            election: LeaderElectionArgs,
        }
        let defaults = (DEFAULT_LEASE_NAMESPACE, DEFAULT_LEASE_NAME);
        let parsed = Command::parse_from(["kube-gc"]).election;
        let config = parsed
            .to_config("me", defaults.0, defaults.1)
            .unwrap()
            .unwrap();
        assert_eq!(config, LeaderElectionConfig::new("me"));
        let off = Command::parse_from(["kube-gc", "--leader-elect=false"]).election;
        assert_eq!(off.to_config("me", defaults.0, defaults.1), Ok(None));
        let bad = Command::parse_from(["kube-gc", "--leader-elect-renew-deadline=20s"]).election;
        assert!(bad.to_config("me", defaults.0, defaults.1).is_err());
        let named = Command::parse_from([
            "kube-gc",
            "--leader-elect-resource-name=mine",
            "--leader-elect-resource-namespace=ops",
        ])
        .election;
        let config = named.to_config("me", "batch", "kube-gc").unwrap().unwrap();
        assert_eq!(
            (config.lease_namespace.as_str(), config.lease_name.as_str()),
            ("ops", "mine")
        );
    }
}
