//! One deletion per object: the earliest any controller would make, with the others beside it.
//!
//! Contract: pure. An object two controllers would delete (a Job's own TTL and a retention
//! policy's) is one row, at the earlier time — due now before any time, the first controller
//! asked on a tie — and the other deletions are kept as [`Also`]s, so the totals count objects
//! and nothing found is hidden. A deletion a policy in `Audit` mode would make is not one
//! kube-gc makes: any real deletion of the object comes before it, whatever the times. Objects
//! are told apart by UID (by kind, namespace and name when a source gave none).

use std::collections::HashMap;

use chrono::{DateTime, Utc};
use serde::Serialize;

use super::rows::{Found, PolicyNote};

/// Another controller that would delete the object too, later or at the same time.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Also {
    /// Which controller.
    pub controller: String,
    /// Why.
    pub reason: String,
    /// Due now, it too.
    pub due: bool,
    /// When (RFC 3339); absent for a due deletion.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub deletes_at: Option<String>,
    /// The retention policy's kind, if a retention policy's (as the metrics' `policy_kind`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub policy_kind: Option<String>,
    /// The retention policy, `name` or `namespace/name` (as the metrics' `policy`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub policy: Option<String>,
    /// That policy is in `Audit` mode: it would delete the object, kube-gc will not.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub audit: bool,
}

/// A deletion found, and the object's other deletions.
pub(crate) struct Earliest {
    /// When (`None`: due now).
    pub at: Option<DateTime<Utc>>,
    /// What and why.
    pub found: Found,
    /// The other controllers' deletions of the same object.
    pub also: Vec<Also>,
}

/// The object's identity: its UID, else its kind, namespace and name.
fn identity(found: &Found) -> (String, String, Option<String>, String) {
    if found.uid.is_empty() {
        let (kind, name) = (found.kind.clone(), found.name.clone());
        (String::new(), kind, found.namespace.clone(), name)
    } else {
        (found.uid.clone(), String::new(), None, String::new())
    }
}

/// Each object once, at its earliest deletion, in the order the objects were first found;
/// its other deletions by time, then in the order they were found.
pub(crate) fn earliest_per_object(
    deletions: Vec<(Option<DateTime<Utc>>, Found)>,
    rfc3339: impl Fn(DateTime<Utc>) -> String,
    policy_of: impl Fn(&Found) -> Option<PolicyNote>,
) -> Vec<Earliest> {
    let mut index: HashMap<_, usize> = HashMap::new();
    let mut objects: Vec<Vec<(Option<DateTime<Utc>>, Found)>> = Vec::new();
    for (at, found) in deletions {
        let slot = *index.entry(identity(&found)).or_insert_with(|| {
            objects.push(Vec::new());
            objects.len() - 1
        });
        objects[slot].push((at, found));
    }
    objects
        .into_iter()
        .filter_map(|mut found| {
            // Stable: real deletions before an Audit policy's, `None` (due now) first, then by
            // time; a tie keeps the order found.
            let audit = |f: &Found| policy_of(f).is_some_and(|n| n.audit);
            found.sort_by_key(|(at, f)| (audit(f), at.is_some(), *at));
            let mut found = found.into_iter();
            let (at, first) = found.next()?;
            let also = found
                .map(|(at, other)| {
                    let note = policy_of(&other);
                    Also {
                        controller: other.controller,
                        reason: other.reason,
                        due: at.is_none(),
                        deletes_at: at.map(&rfc3339),
                        policy_kind: note.as_ref().map(|n| n.policy.kind().to_owned()),
                        policy: note.as_ref().map(|n| n.policy.path()),
                        audit: note.is_some_and(|n| n.audit),
                    }
                })
                .collect();
            Some(Earliest {
                at,
                found: first,
                also,
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn found(uid: &str, controller: &str) -> Found {
        Found {
            uid: uid.to_owned(),
            kind: "Job".to_owned(),
            namespace: Some("ci".to_owned()),
            name: format!("job-{uid}"),
            controller: controller.to_owned(),
            reason: format!("{controller}'s reason"),
        }
    }

    fn at(minutes: i64) -> Option<DateTime<Utc>> {
        DateTime::from_timestamp(1_800_000_000 + minutes * 60, 0)
    }

    #[test]
    fn an_object_two_controllers_delete_is_one_row_at_the_earlier_time() {
        let deletions = vec![
            (at(60), found("a", "ttl-after-finished")),
            (at(5), found("b", "ttl-after-finished")),
            (None, found("a", "retention")),
            (at(10), found("b", "retention")),
        ];
        let rows = earliest_per_object(deletions, |t| t.to_rfc3339(), |_| None);
        assert_eq!(rows.len(), 2, "two objects");
        let a = &rows[0];
        assert_eq!((a.at, a.found.controller.as_str()), (None, "retention"));
        assert_eq!(a.also.len(), 1);
        assert_eq!(a.also[0].controller, "ttl-after-finished");
        assert_eq!(a.also[0].deletes_at, at(60).map(|t| t.to_rfc3339()));
        let b = &rows[1];
        assert_eq!(
            (b.at, b.found.controller.as_str()),
            (at(5), "ttl-after-finished")
        );
        assert_eq!(b.also[0].controller, "retention");
    }

    #[test]
    fn an_audit_policys_deletion_comes_after_any_real_one() {
        use kube_gc_controllers::retention::policy::PolicyId;
        let deletions = vec![
            (None, found("a", "retention")),
            (at(60), found("a", "ttl-after-finished")),
        ];
        let audit = |f: &Found| {
            (f.controller == "retention").then(|| PolicyNote {
                policy: PolicyId::cluster("trial"),
                audit: true,
            })
        };
        let rows = earliest_per_object(deletions, |t| t.to_rfc3339(), audit);
        assert_eq!(rows[0].found.controller, "ttl-after-finished");
        assert_eq!(rows[0].at, at(60));
        let also = &rows[0].also[0];
        assert!(also.audit && also.due);
        assert_eq!(
            (also.policy_kind.as_deref(), also.policy.as_deref()),
            (Some("ClusterRetentionPolicy"), Some("trial"))
        );
    }

    #[test]
    fn a_tie_keeps_the_controller_asked_first_and_no_uid_falls_back_to_the_name() {
        let deletions = vec![
            (None, found("", "ttl-after-finished")),
            (None, found("", "retention")),
        ];
        let rows = earliest_per_object(deletions, |t| t.to_rfc3339(), |_| None);
        assert_eq!(rows.len(), 1);
        assert_eq!(rows[0].found.controller, "ttl-after-finished");
        assert!(rows[0].also[0].due);
    }
}
