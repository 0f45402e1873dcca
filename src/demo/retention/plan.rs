//! The retention scene's plan: its objects, when each finished or finishes, and the fate the
//! two policies' rules give it — deterministic for a size and seed.

use std::collections::HashMap;
use std::time::Duration;

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

use crate::sim::Gvr;

use super::{
    EXTENDED_TTL, FAILED_LIMIT, MALFORMED_TTL, NAMESPACE, PODS_NAMESPACE, POD_TTL, SUCCESSFUL_LIMIT,
};

/// Which kind an object of the scene is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum SceneKind {
    /// v1 Pod.
    Pod,
    /// tekton.dev/v1 PipelineRun.
    PipelineRun,
}

impl SceneKind {
    /// The kind's name in the summary.
    pub fn as_str(self) -> &'static str {
        match self {
            SceneKind::Pod => "Pod",
            SceneKind::PipelineRun => "PipelineRun",
        }
    }

    pub(super) fn gvr(self) -> Gvr {
        match self {
            SceneKind::Pod => Gvr::new("", "v1", "pods"),
            SceneKind::PipelineRun => Gvr::new("tekton.dev", "v1", "pipelineruns"),
        }
    }

    pub(super) fn namespace(self) -> &'static str {
        match self {
            SceneKind::Pod => PODS_NAMESPACE,
            SceneKind::PipelineRun => NAMESPACE,
        }
    }
}

/// How an object finished.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Outcome {
    /// Pod phase `Succeeded`; PipelineRun `Succeeded=True`.
    Succeeded,
    /// Pod phase `Failed`; PipelineRun `Succeeded=False`.
    Failed,
}

/// What the retention controller should have done to an object by the end.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Fate {
    /// Deleted once its TTL ran out.
    Ttl,
    /// Deleted as over its group's history limit — not before the run at this index (in the
    /// plan) finished, if a run finishing during the demo is what pushed it over.
    History {
        /// The run that pushed it over the limit, if not over it from the start.
        displaced_by: Option<usize>,
    },
    /// Left alone.
    Kept,
}

/// One object of the scene.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Item {
    /// Its kind (and so its namespace).
    pub kind: SceneKind,
    /// Its name.
    pub name: String,
    /// Its category, for the summary (a PipelineRun's: its Pipeline).
    pub category: &'static str,
    /// Finished this long before the demo starts.
    pub finished_before: Option<(Duration, Outcome)>,
    /// Finishes this long after the start.
    pub finishes: Option<(Duration, Outcome)>,
    /// Its `kube-gc.io/ttl` annotation.
    pub ttl_annotation: Option<&'static str>,
    /// Its expected fate.
    pub fate: Fate,
}

impl Item {
    pub(super) fn path(&self) -> String {
        let gvr = self.kind.gvr();
        let prefix = if gvr.group.is_empty() {
            format!("/api/{}", gvr.version)
        } else {
            format!("/apis/{}/{}", gvr.group, gvr.version)
        };
        format!(
            "{prefix}/namespaces/{}/{}/{}",
            self.kind.namespace(),
            gvr.resource,
            self.name
        )
    }

    pub(super) fn outcome(&self) -> Option<Outcome> {
        self.finished_before
            .or(self.finishes)
            .map(|(_, outcome)| outcome)
    }
}

fn item(kind: SceneKind, name: String, category: &'static str) -> Item {
    Item {
        kind,
        name,
        category,
        finished_before: None,
        finishes: None,
        ttl_annotation: None,
        fate: Fate::Kept,
    }
}

/// The scene for `pods` standalone Pods finishing within `spread`, from `seed`.
pub fn plan(pods: usize, spread: Duration, seed: u64) -> Vec<Item> {
    let mut rng = StdRng::seed_from_u64(seed ^ 0x5e7e_0017);
    let millis = u64::try_from(spread.as_millis()).unwrap_or(u64::MAX).max(1);
    let mut items = Vec::new();
    let part = |percent: usize| (pods * percent / 100).max(1);
    let ago = Duration::from_secs(600);
    let mut add_pods = |category: &'static str, count: usize, shape: &mut dyn FnMut(&mut Item)| {
        for i in 0..count {
            let mut pod = item(SceneKind::Pod, format!("pod-{category}-{i:03}"), category);
            shape(&mut pod);
            items.push(pod);
        }
    };
    add_pods("backlog", part(10), &mut |p| {
        p.finished_before = Some((ago, Outcome::Succeeded));
        p.fate = Fate::Ttl;
    });
    for (category, outcome, percent) in [
        ("succeeds", Outcome::Succeeded, 35),
        ("fails", Outcome::Failed, 15),
    ] {
        add_pods(category, part(percent), &mut |p| {
            p.finishes = Some((Duration::from_millis(rng.random_range(0..millis)), outcome));
            p.fate = Fate::Ttl;
        });
    }
    add_pods("running", part(40), &mut |_| {});
    add_pods("ttl-extended", 1, &mut |p| {
        p.finished_before = Some((ago, Outcome::Succeeded));
        p.ttl_annotation = Some(EXTENDED_TTL);
    });
    add_pods("bad-annotation", 1, &mut |p| {
        p.finished_before = Some((ago, Outcome::Failed));
        p.ttl_annotation = Some(MALFORMED_TTL);
    });

    let minutes = |m: u64| Some(Duration::from_secs(m * 60));
    let (s, f) = (Outcome::Succeeded, Outcome::Failed);
    let during = |fraction: f64| Some(spread.mul_f64(fraction));
    let runs: [(&'static str, &[RunShape]); 3] = [
        (
            "build",
            &[
                (minutes(60), None, s),
                (minutes(50), None, f),
                (minutes(40), None, s),
                (minutes(30), None, s),
                (minutes(25), None, f),
                (minutes(20), None, s),
                (minutes(10), None, s),
                (None, during(0.5), s),
                (None, None, s), // running throughout
            ],
        ),
        (
            "deploy",
            &[
                (minutes(55), None, s),
                (minutes(45), None, s),
                (minutes(35), None, f),
                (minutes(15), None, f),
                (minutes(5), None, s),
                (None, during(0.75), f),
            ],
        ),
        ("no-pipeline", &[(minutes(60), None, s)]),
    ];
    for (pipeline, shapes) in runs {
        for (i, &(before, at, outcome)) in shapes.iter().enumerate() {
            let mut run = item(
                SceneKind::PipelineRun,
                format!("{pipeline}-run-{:02}", i + 1),
                pipeline,
            );
            run.finished_before = before.map(|b| (b, outcome));
            run.finishes = at.map(|a| (a, outcome));
            items.push(run);
        }
    }
    apply_history_limits(&mut items);
    items
}

/// A PipelineRun: finished this long before the start, or finishing this long after it (or
/// neither: running throughout), and how.
type RunShape = (Option<Duration>, Option<Duration>, Outcome);

/// Sets the fate of every PipelineRun of a Pipeline beyond its history limit.
fn apply_history_limits(items: &mut [Item]) {
    // Per (Pipeline, outcome): the finished runs, newest first, with when they finish (zero:
    // before the start).
    let mut groups: HashMap<(&'static str, Outcome), Vec<(i128, usize)>> = HashMap::new();
    for (index, item) in items.iter().enumerate() {
        if item.kind != SceneKind::PipelineRun || item.category == "no-pipeline" {
            continue;
        }
        let Some(outcome) = item.outcome() else {
            continue;
        };
        // A signed finish time relative to the start, in milliseconds.
        let at = match (item.finished_before, item.finishes) {
            (Some((before, _)), _) => -(before.as_millis() as i128),
            (_, Some((after, _))) => after.as_millis() as i128,
            _ => continue,
        };
        groups
            .entry((item.category, outcome))
            .or_default()
            .push((at, index));
    }
    for ((_, outcome), mut members) in groups {
        let limit = match outcome {
            Outcome::Succeeded => SUCCESSFUL_LIMIT,
            Outcome::Failed => FAILED_LIMIT,
        };
        members.sort_by(|a, b| b.cmp(a));
        for (rank, &(_, index)) in members.iter().enumerate().skip(limit) {
            // The newer runs, by when they have finished: the `limit`-th to finish pushes
            // this one over.
            let mut newer: Vec<(i128, usize)> = members[..rank]
                .iter()
                .map(|&(at, i)| (at.max(0), i))
                .collect();
            newer.sort();
            let (at, by) = newer[limit - 1];
            items[index].fate = Fate::History {
                displaced_by: (at > 0).then_some(by),
            };
        }
    }
}

/// When the last thing that could go wrong in the scene has had its chance (a finish plus the
/// Pods' TTL, plus a second for the whole-second finish times).
pub fn last_expiry(items: &[Item]) -> Duration {
    items
        .iter()
        .filter_map(|i| i.finishes.map(|(at, _)| at))
        .max()
        .unwrap_or_default()
        + Duration::from_secs(POD_TTL.unsigned_abs() + 1)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fate(items: &[Item], name: &str) -> Fate {
        items.iter().find(|i| i.name == name).expect(name).fate
    }

    #[test]
    fn the_plan_is_deterministic_and_keeps_the_newest_runs_of_each_pipeline() {
        let items = plan(50, Duration::from_secs(5), 1);
        assert_eq!(items, plan(50, Duration::from_secs(5), 1));
        let index = |name: &str| items.iter().position(|i| i.name == name).unwrap();
        // build: succeeded 01 03 04 06 07 and 08 during the demo; failed 02 05; 09 running.
        for name in [
            "build-run-01",
            "build-run-03",
            "build-run-04",
            "build-run-02",
        ] {
            assert_eq!(
                fate(&items, name),
                Fate::History { displaced_by: None },
                "{name}"
            );
        }
        assert_eq!(
            fate(&items, "build-run-06"),
            Fate::History {
                displaced_by: Some(index("build-run-08"))
            }
        );
        for name in [
            "build-run-07",
            "build-run-08",
            "build-run-05",
            "build-run-09",
        ] {
            assert_eq!(fate(&items, name), Fate::Kept, "{name}");
        }
        // deploy: succeeded 01 02 05; failed 03 04 and 06 during the demo.
        assert_eq!(
            fate(&items, "deploy-run-04"),
            Fate::History {
                displaced_by: Some(index("deploy-run-06"))
            }
        );
        assert_eq!(
            fate(&items, "deploy-run-01"),
            Fate::History { displaced_by: None }
        );
        for name in ["deploy-run-02", "deploy-run-05", "deploy-run-06"] {
            assert_eq!(fate(&items, name), Fate::Kept, "{name}");
        }
        assert_eq!(fate(&items, "no-pipeline-run-01"), Fate::Kept);
        assert_eq!(fate(&items, "pod-bad-annotation-000"), Fate::Kept);
        assert_eq!(fate(&items, "pod-ttl-extended-000"), Fate::Kept);
        assert!(last_expiry(&items) <= Duration::from_secs(8));
    }

    #[test]
    fn every_pod_category_exists_at_a_tiny_size() {
        let items = plan(1, Duration::from_secs(1), 7);
        for category in [
            "backlog",
            "succeeds",
            "fails",
            "running",
            "ttl-extended",
            "bad-annotation",
        ] {
            assert!(items.iter().any(|i| i.category == category), "{category}");
        }
    }
}
