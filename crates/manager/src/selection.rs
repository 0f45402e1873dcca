//! [`ControllerSelection`]: which controllers `--controllers` enables, with
//! kube-controller-manager's rules.
//!
//! Contract: the flag is a list of names. `*` enables every controller that is on by default
//! (all of kube-gc's are); `name` enables one; `-name` disables one, and wins over `*` and over
//! `name`. An empty list means `*`. Upstream's newer names (`ttl-after-finished-controller`,
//! `garbage-collector-controller`, `namespace-controller`, …) are accepted as aliases. An
//! unknown name is an error, so a typo cannot silently disable a controller; so is a list that
//! enables nothing (`-retention` alone, which in kcm's syntax runs nothing), with the list that
//! was probably meant (`*,-retention`): a process that runs no controller would look healthy
//! and do nothing.

use std::collections::BTreeSet;

/// `ttl-after-finished`: batch/v1 Jobs.
pub const TTL_AFTER_FINISHED: &str = "ttl-after-finished";
/// `volcano-job-ttl`: Volcano Jobs.
pub const VOLCANO_JOB_TTL: &str = "volcano-job-ttl";
/// `garbagecollector`: the ownerReference garbage collector.
pub const GARBAGE_COLLECTOR: &str = kube_gc_controllers::garbagecollector::CONTROLLER;
/// `retention`: retention policies (`RetentionPolicy`, `ClusterRetentionPolicy`).
pub const RETENTION: &str = kube_gc_controllers::retention::engine::CONTROLLER;
/// `namespace`: namespace deletion (the content of deleted namespaces, then their finalizer).
pub const NAMESPACE: &str = kube_gc_controllers::namespace::CONTROLLER;

/// `podgc`: the pod garbage collector.
pub const PODGC: &str = kube_gc_controllers::podgc::CONTROLLER;
/// `pvc-protection`: releases PersistentVolumeClaims being deleted that no Pod uses.
pub const PVC_PROTECTION: &str = kube_gc_controllers::protection::PVC_CONTROLLER;
/// `pv-protection`: releases PersistentVolumes being deleted that no claim is bound to.
pub const PV_PROTECTION: &str = kube_gc_controllers::protection::PV_CONTROLLER;

/// Every controller kube-gc knows, in start order.
pub const KNOWN_CONTROLLERS: [&str; 8] = [
    TTL_AFTER_FINISHED,
    VOLCANO_JOB_TTL,
    GARBAGE_COLLECTOR,
    NAMESPACE,
    RETENTION,
    PODGC,
    PVC_PROTECTION,
    PV_PROTECTION,
];

/// Upstream's newer names (v1.28 registers these and keeps the short ones as aliases), and the
/// name each stands for.
const ALIASES: [(&str, &str); 6] = [
    ("ttl-after-finished-controller", TTL_AFTER_FINISHED),
    ("garbage-collector-controller", GARBAGE_COLLECTOR),
    ("namespace-controller", NAMESPACE),
    ("pod-garbage-collector-controller", PODGC),
    (
        "persistentvolumeclaim-protection-controller",
        PVC_PROTECTION,
    ),
    ("persistentvolume-protection-controller", PV_PROTECTION),
];

/// A name in `--controllers` that names no controller.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown controller {name:?} in --controllers (known: *, {known})", known = KNOWN_CONTROLLERS.join(", "))]
pub struct UnknownController {
    /// The name as given.
    pub name: String,
}

/// A `--controllers` flag that cannot be run.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SelectionError {
    /// A name names no controller.
    #[error(transparent)]
    Unknown(#[from] UnknownController),
    /// The list enables no controller.
    #[error("--controllers={given} enables no controller: {why}")]
    NothingEnabled {
        /// The list as given.
        given: String,
        /// Why, and what to write instead when that is clear.
        why: String,
    },
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
    ///
    /// # Errors
    ///
    /// [`SelectionError::Unknown`] for a name that names no controller,
    /// [`SelectionError::NothingEnabled`] for a list that enables none.
    pub fn parse<S: AsRef<str>>(entries: &[S]) -> Result<Self, SelectionError> {
        let selection = Self::parse_names(entries)?;
        if selection.enabled().is_empty() {
            return Err(nothing_enabled(entries));
        }
        Ok(selection)
    }

    fn parse_names<S: AsRef<str>>(entries: &[S]) -> Result<Self, UnknownController> {
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

    /// The controllers it enables, in [`KNOWN_CONTROLLERS`]' order.
    pub fn enabled(&self) -> Vec<&'static str> {
        KNOWN_CONTROLLERS
            .into_iter()
            .filter(|name| self.is_enabled(name))
            .collect()
    }

    /// The controllers it leaves out, in [`KNOWN_CONTROLLERS`]' order.
    pub fn disabled(&self) -> Vec<&'static str> {
        KNOWN_CONTROLLERS
            .into_iter()
            .filter(|name| !self.is_enabled(name))
            .collect()
    }
}

/// Why `entries`, which enable nothing, do so, and what was probably meant.
fn nothing_enabled<S: AsRef<str>>(entries: &[S]) -> SelectionError {
    let entries: Vec<&str> = entries.iter().map(|e| e.as_ref().trim()).collect();
    let given = entries.join(",");
    let why = if entries.iter().all(|e| e.starts_with('-')) {
        format!(
            "-name only disables one, and nothing enables any; to run all but these, \
             write --controllers='*,{given}'"
        )
    } else {
        "each one named is also disabled (-name wins over name)".to_owned()
    };
    SelectionError::NothingEnabled { given, why }
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
        ControllerSelection::parse(entries).unwrap().enabled()
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
            enabled(&["*", "-garbagecollector", "-podgc", "-pvc-protection"]),
            [
                TTL_AFTER_FINISHED,
                VOLCANO_JOB_TTL,
                NAMESPACE,
                RETENTION,
                PV_PROTECTION
            ]
        );
        assert_eq!(
            ControllerSelection::parse(&["*", "-retention"])
                .unwrap()
                .disabled(),
            [RETENTION]
        );
    }

    #[test]
    fn a_list_that_enables_nothing_is_refused_with_what_was_meant() {
        let err = ControllerSelection::parse(&["-retention"]).unwrap_err();
        assert_eq!(
            err.to_string(),
            "--controllers=-retention enables no controller: -name only disables one, and \
             nothing enables any; to run all but these, write --controllers='*,-retention'"
        );
        let err =
            ControllerSelection::parse(&["ttl-after-finished", "-ttl-after-finished"]).unwrap_err();
        assert!(err.to_string().contains("-name wins over name"), "{err}");
    }

    #[test]
    fn upstream_names_are_aliases() {
        assert_eq!(
            enabled(&["ttl-after-finished-controller"]),
            [TTL_AFTER_FINISHED]
        );
        assert_eq!(
            enabled(&[
                "*",
                "-garbage-collector-controller",
                "-pod-garbage-collector-controller"
            ]),
            [
                TTL_AFTER_FINISHED,
                VOLCANO_JOB_TTL,
                NAMESPACE,
                RETENTION,
                PVC_PROTECTION,
                PV_PROTECTION
            ]
        );
        assert_eq!(
            enabled(&[
                "persistentvolumeclaim-protection-controller",
                "persistentvolume-protection-controller"
            ]),
            [PVC_PROTECTION, PV_PROTECTION]
        );
        assert_eq!(enabled(&["namespace-controller"]), [NAMESPACE]);
        assert_eq!(enabled(&["namespace-controller"]), [NAMESPACE]);
    }

    #[test]
    fn unknown_names_are_errors() {
        let err = ControllerSelection::parse(&["ttl-after-finsihed"]).unwrap_err();
        assert_eq!(
            err,
            SelectionError::Unknown(UnknownController {
                name: "ttl-after-finsihed".to_owned()
            })
        );
        assert!(ControllerSelection::parse(&["-nope"]).is_err());
    }
}
