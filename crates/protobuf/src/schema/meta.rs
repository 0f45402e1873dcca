//! `meta.v1` (`k8s.io.apimachinery.pkg.apis.meta.v1`): object and list metadata, `Status`,
//! `PartialObjectMetadata`, and the `DeleteOptions` a client sends with a DELETE.
//!
//! Field numbers: `staging/src/k8s.io/apimachinery/pkg/apis/meta/v1/generated.proto`; pointer
//! or value and `omitempty`: the Go structs in `.../apis/meta/v1/types.go` (kubernetes v1.28).

use super::{Field, Kind, Message};

/// `meta.v1.ObjectMeta`.
pub static OBJECT_META: Message = Message {
    name: "meta.v1.ObjectMeta",
    fields: &[
        Field::string(1, "name"),
        Field::string(2, "generateName"),
        Field::string(3, "namespace"),
        Field::string(4, "selfLink"),
        Field::string(5, "uid"),
        Field::string(6, "resourceVersion"),
        Field::int64(7, "generation"),
        // A `Time` value: JSON `null` when zero (omitempty does not drop a struct).
        Field::of(8, "creationTimestamp", Kind::Time).always(),
        Field::of(9, "deletionTimestamp", Kind::Time).pointer(),
        Field::int64(10, "deletionGracePeriodSeconds").pointer(),
        Field::map(11, "labels", &Kind::String),
        Field::map(12, "annotations", &Kind::String),
        Field::message(13, "ownerReferences", &OWNER_REFERENCE).repeated(),
        Field::string(14, "finalizers").repeated(),
        Field::message(17, "managedFields", &MANAGED_FIELDS_ENTRY).repeated(),
    ],
};

/// `meta.v1.OwnerReference`. Its first four fields have no `omitempty`.
pub static OWNER_REFERENCE: Message = Message {
    name: "meta.v1.OwnerReference",
    fields: &[
        Field::string(5, "apiVersion").always(),
        Field::string(1, "kind").always(),
        Field::string(3, "name").always(),
        Field::string(4, "uid").always(),
        Field::bool(6, "controller").pointer(),
        Field::bool(7, "blockOwnerDeletion").pointer(),
    ],
};

/// `meta.v1.ManagedFieldsEntry`; `fieldsV1` is JSON text carried as bytes (`FieldsV1.Raw`).
pub static MANAGED_FIELDS_ENTRY: Message = Message {
    name: "meta.v1.ManagedFieldsEntry",
    fields: &[
        Field::string(1, "manager"),
        Field::string(2, "operation"),
        Field::string(3, "apiVersion"),
        Field::of(4, "time", Kind::Time).pointer(),
        Field::string(6, "fieldsType"),
        Field::of(7, "fieldsV1", Kind::RawJson).pointer(),
        Field::string(8, "subresource"),
    ],
};

/// `meta.v1.ListMeta`.
pub static LIST_META: Message = Message {
    name: "meta.v1.ListMeta",
    fields: &[
        Field::string(1, "selfLink"),
        Field::string(2, "resourceVersion"),
        Field::string(3, "continue"),
        Field::int64(4, "remainingItemCount").pointer(),
    ],
};

/// `meta.v1.LabelSelector`.
pub static LABEL_SELECTOR: Message = Message {
    name: "meta.v1.LabelSelector",
    fields: &[
        Field::map(1, "matchLabels", &Kind::String),
        Field::message(2, "matchExpressions", &LABEL_SELECTOR_REQUIREMENT).repeated(),
    ],
};

/// `meta.v1.LabelSelectorRequirement`.
pub static LABEL_SELECTOR_REQUIREMENT: Message = Message {
    name: "meta.v1.LabelSelectorRequirement",
    fields: &[
        Field::string(1, "key").always(),
        Field::string(2, "operator").always(),
        Field::string(3, "values").repeated(),
    ],
};

/// `meta.v1.Status`: what the server answers instead of an object, and an `ERROR` watch
/// event's object.
pub static STATUS: Message = Message {
    name: "meta.v1.Status",
    fields: &[
        Field::message(1, "metadata", &LIST_META),
        Field::string(2, "status"),
        Field::string(3, "message"),
        Field::string(4, "reason"),
        Field::message(5, "details", &STATUS_DETAILS).pointer(),
        Field::int32(6, "code"),
    ],
};

/// `meta.v1.StatusDetails`.
pub static STATUS_DETAILS: Message = Message {
    name: "meta.v1.StatusDetails",
    fields: &[
        Field::string(1, "name"),
        Field::string(2, "group"),
        Field::string(3, "kind"),
        Field::string(6, "uid"),
        Field::message(4, "causes", &STATUS_CAUSE).repeated(),
        Field::int32(5, "retryAfterSeconds"),
    ],
};

/// `meta.v1.StatusCause`; the Go field `Type` is `reason` in both encodings.
pub static STATUS_CAUSE: Message = Message {
    name: "meta.v1.StatusCause",
    fields: &[
        Field::string(1, "reason"),
        Field::string(2, "message"),
        Field::string(3, "field"),
    ],
};

/// `meta.v1.PartialObjectMetadata`: an object's metadata only (the metadata client's form).
pub static PARTIAL_OBJECT_METADATA: Message = Message {
    name: "meta.v1.PartialObjectMetadata",
    fields: &[Field::message(1, "metadata", &OBJECT_META)],
};

/// `meta.v1.PartialObjectMetadataList`.
pub static PARTIAL_OBJECT_METADATA_LIST: Message = list_of!(
    "meta.v1.PartialObjectMetadataList",
    &PARTIAL_OBJECT_METADATA
);

/// `meta.v1.DeleteOptions`: the body of a DELETE (client-go's typed clients send it in
/// protobuf, exchange 242). Every field a Go pointer or slice; the type is registered in every
/// group version, so the envelope may name the resource's (`batch/v1`) or `v1`.
pub static DELETE_OPTIONS: Message = Message {
    name: "meta.v1.DeleteOptions",
    fields: &[
        Field::int64(1, "gracePeriodSeconds").pointer(),
        Field::message(2, "preconditions", &PRECONDITIONS).pointer(),
        Field::bool(3, "orphanDependents").pointer(),
        Field::string(4, "propagationPolicy").pointer(),
        Field::string(5, "dryRun").repeated(),
    ],
};

/// `meta.v1.Preconditions`: both fields pointers.
pub static PRECONDITIONS: Message = Message {
    name: "meta.v1.Preconditions",
    fields: &[
        Field::string(1, "uid").pointer(),
        Field::string(2, "resourceVersion").pointer(),
    ],
};
