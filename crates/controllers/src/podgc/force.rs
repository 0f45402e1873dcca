//! A force deletion, as kube-controller-manager's pod garbage collector makes it, guarded so
//! that it acts only on the Pod that was judged.
//!
//! Contract:
//! - Unless the Pod already terminated, its status is first patched to phase `Failed` (for an
//!   orphan with the `DisruptionTarget` condition, reason `DeletionByPodGC`) — upstream's
//!   strategic merge patch of `/status` — so that a Job sees the Pod failed and replaces it. The
//!   patch carries the Pod's uid, as upstream's does, **and the resourceVersion judged**: the
//!   server applies it only to that very state (409 otherwise; exchanges 178, 179).
//! - Then `DELETE` with `gracePeriodSeconds: 0` and preconditions on the uid and the
//!   resourceVersion (the judged one, or the one the status patch answered): the Pod leaves
//!   storage at once (exchange 174) — or stays with a zero grace period if finalizers hold it.
//!   Upstream's DELETE has no precondition at all.
//! - A 404 at any step: the Pod is already gone. A 409: it changed since it was judged; the
//!   caller reads it again ([`Forced::Conflict`]). Anything else is an error.
//! - A dry run writes nothing and says what it would have done.

use chrono::{DateTime, Utc};
use serde_json::{json, Value};

use super::decide::{failed_status, FailedStatus, Reason};
use super::facts::{PodFacts, DISRUPTION_TARGET};
use kube_gc_api::{DeleteOptions, PartialObjectMetadata, Preconditions};
use kube_gc_client::{Api, Error, Patch, PostParams};

/// The reason of the `DisruptionTarget` condition upstream's pod garbage collector writes.
pub const DELETION_BY_POD_GC: &str = "DeletionByPodGC";
/// Its message.
pub const NODE_GONE_MESSAGE: &str = "PodGC: node no longer exists";

/// What one attempt did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Forced {
    /// Deleted (or, with finalizers, marked with a zero grace period).
    Deleted,
    /// Already gone.
    Gone,
    /// The Pod is not the one judged any more (409): read it again before anything else.
    Conflict,
    /// A dry run: nothing written.
    DryRun,
}

/// Force-deletes `pod` (judged for `reason`) through `api` (Pods, scoped to the Pod's
/// namespace), writing its failed status first when it needs one; `now` stamps a new
/// condition.
///
/// # Errors
///
/// A request failed otherwise than with 404 or 409.
pub async fn force_delete(
    api: &Api<PartialObjectMetadata>,
    pod: &PodFacts,
    reason: Reason,
    now: DateTime<Utc>,
    dry_run: bool,
) -> Result<Forced, Error> {
    let name = pod.key.name();
    let status = failed_status(pod, reason);
    if dry_run {
        tracing::info!(controller = super::CONTROLLER, pod = %pod.key, uid = %pod.uid,
            reason = reason.label(), fail_first = status.is_some(), "dry run: would force-delete");
        return Ok(Forced::DryRun);
    }
    let mut resource_version = pod.resource_version.clone();
    if let Some(status) = status {
        let patch = Patch::Strategic(failed_status_patch(pod, &status, now));
        match api.patch_status(name, &PostParams::default(), &patch).await {
            Ok(updated) => {
                resource_version = updated.metadata.resource_version.unwrap_or_default();
            }
            Err(e) if e.is_not_found() => return Ok(Forced::Gone),
            Err(e) if e.is_conflict() => return Ok(Forced::Conflict),
            Err(e) => return Err(e),
        }
    }
    let options = DeleteOptions {
        grace_period_seconds: Some(0),
        preconditions: Some(Preconditions {
            uid: Some(pod.uid.clone()),
            resource_version: Some(resource_version).filter(|rv| !rv.is_empty()),
        }),
        ..DeleteOptions::default()
    };
    match api.delete_for_metadata(name, &options).await {
        Ok(_) => Ok(Forced::Deleted),
        Err(e) if e.is_not_found() => Ok(Forced::Gone),
        Err(e) if e.is_conflict() => Ok(Forced::Conflict),
        Err(e) => Err(e),
    }
}

/// The strategic merge patch of `/status` failing `pod` (module documentation).
pub fn failed_status_patch(pod: &PodFacts, status: &FailedStatus, now: DateTime<Utc>) -> Value {
    let mut body = json!({
        "metadata": {"uid": pod.uid, "resourceVersion": pod.resource_version},
        "status": {"phase": "Failed"},
    });
    if status.disruption_target {
        let mut condition = json!({
            "type": DISRUPTION_TARGET,
            "status": "True",
            "reason": DELETION_BY_POD_GC,
            "message": NODE_GONE_MESSAGE,
        });
        if status.transition {
            condition["lastTransitionTime"] =
                json!(now.to_rfc3339_opts(chrono::SecondsFormat::Secs, true));
        }
        body["status"]["conditions"] = json!([condition]);
    }
    body
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::podgc::facts::PodPhase;
    use kube_gc_runtime::cache::ObjectKey;

    fn pod() -> PodFacts {
        PodFacts {
            key: ObjectKey::new("ns", "p"),
            uid: "u-1".into(),
            resource_version: "42".into(),
            created: None,
            deleting: false,
            removed_by_server: None,
            node_name: "gone".into(),
            phase: PodPhase::Running,
            evicted: false,
            disruption_target: None,
        }
    }

    #[test]
    fn an_orphans_status_patch_is_upstreams_with_the_resource_version_added() {
        let now = DateTime::from_timestamp(1_800_000_000, 0).unwrap_or_default();
        let status = FailedStatus {
            disruption_target: true,
            transition: true,
        };
        let patch = failed_status_patch(&pod(), &status, now);
        assert_eq!(
            patch,
            json!({"metadata": {"uid": "u-1", "resourceVersion": "42"},
                "status": {"phase": "Failed", "conditions": [{"type": "DisruptionTarget",
                    "status": "True", "reason": "DeletionByPodGC",
                    "message": "PodGC: node no longer exists",
                    "lastTransitionTime": "2027-01-15T08:00:00Z"}]}})
        );
        // Already a disruption target: its transition time is kept.
        let kept = FailedStatus {
            disruption_target: true,
            transition: false,
        };
        let patch = failed_status_patch(&pod(), &kept, now);
        assert!(patch["status"]["conditions"][0]
            .get("lastTransitionTime")
            .is_none());
        // Other reasons: the phase alone.
        let plain = FailedStatus {
            disruption_target: false,
            transition: false,
        };
        let patch = failed_status_patch(&pod(), &plain, now);
        assert_eq!(patch["status"], json!({"phase": "Failed"}));
    }
}
