//! [`TtlObject`]: the compact projection of a Job (or Volcano Job) the TTL controller caches,
//! decoded straight from list and watch responses.
//!
//! Contract: only what the controller decides with is kept — key, UID, resourceVersion,
//! whether deletion has started, the TTL and the finish time ([`TtlState`]). The pod template,
//! labels, annotations and `managedFields` are skipped by the decoder and never allocated, so
//! 100,000 cached Jobs cost tens of megabytes instead of the ~6 KB of JSON each one is on the
//! wire. A `TtlObject` is read-only: it is never sent back to the server.

use std::fmt;
use std::marker::PhantomData;

use serde::{Deserialize, Deserializer};

use crate::api::Time;
use crate::runtime::cache::{Cacheable, ObjectKey};

use super::kind::{Finished, TtlKind};

/// What the TTL decision reads: the part of an object that says whether, and when, it may be
/// deleted.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TtlState {
    /// `metadata.deletionTimestamp` is set: someone is already deleting it.
    pub being_deleted: bool,
    /// `spec.ttlSecondsAfterFinished`.
    pub ttl_seconds: Option<i32>,
    /// Whether and when it finished.
    pub finished: Finished,
}

impl TtlState {
    /// The handlers' filter (upstream's `needsCleanup` plus the deletion check): not being
    /// deleted, a TTL set, and finished.
    pub fn needs_cleanup(&self) -> bool {
        !self.being_deleted && self.ttl_seconds.is_some() && self.finished.is_finished()
    }
}

/// One cached object of kind `K`.
pub struct TtlObject<K> {
    key: ObjectKey,
    uid: Box<str>,
    resource_version: Box<str>,
    state: TtlState,
    _kind: PhantomData<fn() -> K>,
}

impl<K> TtlObject<K> {
    /// A projection from its parts (the decoder builds them; tests may too).
    pub fn new(key: ObjectKey, uid: &str, resource_version: &str, state: TtlState) -> Self {
        TtlObject {
            key,
            uid: uid.into(),
            resource_version: resource_version.into(),
            state,
            _kind: PhantomData,
        }
    }

    /// `namespace/name`.
    pub fn key(&self) -> &ObjectKey {
        &self.key
    }

    /// What the TTL decision reads.
    pub fn state(&self) -> &TtlState {
        &self.state
    }
}

impl<K> Cacheable for TtlObject<K> {
    fn cache_key(&self) -> ObjectKey {
        self.key.clone()
    }

    fn resource_version(&self) -> &str {
        &self.resource_version
    }

    fn uid(&self) -> &str {
        &self.uid
    }
}

impl<K> Clone for TtlObject<K> {
    fn clone(&self) -> Self {
        TtlObject {
            key: self.key.clone(),
            uid: self.uid.clone(),
            resource_version: self.resource_version.clone(),
            state: self.state,
            _kind: PhantomData,
        }
    }
}

impl<K> PartialEq for TtlObject<K> {
    fn eq(&self, other: &Self) -> bool {
        self.key == other.key
            && self.uid == other.uid
            && self.resource_version == other.resource_version
            && self.state == other.state
    }
}

impl<K> fmt::Debug for TtlObject<K> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TtlObject")
            .field("key", &self.key)
            .field("uid", &self.uid)
            .field("resource_version", &self.resource_version)
            .field("state", &self.state)
            .finish()
    }
}

/// The metadata fields kept; serde skips the others without allocating them.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct WireMeta {
    #[serde(default)]
    name: Option<String>,
    #[serde(default)]
    namespace: Option<String>,
    #[serde(default)]
    uid: Option<String>,
    #[serde(default)]
    resource_version: Option<String>,
    #[serde(default)]
    deletion_timestamp: Option<Time>,
}

/// An object as it arrives, reduced to the fields the kind reads. `null` reads as absent.
#[derive(Deserialize)]
#[serde(bound(deserialize = ""))]
struct Wire<K: TtlKind> {
    #[serde(default)]
    metadata: Option<WireMeta>,
    #[serde(default)]
    spec: Option<K::Spec>,
    #[serde(default)]
    status: Option<K::Status>,
}

impl<'de, K: TtlKind> Deserialize<'de> for TtlObject<K> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let wire = Wire::<K>::deserialize(deserializer)?;
        let meta = wire.metadata.unwrap_or(WireMeta {
            name: None,
            namespace: None,
            uid: None,
            resource_version: None,
            deletion_timestamp: None,
        });
        let state = TtlState {
            being_deleted: meta.deletion_timestamp.is_some(),
            ttl_seconds: wire.spec.as_ref().and_then(K::ttl_seconds),
            finished: wire
                .status
                .as_ref()
                .map(K::finished)
                .unwrap_or(Finished::No),
        };
        let key = ObjectKey::new(
            meta.namespace.as_deref().unwrap_or_default(),
            meta.name.as_deref().unwrap_or_default(),
        );
        Ok(TtlObject::new(
            key,
            meta.uid.as_deref().unwrap_or_default(),
            meta.resource_version.as_deref().unwrap_or_default(),
            state,
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::controllers::ttl::{BatchJob, VolcanoJobs};

    #[test]
    fn a_job_is_projected_from_its_json() {
        let json = r#"{"apiVersion":"batch/v1","kind":"Job",
            "metadata":{"name":"pi","namespace":"batch","uid":"u-1","resourceVersion":"42",
                "labels":{"a":"b"},"managedFields":[{"manager":"kube-controller-manager"}]},
            "spec":{"ttlSecondsAfterFinished":100,"template":{"spec":{"containers":[]}}},
            "status":{"conditions":[{"type":"Complete","status":"True",
                "lastTransitionTime":"2026-11-22T03:45:32Z"}]}}"#;
        let job: TtlObject<BatchJob> = serde_json::from_str(json).unwrap();
        assert_eq!(job.key().to_string(), "batch/pi");
        assert_eq!((job.uid(), job.resource_version()), ("u-1", "42"));
        let at = Time::parse("2026-11-22T03:45:32Z").unwrap().0;
        assert_eq!(
            *job.state(),
            TtlState {
                being_deleted: false,
                ttl_seconds: Some(100),
                finished: Finished::At(at)
            }
        );
        assert!(job.state().needs_cleanup());
    }

    #[test]
    fn nulls_and_absences_read_as_nothing_to_clean_up() {
        let job: TtlObject<VolcanoJobs> = serde_json::from_str(
            r#"{"metadata":{"name":"a","namespace":"n","deletionTimestamp":"2026-11-22T03:45:32Z"},
                "spec":null,"status":null}"#,
        )
        .unwrap();
        assert!(job.state().being_deleted);
        assert_eq!(job.state().ttl_seconds, None);
        assert!(!job.state().needs_cleanup());
        let bare: TtlObject<BatchJob> = serde_json::from_str("{}").unwrap();
        assert_eq!(bare.state().finished, Finished::No);
    }

    #[test]
    fn the_projection_is_small() {
        // Key (24) + two boxed strs (32) + state: what each cached Job costs inline.
        assert!(std::mem::size_of::<TtlObject<BatchJob>>() <= 88);
    }
}
