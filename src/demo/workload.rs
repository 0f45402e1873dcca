//! The demo's batch workload: which Jobs and Volcano Jobs exist, what happens to each while the
//! demo runs, and what the controllers should do about it.
//!
//! Contract: [`plan`] is deterministic for a given size and seed, and every object carries its
//! expected fate, decided by the rules of TTL-after-finished — not by watching the controller —
//! so the summary can check the controllers against it. Each category exists at every size.

use std::time::Duration;

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

/// Which kind an object is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum DemoKind {
    /// batch/v1 Job.
    Job,
    /// batch.volcano.sh/v1alpha1 Job.
    VolcanoJob,
}

impl DemoKind {
    /// The kind's name in the summary.
    pub fn as_str(self) -> &'static str {
        match self {
            DemoKind::Job => "Job",
            DemoKind::VolcanoJob => "VolcanoJob",
        }
    }
}

/// Something a user does to an object during the demo.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Twist {
    /// Deletes it and creates a new, running one under the same name.
    Recreate,
    /// Sets its TTL to this many seconds.
    ExtendTtl(i32),
}

/// What the controllers should have done to an object by the end.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Expect {
    /// Deleted, once, after `expires_after` from the demo's start (at the earliest).
    Deleted,
    /// Left alone.
    Kept,
}

/// One object of the workload.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Planned {
    /// Its kind.
    pub kind: DemoKind,
    /// Its name (namespace `demo`).
    pub name: String,
    /// Its category, for the summary.
    pub category: &'static str,
    /// `ttlSecondsAfterFinished`.
    pub ttl: Option<i32>,
    /// Finished an hour before the demo starts, with this outcome.
    pub finished_before: Option<&'static str>,
    /// Finishes this long after the start, with this outcome (a Job condition type or a
    /// Volcano phase).
    pub finishes: Option<(Duration, &'static str)>,
    /// A user's change, this long after the start.
    pub twist: Option<(Duration, Twist)>,
    /// Its expected fate.
    pub expect: Expect,
}

/// How big and how fast the workload is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct WorkloadSize {
    /// batch/v1 Jobs.
    pub jobs: usize,
    /// Volcano Jobs.
    pub volcano_jobs: usize,
    /// Standalone Pods of the retention scene ([`super::retention`]).
    pub pods: usize,
    /// Jobs finish within this long after the start.
    pub spread: Duration,
    /// Seed of the random finish times and TTLs.
    pub seed: u64,
}

/// The namespace every demo object lives in.
pub const NAMESPACE: &str = "demo";

/// The largest TTL (seconds) given to objects that should be deleted during the demo.
pub const MAX_SHORT_TTL: i32 = 3;

/// The workload for `size`.
pub fn plan(size: &WorkloadSize) -> Vec<Planned> {
    let mut rng = StdRng::seed_from_u64(size.seed);
    let mut planned = Vec::new();
    let mut add =
        |rng: &mut StdRng, kind, category, count: usize, make: &dyn Fn(&mut StdRng) -> Shape| {
            for i in 0..count.max(1) {
                let shape = make(rng);
                let prefix = match kind {
                    DemoKind::Job => "job",
                    DemoKind::VolcanoJob => "vcjob",
                };
                planned.push(Planned {
                    kind,
                    name: format!("{prefix}-{category}-{i:03}"),
                    category,
                    ttl: shape.ttl,
                    finished_before: shape.finished_before,
                    finishes: shape.finishes,
                    twist: shape.twist,
                    expect: shape.expect,
                });
            }
        };
    let spread = size.spread;
    let short_ttl = |rng: &mut StdRng| Some(rng.random_range(0..=MAX_SHORT_TTL));
    let during = move |rng: &mut StdRng| {
        let millis = u64::try_from(spread.as_millis()).unwrap_or(u64::MAX).max(1);
        Duration::from_millis(rng.random_range(0..millis))
    };

    let n = size.jobs;
    let part = |percent: usize| n * percent / 100;
    add(&mut rng, DemoKind::Job, "backlog", part(10), &|_| {
        Shape::finished_before(Some(60), "Complete")
    });
    add(&mut rng, DemoKind::Job, "completes", part(35), &|r| {
        Shape::finishes(short_ttl(r), during(r), "Complete", Expect::Deleted)
    });
    add(&mut rng, DemoKind::Job, "fails", part(10), &|r| {
        Shape::finishes(short_ttl(r), during(r), "Failed", Expect::Deleted)
    });
    add(&mut rng, DemoKind::Job, "running", part(15), &|_| {
        Shape::running(Some(0))
    });
    add(&mut rng, DemoKind::Job, "no-ttl", part(15), &|r| {
        Shape::finishes(None, during(r), "Complete", Expect::Kept)
    });
    add(&mut rng, DemoKind::Job, "long-ttl", part(10), &|r| {
        Shape::finishes(Some(3600), during(r), "Complete", Expect::Kept)
    });
    add(&mut rng, DemoKind::Job, "recreated", 3, &|_| Shape {
        twist: Some((Duration::from_millis(1000), Twist::Recreate)),
        ..Shape::finishes(
            Some(MAX_SHORT_TTL),
            Duration::ZERO,
            "Complete",
            Expect::Kept,
        )
    });
    add(&mut rng, DemoKind::Job, "ttl-extended", 1, &|_| Shape {
        twist: Some((Duration::from_millis(1000), Twist::ExtendTtl(3600))),
        ..Shape::finishes(
            Some(MAX_SHORT_TTL),
            Duration::ZERO,
            "Complete",
            Expect::Kept,
        )
    });

    let m = size.volcano_jobs;
    let part = |percent: usize| m * percent / 100;
    add(&mut rng, DemoKind::VolcanoJob, "backlog", part(10), &|_| {
        Shape::finished_before(Some(60), "Completed")
    });
    for phase in ["Completed", "Failed", "Terminated"] {
        let category = match phase {
            "Completed" => "completed",
            "Failed" => "failed",
            _ => "terminated",
        };
        add(
            &mut rng,
            DemoKind::VolcanoJob,
            category,
            part(17),
            &move |r| Shape::finishes(short_ttl(r), during(r), phase, Expect::Deleted),
        );
    }
    add(&mut rng, DemoKind::VolcanoJob, "aborted", part(15), &|r| {
        Shape::finishes(short_ttl(r), during(r), "Aborted", Expect::Kept)
    });
    add(&mut rng, DemoKind::VolcanoJob, "running", part(15), &|_| {
        Shape::running(Some(0))
    });
    add(&mut rng, DemoKind::VolcanoJob, "no-ttl", part(10), &|r| {
        Shape::finishes(None, during(r), "Completed", Expect::Kept)
    });
    planned
}

/// The parts of a [`Planned`] that vary by category.
struct Shape {
    ttl: Option<i32>,
    finished_before: Option<&'static str>,
    finishes: Option<(Duration, &'static str)>,
    twist: Option<(Duration, Twist)>,
    expect: Expect,
}

impl Shape {
    fn running(ttl: Option<i32>) -> Shape {
        Shape {
            ttl,
            finished_before: None,
            finishes: None,
            twist: None,
            expect: Expect::Kept,
        }
    }

    fn finished_before(ttl: Option<i32>, outcome: &'static str) -> Shape {
        Shape {
            finished_before: Some(outcome),
            expect: Expect::Deleted,
            ..Shape::running(ttl)
        }
    }

    fn finishes(ttl: Option<i32>, at: Duration, outcome: &'static str, expect: Expect) -> Shape {
        Shape {
            finishes: Some((at, outcome)),
            expect,
            ..Shape::running(ttl)
        }
    }
}

/// When the last thing that could go wrong has had its chance: every planned finish plus its
/// TTL (for objects expected to be kept too: a wrongly deleted one would be gone by then), plus
/// a second for the finish times' whole-second precision.
pub fn last_expiry(planned: &[Planned]) -> Duration {
    planned
        .iter()
        .filter_map(|p| {
            let ttl = Duration::from_secs(u64::try_from(p.ttl?.min(MAX_SHORT_TTL)).unwrap_or(0));
            Some(p.finishes.map(|(at, _)| at).unwrap_or_default() + ttl)
        })
        .max()
        .unwrap_or_default()
        + Duration::from_secs(1)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn size(jobs: usize, volcano_jobs: usize) -> WorkloadSize {
        WorkloadSize {
            jobs,
            volcano_jobs,
            pods: 10,
            spread: Duration::from_secs(5),
            seed: 1,
        }
    }

    #[test]
    fn the_plan_is_deterministic_with_unique_names_and_both_fates() {
        let planned = plan(&size(300, 100));
        assert_eq!(planned, plan(&size(300, 100)));
        let mut names: Vec<_> = planned.iter().map(|p| (p.kind, p.name.clone())).collect();
        names.sort();
        names.dedup();
        assert_eq!(names.len(), planned.len());
        assert!(planned.len() >= 380, "{}", planned.len());
        for expect in [Expect::Deleted, Expect::Kept] {
            for kind in [DemoKind::Job, DemoKind::VolcanoJob] {
                assert!(planned.iter().any(|p| p.expect == expect && p.kind == kind));
            }
        }
    }

    #[test]
    fn every_category_exists_at_a_tiny_size() {
        let planned = plan(&size(1, 1));
        for category in [
            "backlog",
            "completes",
            "recreated",
            "ttl-extended",
            "aborted",
        ] {
            assert!(planned.iter().any(|p| p.category == category), "{category}");
        }
        assert!(last_expiry(&planned) <= Duration::from_secs(9));
    }
}
