//! A Pod's cells (exchange 276): `Ready`, `Status`, `Restarts` and `-o wide`'s `IP`, `Node`,
//! `Nominated Node`, `Readiness Gates`, with the row's `Completed` condition, as
//! kube-apiserver v1.28's Pod printer writes them.
//!
//! Contract ([`cells`], a pure function of the Pod's JSON and the time):
//! - **Ready** `ready/total`: containers ready and running, of the spec's containers plus its
//!   restartable (`restartPolicy: Always`) init containers — sidecars, counted ready once started.
//! - **Status** the phase, or `status.reason`, or `SchedulingGated`; while init containers run,
//!   `Init:<reason>`, `Init:ExitCode:<n>`, `Init:Signal:<n>` or `Init:<done>/<all>`; after
//!   them, the last-listed container's waiting or terminated reason that the list leaves
//!   (`CrashLoopBackOff`, `Completed`, `ExitCode:<n>`), `Completed` turned back to `Running`
//!   (`NotReady` when the Pod is not Ready) while a container still runs; `Terminating` once a
//!   deletion is asked (`Unknown` for a Pod lost with its node).
//! - **Restarts** the containers' restart counts summed, and the time since the latest of
//!   their last terminations as `N (<age> ago)` when there was one.
//! - **IP** the first of `status.podIPs` (the real server fills it from `podIP`, which this one
//!   does not, so `podIP` stands in), `<none>` when empty, as are `Node`, `Nominated Node`;
//!   **Readiness Gates** `true/gates`, `<none>` without gates.
//! - [`row_conditions`]: a `Succeeded` or `Failed` Pod's row carries a `Completed` condition.

use chrono::{DateTime, Utc};
use serde_json::{json, Value};

use super::{human_duration, timestamp};

/// The Pod's cells after its name and before its age (`Ready`, `Status`, `Restarts`), and the
/// wide ones after its age (`IP`, `Node`, `Nominated Node`, `Readiness Gates`).
pub fn cells(pod: &Value, now: DateTime<Utc>) -> ([Value; 3], [Value; 4]) {
    let tally = Tally::of(pod);
    let restarts = match tally.last_restart {
        Some(at) if tally.restarts != 0 => {
            format!("{} ({} ago)", tally.restarts, human_duration(now - at))
        }
        _ => tally.restarts.to_string(),
    };
    let ready = format!("{}/{}", tally.ready, tally.total);
    let wide = [
        Value::from(or_none(pod_ip(pod))),
        Value::from(or_none(
            pod["spec"]["nodeName"].as_str().unwrap_or_default(),
        )),
        Value::from(or_none(
            pod["status"]["nominatedNodeName"]
                .as_str()
                .unwrap_or_default(),
        )),
        Value::from(readiness_gates(pod)),
    ];
    (
        [
            Value::from(ready),
            Value::from(tally.reason),
            Value::from(restarts),
        ],
        wide,
    )
}

/// The row's conditions: `Completed` for a Pod that succeeded or failed.
pub fn row_conditions(pod: &Value) -> Option<Value> {
    let (reason, message) = match pod["status"]["phase"].as_str()? {
        "Succeeded" => ("Succeeded", "The pod has completed successfully."),
        "Failed" => ("Failed", "The pod failed."),
        _ => return None,
    };
    Some(json!([{"type": "Completed", "status": "True", "reason": reason, "message": message}]))
}

/// What the Pod's container statuses add up to.
struct Tally {
    restarts: i64,
    last_restart: Option<DateTime<Utc>>,
    ready: usize,
    total: usize,
    reason: String,
}

impl Tally {
    fn of(pod: &Value) -> Tally {
        let status = &pod["status"];
        let init_specs = list(&pod["spec"]["initContainers"]);
        let restartable = |name: &str| {
            init_specs
                .iter()
                .any(|c| c["name"].as_str() == Some(name) && c["restartPolicy"] == "Always")
        };
        let mut tally = Tally {
            restarts: 0,
            last_restart: None,
            ready: 0,
            total: list(&pod["spec"]["containers"]).len()
                + init_specs
                    .iter()
                    .filter(|c| c["restartPolicy"] == "Always")
                    .count(),
            reason: phase_reason(status),
        };
        // Sidecars' restarts count whether or not the other init containers are done.
        let mut sidecar_restarts = 0;
        let mut sidecar_last = None;
        let mut initializing = false;
        for (index, container) in list(&status["initContainerStatuses"]).iter().enumerate() {
            let name = container["name"].as_str().unwrap_or_default();
            let count = container["restartCount"].as_i64().unwrap_or(0);
            let finished = timestamp(&container["lastState"]["terminated"]["finishedAt"]);
            tally.restarts += count;
            tally.last_restart = latest(tally.last_restart, finished);
            if restartable(name) {
                sidecar_restarts += count;
                sidecar_last = latest(sidecar_last, finished);
            }
            let terminated = &container["state"]["terminated"];
            let waiting_reason = container["state"]["waiting"]["reason"]
                .as_str()
                .unwrap_or_default();
            if terminated.is_object() && terminated["exitCode"].as_i64() == Some(0) {
                continue;
            }
            if restartable(name) && container["started"] == true {
                tally.ready += usize::from(container["ready"] == true);
                continue;
            }
            tally.reason = if terminated.is_object() {
                format!("Init:{}", termination_reason(terminated))
            } else if !waiting_reason.is_empty() && waiting_reason != "PodInitializing" {
                format!("Init:{waiting_reason}")
            } else {
                format!("Init:{index}/{}", init_specs.len())
            };
            initializing = true;
            break;
        }
        if !initializing || condition_true(status, "Initialized") {
            tally.restarts = sidecar_restarts;
            tally.last_restart = sidecar_last;
            tally.add_containers(status);
        }
        if pod["metadata"]["deletionTimestamp"].is_string() {
            tally.reason = if status["reason"] == "NodeLost" {
                "Unknown"
            } else {
                "Terminating"
            }
            .to_owned();
        }
        tally
    }

    /// The app containers, the last listed first: the reason left is the first's that has one.
    fn add_containers(&mut self, status: &Value) {
        let mut running = false;
        for container in list(&status["containerStatuses"]).iter().rev() {
            self.restarts += container["restartCount"].as_i64().unwrap_or(0);
            let finished = timestamp(&container["lastState"]["terminated"]["finishedAt"]);
            self.last_restart = latest(self.last_restart, finished);
            let state = &container["state"];
            let waiting = state["waiting"]["reason"].as_str().unwrap_or_default();
            if !waiting.is_empty() {
                self.reason = waiting.to_owned();
            } else if state["terminated"].is_object() {
                self.reason = termination_reason(&state["terminated"]);
            } else if container["ready"] == true && state["running"].is_object() {
                running = true;
                self.ready += 1;
            }
        }
        if self.reason == "Completed" && running {
            self.reason = if condition_true(status, "Ready") {
                "Running"
            } else {
                "NotReady"
            }
            .to_owned();
        }
    }
}

/// The phase, or the status's reason, or `SchedulingGated` while scheduling gates hold it.
fn phase_reason(status: &Value) -> String {
    let gated = list(&status["conditions"])
        .iter()
        .any(|c| c["type"] == "PodScheduled" && c["reason"] == "SchedulingGated");
    if gated {
        return "SchedulingGated".to_owned();
    }
    match status["reason"].as_str().filter(|r| !r.is_empty()) {
        Some(reason) => reason.to_owned(),
        None => status["phase"].as_str().unwrap_or_default().to_owned(),
    }
}

/// A terminated state's reason, else `Signal:<n>` or `ExitCode:<n>`.
fn termination_reason(terminated: &Value) -> String {
    if let Some(reason) = terminated["reason"].as_str().filter(|r| !r.is_empty()) {
        return reason.to_owned();
    }
    match terminated["signal"].as_i64().filter(|s| *s != 0) {
        Some(signal) => format!("Signal:{signal}"),
        None => format!("ExitCode:{}", terminated["exitCode"].as_i64().unwrap_or(0)),
    }
}

fn pod_ip(pod: &Value) -> &str {
    let first = pod["status"]["podIPs"][0]["ip"].as_str();
    first
        .or_else(|| pod["status"]["podIP"].as_str())
        .unwrap_or_default()
}

fn readiness_gates(pod: &Value) -> String {
    let gates = list(&pod["spec"]["readinessGates"]);
    if gates.is_empty() {
        return "<none>".to_owned();
    }
    let conditions = list(&pod["status"]["conditions"]);
    let passed = gates
        .iter()
        .filter(|gate| {
            conditions
                .iter()
                .find(|c| c["type"] == gate["conditionType"])
                .is_some_and(|c| c["status"] == "True")
        })
        .count();
    format!("{passed}/{}", gates.len())
}

fn condition_true(status: &Value, kind: &str) -> bool {
    list(&status["conditions"])
        .iter()
        .any(|c| c["type"] == kind && c["status"] == "True")
}

fn or_none(text: &str) -> String {
    if text.is_empty() {
        "<none>".to_owned()
    } else {
        text.to_owned()
    }
}

fn latest(a: Option<DateTime<Utc>>, b: Option<DateTime<Utc>>) -> Option<DateTime<Utc>> {
    a.max(b)
}

fn list(value: &Value) -> &[Value] {
    value.as_array().map_or(&[], Vec::as_slice)
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::Duration;

    fn now() -> DateTime<Utc> {
        DateTime::parse_from_rfc3339("2026-11-29T05:27:46Z")
            .unwrap()
            .with_timezone(&Utc)
    }

    fn ago(seconds: i64) -> String {
        (now() - Duration::seconds(seconds)).to_rfc3339()
    }

    fn shown(pod: &Value) -> Vec<Value> {
        let (cells, wide) = cells(pod, now());
        cells.into_iter().chain(wide).collect()
    }

    #[test]
    fn a_running_pod_with_a_restarted_container_and_a_readiness_gate() {
        // exchange 276's pod-running: one of two containers ready, 3 restarts 128 s ago.
        let pod = json!({"spec": {"nodeName": "node-a",
                "containers": [{"name": "main"}, {"name": "sidecar"}],
                "readinessGates": [{"conditionType": "example.com/load-balancer"}]},
            "status": {"phase": "Running", "podIPs": [{"ip": "10.244.0.5"}],
                "nominatedNodeName": "node-b",
                "conditions": [{"type": "Ready", "status": "False"},
                               {"type": "example.com/load-balancer", "status": "True"}],
                "containerStatuses": [
                    {"name": "main", "ready": true, "restartCount": 3,
                     "state": {"running": {}},
                     "lastState": {"terminated": {"exitCode": 137, "finishedAt": ago(128)}}},
                    {"name": "sidecar", "ready": false, "restartCount": 0,
                     "state": {"running": {}}}]}});
        assert_eq!(
            shown(&pod),
            [
                "1/2",
                "Running",
                "3 (2m8s ago)",
                "10.244.0.5",
                "node-a",
                "node-b",
                "1/1"
            ]
        );
        assert_eq!(row_conditions(&pod), None);
    }

    #[test]
    fn waiting_terminated_and_completed_reasons() {
        let crashloop = json!({"spec": {"containers": [{"name": "main"}]},
            "status": {"phase": "Running", "podIP": "10.244.0.6", "containerStatuses": [
                {"restartCount": 17, "state": {"waiting": {"reason": "CrashLoopBackOff"}},
                 "lastState": {"terminated": {"exitCode": 1, "finishedAt": ago(43)}}}]}});
        assert_eq!(
            shown(&crashloop)[..4],
            ["0/1", "CrashLoopBackOff", "17 (43s ago)", "10.244.0.6"]
        );
        let completed = json!({"spec": {"containers": [{"name": "main"}]},
            "status": {"phase": "Succeeded", "containerStatuses": [
                {"restartCount": 0, "state": {"terminated": {"exitCode": 0, "reason": "Completed"}}}]}});
        assert_eq!(shown(&completed)[..3], ["0/1", "Completed", "0"]);
        assert_eq!(
            row_conditions(&completed).unwrap()[0]["reason"],
            json!("Succeeded")
        );
        let killed = json!({"spec": {"containers": [{"name": "main"}]},
            "status": {"phase": "Failed", "containerStatuses": [
                {"state": {"terminated": {"exitCode": 137, "signal": 9}}}]}});
        assert_eq!(shown(&killed)[1], "Signal:9");
        assert_eq!(
            row_conditions(&killed).unwrap()[0]["reason"],
            json!("Failed")
        );
        // One container completed, another still running and ready: back to Running.
        let mixed = json!({"spec": {"containers": [{"name": "a"}, {"name": "b"}]},
            "status": {"phase": "Running",
                "conditions": [{"type": "Ready", "status": "False"}],
                "containerStatuses": [
                    {"ready": true, "state": {"running": {}}},
                    {"state": {"terminated": {"exitCode": 0, "reason": "Completed"}}}]}});
        assert_eq!(shown(&mixed)[..2], ["1/2", "NotReady"]);
    }

    #[test]
    fn init_containers_and_sidecars() {
        let init = json!({"spec": {"nodeName": "node-a", "initContainers": [{"name": "setup"}],
                "containers": [{"name": "main"}]},
            "status": {"phase": "Pending",
                "initContainerStatuses": [{"name": "setup", "restartCount": 0,
                    "state": {"running": {}}}],
                "containerStatuses": [{"name": "main", "state": {"waiting": {"reason": "PodInitializing"}}}]}});
        assert_eq!(
            shown(&init),
            ["0/1", "Init:0/1", "0", "<none>", "node-a", "<none>", "<none>"]
        );
        let failed_init = json!({"spec": {"initContainers": [{"name": "a"}, {"name": "b"}],
                "containers": [{"name": "main"}]},
            "status": {"phase": "Pending", "initContainerStatuses": [
                {"name": "a", "state": {"terminated": {"exitCode": 0}}},
                {"name": "b", "state": {"terminated": {"exitCode": 2}}}]}});
        assert_eq!(shown(&failed_init)[1], "Init:ExitCode:2");
        let sidecar = json!({"spec": {"initContainers": [{"name": "proxy", "restartPolicy": "Always"}],
                "containers": [{"name": "main"}]},
            "status": {"phase": "Running",
                "initContainerStatuses": [{"name": "proxy", "started": true, "ready": true,
                    "restartCount": 2, "state": {"running": {}},
                    "lastState": {"terminated": {"exitCode": 1, "finishedAt": ago(30)}}}],
                "containerStatuses": [{"name": "main", "ready": true, "state": {"running": {}}}]}});
        assert_eq!(shown(&sidecar)[..3], ["2/2", "Running", "2 (30s ago)"]);
    }

    #[test]
    fn pending_gated_and_terminating() {
        let pending =
            json!({"spec": {"containers": [{"name": "main"}]}, "status": {"phase": "Pending"}});
        assert_eq!(
            shown(&pending),
            ["0/1", "Pending", "0", "<none>", "<none>", "<none>", "<none>"]
        );
        let gated = json!({"spec": {"containers": [{"name": "main"}]}, "status": {"phase": "Pending",
            "conditions": [{"type": "PodScheduled", "status": "False", "reason": "SchedulingGated"}]}});
        assert_eq!(shown(&gated)[1], "SchedulingGated");
        let terminating = json!({"metadata": {"deletionTimestamp": ago(1)},
            "spec": {"containers": [{"name": "main"}]},
            "status": {"phase": "Running", "containerStatuses": [
                {"ready": true, "state": {"running": {}}}]}});
        assert_eq!(shown(&terminating)[..2], ["1/1", "Terminating"]);
        let lost = json!({"metadata": {"deletionTimestamp": ago(1)},
            "spec": {"containers": [{"name": "main"}]},
            "status": {"phase": "Running", "reason": "NodeLost"}});
        assert_eq!(shown(&lost)[1], "Unknown");
    }
}
