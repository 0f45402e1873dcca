//! [`Selection`]: which members of an object a reader wants, as a tree of JSON names.
//!
//! The point of transcoding with a selection: a TTL judgement reads a Job's metadata, one spec
//! field and the status conditions, while most of a Job's bytes are its pod template and
//! `managedFields`. In protobuf a field the selection leaves out is skipped by its length
//! prefix — a pointer bump — where a JSON reader would still scan every byte of it.
//!
//! Contract:
//! - A node says, for each member it names, what is wanted below it; every member it does not
//!   name is either wholly wanted or wholly not (`others`). [`Selection::all`] names nothing
//!   and wants the rest; [`Selection::none`] wants nothing.
//! - Names are JSON member names at each level (`spec`, `ttlSecondsAfterFinished`); an array
//!   member's selection applies to each element, a map's to the whole map. Members of an
//!   inlined Go struct (a `Volume`'s `emptyDir`) are named at the level they appear in JSON.
//! - Built from dotted paths: [`Selection::paths`] wants exactly those subtrees,
//!   [`Selection::without`] carves one out again (`metadata` but not
//!   `metadata.managedFields`).

/// Which members of a JSON object (and below) are wanted.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Selection {
    /// Members named explicitly, with what is wanted below each.
    members: Vec<(Box<str>, Selection)>,
    /// Whether members not named are wanted (whole).
    others: bool,
}

/// Everything: what an unnamed member of a node with `others` gets.
static ALL: Selection = Selection {
    members: Vec::new(),
    others: true,
};

impl Default for Selection {
    /// Everything.
    fn default() -> Self {
        Selection::all()
    }
}

impl Selection {
    /// Everything below.
    pub fn all() -> Self {
        ALL.clone()
    }

    /// Nothing below.
    pub fn none() -> Self {
        Selection {
            members: Vec::new(),
            others: false,
        }
    }

    /// Exactly the subtrees at these dotted paths: `["metadata", "spec.ttlSecondsAfterFinished"]`.
    pub fn paths<'p>(paths: impl IntoIterator<Item = &'p str>) -> Self {
        paths
            .into_iter()
            .fold(Selection::none(), |selection, path| selection.with(path))
    }

    /// This selection, and also everything below `path`.
    pub fn with(mut self, path: &str) -> Self {
        let mut node = &mut self;
        for name in path.split('.').filter(|n| !n.is_empty()) {
            node = node.member_mut(name, Selection::none());
        }
        *node = Selection::all();
        self
    }

    /// This selection without anything below `path`.
    pub fn without(mut self, path: &str) -> Self {
        let mut node = &mut self;
        for name in path.split('.').filter(|n| !n.is_empty()) {
            if !node.others && !node.members.iter().any(|(n, _)| &**n == name) {
                return self; // Not selected to begin with.
            }
            // An unnamed member of a node with `others` is whole: name it to carve into it.
            node = node.member_mut(name, Selection::all());
        }
        *node = Selection::none();
        self
    }

    /// The member `name`, inserted as `missing` if not named yet.
    /// Wants member `name` (a single name, dots and all: an annotation key) as `below` says,
    /// besides what it wanted already.
    pub fn with_member(mut self, name: &str, below: Selection) -> Self {
        let node = self.member_mut(name, Selection::none());
        *node = std::mem::replace(node, Selection::none()).union(below);
        self
    }

    /// What either wants: a reader serving two readers reads both selections.
    pub fn union(self, other: Selection) -> Selection {
        if self.is_all() || other.is_all() {
            return Selection::all();
        }
        let others = self.others || other.others;
        let mut merged = Selection {
            members: Vec::new(),
            others,
        };
        // A member one side names and the other leaves to `others`: the other side wants it
        // whole if its `others` is set, not at all otherwise.
        let (a, b) = (self, other);
        let mut names: Vec<Box<str>> = a.members.iter().map(|(n, _)| n.clone()).collect();
        for (n, _) in &b.members {
            if !names.contains(n) {
                names.push(n.clone());
            }
        }
        for name in names {
            let side = |s: &Selection| match s.members.iter().find(|(n, _)| *n == name) {
                Some((_, below)) => below.clone(),
                None if s.others => Selection::all(),
                None => Selection::none(),
            };
            merged
                .members
                .push((name.clone(), side(&a).union(side(&b))));
        }
        merged
    }

    /// The members this selection names, with what it wants of each (those it wants none of
    /// included); with [`Selection::wants_others`], what it wants of every other member.
    pub fn named(&self) -> impl Iterator<Item = (&str, &Selection)> {
        self.members.iter().map(|(n, s)| (&**n, s))
    }

    /// Whether every member it does not name is wanted whole.
    pub fn wants_others(&self) -> bool {
        self.others
    }

    fn member_mut(&mut self, name: &str, missing: Selection) -> &mut Selection {
        let index = match self.members.iter().position(|(n, _)| &**n == name) {
            Some(index) => index,
            None => {
                self.members.push((name.into(), missing));
                self.members.len() - 1
            }
        };
        &mut self.members[index].1
    }

    /// Whether everything below is wanted: the reader can stop asking.
    pub fn is_all(&self) -> bool {
        self.others && self.members.is_empty()
    }

    /// Whether nothing below is wanted.
    pub fn is_none(&self) -> bool {
        !self.others && self.members.iter().all(|(_, s)| s.is_none())
    }

    /// What is wanted below member `name`, or `None` if nothing is.
    pub fn member(&self, name: &str) -> Option<&Selection> {
        match self.members.iter().find(|(n, _)| &**n == name) {
            Some((_, selection)) if selection.is_none() => None,
            Some((_, selection)) => Some(selection),
            None if self.others => Some(&ALL),
            None => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_union_wants_what_either_wants() {
        let ttl = Selection::paths(["metadata", "spec.ttlSecondsAfterFinished"]);
        let gc = Selection::paths(["metadata.ownerReferences", "status.phase"]);
        let both = ttl.clone().union(gc);
        assert!(both.member("metadata").is_some_and(Selection::is_all));
        let spec = both.member("spec").expect("spec");
        assert!(spec.member("ttlSecondsAfterFinished").is_some());
        assert!(spec.member("template").is_none());
        assert!(both
            .member("status")
            .and_then(|s| s.member("phase"))
            .is_some());
        assert!(ttl.clone().union(Selection::all()).is_all());
        assert_eq!(ttl.clone().union(Selection::none()), ttl);
        let keyed = Selection::none().with_member("kube-gc.io/ttl", Selection::all());
        assert!(keyed.member("kube-gc.io/ttl").is_some());
        assert!(keyed.member("kube-gc").is_none());
    }

    #[test]
    fn paths_select_exactly_their_subtrees() {
        let s = Selection::paths([
            "metadata",
            "spec.ttlSecondsAfterFinished",
            "status.conditions",
        ]);
        assert!(s.member("metadata").is_some_and(Selection::is_all));
        let spec = s.member("spec").expect("spec is wanted");
        assert!(!spec.is_all());
        assert!(spec
            .member("ttlSecondsAfterFinished")
            .is_some_and(Selection::is_all));
        assert!(spec.member("template").is_none());
        assert!(s.member("kind").is_none());
    }

    #[test]
    fn without_carves_out_of_a_whole_subtree() {
        let s = Selection::paths(["metadata"]).without("metadata.managedFields");
        let meta = s.member("metadata").expect("metadata is wanted");
        assert!(meta.member("managedFields").is_none());
        assert!(meta.member("uid").is_some_and(Selection::is_all));
        // Carving out of what was never selected changes nothing.
        assert_eq!(s.clone().without("spec.template"), s);
        let all = Selection::all().without("spec.template.spec");
        assert!(all.member("status").is_some_and(Selection::is_all));
        let template = all.member("spec").and_then(|s| s.member("template"));
        assert!(template.is_some_and(|t| t.member("spec").is_none()));
        assert!(template.is_some_and(|t| t.member("metadata").is_some()));
    }

    #[test]
    fn none_and_all() {
        assert!(Selection::none().is_none());
        assert!(Selection::all().is_all());
        assert!(Selection::default().is_all());
        assert!(Selection::none().member("x").is_none());
        assert!(Selection::paths(["a"]).without("a").is_none());
    }
}
