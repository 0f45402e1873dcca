//! The pod garbage collector's decision on one Pod, worded once for `kube-gc explain`,
//! `kube-gc plan` and `/debug/explain`: its own `judge` against what is known of the Pod's node,
//! when a missing node's quarantine ends, and where the Pod stands among the terminated Pods
//! above `--terminated-pod-gc-threshold` (its own `excess_terminated`).
//!
//! Contract: a Pod the rules leave alone on a `Ready` node, or never scheduled and not
//! terminating, is not governed; a terminated Pod is governed (the threshold counts it), and so
//! is a terminating Pod on a node that is not ready. A force deletion due now is `delete-now`; a
//! quarantine is `delete-at` its end — when the source does not know when kube-gc first saw the
//! node missing, at the latest: 40 s from now.

use chrono::{DateTime, Utc};

use crate::explain::gather::{Gathered, NodeLookup};
use crate::explain::{Decision, GracePeriod, VerdictKind};
use crate::selection::ControllerSelection;
use kube_gc_controllers::podgc::decide::{excess_terminated, judge, Keep, NodeView, QUARANTINE};
use kube_gc_controllers::podgc::facts::OUT_OF_SERVICE_TAINT;
use kube_gc_controllers::podgc::{PodFacts, Reason, Verdict, CONTROLLER};

use super::{decision, rfc3339};

/// Where a terminated Pod stands against the threshold.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Standing {
    /// Not terminated, or the rule is off: not counted.
    NotCounted,
    /// Among the surplus: the `position`-th (from 1) of `excess` to go, of `total` terminated.
    Excess {
        /// Its place in the order they go.
        position: usize,
        /// How many go.
        excess: usize,
        /// Terminated Pods counted.
        total: usize,
    },
    /// Kept: `total` terminated Pods, at most the threshold.
    Kept {
        /// Terminated Pods counted.
        total: usize,
    },
}

/// Where `pod` stands among `pods` (every Pod of the cluster) against `threshold`.
pub(crate) fn standing<'a>(
    pod: &PodFacts,
    pods: impl IntoIterator<Item = &'a PodFacts> + Clone,
    threshold: usize,
) -> Standing {
    if threshold == 0 || !pod.phase.is_terminated() {
        return Standing::NotCounted;
    }
    let total = pods
        .clone()
        .into_iter()
        .filter(|p| p.phase.is_terminated())
        .count();
    let going = excess_terminated(pods, threshold);
    match going.iter().position(|p| p.uid == pod.uid) {
        Some(i) => Standing::Excess {
            position: i + 1,
            excess: going.len(),
            total,
        },
        None => Standing::Kept { total },
    }
}

/// What the decision reads about one Pod.
pub(crate) struct PodGcFacts<'a> {
    /// The Pod.
    pub pod: &'a PodFacts,
    /// What is known of its node.
    pub node: NodeView<'a>,
    /// When kube-gc first saw that node missing, if the source knows.
    pub missing_since: Option<DateTime<Utc>>,
    /// Where it stands against the threshold.
    pub standing: Standing,
    /// `--terminated-pod-gc-threshold`.
    pub threshold: usize,
}

/// The pod garbage collector's decision on a Pod with these facts, at `now`.
pub(crate) fn decision_on(facts: &PodGcFacts<'_>, now: DateTime<Utc>) -> Decision {
    let pod = facts.pod;
    let node = &pod.node_name;
    let verdict = judge(pod, facts.node);
    if let Verdict::ForceDelete(reason) = verdict {
        let why = match reason {
            Reason::Unscheduled => "terminating and never scheduled: force-deleted".to_owned(),
            Reason::OutOfService => format!(
                "terminating on node {node}, not ready and tainted {OUT_OF_SERVICE_TAINT}: \
                 force-deleted once a read of the node confirms it"
            ),
            Reason::Orphaned => format!("node {node} is gone: force-deleted"),
            Reason::Terminated => "terminated, above the threshold: force-deleted".to_owned(),
        };
        return decision(CONTROLLER, true, VerdictKind::DeleteNow, why);
    }
    if let Standing::Excess {
        position,
        excess,
        total,
    } = facts.standing
    {
        let why = format!(
            "terminated, and {total} terminated Pods are above --terminated-pod-gc-threshold={}: \
             the {} of the {excess} to go (evicted first, then oldest first): force-deleted",
            facts.threshold,
            super::ordinal(position)
        );
        return decision(CONTROLLER, true, VerdictKind::DeleteNow, why);
    }
    if let Verdict::Quarantine { node } = &verdict {
        return quarantined(node, facts.missing_since, now);
    }
    let Verdict::Keep(keep) = verdict else {
        return decision(CONTROLLER, false, VerdictKind::Keep, String::new());
    };
    kept(keep, facts, node)
}

/// A Pod bound to a node the source does not know: deleted when the node's quarantine ends.
fn quarantined(node: &str, since: Option<DateTime<Utc>>, now: DateTime<Utc>) -> Decision {
    let quarantine = chrono::Duration::from_std(QUARANTINE).unwrap_or_default();
    let (at, when) = match since {
        Some(since) => (
            since + quarantine,
            format!("missing since {}", rfc3339(since)),
        ),
        None => (
            now + quarantine,
            "at the latest 40 s from now: a running kube-gc may have started counting earlier"
                .to_owned(),
        ),
    };
    let mut d = if at <= now {
        let why = format!(
            "bound to node {node}, which does not exist: its quarantine is over; force-deleted \
             once a read of the node confirms it is gone"
        );
        decision(CONTROLLER, true, VerdictKind::DeleteNow, why)
    } else {
        let why = format!(
            "bound to node {node}, which does not exist: force-deleted when its 40 s quarantine \
             ends, if a read of the node then confirms it is gone"
        );
        let mut d = decision(CONTROLLER, true, VerdictKind::DeleteAt, why);
        d.delete_at = Some(rfc3339(at));
        d
    };
    d.details.push(format!("the node's quarantine: {when}"));
    d
}

/// What a Pod the rules keep is kept for.
fn kept(keep: Keep, facts: &PodGcFacts<'_>, node: &str) -> Decision {
    let pod = facts.pod;
    let threshold = match facts.standing {
        Standing::Kept { total } => Some(format!(
            "terminated: {total} terminated Pods, --terminated-pod-gc-threshold={} keeps them",
            facts.threshold
        )),
        Standing::NotCounted | Standing::Excess { .. } => None,
    };
    let (governs, why) = match keep {
        Keep::NotScheduled => (
            false,
            "does not apply: never scheduled and not terminating (the scheduler's)".to_owned(),
        ),
        Keep::NodeReady => (
            false,
            format!("does not apply: on node {node}, which is Ready (never force-deleted there)"),
        ),
        Keep::NodeNotOutOfService if pod.deleting => (
            true,
            format!(
                "kept: terminating on node {node}, which is not ready; force-deleted only once the \
                 node is tainted {OUT_OF_SERVICE_TAINT}"
            ),
        ),
        Keep::NodeNotOutOfService => (
            false,
            format!("does not apply: running on node {node}, which is not ready (its kubelet or the node lifecycle controller decides)"),
        ),
    };
    match threshold {
        Some(line) => {
            let mut d = decision(CONTROLLER, true, VerdictKind::Keep, line);
            if governs {
                d.details.push(why);
            }
            d
        }
        None => decision(CONTROLLER, governs, VerdictKind::Keep, why),
    }
}

/// The pod garbage collector's decision on what `gathered` holds (a Pod, or anything else).
pub(crate) fn from_gathered(gathered: &Gathered, now: DateTime<Utc>) -> Decision {
    let Some(context) = &gathered.pod else {
        return not_a_pod();
    };
    let threshold = gathered.settings.terminated_pod_gc_threshold;
    let node = match &context.node {
        NodeLookup::Found(node) => NodeView::Present(node),
        NodeLookup::Missing | NodeLookup::NotScheduled => NodeView::Missing,
    };
    let standing = match &context.all {
        Some(all) => standing(&context.facts, all, threshold),
        None => Standing::NotCounted,
    };
    decision_on(
        &PodGcFacts {
            pod: &context.facts,
            node,
            missing_since: None,
            standing,
            threshold,
        },
        now,
    )
}

/// What removes `pod` once it is terminating, by the collector's rules on its node (`None`: the
/// node was not read), with the controllers `running` here.
pub(crate) fn fate(
    pod: &PodFacts,
    node: Option<NodeView<'_>>,
    running: &ControllerSelection,
) -> String {
    let name = &pod.node_name;
    let Some(view) = node else {
        return format!(
            "its kubelet on node {name} removes it once its containers have stopped (the node is not known here)"
        );
    };
    let podgc = if running.is_enabled(CONTROLLER) {
        "kube-gc's podgc".to_owned()
    } else {
        "kube-controller-manager's pod-garbage-collector-controller (kube-gc's podgc is not run here)"
            .to_owned()
    };
    let mut terminating = pod.clone();
    terminating.deleting = true;
    match judge(&terminating, view) {
        Verdict::ForceDelete(Reason::Unscheduled) => {
            format!("never scheduled: {podgc} force-deletes it")
        }
        Verdict::Quarantine { .. } | Verdict::ForceDelete(Reason::Orphaned) => {
            format!("node {name} does not exist: {podgc} force-deletes it after a 40 s quarantine")
        }
        Verdict::ForceDelete(_) => format!(
            "node {name} is not ready and tainted {OUT_OF_SERVICE_TAINT}: {podgc} force-deletes it"
        ),
        Verdict::Keep(Keep::NodeReady) => {
            format!("its kubelet on node {name} removes it once its containers have stopped")
        }
        Verdict::Keep(Keep::NodeNotOutOfService | Keep::NotScheduled) => format!(
            "node {name} is not ready: nothing removes it until its kubelet is back, or the node \
             is tainted {OUT_OF_SERVICE_TAINT} (then {podgc} force-deletes it)"
        ),
    }
}

/// The grace period of a Pod being deleted gracefully (`deletionGracePeriodSeconds` > 0: the
/// server set `deletionTimestamp` to when it ends), and what removes it then.
pub(crate) fn grace_period(
    gathered: &Gathered,
    running: &ControllerSelection,
) -> Option<GracePeriod> {
    let context = gathered.pod.as_ref()?;
    let meta = gathered.meta();
    let ends = meta.deletion_timestamp?.0;
    let seconds = meta.deletion_grace_period_seconds.filter(|s| *s > 0)?;
    let node = match &context.node {
        NodeLookup::Found(node) => Some(NodeView::Present(node)),
        NodeLookup::Missing | NodeLookup::NotScheduled => Some(NodeView::Missing),
    };
    Some(GracePeriod {
        seconds,
        ends_at: rfc3339(ends),
        removed_by: fate(&context.facts, node, running),
    })
}

/// The decision on an object that is not a Pod.
pub(crate) fn not_a_pod() -> Decision {
    decision(
        CONTROLLER,
        false,
        VerdictKind::Keep,
        "does not apply: only Pods".to_owned(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use kube_gc_controllers::podgc::{NodeFacts, PodPhase};
    use kube_gc_runtime::cache::ObjectKey;

    fn at(seconds: i64) -> DateTime<Utc> {
        DateTime::from_timestamp(1_800_000_000 + seconds, 0).unwrap_or_default()
    }

    fn pod(name: &str, node: &str, phase: PodPhase) -> PodFacts {
        PodFacts {
            key: ObjectKey::new("ns", name),
            uid: format!("uid-{name}"),
            resource_version: "1".into(),
            created: Some(at(0)),
            deleting: false,
            node_name: node.into(),
            phase,
            evicted: false,
            disruption_target: None,
            removed_by_server: None,
        }
    }

    fn facts<'a>(pod: &'a PodFacts, node: NodeView<'a>, standing: Standing) -> PodGcFacts<'a> {
        PodGcFacts {
            pod,
            node,
            missing_since: None,
            standing,
            threshold: 2,
        }
    }

    #[test]
    fn a_pod_of_a_missing_node_goes_when_its_quarantine_ends() {
        let bound = pod("p", "gone", PodPhase::Running);
        let mut f = facts(&bound, NodeView::Missing, Standing::NotCounted);
        let d = decision_on(&f, at(0));
        assert_eq!(d.verdict, VerdictKind::DeleteAt);
        assert_eq!(d.delete_at, Some(rfc3339(at(40))));
        f.missing_since = Some(at(-30));
        assert_eq!(decision_on(&f, at(0)).delete_at, Some(rfc3339(at(10))));
        assert_eq!(decision_on(&f, at(10)).verdict, VerdictKind::DeleteNow);
    }

    #[test]
    fn terminated_pods_above_the_threshold_go_oldest_first_and_the_rest_are_counted() {
        let mut pods: Vec<PodFacts> = (0..3)
            .map(|i| {
                let mut p = pod(&format!("done-{i}"), "n", PodPhase::Succeeded);
                p.created = Some(at(i));
                p
            })
            .collect();
        pods.push(pod("running", "n", PodPhase::Running));
        assert_eq!(
            standing(&pods[0], &pods, 2),
            Standing::Excess {
                position: 1,
                excess: 1,
                total: 3
            }
        );
        assert_eq!(standing(&pods[2], &pods, 2), Standing::Kept { total: 3 });
        assert_eq!(standing(&pods[3], &pods, 2), Standing::NotCounted);
        assert_eq!(standing(&pods[0], &pods, 0), Standing::NotCounted);
        let ready = NodeFacts {
            name: "n".into(),
            uid: "u".into(),
            resource_version: "1".into(),
            ready: true,
            out_of_service: false,
        };
        let oldest = standing(&pods[0], &pods, 2);
        let d = decision_on(&facts(&pods[0], NodeView::Present(&ready), oldest), at(0));
        assert_eq!(d.verdict, VerdictKind::DeleteNow, "{d:?}");
        assert!(d.summary.contains("the 1st of the 1 to go"), "{d:?}");
        let newest = standing(&pods[2], &pods, 2);
        let d = decision_on(&facts(&pods[2], NodeView::Present(&ready), newest), at(0));
        assert_eq!((d.governs, d.verdict), (true, VerdictKind::Keep), "{d:?}");
        let running = decision_on(
            &facts(&pods[3], NodeView::Present(&ready), Standing::NotCounted),
            at(0),
        );
        assert!(!running.governs, "{running:?}");
    }
}
