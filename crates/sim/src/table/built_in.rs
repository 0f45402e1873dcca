//! The `Table` columns of the built-in kinds this server prints as the real one does: Jobs
//! (exchange 275), Pods (276), Events of either API (277) and CustomResourceDefinitions (278).
//!
//! Contract:
//! - [`BuiltIn::of`] names the printer of a resource, `None` for the kinds printed from
//!   JSONPath columns (namespaces, custom resources: `super::PrinterColumn`) or not at all.
//! - [`BuiltIn::columns`] are the real server's columns — names, types, formats, priorities
//!   and order; priority 1 are `-o wide`'s, which the server always sends and kubectl hides.
//!   Descriptions are this project's own words, but `Name`'s and `Age`'s.
//! - [`BuiltIn::row`] is the row's cells in the columns' order, and its conditions.
//! - A CustomResourceDefinition's `Created At` is a `date` column whose cells are the
//!   creation timestamps as written (RFC 3339), not ages.

use chrono::{DateTime, Utc};
use serde_json::{json, Value};

use super::{event, job, pod, CREATION_TIMESTAMP_DESCRIPTION, NAME_DESCRIPTION};
use crate::resources::{is_definitions, ResourceDef};

/// A kind whose cells a printer function computes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BuiltIn {
    /// `batch/v1` Jobs.
    Job,
    /// `v1` Pods.
    Pod,
    /// `v1` and `events.k8s.io/v1` Events.
    Event,
    /// `apiextensions.k8s.io/v1` CustomResourceDefinitions.
    Definition,
}

/// One column: name, type, format, priority, description.
type Column = (&'static str, &'static str, &'static str, u8, &'static str);

const NAME: Column = ("Name", "string", "name", 0, NAME_DESCRIPTION);
const AGE: Column = ("Age", "string", "", 0, CREATION_TIMESTAMP_DESCRIPTION);

impl BuiltIn {
    /// The printer of `def`, if it is one of these kinds.
    pub fn of(def: &ResourceDef) -> Option<BuiltIn> {
        match (
            def.group.as_str(),
            def.version.as_str(),
            def.resource.as_str(),
        ) {
            ("batch", "v1", "jobs") => Some(BuiltIn::Job),
            ("", "v1", "pods") => Some(BuiltIn::Pod),
            ("", "v1", "events") | ("events.k8s.io", "v1", "events") => Some(BuiltIn::Event),
            _ if is_definitions(def) => Some(BuiltIn::Definition),
            _ => None,
        }
    }

    /// The column definitions, as the `Table` carries them.
    pub fn columns(self) -> Vec<Value> {
        let columns: &[Column] = match self {
            BuiltIn::Job => &[
                NAME,
                (
                    "Completions",
                    "string",
                    "",
                    0,
                    "Pods succeeded, of the completions wanted.",
                ),
                (
                    "Duration",
                    "string",
                    "",
                    0,
                    "How long the Job ran, or has been running.",
                ),
                AGE,
                (
                    "Containers",
                    "string",
                    "",
                    1,
                    "The Pod template's containers' names.",
                ),
                (
                    "Images",
                    "string",
                    "",
                    1,
                    "The Pod template's containers' images.",
                ),
                (
                    "Selector",
                    "string",
                    "",
                    1,
                    "The label selector of the Job's Pods.",
                ),
            ],
            BuiltIn::Pod => &[
                NAME,
                (
                    "Ready",
                    "string",
                    "",
                    0,
                    "Containers ready, of all the Pod's containers.",
                ),
                (
                    "Status",
                    "string",
                    "",
                    0,
                    "The Pod's phase, or why it is not running.",
                ),
                (
                    "Restarts",
                    "string",
                    "",
                    0,
                    "Container restarts, and how long ago the last was.",
                ),
                AGE,
                ("IP", "string", "", 1, "The Pod's first IP address."),
                ("Node", "string", "", 1, "The node the Pod is bound to."),
                (
                    "Nominated Node",
                    "string",
                    "",
                    1,
                    "The node the Pod's preemption nominated.",
                ),
                (
                    "Readiness Gates",
                    "string",
                    "",
                    1,
                    "Readiness gates passed, of all of them.",
                ),
            ],
            BuiltIn::Event => &[
                (
                    "Last Seen",
                    "string",
                    "",
                    0,
                    "How long ago the Event last happened.",
                ),
                ("Type", "string", "", 0, "Normal or Warning."),
                (
                    "Reason",
                    "string",
                    "",
                    0,
                    "Why the Event happened, in one word.",
                ),
                ("Object", "string", "", 0, "The object the Event is about."),
                (
                    "Subobject",
                    "string",
                    "",
                    1,
                    "The part of the object the Event is about.",
                ),
                (
                    "Source",
                    "string",
                    "",
                    1,
                    "Who reported the Event, and where.",
                ),
                ("Message", "string", "", 0, "What happened, for people."),
                (
                    "First Seen",
                    "string",
                    "",
                    1,
                    "How long ago the Event first happened.",
                ),
                ("Count", "string", "", 1, "How often the Event happened."),
                ("Name", "string", "name", 1, NAME_DESCRIPTION),
            ],
            BuiltIn::Definition => &[
                NAME,
                ("Created At", "date", "", 0, CREATION_TIMESTAMP_DESCRIPTION),
            ],
        };
        columns
            .iter()
            .map(|(name, kind, format, priority, description)| {
                json!({"name": name, "type": kind, "format": format,
                    "description": description, "priority": priority})
            })
            .collect()
    }

    /// The row's cells and its conditions (`None`: none).
    pub fn row(self, object: &Value, now: DateTime<Utc>) -> (Vec<Value>, Option<Value>) {
        let name = object["metadata"]["name"].clone();
        let created = &object["metadata"]["creationTimestamp"];
        let age = Value::from(match super::timestamp(created) {
            Some(at) => super::human_duration(now - at),
            None => "<unknown>".to_owned(),
        });
        match self {
            BuiltIn::Job => (
                vec![
                    name,
                    Value::from(job::completions(object)),
                    Value::from(job::duration(object, now)),
                    age,
                    Value::from(job::containers(object)),
                    Value::from(job::images(object)),
                    Value::from(job::selector(object)),
                ],
                None,
            ),
            BuiltIn::Pod => {
                let (middle, wide) = pod::cells(object, now);
                let mut cells = vec![name];
                cells.extend(middle);
                cells.push(age);
                cells.extend(wide);
                (cells, pod::row_conditions(object))
            }
            BuiltIn::Event => (event::cells(object, now), None),
            BuiltIn::Definition => (vec![name, created.clone()], None),
        }
    }
}
