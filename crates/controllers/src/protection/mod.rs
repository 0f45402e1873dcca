//! The storage protection controllers — kube-controller-manager's `pvc-protection` and
//! `pv-protection` (v1.28 registers them as `persistentvolumeclaim-protection-controller` and
//! `persistentvolume-protection-controller`, both names are accepted): on an API server where
//! no kube-controller-manager runs, a claim or volume being deleted would otherwise hang on the
//! finalizer admission gave it.
//!
//! Reading order: [`decide`] (the rules, pure), [`facts`] (what is cached), [`pvc`], [`pv`],
//! then [`release`] here (the one write both make).
//!
//! Contract:
//! - They only ever remove `kubernetes.io/pvc-protection` from a claim and
//!   `kubernetes.io/pv-protection` from a volume, and only from objects being deleted.
//!   Upstream also adds the finalizer to objects created before the admission plugin was on;
//!   kube-gc leaves that to admission.
//! - A release is proven against the server's state: the decision from the caches is
//!   confirmed by a live, consistent LIST (a claim's: the Pods of its namespace; a volume's:
//!   every claim), and the write is a JSON patch that `test`s the uid, carries the
//!   resourceVersion judged as a precondition and `test`s the finalizer at its index before
//!   removing it (exchanges 188–192): any change since the judgement fails it (409 or 422),
//!   and the object's own watch event brings it back to be judged again.
//! - Bursts are cheap: the PVC controller's key is a namespace (one live LIST for every claim
//!   of the namespace waiting at that moment — upstream lists once per claim), the PV
//!   controller's a single key for every volume.

pub mod decide;
pub mod facts;
pub mod pv;
pub mod pvc;

use serde_json::json;

use kube_gc_api::PartialObjectMetadata;
use kube_gc_client::{Api, Error, Patch, PostParams, ResourceRef};

pub use facts::{ClaimFacts, PodClaims, VolumeFacts};
pub use pv::PvProtection;
pub use pvc::PvcProtection;

/// The PVC protection controller's name, as `--controllers` selects it.
pub const PVC_CONTROLLER: &str = "pvc-protection";
/// The PV protection controller's name.
pub const PV_CONTROLLER: &str = "pv-protection";
/// The finalizer admission adds to every claim.
pub const PVC_FINALIZER: &str = "kubernetes.io/pvc-protection";
/// The finalizer admission adds to every volume.
pub const PV_FINALIZER: &str = "kubernetes.io/pv-protection";

/// core/v1 PersistentVolumeClaims.
pub fn claim_resource() -> ResourceRef {
    ResourceRef::new(
        "",
        "v1",
        "persistentvolumeclaims",
        "PersistentVolumeClaim",
        true,
    )
}

/// core/v1 PersistentVolumes.
pub fn volume_resource() -> ResourceRef {
    ResourceRef::new("", "v1", "persistentvolumes", "PersistentVolume", false)
}

/// What a release did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Released {
    /// The finalizer is gone.
    Released,
    /// The object is gone already.
    Gone,
    /// It changed since it was judged (409, or a failed `test`: 422); its watch event brings
    /// it back.
    Changed,
    /// A dry run: nothing written.
    DryRun,
}

/// The JSON patch removing `finalizer`, at `index` of the finalizers, from the object with
/// `uid` at `resource_version` (module documentation).
pub fn release_patch(uid: &str, resource_version: &str, finalizer: &str, index: usize) -> Patch {
    let at = format!("/metadata/finalizers/{index}");
    Patch::Json(json!([
        {"op": "test", "path": "/metadata/uid", "value": uid},
        {"op": "replace", "path": "/metadata/resourceVersion", "value": resource_version},
        {"op": "test", "path": at, "value": finalizer},
        {"op": "remove", "path": at},
    ]))
}

/// Sends [`release_patch`] for `name` through `api`.
///
/// # Errors
///
/// The request failed otherwise than with 404, 409 or 422.
pub async fn release(
    api: &Api<PartialObjectMetadata>,
    name: &str,
    patch: &Patch,
    dry_run: bool,
) -> Result<Released, Error> {
    if dry_run {
        return Ok(Released::DryRun);
    }
    match api.patch(name, &PostParams::default(), patch).await {
        Ok(_) => Ok(Released::Released),
        Err(e) if e.is_not_found() => Ok(Released::Gone),
        Err(e) if e.is_conflict() || e.is_invalid() => Ok(Released::Changed),
        Err(e) => Err(e),
    }
}

/// Logs what a release of `object` (a `kind` with `uid`) did.
fn report(controller: &'static str, kind: &str, object: &str, uid: &str, released: Released) {
    match released {
        Released::Released => tracing::info!(
            controller,
            kind,
            object,
            uid,
            "no longer in use: protection finalizer removed"
        ),
        Released::DryRun => tracing::info!(
            controller,
            kind,
            object,
            uid,
            "dry run: would remove the protection finalizer"
        ),
        Released::Gone => tracing::debug!(controller, kind, object, "already gone"),
        Released::Changed => tracing::debug!(
            controller,
            kind,
            object,
            "changed since it was judged; its next event brings it back"
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_release_patch_is_the_captured_one() {
        // Exchange 190's request, but for its uid and resourceVersion.
        let captured = kube_gc_fixtures::exchange("190-pvc-release");
        let body = &captured["request"]["body"];
        let uid = body[0]["value"].as_str().unwrap_or_default();
        let rv = body[1]["value"].as_str().unwrap_or_default();
        let patch = release_patch(uid, rv, PVC_FINALIZER, 0);
        assert_eq!(patch.content_type(), "application/json-patch+json");
        assert_eq!(patch.body(), body);
    }
}
