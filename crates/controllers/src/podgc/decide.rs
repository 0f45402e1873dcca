//! The pod garbage collector's rules, as pure functions: which Pods it force-deletes and why,
//! which it quarantines and until when, which terminated Pods are above the threshold and in
//! what order. The controller, and `kube-gc explain` / `plan`, act on these and nothing else.
//!
//! Contract (kube-controller-manager v1.28's `pkg/controller/podgc`, with the differences said):
//! - [`judge`]: a Pod never scheduled that is terminating is force-deleted
//!   ([`Reason::Unscheduled`]). A Pod bound to a node absent from the cache is quarantined
//!   ([`Verdict::Quarantine`]); once the quarantine is over and a read of the node confirmed it
//!   gone, it is force-deleted ([`Reason::Orphaned`]). A terminating Pod on a node that is not
//!   `Ready` and is tainted `node.kubernetes.io/out-of-service` is force-deleted
//!   ([`Reason::OutOfService`]). Anything else is kept: in particular **a Pod on a `Ready`
//!   node is never force-deleted by these rules**.
//! - [`quarantine_left`]: a node missing since `since` is read again [`QUARANTINE`] (40 s)
//!   later, not before.
//! - [`excess_terminated`]: with `threshold` > 0 and more terminated Pods than that, the
//!   surplus goes, evicted Pods first, then oldest first (creation time, then name, then
//!   namespace). Terminated means phase `Succeeded` or `Failed`; upstream also counts any
//!   phase it does not know (an empty one included), which kube-gc keeps.
//! - [`FailedStatus`]: what a force deletion writes first: phase `Failed` unless the Pod
//!   already terminated, and for an orphan the `DisruptionTarget` condition (feature gate
//!   `PodDisruptionConditions`, on by default in v1.28; `JobPodReplacementPolicy` is alpha and
//!   off, and adds nothing that gate does not).

use std::cmp::Ordering;
use std::time::Duration;

use chrono::{DateTime, Utc};

use super::facts::{NodeFacts, PodFacts};

/// How long a node missing from the cache is given to show up before it is read (upstream's
/// `quarantineTime`; [`PodGcOptions::quarantine`](super::PodGcOptions::quarantine)'s default).
pub const QUARANTINE: Duration = Duration::from_secs(40);

/// How long a Pod the server is removing by itself ([`PodFacts::removed_by_server`]) is left
/// to it: counted from its `deletionTimestamp` (whole seconds), far longer than the one
/// revision between the two events of its removal; a Pod still there after it was not removed
/// (the server failed between its two writes) and is judged as any other.
pub const SERVER_REMOVAL: Duration = Duration::from_secs(5);

/// `--terminated-pod-gc-threshold`'s default.
pub const DEFAULT_TERMINATED_POD_THRESHOLD: usize = 12_500;

/// Why a Pod is force-deleted; the `reason` label of the metrics, as upstream spells it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Reason {
    /// Terminated, and among the oldest above `--terminated-pod-gc-threshold`.
    Terminated,
    /// Terminating on a node that is not ready and is tainted out-of-service.
    OutOfService,
    /// Bound to a node that does not exist.
    Orphaned,
    /// Terminating and never scheduled.
    Unscheduled,
}

impl Reason {
    /// The metrics' `reason` label.
    pub fn label(self) -> &'static str {
        match self {
            Reason::Terminated => "terminated",
            Reason::OutOfService => "out-of-service",
            Reason::Orphaned => "orphaned",
            Reason::Unscheduled => "unscheduled",
        }
    }
}

/// What is known of the node a Pod is bound to.
#[derive(Clone, Copy, Debug)]
pub enum NodeView<'a> {
    /// In the cache.
    Present(&'a NodeFacts),
    /// Not in the cache (yet?).
    Missing,
    /// Read from the server after its quarantine, and not found.
    ConfirmedGone,
}

/// Why a Pod is kept.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Keep {
    /// Never scheduled, and not terminating: the scheduler's business.
    NotScheduled,
    /// On a node that is `Ready`.
    NodeReady,
    /// On a node that is not ready, but not terminating, or the node is not tainted
    /// out-of-service: its kubelet (or the node lifecycle controller) decides.
    NodeNotOutOfService,
}

/// What the rules make of one Pod.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Verdict {
    /// Left alone.
    Keep(Keep),
    /// Bound to a node absent from the cache: wait out the quarantine, then read the node.
    Quarantine {
        /// The missing node.
        node: String,
    },
    /// Force-deleted, for this reason.
    ForceDelete(Reason),
}

/// The rules for one Pod (module documentation); `node` is what is known of the node it is
/// bound to (ignored for a Pod never scheduled).
pub fn judge(pod: &PodFacts, node: NodeView<'_>) -> Verdict {
    if !pod.is_scheduled() {
        return if pod.deleting {
            Verdict::ForceDelete(Reason::Unscheduled)
        } else {
            Verdict::Keep(Keep::NotScheduled)
        };
    }
    match node {
        NodeView::Missing => Verdict::Quarantine {
            node: pod.node_name.clone(),
        },
        NodeView::ConfirmedGone => Verdict::ForceDelete(Reason::Orphaned),
        NodeView::Present(node) if node.ready => Verdict::Keep(Keep::NodeReady),
        NodeView::Present(node) if pod.deleting && node.out_of_service => {
            Verdict::ForceDelete(Reason::OutOfService)
        }
        NodeView::Present(_) => Verdict::Keep(Keep::NodeNotOutOfService),
    }
}

/// How much longer a node missing since `since` stays in a `quarantine` that long at `now`;
/// `None` once it is over.
pub fn quarantine_left(
    since: DateTime<Utc>,
    now: DateTime<Utc>,
    quarantine: Duration,
) -> Option<Duration> {
    let over = since + quarantine;
    (over - now).to_std().ok().filter(|left| !left.is_zero())
}

/// How much longer `pod` is left to the server that is removing it at `now` (see
/// [`SERVER_REMOVAL`]); `None` when it is not being removed so, or no longer is.
pub fn left_to_server(pod: &PodFacts, now: DateTime<Utc>) -> Option<Duration> {
    let marked = pod.removed_by_server?;
    let over = marked + SERVER_REMOVAL;
    (over - now).to_std().ok().filter(|left| !left.is_zero())
}

/// The terminated Pods above `threshold`, in the order they go (module documentation); none
/// when `threshold` is 0 (the rule is off).
pub fn excess_terminated<'a>(
    pods: impl IntoIterator<Item = &'a PodFacts>,
    threshold: usize,
) -> Vec<&'a PodFacts> {
    if threshold == 0 {
        return Vec::new();
    }
    let mut terminated: Vec<&PodFacts> = pods
        .into_iter()
        .filter(|pod| pod.phase.is_terminated())
        .collect();
    let Some(excess) = terminated.len().checked_sub(threshold).filter(|n| *n > 0) else {
        return Vec::new();
    };
    terminated.sort_by(|a, b| deletion_order(a, b));
    terminated.truncate(excess);
    terminated
}

/// Evicted first, then by creation time (a Pod without one first), name, namespace.
fn deletion_order(a: &PodFacts, b: &PodFacts) -> Ordering {
    b.evicted
        .cmp(&a.evicted)
        .then_with(|| a.created.cmp(&b.created))
        .then_with(|| a.key.name().cmp(b.key.name()))
        .then_with(|| a.key.namespace().cmp(&b.key.namespace()))
}

/// What a force deletion writes to the Pod's status before deleting it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FailedStatus {
    /// Whether to add (or keep) the `DisruptionTarget` condition.
    pub disruption_target: bool,
    /// Whether the condition changes status, so that its `lastTransitionTime` is now (else
    /// the one it has is kept).
    pub transition: bool,
}

/// What the status write before a force deletion for `reason` is; `None` when there is none:
/// the Pod already terminated, so its phase stays.
pub fn failed_status(pod: &PodFacts, reason: Reason) -> Option<FailedStatus> {
    if pod.phase.is_terminated() {
        return None;
    }
    let disruption_target = reason == Reason::Orphaned;
    Some(FailedStatus {
        disruption_target,
        transition: disruption_target && pod.disruption_target != Some(true),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::podgc::facts::PodPhase;
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
            removed_by_server: None,
            node_name: node.into(),
            phase,
            evicted: false,
            disruption_target: None,
        }
    }

    fn deleting(mut pod: PodFacts) -> PodFacts {
        pod.deleting = true;
        pod
    }

    fn node(ready: bool, out_of_service: bool) -> NodeFacts {
        NodeFacts {
            name: "n".into(),
            uid: "uid-n".into(),
            resource_version: "1".into(),
            ready,
            out_of_service,
        }
    }

    #[test]
    fn a_pod_on_a_ready_node_is_never_force_deleted() {
        let tainted_ready = node(true, true);
        for phase in [PodPhase::Running, PodPhase::Pending, PodPhase::Unknown] {
            for pod in [pod("p", "n", phase), deleting(pod("p", "n", phase))] {
                let verdict = judge(&pod, NodeView::Present(&tainted_ready));
                assert_eq!(verdict, Verdict::Keep(Keep::NodeReady), "{pod:?}");
            }
        }
    }

    #[test]
    fn terminating_pods_on_a_shut_down_node_go_only_when_it_is_tainted_out_of_service() {
        let running = pod("p", "n", PodPhase::Running);
        let shut_down = node(false, true);
        let keep = Verdict::Keep(Keep::NodeNotOutOfService);
        assert_eq!(judge(&running, NodeView::Present(&shut_down)), keep);
        let terminating = deleting(running);
        assert_eq!(
            judge(&terminating, NodeView::Present(&node(false, false))),
            keep
        );
        assert_eq!(
            judge(&terminating, NodeView::Present(&shut_down)),
            Verdict::ForceDelete(Reason::OutOfService)
        );
    }

    #[test]
    fn pods_of_a_missing_node_are_quarantined_then_orphaned_once_it_is_confirmed_gone() {
        let bound = pod("p", "gone", PodPhase::Running);
        assert_eq!(
            judge(&bound, NodeView::Missing),
            Verdict::Quarantine {
                node: "gone".into()
            }
        );
        assert_eq!(
            judge(&bound, NodeView::ConfirmedGone),
            Verdict::ForceDelete(Reason::Orphaned)
        );
        // Terminated ones too, as upstream.
        let done = pod("d", "gone", PodPhase::Succeeded);
        assert_eq!(
            judge(&done, NodeView::ConfirmedGone),
            Verdict::ForceDelete(Reason::Orphaned)
        );
    }

    #[test]
    fn unscheduled_pods_go_only_when_terminating() {
        let waiting = pod("p", "", PodPhase::Pending);
        assert_eq!(
            judge(&waiting, NodeView::Missing),
            Verdict::Keep(Keep::NotScheduled)
        );
        assert_eq!(
            judge(&deleting(waiting), NodeView::Missing),
            Verdict::ForceDelete(Reason::Unscheduled)
        );
    }

    #[test]
    fn a_pod_the_server_removes_by_itself_is_left_to_it_for_five_seconds_from_its_mark() {
        let mut leaving = deleting(pod("p", "", PodPhase::Pending));
        assert_eq!(
            left_to_server(&leaving, at(0)),
            None,
            "not leaving by itself"
        );
        leaving.removed_by_server = Some(at(10));
        assert_eq!(left_to_server(&leaving, at(10)), Some(SERVER_REMOVAL));
        assert_eq!(
            left_to_server(&leaving, at(13)),
            Some(Duration::from_secs(2))
        );
        assert_eq!(
            left_to_server(&leaving, at(15)),
            None,
            "stuck: judged again"
        );
        // The rules alone would force-delete it (terminating, never scheduled).
        assert_eq!(
            judge(&leaving, NodeView::Missing),
            Verdict::ForceDelete(Reason::Unscheduled)
        );
    }

    #[test]
    fn the_quarantine_lasts_forty_seconds_from_when_the_node_went_missing() {
        assert_eq!(quarantine_left(at(0), at(0), QUARANTINE), Some(QUARANTINE));
        assert_eq!(
            quarantine_left(at(0), at(39), QUARANTINE),
            Some(Duration::from_secs(1))
        );
        assert_eq!(quarantine_left(at(0), at(40), QUARANTINE), None);
        assert_eq!(quarantine_left(at(0), at(400), QUARANTINE), None);
        // A shorter one (the demo's) ends sooner, counted the same way.
        let short = Duration::from_secs(2);
        assert_eq!(
            quarantine_left(at(0), at(1), short),
            Some(Duration::from_secs(1))
        );
        assert_eq!(quarantine_left(at(0), at(2), short), None);
    }

    #[test]
    fn the_surplus_of_terminated_pods_goes_evicted_first_then_oldest_first() {
        let mut pods = Vec::new();
        for (i, name) in ["e", "d", "c", "b", "a"].iter().enumerate() {
            let mut done = pod(name, "n", PodPhase::Succeeded);
            done.created = Some(at(i as i64));
            pods.push(done);
        }
        let mut evicted = pod("z-evicted", "n", PodPhase::Failed);
        evicted.evicted = true;
        evicted.created = Some(at(100));
        pods.push(evicted);
        pods.push(pod("running", "n", PodPhase::Running));
        let mut twin = pod("d", "n", PodPhase::Failed);
        twin.key = ObjectKey::new("another", "d");
        twin.created = Some(at(1));
        pods.push(twin);
        let names = |threshold| -> Vec<String> {
            excess_terminated(&pods, threshold)
                .iter()
                .map(|p| p.key.to_string())
                .collect()
        };
        // 7 terminated: 3 above a threshold of 4.
        assert_eq!(names(4), ["ns/z-evicted", "ns/e", "another/d"]);
        assert_eq!(names(6), ["ns/z-evicted"]);
        assert!(names(7).is_empty());
        assert!(names(0).is_empty(), "0 turns the rule off");
    }

    #[test]
    fn unknown_phases_are_not_terminated() {
        let odd = pod("odd", "n", PodPhase::Other);
        assert!(excess_terminated([&odd], 1).is_empty());
        assert!(excess_terminated([&odd, &odd], 1).is_empty());
    }

    #[test]
    fn the_status_written_before_a_force_deletion() {
        let running = pod("p", "gone", PodPhase::Running);
        let orphan = FailedStatus {
            disruption_target: true,
            transition: true,
        };
        assert_eq!(failed_status(&running, Reason::Orphaned), Some(orphan));
        let mut marked = running.clone();
        marked.disruption_target = Some(true);
        assert_eq!(
            failed_status(&marked, Reason::Orphaned).map(|s| s.transition),
            Some(false)
        );
        let plain = FailedStatus {
            disruption_target: false,
            transition: false,
        };
        assert_eq!(failed_status(&running, Reason::Unscheduled), Some(plain));
        let done = pod("d", "gone", PodPhase::Failed);
        assert_eq!(failed_status(&done, Reason::Orphaned), None);
    }
}
