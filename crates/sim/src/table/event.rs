//! An Event's cells (exchange 277): `Last Seen`, `Type`, `Reason`, `Object`, and `-o wide`'s
//! `Subobject`, `Source`, `Message`, `First Seen`, `Count`, `Name`, as kube-apiserver v1.28's
//! Event printer writes them — for `v1` Events and for `events.k8s.io/v1` ones, which the
//! real server prints through the same printer after reading their fields under their `v1`
//! names ([`as_core`]).
//!
//! Contract ([`cells`], a pure function of the Event's JSON and the time):
//! - **First Seen** the age of `firstTimestamp`, else of `eventTime`; **Last Seen** the age of
//!   `lastTimestamp`, else First Seen; with a `series`, the age of its `lastObservedTime`.
//!   A time missing altogether reads `<unknown>`.
//! - **Count** (a number) the series' count, else `count`, else 1 (a singleton of the new API).
//! - **Object** `kind/name` lower-cased — the kind alone when the Event names no object.
//! - **Source** `component, host`, each falling back to `reportingController` and
//!   `reportingInstance`; the component alone without a host.
//! - **Message** trimmed of surrounding white space.

use chrono::{DateTime, Utc};
use serde_json::{Map, Value};

use super::{human_duration, timestamp};

/// The Event's ten cells in the wide order.
pub fn cells(event: &Value, now: DateTime<Utc>) -> Vec<Value> {
    let core;
    let event = if event["apiVersion"] == "events.k8s.io/v1" {
        core = as_core(event);
        &core
    } else {
        event
    };
    let since = |at: Option<DateTime<Utc>>| match at {
        Some(at) => human_duration(now - at),
        None => "<unknown>".to_owned(),
    };
    let first_seen =
        since(timestamp(&event["firstTimestamp"]).or_else(|| timestamp(&event["eventTime"])));
    let mut last_seen = match timestamp(&event["lastTimestamp"]) {
        Some(at) => since(Some(at)),
        None => first_seen.clone(),
    };
    let mut count = event["count"].as_i64().unwrap_or(0);
    if event["series"].is_object() {
        last_seen = since(timestamp(&event["series"]["lastObservedTime"]));
        count = event["series"]["count"].as_i64().unwrap_or(0);
    } else if count == 0 {
        count = 1;
    }
    let involved = &event["involvedObject"];
    let kind = involved["kind"].as_str().unwrap_or_default().to_lowercase();
    let object = match involved["name"].as_str().filter(|n| !n.is_empty()) {
        Some(name) => format!("{kind}/{name}"),
        None => kind,
    };
    let text = |value: &Value| Value::from(value.as_str().unwrap_or_default());
    vec![
        Value::from(last_seen),
        text(&event["type"]),
        text(&event["reason"]),
        Value::from(object),
        text(&involved["fieldPath"]),
        Value::from(source(event)),
        Value::from(event["message"].as_str().unwrap_or_default().trim()),
        Value::from(first_seen),
        Value::from(count),
        text(&event["metadata"]["name"]),
    ]
}

/// `component, host`, falling back to the reporting controller and instance.
fn source(event: &Value) -> String {
    let first = |a: &Value, b: &Value| {
        [a, b]
            .into_iter()
            .filter_map(Value::as_str)
            .find(|s| !s.is_empty())
            .unwrap_or_default()
            .to_owned()
    };
    let component = first(&event["source"]["component"], &event["reportingComponent"]);
    let host = first(&event["source"]["host"], &event["reportingInstance"]);
    if host.is_empty() {
        component
    } else {
        format!("{component}, {host}")
    }
}

/// An `events.k8s.io/v1` Event's fields under their `v1` names: `regarding` is the involved
/// object, `note` the message, `deprecatedSource`, `deprecatedFirstTimestamp`,
/// `deprecatedLastTimestamp` and `deprecatedCount` the old fields, `reportingController` the
/// reporting component.
pub fn as_core(event: &Value) -> Value {
    let mut core = Map::new();
    for (from, to) in [
        ("metadata", "metadata"),
        ("regarding", "involvedObject"),
        ("note", "message"),
        ("type", "type"),
        ("reason", "reason"),
        ("eventTime", "eventTime"),
        ("series", "series"),
        ("deprecatedSource", "source"),
        ("deprecatedFirstTimestamp", "firstTimestamp"),
        ("deprecatedLastTimestamp", "lastTimestamp"),
        ("deprecatedCount", "count"),
        ("reportingController", "reportingComponent"),
        ("reportingInstance", "reportingInstance"),
    ] {
        if let Some(value) = event.get(from) {
            core.insert(to.to_owned(), value.clone());
        }
    }
    Value::Object(core)
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::Duration;
    use serde_json::json;

    fn now() -> DateTime<Utc> {
        DateTime::parse_from_rfc3339("2026-11-29T05:27:46Z")
            .unwrap()
            .with_timezone(&Utc)
    }

    fn ago(seconds: i64) -> String {
        (now() - Duration::seconds(seconds)).to_rfc3339()
    }

    #[test]
    fn a_kubelet_event_repeated() {
        let event = json!({"metadata": {"name": "pod-crashloop.backoff"},
            "involvedObject": {"kind": "Pod", "name": "pod-crashloop",
                "fieldPath": "spec.containers{main}"},
            "type": "Warning", "reason": "BackOff", "message": "Back-off restarting",
            "source": {"component": "kubelet", "host": "node-a"}, "count": 77,
            "firstTimestamp": ago(6960), "lastTimestamp": ago(43)});
        assert_eq!(
            cells(&event, now()),
            [
                json!("43s"),
                json!("Warning"),
                json!("BackOff"),
                json!("pod/pod-crashloop"),
                json!("spec.containers{main}"),
                json!("kubelet, node-a"),
                json!("Back-off restarting"),
                json!("116m"),
                json!(77),
                json!("pod-crashloop.backoff")
            ]
        );
    }

    #[test]
    fn no_object_name_no_host_no_count_and_spaces_trimmed() {
        let event = json!({"metadata": {"name": "namespace-wide.note"},
            "involvedObject": {"kind": "Namespace", "namespace": "kubectl-capture"},
            "type": "Normal", "reason": "Noted", "message": "  spaces around  ",
            "source": {"component": "kubectl-capture"},
            "firstTimestamp": ago(63), "lastTimestamp": ago(63)});
        let shown = cells(&event, now());
        assert_eq!(shown[3], "namespace");
        assert_eq!(shown[5], "kubectl-capture");
        assert_eq!(shown[6], "spaces around");
        assert_eq!(shown[8], 1);
        let timeless = json!({"involvedObject": {"kind": "Pod", "name": "p"}});
        assert_eq!(cells(&timeless, now())[0], "<unknown>");
    }

    #[test]
    fn a_series_gives_last_seen_and_count_in_either_api() {
        let new_api = json!({"apiVersion": "events.k8s.io/v1",
            "metadata": {"name": "job-running.series"},
            "eventTime": ago(403), "series": {"count": 6, "lastObservedTime": ago(23)},
            "reportingController": "example.com/job-watcher",
            "reportingInstance": "job-watcher-0",
            "reason": "StillRunning", "type": "Normal", "note": "still running",
            "regarding": {"kind": "Job", "name": "job-running"}});
        assert_eq!(
            cells(&new_api, now()),
            [
                json!("23s"),
                json!("Normal"),
                json!("StillRunning"),
                json!("job/job-running"),
                json!(""),
                json!("example.com/job-watcher, job-watcher-0"),
                json!("still running"),
                json!("6m43s"),
                json!(6),
                json!("job-running.series")
            ]
        );
        // The same Event read as v1 (exchange 277 lists it so).
        let mut core = as_core(&new_api);
        core["apiVersion"] = json!("v1");
        assert_eq!(cells(&core, now()), cells(&new_api, now()));
    }
}
