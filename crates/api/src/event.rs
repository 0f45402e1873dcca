//! core/v1 [`Event`] and the [`ObjectReference`] that names the object it is about.
//!
//! Contract: every field but `involvedObject` is optional and omitted when `None`. Old-style
//! events (what client-go's recorder writes, and what the real kcm GC emits) use `source`,
//! `firstTimestamp`, `lastTimestamp` and `count`; `eventTime` (a [`MicroTime`]) is `null` on them.
//! `series` and `related` are not kept.

use serde::{Deserialize, Serialize};

use super::meta::{ObjectMeta, TypeMeta};
use super::resource::{HasMetadata, Resource};
use super::time::{MicroTime, Time};

/// An Event.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Event {
    /// `v1` + `Event`.
    #[serde(flatten)]
    pub types: TypeMeta,
    /// Standard metadata; events are usually created with `generateName`.
    #[serde(default)]
    pub metadata: ObjectMeta,
    /// The object this event is about.
    #[serde(default)]
    pub involved_object: ObjectReference,
    /// Short machine-readable reason, e.g. `OwnerRefInvalidNamespace`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// Human-readable description.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
    /// The component that reported it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source: Option<EventSource>,
    /// When this event was first seen.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub first_timestamp: Option<Time>,
    /// When it was most recently seen.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_timestamp: Option<Time>,
    /// How many times it was seen.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub count: Option<i32>,
    /// [`Event::NORMAL`] or [`Event::WARNING`].
    #[serde(rename = "type", default, skip_serializing_if = "Option::is_none")]
    pub type_: Option<String>,
    /// When it first happened, for new-style events.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub event_time: Option<MicroTime>,
    /// What action was taken or failed, for new-style events.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub action: Option<String>,
    /// The controller that emitted it, e.g. `kube-gc`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reporting_component: Option<String>,
    /// The instance of that controller, e.g. its host name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reporting_instance: Option<String>,
}

impl Event {
    /// The `type` of an informational event.
    pub const NORMAL: &'static str = "Normal";
    /// The `type` of an event that reports a problem.
    pub const WARNING: &'static str = "Warning";
}

/// `EventSource`: who reported an old-style event.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct EventSource {
    /// The reporting component, e.g. `kube-gc`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub component: Option<String>,
    /// The node it ran on.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub host: Option<String>,
}

/// core/v1 `ObjectReference`: a pointer to any object, used by events.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ObjectReference {
    /// The object's `apiVersion`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub api_version: Option<String>,
    /// The object's kind.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kind: Option<String>,
    /// The object's namespace (none for cluster-scoped objects).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub namespace: Option<String>,
    /// The object's name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// The object's UID.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub uid: Option<String>,
    /// The object's resourceVersion when the reference was made.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resource_version: Option<String>,
    /// A part of the object, e.g. `spec.containers{main}`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub field_path: Option<String>,
}

impl HasMetadata for Event {
    fn metadata(&self) -> &ObjectMeta {
        &self.metadata
    }
    fn metadata_mut(&mut self) -> &mut ObjectMeta {
        &mut self.metadata
    }
}

impl Resource for Event {
    const GROUP: &'static str = "";
    const VERSION: &'static str = "v1";
    const API_VERSION: &'static str = "v1";
    const KIND: &'static str = "Event";
    const PLURAL: &'static str = "events";
    const NAMESPACED: bool = true;
}
