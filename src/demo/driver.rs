//! Plays the workload against the simulated server: creates every object, then makes each
//! finish, or be re-created, or have its TTL extended, at its planned time — what the Job
//! controller, Volcano and users would do in a real cluster. It writes to the server's store
//! directly (in process); only the controllers go over HTTP.

use std::collections::HashMap;
use std::time::Duration;

use chrono::{DateTime, Utc};
use serde_json::{json, Value};
use tokio::time::Instant;

use crate::sim::{DeleteOptions, Gvr, Propagation, SimError, SimServer};

use super::workload::{DemoKind, Planned, Twist, NAMESPACE};

/// An object's identity in the demo.
pub type DemoKey = (DemoKind, String);

/// What the driver wrote that the summary needs: each object's current UID and when it
/// finished, as its status says (whole seconds, as the API server writes times).
#[derive(Debug, Default)]
pub struct Record {
    /// The UID the object should have at the end (the new one, for a re-created object).
    pub uids: HashMap<DemoKey, String>,
    /// When it finished, as its status says.
    pub finished_at: HashMap<DemoKey, DateTime<Utc>>,
    /// When that status was written (up to a second after `finished_at`, which is truncated):
    /// no controller can act on a finish before it is written.
    pub written_at: HashMap<DemoKey, DateTime<Utc>>,
}

/// The resource of a kind, as the simulator names it.
pub fn gvr(kind: DemoKind) -> Gvr {
    match kind {
        DemoKind::Job => Gvr::new("batch", "v1", "jobs"),
        DemoKind::VolcanoJob => Gvr::new("batch.volcano.sh", "v1alpha1", "jobs"),
    }
}

fn key(planned: &Planned) -> DemoKey {
    (planned.kind, planned.name.clone())
}

/// Creates every planned object in its initial state.
pub fn create_all(
    sim: &SimServer,
    planned: &[Planned],
    record: &mut Record,
) -> Result<(), SimError> {
    let an_hour_ago = Utc::now() - chrono::Duration::hours(1);
    for p in planned {
        let created = create(sim, p)?;
        let created = match p.finished_before {
            Some(outcome) => finish(sim, p, created, outcome, an_hour_ago, record)?,
            None if p.kind == DemoKind::VolcanoJob => {
                set_phase(sim, created, "Running", Utc::now())?
            }
            None => created,
        };
        record.uids.insert(key(p), uid(&created));
    }
    Ok(())
}

/// Applies every planned change at its time after `start`.
pub async fn drive(
    sim: &SimServer,
    planned: &[Planned],
    start: Instant,
    record: &mut Record,
) -> Result<(), SimError> {
    let mut changes: Vec<(Duration, usize, Change)> = Vec::new();
    for (i, p) in planned.iter().enumerate() {
        if let Some((at, outcome)) = p.finishes {
            changes.push((at, i, Change::Finish(outcome)));
        }
        if let Some((at, twist)) = p.twist {
            changes.push((at, i, Change::Twist(twist)));
        }
    }
    changes.sort_by_key(|(at, i, _)| (*at, *i));
    for (at, i, change) in changes {
        tokio::time::sleep_until(start + at).await;
        let p = &planned[i];
        let current = sim.get(&gvr(p.kind), Some(NAMESPACE), &p.name)?;
        match change {
            Change::Finish(outcome) => {
                finish(sim, p, current, outcome, Utc::now(), record)?;
            }
            Change::Twist(Twist::Recreate) => {
                let background = DeleteOptions::propagation(Propagation::Background);
                sim.delete(&gvr(p.kind), Some(NAMESPACE), &p.name, &background)?;
                let reborn = create(sim, p)?;
                record.uids.insert(key(p), uid(&reborn));
                record.finished_at.remove(&key(p));
                record.written_at.remove(&key(p));
            }
            Change::Twist(Twist::ExtendTtl(ttl)) => {
                let mut extended = current;
                extended["spec"]["ttlSecondsAfterFinished"] = json!(ttl);
                sim.update(&gvr(p.kind), extended)?;
            }
        }
    }
    Ok(())
}

enum Change {
    Finish(&'static str),
    Twist(Twist),
}

fn uid(object: &Value) -> String {
    object["metadata"]["uid"]
        .as_str()
        .unwrap_or_default()
        .to_owned()
}

/// Creates the object, running (no status yet).
fn create(sim: &SimServer, p: &Planned) -> Result<Value, SimError> {
    let mut spec = match p.kind {
        DemoKind::Job => json!({"template": {"spec": {"restartPolicy": "Never",
            "containers": [{"name": "main", "image": "busybox:1.36", "command": ["sleep", "5"]}]}}}),
        DemoKind::VolcanoJob => json!({"schedulerName": "volcano", "minAvailable": 1,
            "tasks": [{"name": "worker", "replicas": 1, "template": {"spec": {
                "containers": [{"name": "main", "image": "busybox:1.36"}]}}}]}),
    };
    if let Some(ttl) = p.ttl {
        spec["ttlSecondsAfterFinished"] = json!(ttl);
    }
    let api_version = match p.kind {
        DemoKind::Job => "batch/v1",
        DemoKind::VolcanoJob => "batch.volcano.sh/v1alpha1",
    };
    let object = json!({"apiVersion": api_version, "kind": "Job",
        "metadata": {"name": p.name, "namespace": NAMESPACE, "labels": {"demo": p.category}},
        "spec": spec});
    sim.create(&gvr(p.kind), object)
}

/// Writes the status that says the object finished with `outcome` at `at`.
fn finish(
    sim: &SimServer,
    p: &Planned,
    object: Value,
    outcome: &str,
    at: DateTime<Utc>,
    record: &mut Record,
) -> Result<Value, SimError> {
    let at = whole_seconds(at);
    let updated = match p.kind {
        DemoKind::Job => {
            let mut job = object;
            job["status"] = json!({"conditions": [{"type": outcome, "status": "True",
                "lastTransitionTime": wire(at)}], "succeeded": 1});
            sim.update_status(&gvr(p.kind), job)?
        }
        DemoKind::VolcanoJob => set_phase(sim, object, outcome, at)?,
    };
    record.finished_at.insert(key(p), at);
    record.written_at.insert(key(p), Utc::now());
    Ok(updated)
}

fn set_phase(
    sim: &SimServer,
    mut object: Value,
    phase: &str,
    at: DateTime<Utc>,
) -> Result<Value, SimError> {
    object["status"] = json!({"state": {"phase": phase, "lastTransitionTime": wire(at)}});
    sim.update_status(&gvr(DemoKind::VolcanoJob), object)
}

fn whole_seconds(at: DateTime<Utc>) -> DateTime<Utc> {
    DateTime::from_timestamp(at.timestamp(), 0).unwrap_or(at)
}

fn wire(at: DateTime<Utc>) -> String {
    at.to_rfc3339_opts(chrono::SecondsFormat::Secs, true)
}
