//! `Table` answers (`Accept: application/json;as=Table;v=v1;g=meta.k8s.io`), what `kubectl get`
//! asks first, for the resources whose printer columns this server knows: kube-gc's own
//! retention policies, whose columns are read from the CRDs in `deploy/crds/` — the ones a
//! cluster installs — so `kubectl get crp` against `kube-gc sim` prints what it prints against a
//! real cluster (exchanges 231 and 279 of `fixtures/real-apiserver/`; 207 before the `Mode` and
//! `WouldDelete` columns, 22 of `fixtures/retention/crd-validation/` before `Unknown`);
//! namespaces, whose `Status` column says `Terminating` while one is deleted (exchange 129); and
//! the built-in kinds of [`built_in`] — Jobs, Pods, Events, CustomResourceDefinitions (275–278) —
//! whose cells pure functions compute ([`job`], [`pod`], [`event`]).
//!
//! Contract:
//! - [`printer`] is `Some` only for those resources; every other resource is answered as
//!   before (JSON, which kubectl prints as NAME and AGE).
//! - Columns of a CRD: `Name`, then the CRD's `additionalPrinterColumns` in order; a cell is
//!   the value at the column's JSONPath (`null` where there is none), a `date` cell the age as
//!   apimachinery's `HumanDuration` writes it ("0s", "5m", "3h12m", "2d").
//! - JSONPath: member paths (`.spec.resource.resource`) and one filter
//!   (`.status.conditions[?(@.type=="Ready")].status`) — what the CRDs use; a column whose path
//!   this reader cannot follow gets `null` cells.
//! - Each row carries the object's metadata as `PartialObjectMetadata` (the server's default
//!   `includeObject=Metadata`), `managedFields` included (exchanges 275–279), and a pod's row
//!   its `Completed` condition.
//! - GET and LIST only: a watch asked for `Table` (`kubectl get -w`) is answered with plain
//!   JSON events, which kubectl prints with its default columns.

use chrono::{DateTime, Utc};
use serde::Deserialize;
use serde_json::{json, Value};

use crate::resources::ResourceDef;

pub mod built_in;
pub mod event;
pub mod job;
pub mod pod;

pub use built_in::BuiltIn;

/// How a resource's rows are printed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Printer {
    /// From JSONPath columns after `Name` (a CRD's printer columns, a namespace's).
    Columns(Vec<PrinterColumn>),
    /// By a built-in kind's printer functions.
    BuiltIn(BuiltIn),
}

/// The printer of `def`, if this server serves `Table` for it.
pub fn printer(def: &ResourceDef) -> Option<Printer> {
    match BuiltIn::of(def) {
        Some(kind) => Some(Printer::BuiltIn(kind)),
        None => columns(def).map(Printer::Columns),
    }
}

/// A JSON timestamp (RFC 3339, with or without fractional seconds).
pub fn timestamp(value: &Value) -> Option<DateTime<Utc>> {
    let text = value.as_str()?;
    DateTime::parse_from_rfc3339(text)
        .ok()
        .map(|at| at.with_timezone(&Utc))
}

/// The `Name` column's definition, as the server writes it.
pub(crate) const NAME_DESCRIPTION: &str = "Name must be unique within a namespace. Is required when creating resources, although some resources may allow a client to request the generation of an appropriate name automatically. Name is primarily intended for creation idempotence and configuration definition. Cannot be updated. More info: https://kubernetes.io/docs/concepts/overview/working-with-objects/names#names";

/// One of a CRD's `additionalPrinterColumns`.
#[derive(Clone, Debug, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub struct PrinterColumn {
    /// The header.
    pub name: String,
    /// `string`, `integer`, `date`, …
    #[serde(rename = "type")]
    pub kind: String,
    /// Shown by `kubectl explain`; the server writes a default when the CRD has none.
    #[serde(default)]
    pub description: Option<String>,
    /// Where the cell's value is.
    pub json_path: String,
    /// A built-in `Age` column: typed `string`, its cell the age of the time at `json_path`
    /// (a CRD's `date` column is typed `date`, its cell the same age).
    #[serde(skip)]
    pub age: bool,
}

#[derive(Deserialize)]
struct Crd {
    spec: CrdSpec,
}

#[derive(Deserialize)]
struct CrdSpec {
    versions: Vec<CrdVersion>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct CrdVersion {
    name: String,
    #[serde(default)]
    additional_printer_columns: Vec<PrinterColumn>,
}

/// The printer columns of `def`'s version, if this server serves `Table` for it.
pub fn columns(def: &ResourceDef) -> Option<Vec<PrinterColumn>> {
    if def.group.is_empty() && def.resource == "namespaces" {
        return Some(namespace_columns());
    }
    // The CRDs are part of this repository; one that does not parse fails the tests that read
    // it (`the_policies_columns_are_the_crds`), and the server then answers JSON.
    let crd: Crd = serde_saphyr::from_str(crate::crds::shipped_definition(def)?).ok()?;
    crd.spec
        .versions
        .into_iter()
        .find(|v| v.name == def.version)
        .map(|v| v.additional_printer_columns)
}

/// The built-in columns of a namespace (exchange 129).
fn namespace_columns() -> Vec<PrinterColumn> {
    vec![
        PrinterColumn {
            name: "Status".into(),
            kind: "string".into(),
            description: Some("The status of the namespace".into()),
            json_path: ".status.phase".into(),
            age: false,
        },
        PrinterColumn {
            name: "Age".into(),
            kind: "string".into(),
            description: Some(CREATION_TIMESTAMP_DESCRIPTION.into()),
            json_path: ".metadata.creationTimestamp".into(),
            age: true,
        },
    ]
}

/// The `Age` column's definition, as the server writes it for built-in kinds.
pub(crate) const CREATION_TIMESTAMP_DESCRIPTION: &str = "CreationTimestamp is a timestamp representing the server time when this object was created. It is not guaranteed to be set in happens-before order across separate operations. Clients may not set this value. It is represented in RFC3339 form and is in UTC.\n\nPopulated by the system. Read-only. Null for lists. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#metadata";

/// Whether the client asks for a `Table` first (what `kubectl get` sends).
pub fn asked_first(accept: Option<&str>) -> bool {
    let Some(first) = accept.and_then(|a| a.split(',').next()) else {
        return false;
    };
    let mut parts = first.split(';').map(str::trim);
    let media = parts.next().unwrap_or("");
    let params: Vec<&str> = parts.collect();
    media.eq_ignore_ascii_case("application/json")
        && ["as=Table", "v=v1", "g=meta.k8s.io"]
            .iter()
            .all(|p| params.contains(p))
}

/// The `Table` of `objects` printed by `printer` at `now`, with `metadata` the list's (its
/// `resourceVersion`, and `continue` and `remainingItemCount` of a page, so that a paging
/// `kubectl get` sees the rest: exchange 129 of `fixtures/real-apiserver/`) or the object's
/// `resourceVersion`.
pub fn table(printer: &Printer, objects: &[Value], metadata: Value, now: DateTime<Utc>) -> Value {
    let (definitions, rows): (Vec<Value>, Vec<Value>) = match printer {
        Printer::Columns(columns) => (
            column_definitions(columns),
            objects
                .iter()
                .map(|o| row(path_cells(columns, o, now), None, o))
                .collect(),
        ),
        Printer::BuiltIn(kind) => (
            kind.columns(),
            objects
                .iter()
                .map(|o| {
                    let (cells, conditions) = kind.row(o, now);
                    row(cells, conditions, o)
                })
                .collect(),
        ),
    };
    json!({"kind": "Table", "apiVersion": "meta.k8s.io/v1", "metadata": metadata,
        "columnDefinitions": definitions, "rows": rows})
}

fn column_definitions(columns: &[PrinterColumn]) -> Vec<Value> {
    let mut definitions = vec![json!({"name": "Name", "type": "string", "format": "name",
        "description": NAME_DESCRIPTION, "priority": 0})];
    for column in columns {
        let description = column.description.clone().unwrap_or_else(|| {
            format!(
                "Custom resource definition column (in JSONPath format): {}",
                column.json_path
            )
        });
        definitions.push(
            json!({"name": column.name, "type": column.kind, "format": "",
            "description": description, "priority": 0}),
        );
    }
    definitions
}

fn path_cells(columns: &[PrinterColumn], object: &Value, now: DateTime<Utc>) -> Vec<Value> {
    let mut cells = vec![object["metadata"]["name"].clone()];
    for column in columns {
        let value = at_path(object, &column.json_path)
            .cloned()
            .unwrap_or(Value::Null);
        let kind = if column.age {
            "date"
        } else {
            column.kind.as_str()
        };
        cells.push(match (kind, &value) {
            ("date", Value::String(_)) => match timestamp(&value) {
                Some(at) => Value::from(human_duration(now - at)),
                None => Value::Null,
            },
            // The server prints a string column's value as text whatever its JSON type.
            ("string", Value::Number(_) | Value::Bool(_)) => Value::from(value.to_string()),
            _ => value,
        });
    }
    cells
}

/// A row: its cells, its conditions if any, and the object's metadata.
fn row(cells: Vec<Value>, conditions: Option<Value>, object: &Value) -> Value {
    let mut row = json!({"cells": cells, "object": {"kind": "PartialObjectMetadata",
        "apiVersion": "meta.k8s.io/v1", "metadata": object["metadata"]}});
    if let Some(conditions) = conditions {
        row["conditions"] = conditions;
    }
    row
}

/// The value at a CRD column's JSONPath: `.a.b` members, and `[?(@.key=="value")]` picking the
/// first element of an array whose `key` is `value`.
fn at_path<'v>(object: &'v Value, path: &str) -> Option<&'v Value> {
    let mut value = object;
    let mut rest = path.strip_prefix('.')?;
    while !rest.is_empty() {
        let end = rest.find(['.', '[']).unwrap_or(rest.len());
        let (member, after) = rest.split_at(end);
        if !member.is_empty() {
            value = value.get(member)?;
        }
        rest = after;
        if let Some(filter) = rest.strip_prefix("[?(@.") {
            let close = filter.find(")]")?;
            let (key, wanted) = filter[..close].split_once("==")?;
            let wanted = wanted.trim_matches('"');
            value = value
                .as_array()?
                .iter()
                .find(|item| item.get(key).and_then(Value::as_str) == Some(wanted))?;
            rest = &filter[close + 2..];
        }
        rest = rest.strip_prefix('.').unwrap_or(rest);
    }
    Some(value)
}

/// apimachinery's `duration.HumanDuration`: the age `kubectl get` shows.
pub fn human_duration(age: chrono::Duration) -> String {
    let seconds = age.num_seconds();
    if seconds < -1 {
        return "<invalid>".to_owned();
    }
    if seconds < 0 {
        return "0s".to_owned();
    }
    if seconds < 120 {
        return format!("{seconds}s");
    }
    let minutes = seconds / 60;
    if minutes < 10 {
        return match seconds % 60 {
            0 => format!("{minutes}m"),
            s => format!("{minutes}m{s}s"),
        };
    }
    if minutes < 180 {
        return format!("{minutes}m");
    }
    let hours = minutes / 60;
    if hours < 8 {
        return match minutes % 60 {
            0 => format!("{hours}h"),
            m => format!("{hours}h{m}m"),
        };
    }
    if hours < 48 {
        return format!("{hours}h");
    }
    let days = hours / 24;
    if hours < 24 * 8 {
        return match hours % 24 {
            0 => format!("{days}d"),
            h => format!("{days}d{h}h"),
        };
    }
    if hours < 24 * 365 * 2 {
        return format!("{days}d");
    }
    let years = days / 365;
    if hours < 24 * 365 * 8 {
        return match days % 365 {
            0 => format!("{years}y"),
            d => format!("{years}y{d}d"),
        };
    }
    format!("{years}y")
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::Duration;

    #[test]
    fn a_namespace_table_has_the_real_servers_columns_and_cells() {
        let real = kube_gc_fixtures::exchange("129-")["response"]["body"].clone();
        let namespaces = ResourceDef::new("", "v1", "namespaces", "Namespace").cluster_scoped();
        let columns = columns(&namespaces).unwrap();
        let object = real["rows"][0]["object"].clone();
        let created = DateTime::parse_from_rfc3339("2026-11-26T17:38:37Z")
            .unwrap()
            .with_timezone(&Utc);
        let mut namespace = json!({"metadata": object["metadata"], "status": {"phase": "Active"}});
        namespace["metadata"]
            .as_object_mut()
            .unwrap()
            .remove("managedFields");
        let answer = table(
            &Printer::Columns(columns),
            &[namespace],
            real["metadata"].clone(),
            created + Duration::minutes(364),
        );
        assert_eq!(answer["columnDefinitions"], real["columnDefinitions"]);
        assert_eq!(answer["rows"][0]["cells"], real["rows"][0]["cells"]);
    }

    #[test]
    fn ages_read_as_kubectl_prints_them() {
        for (seconds, said) in [
            (-5, "<invalid>"),
            (-1, "0s"),
            (0, "0s"),
            (119, "119s"),
            (125, "2m5s"),
            (600, "10m"),
            (3 * 3600 + 720, "3h12m"),
            (10 * 3600, "10h"),
            (3 * 86_400 + 3600, "3d1h"),
            (30 * 86_400, "30d"),
            (3 * 365 * 86_400 + 86_400, "3y1d"),
            (9 * 365 * 86_400, "9y"),
        ] {
            assert_eq!(
                human_duration(Duration::seconds(seconds)),
                said,
                "{seconds}"
            );
        }
    }

    #[test]
    fn column_paths_follow_members_and_the_condition_filter() {
        let policy = json!({"spec": {"resource": {"resource": "pods"}},
            "status": {"conditions": [{"type": "Other", "status": "False"},
                                      {"type": "Ready", "status": "True"}]}});
        assert_eq!(
            at_path(&policy, ".spec.resource.resource"),
            Some(&json!("pods"))
        );
        assert_eq!(
            at_path(&policy, ".status.conditions[?(@.type==\"Ready\")].status"),
            Some(&json!("True"))
        );
        assert_eq!(at_path(&policy, ".spec.preset"), None);
    }

    #[test]
    fn kubectls_accept_asks_for_a_table_first() {
        let kubectl = "application/json;as=Table;v=v1;g=meta.k8s.io,application/json;as=Table;v=v1beta1;g=meta.k8s.io,application/json";
        assert!(asked_first(Some(kubectl)));
        assert!(!asked_first(Some("application/json")));
        assert!(!asked_first(None));
    }
}
