//! The garbage collector's decision (its `action` on the owners' verdicts) and, for an object
//! being deleted, what each finalizer waits for — the dependents that block a foreground
//! deletion, with *their* blockers, three levels deep.
//!
//! Contract: [`decision_on`] and [`deletion`] are the one place these are worded. Their facts
//! come from either path: `kube-gc explain` looked the owners up and listed the dependents
//! ([`from_gathered`], [`deletion_from_gathered`]); `/debug/explain` reads the collector's graph.
//! Dependents are read through [`DependentIndex`], so both paths walk the chain of blockers
//! with the same code; a source that does not know every finalizer says so rather than guess.

use crate::explain::finalizers::{owner_of, FinalizerOwner};
use crate::explain::gather::{Gathered, OwnerState, Related};
use crate::explain::{Blocker, Decision, DeletionInProgress, FinalizerWait, VerdictKind};
use crate::selection::ControllerSelection;
use kube_gc_api::{ObjectMeta, OwnerReference, PropagationPolicy};
use kube_gc_controllers::garbagecollector::graph::{FOREGROUND_FINALIZER, ORPHAN_FINALIZER};
use kube_gc_controllers::garbagecollector::{action, Action};

use super::{decision, rfc3339};

/// The collector's name, as `--controllers` selects it.
pub const CONTROLLER: &str = "garbagecollector";

/// How deep the chain of blockers is followed.
const DEPTH: usize = 3;

/// What the collector's decision reads about an object.
pub(crate) struct GcFacts<'a> {
    /// Each owner reference, and what was found where it points.
    pub owners: &'a [OwnerState],
    /// It has a `deletionTimestamp`.
    pub being_deleted: bool,
    /// How many objects name it as their owner.
    pub dependents: usize,
    /// It has the `orphan` finalizer.
    pub orphan_finalizer: bool,
    /// It has the `foregroundDeletion` finalizer.
    pub foreground_finalizer: bool,
}

/// One dependent of an object, as a source of facts knows it.
#[derive(Clone, Debug)]
pub(crate) struct Dependent {
    /// Its UID.
    pub uid: String,
    /// `Kind namespace/name`.
    pub object: String,
    /// Its reference to the owner says `blockOwnerDeletion: true`.
    pub blocks: bool,
    /// It has a `deletionTimestamp`.
    pub being_deleted: bool,
    /// Its finalizers, as far as known.
    pub finalizers: Vec<String>,
    /// Whether `finalizers` is all of them.
    pub all_finalizers_known: bool,
}

/// Where the dependents of an object are looked up.
pub(crate) trait DependentIndex {
    /// The objects naming `uid` as an owner, in a stable order.
    fn dependents(&self, uid: &str) -> Vec<Dependent>;
}

impl DependentIndex for Vec<Related> {
    fn dependents(&self, uid: &str) -> Vec<Dependent> {
        self.iter()
            .filter_map(|r| {
                let reference = r.meta.owner_references.iter().find(|o| o.uid == uid)?;
                Some(Dependent {
                    uid: r.meta.uid.clone().unwrap_or_default(),
                    object: describe(&r.resource.kind, &r.meta),
                    blocks: reference.blocks_owner_deletion(),
                    being_deleted: r.meta.deletion_timestamp.is_some(),
                    finalizers: r.meta.finalizers.clone(),
                    all_finalizers_known: true,
                })
            })
            .collect()
    }
}

/// `Kind namespace/name`, or `Kind name` for a cluster-scoped object.
fn describe(kind: &str, meta: &ObjectMeta) -> String {
    let name = meta.name.as_deref().unwrap_or("");
    match &meta.namespace {
        Some(ns) => format!("{kind} {ns}/{name}"),
        None => format!("{kind} {name}"),
    }
}

/// The collector's decision on `gathered`.
pub(crate) fn from_gathered(gathered: &Gathered, meta: &ObjectMeta) -> Decision {
    let uid = meta.uid.as_deref().unwrap_or_default();
    let has = |name: &str| meta.finalizers.iter().any(|f| f == name);
    decision_on(&GcFacts {
        owners: &gathered.owners,
        being_deleted: meta.deletion_timestamp.is_some(),
        dependents: gathered.related.dependents(uid).len(),
        orphan_finalizer: has(ORPHAN_FINALIZER),
        foreground_finalizer: has(FOREGROUND_FINALIZER),
    })
}

/// How one owner counts.
enum Counted {
    Solid,
    Dangling,
    Waiting,
}

/// The collector's decision on an object with these facts.
pub(crate) fn decision_on(facts: &GcFacts<'_>) -> Decision {
    if facts.owners.is_empty() {
        return as_owner(facts);
    }
    let (mut solid, mut dangling, mut waiting) = (0, 0, 0);
    let mut details = Vec::new();
    for owner in facts.owners {
        let (counted, reference, line) = match owner_line(owner) {
            Ok(counted) => counted,
            Err(mut stop) => {
                stop.details = details;
                return stop;
            }
        };
        match counted {
            Counted::Solid => solid += 1,
            Counted::Dangling => dangling += 1,
            Counted::Waiting => waiting += 1,
        }
        let blocks = if reference.blocks_owner_deletion() {
            ", blockOwnerDeletion"
        } else {
            ""
        };
        details.push(format!(
            "owner {} {} (uid {}{blocks}): {line}",
            reference.kind, reference.name, reference.uid
        ));
    }
    let mut d = if facts.being_deleted {
        let why = "being deleted: see the finalizers".into();
        decision(CONTROLLER, true, VerdictKind::Keep, why)
    } else {
        acted(facts, solid, dangling, waiting)
    };
    d.details = details;
    d
}

/// The collector's part in an object with no owners: it acts on it only as an owner being
/// deleted with the foreground or orphan policy, whose finalizer it removes once its work on the
/// dependents is done.
fn as_owner(facts: &GcFacts<'_>) -> Decision {
    let dependents = match facts.dependents {
        1 => "its 1 dependent".to_owned(),
        n => format!("its {n} dependents"),
    };
    if facts.being_deleted && facts.foreground_finalizer {
        let why = format!("deleting it in the foreground: the collector deletes {dependents}, then removes {FOREGROUND_FINALIZER}");
        return decision(CONTROLLER, true, VerdictKind::Blocked, why);
    }
    if facts.being_deleted && facts.orphan_finalizer {
        let why = format!("orphaning {dependents}: the collector removes their references to it, then the {ORPHAN_FINALIZER} finalizer");
        return decision(CONTROLLER, true, VerdictKind::Blocked, why);
    }
    let why = "does not apply: no owner references".into();
    decision(CONTROLLER, false, VerdictKind::Keep, why)
}

/// What one owner counts as, or the decision that ends the count.
fn owner_line(owner: &OwnerState) -> Result<(Counted, &OwnerReference, String), Decision> {
    let unknown = |why: String| decision(CONTROLLER, true, VerdictKind::Unknown, why);
    Ok(match owner {
        OwnerState::Exists {
            reference,
            deleting_dependents: false,
        } => (Counted::Solid, reference, "exists".to_owned()),
        OwnerState::Exists {
            reference,
            deleting_dependents: true,
        } => (
            Counted::Waiting,
            reference,
            "exists, being deleted in the foreground: it waits for its dependents".to_owned(),
        ),
        OwnerState::Absent { reference } => (
            Counted::Dangling,
            reference,
            "absent: no object has this UID (deleted, or never created)".to_owned(),
        ),
        OwnerState::Recreated { reference, uid } => (
            Counted::Dangling,
            reference,
            format!("absent: the owner was deleted and re-created (UID now {uid})"),
        ),
        OwnerState::NotServed { reference } => {
            return Err(unknown(format!(
                "the owner's kind {} {} is not served: the collector cannot tell whether it exists",
                reference.api_version, reference.kind
            )))
        }
        OwnerState::NotCached { reference, why } => {
            return Err(unknown(format!(
                "owner {} {}: {why}",
                reference.kind, reference.name
            )))
        }
        OwnerState::InvalidClusterScoped { reference } => {
            return Err(decision(CONTROLLER, true, VerdictKind::Keep, format!("never collected: a cluster-scoped object cannot be owned by the namespaced {} {}", reference.kind, reference.name)));
        }
    })
}

/// The collector's `action` for an object not being deleted.
fn acted(facts: &GcFacts<'_>, solid: usize, dangling: usize, waiting: usize) -> Decision {
    let said = |verdict, summary: String| decision(CONTROLLER, true, verdict, summary);
    match action(
        solid,
        dangling,
        waiting,
        facts.dependents,
        facts.orphan_finalizer,
        facts.foreground_finalizer,
    ) {
        Action::Keep => said(VerdictKind::Keep, "kept: an owner exists".into()),
        Action::RemoveReferences => said(VerdictKind::Keep, "kept: an owner exists; the references to absent or waiting owners will be removed".into()),
        Action::DeleteInForeground => said(VerdictKind::DeleteNow, "no owner remains and one waits on it: deleted in the foreground, its own dependents first".into()),
        Action::Delete(policy) => said(
            VerdictKind::DeleteNow,
            format!("every owner is gone: deleted ({})", propagation(policy)),
        ),
    }
}

fn propagation(policy: PropagationPolicy) -> &'static str {
    match policy {
        PropagationPolicy::Orphan => "Orphan: its dependents are kept",
        PropagationPolicy::Background => "Background",
        PropagationPolicy::Foreground => "Foreground",
    }
}

/// What is known of an object's deletion.
pub(crate) struct Deleting {
    /// `metadata.deletionTimestamp`, if known.
    pub since: Option<String>,
    /// Its finalizers, as far as known.
    pub finalizers: Vec<String>,
    /// What the source could not tell (`None`: every finalizer is listed).
    pub unknown: Option<String>,
}

/// For an object with a `deletionTimestamp` in `gathered`: what each finalizer waits for, with
/// the controllers `running` here.
pub(super) fn deletion_from_gathered(
    gathered: &Gathered,
    meta: &ObjectMeta,
    running: &ControllerSelection,
) -> Option<DeletionInProgress> {
    let since = meta.deletion_timestamp?;
    let deleting = Deleting {
        since: Some(rfc3339(since.0)),
        finalizers: meta.finalizers.clone(),
        unknown: None,
    };
    let uid = meta.uid.as_deref().unwrap_or_default();
    Some(deletion(uid, deleting, &gathered.related, running))
}

/// What each finalizer of the object `uid`, being deleted, waits for, with the controllers
/// `running` here.
pub(crate) fn deletion(
    uid: &str,
    deleting: Deleting,
    index: &dyn DependentIndex,
    running: &ControllerSelection,
) -> DeletionInProgress {
    let finalizers = deleting
        .finalizers
        .iter()
        .map(|finalizer| waits_for(finalizer, uid, index, running))
        .collect();
    DeletionInProgress {
        since: deleting.since,
        finalizers,
        unknown: deleting.unknown,
        grace: None,
    }
}

fn waits_for(
    finalizer: &str,
    uid: &str,
    index: &dyn DependentIndex,
    running: &ControllerSelection,
) -> FinalizerWait {
    let owner = owner_of(finalizer);
    let (waits_for, blockers) = match finalizer {
        FOREGROUND_FINALIZER => (
            "its dependents with blockOwnerDeletion to be deleted (the garbage collector removes it then)".to_owned(),
            foreground_blockers(index, uid, 0),
        ),
        ORPHAN_FINALIZER => (
            "the garbage collector to remove its dependents' references to it".to_owned(),
            index
                .dependents(uid)
                .into_iter()
                .map(|d| Blocker {
                    object: d.object,
                    why: "still refers to it".into(),
                    blockers: Vec::new(),
                })
                .collect(),
        ),
        other => (owner_waits_for(other, &owner, running), Vec::new()),
    };
    FinalizerWait {
        finalizer: finalizer.to_owned(),
        field: None,
        owner,
        waits_for,
        blockers,
    }
}

/// What a finalizer the collector does not own waits for: its owner's work.
fn owner_waits_for(
    finalizer: &str,
    owner: &FinalizerOwner,
    running: &ControllerSelection,
) -> String {
    let who = owner.line(running);
    match owner {
        FinalizerOwner::Unknown => format!(
            "the controller behind {} to finish its clean-up and remove it ({who})",
            finalizer.split('/').next().unwrap_or(finalizer)
        ),
        _ => format!("{who} to finish its clean-up and remove it"),
    }
}

/// The dependents that block `uid`'s foreground deletion, and what blocks them, three deep.
pub(crate) fn foreground_blockers(
    index: &dyn DependentIndex,
    uid: &str,
    depth: usize,
) -> Vec<Blocker> {
    index
        .dependents(uid)
        .into_iter()
        .filter(|d| d.blocks)
        .map(|d| {
            let foreground = d.finalizers.iter().any(|f| f == FOREGROUND_FINALIZER);
            let (why, below) = match (d.being_deleted, depth < DEPTH) {
                (false, _) => (not_deleted_yet(&d), Vec::new()),
                (true, true) if foreground => (
                    "being deleted in the foreground itself, waiting for".to_owned(),
                    foreground_blockers(index, &d.uid, depth + 1),
                ),
                (true, _) => (held_by(&d), Vec::new()),
            };
            Blocker {
                object: d.object,
                why,
                blockers: below,
            }
        })
        .collect()
}

/// A blocking dependent the collector has yet to delete, and what will hold it once it does:
/// its own finalizers are the next link of the chain.
fn not_deleted_yet(dependent: &Dependent) -> String {
    let first = "not deleted yet (blockOwnerDeletion: true)";
    match (
        dependent.all_finalizers_known,
        dependent.finalizers.is_empty(),
    ) {
        (true, true) => format!("{first}: nothing holds it once deleted"),
        (true, false) => format!(
            "{first}; once deleted its finalizers {} hold it",
            dependent.finalizers.join(", ")
        ),
        (false, true) => format!("{first}; kube-gc does not cache its finalizers"),
        (false, false) => format!(
            "{first}; once deleted its finalizers {} hold it, and any kube-gc does not cache",
            dependent.finalizers.join(", ")
        ),
    }
}

fn held_by(dependent: &Dependent) -> String {
    let finalizers = dependent.finalizers.join(", ");
    match (
        dependent.all_finalizers_known,
        dependent.finalizers.is_empty(),
    ) {
        (true, _) => format!("being deleted, waiting for its finalizers {finalizers}"),
        (false, true) => "being deleted, waiting for finalizers kube-gc does not cache".to_owned(),
        (false, false) => format!(
            "being deleted, waiting for its finalizers {finalizers} and any kube-gc does not cache"
        ),
    }
}
