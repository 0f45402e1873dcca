//! The storage protection controllers' decisions on a claim or a volume, worded once for
//! `kube-gc explain`, `kube-gc plan` and `/debug/explain` from their own `claim_release` and
//! `volume_release`.
//!
//! Contract: only an object being deleted that still holds its protection finalizer is
//! governed; in use, it is `blocked` by what uses it (a Pod, a claim, `phase: Bound`); unused,
//! its finalizer is removed now (`delete-now`: the object goes unless another finalizer holds
//! it).

use crate::explain::gather::{Gathered, StorageContext};
use crate::explain::{Blocker, DeletionInProgress};
use crate::explain::{Decision, VerdictKind};
use crate::selection::ControllerSelection;
use kube_gc_controllers::protection::decide::{
    claim_release, pod_uses_claim, volume_release, Release,
};
use kube_gc_controllers::protection::{ClaimFacts, PodClaims, VolumeFacts};
use kube_gc_controllers::protection::{PVC_CONTROLLER, PVC_FINALIZER, PV_CONTROLLER, PV_FINALIZER};

use super::decision;

/// The PVC protection controller's decision on a claim whose release is `release`.
pub(crate) fn claim_decision(release: &Release) -> Decision {
    match release {
        Release::NotCandidate => decision(
            PVC_CONTROLLER,
            false,
            VerdictKind::Keep,
            format!("does not apply: not being deleted, or {PVC_FINALIZER} is gone"),
        ),
        Release::InUse(by) => decision(
            PVC_CONTROLLER,
            true,
            VerdictKind::Blocked,
            format!("in use by {by}: {PVC_FINALIZER} stays until no scheduled Pod uses it"),
        ),
        Release::Release { .. } => decision(
            PVC_CONTROLLER,
            true,
            VerdictKind::DeleteNow,
            format!(
                "no Pod uses it: {PVC_FINALIZER} is removed now (once a live LIST of the \
                 namespace's Pods confirms)"
            ),
        ),
    }
}

/// The PV protection controller's decision on a volume whose release is `release`.
pub(crate) fn volume_decision(release: &Release) -> Decision {
    match release {
        Release::NotCandidate => decision(
            PV_CONTROLLER,
            false,
            VerdictKind::Keep,
            format!("does not apply: not being deleted, or {PV_FINALIZER} is gone"),
        ),
        Release::InUse(by) => decision(
            PV_CONTROLLER,
            true,
            VerdictKind::Blocked,
            format!("in use ({by}): {PV_FINALIZER} stays until no claim is bound to it"),
        ),
        Release::Release { .. } => decision(
            PV_CONTROLLER,
            true,
            VerdictKind::DeleteNow,
            format!(
                "no claim is bound to it: {PV_FINALIZER} is removed now (once a live LIST of \
                 every claim confirms)"
            ),
        ),
    }
}

/// The PVC protection controller's decision on what `gathered` holds.
pub(crate) fn claim_from_gathered(gathered: &Gathered) -> Decision {
    match &gathered.storage {
        Some(StorageContext::Claim { claim, pods }) => {
            claim_decision(&claim_release(claim, PVC_FINALIZER, pods))
        }
        _ => not_its_kind(PVC_CONTROLLER, "PersistentVolumeClaim"),
    }
}

/// The PV protection controller's decision on what `gathered` holds.
pub(crate) fn volume_from_gathered(gathered: &Gathered) -> Decision {
    match &gathered.storage {
        Some(StorageContext::Volume { volume, claims }) => {
            volume_decision(&volume_release(volume, PV_FINALIZER, claims))
        }
        _ => not_its_kind(PV_CONTROLLER, "PersistentVolume"),
    }
}

/// Words what the protection finalizer of a claim or volume being deleted waits for, in
/// `deletion`: the Pods that use the claim, what binds the volume.
pub(crate) fn specialise(
    deletion: &mut DeletionInProgress,
    gathered: &Gathered,
    running: &ControllerSelection,
) {
    match &gathered.storage {
        Some(StorageContext::Claim { claim, pods }) => claim_wait(deletion, claim, pods, running),
        Some(StorageContext::Volume { volume, claims }) => {
            volume_wait(deletion, volume, claims, running)
        }
        None => {}
    }
}

/// Words what `kubernetes.io/pvc-protection` waits for in the deletion of `claim`: the Pods,
/// among `pods`, that use it.
pub(crate) fn claim_wait<'a>(
    deletion: &mut DeletionInProgress,
    claim: &ClaimFacts,
    pods: impl IntoIterator<Item = &'a PodClaims> + Clone,
    running: &ControllerSelection,
) {
    let release = claim_release(claim, PVC_FINALIZER, pods.clone());
    let name = claim.key.name();
    let users = pods
        .into_iter()
        .filter(|p| p.key.namespace() == claim.key.namespace())
        .filter(|p| pod_uses_claim(p, name))
        .map(|p| Blocker {
            object: format!("Pod {}", p.key),
            why: format!("uses it, bound to node {}", p.node_name),
            blockers: Vec::new(),
        })
        .collect();
    specialised(deletion, PVC_FINALIZER, &release, users, running);
}

/// Words what `kubernetes.io/pv-protection` waits for in the deletion of `volume`: what binds
/// it, among `claims`.
pub(crate) fn volume_wait<'a>(
    deletion: &mut DeletionInProgress,
    volume: &VolumeFacts,
    claims: impl IntoIterator<Item = &'a ClaimFacts>,
    running: &ControllerSelection,
) {
    let release = volume_release(volume, PV_FINALIZER, claims);
    let users = match &release {
        Release::InUse(by) => vec![Blocker {
            object: by.clone(),
            why: "binds it".to_owned(),
            blockers: Vec::new(),
        }],
        _ => Vec::new(),
    };
    specialised(deletion, PV_FINALIZER, &release, users, running);
}

fn specialised(
    deletion: &mut DeletionInProgress,
    finalizer: &str,
    release: &Release,
    users: Vec<Blocker>,
    running: &ControllerSelection,
) {
    let Some(wait) = deletion
        .finalizers
        .iter_mut()
        .find(|w| w.finalizer == finalizer)
    else {
        return;
    };
    let who = wait.owner.line(running);
    let needed = if finalizer == PVC_FINALIZER {
        "no scheduled Pod uses it"
    } else {
        "no claim is bound to it"
    };
    wait.waits_for = match release {
        Release::InUse(_) => format!("{who} to remove it once {needed}"),
        _ => format!("{who} to remove it: {needed} now"),
    };
    wait.blockers = users;
}

/// The decision of `controller` on an object of another kind.
pub(crate) fn not_its_kind(controller: &str, kind: &str) -> Decision {
    decision(
        controller,
        false,
        VerdictKind::Keep,
        format!("does not apply: only {kind}s"),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_claim_in_use_is_blocked_by_its_pod_and_an_unused_one_released_now() {
        let used = claim_decision(&Release::InUse("pod ns/web-0".into()));
        assert_eq!((used.governs, used.verdict), (true, VerdictKind::Blocked));
        assert!(
            used.summary.starts_with("in use by pod ns/web-0"),
            "{used:?}"
        );
        let free = volume_decision(&Release::Release { index: 0 });
        assert_eq!(free.verdict, VerdictKind::DeleteNow);
        assert!(!claim_decision(&Release::NotCandidate).governs);
    }
}
