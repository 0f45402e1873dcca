//! `core.v1.Event` and the messages it holds: what client-go's event recorder sends (in
//! protobuf, exchanges 253 and 293) and what `kubectl get events` lists.
//!
//! Field numbers: `staging/src/k8s.io/api/core/v1/generated.proto`; pointer or value and
//! `omitempty`: `staging/src/k8s.io/api/core/v1/types.go` (v1.28). Every table here is complete
//! for v1.28: an Event decoded from a client's body loses nothing.

use super::meta::OBJECT_META;
use super::{Field, Kind, Message};

/// `core.v1.Event`. Its timestamps are structs (`Time`, `MicroTime`), which `omitempty` does not
/// drop: JSON `null` when zero (exchange 253's `eventTime`). `reportingComponent` and
/// `reportingInstance` have no `omitempty`.
pub static EVENT: Message = Message {
    name: "core.v1.Event",
    fields: &[
        Field::message(1, "metadata", &OBJECT_META),
        Field::message(2, "involvedObject", &OBJECT_REFERENCE),
        Field::string(3, "reason"),
        Field::string(4, "message"),
        Field::message(5, "source", &EVENT_SOURCE),
        Field::of(6, "firstTimestamp", Kind::Time).always(),
        Field::of(7, "lastTimestamp", Kind::Time).always(),
        Field::int32(8, "count"),
        Field::string(9, "type"),
        Field::of(10, "eventTime", Kind::MicroTime).always(),
        Field::message(11, "series", &EVENT_SERIES).pointer(),
        Field::string(12, "action"),
        Field::message(13, "related", &OBJECT_REFERENCE).pointer(),
        Field::string(14, "reportingComponent").always(),
        Field::string(15, "reportingInstance").always(),
    ],
};

/// `core.v1.EventList`.
pub static EVENT_LIST: Message = list_of!("core.v1.EventList", &EVENT);

/// `core.v1.ObjectReference`: every field `omitempty`.
pub static OBJECT_REFERENCE: Message = Message {
    name: "core.v1.ObjectReference",
    fields: &[
        Field::string(1, "kind"),
        Field::string(2, "namespace"),
        Field::string(3, "name"),
        Field::string(4, "uid"),
        Field::string(5, "apiVersion"),
        Field::string(6, "resourceVersion"),
        Field::string(7, "fieldPath"),
    ],
};

/// `core.v1.EventSource`.
pub static EVENT_SOURCE: Message = Message {
    name: "core.v1.EventSource",
    fields: &[Field::string(1, "component"), Field::string(2, "host")],
};

/// `core.v1.EventSeries`.
pub static EVENT_SERIES: Message = Message {
    name: "core.v1.EventSeries",
    fields: &[
        Field::int32(1, "count"),
        Field::of(2, "lastObservedTime", Kind::MicroTime).always(),
    ],
};
