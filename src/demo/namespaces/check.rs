//! The namespace scene's verdict, from the server's deletions (when each object left storage)
//! and its request journal (who asked what).
//!
//! Contract: [`check`] reports, per namespace, when its last Pod, its last content and the
//! namespace itself left storage (after the namespaces' DELETE), and lists as problems every
//! way the scene's expectations (the module documentation of `super`) were missed.

use std::collections::BTreeSet;
use std::fmt;
use std::time::Duration;

use chrono::{DateTime, Utc};

use crate::controllers::namespace::COMPONENT as NAMESPACE_CONTROLLER;
use crate::controllers::podgc::COMPONENT as POD_GC;
use crate::controllers::protection::pvc::COMPONENT as PVC_PROTECTION;
use crate::manager::GARBAGE_COLLECTOR;
use crate::sim::journal::JournalEntry;
use crate::sim::store::DeletionRecord;
use crate::sim::SimServer;

use super::{
    in_namespace, namespaces, uid, Kind, Namespace, NamespaceFate, Node, Object, Scene, SceneRecord,
};

/// One namespace in the summary.
#[derive(Clone, Debug, PartialEq)]
pub struct NamespaceRow {
    /// Its name.
    pub name: &'static str,
    /// What was to become of it.
    pub fate: NamespaceFate,
    /// Objects it held.
    pub objects: usize,
    /// Kinds of them.
    pub kinds: usize,
    /// When its last Pod left storage, after the namespaces' DELETE.
    pub pods_gone: Option<Duration>,
    /// When the last of its content did.
    pub content_gone: Option<Duration>,
    /// When the namespace did.
    pub finalized: Option<Duration>,
    /// Whether nothing but Pods was deleted in it while a Pod of it remained (a deleted
    /// namespace's; `None` for one kept).
    pub pods_first: Option<bool>,
}

/// What the scene's check found.
#[derive(Debug, Default)]
pub struct Report {
    /// Per namespace, in the plan's order.
    pub rows: Vec<NamespaceRow>,
    /// The held namespace: from its object's release to its finalize.
    pub after_release: Option<Duration>,
    /// Pods of the lost node the pod garbage collector force-deleted.
    pub forced: usize,
    /// Claims PVC protection released.
    pub claims_released: usize,
    /// Pods the live node's kubelet stopped.
    pub stopped: usize,
    /// DELETE requests the controllers sent into the deleted namespaces (collections included).
    pub deletes: usize,
    /// Everything that went wrong, one line each.
    pub problems: Vec<String>,
}

impl Report {
    /// Deleted namespaces that are gone, and how many were to be.
    pub fn finalized(&self) -> (usize, usize) {
        let deleted = self.rows.iter().filter(|r| r.fate.deleted());
        let gone = deleted.clone().filter(|r| r.finalized.is_some()).count();
        (gone, deleted.count())
    }
}

/// Checks the server and its request `journal` against the scene.
pub fn check(
    scene: &Scene,
    sim: &SimServer,
    record: &SceneRecord,
    journal: &[JournalEntry],
) -> Report {
    let deletions = sim.deletions();
    let since = |at: DateTime<Utc>| {
        record
            .deleted_at
            .and_then(|d| (at - d).to_std().ok())
            .or(Some(Duration::ZERO))
    };
    let mut report = Report {
        stopped: record.stopped.len(),
        ..Report::default()
    };
    for namespace in &scene.namespaces {
        let left = |object: &Object| left_at(&deletions, object);
        let pods = namespace.objects.iter().filter(|o| o.kind == Kind::Pod);
        let kinds: BTreeSet<Kind> = namespace.objects.iter().map(|o| o.kind).collect();
        let finalized = deletions
            .iter()
            .find(|d| d.gvr == namespaces() && d.name == namespace.name)
            .map(|d| d.at);
        report.rows.push(NamespaceRow {
            name: namespace.name,
            fate: namespace.fate,
            objects: namespace.objects.len(),
            kinds: kinds.len(),
            pods_gone: last(pods.map(left)).and_then(since),
            content_gone: last(namespace.objects.iter().map(left)).and_then(since),
            finalized: finalized.and_then(since),
            pods_first: None,
        });
        if namespace.fate.deleted() {
            let pods_first = deleted_problems(namespace, sim, &deletions, journal, &mut report);
            if let Some(row) = report.rows.last_mut() {
                row.pods_first = Some(pods_first);
            }
        } else {
            kept_problems(scene, namespace, sim, &mut report);
        }
        if namespace.fate == NamespaceFate::Held {
            held_problems(finalized, record, &mut report);
        }
    }
    controllers_problems(scene, journal, &mut report);
    report
}

/// When `object` left storage, if it did (the last such record: a name may be reused).
fn left_at(deletions: &[DeletionRecord], object: &Object) -> Option<DateTime<Utc>> {
    deletions
        .iter()
        .rev()
        .find(|d| {
            d.gvr == object.kind.gvr()
                && d.namespace.as_deref() == Some(object.namespace)
                && d.name == object.name
        })
        .map(|d| d.at)
}

/// The latest of times that must all be there: `None` if one is missing, or if there are none.
fn last(times: impl Iterator<Item = Option<DateTime<Utc>>>) -> Option<DateTime<Utc>> {
    let mut latest: Option<DateTime<Utc>> = None;
    for at in times {
        let at = at?;
        latest = Some(latest.map_or(at, |l| l.max(at)));
    }
    latest
}

/// A deleted namespace: finalized, with nothing left, Pods first (returned: whether they were).
fn deleted_problems(
    namespace: &Namespace,
    sim: &SimServer,
    deletions: &[DeletionRecord],
    journal: &[JournalEntry],
    report: &mut Report,
) -> bool {
    let name = namespace.name;
    let finalized = sim.get(&namespaces(), None, name).is_err();
    for object in &namespace.objects {
        if sim.get(&object.kind.gvr(), Some(name), object.name).is_ok() {
            let state = if finalized {
                "finalized while it remains"
            } else {
                "not finalized: it remains"
            };
            report.problems.push(format!(
                "namespace {name} {state}: {} {}",
                object.kind.gvr().resource,
                object.name
            ));
        }
    }
    if !finalized
        && namespace
            .objects
            .iter()
            .all(|o| left_at(deletions, o).is_some())
    {
        report
            .problems
            .push(format!("namespace {name} was emptied but not finalized"));
    }
    // Pods first: nothing but Pods deleted while a Pod of the namespace remained.
    let pods_gone = last(
        namespace
            .objects
            .iter()
            .filter(|o| o.kind == Kind::Pod)
            .map(|o| left_at(deletions, o)),
    );
    let early = journal.iter().find(|e| {
        e.method == "DELETE"
            && e.sent_by(NAMESPACE_CONTROLLER)
            && in_namespace(&e.path, name)
            && resource_in(&e.path, name) != Some("pods")
            && pods_gone.is_none_or(|gone| e.at < gone)
    });
    if let Some(early) = early {
        report.problems.push(format!(
            "namespace {name}: {} was deleted at {} while a Pod remained",
            early.path, early.at
        ));
    }
    let pods_first = early.is_none();
    for pod in namespace
        .objects
        .iter()
        .filter(|o| o.node == Some(Node::Lost))
    {
        let path = pod.path();
        let forced = accepted(journal, "DELETE").any(|e| e.sent_by(POD_GC) && e.path == path);
        if forced {
            report.forced += 1;
        } else {
            report.problems.push(format!(
                "Pod {name}/{} on the lost node was not force-deleted by the pod garbage collector",
                pod.name
            ));
        }
    }
    for claim in namespace.objects.iter().filter(|o| o.kind == Kind::Claim) {
        let path = claim.path();
        let released =
            accepted(journal, "PATCH").any(|e| e.sent_by(PVC_PROTECTION) && e.path == path);
        if released {
            report.claims_released += 1;
        } else {
            report.problems.push(format!(
                "claim {name}/{} was not released by PVC protection",
                claim.name
            ));
        }
    }
    pods_first
}

/// The held namespace: finalized after the release, and how long after.
fn held_problems(finalized: Option<DateTime<Utc>>, record: &SceneRecord, report: &mut Report) {
    let (Some(finalized), Some(releasing)) = (finalized, record.releasing_at) else {
        if record.releasing_at.is_none() {
            report
                .problems
                .push("the held PipelineRun was never released".into());
        }
        return;
    };
    if finalized < releasing {
        report.problems.push(format!(
            "the held namespace was finalized at {finalized}, before its PipelineRun was released ({releasing})"
        ));
        return;
    }
    let released = record.released_at.unwrap_or(releasing);
    report.after_release = Some((finalized - released).to_std().unwrap_or_default());
}

/// The kept namespace: there, not terminating, every object there with its UID, untouched.
fn kept_problems(scene: &Scene, namespace: &Namespace, sim: &SimServer, report: &mut Report) {
    let name = namespace.name;
    match sim.get(&namespaces(), None, name) {
        Err(_) => report
            .problems
            .push(format!("namespace {name} was deleted")),
        Ok(ns) if ns["metadata"]["deletionTimestamp"].is_string() => report
            .problems
            .push(format!("namespace {name} is being deleted")),
        Ok(_) => {}
    }
    for object in &namespace.objects {
        let what = format!("{} {name}/{}", object.kind.gvr().resource, object.name);
        match sim.get(&object.kind.gvr(), Some(name), object.name) {
            Err(_) => report.problems.push(format!("{what} was deleted")),
            Ok(o) if o["metadata"]["deletionTimestamp"].is_string() => {
                report.problems.push(format!("{what} is being deleted"));
            }
            Ok(o) if scene.uids.get(&object.path()) != Some(&uid(&o)) => {
                report
                    .problems
                    .push(format!("{what} is not the object the scene made"));
            }
            Ok(_) => {}
        }
    }
}

/// Who deleted what in the deleted namespaces: the namespace controller anything, the pod
/// garbage collector the lost node's Pods, the garbage collector dependents; nobody else.
fn controllers_problems(scene: &Scene, journal: &[JournalEntry], report: &mut Report) {
    let lost_pods: BTreeSet<String> = scene
        .objects()
        .filter(|o| o.node == Some(Node::Lost))
        .map(Object::path)
        .collect();
    for entry in journal
        .iter()
        .filter(|e| e.method == "DELETE" && scene.owns(&e.path))
    {
        report.deletes += 1;
        let allowed = entry.sent_by(NAMESPACE_CONTROLLER)
            || entry.sent_by(GARBAGE_COLLECTOR)
            || (entry.sent_by(POD_GC) && lost_pods.contains(&entry.path));
        if !allowed {
            report.problems.push(format!(
                "unexpected DELETE {} by {}",
                entry.path,
                entry.header("user-agent").unwrap_or("an unknown client")
            ));
        }
    }
}

/// The resource a path in `namespace` names (`pods` in `/api/v1/namespaces/x/pods/y`).
fn resource_in<'a>(path: &'a str, namespace: &str) -> Option<&'a str> {
    let needle = format!("/namespaces/{namespace}/");
    let at = path.find(&needle)?;
    path[at + needle.len()..].split('/').next()
}

/// The requests of `method` the server accepted.
fn accepted<'a>(
    journal: &'a [JournalEntry],
    method: &'a str,
) -> impl Iterator<Item = &'a JournalEntry> {
    journal
        .iter()
        .filter(move |e| e.method == method && (200..300).contains(&e.status))
}

/// `+1.2 s`, or `-` for what did not happen.
fn after(at: Option<Duration>) -> String {
    at.map_or_else(|| "-".to_owned(), |d| format!("+{:.1} s", d.as_secs_f64()))
}

impl fmt::Display for Report {
    /// The table, one row per namespace (times after the namespaces' DELETE), then one line.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(
            f,
            "{:<14} {:<15} {:>7} {:>5} {:>10} {:>10} {:>13} {:>10}",
            "NAMESPACE",
            "FATE",
            "OBJECTS",
            "KINDS",
            "PODS FIRST",
            "PODS GONE",
            "CONTENT GONE",
            "FINALIZED"
        )?;
        for row in &self.rows {
            let first = match row.pods_first {
                Some(true) => "yes",
                Some(false) => "NO",
                None => "-",
            };
            writeln!(
                f,
                "{:<14} {:<15} {:>7} {:>5} {:>10} {:>10} {:>13} {:>10}",
                row.name,
                row.fate.as_str(),
                row.objects,
                row.kinds,
                first,
                after(row.pods_gone.filter(|_| row.fate.deleted())),
                after(row.content_gone.filter(|_| row.fate.deleted())),
                after(row.finalized),
            )?;
        }
        let (gone, total) = self.finalized();
        write!(
            f,
            "Namespaces: {gone}/{total} finalized (times after their DELETE), with {} DELETE requests into them; ",
            self.deletes
        )?;
        if let Some(after) = self.after_release {
            write!(
                f,
                "the held one {:.0} ms after its PipelineRun was released; ",
                after.as_secs_f64() * 1e3
            )?;
        }
        writeln!(
            f,
            "the pod garbage collector force-deleted {} Pods of the lost node, PVC protection released {} claim(s), the live node's kubelet stopped {} Pods.",
            self.forced, self.claims_released, self.stopped
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_resource_of_a_path_is_its_segment_after_the_namespace() {
        let pods = "/api/v1/namespaces/demo-shop/pods";
        assert_eq!(resource_in(pods, "demo-shop"), Some("pods"));
        let cm = "/api/v1/namespaces/demo-shop/configmaps/web-config";
        assert_eq!(resource_in(cm, "demo-shop"), Some("configmaps"));
        let templates = "/api/v1/namespaces/demo-shop/podtemplates";
        assert_eq!(resource_in(templates, "demo-shop"), Some("podtemplates"));
        assert_eq!(
            resource_in("/api/v1/namespaces/demo-shop", "demo-shop"),
            None
        );
    }
}
