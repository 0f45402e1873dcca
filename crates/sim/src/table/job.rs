//! A Job's cells (exchange 275): `Completions`, `Duration`, and `-o wide`'s `Containers`,
//! `Images`, `Selector`, as kube-apiserver v1.28's Job printer writes them.
//!
//! Contract (pure functions of the Job's JSON):
//! - [`completions`]: `succeeded/completions`; without `spec.completions`, `succeeded/1`, or
//!   `succeeded/1 of parallelism` when more than one Pod runs at once.
//! - [`duration`]: empty before `status.startTime`; from the start to `status.completionTime`
//!   once complete, else to now (a failed Job has no completion time: it keeps ageing).
//! - [`containers`] and [`images`]: the Pod template's, comma-separated in order.
//! - [`selector`]: the label selector in its text form, `<none>` when there is none.

use chrono::{DateTime, Utc};
use serde_json::Value;

use super::{human_duration, timestamp};

/// The `Completions` cell.
pub fn completions(job: &Value) -> String {
    let succeeded = job["status"]["succeeded"].as_i64().unwrap_or(0);
    if let Some(wanted) = job["spec"]["completions"].as_i64() {
        return format!("{succeeded}/{wanted}");
    }
    match job["spec"]["parallelism"].as_i64().unwrap_or(0) {
        parallel if parallel > 1 => format!("{succeeded}/1 of {parallel}"),
        _ => format!("{succeeded}/1"),
    }
}

/// The `Duration` cell at `now`.
pub fn duration(job: &Value, now: DateTime<Utc>) -> String {
    let Some(started) = timestamp(&job["status"]["startTime"]) else {
        return String::new();
    };
    let until = timestamp(&job["status"]["completionTime"]).unwrap_or(now);
    human_duration(until - started)
}

/// The Pod template's containers' `field` (`name`, `image`), comma-separated.
fn template_containers(job: &Value, field: &str) -> String {
    job["spec"]["template"]["spec"]["containers"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|c| c[field].as_str().unwrap_or_default())
        .collect::<Vec<_>>()
        .join(",")
}

/// The `Containers` cell.
pub fn containers(job: &Value) -> String {
    template_containers(job, "name")
}

/// The `Images` cell.
pub fn images(job: &Value) -> String {
    template_containers(job, "image")
}

/// The `Selector` cell: `spec.selector` as a label selector's text (`k=v` for each of
/// `matchLabels`, `k in (a,b)`, `k notin (a,b)`, `k`, `!k` for `matchExpressions`, sorted by
/// key), `<none>` for no selector or an empty one.
pub fn selector(job: &Value) -> String {
    let selector = &job["spec"]["selector"];
    let mut requirements: Vec<(String, String)> = Vec::new();
    for (key, value) in selector["matchLabels"].as_object().into_iter().flatten() {
        let value = value.as_str().unwrap_or_default();
        requirements.push((key.clone(), format!("{key}={value}")));
    }
    for expression in selector["matchExpressions"]
        .as_array()
        .into_iter()
        .flatten()
    {
        let key = expression["key"].as_str().unwrap_or_default();
        let mut values: Vec<&str> = expression["values"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(Value::as_str)
            .collect();
        values.sort_unstable();
        let text = match expression["operator"].as_str().unwrap_or_default() {
            "In" => format!("{key} in ({})", values.join(",")),
            "NotIn" => format!("{key} notin ({})", values.join(",")),
            "Exists" => key.to_owned(),
            "DoesNotExist" => format!("!{key}"),
            _ => return "<error>".to_owned(),
        };
        requirements.push((key.to_owned(), text));
    }
    if requirements.is_empty() {
        return "<none>".to_owned();
    }
    // Sorted by key; the sort is stable, so one key's requirements keep their order.
    requirements.sort_by(|a, b| a.0.cmp(&b.0));
    requirements
        .into_iter()
        .map(|(_, text)| text)
        .collect::<Vec<_>>()
        .join(",")
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::Duration;
    use serde_json::json;

    fn at(text: &str) -> DateTime<Utc> {
        DateTime::parse_from_rfc3339(text)
            .map(|t| t.with_timezone(&Utc))
            .unwrap()
    }

    #[test]
    fn completions_read_as_the_real_server_writes_them() {
        // The five Jobs of exchange 275.
        let complete = json!({"spec": {"completions": 1}, "status": {"succeeded": 1}});
        let running = json!({"spec": {"completions": 3, "parallelism": 2},
            "status": {"succeeded": 1, "active": 2}});
        let failed = json!({"spec": {"completions": 1}, "status": {"failed": 1}});
        let parallel = json!({"spec": {"parallelism": 3}, "status": {"active": 3}});
        let not_started = json!({"spec": {"completions": 2, "suspend": true}});
        let single = json!({"spec": {"parallelism": 1}, "status": {"succeeded": 1}});
        let cells: Vec<String> = [complete, running, failed, parallel, not_started, single]
            .iter()
            .map(completions)
            .collect();
        assert_eq!(cells, ["1/1", "1/3", "0/1", "0/1 of 3", "0/2", "1/1"]);
    }

    #[test]
    fn duration_runs_to_completion_or_to_now() {
        let now = at("2026-11-29T05:27:46Z");
        let start = now - Duration::seconds(600);
        let complete = json!({"status": {"startTime": start.to_rfc3339(),
            "completionTime": (start + Duration::seconds(65)).to_rfc3339()}});
        assert_eq!(duration(&complete, now), "65s");
        let running = json!({"status": {"startTime": (now - Duration::seconds(188)).to_rfc3339()}});
        assert_eq!(duration(&running, now), "3m8s");
        // A failed Job has no completion time: it ages on (exchange 275's `61m`).
        let failed = json!({"status": {"startTime": (now - Duration::seconds(3702)).to_rfc3339(),
            "failed": 1}});
        assert_eq!(duration(&failed, now), "61m");
        assert_eq!(duration(&json!({"spec": {}}), now), "");
    }

    #[test]
    fn the_template_and_selector_cells() {
        let job = json!({"spec": {
            "selector": {"matchLabels": {"batch.kubernetes.io/controller-uid": "7181"}},
            "template": {"spec": {"containers": [
                {"name": "main", "image": "busybox:1.36"},
                {"name": "side", "image": "pause:3.9"}]}}}});
        assert_eq!(containers(&job), "main,side");
        assert_eq!(images(&job), "busybox:1.36,pause:3.9");
        assert_eq!(selector(&job), "batch.kubernetes.io/controller-uid=7181");
        assert_eq!(selector(&json!({"spec": {}})), "<none>");
        assert_eq!(selector(&json!({"spec": {"selector": {}}})), "<none>");
        let expressions = json!({"spec": {"selector": {
            "matchLabels": {"b": "2"},
            "matchExpressions": [
                {"key": "c", "operator": "NotIn", "values": ["z", "y"]},
                {"key": "a", "operator": "Exists"},
                {"key": "d", "operator": "DoesNotExist"},
                {"key": "e", "operator": "In", "values": ["x"]}]}}});
        assert_eq!(selector(&expressions), "a,b=2,c notin (y,z),!d,e in (x)");
    }
}
