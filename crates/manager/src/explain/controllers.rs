//! The controllers `kube-gc explain` and `kube-gc plan` speak for: one [`Covered`] entry each —
//! its name as `--controllers` spells it, who does its job where kube-gc does not run it, its
//! decision on one object (`explain`) and its deletions to come (`plan`).
//!
//! Contract:
//! - A controller joins `explain`, `plan` and `/debug/explain` with one entry in [`COVERED`];
//!   the entries' order is the order of `explain`'s "Who decides" and of `plan`'s reads.
//! - Both commands take `run`'s `--controllers` ([`ControllerSelection`]) and assume what it
//!   says: a controller it leaves out decides nothing and deletes nothing in their answers. It
//!   is said to be *not run here*, with who does its job instead where someone does
//!   ("kube-controller-manager's job on this cluster", under the managed overlay), and `explain`
//!   tells what it would decide were it run. A controller `--controllers` enables but no entry
//!   covers yet is said to be unforeseen, never silently left out.
//! - [`Assumed`] is what both commands print about it, as lines and as data.

use chrono::{DateTime, Utc};
use futures_util::future::BoxFuture;
use serde::Serialize;

use crate::manager::selection::{
    ControllerSelection, GARBAGE_COLLECTOR, KNOWN_CONTROLLERS, NAMESPACE, PODGC, PVC_PROTECTION,
    PV_PROTECTION, RETENTION, TTL_AFTER_FINISHED, VOLCANO_JOB_TTL,
};
use kube_gc_api::ObjectMeta;
use kube_gc_controllers::ttl::{BatchJob, VolcanoJobs};

use super::decide::{
    claim_from_gathered, gc_from_gathered, not_its_kind, podgc_from_gathered,
    retention_from_gathered, ttl_from_gathered, volume_from_gathered,
};
use super::gather::{GatherError, Gathered};
use super::namespace::namespace_decision;
use super::plan::{
    claim_rows, namespace_rows, orphan_rows, pod_rows, retention_rows, ttl_rows, volume_rows,
    Findings, PlanContext,
};
use super::Decision;

/// A controller's decision on the object gathered, at a time.
pub(crate) type Decide = fn(&Gathered, &ObjectMeta, DateTime<Utc>) -> Decision;

/// A controller's deletions to come (and what it keeps for a problem), added to the findings.
pub(crate) type PlanRows =
    for<'a> fn(&'a PlanContext<'a>, &'a mut Findings) -> BoxFuture<'a, Result<(), GatherError>>;

/// One controller, as `explain` and `plan` know it.
pub(crate) struct Covered {
    /// Its name, as `--controllers` spells it.
    pub name: &'static str,
    /// Who does its job on a cluster where kube-gc does not run it; `None`: nobody.
    pub elsewhere: Option<&'static str>,
    /// The name of the controller that does its job there (kube-controller-manager's
    /// `--controllers` name), when it has one.
    pub upstream: Option<&'static str>,
    /// Its decision on one object.
    pub decide: Decide,
    /// Its deletions to come.
    pub plan: PlanRows,
}

/// Every controller `explain` and `plan` speak for, in the order they are asked. A new
/// controller is one more entry here (a slice, so nothing else changes).
pub(crate) const COVERED: &[Covered] = &[
    Covered {
        name: TTL_AFTER_FINISHED,
        elsewhere: Some("kube-controller-manager"),
        upstream: Some("ttl-after-finished-controller"),
        decide: |gathered, _meta, now| ttl_from_gathered::<BatchJob>(gathered, now),
        plan: |cx, found| Box::pin(ttl_rows::<BatchJob>(cx, found)),
    },
    Covered {
        name: VOLCANO_JOB_TTL,
        elsewhere: Some("Volcano's controller manager"),
        upstream: Some("garbagecollector"),
        decide: |gathered, _meta, now| ttl_from_gathered::<VolcanoJobs>(gathered, now),
        plan: |cx, found| Box::pin(ttl_rows::<VolcanoJobs>(cx, found)),
    },
    Covered {
        name: RETENTION,
        elsewhere: None,
        upstream: None,
        decide: retention_from_gathered,
        plan: |cx, found| Box::pin(retention_rows(cx, found)),
    },
    Covered {
        name: GARBAGE_COLLECTOR,
        elsewhere: Some("kube-controller-manager"),
        upstream: Some("garbage-collector-controller"),
        decide: |gathered, meta, _now| gc_from_gathered(gathered, meta),
        plan: |cx, found| Box::pin(orphan_rows(cx, found)),
    },
    Covered {
        name: NAMESPACE,
        elsewhere: Some("kube-controller-manager"),
        upstream: Some("namespace-controller"),
        decide: |gathered, _meta, now| match &gathered.namespace {
            Some(facts) => namespace_decision(facts, &gathered.settings, now),
            None => not_its_kind(NAMESPACE, "Namespace"),
        },
        plan: |cx, found| Box::pin(namespace_rows(cx, found)),
    },
    Covered {
        name: PODGC,
        elsewhere: Some("kube-controller-manager"),
        upstream: Some("pod-garbage-collector-controller"),
        decide: |gathered, _meta, now| podgc_from_gathered(gathered, now),
        plan: |cx, found| Box::pin(pod_rows(cx, found)),
    },
    Covered {
        name: PVC_PROTECTION,
        elsewhere: Some("kube-controller-manager"),
        upstream: Some("pvc-protection"),
        decide: |gathered, _meta, _now| claim_from_gathered(gathered),
        plan: |cx, found| Box::pin(claim_rows(cx, found)),
    },
    Covered {
        name: PV_PROTECTION,
        elsewhere: Some("kube-controller-manager"),
        upstream: Some("pv-protection"),
        decide: |gathered, _meta, _now| volume_from_gathered(gathered),
        plan: |cx, found| Box::pin(volume_rows(cx, found)),
    },
];

/// The covered controllers' names, in order.
pub(crate) fn covered_names() -> impl Iterator<Item = &'static str> {
    COVERED.iter().map(|c| c.name)
}

impl Covered {
    /// What does its job where kube-gc does not run it: `kube-controller-manager's
    /// namespace-controller`.
    pub(crate) fn instead(&self) -> Option<String> {
        match (self.elsewhere, self.upstream) {
            (Some(who), Some(name)) => Some(format!("{who}'s {name}")),
            (Some(who), None) => Some(who.to_owned()),
            (None, _) => None,
        }
    }

    /// "not run here (kube-controller-manager's job on this cluster)".
    pub(crate) fn not_run_here(&self) -> String {
        match self.elsewhere {
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
        let (running, left_out): (Vec<&Covered>, Vec<&Covered>) =
            COVERED.iter().partition(|c| selection.is_enabled(c.name));
        Assumed {
            running: running.iter().map(|c| c.name.to_owned()).collect(),
            not_run_here: left_out
                .iter()
                .map(|c| NotRunHere {
                    controller: c.name.to_owned(),
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
