//! May this claim, may this volume be released? The protection controllers' rules, as pure
//! functions; the controllers act on these and nothing else.
//!
//! Contract:
//! - Only an object being deleted that still holds its protection finalizer is a candidate;
//!   anything else is left alone ([`Release::NotCandidate`]).
//! - A claim is in use by a Pod bound to a node (upstream's `podUsesPVC`: the kubelet sees only
//!   scheduled Pods, and will not start one whose claim is being deleted) that uses it through
//!   a `persistentVolumeClaim` volume — whatever the Pod's phase: a terminated Pod holds its
//!   claims until it is deleted, as upstream's — or through an `ephemeral` volume, unless the
//!   Pod is shut down (being deleted with a zero grace period). Upstream also checks that the
//!   claim of an ephemeral volume is owned by the Pod; kube-gc keeps a claim of that name
//!   either way, which keeps more, never less.
//! - A volume is in use while its phase is `Bound` (upstream's only rule), while its
//!   `claimRef` names a claim that exists (the same uid, when the reference has one), and while
//!   a claim names it in `spec.volumeName` — the last two matter where no volume binder runs to
//!   set the phase.

use super::facts::{ClaimFacts, ClaimRef, PodClaims, VolumeFacts};

/// What to do with a protected object.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Release {
    /// Not being deleted, or its finalizer is gone already: not this controller's business.
    NotCandidate,
    /// Still in use, by this (a Pod's key, a claim's key, or `phase: Bound`).
    InUse(String),
    /// May be released: its finalizer, at this index of its finalizers, can go.
    Release {
        /// The finalizer's position.
        index: usize,
    },
}

/// Whether an object with these facts is a candidate, and where its `finalizer` is.
fn candidate(deleting: bool, finalizers: &[String], finalizer: &str) -> Option<usize> {
    if !deleting {
        return None;
    }
    finalizers.iter().position(|f| f == finalizer)
}

/// Whether `pod` uses the claim called `claim` (in the Pod's own namespace).
pub fn pod_uses_claim(pod: &PodClaims, claim: &str) -> bool {
    if pod.node_name.is_empty() {
        return false;
    }
    pod.claims.iter().any(|c| c == claim)
        || (!pod.shut_down && pod.ephemeral_claims.iter().any(|c| c == claim))
}

/// May `claim` lose `finalizer`, given the Pods of its namespace?
pub fn claim_release<'a>(
    claim: &ClaimFacts,
    finalizer: &str,
    pods: impl IntoIterator<Item = &'a PodClaims>,
) -> Release {
    let Some(index) = candidate(claim.deleting, &claim.finalizers, finalizer) else {
        return Release::NotCandidate;
    };
    let name = claim.key.name();
    let namespace = claim.key.namespace();
    let user = pods
        .into_iter()
        .find(|pod| pod.key.namespace() == namespace && pod_uses_claim(pod, name));
    match user {
        Some(pod) => Release::InUse(format!("pod {}", pod.key)),
        None => Release::Release { index },
    }
}

/// Whether `claim` is the one `reference` names.
fn names(reference: &ClaimRef, claim: &ClaimFacts) -> bool {
    claim.key.namespace() == Some(reference.namespace.as_str())
        && claim.key.name() == reference.name
        && reference.uid.as_deref().is_none_or(|uid| uid == claim.uid)
}

/// May `volume` lose `finalizer`, given the claims that exist?
pub fn volume_release<'a>(
    volume: &VolumeFacts,
    finalizer: &str,
    claims: impl IntoIterator<Item = &'a ClaimFacts>,
) -> Release {
    let Some(index) = candidate(volume.deleting, &volume.finalizers, finalizer) else {
        return Release::NotCandidate;
    };
    if volume.bound {
        return Release::InUse("phase Bound".to_owned());
    }
    let binding = claims.into_iter().find(|claim| {
        claim.volume_name == volume.name
            || volume.claim_ref.as_ref().is_some_and(|r| names(r, claim))
    });
    match binding {
        Some(claim) => Release::InUse(format!("claim {}", claim.key)),
        None => Release::Release { index },
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use kube_gc_runtime::cache::ObjectKey;

    const PVC: &str = "kubernetes.io/pvc-protection";
    const PV: &str = "kubernetes.io/pv-protection";

    fn claim(name: &str, deleting: bool) -> ClaimFacts {
        ClaimFacts {
            key: ObjectKey::new("ns", name),
            uid: format!("uid-{name}"),
            resource_version: "1".into(),
            deleting,
            finalizers: vec!["example.com/other".into(), PVC.into()],
            volume_name: String::new(),
        }
    }

    fn pod(node: &str, claims: &[&str], ephemeral: &[&str]) -> PodClaims {
        PodClaims {
            key: ObjectKey::new("ns", "p"),
            uid: "uid-p".into(),
            resource_version: "1".into(),
            node_name: node.into(),
            shut_down: false,
            claims: claims.iter().map(|c| c.to_string()).collect(),
            ephemeral_claims: ephemeral.iter().map(|c| c.to_string()).collect(),
        }
    }

    fn volume(deleting: bool) -> VolumeFacts {
        VolumeFacts {
            name: "pv-1".into(),
            uid: "uid-pv".into(),
            resource_version: "1".into(),
            deleting,
            finalizers: vec![PV.into()],
            bound: false,
            claim_ref: None,
        }
    }

    #[test]
    fn a_claim_not_being_deleted_or_already_released_is_not_touched() {
        let unused: [&PodClaims; 0] = [];
        assert_eq!(
            claim_release(&claim("c", false), PVC, unused),
            Release::NotCandidate
        );
        let mut released = claim("c", true);
        released.finalizers.pop();
        assert_eq!(claim_release(&released, PVC, unused), Release::NotCandidate);
    }

    #[test]
    fn a_claim_used_by_a_scheduled_pod_keeps_its_finalizer_whatever_the_pods_phase() {
        let user = pod("n", &["c"], &[]);
        let verdict = claim_release(&claim("c", true), PVC, [&user]);
        assert_eq!(verdict, Release::InUse("pod ns/p".into()));
        // Even shut down: a persistentVolumeClaim volume holds while the Pod exists.
        let mut gone = user.clone();
        gone.shut_down = true;
        assert!(matches!(
            claim_release(&claim("c", true), PVC, [&gone]),
            Release::InUse(_)
        ));
    }

    #[test]
    fn unscheduled_pods_other_namespaces_and_other_claims_do_not_hold_it() {
        let unscheduled = pod("", &["c"], &[]);
        let mut elsewhere = pod("n", &["c"], &[]);
        elsewhere.key = ObjectKey::new("other", "p");
        let other = pod("n", &["d"], &[]);
        let verdict = claim_release(&claim("c", true), PVC, [&unscheduled, &elsewhere, &other]);
        assert_eq!(verdict, Release::Release { index: 1 });
    }

    #[test]
    fn an_ephemeral_claim_is_held_until_its_pod_is_shut_down() {
        let mut user = pod("n", &[], &["c"]);
        assert!(matches!(
            claim_release(&claim("c", true), PVC, [&user]),
            Release::InUse(_)
        ));
        user.shut_down = true;
        assert_eq!(
            claim_release(&claim("c", true), PVC, [&user]),
            Release::Release { index: 1 }
        );
    }

    #[test]
    fn a_volume_with_a_bound_claim_keeps_its_finalizer() {
        let none: [&ClaimFacts; 0] = [];
        assert_eq!(
            volume_release(&volume(false), PV, none),
            Release::NotCandidate
        );
        assert_eq!(
            volume_release(&volume(true), PV, none),
            Release::Release { index: 0 }
        );
        let mut bound = volume(true);
        bound.bound = true;
        assert!(matches!(
            volume_release(&bound, PV, none),
            Release::InUse(_)
        ));
        // Named by a claim's volumeName.
        let mut naming = claim("c", false);
        naming.volume_name = "pv-1".into();
        assert_eq!(
            volume_release(&volume(true), PV, [&naming]),
            Release::InUse("claim ns/c".into())
        );
    }

    #[test]
    fn a_claim_ref_holds_only_while_its_claim_exists_with_that_uid() {
        let mut referenced = volume(true);
        referenced.claim_ref = Some(ClaimRef {
            namespace: "ns".into(),
            name: "c".into(),
            uid: Some("uid-c".into()),
        });
        let none: [&ClaimFacts; 0] = [];
        assert_eq!(
            volume_release(&referenced, PV, none),
            Release::Release { index: 0 }
        );
        let present = claim("c", false);
        assert!(matches!(
            volume_release(&referenced, PV, [&present]),
            Release::InUse(_)
        ));
        let mut recreated = claim("c", false);
        recreated.uid = "another".into();
        assert_eq!(
            volume_release(&referenced, PV, [&recreated]),
            Release::Release { index: 0 }
        );
    }
}
