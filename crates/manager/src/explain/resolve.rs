//! Which resource a `TYPE` on the command line names, as kubectl resolves it: a plural
//! (`jobs`), a singular or kind (`job`, `Job`), a short name (`po`, `vcjob`), each optionally
//! qualified by its group (`jobs.batch`, `jobs.batch.volcano.sh`).
//!
//! Contract: only the preferred version of each group is considered; when several groups
//! match, the core group wins, then groups without a dot (Kubernetes' own), then the rest by
//! name — `jobs` is batch/v1 Jobs, `vcjob` Volcano's. No match is an error naming the type.

use kube_gc_client::{Discovery, ResourceRef};

/// A type that names no resource the server serves.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("the server doesn't have a resource type {0:?}")]
pub struct UnknownType(pub String);

/// Resolves `name` against `discovery`.
///
/// # Errors
///
/// [`UnknownType`] when nothing matches.
pub fn resolve(discovery: &Discovery, name: &str) -> Result<ResourceRef, UnknownType> {
    let wanted = name.to_ascii_lowercase();
    let mut matches: Vec<&ResourceRef> = discovery
        .preferred()
        .filter(|found| {
            let r = &found.resource;
            let names = [r.plural.to_ascii_lowercase(), r.kind.to_ascii_lowercase()];
            let short = found.short_names.iter().map(|s| s.to_ascii_lowercase());
            names.into_iter().chain(short).any(|n| {
                n == wanted || (!r.group.is_empty() && format!("{n}.{}", r.group) == wanted)
            })
        })
        .map(|found| &found.resource)
        .collect();
    matches.sort_by_key(|r| (rank(&r.group), r.group.clone()));
    matches
        .first()
        .map(|r| (*r).clone())
        .ok_or_else(|| UnknownType(name.to_owned()))
}

/// Core first, then Kubernetes' own groups (no dot), then the rest.
fn rank(group: &str) -> u8 {
    match group {
        "" => 0,
        g if !g.contains('.') => 1,
        _ => 2,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn groups_rank_core_then_kubernetes_then_the_rest() {
        assert!(rank("") < rank("batch"));
        assert!(rank("batch") < rank("batch.volcano.sh"));
    }
}
