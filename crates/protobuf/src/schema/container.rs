//! `core.v1` containers (`k8s.io.api.core.v1`): a container and its ports, environment,
//! resources and mounts.
//!
//! Field numbers: `staging/src/k8s.io/api/core/v1/generated.proto`; pointer or value and
//! `omitempty`: `staging/src/k8s.io/api/core/v1/types.go` (v1.28). Not here (skipped when read):
//! `envFrom`, probes, `lifecycle`, the container `securityContext`, `resizePolicy`,
//! `volumeDevices`.

use super::{Field, Kind, Message};

/// `core.v1.Container` (without probes, lifecycle, security context, envFrom).
pub static CONTAINER: Message = Message {
    name: "core.v1.Container",
    fields: &[
        Field::string(1, "name").always(),
        Field::string(2, "image"),
        Field::string(3, "command").repeated(),
        Field::string(4, "args").repeated(),
        Field::string(5, "workingDir"),
        Field::message(6, "ports", &CONTAINER_PORT).repeated(),
        Field::message(7, "env", &ENV_VAR).repeated(),
        Field::message(8, "resources", &RESOURCE_REQUIREMENTS),
        Field::string(24, "restartPolicy").pointer(),
        Field::message(9, "volumeMounts", &VOLUME_MOUNT).repeated(),
        Field::string(13, "terminationMessagePath"),
        Field::string(20, "terminationMessagePolicy"),
        Field::string(14, "imagePullPolicy"),
        Field::bool(16, "stdin"),
        Field::bool(17, "stdinOnce"),
        Field::bool(18, "tty"),
    ],
};

/// `core.v1.ContainerPort`.
pub static CONTAINER_PORT: Message = Message {
    name: "core.v1.ContainerPort",
    fields: &[
        Field::string(1, "name"),
        Field::int32(2, "hostPort"),
        Field::int32(3, "containerPort").always(),
        Field::string(4, "protocol"),
        Field::string(5, "hostIP"),
    ],
};

/// `core.v1.EnvVar`.
pub static ENV_VAR: Message = Message {
    name: "core.v1.EnvVar",
    fields: &[
        Field::string(1, "name").always(),
        Field::string(2, "value"),
        Field::message(3, "valueFrom", &ENV_VAR_SOURCE).pointer(),
    ],
};

/// `core.v1.EnvVarSource`.
pub static ENV_VAR_SOURCE: Message = Message {
    name: "core.v1.EnvVarSource",
    fields: &[
        Field::message(1, "fieldRef", &OBJECT_FIELD_SELECTOR).pointer(),
        Field::message(2, "resourceFieldRef", &RESOURCE_FIELD_SELECTOR).pointer(),
        Field::message(3, "configMapKeyRef", &KEY_SELECTOR).pointer(),
        Field::message(4, "secretKeyRef", &KEY_SELECTOR).pointer(),
    ],
};

/// `core.v1.ObjectFieldSelector`.
pub static OBJECT_FIELD_SELECTOR: Message = Message {
    name: "core.v1.ObjectFieldSelector",
    fields: &[
        Field::string(1, "apiVersion"),
        Field::string(2, "fieldPath").always(),
    ],
};

/// `core.v1.ResourceFieldSelector`.
pub static RESOURCE_FIELD_SELECTOR: Message = Message {
    name: "core.v1.ResourceFieldSelector",
    fields: &[
        Field::string(1, "containerName"),
        Field::string(2, "resource").always(),
        Field::of(3, "divisor", Kind::Quantity).always(),
    ],
};

/// `core.v1.ConfigMapKeySelector` and `core.v1.SecretKeySelector`: the same fields.
pub static KEY_SELECTOR: Message = Message {
    name: "core.v1.ConfigMapKeySelector",
    fields: &[
        Field::inline(1, "localObjectReference", &LOCAL_OBJECT_REFERENCE),
        Field::string(2, "key").always(),
        Field::bool(3, "optional").pointer(),
    ],
};

/// `core.v1.LocalObjectReference`.
pub static LOCAL_OBJECT_REFERENCE: Message = Message {
    name: "core.v1.LocalObjectReference",
    fields: &[Field::string(1, "name")],
};

/// `core.v1.ResourceRequirements`.
pub static RESOURCE_REQUIREMENTS: Message = Message {
    name: "core.v1.ResourceRequirements",
    fields: &[
        Field::map(1, "limits", &Kind::Quantity),
        Field::map(2, "requests", &Kind::Quantity),
        Field::message(3, "claims", &RESOURCE_CLAIM).repeated(),
    ],
};

/// `core.v1.ResourceClaim`.
pub static RESOURCE_CLAIM: Message = Message {
    name: "core.v1.ResourceClaim",
    fields: &[Field::string(1, "name").always()],
};

/// `core.v1.VolumeMount`.
pub static VOLUME_MOUNT: Message = Message {
    name: "core.v1.VolumeMount",
    fields: &[
        Field::string(1, "name").always(),
        Field::bool(2, "readOnly"),
        Field::string(3, "mountPath").always(),
        Field::string(4, "subPath"),
        Field::string(5, "mountPropagation").pointer(),
        Field::string(6, "subPathExpr"),
    ],
};
