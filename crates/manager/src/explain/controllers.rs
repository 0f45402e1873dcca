//! The controllers `kube-gc explain` and `kube-gc plan` speak for: one [`Covered`] variant
//! each — its name as `--controllers` spells it and who does its job where kube-gc does not run
//! it. Its decision on one object is `decide::decision_of`'s arm for it, its deletions to come
//! `plan::rows_of`'s: both match on every variant, so a new controller is one variant here and
//! the compiler asks for the other two.
//!
//! Contract:
//! - [`COVERED`] holds every variant once (a test refuses a name twice; a variant left out is
//!   never constructed, which the compiler warns of and CI refuses); its order is the order of
//!   `explain`'s "Who decides" and of `plan`'s reads.
//! - Both commands take `run`'s `--controllers` ([`ControllerSelection`]) and assume what it
//!   says: a controller it leaves out decides nothing and deletes nothing in their answers. It
//!   is said to be *not run here*, with who does its job instead where someone does
//!   ("kube-controller-manager's job on this cluster", under the managed overlay), and `explain`
//!   tells what it would decide were it run. A controller `--controllers` enables but no variant
//!   covers yet is said to be unforeseen, never silently left out.
//! - [`Assumed`] is what both commands print about it, as lines and as data.
//!
//! This is the bottom of `explain`: it names controllers and reads nothing, so the drivers that
//! walk it (`decide`, `plan`, `live`) stand above it.

use serde::Serialize;

use crate::selection::{
    ControllerSelection, GARBAGE_COLLECTOR, KNOWN_CONTROLLERS, NAMESPACE, PODGC, PVC_PROTECTION,
    PV_PROTECTION, RETENTION, TTL_AFTER_FINISHED, VOLCANO_JOB_TTL,
};

/// One controller, as `explain` and `plan` know it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Covered {
    /// Jobs' `ttlSecondsAfterFinished`.
    TtlAfterFinished,
    /// Volcano Jobs' `ttlSecondsAfterFinished`.
    VolcanoJobTtl,
    /// The retention policies.
    Retention,
    /// The ownerReference garbage collector.
    GarbageCollector,
    /// The finishing of a namespace's deletion.
    Namespace,
    /// The pod garbage collector.
    Podgc,
    /// The finalizer of claims in use.
    PvcProtection,
    /// The finalizer of volumes bound.
    PvProtection,
}

/// Every controller `explain` and `plan` speak for, in the order they are asked.
pub(crate) const COVERED: [Covered; 8] = [
    Covered::TtlAfterFinished,
    Covered::VolcanoJobTtl,
    Covered::Retention,
    Covered::GarbageCollector,
    Covered::Namespace,
    Covered::Podgc,
    Covered::PvcProtection,
    Covered::PvProtection,
];

/// The covered controllers' names, in order.
pub(crate) fn covered_names() -> impl Iterator<Item = &'static str> {
    COVERED.iter().map(|c| c.name())
}

impl Covered {
    /// Its name, as `--controllers` spells it.
    pub(crate) fn name(self) -> &'static str {
        match self {
            Covered::TtlAfterFinished => TTL_AFTER_FINISHED,
            Covered::VolcanoJobTtl => VOLCANO_JOB_TTL,
            Covered::Retention => RETENTION,
            Covered::GarbageCollector => GARBAGE_COLLECTOR,
            Covered::Namespace => NAMESPACE,
            Covered::Podgc => PODGC,
            Covered::PvcProtection => PVC_PROTECTION,
            Covered::PvProtection => PV_PROTECTION,
        }
    }

    /// Who does its job on a cluster where kube-gc does not run it; `None`: nobody.
    fn elsewhere(self) -> Option<&'static str> {
        match self {
            Covered::VolcanoJobTtl => Some("Volcano's controller manager"),
            Covered::Retention => None,
            Covered::TtlAfterFinished
            | Covered::GarbageCollector
            | Covered::Namespace
            | Covered::Podgc
            | Covered::PvcProtection
            | Covered::PvProtection => Some("kube-controller-manager"),
        }
    }

    /// The name of the controller that does its job there (kube-controller-manager's
    /// `--controllers` name, Volcano's), when it has one.
    fn upstream(self) -> Option<&'static str> {
        match self {
            Covered::TtlAfterFinished => Some("ttl-after-finished-controller"),
            Covered::VolcanoJobTtl => Some("garbagecollector"),
            Covered::Retention => None,
            Covered::GarbageCollector => Some("garbage-collector-controller"),
            Covered::Namespace => Some("namespace-controller"),
            Covered::Podgc => Some("pod-garbage-collector-controller"),
            Covered::PvcProtection => Some("pvc-protection"),
            Covered::PvProtection => Some("pv-protection"),
        }
    }

    /// What does its job where kube-gc does not run it: `kube-controller-manager's
    /// namespace-controller`.
    pub(crate) fn instead(self) -> Option<String> {
        match (self.elsewhere(), self.upstream()) {
            (Some(who), Some(name)) => Some(format!("{who}'s {name}")),
            (Some(who), None) => Some(who.to_owned()),
            (None, _) => None,
        }
    }

    /// "not run here (kube-controller-manager's job on this cluster)".
    pub(crate) fn not_run_here(self) -> String {
        match self.elsewhere() {
            Some(who) => format!("not run here ({who}'s job on this cluster)"),
            None => "not run here (nothing else does its job)".to_owned(),
        }
    }
}

/// A controller assumed not to run, and why that is no gap (or is).
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct NotRunHere {
    /// Its name.
    pub controller: String,
    /// "not run here (…)".
    pub why: String,
    /// What does its job there: `kube-controller-manager's namespace-controller`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub instead: Option<String>,
}

/// What `explain` and `plan` assumed of the controllers kube-gc runs.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Assumed {
    /// The controllers assumed to run, whose decisions the answer holds.
    pub running: Vec<String>,
    /// The controllers `--controllers` leaves out.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub not_run_here: Vec<NotRunHere>,
    /// Controllers `--controllers` enables whose decisions these commands cannot tell yet.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub unforeseen: Vec<String>,
}

impl Assumed {
    /// What `selection` makes of the controllers.
    pub fn of(selection: &ControllerSelection) -> Assumed {
        let (running, left_out): (Vec<Covered>, Vec<Covered>) = COVERED
            .into_iter()
            .partition(|c| selection.is_enabled(c.name()));
        Assumed {
            running: running.iter().map(|c| c.name().to_owned()).collect(),
            not_run_here: left_out
                .iter()
                .map(|c| NotRunHere {
                    controller: c.name().to_owned(),
                    why: c.not_run_here(),
                    instead: c.instead(),
                })
                .collect(),
            unforeseen: KNOWN_CONTROLLERS
                .into_iter()
                .filter(|name| selection.is_enabled(name))
                .filter(|name| !covered_names().any(|c| c == *name))
                .map(str::to_owned)
                .collect(),
        }
    }

    /// The assumption in lines for a terminal: the controllers assumed, then those not run
    /// here grouped by why, then those unforeseen.
    pub fn lines(&self, command: &str) -> Vec<String> {
        let mut lines = vec![format!(
            "Assuming kube-gc runs: {} (--controllers)",
            self.running.join(", ")
        )];
        let mut grouped: Vec<(&str, Vec<&str>)> = Vec::new();
        for left_out in &self.not_run_here {
            match grouped.iter_mut().find(|(why, _)| *why == left_out.why) {
                Some((_, names)) => names.push(&left_out.controller),
                None => grouped.push((&left_out.why, vec![&left_out.controller])),
            }
        }
        for (why, names) in grouped {
            lines.push(format!("{}: {why}", names.join(", ")));
        }
        if !self.unforeseen.is_empty() {
            lines.push(format!(
                "{}: enabled, but `kube-gc {command}` cannot tell its decisions yet",
                self.unforeseen.join(", ")
            ));
        }
        lines
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_covered_controller_is_one_run_knows_and_none_twice() {
        let names: Vec<&str> = covered_names().collect();
        for name in &names {
            assert!(
                KNOWN_CONTROLLERS.contains(name),
                "{name} is not a controller"
            );
            assert_eq!(names.iter().filter(|n| *n == name).count(), 1, "{name}");
        }
    }

    #[test]
    fn the_managed_overlay_is_told_what_kcm_does_instead() {
        let managed = ControllerSelection::parse(&["volcano-job-ttl", "retention"]).unwrap();
        let assumed = Assumed::of(&managed);
        assert_eq!(assumed.running, [VOLCANO_JOB_TTL, RETENTION]);
        assert_eq!(
            assumed.lines("plan"),
            [
                "Assuming kube-gc runs: volcano-job-ttl, retention (--controllers)",
                "ttl-after-finished, garbagecollector, namespace, podgc, pvc-protection, \
                 pv-protection: not run here (kube-controller-manager's job on this cluster)",
            ]
        );
        let namespace = &assumed.not_run_here[2];
        assert_eq!(
            namespace.instead.as_deref(),
            Some("kube-controller-manager's namespace-controller")
        );
        let everything = Assumed::of(&ControllerSelection::default());
        assert!(everything.not_run_here.is_empty() && everything.unforeseen.is_empty());
        let no_retention = Assumed::of(&ControllerSelection::parse(&["*", "-retention"]).unwrap());
        assert_eq!(
            no_retention.lines("explain")[1],
            "retention: not run here (nothing else does its job)"
        );
    }
}
