//! Reading a finished object's finish time ([`FinishTime::read`]).
//!
//! Contract: an absent or `null` time is `Ok(None)` (finished, time unknown); a present one
//! that is not an RFC 3339 string is a [`RuleError`]. Times are parsed by [`Time::parse`], which
//! accepts every form an API server emits.
//!
//! Pods ([`FinishTime::ContainersTerminated`]) mirror kube-controller-manager's Job controller
//! (`getFinishTimeFromContainers` in `pkg/controller/job/job_controller.go`), the upstream code
//! that dates a finished Pod: the latest `state.terminated.finishedAt` over
//! `status.containerStatuses`, plus the `initContainerStatuses` of *sidecars* (init containers
//! with `restartPolicy: Always` in the spec), since they stop after the main containers.
//! Ordinary init containers are left out: they all stopped before any main container started,
//! so they can never be the latest. If any of those containers is not terminated, or has no
//! `finishedAt`, the time is unknown (`None`), as upstream answers nil. A Pod that never ran a
//! container (rejected at admission by the kubelet) has none to read and is also `None`; the
//! Job controller falls back to the Ready condition or deletion time there, a guess kube-gc
//! does not make.

use chrono::{DateTime, Utc};
use serde_json::Value;

use kube_gc_api::Time;

use super::{condition_of_type, conditions, FieldPath, FinishTime, RuleError};

impl FinishTime {
    /// When the finished `object` finished; `matched` is the condition that finished it, if a
    /// condition rule did.
    pub(super) fn read(
        &self,
        object: &Value,
        matched: Option<&Value>,
        now: DateTime<Utc>,
    ) -> Result<Option<DateTime<Utc>>, RuleError> {
        match self {
            FinishTime::MatchedCondition => matched.map_or(Ok(None), transition_time),
            FinishTime::Condition(type_) => {
                condition_of_type(conditions(object)?, type_).map_or(Ok(None), transition_time)
            }
            FinishTime::Field(path) => time_at(path, object),
            FinishTime::ContainersTerminated => containers_terminated(object),
            FinishTime::Cel(expr) => Ok(Some(expr.eval_time(object, now)?)),
        }
    }
}

/// The value at `path` as a time.
fn time_at(path: &FieldPath, object: &Value) -> Result<Option<DateTime<Utc>>, RuleError> {
    parse_time(path, path.lookup(object))
}

fn parse_time(path: &FieldPath, value: Option<&Value>) -> Result<Option<DateTime<Utc>>, RuleError> {
    match value {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(text)) => match Time::parse(text) {
            Ok(time) => Ok(Some(time.0)),
            Err(_) => Err(RuleError::BadTime {
                path: path.to_string(),
                value: text.clone(),
            }),
        },
        Some(other) => Err(RuleError::wrong_type(path, "an RFC 3339 time", other)),
    }
}

/// A condition's `lastTransitionTime`.
fn transition_time(condition: &Value) -> Result<Option<DateTime<Utc>>, RuleError> {
    let path = FieldPath::new(["lastTransitionTime"]);
    parse_time(&path, path.lookup(condition)).map_err(|e| {
        let type_ = condition.get("type").and_then(Value::as_str).unwrap_or("?");
        e.under(&format!("status.conditions[type={type_}]"))
    })
}

/// An array at `path`, or none if absent or `null`.
fn array_at<'a>(object: &'a Value, path: &FieldPath) -> Result<&'a [Value], RuleError> {
    match path.lookup(object) {
        None | Some(Value::Null) => Ok(&[]),
        Some(Value::Array(items)) => Ok(items),
        Some(other) => Err(RuleError::wrong_type(path, "an array", other)),
    }
}

/// The names of the Pod's sidecars: `spec.initContainers[]` with `restartPolicy: Always`.
fn sidecar_names(pod: &Value) -> Result<Vec<&str>, RuleError> {
    let init = array_at(pod, &FieldPath::new(["spec", "initContainers"]))?;
    Ok(init
        .iter()
        .filter(|c| c.get("restartPolicy").and_then(Value::as_str) == Some("Always"))
        .filter_map(|c| c.get("name").and_then(Value::as_str))
        .collect())
}

fn containers_terminated(pod: &Value) -> Result<Option<DateTime<Utc>>, RuleError> {
    let main = array_at(pod, &FieldPath::new(["status", "containerStatuses"]))?;
    let init = array_at(pod, &FieldPath::new(["status", "initContainerStatuses"]))?;
    let sidecars = sidecar_names(pod)?;
    let sidecar_statuses = init.iter().filter(|s| {
        s.get("name")
            .and_then(Value::as_str)
            .is_some_and(|n| sidecars.contains(&n))
    });
    let mut latest: Option<DateTime<Utc>> = None;
    for status in main.iter().chain(sidecar_statuses) {
        let path = FieldPath::new(["state", "terminated", "finishedAt"]);
        let Some(at) = parse_time(&path, path.lookup(status)).map_err(|e| {
            let name = status.get("name").and_then(Value::as_str).unwrap_or("?");
            e.under(&format!("status.containerStatuses[name={name}]"))
        })?
        else {
            return Ok(None);
        };
        latest = latest.max(Some(at));
    }
    Ok(latest)
}
