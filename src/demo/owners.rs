//! The demo's owner trees: what the garbage collector must do when owners go away.
//!
//! Contract: [`OwnerTrees::create`] builds, in the demo namespace, four Deployment →
//! ReplicaSet → Pods trees and a few expired Jobs with Pods. [`OwnerTrees::delete_owners`]
//! deletes three of the Deployments as a user would — Background, Foreground and Orphan — and
//! leaves the fourth alone; the Jobs are the TTL controller's to delete (Foreground). Then:
//!
//! | tree | expected end state |
//! |---|---|
//! | Background, Foreground | the whole tree gone |
//! | Orphan | the Deployment gone; its ReplicaSet and Pods kept, the ReplicaSet without the reference |
//! | untouched | everything kept |
//! | Job with Pods | Pods gone, then the Job |
//!
//! [`OwnerTrees::settled`] says when that end state is reached, [`OwnerTrees::check`] lists what
//! differs from it, and [`OwnerTrees::may_delete`] which paths the controllers may DELETE
//! (everything else the summary reports as an unexpected deletion).

use std::collections::HashSet;

use serde_json::{json, Value};

use crate::sim::{DeleteOptions, Gvr, Propagation, SimError, SimServer};

use super::workload::NAMESPACE;

/// Pods per ReplicaSet, and per Job.
const PODS: usize = 3;
/// Expired Jobs with Pods.
pub const JOBS_WITH_PODS: usize = 3;

/// What should become of an object.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Fate {
    /// Deleted (by the user, the TTL controller or the garbage collector).
    Gone,
    /// Still there, with the owner reference to a deleted owner removed.
    Orphaned,
    /// Still there, untouched.
    Kept,
}

/// One object of a tree.
#[derive(Clone, Debug)]
struct Member {
    gvr: Gvr,
    name: String,
    uid: String,
    fate: Fate,
    /// May the controllers DELETE it (the user deletes the Deployments themselves)?
    collected: bool,
}

/// One tree: its label in the summary, its members, and how its root is deleted (if at all).
#[derive(Clone, Debug)]
struct Tree {
    label: &'static str,
    delete_root: Option<Propagation>,
    members: Vec<Member>,
}

/// Counts for one tree in the summary.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct TreeRow {
    /// Objects in the tree.
    pub total: usize,
    /// Expected to be gone.
    pub expected_gone: usize,
    /// Actually gone.
    pub gone: usize,
}

/// Every owner tree of the demo.
#[derive(Clone, Debug, Default)]
pub struct OwnerTrees {
    trees: Vec<Tree>,
}

fn deployments() -> Gvr {
    Gvr::new("apps", "v1", "deployments")
}

fn replicasets() -> Gvr {
    Gvr::new("apps", "v1", "replicasets")
}

fn pods() -> Gvr {
    Gvr::new("", "v1", "pods")
}

fn jobs() -> Gvr {
    Gvr::new("batch", "v1", "jobs")
}

fn reference_to(owner: &Value) -> Value {
    json!({"apiVersion": owner["apiVersion"], "kind": owner["kind"],
        "name": owner["metadata"]["name"], "uid": owner["metadata"]["uid"],
        "controller": true, "blockOwnerDeletion": true})
}

fn uid(object: &Value) -> String {
    object["metadata"]["uid"]
        .as_str()
        .unwrap_or_default()
        .to_owned()
}

/// Creates `api_version`/`kind` `name`, owned by `owner` if given, labelled for the demo.
fn create(
    sim: &SimServer,
    gvr: &Gvr,
    (api_version, kind): (&str, &str),
    name: &str,
    owner: Option<&Value>,
) -> Result<Value, SimError> {
    let mut object = json!({"apiVersion": api_version, "kind": kind,
        "metadata": {"name": name, "namespace": NAMESPACE, "labels": {"demo": "owner-tree"}}});
    if let Some(owner) = owner {
        object["metadata"]["ownerReferences"] = json!([reference_to(owner)]);
    }
    if kind == "Pod" {
        object["spec"] = json!({"containers": [{"name": "main", "image": "busybox:1.36"}]});
    }
    sim.create(gvr, object)
}

impl OwnerTrees {
    /// Creates every tree.
    pub fn create(sim: &SimServer) -> Result<OwnerTrees, SimError> {
        let mut trees = Vec::new();
        for (label, delete_root) in [
            ("background", Some(Propagation::Background)),
            ("foreground", Some(Propagation::Foreground)),
            ("orphan", Some(Propagation::Orphan)),
            ("untouched", None),
        ] {
            trees.push(deployment_tree(sim, label, delete_root)?);
        }
        trees.push(jobs_with_pods(sim)?);
        Ok(OwnerTrees { trees })
    }

    /// Deletes the Deployments as a user would (the Jobs are the TTL controller's).
    pub fn delete_owners(&self, sim: &SimServer) -> Result<(), SimError> {
        for tree in &self.trees {
            let (Some(policy), Some(root)) = (tree.delete_root, tree.members.first()) else {
                continue;
            };
            let options = DeleteOptions::propagation(policy);
            sim.delete(&root.gvr, Some(NAMESPACE), &root.name, &options)?;
        }
        Ok(())
    }

    /// Whether every object reached its expected end state.
    pub fn settled(&self, sim: &SimServer) -> bool {
        self.members().all(|m| problem(sim, m).is_none())
    }

    /// What differs from the expected end state, one line each.
    pub fn check(&self, sim: &SimServer) -> Vec<String> {
        self.members().filter_map(|m| problem(sim, m)).collect()
    }

    /// Per tree: its label and counts.
    pub fn rows(&self, sim: &SimServer) -> Vec<(&'static str, TreeRow)> {
        self.trees
            .iter()
            .map(|tree| {
                let mut row = TreeRow::default();
                for member in &tree.members {
                    row.total += 1;
                    row.expected_gone += usize::from(member.fate == Fate::Gone);
                    row.gone += usize::from(current(sim, member).is_none());
                }
                (tree.label, row)
            })
            .collect()
    }

    /// The API paths the controllers may DELETE (each once).
    pub fn may_delete(&self) -> HashSet<String> {
        self.members()
            .filter(|m| m.collected)
            .map(|m| {
                let prefix = if m.gvr.group.is_empty() {
                    format!("/api/{}", m.gvr.version)
                } else {
                    format!("/apis/{}/{}", m.gvr.group, m.gvr.version)
                };
                format!(
                    "{prefix}/namespaces/{NAMESPACE}/{}/{}",
                    m.gvr.resource, m.name
                )
            })
            .collect()
    }

    fn members(&self) -> impl Iterator<Item = &Member> {
        self.trees.iter().flat_map(|t| t.members.iter())
    }
}

/// Deployment `label` → ReplicaSet → [`PODS`] Pods.
fn deployment_tree(
    sim: &SimServer,
    label: &'static str,
    delete_root: Option<Propagation>,
) -> Result<Tree, SimError> {
    let (root_fate, rest_fate) = match delete_root {
        Some(Propagation::Orphan) => (Fate::Gone, Fate::Orphaned),
        Some(_) => (Fate::Gone, Fate::Gone),
        None => (Fate::Kept, Fate::Kept),
    };
    let collected = delete_root.is_some() && rest_fate == Fate::Gone;
    let name = format!("web-{label}");
    let deployment = create(sim, &deployments(), ("apps/v1", "Deployment"), &name, None)?;
    let rs_name = format!("{name}-5d8f");
    let rs = create(
        sim,
        &replicasets(),
        ("apps/v1", "ReplicaSet"),
        &rs_name,
        Some(&deployment),
    )?;
    let mut members = vec![
        Member {
            gvr: deployments(),
            name,
            uid: uid(&deployment),
            fate: root_fate,
            collected: false,
        },
        Member {
            gvr: replicasets(),
            name: rs_name.clone(),
            uid: uid(&rs),
            fate: rest_fate,
            collected,
        },
    ];
    for i in 0..PODS {
        let pod_name = format!("{rs_name}-{i}");
        let pod = create(sim, &pods(), ("v1", "Pod"), &pod_name, Some(&rs))?;
        members.push(Member {
            gvr: pods(),
            name: pod_name,
            uid: uid(&pod),
            // The Pods keep their reference to the kept ReplicaSet.
            fate: if rest_fate == Fate::Orphaned {
                Fate::Kept
            } else {
                rest_fate
            },
            collected,
        });
    }
    Ok(Tree {
        label,
        delete_root,
        members,
    })
}

/// [`JOBS_WITH_PODS`] Jobs, expired an hour ago with TTL 0, with [`PODS`] Pods each.
fn jobs_with_pods(sim: &SimServer) -> Result<Tree, SimError> {
    let mut members = Vec::new();
    for j in 0..JOBS_WITH_PODS {
        let name = format!("job-with-pods-{j}");
        let mut job = json!({"apiVersion": "batch/v1", "kind": "Job",
            "metadata": {"name": name, "namespace": NAMESPACE, "labels": {"demo": "owner-tree"}},
            "spec": {"ttlSecondsAfterFinished": 0}});
        job = sim.create(&jobs(), job)?;
        job["status"] = json!({"conditions": [{"type": "Complete", "status": "True",
            "lastTransitionTime": "2020-01-01T00:00:00Z"}], "succeeded": PODS});
        let job = sim.update_status(&jobs(), job)?;
        members.push(Member {
            gvr: jobs(),
            name: name.clone(),
            uid: uid(&job),
            fate: Fate::Gone,
            collected: true,
        });
        for i in 0..PODS {
            let pod_name = format!("{name}-{i}");
            let pod = create(sim, &pods(), ("v1", "Pod"), &pod_name, Some(&job))?;
            members.push(Member {
                gvr: pods(),
                name: pod_name,
                uid: uid(&pod),
                fate: Fate::Gone,
                collected: true,
            });
        }
    }
    Ok(Tree {
        label: "job-with-pods",
        delete_root: None,
        members,
    })
}

/// The object as the member knew it (same UID), if it is still there.
fn current(sim: &SimServer, member: &Member) -> Option<Value> {
    sim.get(&member.gvr, Some(NAMESPACE), &member.name)
        .ok()
        .filter(|o| uid(o) == member.uid)
}

/// How `member` differs from its expected end state, if it does.
fn problem(sim: &SimServer, member: &Member) -> Option<String> {
    let what = format!("{} {}", member.gvr.resource, member.name);
    let object = current(sim, member);
    let owners = object
        .as_ref()
        .and_then(|o| o["metadata"]["ownerReferences"].as_array())
        .map_or(0, Vec::len);
    let being_deleted = object
        .as_ref()
        .is_some_and(|o| o["metadata"]["deletionTimestamp"].is_string());
    match (member.fate, object) {
        (Fate::Gone, Some(_)) => Some(format!("{what} should be gone")),
        (Fate::Kept | Fate::Orphaned, None) => Some(format!("{what} was deleted")),
        (_, Some(_)) if being_deleted => Some(format!("{what} is being deleted")),
        (Fate::Orphaned, Some(_)) if owners > 0 => {
            Some(format!("{what} still references its deleted owner"))
        }
        (Fate::Kept, Some(_)) if member.gvr.resource != "deployments" && owners == 0 => {
            Some(format!("{what} lost its owner reference"))
        }
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sim::SimConfig;

    #[tokio::test]
    async fn only_cascaded_objects_may_be_collected_and_orphans_must_lose_their_reference() {
        let config = SimConfig::default().with_namespaces(&[NAMESPACE]);
        let sim = SimServer::start(config).await.unwrap();
        let trees = OwnerTrees::create(&sim).unwrap();
        let allowed = trees.may_delete();
        let rs =
            |label: &str| format!("/apis/apps/v1/namespaces/demo/replicasets/web-{label}-5d8f");
        assert!(allowed.contains(&rs("background")) && allowed.contains(&rs("foreground")));
        assert!(!allowed.contains(&rs("orphan")) && !allowed.contains(&rs("untouched")));
        assert!(allowed.contains("/api/v1/namespaces/demo/pods/job-with-pods-0-0"));
        assert!(!allowed.iter().any(|p| p.contains("/deployments/")));
        assert!(!trees.settled(&sim));

        // What the garbage collector would do, done by hand: the Orphan tree's ReplicaSet
        // still references the deleted Deployment until its reference is removed.
        trees.delete_owners(&sim).unwrap();
        let problems = trees.check(&sim);
        assert!(problems
            .iter()
            .any(|p| p == "deployments web-foreground should be gone"));
        assert!(problems
            .iter()
            .any(|p| p == "pods web-background-5d8f-0 should be gone"));
        assert!(!problems.iter().any(|p| p.contains("untouched")));
        let mut orphan = sim
            .get(&replicasets(), Some(NAMESPACE), "web-orphan-5d8f")
            .unwrap();
        let rows = trees.rows(&sim);
        assert_eq!(
            rows[0],
            (
                "background",
                TreeRow {
                    total: 5,
                    expected_gone: 5,
                    gone: 1
                }
            )
        );
        orphan["metadata"]["ownerReferences"] = json!([]);
        sim.update(&replicasets(), orphan).unwrap();
        assert!(!trees
            .check(&sim)
            .iter()
            .any(|p| p.starts_with("replicasets web-orphan")));
        sim.shutdown().await;
    }
}
