//! `core.v1` volumes (`k8s.io.api.core.v1`): a pod's `volumes` and their common sources.
//!
//! Field numbers: `staging/src/k8s.io/api/core/v1/generated.proto`; pointer or value and
//! `omitempty`: `staging/src/k8s.io/api/core/v1/types.go` (v1.28). Kept: `hostPath`, `emptyDir`,
//! `secret`, `persistentVolumeClaim`, `downwardAPI`, `configMap` and `projected` — the last is
//! in every Pod that mounts its service account's token (the admission plugin adds it) — and
//! `ephemeral` down to its claim template's metadata. Other sources (cloud disks, NFS, CSI, …)
//! are skipped when read.

use super::container::{LOCAL_OBJECT_REFERENCE, OBJECT_FIELD_SELECTOR, RESOURCE_FIELD_SELECTOR};
use super::meta::OBJECT_META;
use super::{Field, Kind, Message};

/// `core.v1.Volume`: a name and an inlined `VolumeSource`.
pub static VOLUME: Message = Message {
    name: "core.v1.Volume",
    fields: &[
        Field::string(1, "name").always(),
        Field::inline(2, "volumeSource", &VOLUME_SOURCE),
    ],
};

/// `core.v1.VolumeSource` (the common sources).
pub static VOLUME_SOURCE: Message = Message {
    name: "core.v1.VolumeSource",
    fields: &[
        Field::message(1, "hostPath", &HOST_PATH).pointer(),
        Field::message(2, "emptyDir", &EMPTY_DIR).pointer(),
        Field::message(6, "secret", &SECRET_VOLUME).pointer(),
        Field::message(10, "persistentVolumeClaim", &PVC_VOLUME).pointer(),
        Field::message(16, "downwardAPI", &DOWNWARD_API_VOLUME).pointer(),
        Field::message(19, "configMap", &CONFIG_MAP_VOLUME).pointer(),
        Field::message(26, "projected", &PROJECTED_VOLUME).pointer(),
        Field::message(29, "ephemeral", &EPHEMERAL_VOLUME).pointer(),
    ],
};

/// `core.v1.EphemeralVolumeSource`: a claim made for the pod (`<pod>-<volume>`), which the
/// PVC protection controller must see to keep that claim while the pod runs.
pub static EPHEMERAL_VOLUME: Message = Message {
    name: "core.v1.EphemeralVolumeSource",
    fields: &[Field::message(1, "volumeClaimTemplate", &PVC_TEMPLATE).pointer()],
};

/// `core.v1.PersistentVolumeClaimTemplate`, its metadata only (the claim's spec is skipped).
pub static PVC_TEMPLATE: Message = Message {
    name: "core.v1.PersistentVolumeClaimTemplate",
    fields: &[Field::message(1, "metadata", &OBJECT_META)],
};

/// `core.v1.HostPathVolumeSource`.
pub static HOST_PATH: Message = Message {
    name: "core.v1.HostPathVolumeSource",
    fields: &[
        Field::string(1, "path").always(),
        Field::string(2, "type").pointer(),
    ],
};

/// `core.v1.EmptyDirVolumeSource`.
pub static EMPTY_DIR: Message = Message {
    name: "core.v1.EmptyDirVolumeSource",
    fields: &[
        Field::string(1, "medium"),
        Field::of(2, "sizeLimit", Kind::Quantity).pointer(),
    ],
};

/// `core.v1.SecretVolumeSource`.
pub static SECRET_VOLUME: Message = Message {
    name: "core.v1.SecretVolumeSource",
    fields: &[
        Field::string(1, "secretName"),
        Field::message(2, "items", &KEY_TO_PATH).repeated(),
        Field::int32(3, "defaultMode").pointer(),
        Field::bool(4, "optional").pointer(),
    ],
};

/// `core.v1.PersistentVolumeClaimVolumeSource`.
pub static PVC_VOLUME: Message = Message {
    name: "core.v1.PersistentVolumeClaimVolumeSource",
    fields: &[
        Field::string(1, "claimName").always(),
        Field::bool(2, "readOnly"),
    ],
};

/// `core.v1.ConfigMapVolumeSource`.
pub static CONFIG_MAP_VOLUME: Message = Message {
    name: "core.v1.ConfigMapVolumeSource",
    fields: &[
        Field::inline(1, "localObjectReference", &LOCAL_OBJECT_REFERENCE),
        Field::message(2, "items", &KEY_TO_PATH).repeated(),
        Field::int32(3, "defaultMode").pointer(),
        Field::bool(4, "optional").pointer(),
    ],
};

/// `core.v1.KeyToPath`.
pub static KEY_TO_PATH: Message = Message {
    name: "core.v1.KeyToPath",
    fields: &[
        Field::string(1, "key").always(),
        Field::string(2, "path").always(),
        Field::int32(3, "mode").pointer(),
    ],
};

/// `core.v1.DownwardAPIVolumeSource`.
pub static DOWNWARD_API_VOLUME: Message = Message {
    name: "core.v1.DownwardAPIVolumeSource",
    fields: &[
        Field::message(1, "items", &DOWNWARD_API_FILE).repeated(),
        Field::int32(2, "defaultMode").pointer(),
    ],
};

/// `core.v1.DownwardAPIVolumeFile`.
pub static DOWNWARD_API_FILE: Message = Message {
    name: "core.v1.DownwardAPIVolumeFile",
    fields: &[
        Field::string(1, "path").always(),
        Field::message(2, "fieldRef", &OBJECT_FIELD_SELECTOR).pointer(),
        Field::message(3, "resourceFieldRef", &RESOURCE_FIELD_SELECTOR).pointer(),
        Field::int32(4, "mode").pointer(),
    ],
};

/// `core.v1.ProjectedVolumeSource`.
pub static PROJECTED_VOLUME: Message = Message {
    name: "core.v1.ProjectedVolumeSource",
    fields: &[
        // `json:"sources"` without omitempty; a nil slice is absent on the wire.
        Field::message(1, "sources", &VOLUME_PROJECTION).repeated(),
        Field::int32(2, "defaultMode").pointer(),
    ],
};

/// `core.v1.VolumeProjection`: one of its sources.
pub static VOLUME_PROJECTION: Message = Message {
    name: "core.v1.VolumeProjection",
    fields: &[
        Field::message(1, "secret", &KEY_PROJECTION).pointer(),
        Field::message(2, "downwardAPI", &DOWNWARD_API_PROJECTION).pointer(),
        Field::message(3, "configMap", &KEY_PROJECTION).pointer(),
        Field::message(4, "serviceAccountToken", &TOKEN_PROJECTION).pointer(),
    ],
};

/// `core.v1.SecretProjection` and `core.v1.ConfigMapProjection`: the same fields.
pub static KEY_PROJECTION: Message = Message {
    name: "core.v1.ConfigMapProjection",
    fields: &[
        Field::inline(1, "localObjectReference", &LOCAL_OBJECT_REFERENCE),
        Field::message(2, "items", &KEY_TO_PATH).repeated(),
        Field::bool(4, "optional").pointer(),
    ],
};

/// `core.v1.DownwardAPIProjection`.
pub static DOWNWARD_API_PROJECTION: Message = Message {
    name: "core.v1.DownwardAPIProjection",
    fields: &[Field::message(1, "items", &DOWNWARD_API_FILE).repeated()],
};

/// `core.v1.ServiceAccountTokenProjection`.
pub static TOKEN_PROJECTION: Message = Message {
    name: "core.v1.ServiceAccountTokenProjection",
    fields: &[
        Field::string(1, "audience"),
        Field::int64(2, "expirationSeconds").pointer(),
        Field::string(3, "path").always(),
    ],
};
