//! Which policy governs an object when several apply — pure and deterministic.
//!
//! Contract:
//! 1. A `RetentionPolicy` in the object's namespace wins over any `ClusterRetentionPolicy`.
//! 2. Among cluster policies, the most specific wins: the one whose `namespaceSelector`
//!    matches the fewest namespaces.
//! 3. Then the name, in byte order — never the order the policies arrived in.
//! - The object's own TTL field and the `kube-gc.io/ttl` / `kube-gc.io/expires-at` annotations
//!   override the winner's TTL; that is the verdict's business (`verdict.rs`), not this one.
//! - Overlaps are reported, not hidden: every policy that applied but lost is returned as
//!   shadowed, and [`Choice::tie`] says when the first two rules could not tell the winner
//!   from the runner-up, so the name decided.

use std::cmp::Ordering;

/// Where a policy applies.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Scope {
    /// A `RetentionPolicy`, in the object's namespace.
    Namespaced,
    /// A `ClusterRetentionPolicy` whose namespace selector matches this many namespaces.
    Cluster {
        /// Namespaces its selector matches now.
        matched_namespaces: usize,
    },
}

impl Scope {
    /// Rules 1 and 2 as one ordering key: smaller is more specific.
    fn specificity(self) -> (u8, usize) {
        match self {
            Scope::Namespaced => (0, 0),
            Scope::Cluster { matched_namespaces } => (1, matched_namespaces),
        }
    }
}

/// A policy that applies to the object.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Candidate<'a> {
    /// Its name.
    pub name: &'a str,
    /// Where it applies.
    pub scope: Scope,
}

/// The outcome: indices into the candidates.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Choice {
    /// The policy that governs the object.
    pub winner: usize,
    /// The others that applied, most specific first.
    pub shadowed: Vec<usize>,
    /// The winner and the runner-up were equally specific: the name decided.
    pub tie: bool,
}

fn order(a: &Candidate<'_>, b: &Candidate<'_>) -> Ordering {
    a.scope
        .specificity()
        .cmp(&b.scope.specificity())
        .then_with(|| a.name.cmp(b.name))
}

/// Chooses among the policies that apply; `None` if none does.
pub fn choose(candidates: &[Candidate<'_>]) -> Option<Choice> {
    let mut indices: Vec<usize> = (0..candidates.len()).collect();
    indices.sort_by(|&a, &b| order(&candidates[a], &candidates[b]));
    let (&winner, shadowed) = indices.split_first()?;
    let tie = shadowed.first().is_some_and(|&runner_up| {
        candidates[runner_up].scope.specificity() == candidates[winner].scope.specificity()
    });
    Some(Choice {
        winner,
        shadowed: shadowed.to_vec(),
        tie,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cluster(name: &str, matched_namespaces: usize) -> Candidate<'_> {
        Candidate {
            name,
            scope: Scope::Cluster { matched_namespaces },
        }
    }

    fn namespaced(name: &str) -> Candidate<'_> {
        Candidate {
            name,
            scope: Scope::Namespaced,
        }
    }

    #[test]
    fn a_namespaced_policy_wins_over_any_cluster_policy() {
        let candidates = [cluster("one-namespace", 1), namespaced("local")];
        let choice = choose(&candidates).unwrap();
        assert_eq!(choice.winner, 1);
        assert_eq!(choice.shadowed, [0]);
        assert!(!choice.tie);
    }

    #[test]
    fn the_cluster_policy_matching_fewest_namespaces_wins_then_the_name() {
        let candidates = [
            cluster("all", 40),
            cluster("team-b", 3),
            cluster("team-a", 3),
        ];
        let choice = choose(&candidates).unwrap();
        assert_eq!(
            choice.winner, 2,
            "team-a: as specific as team-b, and first by name"
        );
        assert_eq!(choice.shadowed, [1, 0]);
        assert!(choice.tie);
    }

    #[test]
    fn the_choice_does_not_depend_on_arrival_order() {
        let forward = [namespaced("b"), namespaced("a"), cluster("c", 1)];
        let backward = [cluster("c", 1), namespaced("a"), namespaced("b")];
        let name = |c: &[Candidate<'_>]| c[choose(c).unwrap().winner].name.to_owned();
        assert_eq!(name(&forward), "a");
        assert_eq!(name(&backward), "a");
        assert!(choose(&[]).is_none());
    }
}
