//! [`LeaseLock`]: reading and writing the election record in a coordination.k8s.io/v1 Lease.
//!
//! Contract: [`LeaseLock::get`] returns the Lease with its `resourceVersion`;
//! [`LeaseLock::update`] PUTs a new record onto exactly that version, so of two candidates
//! writing after reading the same version one gets 409 Conflict (optimistic concurrency; no
//! candidate ever overwrites a record it has not seen). [`LeaseLock::create`] POSTs the first
//! record; a 409 AlreadyExists means another candidate was first.

use kube_gc_api::{Lease, LeaseSpec, MicroTime};
use kube_gc_client::{Api, Client, Error, PostParams};

/// What a Lease says about who leads: client-go's `LeaderElectionRecord`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ElectionRecord {
    /// The holder; empty when nobody holds the lease (never held, or released).
    pub holder_identity: String,
    /// `leaseDurationSeconds`.
    pub lease_duration_seconds: i32,
    /// When the holder acquired it.
    pub acquire_time: Option<MicroTime>,
    /// When the holder last renewed it.
    pub renew_time: Option<MicroTime>,
    /// How many times the lease changed hands.
    pub lease_transitions: i32,
}

impl ElectionRecord {
    /// The record a Lease spec holds (absent fields read as empty or zero, as in client-go).
    pub fn from_spec(spec: &LeaseSpec) -> ElectionRecord {
        ElectionRecord {
            holder_identity: spec.holder_identity.clone().unwrap_or_default(),
            lease_duration_seconds: spec.lease_duration_seconds.unwrap_or_default(),
            acquire_time: spec.acquire_time,
            renew_time: spec.renew_time,
            lease_transitions: spec.lease_transitions.unwrap_or_default(),
        }
    }

    /// The Lease spec holding this record. The holder is written even when empty, as client-go
    /// writes it when it releases.
    pub fn to_spec(&self) -> LeaseSpec {
        LeaseSpec {
            holder_identity: Some(self.holder_identity.clone()),
            lease_duration_seconds: Some(self.lease_duration_seconds),
            acquire_time: self.acquire_time,
            renew_time: self.renew_time,
            lease_transitions: Some(self.lease_transitions),
        }
    }
}

/// The Lease one election is held in.
#[derive(Clone, Debug)]
pub struct LeaseLock {
    api: Api<Lease>,
    name: String,
}

impl LeaseLock {
    /// The Lease `namespace/name`, reached through `client`.
    pub fn new(client: Client, namespace: &str, name: &str) -> LeaseLock {
        LeaseLock {
            api: Api::namespaced(client, namespace),
            name: name.to_owned(),
        }
    }

    /// The Lease as stored, `None` if it does not exist yet.
    pub async fn get(&self) -> Result<Option<Lease>, Error> {
        self.api.get_opt(&self.name).await
    }

    /// Creates the Lease holding `record`.
    pub async fn create(&self, record: &ElectionRecord) -> Result<Lease, Error> {
        let namespace = self.api.namespace().unwrap_or_default();
        let lease = Lease::new(namespace, &self.name, record.to_spec());
        self.api.create(&PostParams::default(), &lease).await
    }

    /// Replaces the record of `current` (read before, its `resourceVersion` kept): a 409 if the
    /// Lease changed since.
    pub async fn update(&self, current: &Lease, record: &ElectionRecord) -> Result<Lease, Error> {
        let lease = Lease {
            types: current.types.clone(),
            metadata: current.metadata.clone(),
            spec: record.to_spec(),
        };
        self.api
            .replace(&self.name, &PostParams::default(), &lease)
            .await
    }

    /// `namespace/name`, for logs.
    pub fn describe(&self) -> String {
        format!("{}/{}", self.api.namespace().unwrap_or_default(), self.name)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_record_round_trips_through_a_spec_and_absent_fields_read_as_empty() {
        let record = ElectionRecord {
            holder_identity: "a_1".into(),
            lease_duration_seconds: 15,
            acquire_time: MicroTime::parse("2026-11-22T00:00:00.000000Z").ok(),
            renew_time: MicroTime::parse("2026-11-22T00:00:02.000000Z").ok(),
            lease_transitions: 3,
        };
        assert_eq!(ElectionRecord::from_spec(&record.to_spec()), record);
        assert_eq!(
            ElectionRecord::from_spec(&LeaseSpec::default()),
            ElectionRecord::default()
        );
        let released = ElectionRecord::default().to_spec();
        assert_eq!(released.holder_identity.as_deref(), Some(""));
    }
}
