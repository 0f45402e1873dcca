//! [`ControllerSelection`]: which controllers `--controllers` enables, with
//! kube-controller-manager's rules.
//!
//! Contract: the flag is a list of names. `*` enables every controller that is on by default
//! (all of kube-gc's are); `name` enables one; `-name` disables one, and wins over `*` and over
//! `name`. An empty list means `*`. Upstream's newer names (`ttl-after-finished-controller`,
//! `garbage-collector-controller`, `namespace-controller`) are accepted as aliases. An unknown name is an error, so a
//! typo cannot silently disable a controller.

use std::collections::BTreeSet;

/// `ttl-after-finished`: batch/v1 Jobs.
pub const TTL_AFTER_FINISHED: &str = "ttl-after-finished";
/// `volcano-job-ttl`: Volcano Jobs.
pub const VOLCANO_JOB_TTL: &str = "volcano-job-ttl";
/// `garbagecollector`: the ownerReference garbage collector.
pub const GARBAGE_COLLECTOR: &str = "garbagecollector";
/// `retention`: retention policies (`RetentionPolicy`, `ClusterRetentionPolicy`).
pub const RETENTION: &str = crate::controllers::retention::engine::CONTROLLER;
/// `namespace`: namespace deletion (the content of deleted namespaces, then their finalizer).
pub const NAMESPACE: &str = crate::controllers::namespace::CONTROLLER;

/// Every controller kube-gc knows, in start order.
pub const KNOWN_CONTROLLERS: [&str; 5] = [
    TTL_AFTER_FINISHED,
    VOLCANO_JOB_TTL,
    GARBAGE_COLLECTOR,
    NAMESPACE,
    RETENTION,
];

/// Upstream's newer names, and the name each stands for.
const ALIASES: [(&str, &str); 3] = [
    ("ttl-after-finished-controller", TTL_AFTER_FINISHED),
    ("garbage-collector-controller", GARBAGE_COLLECTOR),
    ("namespace-controller", NAMESPACE),
];

/// A name in `--controllers` that names no controller.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown controller {name:?} in --controllers (known: *, {known})", known = KNOWN_CONTROLLERS.join(", "))]
pub struct UnknownController {
    /// The name as given.
    pub name: String,
}

/// The parsed `--controllers` flag.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ControllerSelection {
    all: bool,
    enabled: BTreeSet<&'static str>,
    disabled: BTreeSet<&'static str>,
}

impl Default for ControllerSelection {
    /// `*`: everything.
    fn default() -> Self {
        ControllerSelection {
            all: true,
            enabled: BTreeSet::new(),
            disabled: BTreeSet::new(),
        }
    }
}

impl ControllerSelection {
    /// Parses the flag's entries (already split on commas).
    pub fn parse<S: AsRef<str>>(entries: &[S]) -> Result<Self, UnknownController> {
        if entries.is_empty() {
            return Ok(ControllerSelection::default());
        }
        let mut selection = ControllerSelection {
            all: false,
            enabled: BTreeSet::new(),
            disabled: BTreeSet::new(),
        };
        for entry in entries {
            let entry = entry.as_ref().trim();
            if entry == "*" {
                selection.all = true;
            } else if let Some(name) = entry.strip_prefix('-') {
                selection.disabled.insert(canonical(name)?);
            } else {
                selection.enabled.insert(canonical(entry)?);
            }
        }
        Ok(selection)
    }

    /// Whether the controller called `name` (a canonical name) should run.
    pub fn is_enabled(&self, name: &str) -> bool {
        if self.disabled.contains(name) {
            return false;
        }
        self.all || self.enabled.contains(name)
    }
}

/// The canonical name for `name` or one of its aliases.
fn canonical(name: &str) -> Result<&'static str, UnknownController> {
    KNOWN_CONTROLLERS
        .iter()
        .copied()
        .find(|known| *known == name)
        .or_else(|| {
            ALIASES
                .iter()
                .find(|(alias, _)| *alias == name)
                .map(|(_, n)| *n)
        })
        .ok_or_else(|| UnknownController {
            name: name.to_owned(),
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn enabled(entries: &[&str]) -> Vec<&'static str> {
        let selection = ControllerSelection::parse(entries).unwrap();
        KNOWN_CONTROLLERS
            .iter()
            .copied()
            .filter(|n| selection.is_enabled(n))
            .collect()
    }

    #[test]
    fn star_and_empty_enable_everything() {
        assert_eq!(enabled(&[]), KNOWN_CONTROLLERS);
        assert_eq!(enabled(&["*"]), KNOWN_CONTROLLERS);
    }

    #[test]
    fn names_enable_and_dashes_disable() {
        assert_eq!(enabled(&["volcano-job-ttl"]), [VOLCANO_JOB_TTL]);
        assert_eq!(
            enabled(&["*", "-garbagecollector"]),
            [TTL_AFTER_FINISHED, VOLCANO_JOB_TTL, NAMESPACE, RETENTION]
        );
        assert_eq!(
            enabled(&["ttl-after-finished", "-ttl-after-finished"]),
            Vec::<&str>::new()
        );
    }

    #[test]
    fn upstream_names_are_aliases() {
        assert_eq!(
            enabled(&["ttl-after-finished-controller"]),
            [TTL_AFTER_FINISHED]
        );
        assert_eq!(
            enabled(&["*", "-garbage-collector-controller"]),
            [TTL_AFTER_FINISHED, VOLCANO_JOB_TTL, NAMESPACE, RETENTION]
        );
        assert_eq!(enabled(&["namespace-controller"]), [NAMESPACE]);
    }

    #[test]
    fn unknown_names_are_errors() {
        let err = ControllerSelection::parse(&["ttl-after-finsihed"]).unwrap_err();
        assert_eq!(err.name, "ttl-after-finsihed");
        assert!(ControllerSelection::parse(&["-nope"]).is_err());
    }
}
