//! Hand-written message descriptors: for each Kubernetes message kube-gc reads, which field
//! number carries which JSON member, and how its value is laid out.
//!
//! Protobuf bytes say nothing about names or types — field 5 of an `ObjectMeta` is `uid` only
//! because `generated.proto` says so. These tables are that knowledge, written out from the
//! upstream files named in each table's module (`schema/meta.rs`, `schema/batch.rs`,
//! `schema/core.rs`, `schema/container.rs`, `schema/volume.rs`); the field numbers are facts of
//! the API and never change for a released
//! field, which is what makes a table written once safe to keep.
//!
//! Contract:
//! - A [`Message`] lists its fields in the Go struct's order, so JSON written from it has the
//!   members in the order the server's own JSON has them.
//! - A field's [`Presence`] records the Go field's shape, because protobuf cannot: a pointer is
//!   on the wire only when set (and then even a zero means something: `ttlSecondsAfterFinished:
//!   0` deletes at once), a plain value is always on the wire (gogo-protobuf writes zeros) and
//!   its JSON is dropped when zero only if the JSON tag says `omitempty`.
//! - Messages and fields a table does not list are skipped by the readers, never an error:
//!   a newer server's fields pass by unread, as they do for the JSON decoders.
//! - [`for_kind`] maps an envelope's `apiVersion` and `kind` to the table, and
//!   [`list_item_kind`] a list kind to its items' kind (protobuf list items carry no type).

/// A list message: every Kubernetes list is `{metadata = 1 (ListMeta), items = 2}`.
macro_rules! list_of {
    ($name:literal, $item:expr) => {
        Message {
            name: $name,
            fields: &[
                Field::message(1, "metadata", &$crate::schema::LIST_META),
                Field::message(2, "items", $item).repeated(),
            ],
        }
    };
}

mod batch;
mod container;
mod core;
mod event;
mod meta;
mod volume;

pub use self::batch::{JOB, JOB_CONDITION, JOB_LIST, JOB_SPEC, JOB_STATUS};
pub use self::container::CONTAINER;
pub use self::core::{
    CONFIG_MAP, CONFIG_MAP_LIST, NAMESPACE, NAMESPACE_LIST, POD, POD_CONDITION, POD_LIST, POD_SPEC,
    POD_STATUS, POD_TEMPLATE_SPEC,
};
pub use self::event::{EVENT, EVENT_LIST, EVENT_SERIES, EVENT_SOURCE, OBJECT_REFERENCE};
pub use self::meta::{
    DELETE_OPTIONS, LABEL_SELECTOR, LIST_META, MANAGED_FIELDS_ENTRY, OBJECT_META, OWNER_REFERENCE,
    PARTIAL_OBJECT_METADATA, PARTIAL_OBJECT_METADATA_LIST, PRECONDITIONS, STATUS, STATUS_CAUSE,
    STATUS_DETAILS,
};
pub use self::volume::VOLUME;

/// A message: its name (for errors) and its fields in Go struct order.
#[derive(Debug)]
pub struct Message {
    /// The protobuf message name, e.g. `batch.v1.JobSpec`.
    pub name: &'static str,
    /// The fields the tables know.
    pub fields: &'static [Field],
}

impl Message {
    /// The position in [`fields`](Self::fields) of field `number`. Messages have at most a
    /// few dozen fields: a linear scan beats hashing here.
    pub fn position(&self, number: u32) -> Option<usize> {
        self.fields.iter().position(|f| f.number == number)
    }

    /// The field with JSON name `name`.
    pub fn field_named(&self, name: &str) -> Option<&'static Field> {
        self.fields.iter().find(|f| f.name == name)
    }
}

/// One field of a message.
#[derive(Debug)]
pub struct Field {
    /// The protobuf field number.
    pub number: u32,
    /// The JSON member name (the Go field's `json` tag).
    pub name: &'static str,
    /// What a value is.
    pub kind: Kind,
    /// A repeated field (a JSON array; for [`Kind::Map`], the entries of one map).
    pub repeated: bool,
    /// The Go field's shape.
    pub presence: Presence,
}

/// The Go field's shape, which decides when it is on the wire and in JSON. For repeated
/// fields and maps it does not matter: an empty one is not on the wire, and left out of JSON.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Presence {
    /// A pointer (`*int32`, `*Time`, `*bool`): on the wire and in JSON exactly when set,
    /// whatever its value.
    Pointer,
    /// A plain value whose JSON tag says `omitempty`: always on the wire; in JSON only when
    /// not zero. For a message (a Go struct) `omitempty` has no effect: it is always in JSON.
    OmitEmpty,
    /// A plain value without `omitempty`: always on the wire and in JSON.
    Always,
}

/// What a field's value is, on the wire and in JSON.
#[derive(Debug)]
pub enum Kind {
    /// `string`; JSON string.
    String,
    /// `bytes`; JSON string in standard base64 (as Go's `[]byte`).
    Bytes,
    /// `int32` (varint, negative values sign-extended); JSON number.
    Int32,
    /// `int64` (varint); JSON number.
    Int64,
    /// `bool` (varint); JSON `true`/`false`.
    Bool,
    /// A nested message; JSON object.
    Message(&'static Message),
    /// An embedded Go struct with `json:",inline"`: a nested message on the wire whose
    /// members sit in the parent's JSON object (`Volume.volumeSource`).
    Inline(&'static Message),
    /// `map<string, V>`: repeated entries `{key = 1, value = 2}`; JSON object. Always
    /// [`Field::repeated`].
    Map(&'static Kind),
    /// `meta.v1.Time` `{seconds = 1, nanos = 2}`: RFC 3339 to the second (nanos are never
    /// written by the server: `time_proto.go`); an empty message is the zero time, JSON `null`.
    Time,
    /// `meta.v1.MicroTime` `{seconds = 1, nanos = 2}`: RFC 3339 with six fraction digits.
    MicroTime,
    /// `resource.Quantity` `{string = 1}`: JSON string (`"500m"`, `"4Gi"`).
    Quantity,
    /// `intstr.IntOrString` `{type = 1, intVal = 2, strVal = 3}`: JSON number or string.
    IntOrString,
    /// `meta.v1.FieldsV1` `{Raw = 1}`: bytes that are JSON text, inserted as they are.
    RawJson,
}

impl Field {
    const fn new(number: u32, name: &'static str, kind: Kind) -> Field {
        Field {
            number,
            name,
            kind,
            repeated: false,
            presence: Presence::OmitEmpty,
        }
    }

    /// A `string` with `omitempty`.
    pub const fn string(number: u32, name: &'static str) -> Field {
        Field::new(number, name, Kind::String)
    }

    /// An `int32` with `omitempty`.
    pub const fn int32(number: u32, name: &'static str) -> Field {
        Field::new(number, name, Kind::Int32)
    }

    /// An `int64` with `omitempty`.
    pub const fn int64(number: u32, name: &'static str) -> Field {
        Field::new(number, name, Kind::Int64)
    }

    /// A `bool` with `omitempty`.
    pub const fn bool(number: u32, name: &'static str) -> Field {
        Field::new(number, name, Kind::Bool)
    }

    /// A nested message held by value (always in JSON).
    pub const fn message(number: u32, name: &'static str, message: &'static Message) -> Field {
        Field::new(number, name, Kind::Message(message)).always()
    }

    /// An embedded struct whose members are inlined in the parent's JSON.
    pub const fn inline(number: u32, name: &'static str, message: &'static Message) -> Field {
        Field::new(number, name, Kind::Inline(message)).always()
    }

    /// A `map<string, V>` with `omitempty`.
    pub const fn map(number: u32, name: &'static str, value: &'static Kind) -> Field {
        Field::new(number, name, Kind::Map(value)).repeated()
    }

    /// A field of any other kind, `omitempty`.
    pub const fn of(number: u32, name: &'static str, kind: Kind) -> Field {
        Field::new(number, name, kind)
    }

    /// This field repeated (a Go slice: absent when empty).
    pub const fn repeated(mut self) -> Field {
        self.repeated = true;
        self
    }

    /// This field a Go pointer.
    pub const fn pointer(mut self) -> Field {
        self.presence = Presence::Pointer;
        self
    }

    /// This field without `omitempty`.
    pub const fn always(mut self) -> Field {
        self.presence = Presence::Always;
        self
    }
}

/// Tables that list every field their message has in Kubernetes v1.28 (the test
/// `complete_tables_have_every_field_of_v1_28` holds each to `generated.proto`). Others — a pod
/// template, a container, a volume — list what kube-gc reads and skip the rest. Complete means
/// complete for v1.28: later servers add fields to some (`ContainerStatus` gains `volumeMounts`
/// in v1.30), which a transcoded subtree then lacks — so no reader may rely on a field newer
/// than v1.28 inside these, and a table is re-checked here before one does.
static COMPLETE_TABLES: &[&Message] = &[
    &meta::OBJECT_META,
    &meta::OWNER_REFERENCE,
    &meta::MANAGED_FIELDS_ENTRY,
    &meta::LABEL_SELECTOR,
    &meta::LABEL_SELECTOR_REQUIREMENT,
    &meta::PARTIAL_OBJECT_METADATA,
    &batch::JOB_STATUS,
    &batch::JOB_CONDITION,
    &batch::UNCOUNTED_TERMINATED_PODS,
    &core::POD_CONDITION,
    &core::CONTAINER_STATUS,
    &core::CONTAINER_STATE,
    &core::STATE_WAITING,
    &core::STATE_RUNNING,
    &core::STATE_TERMINATED,
    &container::RESOURCE_REQUIREMENTS,
    &container::RESOURCE_CLAIM,
    &event::EVENT,
    &event::OBJECT_REFERENCE,
    &event::EVENT_SOURCE,
    &event::EVENT_SERIES,
    &meta::DELETE_OPTIONS,
    &meta::PRECONDITIONS,
];

/// Whether a value decoded with `message`'s table holds all the server sent: its table and
/// every table below it are complete. Only then may a reader that wants the subtree whole be
/// given a transcoded protobuf object; a partial table would silently drop members.
pub fn is_complete(message: &'static Message) -> bool {
    COMPLETE_TABLES
        .iter()
        .any(|known| std::ptr::eq(*known, message))
        && message
            .fields
            .iter()
            .all(|field| kind_is_complete(&field.kind))
}

fn kind_is_complete(kind: &'static Kind) -> bool {
    match kind {
        Kind::Message(inner) | Kind::Inline(inner) => is_complete(inner),
        Kind::Map(value) => kind_is_complete(value),
        _ => true,
    }
}

/// The table for an envelope's type, if kube-gc has one.
pub fn for_kind(api_version: &str, kind: &str) -> Option<&'static Message> {
    Some(match (api_version, kind) {
        ("batch/v1", "Job") => &JOB,
        ("batch/v1", "JobList") => &JOB_LIST,
        ("v1", "Pod") => &POD,
        ("v1", "PodList") => &POD_LIST,
        ("v1", "Namespace") => &NAMESPACE,
        ("v1", "NamespaceList") => &NAMESPACE_LIST,
        ("v1", "ConfigMap") => &CONFIG_MAP,
        ("v1", "ConfigMapList") => &CONFIG_MAP_LIST,
        ("v1", "Event") => &EVENT,
        ("v1", "EventList") => &EVENT_LIST,
        // Registered in every group version, as Status is: client-go names the resource's
        // (exchange 242, `batch/v1`; 269, a custom resource's), others `v1` or `meta.k8s.io/v1`.
        (_, "DeleteOptions") => &DELETE_OPTIONS,
        // meta.v1.Status is registered in every group version; the server names it `v1`.
        (_, "Status") => &STATUS,
        ("meta.k8s.io/v1", "PartialObjectMetadata") => &PARTIAL_OBJECT_METADATA,
        ("meta.k8s.io/v1", "PartialObjectMetadataList") => &PARTIAL_OBJECT_METADATA_LIST,
        _ => return None,
    })
}

/// The kind of a list's items: `JobList` → `Job`. Every list kind is its item kind + `List`
/// (an API convention the apiserver relies on too).
pub fn list_item_kind(list_kind: &str) -> Option<&str> {
    list_kind.strip_suffix("List").filter(|k| !k.is_empty())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every table: field numbers unique and in protobuf's range, JSON names unique, maps
    /// repeated, nothing inlined that is repeated.
    fn check(message: &'static Message, seen: &mut Vec<&'static str>) {
        if seen.contains(&message.name) {
            return;
        }
        seen.push(message.name);
        for (i, field) in message.fields.iter().enumerate() {
            let m = message.name;
            assert!(
                field.number >= 1 && field.number < 1 << 29,
                "{m}.{}",
                field.name
            );
            for other in &message.fields[i + 1..] {
                assert_ne!(field.number, other.number, "{m}: number {}", field.number);
                assert_ne!(field.name, other.name, "{m}: name {}", field.name);
            }
            match field.kind {
                Kind::Map(_) => assert!(field.repeated, "{m}.{}", field.name),
                Kind::Inline(inner) => {
                    assert!(!field.repeated, "{m}.{}", field.name);
                    check(inner, seen);
                }
                Kind::Message(inner) => check(inner, seen),
                _ => {}
            }
        }
    }

    /// Every table is reachable from these.
    const ROOTS: [&Message; 8] = [
        &EVENT_LIST,
        &DELETE_OPTIONS,
        &JOB_LIST,
        &POD_LIST,
        &NAMESPACE_LIST,
        &CONFIG_MAP_LIST,
        &PARTIAL_OBJECT_METADATA_LIST,
        &STATUS,
    ];

    #[test]
    fn the_tables_are_consistent() {
        let mut seen = Vec::new();
        for message in ROOTS {
            check(message, &mut seen);
        }
        assert!(seen.len() > 40, "{seen:?}");
    }

    /// `generated.proto`'s field numbers and names at v1.28.7, per message.
    fn upstream_fields() -> serde_json::Map<String, serde_json::Value> {
        let text = include_str!("../../../fixtures/protobuf/k8s-v1.28.7-fields.json");
        let doc: serde_json::Value = serde_json::from_str(text).expect("the fixture is JSON");
        doc["messages"].as_object().expect("messages").clone()
    }

    fn every_table() -> Vec<&'static Message> {
        let mut seen = Vec::new();
        let mut tables: Vec<&'static Message> = Vec::new();
        fn walk(
            m: &'static Message,
            seen: &mut Vec<&'static str>,
            out: &mut Vec<&'static Message>,
        ) {
            if seen.contains(&m.name) {
                return;
            }
            seen.push(m.name);
            out.push(m);
            for field in m.fields {
                match field.kind {
                    Kind::Message(inner) | Kind::Inline(inner) => walk(inner, seen, out),
                    _ => {}
                }
            }
        }
        for m in ROOTS {
            walk(m, &mut seen, &mut tables);
        }
        tables
    }

    #[test]
    fn every_field_has_its_v1_28_number() {
        let upstream = upstream_fields();
        for table in every_table()
            .into_iter()
            .filter(|t| !t.name.ends_with("List"))
        {
            let fields = upstream[table.name].as_object().expect(table.name);
            for field in table.fields {
                assert_eq!(
                    fields
                        .get(&field.number.to_string())
                        .and_then(|v| v.as_str()),
                    Some(field.name),
                    "{}: field {}",
                    table.name,
                    field.number
                );
            }
        }
    }

    #[test]
    fn complete_tables_have_every_field_of_v1_28() {
        let upstream = upstream_fields();
        for table in COMPLETE_TABLES {
            let mut ours: Vec<String> = table.fields.iter().map(|f| f.number.to_string()).collect();
            let mut theirs: Vec<String> = upstream[table.name]
                .as_object()
                .expect(table.name)
                .keys()
                .cloned()
                .collect();
            ours.sort();
            theirs.sort();
            assert_eq!(ours, theirs, "{} is said to be complete", table.name);
        }
        assert!(is_complete(&core::CONTAINER_STATUS));
        assert!(!is_complete(&CONTAINER), "a container's table is partial");
        assert!(!is_complete(&JOB), "its spec holds a pod template");
    }

    #[test]
    fn kinds_and_list_items_are_found() {
        assert_eq!(
            for_kind("batch/v1", "Job").map(|m| m.name),
            Some("batch.v1.Job")
        );
        assert_eq!(
            for_kind("v1", "Status").map(|m| m.name),
            Some("meta.v1.Status")
        );
        assert!(for_kind("batch.volcano.sh/v1alpha1", "Job").is_none());
        assert_eq!(
            list_item_kind("PartialObjectMetadataList"),
            Some("PartialObjectMetadata")
        );
        assert_eq!(list_item_kind("List"), None);
        assert_eq!(list_item_kind("Job"), None);
        assert_eq!(OBJECT_META.field_named("uid").map(|f| f.number), Some(5));
        assert_eq!(OBJECT_META.position(13), Some(12));
    }
}
