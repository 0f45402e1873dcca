//! What the protection controllers keep of claims, volumes and Pods: compact projections
//! decoded straight from the wire.
//!
//! Contract:
//! - [`ClaimFacts`]: a PersistentVolumeClaim's identity, finalizers, whether it is being deleted
//!   and the volume it names (`spec.volumeName`).
//! - [`VolumeFacts`]: a PersistentVolume's identity, finalizers, whether it is being deleted,
//!   whether its phase is `Bound`, and the claim its `spec.claimRef` names.
//! - [`PodClaims`]: a Pod's identity, its node, whether it is shut down (being deleted with a
//!   zero grace period), and the claims its volumes use — by name for a
//!   `persistentVolumeClaim` volume, `<pod>-<volume>` for an `ephemeral` one. In protobuf
//!   nothing else of a Pod is read ([`PodClaims::reads`]).
//! - All tolerate `null` and missing members.

use serde::Deserialize;

use kube_gc_client::protobuf::Selection;
use kube_gc_client::ItemDecoder;
use kube_gc_runtime::cache::{Cacheable, ObjectKey};
use kube_gc_runtime::sources::serde_decoder;

/// The metadata the projections read.
#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase")]
struct MetaWire {
    name: Option<String>,
    namespace: Option<String>,
    uid: Option<String>,
    resource_version: Option<String>,
    deletion_timestamp: Option<String>,
    deletion_grace_period_seconds: Option<i64>,
    #[serde(default, deserialize_with = "kube_gc_api::null_as_default")]
    finalizers: Vec<String>,
}

impl MetaWire {
    fn key(&self) -> ObjectKey {
        ObjectKey::new(
            self.namespace.as_deref().unwrap_or_default(),
            self.name.as_deref().unwrap_or_default(),
        )
    }
}

/// A PersistentVolumeClaim as the protection controllers see it.
#[derive(Clone, Debug, PartialEq, Eq, Deserialize)]
#[serde(from = "ClaimWire")]
pub struct ClaimFacts {
    /// `namespace/name`.
    pub key: ObjectKey,
    /// Its uid.
    pub uid: String,
    /// Its resourceVersion.
    pub resource_version: String,
    /// Whether `deletionTimestamp` is set.
    pub deleting: bool,
    /// Its finalizers, in order.
    pub finalizers: Vec<String>,
    /// `spec.volumeName`: the volume it is bound to, or empty.
    pub volume_name: String,
}

impl ClaimFacts {
    /// The item decoder of an informer (or list) of claims (JSON: the client has no protobuf
    /// tables for claims).
    pub fn decoder() -> ItemDecoder<ClaimFacts> {
        serde_decoder(None)
    }
}

#[derive(Deserialize, Default)]
struct ClaimWire {
    #[serde(default, deserialize_with = "kube_gc_api::null_as_default")]
    metadata: MetaWire,
    #[serde(default, deserialize_with = "kube_gc_api::null_as_default")]
    spec: ClaimSpecWire,
}

#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase")]
struct ClaimSpecWire {
    volume_name: Option<String>,
}

impl From<ClaimWire> for ClaimFacts {
    fn from(claim: ClaimWire) -> ClaimFacts {
        let meta = claim.metadata;
        ClaimFacts {
            key: meta.key(),
            uid: meta.uid.unwrap_or_default(),
            resource_version: meta.resource_version.unwrap_or_default(),
            deleting: meta.deletion_timestamp.is_some(),
            finalizers: meta.finalizers,
            volume_name: claim.spec.volume_name.unwrap_or_default(),
        }
    }
}

impl Cacheable for ClaimFacts {
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

/// The claim a volume's `spec.claimRef` names.
#[derive(Clone, Debug, PartialEq, Eq, Deserialize, Default)]
pub struct ClaimRef {
    /// Its namespace.
    #[serde(default)]
    pub namespace: String,
    /// Its name.
    #[serde(default)]
    pub name: String,
    /// Its uid, when the reference has one.
    #[serde(default)]
    pub uid: Option<String>,
}

/// A PersistentVolume as the PV protection controller sees it.
#[derive(Clone, Debug, PartialEq, Eq, Deserialize)]
#[serde(from = "VolumeWire")]
pub struct VolumeFacts {
    /// Its name.
    pub name: String,
    /// Its uid.
    pub uid: String,
    /// Its resourceVersion.
    pub resource_version: String,
    /// Whether `deletionTimestamp` is set.
    pub deleting: bool,
    /// Its finalizers, in order.
    pub finalizers: Vec<String>,
    /// Whether `status.phase` is `Bound` (what upstream's controller reads).
    pub bound: bool,
    /// The claim `spec.claimRef` names, if any.
    pub claim_ref: Option<ClaimRef>,
}

impl VolumeFacts {
    /// The item decoder of an informer of volumes (JSON).
    pub fn decoder() -> ItemDecoder<VolumeFacts> {
        serde_decoder(None)
    }
}

#[derive(Deserialize, Default)]
struct VolumeWire {
    #[serde(default, deserialize_with = "kube_gc_api::null_as_default")]
    metadata: MetaWire,
    #[serde(default, deserialize_with = "kube_gc_api::null_as_default")]
    spec: VolumeSpecWire,
    #[serde(default, deserialize_with = "kube_gc_api::null_as_default")]
    status: VolumeStatusWire,
}

#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase")]
struct VolumeSpecWire {
    claim_ref: Option<ClaimRef>,
}

#[derive(Deserialize, Default)]
struct VolumeStatusWire {
    phase: Option<String>,
}

impl From<VolumeWire> for VolumeFacts {
    fn from(volume: VolumeWire) -> VolumeFacts {
        let meta = volume.metadata;
        VolumeFacts {
            name: meta.name.unwrap_or_default(),
            uid: meta.uid.unwrap_or_default(),
            resource_version: meta.resource_version.unwrap_or_default(),
            deleting: meta.deletion_timestamp.is_some(),
            finalizers: meta.finalizers,
            bound: volume.status.phase.as_deref() == Some("Bound"),
            claim_ref: volume.spec.claim_ref,
        }
    }
}

impl Cacheable for VolumeFacts {
    fn cache_key(&self) -> ObjectKey {
        ObjectKey::cluster_scoped(&self.name)
    }
    fn resource_version(&self) -> &str {
        &self.resource_version
    }
    fn uid(&self) -> &str {
        &self.uid
    }
}

/// The claims a Pod uses, as the PVC protection controller sees them.
#[derive(Clone, Debug, PartialEq, Eq, Deserialize)]
#[serde(from = "PodWire")]
pub struct PodClaims {
    /// `namespace/name`.
    pub key: ObjectKey,
    /// Its uid.
    pub uid: String,
    /// Its resourceVersion.
    pub resource_version: String,
    /// `spec.nodeName`; empty when not scheduled.
    pub node_name: String,
    /// Being deleted with a zero grace period: its kubelet is done with it, or it was
    /// force-deleted (upstream's `podIsShutDown`).
    pub shut_down: bool,
    /// The claims of its `persistentVolumeClaim` volumes.
    pub claims: Vec<String>,
    /// The claims of its `ephemeral` volumes (`<pod>-<volume>`).
    pub ephemeral_claims: Vec<String>,
}

impl PodClaims {
    /// The members the decoder reads, for a protobuf reader to keep.
    pub fn reads() -> Selection {
        Selection::paths([
            "metadata.name",
            "metadata.namespace",
            "metadata.uid",
            "metadata.resourceVersion",
            "metadata.deletionTimestamp",
            "metadata.deletionGracePeriodSeconds",
            "spec.nodeName",
            "spec.volumes.name",
            "spec.volumes.persistentVolumeClaim.claimName",
            "spec.volumes.ephemeral.volumeClaimTemplate.metadata.name",
        ])
    }

    /// The item decoder of an informer (or list) of Pods.
    pub fn decoder() -> ItemDecoder<PodClaims> {
        serde_decoder(Some(PodClaims::reads()))
    }

    /// Every claim it uses, either way.
    pub fn all_claims(&self) -> impl Iterator<Item = &str> {
        self.claims
            .iter()
            .chain(&self.ephemeral_claims)
            .map(String::as_str)
    }
}

impl Cacheable for PodClaims {
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

#[derive(Deserialize, Default)]
struct PodWire {
    #[serde(default, deserialize_with = "kube_gc_api::null_as_default")]
    metadata: MetaWire,
    #[serde(default, deserialize_with = "kube_gc_api::null_as_default")]
    spec: PodSpecWire,
}

#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase")]
struct PodSpecWire {
    node_name: Option<String>,
    #[serde(default, deserialize_with = "kube_gc_api::null_as_default")]
    volumes: Vec<VolumeWireOfPod>,
}

#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase")]
struct VolumeWireOfPod {
    name: Option<String>,
    persistent_volume_claim: Option<ClaimVolumeWire>,
    ephemeral: Option<serde::de::IgnoredAny>,
}

#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase")]
struct ClaimVolumeWire {
    claim_name: Option<String>,
}

impl From<PodWire> for PodClaims {
    fn from(pod: PodWire) -> PodClaims {
        let meta = pod.metadata;
        let name = meta.name.clone().unwrap_or_default();
        let mut claims = Vec::new();
        let mut ephemeral_claims = Vec::new();
        for volume in pod.spec.volumes {
            if let Some(claim) = volume.persistent_volume_claim.and_then(|c| c.claim_name) {
                claims.push(claim);
            } else if volume.ephemeral.is_some() {
                let volume = volume.name.unwrap_or_default();
                ephemeral_claims.push(format!("{name}-{volume}"));
            }
        }
        PodClaims {
            key: meta.key(),
            uid: meta.uid.unwrap_or_default(),
            resource_version: meta.resource_version.unwrap_or_default(),
            node_name: pod.spec.node_name.unwrap_or_default(),
            shut_down: meta.deletion_timestamp.is_some()
                && meta.deletion_grace_period_seconds == Some(0),
            claims,
            ephemeral_claims,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_pods_claims_by_name_and_ephemeral() {
        let pod = json!({"metadata": {"name": "web-0", "namespace": "ns", "uid": "u",
                "deletionTimestamp": "2026-11-29T00:00:00Z", "deletionGracePeriodSeconds": 0},
            "spec": {"nodeName": "n", "volumes": [
                {"name": "data", "persistentVolumeClaim": {"claimName": "data-web-0"}},
                {"name": "scratch", "ephemeral": {"volumeClaimTemplate": {"spec": {}}}},
                {"name": "tmp", "emptyDir": {}}]}});
        let claims: PodClaims = serde_json::from_value(pod).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(claims.claims, ["data-web-0"]);
        assert_eq!(claims.ephemeral_claims, ["web-0-scratch"]);
        assert!(claims.shut_down);
        assert_eq!(claims.node_name, "n");
    }

    #[test]
    fn claims_and_volumes_as_the_real_server_serves_them() {
        let exchange =
            |prefix: &str| kube_gc_fixtures::exchange(prefix)["response"]["body"].clone();
        let claim: ClaimFacts =
            serde_json::from_value(exchange("187-")).unwrap_or_else(|e| panic!("{e}"));
        assert!(claim.deleting);
        assert_eq!(claim.finalizers, ["kubernetes.io/pvc-protection"]);
        assert_eq!(claim.key.to_string(), "pgc-capture/pgc-claim");
        let volume: VolumeFacts =
            serde_json::from_value(exchange("191-")).unwrap_or_else(|e| panic!("{e}"));
        assert!(volume.deleting && !volume.bound && volume.claim_ref.is_none());
        assert_eq!(volume.finalizers, ["kubernetes.io/pv-protection"]);
    }
}
