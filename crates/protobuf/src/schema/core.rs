//! `core.v1` (`k8s.io.api.core.v1`): Pod and the pod template a Job carries, Namespace,
//! ConfigMap.
//!
//! Field numbers: `staging/src/k8s.io/api/core/v1/generated.proto`; pointer or value and
//! `omitempty`: `staging/src/k8s.io/api/core/v1/types.go` (v1.28).
//!
//! Not every field is here: a pod spec has ~40 fields. Kept are those a garbage collector or a
//! retention rule reads (phase, conditions, node, restart policy) and those of an ordinary
//! batch pod template (containers: `container.rs`; volumes: `volume.rs`; tolerations, node
//! selector, security context's scalars). The rest (affinity, DNS config, topology spread,
//! overhead's friends, …) is skipped when read — as any unknown field — and so missing from the
//! JSON written from it.

use super::container::{CONTAINER, LOCAL_OBJECT_REFERENCE, RESOURCE_REQUIREMENTS};
use super::meta::OBJECT_META;
use super::volume::VOLUME;
use super::{Field, Kind, Message};

/// `core.v1.Pod`.
pub static POD: Message = Message {
    name: "core.v1.Pod",
    fields: &[
        Field::message(1, "metadata", &OBJECT_META),
        Field::message(2, "spec", &POD_SPEC),
        Field::message(3, "status", &POD_STATUS),
    ],
};

/// `core.v1.PodList`.
pub static POD_LIST: Message = list_of!("core.v1.PodList", &POD);

/// `core.v1.PodTemplateSpec`: a Job's `spec.template`.
pub static POD_TEMPLATE_SPEC: Message = Message {
    name: "core.v1.PodTemplateSpec",
    fields: &[
        Field::message(1, "metadata", &OBJECT_META),
        Field::message(2, "spec", &POD_SPEC),
    ],
};

/// `core.v1.PodSpec` (the fields listed in the module documentation).
pub static POD_SPEC: Message = Message {
    name: "core.v1.PodSpec",
    fields: &[
        Field::message(1, "volumes", &VOLUME).repeated(),
        Field::message(20, "initContainers", &CONTAINER).repeated(),
        Field::message(2, "containers", &CONTAINER).repeated(),
        Field::string(3, "restartPolicy"),
        Field::int64(4, "terminationGracePeriodSeconds").pointer(),
        Field::int64(5, "activeDeadlineSeconds").pointer(),
        Field::string(6, "dnsPolicy"),
        Field::map(7, "nodeSelector", &Kind::String),
        Field::string(8, "serviceAccountName"),
        Field::string(9, "serviceAccount"),
        Field::bool(21, "automountServiceAccountToken").pointer(),
        Field::string(10, "nodeName"),
        Field::bool(11, "hostNetwork"),
        Field::bool(12, "hostPID"),
        Field::bool(13, "hostIPC"),
        Field::bool(27, "shareProcessNamespace").pointer(),
        Field::message(14, "securityContext", &POD_SECURITY_CONTEXT).pointer(),
        Field::message(15, "imagePullSecrets", &LOCAL_OBJECT_REFERENCE).repeated(),
        Field::string(16, "hostname"),
        Field::string(17, "subdomain"),
        Field::string(19, "schedulerName"),
        Field::message(22, "tolerations", &TOLERATION).repeated(),
        Field::string(24, "priorityClassName"),
        Field::int32(25, "priority").pointer(),
        Field::string(29, "runtimeClassName").pointer(),
        Field::bool(30, "enableServiceLinks").pointer(),
        Field::string(31, "preemptionPolicy").pointer(),
        Field::map(32, "overhead", &Kind::Quantity),
        Field::bool(35, "setHostnameAsFQDN").pointer(),
        Field::bool(37, "hostUsers").pointer(),
    ],
};

/// `core.v1.PodSecurityContext` (its scalar fields).
pub static POD_SECURITY_CONTEXT: Message = Message {
    name: "core.v1.PodSecurityContext",
    fields: &[
        Field::int64(2, "runAsUser").pointer(),
        Field::int64(6, "runAsGroup").pointer(),
        Field::bool(3, "runAsNonRoot").pointer(),
        Field::int64(4, "supplementalGroups").repeated(),
        Field::int64(5, "fsGroup").pointer(),
        Field::string(9, "fsGroupChangePolicy").pointer(),
    ],
};

/// `core.v1.Toleration`.
pub static TOLERATION: Message = Message {
    name: "core.v1.Toleration",
    fields: &[
        Field::string(1, "key"),
        Field::string(2, "operator"),
        Field::string(3, "value"),
        Field::string(4, "effect"),
        Field::int64(5, "tolerationSeconds").pointer(),
    ],
};

/// `core.v1.PodStatus`.
pub static POD_STATUS: Message = Message {
    name: "core.v1.PodStatus",
    fields: &[
        Field::string(1, "phase"),
        Field::message(2, "conditions", &POD_CONDITION).repeated(),
        Field::string(3, "message"),
        Field::string(4, "reason"),
        Field::string(11, "nominatedNodeName"),
        Field::string(5, "hostIP"),
        Field::message(16, "hostIPs", &IP_ADDRESS).repeated(),
        Field::string(6, "podIP"),
        Field::message(12, "podIPs", &IP_ADDRESS).repeated(),
        Field::of(7, "startTime", Kind::Time).pointer(),
        Field::message(10, "initContainerStatuses", &CONTAINER_STATUS).repeated(),
        Field::message(8, "containerStatuses", &CONTAINER_STATUS).repeated(),
        Field::string(9, "qosClass"),
        Field::message(13, "ephemeralContainerStatuses", &CONTAINER_STATUS).repeated(),
        Field::string(14, "resize"),
    ],
};

/// `core.v1.PodCondition`.
pub static POD_CONDITION: Message = Message {
    name: "core.v1.PodCondition",
    fields: &[
        Field::string(1, "type").always(),
        Field::string(2, "status").always(),
        Field::of(3, "lastProbeTime", Kind::Time).always(),
        Field::of(4, "lastTransitionTime", Kind::Time).always(),
        Field::string(5, "reason"),
        Field::string(6, "message"),
    ],
};

/// `core.v1.PodIP` and `core.v1.HostIP`: `{ip = 1}`.
pub static IP_ADDRESS: Message = Message {
    name: "core.v1.PodIP",
    fields: &[Field::string(1, "ip")],
};

/// `core.v1.ContainerStatus`.
pub static CONTAINER_STATUS: Message = Message {
    name: "core.v1.ContainerStatus",
    fields: &[
        Field::string(1, "name").always(),
        Field::message(2, "state", &CONTAINER_STATE),
        Field::message(3, "lastState", &CONTAINER_STATE),
        Field::bool(4, "ready").always(),
        Field::int32(5, "restartCount").always(),
        Field::string(6, "image").always(),
        Field::string(7, "imageID").always(),
        Field::string(8, "containerID"),
        Field::bool(9, "started").pointer(),
        Field::map(10, "allocatedResources", &Kind::Quantity),
        Field::message(11, "resources", &RESOURCE_REQUIREMENTS).pointer(),
    ],
};

/// `core.v1.ContainerState`: one of three.
pub static CONTAINER_STATE: Message = Message {
    name: "core.v1.ContainerState",
    fields: &[
        Field::message(1, "waiting", &STATE_WAITING).pointer(),
        Field::message(2, "running", &STATE_RUNNING).pointer(),
        Field::message(3, "terminated", &STATE_TERMINATED).pointer(),
    ],
};

/// `core.v1.ContainerStateWaiting`.
pub static STATE_WAITING: Message = Message {
    name: "core.v1.ContainerStateWaiting",
    fields: &[Field::string(1, "reason"), Field::string(2, "message")],
};

/// `core.v1.ContainerStateRunning`.
pub static STATE_RUNNING: Message = Message {
    name: "core.v1.ContainerStateRunning",
    fields: &[Field::of(1, "startedAt", Kind::Time).always()],
};

/// `core.v1.ContainerStateTerminated`.
pub static STATE_TERMINATED: Message = Message {
    name: "core.v1.ContainerStateTerminated",
    fields: &[
        Field::int32(1, "exitCode").always(),
        Field::int32(2, "signal"),
        Field::string(3, "reason"),
        Field::string(4, "message"),
        Field::of(5, "startedAt", Kind::Time).always(),
        Field::of(6, "finishedAt", Kind::Time).always(),
        Field::string(7, "containerID"),
    ],
};

/// `core.v1.Namespace`.
pub static NAMESPACE: Message = Message {
    name: "core.v1.Namespace",
    fields: &[
        Field::message(1, "metadata", &OBJECT_META),
        Field::message(2, "spec", &NAMESPACE_SPEC),
        Field::message(3, "status", &NAMESPACE_STATUS),
    ],
};

/// `core.v1.NamespaceList`.
pub static NAMESPACE_LIST: Message = list_of!("core.v1.NamespaceList", &NAMESPACE);

/// `core.v1.NamespaceSpec`.
pub static NAMESPACE_SPEC: Message = Message {
    name: "core.v1.NamespaceSpec",
    fields: &[Field::string(1, "finalizers").repeated()],
};

/// `core.v1.NamespaceStatus`.
pub static NAMESPACE_STATUS: Message = Message {
    name: "core.v1.NamespaceStatus",
    fields: &[
        Field::string(1, "phase"),
        Field::message(2, "conditions", &NAMESPACE_CONDITION).repeated(),
    ],
};

/// `core.v1.NamespaceCondition` (field 3 is unused upstream).
pub static NAMESPACE_CONDITION: Message = Message {
    name: "core.v1.NamespaceCondition",
    fields: &[
        Field::string(1, "type").always(),
        Field::string(2, "status").always(),
        Field::of(4, "lastTransitionTime", Kind::Time).always(),
        Field::string(5, "reason"),
        Field::string(6, "message"),
    ],
};

/// `core.v1.ConfigMap`.
pub static CONFIG_MAP: Message = Message {
    name: "core.v1.ConfigMap",
    fields: &[
        Field::message(1, "metadata", &OBJECT_META),
        Field::bool(4, "immutable").pointer(),
        Field::map(2, "data", &Kind::String),
        Field::map(3, "binaryData", &Kind::Bytes),
    ],
};

/// `core.v1.ConfigMapList`.
pub static CONFIG_MAP_LIST: Message = list_of!("core.v1.ConfigMapList", &CONFIG_MAP);
