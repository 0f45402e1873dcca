//! Who removes a finalizer: kube-gc (one of its controllers, when `--controllers` runs it here),
//! Kubernetes itself (kube-controller-manager, the API server, the cloud controller manager),
//! a well-known operator, or nobody known.
//!
//! Contract:
//! - [`owner_of`] is a pure lookup: the exact finalizers Kubernetes' own components remove, then
//!   a small table of well-known operators matched by the domain of the finalizer's name (the
//!   part before `/`, or the whole name when it has none: `finalizers.fluxcd.io`), then unknown.
//!   The table names the project only; what its finalizer guards is for its documentation.
//! - [`FinalizerOwner::line`] says it in one line, for the controllers `running` here: a
//!   finalizer a kube-gc controller removes names that controller when it runs, and the
//!   component that does its job elsewhere when it does not.

use serde::Serialize;

use crate::selection::{
    ControllerSelection, GARBAGE_COLLECTOR, NAMESPACE, PVC_PROTECTION, PV_PROTECTION,
};
use kube_gc_controllers::garbagecollector::graph::{FOREGROUND_FINALIZER, ORPHAN_FINALIZER};
use kube_gc_controllers::namespace::decide::KUBERNETES_FINALIZER;
use kube_gc_controllers::protection::{PVC_FINALIZER, PV_FINALIZER};

/// Whose a finalizer is.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase", tag = "kind")]
pub enum FinalizerOwner {
    /// A controller kube-gc has, which does kube-controller-manager's job where kcm does not run.
    #[serde(rename_all = "camelCase")]
    KubeGc {
        /// Its name in `--controllers`.
        controller: &'static str,
        /// kube-controller-manager's controller that removes it too.
        upstream: &'static str,
    },
    /// A Kubernetes component kube-gc has no counterpart of.
    #[serde(rename_all = "camelCase")]
    Kubernetes {
        /// e.g. `kube-controller-manager's job-controller`.
        component: &'static str,
    },
    /// A well-known project, recognised by its domain.
    #[serde(rename_all = "camelCase")]
    Operator {
        /// The project.
        project: &'static str,
        /// The domain matched.
        domain: &'static str,
    },
    /// Nothing known removes it.
    Unknown,
}

/// Finalizers of Kubernetes' own components, by exact name.
const KUBERNETES: &[(&str, &str)] = &[
    (
        "batch.kubernetes.io/job-tracking",
        "kube-controller-manager's job-controller (once it has counted the Pod)",
    ),
    (
        "customresourcecleanup.apiextensions.k8s.io",
        "the API server's CRD finalizer (once every object of the CRD is deleted)",
    ),
    (
        "service.kubernetes.io/load-balancer-cleanup",
        "the cloud controller manager's service controller (once the load balancer is gone)",
    ),
];

/// Finalizers of Kubernetes' own components, by prefix.
const KUBERNETES_PREFIXES: &[(&str, &str)] = &[
    (
        "external-attacher/",
        "the CSI external-attacher of the driver named",
    ),
    (
        "snapshot.storage.kubernetes.io/",
        "the CSI snapshot controller",
    ),
];

/// Well-known operators, by the domain their finalizers are named in.
const OPERATORS: &[(&str, &str)] = &[
    ("argoproj.io", "Argo (Argo CD, Argo Workflows)"),
    ("fluxcd.io", "Flux"),
    ("cluster.x-k8s.io", "Cluster API"),
    ("crossplane.io", "Crossplane"),
    ("velero.io", "Velero"),
    ("knative.dev", "Knative"),
    ("tekton.dev", "Tekton"),
    ("kubevirt.io", "KubeVirt"),
    ("cert-manager.io", "cert-manager"),
    ("elbv2.k8s.aws", "the AWS Load Balancer Controller"),
    ("ingress.k8s.aws", "the AWS Load Balancer Controller"),
    ("service.k8s.aws", "the AWS Load Balancer Controller"),
];

/// Who removes `finalizer`.
pub fn owner_of(finalizer: &str) -> FinalizerOwner {
    let kube_gc = |controller, upstream| FinalizerOwner::KubeGc {
        controller,
        upstream,
    };
    match finalizer {
        KUBERNETES_FINALIZER => return kube_gc(NAMESPACE, "namespace-controller"),
        FOREGROUND_FINALIZER | ORPHAN_FINALIZER => {
            return kube_gc(GARBAGE_COLLECTOR, "garbage-collector-controller")
        }
        PVC_FINALIZER => return kube_gc(PVC_PROTECTION, "pvc-protection"),
        PV_FINALIZER => return kube_gc(PV_PROTECTION, "pv-protection"),
        _ => {}
    }
    let exact = KUBERNETES.iter().find(|(name, _)| *name == finalizer);
    let prefixed = || {
        KUBERNETES_PREFIXES
            .iter()
            .find(|(prefix, _)| finalizer.starts_with(prefix))
    };
    if let Some((_, component)) = exact.or_else(prefixed) {
        return FinalizerOwner::Kubernetes { component };
    }
    let domain = finalizer.split('/').next().unwrap_or(finalizer);
    OPERATORS
        .iter()
        .find(|(known, _)| domain == *known || domain.ends_with(&format!(".{known}")))
        .map_or(FinalizerOwner::Unknown, |(known, project)| {
            FinalizerOwner::Operator {
                project,
                domain: known,
            }
        })
}

impl FinalizerOwner {
    /// Who removes it, in one line, with the controllers `running` here.
    pub fn line(&self, running: &ControllerSelection) -> String {
        match self {
            FinalizerOwner::KubeGc {
                controller,
                upstream,
            } if running.is_enabled(controller) => {
                format!("kube-gc's {controller} (run here; kube-controller-manager's {upstream} elsewhere)")
            }
            FinalizerOwner::KubeGc {
                controller,
                upstream,
            } => format!(
                "kube-controller-manager's {upstream} (kube-gc's {controller} is not run here)"
            ),
            FinalizerOwner::Kubernetes { component } => component.to_string(),
            FinalizerOwner::Operator { project, domain } => {
                format!("{project} (a {domain} finalizer)")
            }
            FinalizerOwner::Unknown => {
                "no controller kube-gc knows of: if the one that added it is gone, only a person \
                 can remove it"
                    .to_owned()
            }
        }
    }

    /// Whether kube-gc runs the controller that removes it.
    pub fn is_run_here(&self, running: &ControllerSelection) -> bool {
        matches!(self, FinalizerOwner::KubeGc { controller, .. } if running.is_enabled(controller))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kube_gcs_finalizers_name_the_controller_or_kcms_when_it_is_not_run() {
        let everything = ControllerSelection::default();
        assert_eq!(
            owner_of("kubernetes").line(&everything),
            "kube-gc's namespace (run here; kube-controller-manager's namespace-controller elsewhere)"
        );
        let managed = ControllerSelection::parse(&["retention"]).unwrap();
        assert_eq!(
            owner_of("kubernetes.io/pvc-protection").line(&managed),
            "kube-controller-manager's pvc-protection (kube-gc's pvc-protection is not run here)"
        );
        assert!(owner_of("foregroundDeletion").is_run_here(&everything));
        assert!(!owner_of("orphan").is_run_here(&managed));
    }

    #[test]
    fn kubernetes_components_operators_and_the_unknown() {
        assert!(matches!(
            owner_of("batch.kubernetes.io/job-tracking"),
            FinalizerOwner::Kubernetes { component } if component.starts_with("kube-controller-manager's job-controller")
        ));
        assert!(matches!(
            owner_of("customresourcecleanup.apiextensions.k8s.io"),
            FinalizerOwner::Kubernetes { .. }
        ));
        assert!(matches!(
            owner_of("external-attacher/ebs-csi-aws-com"),
            FinalizerOwner::Kubernetes { .. }
        ));
        assert_eq!(
            owner_of("resources-finalizer.argocd.argoproj.io"),
            FinalizerOwner::Operator {
                project: "Argo (Argo CD, Argo Workflows)",
                domain: "argoproj.io"
            }
        );
        assert!(matches!(
            owner_of("finalizers.fluxcd.io"),
            FinalizerOwner::Operator {
                domain: "fluxcd.io",
                ..
            }
        ));
        // A domain that only ends with a known one's letters is not it.
        assert_eq!(owner_of("example.notvelero.io/x"), FinalizerOwner::Unknown);
        assert_eq!(owner_of("example.com/hold"), FinalizerOwner::Unknown);
    }
}
