//! [`Need`]: which parts of an object are read — a tree of field names, each either wanted
//! whole or narrowed to some of its fields. The bottom of the retention modules: it knows
//! nothing of policies, rules or CEL; those say what they read by adding paths to a `Need`
//! (`CelExpr::add_reads_to`, `FinishRule::add_reads_to`, `assessment::needed`), and the
//! decoder (`wire.rs`) builds only what the tree names.
//!
//! Contract:
//! - [`Need::All`] is absorbing: once a subtree is wanted whole, adding paths below it or
//!   merging another tree into it changes nothing.
//! - [`Need::add`] of a path wants the whole subtree at its end; of an empty path, everything.
//! - [`Need::merge`] is a union: whatever either tree wants, the result wants.
//! - Paths do not index arrays: a need on an array applies to each of its elements.

use std::collections::BTreeMap;

use kube_gc_client::protobuf::Selection;

/// Which parts of an object are needed: all of a subtree, or some of its fields.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub enum Need {
    /// The whole subtree.
    #[default]
    All,
    /// These fields, each with what is needed below it.
    Fields(BTreeMap<String, Need>),
}

impl Need {
    /// Nothing yet; paths are added.
    pub fn nothing() -> Need {
        Need::Fields(BTreeMap::new())
    }

    /// The same tree as a transcoding [`Selection`]: what a protobuf answer must carry for
    /// the decision to be the one JSON would give.
    pub fn selection(&self) -> Selection {
        match self {
            Need::All => Selection::all(),
            Need::Fields(fields) => fields
                .iter()
                .fold(Selection::none(), |selection, (name, below)| {
                    selection.with_member(name, below.selection())
                }),
        }
    }

    /// Needs the subtree at `path` (an empty path: everything).
    pub fn add<S: AsRef<str>>(&mut self, path: &[S]) {
        let Need::Fields(fields) = self else {
            return;
        };
        let Some((first, rest)) = path.split_first() else {
            *self = Need::All;
            return;
        };
        let child = fields
            .entry(first.as_ref().to_owned())
            .or_insert_with(Need::nothing);
        if rest.is_empty() {
            *child = Need::All;
        } else {
            child.add(rest);
        }
    }

    /// Needs also what `other` needs.
    pub fn merge(&mut self, other: &Need) {
        match (&mut *self, other) {
            (Need::All, _) => {}
            (_, Need::All) => *self = Need::All,
            (Need::Fields(mine), Need::Fields(theirs)) => {
                for (key, below) in theirs {
                    mine.entry(key.clone())
                        .or_insert_with(Need::nothing)
                        .merge(below);
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_whole_subtree_absorbs_what_is_added_or_merged_below_it() {
        let mut need = Need::nothing();
        need.add(&["status"]);
        need.add(&["status", "conditions"]);
        let mut status = Need::nothing();
        status.add(&["status"]);
        assert_eq!(need, status);
        let mut other = Need::nothing();
        other.add(&["status", "phase"]);
        need.merge(&other);
        assert_eq!(need, status);
        need.add::<&str>(&[]);
        assert_eq!(need, Need::All);
    }

    #[test]
    fn merging_is_a_union() {
        let (mut a, mut b) = (Need::nothing(), Need::nothing());
        a.add(&["spec", "ttl"]);
        b.add(&["spec", "template"]);
        b.add(&["metadata", "labels"]);
        a.merge(&b);
        let mut both = Need::nothing();
        for path in [
            ["spec", "ttl"],
            ["spec", "template"],
            ["metadata", "labels"],
        ] {
            both.add(&path);
        }
        assert_eq!(a, both);
        a.merge(&Need::All);
        assert_eq!(a, Need::All);
    }
}
